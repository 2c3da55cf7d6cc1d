/**
 * Client ID Metadata Documents (draft-ietf-oauth-client-id-metadata-document; the MCP
 * authorization spec of 2025-11-25 prefers them to dynamic registration): a `client_id` that is
 * an https URL names a JSON document of RFC 7591 client metadata, fetched from that URL and taken
 * as the client. Fetched under the SSRF guard and bounds of `http/outbound.ts` (5 s, 64 KB, no
 * redirects), at most `fetchesPerAddress` fetches per caller address and window, and cached in
 * this process's memory as the response's HTTP caching headers allow (RFC 9111: `no-store` is
 * never stored; `max-age`, else `Expires`, clamped to `CACHE_MIN_SECONDS`..`CACHE_MAX_SECONDS`),
 * at most `CACHE_MAX_ENTRIES` documents. Nothing is stored: each node fetches for itself, which
 * keeps an attacker's documents out of the database and costs one fetch per node and lifetime.
 *
 * Such clients are kept narrow: public (`none`) or `private_key_jwt` with public keys from
 * `jwks` or `jwks_uri` (draft §4.1: no shared secrets), the authorization code grant with PKCE
 * and refresh tokens only, the scopes of every unvetted client (`unvetted-scopes.ts`: never a
 * management scope, `scim` or `sigil:*`), and consent is asked every time, naming the URL's host (draft §"OAuth Phishing Attacks").
 */
import { redirectUriProblem } from '../config/redirect-uris.js';
import { type ClientConfig, clientSchema, isManagementScope } from '../config/schema.js';
import { guardedGet, OutboundRefused } from '../http/outbound.js';
import type { FailureLimiter } from '../limits/failure-limiter.js';
import { addressQuotaKey, chargeQuota } from '../limits/request-quota.js';
import { CALLER_JSON_BOUNDS, jsonBoundsViolation } from '../protocol/json-bounds.js';
import type { Client } from './registry.js';
import { consentedScopes } from './unvetted-scopes.js';

/** Most bytes of a metadata document read. */
export const MAX_DOCUMENT_BYTES = 64 * 1024;
/** Time allowed to fetch a document, in milliseconds. */
export const FETCH_TIMEOUT_MS = 5_000;
/** Least time a fetched document is used, in seconds, whatever its headers say (`no-store` aside). */
export const CACHE_MIN_SECONDS = 60;
/** Longest time a fetched document is used, in seconds. */
export const CACHE_MAX_SECONDS = 86_400;
/** Time a document without caching headers is used, in seconds. */
export const CACHE_DEFAULT_SECONDS = 600;
/** Most documents cached per process; the oldest makes room. */
export const CACHE_MAX_ENTRIES = 1_000;
/** Longest Client Identifier URL, in characters: the bound of every `client_id` at the authorization endpoint. */
export const MAX_CLIENT_ID_LENGTH = 100;
/** Most `redirect_uris` of one document. */
const MAX_REDIRECT_URIS = 20;
/** Longest URL accepted in a document (redirect, logo, policy, terms, JWKS), in characters. */
const MAX_URL_LENGTH = 2_000;
/** Longest `client_name`, in characters. */
const MAX_NAME_LENGTH = 200;
/** Private and symmetric JWK members (RFC 7518 §6.2.2, §6.3.2, §6.4.1): never in a document (draft §4.1). */
const PRIVATE_KEY_MEMBERS = ['d', 'p', 'q', 'dp', 'dq', 'qi', 'k', 'oth'];

/** The config's `clientIdMetadataDocuments`. */
export interface MetadataDocumentSettings {
  enabled: boolean;
  /** Documents (and their `jwks_uri`) may be served from loopback addresses: development and tests only. */
  allowLoopback: boolean;
  /** Fetches one address (an IPv6 /64) may cause per `windowSeconds`. */
  fetchesPerAddress: number;
  /**
   * Scopes such clients may request; null: every identity and API scope but the management ones (`scim`,
   * `sigil:*`).
   */
  allowedScopes: string[] | null;
}

/** A document was refused or could not be fetched; the message says why, fit for an `error_description`. */
export class MetadataDocumentError extends Error {}

/** Whether `clientId` is meant as a Client Identifier URL (draft §3): it starts with `https://`. */
export function isClientIdUrl(clientId: string): boolean {
  return clientId.startsWith('https://');
}

/**
 * Why `clientId` is no valid Client Identifier URL (draft §3), or undefined when it is one: https,
 * no userinfo, a path other than `/`, no `.` or `..` segment (also percent-encoded), no
 * fragment, at most `MAX_CLIENT_ID_LENGTH` characters, and in the form a URL parser gives it
 * (lower-case host, no default port, percent-encoding as normalized), so that the string compared
 * with the document's `client_id` is the URL fetched.
 */
export function clientIdUrlProblem(clientId: string): string | undefined {
  if (clientId.length > MAX_CLIENT_ID_LENGTH)
    return `a client_id URL must not be longer than ${MAX_CLIENT_ID_LENGTH} characters`;
  if (!URL.canParse(clientId)) return 'client_id is not a URL';
  const url = new URL(clientId);
  if (url.protocol !== 'https:') return 'a client_id URL must be https';
  if (clientId.includes('#')) return 'a client_id URL must not have a fragment';
  if (url.username !== '' || url.password !== '' || clientId.slice(0, clientId.indexOf(url.host)).includes('@'))
    return 'a client_id URL must not carry a user name or password';
  const path = clientId.slice(`https://${url.host}`.length).split('?')[0] ?? '';
  if (path.split('/').some((s) => /^(\.|%2e){1,2}$/i.test(s)))
    return 'a client_id URL must not have . or .. path segments';
  if (url.pathname === '/' || url.pathname === '') return 'a client_id URL must have a path other than /';
  if (url.href !== clientId) return 'a client_id URL must be in normalized form (lower-case host, no default port)';
  return undefined;
}

interface CacheEntry {
  client: Client;
  /** Unix milliseconds. */
  freshUntil: number;
}

/** Fetches, checks and caches Client ID Metadata Documents for one Sigil instance. */
export class ClientMetadataDocuments {
  private readonly cache = new Map<string, CacheEntry>();
  private readonly inFlight = new Map<string, Promise<Client>>();

  /**
   * @param settings the config's `clientIdMetadataDocuments`
   * @param scopeNames every identity and API scope name (and `offline_access`), read at each fetch
   * @param limiter whose counters keep the per-address fetch quota
   * @param windowSeconds the quota's window (the config's `pendingLimits.windowSeconds`)
   */
  constructor(
    readonly settings: MetadataDocumentSettings,
    private readonly scopeNames: () => string[],
    private readonly limiter: FailureLimiter,
    private readonly windowSeconds: number,
  ) {}

  /** Whether `clientId` is looked up here: the feature is on and it is meant as a URL. */
  handles(clientId: string): boolean {
    return this.settings.enabled && isClientIdUrl(clientId);
  }

  /** The client of a document fetched and still fresh, without fetching; undefined otherwise. */
  cached(clientId: string, now = Date.now()): Client | undefined {
    const entry = this.cache.get(clientId);
    return entry && entry.freshUntil > now ? entry.client : undefined;
  }

  /**
   * The client a Client Identifier URL names: from the cache while fresh, else fetched (once for
   * concurrent callers) and checked.
   * @param address the caller's address: a fetch counts against its quota
   * @throws MetadataDocumentError when the URL or the document is refused or cannot be fetched
   *   (never cached, draft §"Metadata Caching"); OAuthError 429 `temporarily_unavailable` when the
   *   address has used up its fetches.
   */
  async resolve(clientId: string, address: string): Promise<Client> {
    const fresh = this.cached(clientId);
    if (fresh) return fresh;
    const problem = clientIdUrlProblem(clientId);
    if (problem) throw new MetadataDocumentError(problem);
    let pending = this.inFlight.get(clientId);
    if (!pending) {
      await chargeQuota(
        this.limiter,
        'client_metadata_quota',
        [{ key: `cimd:${addressQuotaKey(address)}`, limit: this.settings.fetchesPerAddress }],
        this.windowSeconds,
      );
      pending = this.fetchDocument(clientId).finally(() => this.inFlight.delete(clientId));
      this.inFlight.set(clientId, pending);
    }
    return pending;
  }

  private async fetchDocument(clientId: string): Promise<Client> {
    let response;
    try {
      response = await guardedGet(new URL(clientId), 'application/json', {
        timeoutMs: FETCH_TIMEOUT_MS,
        maxBytes: MAX_DOCUMENT_BYTES,
        allowLoopback: this.settings.allowLoopback,
      });
    } catch (err) {
      if (err instanceof OutboundRefused)
        throw new MetadataDocumentError(`the client metadata document could not be fetched: ${err.message}`);
      throw err;
    }
    const type =
      String(response.headers['content-type'] ?? '')
        .split(';')[0]
        ?.trim()
        .toLowerCase() ?? '';
    if (type !== 'application/json' && !/^application\/[a-z0-9.+-]+\+json$/.test(type))
      throw new MetadataDocumentError('the client metadata document is not served as application/json');
    const text = response.body.toString('utf8');
    const violation = jsonBoundsViolation(text, { ...CALLER_JSON_BOUNDS, maxLength: MAX_DOCUMENT_BYTES });
    if (violation) throw new MetadataDocumentError(`the client metadata document is ${violation}`);
    let document: unknown;
    try {
      document = JSON.parse(text);
    } catch {
      throw new MetadataDocumentError('the client metadata document is not JSON');
    }
    const client = clientFromDocument(clientId, document, this.allowedScopes());
    const seconds = freshnessSeconds(response.headers, Date.now());
    if (seconds !== undefined) {
      this.cache.delete(clientId);
      if (this.cache.size >= CACHE_MAX_ENTRIES) this.cache.delete(this.cache.keys().next().value as string);
      this.cache.set(clientId, { client, freshUntil: Date.now() + seconds * 1000 });
    }
    return client;
  }

  /** The scopes of every unvetted client (`consentedScopes`: the dynamic clients' policy too). */
  private allowedScopes(): string[] {
    return consentedScopes({ all: this.scopeNames() }, this.settings.allowedScopes);
  }
}

/**
 * How long a response may be used, in seconds (RFC 9111 §4.2.1): undefined for `no-store`
 * (§5.2.2.5); else `max-age`, or `Expires` minus `Date`, or `CACHE_DEFAULT_SECONDS` without
 * either, clamped to `CACHE_MIN_SECONDS`..`CACHE_MAX_SECONDS` (the draft lets the server bound
 * the lifetime; the floor keeps a document with `max-age=0` or `no-cache` from being fetched at
 * every request).
 */
export function freshnessSeconds(
  headers: Record<string, string | string[] | undefined>,
  nowMs: number,
): number | undefined {
  const directives = String(headers['cache-control'] ?? '')
    .toLowerCase()
    .split(',')
    .map((d) => d.trim());
  if (directives.includes('no-store')) return undefined;
  const clamp = (s: number) => Math.min(CACHE_MAX_SECONDS, Math.max(CACHE_MIN_SECONDS, s));
  const maxAge = directives.map((d) => /^max-age="?(\d+)"?$/.exec(d)?.[1]).find((v) => v !== undefined);
  if (maxAge !== undefined) return clamp(Number(maxAge));
  const expires = headers.expires;
  if (typeof expires === 'string') {
    const at = Date.parse(expires);
    const date = typeof headers.date === 'string' ? Date.parse(headers.date) : NaN;
    // An Expires that does not parse means "already expired" (RFC 9111 §5.3).
    return clamp(Number.isNaN(at) ? 0 : (at - (Number.isNaN(date) ? nowMs : date)) / 1000);
  }
  return CACHE_DEFAULT_SECONDS;
}

/**
 * The client a document describes (RFC 7591 §2 metadata, draft §4).
 * @param url the Client Identifier URL it was fetched from
 * @param allowedScopes the scopes such a client may request at most (the management ones, `scim` and
 *   `sigil:*`, are dropped)
 * @throws MetadataDocumentError naming the first problem.
 */
export function clientFromDocument(url: string, document: unknown, allowedScopes: readonly string[]): Client {
  const refuse = (why: string) => new MetadataDocumentError(`the client metadata document ${why}`);
  if (typeof document !== 'object' || document === null || Array.isArray(document))
    throw refuse('is not a JSON object');
  const doc = document as Record<string, unknown>;
  // draft §4: the document's client_id equals the URL it was fetched from, string for string.
  if (doc.client_id !== url) throw refuse('has a client_id other than its URL');
  if ('client_secret' in doc || 'client_secret_expires_at' in doc)
    throw refuse('must not contain a client_secret (draft §4.1)');
  const method = doc.token_endpoint_auth_method ?? 'none';
  // RFC 7591's default, client_secret_basic, needs a shared secret a document cannot carry (draft
  // §4.1): absent means none here, as in the MCP clients' documents.
  if (method !== 'none' && method !== 'private_key_jwt')
    throw refuse('must use token_endpoint_auth_method none or private_key_jwt');
  const grantTypes = stringList(doc.grant_types, 'grant_types', refuse) ?? ['authorization_code'];
  if (
    !grantTypes.includes('authorization_code') ||
    grantTypes.some((g) => g !== 'authorization_code' && g !== 'refresh_token')
  )
    throw refuse('may only use the grant types authorization_code and refresh_token');
  const responseTypes = stringList(doc.response_types, 'response_types', refuse) ?? ['code'];
  if (responseTypes.some((r) => r !== 'code')) throw refuse('may only use response_type code');
  const redirectUris = stringList(doc.redirect_uris, 'redirect_uris', refuse);
  if (!redirectUris || redirectUris.length === 0 || redirectUris.length > MAX_REDIRECT_URIS)
    throw refuse(`needs between 1 and ${MAX_REDIRECT_URIS} redirect_uris`);
  for (const uri of redirectUris)
    if (!isAcceptableRedirectUri(uri))
      throw refuse('has a redirect_uri that is not https, loopback http, or a private-use scheme without fragment');
  const offline = grantTypes.includes('refresh_token');
  const requested = typeof doc.scope === 'string' ? doc.scope.split(' ').filter((s) => s !== '') : undefined;
  // Sigil's own API (scim, sigil:* scopes) is never for a client nobody registered.
  const scopes = allowedScopes.filter(
    (s) =>
      !isManagementScope(s) &&
      (s !== 'offline_access' || offline) &&
      (requested === undefined || requested.includes(s)),
  );
  const display = {
    clientName: optionalText(doc.client_name, 'client_name', refuse),
    logoUri: optionalHttpsUrl(doc.logo_uri, 'logo_uri', refuse),
    clientUri: optionalHttpsUrl(doc.client_uri, 'client_uri', refuse),
    policyUri: optionalHttpsUrl(doc.policy_uri, 'policy_uri', refuse),
    tosUri: optionalHttpsUrl(doc.tos_uri, 'tos_uri', refuse),
  };
  const jwksUri = optionalHttpsUrl(doc.jwks_uri, 'jwks_uri', refuse) ?? null;
  const jwks = doc.jwks ?? null;
  if (jwks !== null && (typeof jwks !== 'object' || !Array.isArray((jwks as { keys?: unknown }).keys)))
    throw refuse('has a jwks that is not a JWK Set');
  const keys = (jwks as { keys: unknown[] } | null)?.keys ?? [];
  if (keys.some((k) => typeof k !== 'object' || k === null || PRIVATE_KEY_MEMBERS.some((m) => m in k)))
    throw refuse('must contain public keys only (draft §4.1)');
  const alg = doc.token_endpoint_auth_signing_alg;
  const parsed = clientSchema.safeParse({
    // The schema's clientId is bounded for configured ids; the URL replaces it below.
    clientId: 'client-id-metadata-document',
    requireClientSecret: method === 'private_key_jwt',
    tokenEndpointAuthMethod: method,
    allowedGrantTypes: ['authorization_code'],
    allowOfflineAccess: offline,
    allowedScopes: scopes,
    redirectUris,
    requirePkce: true,
    allowPlainTextPkce: false,
    requireConsent: true,
    jwks,
    jwksUri,
    ...(typeof alg === 'string' ? { tokenEndpointAuthSigningAlgorithms: [alg] } : {}),
  });
  if (!parsed.success) {
    const first = parsed.error.issues[0];
    throw refuse(`is not acceptable: ${first?.path.join('.') ?? ''} ${first?.message ?? ''}`.trim());
  }
  const config: ClientConfig = { ...parsed.data, clientId: url };
  return {
    ...config,
    ...Object.fromEntries(Object.entries(display).filter(([, v]) => v !== undefined)),
    isPublic: method === 'none',
    secretDigests: [],
    retiringSecrets: [],
    // No secret to guess: failures count per address only, never slowing the client down for all.
    longSecrets: true,
    metadataDocument: true,
  };
}

function stringList(value: unknown, name: string, refuse: (why: string) => Error): string[] | undefined {
  if (value === undefined) return undefined;
  if (
    !Array.isArray(value) ||
    value.some((v) => typeof v !== 'string' || v.length > MAX_URL_LENGTH) ||
    value.length > 100
  )
    throw refuse(`has a ${name} that is not a list of strings`);
  return value as string[];
}

function optionalText(value: unknown, name: string, refuse: (why: string) => Error): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || value.length > MAX_NAME_LENGTH)
    throw refuse(`has a ${name} that is not a string of at most ${MAX_NAME_LENGTH} characters`);
  return value;
}

function optionalHttpsUrl(value: unknown, name: string, refuse: (why: string) => Error): string | undefined {
  if (value === undefined) return undefined;
  if (
    typeof value !== 'string' ||
    value.length > MAX_URL_LENGTH ||
    !URL.canParse(value) ||
    new URL(value).protocol !== 'https:' ||
    value.includes('#')
  )
    throw refuse(`has a ${name} that is not an https URL`);
  return value;
}

/**
 * Whether a document may register `uri`: the one rule of every client (`redirectUriProblem`;
 * RFC 9700 §2.1; RFC 8252 §7), private-use schemes allowed (native apps publish documents too,
 * §7.1), plain http never beyond a loopback host; stricter still, http on a loopback IP only,
 * never the name `localhost` (RFC 8252 §8.3), since nobody vouches for a document's client.
 */
function isAcceptableRedirectUri(uri: string): boolean {
  if (redirectUriProblem(uri, { privateUseSchemes: true, httpOnAnyHost: false }) !== undefined) return false;
  const url = new URL(uri);
  return url.protocol !== 'http:' || url.hostname !== 'localhost';
}
