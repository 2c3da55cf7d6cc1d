/**
 * The error pages every browser route shares (each names the error and
 * never reflects raw input): a refused request in plain words, an unknown or expired pending
 * request, and the page of an unknown path. Each error page carries an error id, the id of the
 * request, which the log line written for it carries too (`reqId`), so that support can find it.
 */
import type { Services } from '../services.js';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { OAuthError } from '../protocol/errors.js';
import { DirectoryUnavailable } from '../users/directory.js';
import type { Messages } from '../page-kit/i18n.js';
import { language } from './language.js';

/** The services this module uses. */
export type ErrorPageServices = Pick<Services, 'clients' | 'pages'>;

/**
 * The plain-words text of each OAuth error code (RFC 6749 §4.1.2.1, §5.2; RFC 9101 §6.2; RFC 9126 §2.3);
 * others get `errorIntro`.
 */
const ERROR_TEXTS: Readonly<Record<string, keyof Messages>> = {
  invalid_request: 'errorInvalidRequest',
  invalid_client: 'errorInvalidClient',
  unauthorized_client: 'errorUnauthorizedClient',
  access_denied: 'errorAccessDenied',
  unsupported_response_type: 'errorUnsupportedResponseType',
  invalid_scope: 'errorInvalidScope',
  server_error: 'errorServerError',
  temporarily_unavailable: 'errorTemporarilyUnavailable',
  invalid_request_object: 'errorInvalidRequestObject',
  invalid_request_uri: 'errorInvalidRequestUri',
};

/**
 * The error page: HTML naming the error in plain words, its code and the error id, logged
 * with the request's id. A user directory that cannot answer (`DirectoryUnavailable`, 503 with
 * `Retry-After`) is named as the login page names it: sign-in is unavailable for the moment. The
 * way back is the home page (`clientUri`) of the client the request names, when that client is
 * registered: a URI from the config or the store, never from the request, so the page sends nobody
 * to an unverified redirect URI.
 * @param clientId the `client_id` the request named, if any
 */
export function sendErrorPage(
  ctx: ErrorPageServices,
  reply: FastifyReply,
  error: OAuthError,
  lang: string,
  status = 400,
  clientId?: string,
): FastifyReply {
  const request = reply.request;
  request.log.info(
    {
      errorId: request.id,
      error: error.code,
      errorDescription: error.description,
      status,
      url: request.routeOptions.url,
    },
    'error page',
  );
  const client = clientId === undefined ? undefined : ctx.clients.get(clientId);
  const back = client?.clientUri ? { href: client.clientUri, name: client.clientName ?? client.clientId } : undefined;
  const textKey =
    error instanceof DirectoryUnavailable ? 'signInUnavailable' : (ERROR_TEXTS[error.code] ?? 'errorIntro');
  const data = {
    titleKey: 'errorTitle',
    textKey,
    code: error.code,
    description: error.description,
    errorId: request.id,
    back,
  };
  return ctx.pages.send(reply.headers(error.headers), 'message', lang, data, status);
}

/**
 * The refusal of a form that failed the CSRF check (RFC 6749 §10.12): its token is missing or
 * stale, or it came from another site; the person reloads the page and sends it again.
 */
export function formExpiredError(): OAuthError {
  return new OAuthError('invalid_request', 'the form has expired, please try again', 403);
}

/** The error page (403) of a form that failed the CSRF check (`formExpiredError`), in language `lang`. */
export function formExpiredPage(ctx: ErrorPageServices, reply: FastifyReply, lang: string): FastifyReply {
  return sendErrorPage(ctx, reply, formExpiredError(), lang, 403);
}

/** The page shown for an unknown, expired or foreign interaction id (400). */
export function expiredPage(ctx: ErrorPageServices, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  return ctx.pages.send(reply, 'message', language(request), { titleKey: 'errorTitle', textKey: 'expired' }, 400);
}

/**
 * The page of an unknown path (404), for a browser (see `prefersHtml`), with a way on: the user's
 * account page, the one page of Sigil's own that every visitor may open (it signs in first).
 */
export function notFoundPage(ctx: ErrorPageServices, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  return ctx.pages.send(
    reply,
    'message',
    language(request),
    { titleKey: 'notFoundTitle', textKey: 'notFoundText', next: { path: '/account', textKey: 'accountTitle' } },
    404,
  );
}
