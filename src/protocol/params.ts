/**
 * Form bodies and query strings as OAuth reads them (RFC 6749 §3.1, §3.2, Appendix B): strict
 * `application/x-www-form-urlencoded` decoding, empty values treated as absent, and a parameter
 * sent twice refused when it is read.
 */
import { invalidRequest } from './errors.js';

/** Parameters of one request; names map to every value sent, in order. */
export class Params {
  private constructor(private readonly values: Map<string, string[]>) {}

  /**
   * Decodes a urlencoded string strictly: `+` is a space, every `%XX` must be valid hex forming
   * valid UTF-8, and no value may contain NUL. Empty values are dropped (RFC 6749 §3.1).
   * @throws OAuthError `invalid_request` for malformed encoding.
   */
  static parse(body: string): Params {
    const values = new Map<string, string[]>();
    if (body.length === 0) return new Params(values);
    for (const pair of body.split('&')) {
      if (pair === '') continue;
      const eq = pair.indexOf('=');
      const name = formDecode(eq === -1 ? pair : pair.slice(0, eq));
      const value = eq === -1 ? '' : formDecode(pair.slice(eq + 1));
      if (value === '' || name === '') continue;
      const list = values.get(name);
      if (list) list.push(value);
      else values.set(name, [value]);
    }
    return new Params(values);
  }

  /** Parameters from an already decoded object (Fastify's query), arrays meaning repetition. */
  static fromRecord(record: Record<string, unknown>): Params {
    const values = new Map<string, string[]>();
    for (const [name, raw] of Object.entries(record)) {
      const list = (Array.isArray(raw) ? raw : [raw]).filter((v): v is string => typeof v === 'string' && v !== '');
      for (const v of list) if (v.includes('\u0000')) throw invalidRequest('parameters must not contain NUL');
      if (list.length > 0) values.set(name, list);
    }
    return new Params(values);
  }

  /** A copy with `name` set to the single value `value` (replacing any values it had). */
  with(name: string, value: string): Params {
    return new Params(new Map([...this.values, [name, [value]]]));
  }

  /** An empty parameter set. */
  static empty(): Params {
    return new Params(new Map());
  }

  /**
   * The single value of `name`, or undefined when absent.
   * @throws OAuthError `invalid_request` when the parameter was sent more than once (RFC 6749 §3.1).
   */
  get(name: string): string | undefined {
    const list = this.values.get(name);
    if (!list) return undefined;
    if (list.length > 1) throw invalidRequest(`parameter "${name}" was sent more than once`);
    return list[0];
  }

  /** Every value of `name` in the order sent, for the parameters that may repeat (RFC 8707 `resource`). */
  getAll(name: string): string[] {
    return [...(this.values.get(name) ?? [])];
  }

  /**
   * Like `get`, but the parameter is required.
   * @throws OAuthError `invalid_request` when absent or repeated.
   */
  require(name: string): string {
    const value = this.get(name);
    if (value === undefined) throw invalidRequest(`parameter "${name}" is missing`);
    return value;
  }

  /**
   * Refuses any parameter sent more than once (RFC 6749 §3.1, §3.2), read or not, except the
   * names in `repeatable` (parameters defined as repeatable, e.g. RFC 8707 `resource`).
   * @throws OAuthError `invalid_request` naming the first repeated parameter.
   */
  assertNoRepeats(repeatable: readonly string[] = []): void {
    for (const [name, list] of this.values)
      if (list.length > 1 && !repeatable.includes(name))
        throw invalidRequest(`parameter "${name.slice(0, 40)}" was sent more than once`);
  }

  /** Whether `name` was sent (with a non-empty value). */
  has(name: string): boolean {
    return this.values.has(name);
  }
}

/**
 * Decodes one `application/x-www-form-urlencoded` component: `+` is a space, `%XX` must form
 * valid UTF-8, NUL is refused.
 * @throws OAuthError `invalid_request`.
 */
export function formDecode(text: string): string {
  // Most values (grant types, scopes, client ids) hold no escape: decoding would return them as is.
  if (!text.includes('%') && !text.includes('+')) {
    if (text.includes('\u0000')) throw invalidRequest('parameters must not contain NUL');
    return text;
  }
  let out: string;
  try {
    out = decodeURIComponent(text.replaceAll('+', ' '));
  } catch {
    throw invalidRequest('the form is not valid application/x-www-form-urlencoded UTF-8');
  }
  if (out.includes('\u0000')) throw invalidRequest('parameters must not contain NUL');
  return out;
}

/**
 * The parts of a request that carry client credentials (RFC 6749 §2.3.1: the `Authorization`
 * header and the form), as `findCredentials` in clients/authentication.ts reads them.
 */
export interface CredentialSource {
  /** Every `Authorization` header value sent (a repeated header is refused). */
  authorization: string[];
  params: Params;
}
