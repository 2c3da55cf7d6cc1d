/**
 * The client model and the registry of clients (RFC 6749 §2): the config file's clients and the
 * stored ones (`sigil clients add`, later the management API and dynamic registration), by
 * `client_id`, with their secrets kept only as SHA-256 digests. Also the API
 * resources' secrets, which authenticate at introspection the same way.
 */
import type { ClientConfig } from '../config/schema.js';
import { secretDigest } from '../crypto/handles.js';
import type { StoredClientConfig } from './stored-clients.js';

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
  /**
   * Replaced secrets' digests, accepted until `expiresAt` (Unix seconds): a rotation's grace period (stored
   * API resources).
   */
  retiring?: { digest: Buffer; expiresAt: number }[];
}

/**
 * An API resource's configured secrets (clear text or `sha256:`), ready for `authenticateApiResource`.
 * @param retiring secrets replaced by a rotation (`sha256:` digests) and when each stops working, Unix seconds
 */
export function apiSecretsOf(
  configured: readonly string[],
  retiring: readonly { secret: string; expiresAt: number }[] = [],
): ApiSecrets {
  return {
    digests: configured.map(secretDigest),
    long: secretsAreLong(configured),
    ...(retiring.length > 0
      ? { retiring: retiring.map((r) => ({ digest: secretDigest(r.secret), expiresAt: r.expiresAt })) }
      : {}),
  };
}

/** A configured client with its secrets as SHA-256 digests. */
export interface Client extends ClientConfig {
  /** No secret is required: authenticates by `client_id` only (and PKCE at authorize). */
  isPublic: boolean;
  secretDigests: Buffer[];
  /** Replaced secrets' digests, accepted until `expiresAt` (Unix seconds): a rotation's grace period. */
  retiringSecrets: { digest: Buffer; expiresAt: number }[];
  /** Every secret is long (`secretsAreLong`): failures are counted per address only. */
  longSecrets: boolean;
  /**
   * Known by its Client ID Metadata Document (`clients/metadata-documents.ts`): its client_id is that
   * document's URL.
   */
  metadataDocument?: boolean;
}

/**
 * Clients known by a document at their `client_id` URL, not registered (`ClientMetadataDocuments`
 * of clients/metadata-documents.ts is the one source).
 */
export interface ClientDocuments {
  /** Whether a `client_id` is looked up here. */
  handles(clientId: string): boolean;
  /** The client while its document is cached and fresh, without fetching. */
  cached(clientId: string): Client | undefined;
  /** The client, fetched when needed; throws when its document is refused. */
  resolve(clientId: string, address: string): Promise<Client>;
}

/** The clients of the config, by `client_id`, secrets hashed once. Disabled clients are absent. */
export class ClientRegistry {
  private clients: Map<string, Client>;
  /**
   * Stored client ids removed within their tokens' lifetime → the removal's Unix seconds
   * (`ClientStore.listClientRemovals`).
   */
  private removals: ReadonlyMap<string, number> = new Map();
  private readonly configIds: ReadonlySet<string>;
  /** Grows whenever the set of clients changes; lets derived data (discovery, CORS) be cached. */
  version = 0;

  /**
   * @param configs the config file's clients; they win over stored clients with the same id.
   * @param documents Client ID Metadata Documents, for `client_id`s that are https URLs naming
   *   no registered client; they never count among `all()` and leave `version` alone.
   */
  constructor(
    private readonly configs: readonly ClientConfig[],
    private readonly documents?: ClientDocuments,
  ) {
    this.clients = ClientRegistry.index(configs);
    this.configIds = new Set(configs.map((c) => c.clientId));
  }

  private static index(configs: readonly StoredClientConfig[]): Map<string, Client> {
    return new Map(
      configs
        .filter((c) => c.enabled)
        .map((c) => [
          c.clientId,
          {
            ...c,
            isPublic: !c.requireClientSecret,
            secretDigests: c.clientSecrets.map(secretDigest),
            retiringSecrets: (c.retiringSecrets ?? []).map((r) => ({
              digest: secretDigest(r.secret),
              expiresAt: r.expiresAt,
            })),
            longSecrets: secretsAreLong(c.clientSecrets),
          },
        ]),
    );
  }

  /**
   * Replaces the stored clients (from `sigil clients add`), keeping the config file's, and, when
   * given, the removal records of stored clients (`ClientStore.listClientRemovals`: client id →
   * Unix seconds of its last removal) that `issuedAfterRemoval` checks.
   * @returns the ids of stored clients ignored because the config file defines them.
   */
  setStoredClients(stored: readonly StoredClientConfig[], removals?: ReadonlyMap<string, number>): string[] {
    if (removals) this.removals = removals;
    const shadowed = stored.filter((c) => this.configIds.has(c.clientId)).map((c) => c.clientId);
    const next = ClientRegistry.index([...this.configs, ...stored.filter((c) => !this.configIds.has(c.clientId))]);
    const changed =
      next.size !== this.clients.size ||
      [...next].some(([id, c]) => JSON.stringify(c) !== JSON.stringify(this.clients.get(id)));
    if (changed) {
      this.clients = next;
      this.version += 1;
    }
    return shadowed;
  }

  /**
   * Told of every registered client found by `get` or `resolve` (a request naming it): dynamic
   * registration records last use from it (`ClientRegistrations.touch`, cheap for all but a day's
   * first use). None by default.
   */
  onLookup: (clientId: string) => void = () => {};

  /**
   * Told of a client id that names no registered client (`resolve`, `find`), before they answer
   * that it is unknown: re-reads the stored clients if they changed since the last read (another
   * worker or node may have just added the client; the change poll would see it only up to a
   * second later). The lookup answers from what is registered once it settles. None by default.
   */
  onMiss: () => Promise<void> = async () => {};

  /**
   * `get`, for the checks of a token that names its client (userinfo and the other protected
   * resources, introspection): a client id registered nowhere yet is looked for again after
   * `onMiss`, so a client just added through a sibling worker or node is known at once.
   */
  async find(clientId: string): Promise<Client | undefined> {
    const client = this.get(clientId);
    if (client || this.documents?.handles(clientId)) return client;
    await this.onMiss();
    return this.get(clientId);
  }

  /**
   * The enabled client with that id, or undefined; a client of a metadata document only while
   * its document is cached and fresh (`resolve` fetches it).
   */
  get(clientId: string): Client | undefined {
    const client = this.clients.get(clientId);
    if (client) this.onLookup(clientId);
    return client ?? this.documents?.cached(clientId);
  }

  /**
   * The enabled client with that id; for an https URL naming no registered client, the client of
   * its metadata document, fetched when not cached (`ClientMetadataDocuments.resolve`).
   * @param address the caller's address, against whose quota a fetch counts
   * @returns the client, or undefined when there is none
   * @throws MetadataDocumentError when the document is refused or cannot be fetched; OAuthError
   *   429 when the address has used up its fetches.
   */
  async resolve(clientId: string, address: string): Promise<Client | undefined> {
    if (this.documents?.handles(clientId) && !this.clients.has(clientId))
      return this.documents.resolve(clientId, address);
    return this.find(clientId);
  }

  /**
   * Whether a token issued to `clientId` at `issuedAt` (Unix seconds: a JWT's or reference token's
   * `iat`, a refresh token row's creation) was not issued before the last removal of a stored client
   * of that id, if there was one within its tokens' lifetime (`client_removals`,
   * stores/client-removals.ts). A removed client's JWT access tokens have no stored row to revoke
   * (client_credentials), so this is what keeps them from coming back to life under a client later
   * created with the same id (RFC 7592 §2.3). Ids never removed from the store pass: a client moved
   * from the config file into the store, or stored rows restored from a backup, keep their tokens.
   * Nor does a removal refuse the tokens of a config-file client of the id (moving a client from
   * the store into the config file ends with `sigil clients remove`): those are honoured while the
   * id is in the file, as before removal records.
   *
   * The rule is `issuedAt >= removedAt`, both whole seconds: a token issued in an earlier second
   * than the removal is refused, one of the removal's own second is accepted. The same-second case
   * cannot be told apart; refusing it would refuse, for their whole lifetime, the tokens (refresh
   * tokens too) that a client re-created at once, as automation does, is issued in that second. The
   * gap left is a removed client's token issued in the very second of its removal, and only once the
   * id is re-created (until then no client has the id); its refresh tokens are revoked at the
   * removal anyway. `removedAt` comes from the clock of the node that removed, `iat` from the
   * issuing node's (NTP keeps the difference small). A non-numeric `issuedAt` is refused when the id
   * has a removal record. O(1): the records are read with the stored clients at each reload.
   */
  issuedAfterRemoval(clientId: string, issuedAt: number | undefined): boolean {
    // A config-file client's tokens are honoured while the id is in the file: a stored client of the
    // id removed after the file took it over (`sigil clients remove`) refuses none of them.
    if (this.configIds.has(clientId)) return true;
    const removedAt = this.removals.get(clientId);
    return removedAt === undefined || (typeof issuedAt === 'number' && issuedAt >= removedAt);
  }

  /**
   * Whether a token issued to `clientId` at `issuedAt` (Unix seconds, its `iat`) may still be
   * honoured: it was not issued before the id's last removal from the store (`issuedAfterRemoval`), and
   * an enabled client has that id, or no registered client has it and it is the URL of a Client ID
   * Metadata Document (such a client is never removed, only re-fetched). A removed client's tokens
   * end with it (RFC 7592 §2.3). A config-file client's tokens are honoured while the id is there.
   * A token names its client by id only, so a removed stored client whose id a document handles
   * would pass for the document's here once its removal record expired: while documents are
   * enabled no stored client may take such an id (`ClientAdmin`'s namespace check,
   * draft-ietf-oauth-client-id-metadata-document, "Supporting Both Pre-Registered and Unregistered
   * Clients").
   */
  stillIssuesTo(clientId: string, issuedAt: number | undefined): boolean {
    if (!this.issuedAfterRemoval(clientId, issuedAt)) return false;
    return this.clients.has(clientId) || this.documents?.handles(clientId) === true;
  }

  /** Every enabled client. */
  all(): Client[] {
    return [...this.clients.values()];
  }
}
