/**
 * Requests to URLs that callers choose (Client ID Metadata Documents and the `jwks_uri` they
 * name; what a dynamically registered client names: `jwks_uri`, `sector_identifier_uri`,
 * `request_uris`, `backchannel_logout_uri`; webhook URLs), guarded against server-side request forgery
 * (draft-ietf-oauth-client-id-metadata-document
 * §"SSRF Attacks": never to special-use addresses of RFC 6890). The host is resolved here, every
 * address it resolves to must be an ordinary public one, and the connection goes to the vetted
 * address only (the socket's lookup answers with it), so a DNS answer that changes between the
 * check and the connection (DNS rebinding) cannot steer it; TLS still checks the certificate
 * against the URL's host name. One deadline covers resolving, connecting and reading; the body is
 * read up to a size cap; redirects are never followed.
 */
import { lookup } from 'node:dns/promises';
import { type Agent, type IncomingHttpHeaders, request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { BlockList, isIP, type LookupFunction } from 'node:net';

/** Bounds of one guarded request. */
export interface OutboundLimits {
  /** The whole request (resolving, connecting, reading), in milliseconds. */
  timeoutMs: number;
  /** Most bytes of the body. */
  maxBytes: number;
  /**
   * Loopback addresses (127.0.0.0/8, ::1) are allowed, and plain http to them (and to them only):
   * development and tests only.
   */
  allowLoopback: boolean;
}

/** A guarded request was refused or failed; the message names why, without the URL, fit for an `error_description`. */
export class OutboundRefused extends Error {}

/** A response of status 200 with its body. */
export interface OutboundResponse {
  headers: IncomingHttpHeaders;
  body: Buffer;
}

/**
 * Special-use address blocks (IANA IPv4 and IPv6 Special-Purpose Address Registries, RFC 6890 and
 * its updates) and multicast: no caller-chosen URL may reach them. IPv4-mapped, IPv4-compatible,
 * NAT64 and 6to4 IPv6 blocks are refused whole, as they can carry any IPv4 address. One list per
 * family: a BlockList matches IPv4 addresses against IPv4-mapped IPv6 rules too.
 */
const SPECIAL_USE = { ipv4: new BlockList(), ipv6: new BlockList() };
for (const [net, bits] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.31.196.0', 24],
  ['192.52.193.0', 24],
  ['192.88.99.0', 24],
  ['192.168.0.0', 16],
  ['192.175.48.0', 24],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const)
  SPECIAL_USE.ipv4.addSubnet(net, bits, 'ipv4');
for (const [net, bits] of [
  ['::', 96],
  ['::ffff:0:0', 96],
  ['64:ff9b::', 96],
  ['64:ff9b:1::', 48],
  ['100::', 64],
  ['2001::', 23],
  ['2001:db8::', 32],
  ['2002::', 16],
  ['3fff::', 20],
  ['5f00::', 16],
  ['fc00::', 7],
  ['fe80::', 10],
  ['fec0::', 10],
  ['ff00::', 8],
] as const)
  SPECIAL_USE.ipv6.addSubnet(net, bits, 'ipv6');

const LOOPBACK = { ipv4: new BlockList(), ipv6: new BlockList() };
LOOPBACK.ipv4.addSubnet('127.0.0.0', 8, 'ipv4');
LOOPBACK.ipv6.addAddress('::1', 'ipv6');

/**
 * Whether a caller-chosen URL may be fetched from `address`: not special-use (RFC 6890), except
 * loopback when `allowLoopback`.
 * @param address an IPv4 or IPv6 address (no brackets, no zone)
 */
export function isFetchableAddress(address: string, allowLoopback: boolean): boolean {
  const family = isIP(address);
  if (family === 0) return false;
  const type = family === 4 ? 'ipv4' : 'ipv6';
  if (allowLoopback && LOOPBACK[type].check(address, type)) return true;
  return !SPECIAL_USE[type].check(address, type);
}

/**
 * GETs an https URL under the SSRF guard and `limits`.
 * @param accept the `Accept` header
 * @returns the headers and body of a 200 response
 * @throws OutboundRefused when the URL is not https (http to loopback with `allowLoopback`), its
 *   host resolves to no address or to one that `isFetchableAddress` refuses, the connection or
 *   TLS fails, the deadline passes, the status is not 200 (redirects included), or the body is
 *   larger than `limits.maxBytes`.
 */
export async function guardedGet(url: URL, accept: string, limits: OutboundLimits): Promise<OutboundResponse> {
  const { headers, body } = await guarded(url, limits, (host, address, signal) =>
    exchange(url, host, address, { method: 'GET', headers: { accept } }, limits.maxBytes, signal),
  );
  return { headers, body };
}

/**
 * POSTs a form (`application/x-www-form-urlencoded`) to an https URL under the SSRF guard and
 * `limits`, as back-channel logout does (OIDC Back-Channel Logout 1.0 §2.5). The answer's body is
 * not read.
 * @returns the answer's HTTP status (a redirect is returned as such, never followed)
 * @throws OutboundRefused as `guardedGet`, but for the status
 */
export async function guardedPostForm(url: URL, form: string, limits: OutboundLimits): Promise<number> {
  return guardedPost(url, form, { 'content-type': 'application/x-www-form-urlencoded' }, limits);
}

/**
 * POSTs `body` with `headers` (its media type among them) to an https URL under the SSRF guard
 * and `limits`, as webhook deliveries do. The deadline runs until the answer's status line and
 * headers; its body is never read (however large, it costs nothing).
 * @returns the answer's HTTP status (a redirect is returned as such, never followed)
 * @throws OutboundRefused as `guardedGet`, but for the status
 */
export async function guardedPost(
  url: URL,
  body: string,
  headers: Record<string, string>,
  limits: OutboundLimits,
): Promise<number> {
  const { status } = await guardedPostReading(url, body, headers, { ...limits, maxBytes: 0 });
  return status;
}

/**
 * POSTs `body` as `guardedPost` does and, for a 2xx answer, reads its body up to
 * `limits.maxBytes` within the same deadline, as the synchronous hooks need their receiver's
 * answer; another status comes back with an empty body, unread.
 * @param agent keeps connections alive between calls to the same receiver (an `http.Agent` for an
 *   http URL, an `https.Agent` for https, with `keepAlive`): a kept connection goes to an address
 *   vetted when it was opened; absent, each call opens its own
 * @returns the status, the headers and the body (empty unless 2xx); a redirect is returned as such
 * @throws OutboundRefused as `guardedGet`, but for the status; also when a 2xx body is larger
 *   than `limits.maxBytes` (the reading stops there: a huge answer costs no memory)
 */
export async function guardedPostReading(
  url: URL,
  body: string,
  headers: Record<string, string>,
  limits: OutboundLimits,
  agent?: Agent,
): Promise<OutboundResponse & { status: number }> {
  const all = { ...headers, 'cache-control': 'no-store', 'content-length': String(Buffer.byteLength(body)) };
  return guarded(url, limits, (host, address, signal) =>
    exchange(url, host, address, { method: 'POST', headers: all, body, agent }, limits.maxBytes, signal),
  );
}

/** Vets the URL's host, then runs `send` to the vetted address under one deadline. */
async function guarded<T>(
  url: URL,
  limits: OutboundLimits,
  send: (host: string, address: { address: string; family: number }, signal: AbortSignal) => Promise<T>,
): Promise<T> {
  const plainLoopback = url.protocol === 'http:' && limits.allowLoopback;
  if (url.protocol !== 'https:' && !plainLoopback) throw new OutboundRefused('only https URLs are fetched');
  const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), limits.timeoutMs);
  try {
    const address = await vettedAddress(host, limits.allowLoopback, controller.signal);
    if (plainLoopback && !isLoopback(address.address)) throw new OutboundRefused('only https URLs are fetched');
    return await send(host, address, controller.signal);
  } catch (err) {
    if (controller.signal.aborted) throw new OutboundRefused(`no complete answer within ${limits.timeoutMs / 1000} s`);
    if (err instanceof OutboundRefused) throw err;
    throw new OutboundRefused('the host could not be reached');
  } finally {
    clearTimeout(timer);
  }
}

function isLoopback(address: string): boolean {
  const type = isIP(address) === 4 ? 'ipv4' : 'ipv6';
  return LOOPBACK[type].check(address, type);
}

/** The address to connect to: the host's first, once every address it resolves to is fetchable. */
async function vettedAddress(
  host: string,
  allowLoopback: boolean,
  signal: AbortSignal,
): Promise<{ address: string; family: number }> {
  const family = isIP(host);
  const resolving =
    family !== 0 ? Promise.resolve([{ address: host, family }]) : lookup(host, { all: true, verbatim: true });
  const aborted = new Promise<never>((_, fail) =>
    signal.addEventListener('abort', () => fail(new Error('aborted')), { once: true }),
  );
  let addresses: { address: string; family: number }[];
  try {
    addresses = await Promise.race([resolving, aborted]);
  } catch (err) {
    if (signal.aborted) throw err;
    throw new OutboundRefused('the host name does not resolve');
  }
  // All of them: a name answering with one public and one private address is refused.
  if (
    addresses.length === 0 ||
    addresses.some((a) => !isFetchableAddress(a.address.split('%')[0] ?? '', allowLoopback))
  )
    throw new OutboundRefused('the host resolves to a private, loopback or other special-use address');
  return addresses[0] as { address: string; family: number };
}

/** One request as `guardedGet` and `guardedPostForm` send it. */
interface OutboundRequest {
  method: 'GET' | 'POST';
  headers: Record<string, string>;
  body?: string;
  /** A keep-alive agent; absent, the connection is the request's own. */
  agent?: Agent | undefined;
}

/**
 * One request to `address` (TLS verified against `host`). A GET resolves with a 200's headers and
 * body read up to `maxBytes`, and rejects any other status; a POST resolves with any status, its
 * body read up to `maxBytes` for a 2xx when `maxBytes` is over 0, else unread and empty.
 */
function exchange(
  url: URL,
  host: string,
  vetted: { address: string; family: number },
  out: OutboundRequest,
  maxBytes: number,
  signal: AbortSignal,
): Promise<OutboundResponse & { status: number }> {
  // The socket's only answer to "where is host?" is the vetted address (pinning).
  const pinned = ((_name: string, options: { all?: boolean }, callback: (...args: unknown[]) => void) => {
    if (options.all) callback(null, [vetted]);
    else callback(null, vetted.address, vetted.family);
  }) as unknown as LookupFunction;
  const https = url.protocol === 'https:';
  return new Promise((resolve, reject) => {
    const req = (https ? httpsRequest : httpRequest)(
      {
        host,
        port: url.port === '' ? (https ? 443 : 80) : Number(url.port),
        path: `${url.pathname}${url.search}`,
        method: out.method,
        headers: { ...out.headers, 'user-agent': 'Sigil' },
        agent: out.agent ?? false,
        lookup: pinned,
        signal,
      },
      (res) => {
        const status = res.statusCode ?? 0;
        if (out.method === 'POST' && (maxBytes === 0 || status < 200 || status >= 300)) {
          resolve({ status, headers: res.headers, body: Buffer.alloc(0) });
          res.destroy();
          return;
        }
        if (out.method === 'GET' && status !== 200) {
          reject(
            new OutboundRefused(
              res.statusCode !== undefined && res.statusCode >= 300 && res.statusCode < 400
                ? 'redirects are not followed'
                : `the answer was HTTP ${res.statusCode ?? '?'}, not 200`,
            ),
          );
          res.destroy();
          return;
        }
        const declared = Number(res.headers['content-length'] ?? 0);
        const tooLarge = () => new OutboundRefused(`the answer is larger than ${maxBytes / 1024} KB`);
        if (declared > maxBytes) {
          reject(tooLarge());
          res.destroy();
          return;
        }
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (chunk: Buffer) => {
          size += chunk.byteLength;
          // Rejected first: destroying the response emits its own error.
          if (size > maxBytes) {
            reject(tooLarge());
            res.destroy();
          } else chunks.push(chunk);
        });
        res.on('end', () => resolve({ status, headers: res.headers, body: Buffer.concat(chunks) }));
        res.on('error', reject);
        res.on('aborted', () => reject(new OutboundRefused('the connection was closed early')));
      },
    );
    req.on('error', reject);
    req.end(out.body);
  });
}

/**
 * POSTs `body` to a URL a client registered (back-channel logout, the CIBA ping): under the SSRF
 * guard (`guardedPost`) when a caller chose the URL (dynamic registration, metadata documents),
 * else straight to where the operator's config points; either way no-store, within `timeoutMs`,
 * never following a redirect, the answer's body unread.
 * @param callerChosen the URL was chosen by a caller, not the operator (`hasCallerChosenUrls`)
 * @param allowLoopback loopback addresses pass the guard (development only)
 * @returns the answer's HTTP status
 * @throws OutboundRefused (guarded) or fetch's error (unguarded) when no answer came
 */
export async function postToClientUrl(
  url: string,
  body: string,
  headers: Record<string, string>,
  options: { callerChosen: boolean; allowLoopback: boolean; timeoutMs: number },
): Promise<number> {
  const { timeoutMs, allowLoopback } = options;
  if (options.callerChosen) return guardedPost(new URL(url), body, headers, { timeoutMs, maxBytes: 0, allowLoopback });
  const res = await fetch(url, {
    method: 'POST',
    headers: { ...headers, 'cache-control': 'no-store' },
    body,
    redirect: 'manual',
    signal: AbortSignal.timeout(timeoutMs),
  });
  await res.body?.cancel();
  return res.status;
}
