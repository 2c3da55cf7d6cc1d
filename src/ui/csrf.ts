/**
 * CSRF protection of every form (RFC 6749 §10.12; DESIGN §6), with `@fastify/csrf-protection`:
 * the token travels in the hidden input `csrf_token`, its secret in an HttpOnly cookie. A POST
 * whose `Origin` is another site's is refused as well.
 */
import type {} from '@fastify/csrf-protection';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Params } from '../http/form.js';

/** Reads `csrf_token` from a form body, for the plugin's `getToken`. */
export function csrfTokenOf(request: FastifyRequest): string | undefined {
  if (!(request.body instanceof Params)) return undefined;
  try {
    return request.body.get('csrf_token');
  } catch {
    return undefined;
  }
}

/**
 * Checks a form POST: same-origin `Origin` (when sent) and a valid CSRF token.
 * @param origin the issuer's origin
 * @returns whether the request may proceed
 */
export function checkCsrf(app: FastifyInstance, request: FastifyRequest, reply: FastifyReply, origin: string): Promise<boolean> {
  const sentOrigin = request.headers.origin;
  if (sentOrigin !== undefined && sentOrigin !== origin) return Promise.resolve(false);
  return new Promise((resolve) => {
    app.csrfProtection(request, reply, (err?: Error) => resolve(!err));
  });
}
