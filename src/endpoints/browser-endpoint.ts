/**
 * The two browser endpoints' common front (authorize, end session; OIDC Core §3.1.2.1, RP-Initiated
 * Logout 1.0 §2): the parameters of a GET's query or a POST's form, and an error page that never
 * redirects while nothing about the client is known good.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { OAuthError } from '../protocol/errors.js';
import type { Params } from '../protocol/params.js';
import { browserParams, methodNotAllowed } from '../http/request.js';
import { language } from '../ui/language.js';
import { sendErrorPage } from '../ui/error-page.js';
import type { ErrorPageServices } from '../ui/error-page.js';

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
