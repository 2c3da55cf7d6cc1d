/**
 * The cookies of the browser routes, read and written with `@fastify/cookie`, the one
 * place that names them and sets their attributes; the services that decide their values (the
 * session service, users/sessions.ts; the security key step, mfa/passkey-ceremonies.ts) never see
 * the request:
 * - `sigil.session`: the session's random handle; HttpOnly, SameSite=Lax, Path the issuer's path
 *   (`/` at the root, `/id` when mounted at `/id`), Secure on https issuers, Max-Age the session's
 *   remaining lifetime.
 * - `sigil.browser`: the long-lived random browser id; the same attributes.
 * - `sigil.known`: the user this browser signed in with a password (users/known-browsers.ts), set
 *   at each such sign-in; the same attributes, Max-Age `knownBrowserLifetime`. Kept at sign-out:
 *   it vouches for the browser, not for a session.
 * - `sigil.webauthn`: the pending security key step's handle; the same attributes, but only sent to
 *   `<issuer path>/account/passkeys`.
 * Mounted in a host app, the Path keeps the cookies away from the host's other routes (RFC 6265
 * §5.1.4: `/id` matches `/id` and `/id/…`, never `/idx` or `/`). That is why the names carry no
 * `__Host-` prefix: it requires `Path=/` (RFC 6265bis §4.1.3.2), which would send them to every
 * route of the host. No cookie ever has a `Domain`, so all are host-only all the same.
 * The readers hand out the values as sent; the services check them.
 */
import type {} from '@fastify/cookie';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { issuerPath } from '../config/loader.js';

/** Cookie names. */
export const SESSION_COOKIE = 'sigil.session';
export const BROWSER_COOKIE = 'sigil.browser';
export const SECURITY_KEY_STEP_COOKIE = 'sigil.webauthn';
export const KNOWN_BROWSER_COOKIE = 'sigil.known';

/** The path the security key step's cookie is sent to, below the issuer's path. */
const SECURITY_KEY_STEP_PATH = '/account/passkeys';

/** The path of Sigil's cookies: the issuer's path, `/` for an issuer without one. */
export function cookiePath(issuer: string): string {
  return issuerPath(issuer) || '/';
}

/** A cookie value to set, and how long the browser keeps it (`Max-Age`, seconds). */
export interface CookieValue {
  value: string;
  maxAge: number;
}

/**
 * The attributes every cookie of Sigil's own has: HttpOnly, SameSite=Lax, Secure on an https
 * issuer, no Domain, unsigned. Named in full, so that a host app's own `@fastify/cookie` defaults
 * (its `parseOptions`, merged into every cookie it sets) cannot widen them, e.g. with a `Domain`.
 */
export function cookieAttributes(issuer: string, path: string, maxAge?: number) {
  return {
    path,
    httpOnly: true,
    sameSite: 'lax' as const,
    secure: issuer.startsWith('https:'),
    domain: undefined,
    partitioned: false,
    signed: false,
    ...(maxAge !== undefined ? { maxAge } : {}),
  };
}

/** The request's session cookie (`sigil.session`) as sent, or undefined. */
export function sessionCookie(request: FastifyRequest): string | undefined {
  return request.cookies[SESSION_COOKIE];
}

/** Sets the session cookie to a new handle. */
export function setSessionCookie(reply: FastifyReply, issuer: string, cookie: CookieValue): void {
  reply.setCookie(SESSION_COOKIE, cookie.value, cookieAttributes(issuer, cookiePath(issuer), cookie.maxAge));
}

/** Clears the session cookie. */
export function clearSessionCookie(reply: FastifyReply, issuer: string): void {
  reply.clearCookie(SESSION_COOKIE, cookieAttributes(issuer, cookiePath(issuer)));
}

/** The request's browser id cookie (`sigil.browser`) as sent, or undefined. */
export function browserCookie(request: FastifyRequest): string | undefined {
  return request.cookies[BROWSER_COOKIE];
}

/**
 * Sets a new browser id, on the reply and on the request, so that the rest of this request reads
 * the same id.
 */
export function setBrowserCookie(
  request: FastifyRequest,
  reply: FastifyReply,
  issuer: string,
  cookie: CookieValue,
): void {
  reply.setCookie(BROWSER_COOKIE, cookie.value, cookieAttributes(issuer, cookiePath(issuer), cookie.maxAge));
  request.cookies[BROWSER_COOKIE] = cookie.value;
}

/** The request's known-browser cookie (`sigil.known`) as sent, or undefined. */
export function knownBrowserCookie(request: FastifyRequest): string | undefined {
  return request.cookies[KNOWN_BROWSER_COOKIE];
}

/** Sets the known-browser cookie. */
export function setKnownBrowserCookie(reply: FastifyReply, issuer: string, cookie: CookieValue): void {
  reply.setCookie(KNOWN_BROWSER_COOKIE, cookie.value, cookieAttributes(issuer, cookiePath(issuer), cookie.maxAge));
}

/** The request's security key step cookie (`sigil.webauthn`) as sent, or undefined. */
export function securityKeyStepCookie(request: FastifyRequest): string | undefined {
  return request.cookies[SECURITY_KEY_STEP_COOKIE];
}

function securityKeyStepPath(issuer: string): string {
  return `${issuerPath(issuer)}${SECURITY_KEY_STEP_PATH}`;
}

/** Sets the security key step's cookie, sent only to `<issuer path>/account/passkeys`. */
export function setSecurityKeyStepCookie(reply: FastifyReply, issuer: string, cookie: CookieValue): void {
  reply.setCookie(
    SECURITY_KEY_STEP_COOKIE,
    cookie.value,
    cookieAttributes(issuer, securityKeyStepPath(issuer), cookie.maxAge),
  );
}

/** Clears the security key step's cookie. */
export function clearSecurityKeyStepCookie(reply: FastifyReply, issuer: string): void {
  reply.clearCookie(SECURITY_KEY_STEP_COOKIE, cookieAttributes(issuer, securityKeyStepPath(issuer)));
}
