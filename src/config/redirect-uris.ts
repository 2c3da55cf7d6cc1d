/**
 * The one rule for the URIs a client may have the browser sent back to (`redirectUris`,
 * `postLogoutRedirectUris`), whichever way the client came: the config file, the management API,
 * the console, `sigil clients add|update`, dynamic registration (RFC 7591) and client ID metadata
 * documents all check with `redirectUriProblem` (the config file and the management paths through
 * `clientSchema`). A redirect URI is where Sigil sends codes and tokens, so it must name a place
 * the client owns and nothing a browser would run or read locally.
 *
 * - absolute (RFC 3986 §4.3), no fragment (RFC 6749 §3.1.2), no `*` anywhere (no wildcards:
 *   matching is string for string, RFC 9700 §4.1.3), no user info (`https://user@host` reads as a
 *   host it is not);
 * - written as a browser reads it: no white space, no control character and no backslash, which
 *   the WHATWG URL parser drops or rewrites (` javascript:`, `java\tscript:`), so the string
 *   checked here is the string a browser follows;
 * - https; http only on a loopback host (127.0.0.0/8, [::1], localhost; RFC 8252 §7.3, §8.3)
 *   unless the client is marked for development (`allowHttpRedirectUris`);
 * - a private-use scheme (native apps, RFC 8252 §7.1) only where the caller allows one, and only in
 *   reverse domain name form (a `.` in the scheme, `com.example.app:/callback`): the RFC's MUST,
 *   and it keeps out every browser pseudo-scheme a list would miss (`view-source:`, `intent:`, …);
 * - never `javascript:`, `data:`, `vbscript:`, `file:` and the other schemes of
 *   `DANGEROUS_REDIRECT_SCHEMES`, whatever else is allowed.
 */
import { LOOPBACK } from './hosts.js';

/** Schemes never accepted in a redirect URI (as `URL.protocol` spells them: lower case, with the colon). */
export const DANGEROUS_REDIRECT_SCHEMES: readonly string[] = [
  'javascript:',
  'data:',
  'vbscript:',
  'file:',
  'blob:',
  'about:',
  'filesystem:',
  'ftp:',
  'ws:',
  'wss:',
];

/** What a redirect URI may be besides https and http on a loopback host. */
export interface RedirectUriAllowance {
  /** A private-use scheme in reverse domain name form (RFC 8252 §7.1): native apps. */
  privateUseSchemes: boolean;
  /** Plain http on any host: a client marked for development (`allowHttpRedirectUris`). */
  httpOnAnyHost: boolean;
}

/** White space, C0 and C1 controls, DEL and the backslash: what the URL parser strips or rewrites. */
const REWRITTEN = /[\s\u0000-\u001f\u007f-\u009f\\]/;

/**
 * Why `uri` is refused as a redirect URI (or post-logout redirect URI), or undefined when it is
 * acceptable. The reason reads after the field's name ("redirectUris[0]: must not have a fragment").
 * @param uri the URI as the client gave it (it is stored and matched as given)
 * @param allowance what is accepted beyond https and loopback http
 */
export function redirectUriProblem(uri: string, allowance: RedirectUriAllowance): string | undefined {
  if (REWRITTEN.test(uri)) return 'must not contain white space, control characters or backslashes';
  if (!/^[a-z][a-z0-9+.-]*:/i.test(uri) || !URL.canParse(uri)) return 'must be an absolute URI';
  if (uri.includes('#')) return 'must not have a fragment (RFC 6749 §3.1.2)';
  if (uri.includes('*')) return 'must not contain wildcards (*)';
  const url = new URL(uri);
  if (DANGEROUS_REDIRECT_SCHEMES.includes(url.protocol)) return `the scheme ${url.protocol} is not allowed`;
  if (url.username !== '' || url.password !== '') return 'must not carry user info';
  if (url.protocol === 'https:') return undefined;
  if (url.protocol === 'http:')
    return allowance.httpOnAnyHost || LOOPBACK.test(url.hostname)
      ? undefined
      : 'http is allowed only on a loopback host (127.0.0.0/8, [::1], localhost) unless the client sets allowHttpRedirectUris';
  if (!allowance.privateUseSchemes) return 'must use https, or http on a loopback host';
  // RFC 8252 §7.1: a private-use scheme is a reverse domain name of the client's, hence has a dot.
  return url.protocol.slice(0, -1).includes('.')
    ? undefined
    : 'a private-use scheme must be a reverse domain name (com.example.app:/callback)';
}
