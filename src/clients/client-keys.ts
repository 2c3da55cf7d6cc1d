/**
 * A client's public keys (OIDC Core §10.1, RFC 7591 §2 `jwks` / `jwks_uri`) for verifying what it
 * signs: client assertions (RFC 7523 §3) and request objects (RFC 9101 §6.1). From the config's
 * `jwks`, or fetched from its `jwksUri`: with a timeout and a size limit, cached, and fetched again
 * when an unknown `kid` arrives, at most once per `JWKS_REFETCH_SECONDS` (successful or not).
 */
import { createLocalJWKSet, createRemoteJWKSet, customFetch, type JSONWebKeySet, type JWTVerifyGetKey } from 'jose';
import { CALLER_JSON_BOUNDS, jsonBoundsViolation } from '../protocol/json-bounds.js';

/** Most bytes of a client's JWKS document (a few dozen keys of 4096-bit RSA fit). */
export const MAX_JWKS_BYTES = 64 * 1024;
/** Time allowed to fetch a client's JWKS, in milliseconds. */
export const JWKS_FETCH_TIMEOUT_MS = 5_000;
/** Least time between two fetches of one `jwksUri` caused by unknown keys, in seconds. */
export const JWKS_REFETCH_SECONDS = 60;
/** How long a fetched JWKS is used before it is fetched again, in seconds. */
export const JWKS_CACHE_SECONDS = 600;

/** The key material of one client. */
export interface KeySource {
  jwks: { keys: Record<string, unknown>[] } | null;
  jwksUri: string | null;
}

/**
 * Key resolvers by client, for jose's `jwtVerify`. One resolver per `jwksUri` lives as long as
 * this object (one per Sigil instance), so its cache serves every request.
 */
export class ClientKeys {
  private readonly remote = new Map<string, JWTVerifyGetKey>();
  private readonly local = new WeakMap<object, JWTVerifyGetKey>();

  /**
   * The resolver of a client's keys, or undefined when it registered none.
   * Resolving throws jose's errors (no matching key, fetch failed, timed out, too large): the
   * caller turns them into its OAuth error.
   */
  forClient(client: KeySource): JWTVerifyGetKey | undefined {
    if (client.jwks) {
      let set = this.local.get(client.jwks);
      if (!set) {
        set = createLocalJWKSet(client.jwks as unknown as JSONWebKeySet);
        this.local.set(client.jwks, set);
      }
      return set;
    }
    if (client.jwksUri) {
      let set = this.remote.get(client.jwksUri);
      if (!set) {
        set = createRemoteJWKSet(new URL(client.jwksUri), {
          timeoutDuration: JWKS_FETCH_TIMEOUT_MS,
          cooldownDuration: JWKS_REFETCH_SECONDS * 1000,
          cacheMaxAge: JWKS_CACHE_SECONDS * 1000,
          [customFetch]: boundedFetch(),
        });
        this.remote.set(client.jwksUri, set);
      }
      return set;
    }
    return undefined;
  }
}

/**
 * A fetch for jose's remote key set that reads at most `MAX_JWKS_BYTES`, refuses JSON nested
 * beyond `CALLER_JSON_BOUNDS`, follows no redirect (jose asks for `manual`; anything but 200 is
 * refused), and after a failed fetch refuses to try again for `JWKS_REFETCH_SECONDS` (jose's
 * cool-down counts successful fetches only).
 */
function boundedFetch(): (url: string, options: RequestInit) => Promise<Response> {
  let failedAt = -Infinity;
  return async (url, options) => {
    if (Date.now() - failedAt < JWKS_REFETCH_SECONDS * 1000) throw new Error('the last fetch of this JWKS failed recently');
    try {
      const text = await fetchBoundedText(url, options);
      return new Response(text, { status: 200, headers: { 'content-type': 'application/json' } });
    } catch (err) {
      failedAt = Date.now();
      throw err;
    }
  };
}

/**
 * Fetches a client's JSON document (a JWKS; a `sector_identifier_uri`, OIDC Core §8.1) within the
 * bounds of the JWKS fetch: `JWKS_FETCH_TIMEOUT_MS` unless `options` carries its own signal, at
 * most `MAX_JWKS_BYTES`, nesting within `CALLER_JSON_BOUNDS`, no redirect, status 200 only.
 * No SSRF guard on the address here: the URLs come from the operator's config or from a
 * registration's https-only rules.
 * @returns the body as text
 * @throws Error naming the bound that failed (status, size, bounds, timeout, network)
 */
export async function fetchBoundedText(url: string, options: RequestInit = {}): Promise<string> {
  const res = await fetch(url, { signal: AbortSignal.timeout(JWKS_FETCH_TIMEOUT_MS), ...options, redirect: 'manual' });
  if (res.status !== 200 || !res.body) {
    await res.body?.cancel();
    throw new Error(`status ${res.status}`);
  }
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
    size += chunk.byteLength;
    if (size > MAX_JWKS_BYTES) throw new Error('the document is too large');
    chunks.push(chunk);
  }
  const text = Buffer.concat(chunks).toString('utf8');
  if (jsonBoundsViolation(text, { ...CALLER_JSON_BOUNDS, maxLength: MAX_JWKS_BYTES })) throw new Error('the document is out of bounds');
  return text;
}
