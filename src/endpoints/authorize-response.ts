/**
 * Delivering authorization responses and errors (RFC 6749 §4.1.2, §4.2.2; OAuth 2.0 Multiple
 * Response Type Encoding Practices §2; OAuth 2.0 Form Post Response Mode; RFC 9207): `iss` on
 * every response, 303 for redirects (RFC 9700 §4.12), and an error page that never redirects
 * when the client or its redirect URI is not known good.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { SigilContext } from '../context.js';
import { OAuthError } from '../protocol/errors.js';
import type { Params } from '../protocol/params.js';
import { browserParams, methodNotAllowed } from '../http/request.js';
import { pickLocale } from '../ui/i18n.js';
import type { ResponseTarget } from '../validation/authorize-request.js';

/**
 * Sends an authorization response to the client: parameters appended to the redirect URI's
 * query (its own query kept), in the fragment, or in an auto-posting form. `state` and `iss` are
 * added here.
 */
export function sendToClient(ctx: SigilContext, reply: FastifyReply, target: ResponseTarget, fields: Record<string, string>): FastifyReply {
  const all: Record<string, string> = { ...fields };
  if (target.state !== undefined) all.state = target.state;
  all.iss = ctx.issuer;
  if (target.mode === 'form_post') return ctx.pages.sendFormPost(reply, target.redirectUri, all);
  const encoded = new URLSearchParams(all).toString();
  const base = asciiUri(target.redirectUri);
  const location = target.mode === 'query' ? `${base}${base.includes('?') ? '&' : '?'}${encoded}` : `${base}#${encoded}`;
  return reply.header('cache-control', 'no-store').header('referrer-policy', 'no-referrer').redirect(location, 303);
}

/**
 * A registered URI as it may travel in a `Location` header: non-ASCII characters (an IRI
 * registered as is) percent-encoded as UTF-8 (RFC 3987 §3.1); Node refuses them in headers.
 */
export function asciiUri(uri: string): string {
  return uri.replace(/[^\x00-\x7f]/gu, (c) => encodeURIComponent(c));
}

/** Sends an OAuth error back to the client (RFC 6749 §4.1.2.1, OIDC Core §3.1.2.6). */
export function sendErrorToClient(ctx: SigilContext, reply: FastifyReply, target: ResponseTarget, error: OAuthError): FastifyReply {
  const fields: Record<string, string> = { error: error.code };
  if (error.description) fields.error_description = error.description;
  return sendToClient(ctx, reply, target, fields);
}

/**
 * Registers a browser endpoint (authorize, end session): GET with the query and POST with a form,
 * both handed to `handle` as parameters; malformed input ends on the error page (415 for a POST
 * that is not a form); PUT, DELETE, PATCH get 405.
 */
export function browserEndpoint(
  app: FastifyInstance,
  ctx: SigilContext,
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
        const lang = pickLocale(undefined, request.headers['accept-language']);
        return sendErrorPage(ctx, reply, err, lang, err.status);
      }
      return handle(request, reply, params);
    },
  });
  app.route({ method: ['PUT', 'DELETE', 'PATCH'], url, handler: methodNotAllowed('GET, POST') });
}

/** The error page (D-25): 400 HTML naming the error; it never links to any client URI. */
export function sendErrorPage(ctx: SigilContext, reply: FastifyReply, error: OAuthError, lang: string, status = 400): FastifyReply {
  const data = { titleKey: 'errorTitle', textKey: 'errorIntro', code: error.code, description: error.description };
  return ctx.pages.send(reply, 'message', lang, data, status);
}
