/**
 * Client authentication at the back-channel endpoints (RFC 6749 §2.3, §3.2.1): `client_secret_basic`,
 * `client_secret_post`, and public clients by `client_id` alone. API resources authenticate at
 * introspection with the same credential forms (RFC 7662 §2.1).
 */
import type { ClientConfig } from '../config/schema.js';
import { OAuthError, invalidRequest } from '../errors.js';
import { formDecode, type Params } from '../http/form.js';
import { secretDigest, secretMatches } from '../tokens/handles.js';
import type { FailureLimiter } from './failure-limiter.js';

/** A configured client with its secrets as SHA-256 digests. */
export interface Client extends ClientConfig {
  /** No secret is required: authenticates by `client_id` only (and PKCE at authorize). */
  isPublic: boolean;
  secretDigests: Buffer[];
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
        .map((c) => [c.clientId, { ...c, isPublic: !c.requireClientSecret, secretDigests: c.clientSecrets.map(secretDigest) }]),
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

/** The `invalid_client` error of RFC 6749 §5.2: 401, with `WWW-Authenticate` when Basic was used. */
export function invalidClient(description: string, method: AuthMethod | undefined): OAuthError {
  const headers: Record<string, string> =
    method === 'client_secret_basic' ? { 'www-authenticate': 'Basic realm="sigil", charset="UTF-8"' } : {};
  return new OAuthError('invalid_client', description, 401, headers);
}

/**
 * Authenticates the client of a back-channel request.
 * Confidential clients must present a secret matching one of theirs (constant time, on SHA-256
 * digests); public clients are identified by `client_id`. Failures count against the client and
 * the caller's address in `limiter`.
 * @returns the client and the method it used.
 * @throws OAuthError `invalid_client` (401) for no credentials, an unknown client or a wrong or
 *   missing secret; 429 while blocked; `invalid_request` from `findCredentials`.
 */
export async function authenticateClient(
  source: CredentialSource,
  registry: ClientRegistry,
  limiter: FailureLimiter,
  address: string,
): Promise<{ client: Client; method: AuthMethod }> {
  const presented = findCredentials(source);
  if (!presented) throw invalidClient('client authentication is required', undefined);
  const keys = [`client:${presented.id}`, `address:${address}`];
  await limiter.check(keys);
  const client = registry.get(presented.id);
  if (!client) {
    secretMatches(presented.secret ?? '', DUMMY_DIGEST);
    await limiter.fail(keys);
    throw invalidClient('unknown client or wrong credentials', presented.method);
  }
  if (client.isPublic) return { client, method: presented.method };
  if (presented.secret === undefined || !secretMatches(presented.secret, client.secretDigests)) {
    await limiter.fail(keys);
    throw invalidClient('unknown client or wrong credentials', presented.method);
  }
  return { client, method: presented.method };
}

function decodeBasic(encoded: string): { id: string; secret: string } {
  const malformed = () => invalidClient('malformed Basic credentials', 'client_secret_basic');
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
 * resource authenticates at introspection).
 * @returns the API resource name, or undefined when `presented.id` names no API resource.
 * @throws OAuthError `invalid_client` (401) for a wrong or missing secret; 429 while blocked.
 */
export async function authenticateApiResource(
  presented: PresentedCredentials,
  apiSecrets: ReadonlyMap<string, Buffer[]>,
  limiter: FailureLimiter,
  address: string,
): Promise<string | undefined> {
  const digests = apiSecrets.get(presented.id);
  if (!digests) return undefined;
  const keys = [`api:${presented.id}`, `address:${address}`];
  await limiter.check(keys);
  if (presented.secret === undefined || !secretMatches(presented.secret, digests)) {
    await limiter.fail(keys);
    throw invalidClient('unknown API resource or wrong credentials', presented.method);
  }
  return presented.id;
}
