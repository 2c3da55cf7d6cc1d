/**
 * A client's public keys (OIDC Core §10.1, RFC 7591 §2 `jwks` / `jwks_uri`) for verifying what it
 * signs: client assertions (RFC 7523 §3) and request objects (RFC 9101 §6.1). From the config's
 * `jwks`, or fetched from its `jwksUri`: with a timeout and a size limit, cached, and fetched again
 * when an unknown `kid` arrives, at most once per `JWKS_REFETCH_SECONDS` (successful or not). The
 * keys of a trusted identity issuer (the ID-JAGs of the JWT bearer grant) are fetched the same way,
 * always under the SSRF guard.
 */
import { createLocalJWKSet, createRemoteJWKSet, customFetch, type JSONWebKeySet, type JWTVerifyGetKey } from 'jose';
import { guardedGet } from '../http/outbound.js';
import { CALLER_JSON_BOUNDS, jsonBoundsViolation } from '../protocol/json-bounds.js';

/** Most bytes of a client's JWKS document (a few dozen keys of 4096-bit RSA fit). */
export const MAX_JWKS_BYTES = 64 * 1024;
/** Time allowed to fetch a client's JWKS, in milliseconds. */
export const JWKS_FETCH_TIMEOUT_MS = 5_000;
/** Least time between two fetches of one `jwksUri` caused by unknown keys, in seconds. */
export const JWKS_REFETCH_SECONDS = 60;
/** How long a fetched JWKS is used before it is fetched again, in seconds. */
export const JWKS_CACHE_SECONDS = 600;

/** Most `jwksUri` resolvers kept for clients whose URLs callers chose; the oldest makes room. */
const MAX_GUARDED_KEY_SETS = 1_000;

/** The key material of one client. */
export interface KeySource {
  jwks: { keys: Record<string, unknown>[] } | null;
  jwksUri: string | null;
  /**
   * The `jwksUri` was chosen by whoever serves a metadata document: fetched under the SSRF guard
   * (`http/outbound.ts`).
   */
  metadataDocument?: boolean;
  /** The `jwksUri` was chosen by whoever registered the client (RFC 7591): fetched under the SSRF guard too. */
  registeredDynamically?: boolean;
}

/**
 * Whether a client's URLs were chosen by a caller (a metadata document's server, or whoever
 * registered it dynamically, with open registration anyone): every fetch of them goes through
 * the SSRF guard (`http/outbound.ts`).
 */
export function hasCallerChosenUrls(client: Pick<KeySource, 'metadataDocument' | 'registeredDynamically'>): boolean {
  return client.metadataDocument === true || client.registeredDynamically === true;
}

/**
 * Key resolvers by client (and by trusted identity issuer), for jose's `jwtVerify`. One resolver
 * per `jwksUri` lives as long as this object (one per Sigil instance), so its cache serves every
 * request.
 */
export class ClientKeys {
  private readonly remote = new Map<string, JWTVerifyGetKey>();
  private readonly guarded = new Map<string, JWTVerifyGetKey>();
  private readonly issuers = new Map<string, JWTVerifyGetKey>();
  private readonly local = new WeakMap<object, JWTVerifyGetKey>();

  /**
   * @param allowLoopback the guarded fetches may reach loopback addresses (development;
   * `clientIdMetadataDocuments.allowLoopback`)
   */
  constructor(readonly allowLoopback = false) {}

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
      // Any caller can name a metadata document (or register, when registration is open), so their key sets
      // are bounded in number.
      const guarded = hasCallerChosenUrls(client);
      const sets = guarded ? this.guarded : this.remote;
      let set = sets.get(client.jwksUri);
      if (!set) {
        set = this.remoteSet(client.jwksUri, guarded);
        if (guarded && sets.size >= MAX_GUARDED_KEY_SETS) sets.delete(sets.keys().next().value as string);
        sets.set(client.jwksUri, set);
      }
      return set;
    }
    return undefined;
  }

  /**
   * The resolver of the keys at `jwksUri` of a trusted identity issuer (`trustedIdentityIssuers`,
   * whose ID-JAGs the JWT bearer grant verifies): always fetched under the SSRF guard, as keys at
   * caller-chosen URLs are, with the same bounds and cache. The issuers come from the config alone,
   * so their resolvers are few and kept for the server's life.
   * Resolving throws as `forClient`'s resolvers do.
   */
  forIssuer(jwksUri: string): JWTVerifyGetKey {
    let set = this.issuers.get(jwksUri);
    if (!set) {
      set = this.remoteSet(jwksUri, true);
      this.issuers.set(jwksUri, set);
    }
    return set;
  }

  /** jose's remote key set of `jwksUri` within the JWKS bounds, under the SSRF guard when `guarded`. */
  private remoteSet(jwksUri: string, guarded: boolean): JWTVerifyGetKey {
    return createRemoteJWKSet(new URL(jwksUri), {
      timeoutDuration: JWKS_FETCH_TIMEOUT_MS,
      cooldownDuration: JWKS_REFETCH_SECONDS * 1000,
      cacheMaxAge: JWKS_CACHE_SECONDS * 1000,
      [customFetch]: boundedFetch(guarded ? this.guardedGet : fetch),
    });
  }

  /**
   * A GET under the SSRF guard and the JWKS bounds (`JWKS_FETCH_TIMEOUT_MS`, `MAX_JWKS_BYTES`), as
   * a fetch: for every URL a caller chose (keys, `sector_identifier_uri`, `request_uri`). The
   * answer is always a 200.
   * @throws OutboundRefused as `guardedGet` of `http/outbound.ts`
   */
  readonly guardedGet = async (url: string): Promise<Response> => {
    const res = await guardedGet(new URL(url), 'application/json', {
      timeoutMs: JWKS_FETCH_TIMEOUT_MS,
      maxBytes: MAX_JWKS_BYTES,
      allowLoopback: this.allowLoopback,
    });
    return new Response(new Uint8Array(res.body), { status: 200 });
  };
}

/**
 * A fetch for jose's remote key set that reads at most `MAX_JWKS_BYTES`, refuses JSON nested
 * beyond `CALLER_JSON_BOUNDS`, follows no redirect (jose asks for `manual`; anything but 200 is
 * refused), and after a failed fetch refuses to try again for `JWKS_REFETCH_SECONDS` (jose's
 * cool-down counts successful fetches only).
 * @param get the fetch underneath: the global one, or `guardedGet` for keys at caller-chosen URLs
 */
function boundedFetch(
  get: (url: string, options: RequestInit) => Promise<Response>,
): (url: string, options: RequestInit) => Promise<Response> {
  let failedAt = -Infinity;
  return async (url, options) => {
    if (Date.now() - failedAt < JWKS_REFETCH_SECONDS * 1000)
      throw new Error('the last fetch of this JWKS failed recently');
    try {
      const text = await fetchBoundedText(url, options, get);
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
 * @param get the fetch underneath: the global one, or one under the SSRF guard
 *   (`ClientKeys.guardedGet`) for URLs that callers choose
 * @returns the body as text
 * @throws Error naming the bound that failed (status, size, bounds, timeout, network)
 */
export async function fetchBoundedText(
  url: string,
  options: RequestInit = {},
  get: (url: string, options: RequestInit) => Promise<Response> = fetch,
): Promise<string> {
  const res = await get(url, { signal: AbortSignal.timeout(JWKS_FETCH_TIMEOUT_MS), ...options, redirect: 'manual' });
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
  if (jsonBoundsViolation(text, { ...CALLER_JSON_BOUNDS, maxLength: MAX_JWKS_BYTES }))
    throw new Error('the document is out of bounds');
  return text;
}
