/**
 * The one error type of the protocol layer.
 *
 * `code` is a registered OAuth 2.0 / OIDC error code as the wire spells it (RFC 6749 §5.2,
 * RFC 6750 §3.1, RFC 8628 §3.5, RFC 7009 §2.2.1); `status` is the HTTP status the back-channel
 * endpoints render it with. `description` goes out as `error_description` and must stay within
 * the RFC 6749 §5.2 character set (%x20-21 / %x23-5B / %x5D-7E): it is sanitized on construction.
 */
export class OAuthError extends Error {
  readonly code: string;
  readonly description: string | undefined;
  readonly status: number;
  /** Extra response headers (for example `WWW-Authenticate`, `Retry-After`). */
  readonly headers: Record<string, string>;

  constructor(code: string, description?: string, status = 400, headers: Record<string, string> = {}) {
    super(description ? `${code}: ${description}` : code);
    this.name = 'OAuthError';
    this.code = code;
    this.description = description === undefined ? undefined : sanitizeDescription(description);
    this.status = status;
    this.headers = headers;
  }

  /** The JSON body of RFC 6749 §5.2: `{ error, error_description? }`. */
  toJSON(): { error: string; error_description?: string } {
    return this.description ? { error: this.code, error_description: this.description } : { error: this.code };
  }
}

/** Keeps only the characters RFC 6749 §5.2 allows in `error_description`; others become `?`. */
export function sanitizeDescription(text: string): string {
  return text.replace(/[^\x20\x21\x23-\x5B\x5D-\x7E]/g, '?').slice(0, 200);
}

/** `invalid_request` (400), RFC 6749 §5.2. */
export const invalidRequest = (description: string): OAuthError => new OAuthError('invalid_request', description);
/** `invalid_grant` (400), RFC 6749 §5.2. */
export const invalidGrant = (description: string): OAuthError => new OAuthError('invalid_grant', description);
/** `invalid_scope` (400), RFC 6749 §5.2. */
export const invalidScope = (description: string): OAuthError => new OAuthError('invalid_scope', description);
/** `unauthorized_client` (400), RFC 6749 §5.2. */
export const unauthorizedClient = (description: string): OAuthError =>
  new OAuthError('unauthorized_client', description);
