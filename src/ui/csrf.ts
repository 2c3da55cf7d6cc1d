/**
 * CSRF protection of every form (RFC 6749 §10.12), with `@fastify/csrf-protection`:
 * the token travels in the hidden input `csrf_token`, its secret in an HttpOnly cookie. A POST
 * whose `Origin` is another site's is refused as well.
 */
import type {} from '@fastify/csrf-protection';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Params } from '../protocol/params.js';

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
 * Checks a form POST: same-origin `Origin` (when sent) and a valid CSRF token (RFC 6749 §10.12).
 * Synchronous, so it always settles: the caller answers a refusal with its own HTML page
 * (status 403; the pages' form routes do through `formRoute`, ui/forms.ts). The plugin's
 * `csrfProtection` would answer a refusal itself, with `reply.send(error)` (JSON through the
 * error handler), and never call back, leaving the page handler pending; so it gets a view of
 * the reply whose `send` only records the refusal, and the real reply stays untouched for the page.
 * @param origin the issuer's origin
 * @returns whether the request may proceed
 */
export function checkCsrf(app: FastifyInstance, request: FastifyRequest, reply: FastifyReply, origin: string): boolean {
  const sentOrigin = request.headers.origin;
  if (sentOrigin !== undefined && sentOrigin !== origin) return false;
  let passed = false;
  const probe: FastifyReply = Object.create(reply, { send: { value: () => probe } });
  try {
    app.csrfProtection(request, probe, (err?: Error) => {
      passed = !err;
    });
  } catch {
    return false;
  }
  return passed;
}
