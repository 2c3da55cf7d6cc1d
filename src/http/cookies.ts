/**
 * The cookies of the browser routes (DESIGN §6), read and written with `@fastify/cookie`, the one
 * place that names them and sets their attributes; the services that decide their values (the
 * session service, users/sessions.ts; the security key step, mfa/passkey-ceremonies.ts) never see
 * the request:
 * - `sigil.session`: the session's random handle; HttpOnly, SameSite=Lax, path `/`, Secure on
 *   https issuers, Max-Age the session's remaining lifetime.
 * - `sigil.browser`: the long-lived random browser id; the same attributes.
 * - `sigil.webauthn`: the pending security key step's handle; the same attributes, but only sent to
 *   `/account/passkeys`.
 * The readers hand out the values as sent; the services check them.
 */
import type {} from '@fastify/cookie';
import type { FastifyReply, FastifyRequest } from 'fastify';

/** Cookie names. */
export const SESSION_COOKIE = 'sigil.session';
export const BROWSER_COOKIE = 'sigil.browser';
export const SECURITY_KEY_STEP_COOKIE = 'sigil.webauthn';

/** The path the security key step's cookie is sent to. */
const SECURITY_KEY_STEP_PATH = '/account/passkeys';

/** A cookie value to set, and how long the browser keeps it (`Max-Age`, seconds). */
export interface CookieValue {
  value: string;
  maxAge: number;
}

/** The attributes every cookie of Sigil's own has: HttpOnly, SameSite=Lax, Secure on an https issuer. */
function attributes(issuer: string, path: string, maxAge: number) {
  return { path, httpOnly: true, sameSite: 'lax' as const, secure: issuer.startsWith('https:'), maxAge };
}

/** The request's session cookie (`sigil.session`) as sent, or undefined. */
export function sessionCookie(request: FastifyRequest): string | undefined {
  return request.cookies[SESSION_COOKIE];
}

/** Sets the session cookie to a new handle. */
export function setSessionCookie(reply: FastifyReply, issuer: string, cookie: CookieValue): void {
  reply.setCookie(SESSION_COOKIE, cookie.value, attributes(issuer, '/', cookie.maxAge));
}

/** Clears the session cookie. */
export function clearSessionCookie(reply: FastifyReply): void {
  reply.clearCookie(SESSION_COOKIE, { path: '/' });
}

/** The request's browser id cookie (`sigil.browser`) as sent, or undefined. */
export function browserCookie(request: FastifyRequest): string | undefined {
  return request.cookies[BROWSER_COOKIE];
}

/**
 * Sets a new browser id, on the reply and on the request, so that the rest of this request reads
 * the same id.
 */
export function setBrowserCookie(request: FastifyRequest, reply: FastifyReply, issuer: string, cookie: CookieValue): void {
  reply.setCookie(BROWSER_COOKIE, cookie.value, attributes(issuer, '/', cookie.maxAge));
  request.cookies[BROWSER_COOKIE] = cookie.value;
}

/** The request's security key step cookie (`sigil.webauthn`) as sent, or undefined. */
export function securityKeyStepCookie(request: FastifyRequest): string | undefined {
  return request.cookies[SECURITY_KEY_STEP_COOKIE];
}

/** Sets the security key step's cookie, sent only to `/account/passkeys`. */
export function setSecurityKeyStepCookie(reply: FastifyReply, issuer: string, cookie: CookieValue): void {
  reply.setCookie(SECURITY_KEY_STEP_COOKIE, cookie.value, attributes(issuer, SECURITY_KEY_STEP_PATH, cookie.maxAge));
}

/** Clears the security key step's cookie. */
export function clearSecurityKeyStepCookie(reply: FastifyReply): void {
  reply.clearCookie(SECURITY_KEY_STEP_COOKIE, { path: SECURITY_KEY_STEP_PATH });
}
