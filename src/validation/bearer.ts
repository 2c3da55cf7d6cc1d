/**
 * Bearer token extraction for protected resources (RFC 6750 §2): the `Authorization: Bearer`
 * header (scheme case-insensitive, one space, a `b64token`), or `access_token` in a form body.
 * Never from the query string (RFC 9700 §4.3.2). Errors per RFC 6750 §3.
 */
import { OAuthError } from '../errors.js';
import type { Params } from '../http/form.js';

const B64TOKEN = /^[A-Za-z0-9\-._~+/]+=*$/;

/** An RFC 6750 §3 error: `WWW-Authenticate: Bearer realm="sigil"[, error=..., error_description=...]`. */
export function bearerError(status: 400 | 401 | 403, code?: string, description?: string): OAuthError {
  let challenge = 'Bearer realm="sigil"';
  if (code) challenge += `, error="${code}"`;
  if (code && description) challenge += `, error_description="${description}"`;
  return new OAuthError(code ?? 'invalid_token', description, status, { 'www-authenticate': challenge });
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
