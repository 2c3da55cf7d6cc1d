/**
 * Redirect URI matching (RFC 6749 §3.1.2; RFC 9700 §2.1, §4.1.3; OIDC Core §3.1.2.1): the
 * requested URI must equal a registered one string for string, no normalization; the one
 * exception is a registered loopback IP URI (`http://127.0.0.1/…`, `http://[::1]/…`), which
 * matches the same URI with any port (RFC 8252 §7.3).
 */
import { DANGEROUS_REDIRECT_SCHEMES } from '../config/redirect-uris.js';

const LOOPBACK_HOSTS = new Set(['127.0.0.1', '[::1]']);

/**
 * Whether `requested` matches one of `registered`.
 * @param requested the `redirect_uri` as sent (already form-decoded)
 * @param registered the client's `redirectUris` (or `postLogoutRedirectUris`)
 */
export function matchRedirectUri(requested: string, registered: readonly string[]): boolean {
  if (registered.includes(requested)) return true;
  const asked = loopbackParts(requested);
  if (!asked) return false;
  return registered.some((r) => {
    const reg = loopbackParts(r);
    return reg !== undefined && reg.host === asked.host && reg.rest === asked.rest;
  });
}

/**
 * Splits an `http` loopback-IP URI into host and everything after the port, or undefined when
 * the string is not exactly of that shape (no userinfo, no fragment).
 */
function loopbackParts(uri: string): { host: string; rest: string } | undefined {
  const m = /^http:\/\/(127\.0\.0\.1|\[::1\])(?::(\d{1,5}))?(\/[^#]*)?$/.exec(uri);
  if (!m || !LOOPBACK_HOSTS.has(m[1] ?? '')) return undefined;
  if (m[2] !== undefined && (Number(m[2]) > 65535 || m[2].startsWith('0'))) return undefined;
  return { host: m[1] ?? '', rest: m[3] ?? '' };
}

/** Whether `uri` is usable as a redirect target at all: absolute, no fragment, http(s) or a private-use scheme. */
export function isAbsoluteRedirectUri(uri: string): boolean {
  if (!URL.canParse(uri)) return false;
  const url = new URL(uri);
  if (url.hash !== '' || uri.includes('#')) return false;
  return !DANGEROUS_REDIRECT_SCHEMES.includes(url.protocol);
}
