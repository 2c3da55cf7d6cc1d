/**
 * Client authentication at the back-channel endpoints (RFC 6749 §2.3, §3.2.1): `client_secret_basic`,
 * `client_secret_post`, and public clients by `client_id` alone. API resources authenticate at
 * introspection with the same credential forms (RFC 7662 §2.1).
 */
import type { ClientConfig } from '../config/schema.js';
import { OAuthError, invalidRequest } from '../errors.js';
import { formDecode, type Params } from '../http/form.js';
import { secretDigest, secretMatches } from '../tokens/handles.js';
import type { CredentialAttempt, FailureLimiter } from './failure-limiter.js';

/**
 * Secrets of at least this many characters are not counted identity-wide (no slow-down for the
 * client or API resource from every address). Sigil generates 256-bit secrets (43 base64url
 * characters); 32 characters of even a hexadecimal alphabet carry 128 bits, beyond any online
 * guessing at the per-address limits. `sha256:` secrets count as long: `sigil clients add` writes
 * them for generated secrets.
 */
export const LONG_SECRET_LENGTH = 32;

/**
 * Whether every configured secret is long (`LONG_SECRET_LENGTH` characters or more, or a
 * `sha256:` digest) and there is at least one.
 */
export function secretsAreLong(configured: readonly string[]): boolean {
  return configured.length > 0 && configured.every((s) => s.startsWith('sha256:') || s.length >= LONG_SECRET_LENGTH);
}

/** An API resource's secrets: SHA-256 digests, and whether they are all long (`secretsAreLong`). */
export interface ApiSecrets {
  digests: Buffer[];
  long: boolean;
}

/** An API resource's configured secrets (clear text or `sha256:`), ready for `authenticateApiResource`. */
export function apiSecretsOf(configured: readonly string[]): ApiSecrets {
  return { digests: configured.map(secretDigest), long: secretsAreLong(configured) };
}

/** A configured client with its secrets as SHA-256 digests. */
export interface Client extends ClientConfig {
  /** No secret is required: authenticates by `client_id` only (and PKCE at authorize). */
  isPublic: boolean;
  secretDigests: Buffer[];
  /** Every secret is long (`secretsAreLong`): failures are counted per address only. */
  longSecrets: boolean;
}

/** How a request presented its credentials. */
export type AuthMethod = 'client_secret_basic' | 'client_secret_post' | 'none';

/** Credentials as found in a request, not yet checked. */
export interface PresentedCredentials {
  id: string;
  secret: string | undefined;
  method: AuthMethod;
}

/** Request parts that carry credentials. */
export interface CredentialSource {
  /** Every `Authorization` header value sent (a repeated header is refused). */
  authorization: string[];
  params: Params;
}

const DUMMY_DIGEST = [secretDigest('sigil-no-such-client')];

/** The clients of the config, by `client_id`, secrets hashed once. Disabled clients are absent. */
export class ClientRegistry {
  private clients: Map<string, Client>;
  /** Grows whenever the set of clients changes; lets derived data (discovery, CORS) be cached. */
  version = 0;

  /**
   * @param configs the config file's clients; they win over stored clients with the same id.
   */
  constructor(private readonly configs: readonly ClientConfig[]) {
    this.clients = ClientRegistry.index(configs);
  }

  private static index(configs: readonly ClientConfig[]): Map<string, Client> {
    return new Map(
      configs
        .filter((c) => c.enabled)
        .map((c) => [
          c.clientId,
          { ...c, isPublic: !c.requireClientSecret, secretDigests: c.clientSecrets.map(secretDigest), longSecrets: secretsAreLong(c.clientSecrets) },
        ]),
    );
  }

  /**
   * Replaces the stored clients (from `sigil clients add`), keeping the config file's.
   * @returns the ids of stored clients ignored because the config file defines them.
   */
  setStoredClients(stored: readonly ClientConfig[]): string[] {
    const fromConfig = new Set(this.configs.map((c) => c.clientId));
    const shadowed = stored.filter((c) => fromConfig.has(c.clientId)).map((c) => c.clientId);
    const next = ClientRegistry.index([...this.configs, ...stored.filter((c) => !fromConfig.has(c.clientId))]);
    const changed = next.size !== this.clients.size || [...next].some(([id, c]) => JSON.stringify(c) !== JSON.stringify(this.clients.get(id)));
    if (changed) {
      this.clients = next;
      this.version += 1;
    }
    return shadowed;
  }

  /** The enabled client with that id, or undefined. */
  get(clientId: string): Client | undefined {
    return this.clients.get(clientId);
  }

  /** Every enabled client. */
  all(): Client[] {
    return [...this.clients.values()];
  }
}

/**
 * Finds the credentials in a request: HTTP Basic (id and secret form-url-decoded, RFC 6749
 * §2.3.1) or `client_id`/`client_secret` in the body. Using both methods at once is refused
 * (RFC 6749 §2.3).
 * @returns the credentials, or undefined when the request has none.
 * @throws OAuthError `invalid_request` for two methods, a repeated header or parameter;
 *   `invalid_client` (401, `WWW-Authenticate: Basic`) for a malformed Basic header.
 */
export function findCredentials(source: CredentialSource): PresentedCredentials | undefined {
  if (source.authorization.length > 1) throw invalidRequest('the Authorization header was sent more than once');
  const header = source.authorization[0];
  const bodyId = source.params.get('client_id');
  const bodySecret = source.params.get('client_secret');
  if (header !== undefined && /^basic /i.test(header)) {
    if (bodySecret !== undefined) throw invalidRequest('use one client authentication method, not two');
    const basic = decodeBasic(header.slice(6).trim());
    if (bodyId !== undefined && bodyId !== basic.id) throw invalidRequest('client_id differs from the Basic credentials');
    return { id: basic.id, secret: basic.secret, method: 'client_secret_basic' };
  }
  if (bodyId === undefined) {
    if (bodySecret !== undefined) throw invalidRequest('client_secret without client_id');
    return undefined;
  }
  return bodySecret === undefined
    ? { id: bodyId, secret: undefined, method: 'none' }
    : { id: bodyId, secret: bodySecret, method: 'client_secret_post' };
}

/**
 * The `invalid_client` error of RFC 6749 §5.2: 401 with `WWW-Authenticate: Basic` on every
 * answer, whatever method the client tried (RFC 9110 §15.5.2: a 401 carries a challenge).
 */
export function invalidClient(description: string): OAuthError {
  return new OAuthError('invalid_client', description, 401, { 'www-authenticate': 'Basic realm="sigil", charset="UTF-8"' });
}

/**
 * Authenticates the client of a back-channel request.
 * Confidential clients must present a secret matching one of theirs (constant time, on SHA-256
 * digests); public clients are identified by `client_id` and must present no secret (RFC 6749
 * §2.3: they have none). Failures count in `limiter` against the caller's address and the
 * (client, address) pair, and against the client from every address (a slow-down only) unless
 * all its secrets are long.
 * @returns the client and the method it used.
 * @throws OAuthError `invalid_client` (401) for no credentials, an unknown client, a wrong or
 *   missing secret, or a secret sent by a public client; 429 while blocked; `invalid_request`
 *   from `findCredentials`.
 */
export async function authenticateClient(
  source: CredentialSource,
  registry: ClientRegistry,
  limiter: FailureLimiter,
  address: string,
): Promise<{ client: Client; method: AuthMethod }> {
  const presented = findCredentials(source);
  if (!presented) throw invalidClient('client authentication is required');
  const client = registry.get(presented.id);
  if (client?.isPublic) {
    if (presented.method !== 'none') throw invalidClient('a public client has no secret to present');
    return { client, method: presented.method };
  }
  // Unknown ids get no identity-wide counter: there is nobody to protect, and its presence
  // would tell which ids exist.
  const attempt: CredentialAttempt = { address, identity: `client:${presented.id}`, identityWide: client !== undefined && !client.longSecrets };
  await limiter.before(attempt);
  if (!client) {
    secretMatches(presented.secret ?? '', DUMMY_DIGEST);
    await limiter.failed(attempt);
    throw invalidClient('unknown client or wrong credentials');
  }
  if (presented.secret === undefined || !secretMatches(presented.secret, client.secretDigests)) {
    await limiter.failed(attempt);
    throw invalidClient('unknown client or wrong credentials');
  }
  return { client, method: presented.method };
}

function decodeBasic(encoded: string): { id: string; secret: string } {
  const malformed = () => invalidClient('malformed Basic credentials');
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(encoded)) throw malformed();
  const text = Buffer.from(encoded, 'base64').toString('utf8');
  const colon = text.indexOf(':');
  if (colon <= 0) throw malformed();
  try {
    return { id: formDecode(text.slice(0, colon)), secret: formDecode(text.slice(colon + 1)) };
  } catch {
    throw malformed();
  }
}

/**
 * Authenticates an API resource by its name and one of its secrets (RFC 7662 §2.1: the protected
 * resource authenticates at introspection). Failures count like a client's (`authenticateClient`).
 * @returns the API resource name, or undefined when `presented.id` names no API resource.
 * @throws OAuthError `invalid_client` (401) for a wrong or missing secret; 429 while blocked.
 */
export async function authenticateApiResource(
  presented: PresentedCredentials,
  apiSecrets: ReadonlyMap<string, ApiSecrets>,
  limiter: FailureLimiter,
  address: string,
): Promise<string | undefined> {
  const secrets = apiSecrets.get(presented.id);
  if (!secrets) return undefined;
  const attempt: CredentialAttempt = { address, identity: `api:${presented.id}`, identityWide: !secrets.long };
  await limiter.before(attempt);
  if (presented.secret === undefined || !secretMatches(presented.secret, secrets.digests)) {
    await limiter.failed(attempt);
    throw invalidClient('unknown API resource or wrong credentials');
  }
  return presented.id;
}
