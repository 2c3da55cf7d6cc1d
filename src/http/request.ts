/**
 * Reading OAuth requests off Fastify: the form body (only `application/x-www-form-urlencoded`,
 * RFC 6749 §3.2), credentials, and the no-store headers of token-like responses.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import Negotiator from 'negotiator';
import type { RequestOrigin } from '../events/events.js';
import { OAuthError, invalidRequest } from '../protocol/errors.js';
import { type CredentialSource, Params } from '../protocol/params.js';

/** Body marker for any content type other than a form: the endpoint decides the error. */
export const NOT_A_FORM = Symbol('not a form');

/** How an endpoint refuses a request that is not a form POST. */
export type FormPolicy =
  /** Token and device endpoints: 400 `invalid_request` for every such request. */
  | 'invalid_request'
  /** Introspection and revocation: 405 for a wrong method, 415 for a wrong content type. */
  | 'status';

/**
 * The form parameters of a POST; a parameter may repeat only when named in `repeatable`.
 * @throws OAuthError per `policy` when the method is not POST or the body is not a form;
 *   `invalid_request` for any other repeated parameter.
 */
export function formBody(request: FastifyRequest, policy: FormPolicy, repeatable: readonly string[] = []): Params {
  if (request.method !== 'POST') {
    if (policy === 'invalid_request') throw invalidRequest('use POST');
    throw new OAuthError('invalid_request', 'use POST', 405, { allow: 'POST' });
  }
  if (request.body instanceof Params) {
    request.body.assertNoRepeats(repeatable);
    return request.body;
  }
  if (policy === 'invalid_request') throw invalidRequest('the body must be application/x-www-form-urlencoded');
  throw new OAuthError('invalid_request', 'the body must be application/x-www-form-urlencoded', 415);
}

/**
 * The parameters of a browser endpoint (authorize, end session): the query of a GET, parsed as
 * strictly as a form, or the form body of a POST (OIDC Core §3.1.2.1).
 * @throws OAuthError `invalid_request` for malformed encoding; 415 for a POST that is not a form.
 */
export function browserParams(request: FastifyRequest): Params {
  if (request.method === 'GET') {
    const i = request.url.indexOf('?');
    return Params.parse(i === -1 ? '' : request.url.slice(i + 1));
  }
  if (request.body instanceof Params) return request.body;
  throw new OAuthError('invalid_request', 'the body must be application/x-www-form-urlencoded', 415);
}

/** The request's credential-bearing parts, for client or API authentication. */
export function credentialSource(request: FastifyRequest, params: Params): CredentialSource {
  const authorization: string[] = [];
  const raw = request.raw.rawHeaders;
  for (let i = 0; i < raw.length; i += 2)
    if (raw[i]?.toLowerCase() === 'authorization') authorization.push(raw[i + 1] ?? '');
  const query = request.query as Record<string, unknown> | undefined;
  // RFC 6749 §2.3.1: credentials never travel in the URL.
  if (query && ('client_secret' in query || 'client_assertion' in query))
    throw invalidRequest('client credentials must not be sent in the query string');
  return { authorization, params };
}

/**
 * Every value of the request header `name` (lower case), in order, however the client spelled
 * the name (RFC 9110 §5.1): a repeated header is seen as repeated, not joined.
 */
export function headerValues(request: FastifyRequest, name: string): string[] {
  const out: string[] = [];
  const raw = request.raw.rawHeaders;
  for (let i = 0; i < raw.length; i += 2) if (raw[i]?.toLowerCase() === name) out.push(raw[i + 1] ?? '');
  return out;
}

/** Sets `Cache-Control: no-store` and `Pragma: no-cache` (RFC 6749 §5.1). */
export function noStore(reply: FastifyReply): FastifyReply {
  return reply.header('cache-control', 'no-store').header('pragma', 'no-cache');
}

/** Renders an `OAuthError` as the JSON error response of RFC 6749 §5.2, uncached. */
export function sendOAuthError(reply: FastifyReply, err: OAuthError): FastifyReply {
  noStore(reply).code(err.status).headers(err.headers);
  return reply.type('application/json; charset=utf-8').send(err.toJSON());
}

/** A route handler answering 405 with `Allow` (RFC 9110 §15.5.6). */
export function methodNotAllowed(allow: string) {
  return async (_request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> =>
    sendOAuthError(reply, new OAuthError('invalid_request', 'method not allowed', 405, { allow }));
}

/** The longest `User-Agent` an audit event keeps, in characters (a header may be kilobytes long). */
const USER_AGENT_MAX = 256;

/** Who made a request, for its audit events: address (after `trustProxy`), user agent, request id. */
export function originOf(request: FastifyRequest): RequestOrigin {
  return {
    remoteAddress: request.ip,
    userAgent: request.headers['user-agent']?.slice(0, USER_AGENT_MAX),
    requestId: request.id,
  };
}

/**
 * Whether a request prefers an HTML page to JSON (RFC 9110 §12.5.1, by negotiator): a browser
 * navigating (`Accept: text/html,...,*\/*;q=0.8`) does; an API client sending `application/json`,
 * `*\/*` or no `Accept` does not (JSON wins a tie).
 */
export function prefersHtml(request: FastifyRequest): boolean {
  return new Negotiator(request).mediaType(['application/json', 'text/html']) === 'text/html';
}
