/**
 * Client administration: the one writer of the stored clients, for every door that creates,
 * changes or deletes one (`sigil clients`, /admin/v1/clients, the web console, dynamic
 * registration and its client configuration endpoint, RFC 7591/7592). A client is validated as if
 * it were in the config file, together with it; its secrets are stored as SHA-256 digests only.
 * Config-file clients are read-only and win over stored ones of the same id. A client id may never
 * be a user's subject (RFC 9068 §5). A deleted client's grants and tokens end with it (RFC 7592 §2.3).
 */
import type { Logger } from 'pino';
import {
  ConfigError,
  type ConfigOverrides,
  containsReference,
  type ResolvedConfig,
  resolveConfig,
} from '../config/loader.js';
import { clientSubjectCollision } from '../config/schema.js';
import { CONSOLE_CLIENT_ID } from '../config/console-client.js';
import { loadStoredClients, type RetiringSecret, splitStoredClient } from '../clients/stored-clients.js';
import { isClientIdUrl } from '../clients/metadata-documents.js';
import type { ClientRegistration } from '../stores/client-registrations.js';
import type { Store } from '../stores/types.js';
import { newHandle, nowSeconds } from '../crypto/handles.js';
import type { ClientRegistry } from '../clients/registry.js';
import { applyMergePatch, changedMembers } from '../protocol/merge-patch.js';
import { AdminError, etagOf, ifMatchHolds, isJsonObject, problemsOfItem, storedSecret } from './errors.js';
import { clientEvent } from './webhook-data.js';

/** The longest grace period of a secret rotation: 30 days, in seconds. */
export const MAX_SECRET_GRACE_SECONDS = 30 * 24 * 3600;
/** The grace period of a secret rotation that names none: 24 hours, in seconds. */
export const DEFAULT_SECRET_GRACE_SECONDS = 24 * 3600;

/** One client as the management API shows it: never a secret nor a secret's digest. */
export interface ClientView {
  /** The client's settings as in the config file's `clients`, without `clientSecrets`. */
  client: Record<string, unknown>;
  source: 'config' | 'store';
  /** The strong ETag of this version (RFC 9110 §8.8.3), quotes included. */
  etag: string;
  /** When each secret replaced by a rotation stops working, Unix seconds, soonest first. */
  retiringSecretsExpireAt: number[];
}

/** A stored client's saved JSON text and what it holds. */
interface SavedClient {
  text: string;
  config: Record<string, unknown>;
  retiringSecrets: RetiringSecret[];
}

/** A client as stored: its clear-text `clientSecrets` as `sha256:<base64>` digests (digests stay as given). */
function digested(client: Record<string, unknown>): Record<string, unknown> {
  const secrets = Array.isArray(client.clientSecrets) ? (client.clientSecrets as string[]) : [];
  return { ...client, clientSecrets: secrets.map((s) => (s.startsWith('sha256:') ? s : storedSecret(s))) };
}

function view(
  config: Record<string, unknown>,
  source: 'config' | 'store',
  text: string,
  retiring: RetiringSecret[] = [],
): ClientView {
  const { clientSecrets: _secrets, ...client } = config;
  return {
    client,
    source,
    etag: etagOf(text),
    retiringSecretsExpireAt: retiring.map((r) => r.expiresAt).sort((a, b) => a - b),
  };
}

/** A client as listed: where it is defined and the grant types it may use. */
export interface ClientListing {
  clientId: string;
  source: 'config' | 'store';
  allowedGrantTypes: string[];
}

/** A client saved by `ClientAdmin.create`. */
export interface AddedClient {
  clientId: string;
  /** A config-file client has that id: it wins, the stored one is saved but unused (never with `strict`). */
  shadowedByConfig: boolean;
  /** The secret Sigil generated, shown this once; absent when the client gave its own or needs none. */
  secret?: string;
}

/** What `ClientAdmin` works with besides the store. */
export interface ClientAdminOptions {
  /** The resolved config; its `clients` are the read-only config-file ones. */
  config: ResolvedConfig;
  /** The config as read (before resolving): a new client is validated together with it. */
  raw: unknown;
  /** The overrides (flags, environment) `config` was resolved with. */
  overrides?: ConfigOverrides;
  /** The registered extension grants' names, which a client may list (none from the CLI). */
  extensionGrants?: readonly string[];
  /** Where `reload` warns of stored clients it skips or that the config file shadows. */
  log: Logger;
  /**
   * The resources managed at run time (`ResourceAdmin`): a client is checked against them too, so
   * it may list a stored scope (a running node and the command line). Without it, against the
   * config file's only.
   */
  resources?: { withStored(raw: Record<string, unknown>): Record<string, unknown> };
  /**
   * The names of the organizations in force (config-file and stored), which a stored client's
   * `organization` may name (a running node). Without it, the config file's only.
   */
  organizations?: () => readonly string[];
}

/** Creates, changes, deletes, lists and reloads the stored clients. */
export class ClientAdmin {
  constructor(
    private readonly store: Pick<Store, 'clients' | 'users' | 'records' | 'logout' | 'registrations'>,
    private readonly options: ClientAdminOptions,
  ) {}

  /** Every client: the config file's first, then the stored ones in id order (those the config shadows too). */
  async list(): Promise<ClientListing[]> {
    const stored = await this.store.clients.listClients();
    return [
      ...this.options.config.clients.map((c) => ({
        clientId: c.clientId,
        source: 'config' as const,
        allowedGrantTypes: [...c.allowedGrantTypes],
      })),
      ...stored.map((c) => ({
        clientId: String(c.clientId),
        source: 'store' as const,
        allowedGrantTypes: Array.isArray(c.allowedGrantTypes) ? c.allowedGrantTypes.map(String) : [],
      })),
    ];
  }

  /**
   * Validates a dynamic client (`register`, `updateRegistered`) together with the config file and
   * returns the form it is stored in: clear-text `clientSecrets` as `sha256:<base64>` digests
   * (digests stay as given).
   * @throws AdminError `invalid` when it is not a JSON object, holds a `$env`/`$file` reference, or
   *   is not a valid client (the message is the config check's, `invalid configuration:` and one
   *   line per problem)
   */
  private prepare(client: unknown): Record<string, unknown> {
    if (!isJsonObject(client)) throw new AdminError('invalid', 'client must be a JSON object');
    // References are the operator's config file's: stored data may not read the server's environment or files.
    if (containsReference(client))
      throw new AdminError('invalid', 'a stored client cannot take values from $env or $file');
    const clientId = String(client.clientId ?? '');
    const base = this.base();
    const others = (base.clients ?? []).filter((c) => (c as { clientId?: unknown }).clientId !== clientId);
    try {
      // A config-file user's subject as client id is one of the problems found here.
      resolveConfig({ ...base, clients: [...others, client] }, this.options.overrides, {
        extensionGrants: this.options.extensionGrants ?? [],
        organizations: this.options.organizations?.() ?? [],
      });
    } catch (err) {
      if (err instanceof ConfigError) throw new AdminError('invalid', err.message);
      throw err;
    }
    return digested(client);
  }

  /**
   * One client, config-file or stored.
   * @throws AdminError `not_found`.
   */
  async get(clientId: string): Promise<ClientView> {
    const inConfig = this.configClient(clientId);
    if (inConfig) return view(inConfig, 'config', JSON.stringify(inConfig));
    const saved = await this.saved(clientId);
    return view(saved.config, 'store', saved.text, saved.retiringSecrets);
  }

  /**
   * Creates a stored client from its settings as in the config file's `clients`, validated
   * together with the config file (problems name the field path as in the file,
   * `clients[3].allowedScopes[0]: ...`, each also as a path within the client). Without
   * `clientSecrets` Sigil generates its secret (`newHandle`, 256 bits) unless it is public
   * (`requireClientSecret: false`) or authenticates with `private_key_jwt`; only digests are stored.
   * @param options `strict` (every door but the command line's `sigil clients add`): `clientSecrets`
   *   are refused (Sigil generates the secret), and so is an id a config-file or stored client has
   *   (`conflict`). Without it the client's own `clientSecrets` are taken (clear text or digests),
   *   a stored client of that id is replaced, and a config-file client of that id shadows the one
   *   saved (`shadowedByConfig`).
   * @returns the client's id and the secret Sigil generated, which is shown this once.
   * @throws AdminError `invalid` (with `problems`) when it is not a JSON object, holds a
   *   `$env`/`$file` reference, is not a valid client, its id has a control character or is the
   *   subject of a config-file or stored user (RFC 9068 §5; field `clientId`); `conflict` as said.
   */
  async create(client: unknown, options: { strict?: boolean } = {}): Promise<AddedClient> {
    if (!isJsonObject(client))
      throw new AdminError('invalid', 'client must be a JSON object', '', [
        { path: '', message: 'expected a JSON object' },
      ]);
    if (options.strict && 'clientSecrets' in client)
      throw this.invalidField('clientSecrets', 'Sigil generates the secret; it is shown once in the response');
    const clientId = typeof client.clientId === 'string' ? client.clientId : '';
    // PostgreSQL refuses a NUL in text; no client id needs a control character.
    if (/[\u0000-\u001f\u007f]/.test(clientId))
      throw this.invalidField('clientId', 'control characters are not allowed');
    this.checkIdNamespace(clientId);
    const taken =
      clientId !== '' && (this.configClient(clientId) || (await this.store.clients.getClient(clientId)) !== undefined);
    if (options.strict && taken)
      throw new AdminError('conflict', `client "${clientId}" exists already`, 'clientId', undefined, {
        reason: 'exists',
        item: { kind: 'client', name: clientId },
      });
    const given = 'clientSecrets' in client;
    const needsSecret =
      !given && client.requireClientSecret !== false && client.tokenEndpointAuthMethod !== 'private_key_jwt';
    const secret = needsSecret ? newHandle() : undefined;
    const checked = given ? client : { ...client, clientSecrets: secret === undefined ? [] : [storedSecret(secret)] };
    await this.validate(checked);
    const config = given ? digested(client) : checked;
    await this.store.clients.saveClient(clientId, config, clientEvent('client.created', clientId, config));
    const shadowedByConfig = this.configClient(clientId) !== undefined;
    return { clientId, shadowedByConfig, ...(secret === undefined ? {} : { secret }) };
  }

  /**
   * Changes a stored client by a JSON Merge Patch (RFC 7396) of its settings, if it is still the
   * version `ifMatch` names when given, and in any case the version read here (one conditional
   * UPDATE, so a concurrent change is never overwritten unseen). `clientId` and `clientSecrets` cannot be
   * patched (`rotateSecret` replaces secrets).
   * @returns the new version and the names of the settings that changed.
   * @throws AdminError `read_only` for a config-file client, `not_found`, `precondition_failed`
   *   when `ifMatch` is not its current ETag, `invalid` (with `problems`) when the result is not a valid client.
   */
  async update(
    clientId: string,
    patch: unknown,
    ifMatch: string | undefined,
  ): Promise<{ view: ClientView; changed: string[] }> {
    const saved = await this.writable(clientId, ifMatch);
    if (!isJsonObject(patch))
      throw new AdminError('invalid', 'a merge patch of a client must be a JSON object', '', [
        { path: '', message: 'expected a JSON object' },
      ]);
    for (const field of ['clientId', 'clientSecrets'])
      if (field in patch)
        throw this.invalidField(
          field,
          field === 'clientId' ? 'a client id cannot change' : 'secrets change by rotation only',
        );
    const next = applyMergePatch(saved.config, patch) as Record<string, unknown>;
    await this.validate(next);
    const changed = changedMembers(saved.config, next);
    return { view: await this.replace(clientId, saved, next, saved.retiringSecrets, changed), changed };
  }

  /**
   * Replaces a stored client's secret by a new one; the secrets it had stay valid for
   * `graceSeconds` more (0 ends them now), so its deployments can move over.
   * @param graceSeconds 0 to `MAX_SECRET_GRACE_SECONDS`
   * @param ifMatch when given, the ETag the client must still have
   * @returns the new version and the new secret, shown this once.
   * @throws AdminError `read_only`, `not_found`, `precondition_failed`, `invalid` (field
   *   `graceSeconds`; a public client, which has no secret).
   */
  async rotateSecret(
    clientId: string,
    graceSeconds: number,
    ifMatch?: string,
    now = nowSeconds(),
  ): Promise<{ view: ClientView; secret: string }> {
    if (!Number.isInteger(graceSeconds) || graceSeconds < 0 || graceSeconds > MAX_SECRET_GRACE_SECONDS)
      throw this.invalidField(
        'graceSeconds',
        `must be a whole number of seconds from 0 to ${MAX_SECRET_GRACE_SECONDS}`,
      );
    const saved = await this.writable(clientId, ifMatch);
    if (saved.config.requireClientSecret === false)
      throw this.invalidField('requireClientSecret', 'a public client has no secret');
    const secret = newHandle();
    const current = Array.isArray(saved.config.clientSecrets) ? (saved.config.clientSecrets as string[]) : [];
    const retiring = [
      ...saved.retiringSecrets.filter((r) => r.expiresAt > now),
      ...(graceSeconds > 0
        ? current.map((s) => ({ secret: s.startsWith('sha256:') ? s : storedSecret(s), expiresAt: now + graceSeconds }))
        : []),
    ];
    return {
      view: await this.replace(clientId, saved, { ...saved.config, clientSecrets: [storedSecret(secret)] }, retiring, [
        'clientSecrets',
      ]),
      secret,
    };
  }

  /**
   * Deletes a stored client, if it is still the version `ifMatch` names when given (one
   * conditional DELETE), and then everything issued to it (`revokeIssuedTo`).
   * @param options `strict` (/admin/v1, the console): an id the config file defines is refused even
   *   when a stored copy has it, since the deletion would revoke the tokens of the config file's
   *   client of that id. Without it (`sigil clients remove`) the stored copy is deleted, the one left
   *   unused once the client moved into the config file.
   * @throws AdminError `read_only` for an id only the config file defines (or, strict, defines at
   *   all), `not_found` for no stored client, `precondition_failed` for another version.
   */
  async delete(clientId: string, options: { ifMatch?: string; strict?: boolean } = {}): Promise<void> {
    if (options.strict && this.configClient(clientId)) throw this.readOnly(clientId);
    const text = await this.store.clients.getClient(clientId);
    if (text === undefined) {
      if (this.configClient(clientId)) throw this.readOnly(clientId);
      const item = { kind: 'client' as const, name: clientId };
      throw new AdminError('not_found', `no stored client "${clientId}"`, undefined, undefined, {
        reason: 'not_found',
        item,
      });
    }
    if (
      !ifMatchHolds(options.ifMatch, etagOf(text)) ||
      !(await this.store.clients.replaceClientIf(clientId, text, undefined, clientEvent('client.deleted', clientId)))
    ) {
      const item = { kind: 'client' as const, name: clientId };
      const message = `client "${clientId}" is not at the version If-Match names`;
      throw new AdminError('precondition_failed', message, undefined, undefined, { reason: 'changed', item });
    }
    await this.revokeIssuedTo(clientId);
  }

  /**
   * Stores a dynamically registered client (RFC 7591 §3.1), validated as `prepare` does, with its
   * registration record, in one transaction that also counts the registration against its initial
   * access token (`RegistrationStore.register`).
   * @param initialToken the `hashHandle` of the initial access token, if one is counted
   * @returns false when that token is used up or expired (nothing is stored).
   * @throws AdminError `invalid` as `prepare`.
   */
  async register(
    client: Record<string, unknown>,
    registration: ClientRegistration,
    initialToken: string | undefined,
    now: number,
  ): Promise<boolean> {
    const prepared = this.prepare(client);
    const events = clientEvent('client.created', registration.clientId, prepared);
    return this.store.registrations.register(prepared, registration, initialToken, now, events);
  }

  /**
   * Replaces a dynamic client's settings and metadata (RFC 7592 §2.2), validated as `prepare`
   * does, while its registration access token is still `oldTokenHash`, which `newTokenHash` replaces.
   * @returns false when the token moved on meanwhile (nothing is stored).
   * @throws AdminError `invalid` as `prepare`.
   */
  async updateRegistered(
    clientId: string,
    oldTokenHash: string,
    client: Record<string, unknown>,
    metadata: Record<string, unknown>,
    newTokenHash: string,
    now: number,
  ): Promise<boolean> {
    const prepared = this.prepare(client);
    const events = clientEvent('client.updated', clientId, prepared);
    return this.store.registrations.update(clientId, oldTokenHash, prepared, metadata, newTokenHash, now, events);
  }

  /**
   * Deletes a dynamic client with its registration (RFC 7592 §2.3), then everything issued to it
   * (`revokeIssuedTo`). @returns false when there was no such dynamic client.
   */
  async deleteRegistered(clientId: string): Promise<boolean> {
    if (!(await this.store.registrations.remove(clientId, clientEvent('client.deleted', clientId)))) return false;
    await this.revokeIssuedTo(clientId);
    return true;
  }

  /**
   * Deletes up to `limit` dynamic clients unused since `before` (Unix seconds), each then with
   * everything issued to it (`revokeIssuedTo`). @returns their ids.
   */
  async deleteUnused(before: number, now: number, limit: number): Promise<string[]> {
    const removed = await this.store.registrations.removeUnused(before, now, limit, (id) =>
      clientEvent('client.deleted', id),
    );
    for (const id of removed) await this.revokeIssuedTo(id, now);
    return removed;
  }

  /**
   * Ends everything issued to a client that was just removed, whichever door removed it (the
   * management API, `sigil clients remove`, the client configuration endpoint, the removal of
   * unused dynamic clients): RFC 7592 §2.3 asks that a deleted client's grants and tokens be
   * invalidated at once. Its refresh tokens, reference and JWT access tokens (introspection says
   * inactive), unused codes, pushed requests and its users' consents are revoked
   * (`GrantFamilies.revokeAllOfClient`), so that none comes back to life under a client later
   * created with the same id; its pending sign-ins end with them (a consent given inside one must
   * not carry over to such a client); its part in users' sessions and its queued back-channel
   * logout deliveries are forgotten (`LogoutStore.forgetClient`), so that neither such a client nor
   * the removed one's logout URI is sent logout tokens for them. Self-contained JWT access
   * tokens, which have no row, end by `ClientRegistry.stillIssuesTo` (the removal record that the
   * store wrote with the deletion, `ClientStore.listClientRemovals`).
   * @returns how many grant rows were revoked.
   */
  private async revokeIssuedTo(clientId: string, now = nowSeconds()): Promise<number> {
    const revoked = await this.store.records.families.revokeAllOfClient(clientId, now);
    await this.store.logout.forgetClient(clientId);
    return revoked;
  }

  /** The config as read, with the stored resources when known: what a client is checked against. */
  private base(): { clients?: unknown[] } {
    const raw = this.options.raw as Record<string, unknown>;
    return this.options.resources?.withStored(raw) ?? raw;
  }

  /**
   * The config file's client as written, or the web console's built-in one (config `admin.console`), which
   * only the resolved config holds.
   */
  private configClient(clientId: string): Record<string, unknown> | undefined {
    const raw = (this.options.raw as { clients?: unknown[] }).clients ?? [];
    const found = raw.find((c) => isJsonObject(c) && c.clientId === clientId);
    if (found !== undefined) return found as Record<string, unknown>;
    return clientId === CONSOLE_CLIENT_ID
      ? (this.options.config.clients.find((c) => c.clientId === clientId) as Record<string, unknown> | undefined)
      : undefined;
  }

  private async saved(clientId: string): Promise<SavedClient> {
    const text = await this.store.clients.getClient(clientId);
    if (text === undefined)
      throw new AdminError('not_found', `no client "${clientId}"`, undefined, undefined, {
        reason: 'not_found',
        item: { kind: 'client', name: clientId },
      });
    return { text, ...splitStoredClient(JSON.parse(text) as Record<string, unknown>) };
  }

  /** The stored client to change: not a config-file one, existing, at version `ifMatch` when given. */
  private async writable(clientId: string, ifMatch: string | undefined): Promise<SavedClient> {
    if (this.configClient(clientId)) throw this.readOnly(clientId);
    const saved = await this.saved(clientId);
    if (!ifMatchHolds(ifMatch, etagOf(saved.text)))
      throw new AdminError(
        'precondition_failed',
        `client "${clientId}" is not at the version If-Match names`,
        undefined,
        undefined,
        { reason: 'changed', item: { kind: 'client', name: clientId } },
      );
    return saved;
  }

  /** Writes `config` over `saved` with its `client.updated` event naming the settings `changed`. */
  private async replace(
    clientId: string,
    saved: SavedClient,
    config: Record<string, unknown>,
    retiring: RetiringSecret[],
    changed: readonly string[],
  ): Promise<ClientView> {
    const next = retiring.length > 0 ? { ...config, retiringSecrets: retiring } : config;
    const events = clientEvent('client.updated', clientId, config, changed);
    if (!(await this.store.clients.replaceClientIf(clientId, saved.text, next, events)))
      throw new AdminError('precondition_failed', `client "${clientId}" changed meanwhile`, undefined, undefined, {
        reason: 'changed',
        item: { kind: 'client', name: clientId },
      });
    return view(config, 'store', JSON.stringify(next), retiring);
  }

  /**
   * Refuses a stored client whose id is a Client Identifier URL (starts with `https://`) while
   * Client ID Metadata Documents are enabled (config `clientIdMetadataDocuments.enabled`). The
   * draft (draft-ietf-oauth-client-id-metadata-document, "Supporting Both Pre-Registered and
   * Unregistered Clients") asks a server that has both kinds to keep the ids it gives other
   * clients out of `https://` and to have a reliable way of its own to tell a document's client
   * from one registered otherwise. Sigil's way is this split of the namespace: while documents are
   * enabled every `https://` id is a document's, so the tokens of a deleted stored client cannot
   * pass for the document's at introspection or token exchange (`ClientRegistry.stillIssuesTo`,
   * which cannot tell a JWT's issuing client apart once the stored one is gone). Pre-registering a
   * Client Identifier URL (the draft's "Pre-Registering Client Identifier URLs", a MAY) remains
   * possible with documents disabled.
   * @throws AdminError `invalid`, field `clientId`.
   */
  private checkIdNamespace(clientId: string): void {
    if (this.options.config.clientIdMetadataDocuments.enabled && isClientIdUrl(clientId))
      throw this.invalidField(
        'clientId',
        'an https:// client id names a Client ID Metadata Document while clientIdMetadataDocuments.enabled is true; choose another id, or disable metadata documents to pre-register this URL',
      );
  }

  /** The refusal of a change to a client the config file defines. */
  private readOnly(clientId: string): AdminError {
    const item = { kind: 'client' as const, name: clientId };
    const message = `client "${clientId}" is managed by the config file; change it there`;
    return new AdminError('read_only', message, undefined, undefined, { reason: 'read_only', item });
  }

  private invalidField(field: string, message: string): AdminError {
    return new AdminError('invalid', `${field}: ${message}`, field, [{ path: field, message }]);
  }

  /**
   * Checks a client as the config file's would be, together with the config (scope names and
   * the like), and that its id is no user's subject (RFC 9068 §5).
   * @throws AdminError `invalid` with each problem's path within the client.
   */
  private async validate(client: Record<string, unknown>): Promise<void> {
    if (containsReference(client))
      throw new AdminError('invalid', 'a stored client cannot take values from $env or $file');
    const base = this.base();
    const others = (base.clients ?? []).filter((c) => (c as { clientId?: unknown }).clientId !== client.clientId);
    try {
      resolveConfig({ ...base, clients: [...others, client] }, this.options.overrides, {
        extensionGrants: this.options.extensionGrants ?? [],
        organizations: this.options.organizations?.() ?? [],
      });
    } catch (err) {
      if (!(err instanceof ConfigError)) throw err;
      const problems = problemsOfItem(err.problems, `clients[${others.length}]`);
      throw new AdminError('invalid', err.message, problems[0]?.path, problems);
    }
    const clientId = String(client.clientId);
    const user = await this.store.users.findUserBySubject(clientId);
    if (user)
      throw new AdminError('invalid', clientSubjectCollision(clientId, `stored user "${user.username}"`), 'clientId', [
        { path: 'clientId', message: 'is the subject of a user' },
      ]);
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
    const removals = await this.store.clients.listClientRemovals(nowSeconds());
    const shadowed = registry.setStoredClients(
      await loadStoredClients(this.store.clients, log, isUserSubject),
      removals,
    );
    for (const id of shadowed)
      log.warn({ clientId: id }, 'a stored client has the id of a config-file client: the config file wins');
  }
}
