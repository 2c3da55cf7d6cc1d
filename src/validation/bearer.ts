/**
 * Access token extraction for protected resources: the `Authorization: Bearer` header (RFC 6750
 * §2; scheme case-insensitive, one space, a `b64token`) or `access_token` in a form body, and the
 * `Authorization: DPoP` header of DPoP-bound tokens (RFC 9449 §7.1). Never from the query string
 * (RFC 9700 §4.3.2). Errors per RFC 6750 §3 and RFC 9449 §7.1.
 */
import { OAuthError } from '../protocol/errors.js';
import type { Params } from '../protocol/params.js';
import { DPOP_ALGORITHMS } from './dpop.js';

const B64TOKEN = /^[A-Za-z0-9\-._~+/]+=*$/;

/** The authentication scheme an access token came with. */
export type TokenScheme = 'Bearer' | 'DPoP';

/**
 * An error with its `WWW-Authenticate` challenge for `scheme`: RFC 6750 §3 (`Bearer
 * realm="sigil"[, error=..., error_description=...]`) or RFC 9449 §7.1 (`DPoP algs="...",
 * error=...`), with `scope` when given (§3). Without a code (no token sent) both schemes are offered, in one
 * header (RFC 9110
 * §11.6.1), so a client learns that DPoP is accepted.
 */
export function tokenError(
  scheme: TokenScheme,
  status: 400 | 401 | 403,
  code?: string,
  description?: string,
  scope?: string,
): OAuthError {
  const algs = `DPoP algs="${DPOP_ALGORITHMS.join(' ')}"`;
  let challenge =
    code === undefined ? `Bearer realm="sigil", ${algs}` : scheme === 'Bearer' ? 'Bearer realm="sigil"' : algs;
  if (code) challenge += `, error="${code}"`;
  if (code && description) challenge += `, error_description="${description}"`;
  // RFC 6750 §3 `scope`: the scope(s) needed, with `insufficient_scope` (§3.1).
  if (code && scope) challenge += `, scope="${scope}"`;
  return new OAuthError(code ?? 'invalid_token', description, status, { 'www-authenticate': challenge });
}

/** An RFC 6750 §3 error with a Bearer challenge (see `tokenError`). */
export function bearerError(status: 400 | 401 | 403, code?: string, description?: string): OAuthError {
  return tokenError('Bearer', status, code, description);
}

/**
 * Finds the access token of a request and its scheme: `extractBearer`, or the
 * `Authorization: DPoP <token>` header (RFC 9449 §7.1; scheme case-insensitive).
 * @returns the token and scheme, or undefined when none was sent
 * @throws OAuthError 400 `invalid_request` as `extractBearer`, also for a malformed DPoP header
 *   or a DPoP header together with a form `access_token`.
 */
export function extractAccessToken(
  authorization: string[],
  form: Params | undefined,
): { token: string; scheme: TokenScheme } | undefined {
  const header = authorization.length === 1 ? authorization[0] : undefined;
  if (header !== undefined && /^dpop(?:$|[ \t])/i.test(header)) {
    const rest = header.slice(4);
    if (!rest.startsWith(' ') || !B64TOKEN.test(rest.slice(1)))
      throw tokenError('DPoP', 400, 'invalid_request', 'malformed DPoP credentials');
    if (form?.get('access_token') !== undefined)
      throw tokenError('DPoP', 400, 'invalid_request', 'the token was sent in more than one way');
    return { token: rest.slice(1), scheme: 'DPoP' };
  }
  const token = extractBearer(authorization, form);
  return token === undefined ? undefined : { token, scheme: 'Bearer' };
}

/**
 * Finds the bearer token of a request.
 * @param authorization every `Authorization` header value sent
 * @param form the form body of a POST, if any
 * @returns the token, or undefined when none was sent (or another scheme was used)
 * @throws OAuthError 400 `invalid_request` for a malformed header, a repeated header, or a token
 *   sent in more than one way (RFC 6750 §2).
 */
export function extractBearer(authorization: string[], form: Params | undefined): string | undefined {
  if (authorization.length > 1) throw bearerError(400, 'invalid_request', 'repeated Authorization header');
  const header = authorization[0];
  let fromHeader: string | undefined;
  if (header !== undefined && /^bearer(?:$|[ \t])/i.test(header)) {
    const rest = header.slice(6);
    if (!rest.startsWith(' ') || !B64TOKEN.test(rest.slice(1)))
      throw bearerError(400, 'invalid_request', 'malformed Bearer credentials');
    fromHeader = rest.slice(1);
  }
  const fromBody = form?.get('access_token');
  if (fromHeader !== undefined && fromBody !== undefined)
    throw bearerError(400, 'invalid_request', 'the token was sent in more than one way');
  return fromHeader ?? fromBody;
}
