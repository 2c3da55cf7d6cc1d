/**
 * Client administration (DESIGN §1, §2 `admin/`): the one door to the stored clients for the
 * command line (`sigil clients`) and, later, the management API and dynamic registration. A new
 * client is validated as if it were in the config file, together with it; its secrets are stored
 * as SHA-256 digests only (DESIGN §3). Config-file clients are read-only and win over stored ones
 * of the same id. A client id may never be a user's subject (RFC 9068 §5).
 */
import type { Logger } from 'pino';
import { ConfigError, type ConfigOverrides, containsReference, type ResolvedConfig, resolveConfig } from '../config/loader.js';
import { clientSubjectCollision } from '../config/schema.js';
import { loadStoredClients } from '../clients/stored-clients.js';
import type { Store } from '../stores/types.js';
import { secretDigest } from '../crypto/handles.js';
import type { ClientRegistry } from '../clients/registry.js';
import { AdminError, isJsonObject } from './errors.js';

/** A client as listed: where it is defined and the grant types it may use. */
export interface ClientListing {
  clientId: string;
  source: 'config' | 'store';
  allowedGrantTypes: string[];
}

/** A client saved by `ClientAdmin.add`. */
export interface AddedClient {
  clientId: string;
  /** A config-file client has that id: it wins, the stored one is saved but unused. */
  shadowedByConfig: boolean;
}

/** What `ClientAdmin` works with besides the store. */
export interface ClientAdminOptions {
  /** The resolved config; its `clients` are the read-only config-file ones. */
  config: ResolvedConfig;
  /** The config as read (before resolving): a new client is validated together with it. */
  raw: unknown;
  /** The overrides `config` was resolved with (DESIGN §5). */
  overrides?: ConfigOverrides;
  /** The registered extension grants' names, which a client may list (none from the CLI). */
  extensionGrants?: readonly string[];
  /** Where `reload` warns of stored clients it skips or that the config file shadows. */
  log: Logger;
}

/** Adds, removes, lists and reloads the stored clients. */
export class ClientAdmin {
  constructor(
    private readonly store: Pick<Store, 'clients' | 'users'>,
    private readonly options: ClientAdminOptions,
  ) {}

  /** Every client: the config file's first, then the stored ones in id order (those the config shadows too). */
  async list(): Promise<ClientListing[]> {
    const stored = await this.store.clients.listClients();
    return [
      ...this.options.config.clients.map((c) => ({ clientId: c.clientId, source: 'config' as const, allowedGrantTypes: [...c.allowedGrantTypes] })),
      ...stored.map((c) => ({
        clientId: String(c.clientId),
        source: 'store' as const,
        allowedGrantTypes: Array.isArray(c.allowedGrantTypes) ? c.allowedGrantTypes.map(String) : [],
      })),
    ];
  }

  /**
   * Validates `client` together with the config file (so scope names and the like are checked
   * too; problems name the field path as in the file, `clients[3].allowedScopes[0]: ...`) and
   * saves it, replacing a stored client of the same id. Its `clientSecrets` are stored as
   * `sha256:<base64>` digests.
   * @param client the client's settings as in the config file's `clients` (a JSON object)
   * @throws AdminError `invalid` when it is not a JSON object, holds a `$env`/`$file` reference, or is not a valid client (the message
   *   is the config check's, `invalid configuration:` and one line per problem), or when its id is
   *   the subject of a config-file or stored user (RFC 9068 §5; field `clientId`).
   */
  async add(client: unknown): Promise<AddedClient> {
    const stored = this.prepare(client);
    const clientId = String(stored.clientId);
    const user = await this.store.users.findUserBySubject(clientId);
    if (user) throw new AdminError('invalid', clientSubjectCollision(clientId, `stored user "${user.username}"`), 'clientId');
    await this.store.clients.saveClient(clientId, stored);
    return { clientId, shadowedByConfig: this.options.config.clients.some((c) => c.clientId === clientId) };
  }

  /**
   * Validates `client` as `add` does (together with the config file) and returns the form it is
   * stored in: clear-text `clientSecrets` as `sha256:<base64>` digests (digests stay as given).
   * Dynamic registration (`ClientRegistrations`) stores through it too.
   * @throws AdminError `invalid` as `add` (not the user-subject check, which needs the store)
   */
  prepare(client: unknown): Record<string, unknown> {
    if (!isJsonObject(client)) throw new AdminError('invalid', 'client must be a JSON object');
    // References are the operator's config file's: stored data may not read the server's environment or files.
    if (containsReference(client)) throw new AdminError('invalid', 'a stored client cannot take values from $env or $file');
    const clientId = String(client.clientId ?? '');
    const base = this.options.raw as { clients?: unknown[] };
    const others = (base.clients ?? []).filter((c) => (c as { clientId?: unknown }).clientId !== clientId);
    try {
      // A config-file user's subject as client id is one of the problems found here.
      resolveConfig({ ...base, clients: [...others, client] }, this.options.overrides, { extensionGrants: this.options.extensionGrants ?? [] });
    } catch (err) {
      if (err instanceof ConfigError) throw new AdminError('invalid', err.message);
      throw err;
    }
    const secrets = Array.isArray(client.clientSecrets) ? (client.clientSecrets as string[]) : [];
    return { ...client, clientSecrets: secrets.map((s) => (s.startsWith('sha256:') ? s : `sha256:${secretDigest(s).toString('base64')}`)) };
  }

  /**
   * Removes a stored client.
   * @throws AdminError `read_only` when only the config file defines it; `not_found` when no one does.
   */
  async remove(clientId: string): Promise<void> {
    if (await this.store.clients.removeClient(clientId)) return;
    if (this.options.config.clients.some((c) => c.clientId === clientId))
      throw new AdminError('read_only', `client "${clientId}" is defined in the config file, which is read-only`);
    throw new AdminError('not_found', `no stored client "${clientId}"`);
  }

  /**
   * Re-reads the stored clients into `registry`, which keeps its config-file ones. Each node does
   * so every `signingKeys.reloadSeconds` (its housekeeping), so a client added or removed here
   * reaches every node without a restart. A stored client that no longer validates, or whose id
   * `isUserSubject` (RFC 9068 §5), is skipped; one that a config-file client shadows is logged.
   * @param isUserSubject whether an id is the subject of a config-file or stored user; default: none is.
   */
  async reload(registry: ClientRegistry, isUserSubject?: (id: string) => Promise<boolean>): Promise<void> {
    const { log } = this.options;
    const shadowed = registry.setStoredClients(await loadStoredClients(this.store.clients, log, isUserSubject));
    for (const id of shadowed) log.warn({ clientId: id }, 'a stored client has the id of a config-file client: the config file wins');
  }
}
