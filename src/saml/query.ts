/**
 * The query of an HTTP-Redirect binding message as it was sent: SAML Bindings §3.4.4.1 signs the
 * parameters' octets in their original URL encoding, which a parsed query has lost.
 */
import { XmlRefused } from './xml.js';

/** The most characters of a query read. */
const MAX_QUERY = 100_000;

/**
 * The parameters of a request URL's query, still URL-encoded.
 * @returns name → encoded value
 * @throws XmlRefused when the query is too long or names a parameter twice (which one would be
 *   signed and which one read is then anyone's guess).
 */
export function rawQuery(url: string): Record<string, string> {
  const at = url.indexOf('?');
  const query = at < 0 ? '' : url.slice(at + 1);
  if (query.length > MAX_QUERY) throw new XmlRefused('the query is too long');
  const out: Record<string, string> = {};
  for (const pair of query.split('&')) {
    if (pair === '') continue;
    const eq = pair.indexOf('=');
    const name = formDecode(eq < 0 ? pair : pair.slice(0, eq));
    if (Object.hasOwn(out, name)) throw new XmlRefused('a query parameter is repeated');
    out[name] = eq < 0 ? '' : pair.slice(eq + 1);
  }
  return out;
}

/**
 * A form-encoded value decoded (`+` is a space, then percent-decoding).
 * @throws XmlRefused for a malformed percent-encoding.
 */
export function formDecode(value: string): string {
  try {
    return decodeURIComponent(value.replace(/\+/g, ' '));
  } catch {
    throw new XmlRefused('a query parameter is malformed');
  }
}
