/**
 * Delivering authorization responses and errors (RFC 6749 §4.1.2, §4.2.2; OAuth 2.0 Multiple
 * Response Type Encoding Practices §2; OAuth 2.0 Form Post Response Mode; RFC 9207): `iss` on
 * every response, 303 for redirects (RFC 9700 §4.12). Only for a target the authorization
 * request's validation found good (client and redirect URI known); anything else ends on the
 * error page (ui/error-page.ts).
 */
import type { FastifyReply } from 'fastify';
import type { OAuthError } from '../protocol/errors.js';

/**
 * Where an authorization response or error is delivered: the registered redirect URI, the
 * response mode and the request's `state`; `validateAuthorizeRequest` (validation/) returns it as
 * part of a valid request, and the pending request keeps it (stores/records/interactions.ts).
 */
export interface ResponseTarget {
  redirectUri: string;
  mode: ResponseMode;
  state?: string;
}

/** How the authorization response travels (OAuth 2.0 Multiple Response Types §2.1, Form Post). */
export type ResponseMode = 'query' | 'fragment' | 'form_post';

/**
 * What delivering a response needs of the server (`Services` has both): the issuer for `iss`
 * (RFC 9207 §2) and the auto-posting form of the form_post mode.
 */
export interface ResponseDelivery {
  issuer: string;
  pages: { sendFormPost(reply: FastifyReply, action: string, fields: Record<string, string>): FastifyReply };
}

/**
 * Sends an authorization response to the client: parameters appended to the redirect URI's
 * query (its own query kept), in the fragment, or in an auto-posting form. `state` and `iss` are
 * added here.
 */
export function sendToClient(
  ctx: ResponseDelivery,
  reply: FastifyReply,
  target: ResponseTarget,
  fields: Record<string, string>,
): FastifyReply {
  const all: Record<string, string> = { ...fields };
  if (target.state !== undefined) all.state = target.state;
  all.iss = ctx.issuer;
  if (target.mode === 'form_post') return ctx.pages.sendFormPost(reply, target.redirectUri, all);
  const encoded = new URLSearchParams(all).toString();
  const base = asciiUri(target.redirectUri);
  const location =
    target.mode === 'query' ? `${base}${base.includes('?') ? '&' : '?'}${encoded}` : `${base}#${encoded}`;
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
export function sendErrorToClient(
  ctx: ResponseDelivery,
  reply: FastifyReply,
  target: ResponseTarget,
  error: OAuthError,
): FastifyReply {
  const fields: Record<string, string> = { error: error.code };
  if (error.description) fields.error_description = error.description;
  return sendToClient(ctx, reply, target, fields);
}
