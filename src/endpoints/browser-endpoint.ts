/**
 * The browser endpoints' common front (authorize, end session; OIDC Core §3.1.2.1, RP-Initiated
 * Logout 1.0 §2): the parameters of a GET's query or a POST's form, and an error page that never
 * redirects while nothing about the client is known good. And the way of authorize and SAML SSO
 * from a request to the page it needs (`toInteractionPage`).
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { OAuthError } from '../protocol/errors.js';
import type { Params } from '../protocol/params.js';
import { browserParams, methodNotAllowed } from '../http/request.js';
import { language } from '../ui/language.js';
import { sendErrorPage } from '../ui/error-page.js';
import type { ErrorPageServices } from '../ui/error-page.js';
import { type InteractionsServices, type Pending, takeInteractionQuota } from '../interaction/interactions.js';

/** The services this module uses. */
export type BrowserEndpointServices = ErrorPageServices;

/**
 * Registers a browser endpoint (authorize, end session): GET with the query and POST with a form,
 * both handed to `handle` as parameters; malformed input ends on the error page (415 for a POST
 * that is not a form); PUT, DELETE, PATCH get 405.
 */
export function browserEndpoint(
  app: FastifyInstance,
  ctx: BrowserEndpointServices,
  url: string,
  handle: (request: FastifyRequest, reply: FastifyReply, params: Params) => Promise<FastifyReply>,
): void {
  app.route({
    method: ['GET', 'POST'],
    url,
    handler: async (request, reply) => {
      let params: Params;
      try {
        params = browserParams(request);
      } catch (err) {
        if (!(err instanceof OAuthError)) throw err;
        // The parameters are malformed, ui_locales too: the page follows Accept-Language alone.
        return sendErrorPage(ctx, reply, err, language(request, ''), err.status);
      }
      return handle(request, reply, params);
    },
  });
  app.route({ method: ['PUT', 'DELETE', 'PATCH'], url, handler: methodNotAllowed('GET, POST') });
}

/**
 * Sends the browser to `page` (login, consent, the picker, an upstream provider) for a request:
 * `pending`'s id when it is stored already, else the id `create` stores it under, once the
 * browser's and the address's quota of pending requests (`takeInteractionQuota`, config
 * `pendingLimits`) allowed it.
 * @param refused answers a request over the quota, with nothing stored (the 429 page with
 *   `Retry-After`; the caller may record it first)
 */
export async function toInteractionPage(
  ctx: InteractionsServices & { basePath: string },
  request: FastifyRequest,
  reply: FastifyReply,
  browser: string,
  pending: Pending | undefined,
  page: string,
  create: () => Promise<string>,
  refused: (err: OAuthError) => FastifyReply,
): Promise<FastifyReply> {
  let id = pending?.id;
  if (!id) {
    try {
      await takeInteractionQuota(ctx, browser, request.ip);
    } catch (err) {
      if (!(err instanceof OAuthError)) throw err;
      reply.headers(err.headers);
      return refused(err);
    }
    id = await create();
  }
  return reply
    .header('cache-control', 'no-store')
    .redirect(`${ctx.basePath}${page}?interaction=${encodeURIComponent(id)}`, 303);
}
