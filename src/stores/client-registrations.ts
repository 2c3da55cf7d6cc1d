/**
 * What dynamic client registration keeps beside the stored client (RFC 7591, RFC 7592), in the
 * tables of migration `0013_dynamic_clients`:
 * - `client_registrations`: one row per dynamically registered client: the SHA-256 of its
 *   registration access token (RFC 7592 §3; never the token), the metadata as registered (returned
 *   by the client configuration endpoint), when it was issued and, to the day, last used;
 * - `initial_access_tokens`: the SHA-256 of each initial access token (RFC 7591 §3) with its
 *   expiry and how many registrations it may still make: minted by `sigil clients initial-token`,
 *   or recorded at its first use for an access token with the `sigil:register` scope.
 * The client's settings themselves live in `clients` like every stored client; a registration
 * writes both in one transaction. Part of the one SQL store; reached as `store.registrations`.
 */
import { type Kysely, sql } from 'kysely';
import { nowSeconds } from '../crypto/handles.js';
import type { WebhookEvent } from '../events/webhook-events.js';
import { deleteClientRow } from './client-removals.js';
import type { ClientRegistrationsTable, Database } from './tables.js';
import type { SqlWebhookOutbox } from './webhook-outbox.js';

/** A dynamically registered client's registration record. */
export interface ClientRegistration {
  clientId: string;
  /** `hashHandle` of the current registration access token. */
  tokenHash: string;
  /** The client metadata as registered (RFC 7591 §2 names), without secrets or tokens. */
  metadata: Record<string, unknown>;
  /** Unix seconds (`client_id_issued_at`). */
  issuedAt: number;
  /** Unix seconds of the last recorded use or management call (recorded at most once a day). */
  lastUsedAt: number;
}

/** Where an initial access token came from. */
export type InitialTokenKind = 'minted' | 'access_token';

/** One initial access token, as stored. */
export interface InitialAccessToken {
  tokenHash: string;
  kind: InitialTokenKind;
  /** How many registrations it may make in all. */
  maxRegistrations: number;
  /** How many it has made. */
  registrations: number;
  /** Unix seconds. */
  expiresAt: number;
}

/** The registration records and initial access tokens. */
export interface RegistrationStore {
  /**
   * Saves a new client (its settings into `clients`) with its registration record, in one
   * transaction, after taking one registration of `initialToken` when given (a conditional
   * UPDATE: unexpired at `now`, below its cap).
   * @returns false, storing nothing, when the initial token is used up or expired.
   */
  register(
    config: Record<string, unknown>,
    registration: ClientRegistration,
    initialToken: string | undefined,
    now: number,
    events?: readonly WebhookEvent[],
  ): Promise<boolean>;
  /** The registration record of a client, or undefined. */
  find(clientId: string): Promise<ClientRegistration | undefined>;
  /**
   * Replaces a client's settings and metadata and its registration access token, if the token is
   * still `oldTokenHash` (one conditional UPDATE: of two concurrent updates with one token, one wins).
   * @returns false, changing nothing, when the token was replaced or the client removed meanwhile.
   */
  update(
    clientId: string,
    oldTokenHash: string,
    config: Record<string, unknown>,
    metadata: Record<string, unknown>,
    newTokenHash: string,
    now: number,
    events?: readonly WebhookEvent[],
  ): Promise<boolean>;
  /** Removes a client and its registration record; false when there was none. */
  remove(clientId: string, events?: readonly WebhookEvent[]): Promise<boolean>;
  /** Records a use at `now` when the last recorded one is older than `notBefore` (Unix seconds). */
  touch(clientId: string, now: number, notBefore: number): Promise<void>;
  /** The ids of every dynamically registered client. */
  ids(): Promise<string[]>;
  /**
   * Removes up to `limit` dynamic clients last used before `before` (Unix seconds), and initial
   * access tokens expired before `now`; each removal with the webhook events `eventsOf` gives.
   * @returns the removed clients' ids
   */
  removeUnused(
    before: number,
    now: number,
    limit: number,
    eventsOf?: (clientId: string) => WebhookEvent[],
  ): Promise<string[]>;
  /** Stores an initial access token (minted ones), or does nothing when its hash is known already. */
  addInitialToken(token: InitialAccessToken): Promise<void>;
  /** An initial access token by its hash, or undefined. */
  findInitialToken(tokenHash: string): Promise<InitialAccessToken | undefined>;
}

/**
 * `RegistrationStore` over the store's Kysely instance (SQLite and PostgreSQL alike); each write
 * puts its webhook events (`client.created`, ...) in the outbox in its transaction.
 */
export class SqlRegistrationStore implements RegistrationStore {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly outbox?: SqlWebhookOutbox,
  ) {}

  async register(
    config: Record<string, unknown>,
    r: ClientRegistration,
    initialToken: string | undefined,
    now: number,
    events?: readonly WebhookEvent[],
  ): Promise<boolean> {
    return this.db.transaction().execute(async (trx) => {
      if (initialToken !== undefined) {
        const taken = await trx
          .updateTable('initial_access_tokens')
          .set({ registrations: sql<number>`registrations + 1` })
          .where('token_hash', '=', initialToken)
          .where('expires_at', '>', now)
          .where(sql<boolean>`registrations < max_registrations`)
          .executeTakeFirst();
        if (taken.numUpdatedRows !== 1n) return false;
      }
      await trx
        .insertInto('clients')
        .values({ client_id: r.clientId, config: JSON.stringify(config), created_at: r.issuedAt })
        .execute();
      await trx.insertInto('client_registrations').values(toRow(r)).execute();
      await this.outbox?.append(trx, events, now);
      return true;
    });
  }

  async find(clientId: string): Promise<ClientRegistration | undefined> {
    const row = await this.db
      .selectFrom('client_registrations')
      .selectAll()
      .where('client_id', '=', clientId)
      .executeTakeFirst();
    return row ? fromRow(row) : undefined;
  }

  async update(
    clientId: string,
    oldTokenHash: string,
    config: Record<string, unknown>,
    metadata: Record<string, unknown>,
    newTokenHash: string,
    now: number,
    events?: readonly WebhookEvent[],
  ): Promise<boolean> {
    return this.db.transaction().execute(async (trx) => {
      const changed = await trx
        .updateTable('client_registrations')
        .set({ token_hash: newTokenHash, metadata: JSON.stringify(metadata), last_used_at: now })
        .where('client_id', '=', clientId)
        .where('token_hash', '=', oldTokenHash)
        .executeTakeFirst();
      if (changed.numUpdatedRows !== 1n) return false;
      await trx
        .updateTable('clients')
        .set({ config: JSON.stringify(config) })
        .where('client_id', '=', clientId)
        .execute();
      await this.outbox?.append(trx, events, now);
      return true;
    });
  }

  async remove(clientId: string, events?: readonly WebhookEvent[]): Promise<boolean> {
    return this.db.transaction().execute(async (trx) => {
      const gone = await trx.deleteFrom('client_registrations').where('client_id', '=', clientId).executeTakeFirst();
      await deleteClientRow(trx, clientId, nowSeconds());
      if (gone.numDeletedRows !== 1n) return false;
      await this.outbox?.append(trx, events);
      return true;
    });
  }

  async touch(clientId: string, now: number, notBefore: number): Promise<void> {
    await this.db
      .updateTable('client_registrations')
      .set({ last_used_at: now })
      .where('client_id', '=', clientId)
      .where('last_used_at', '<', notBefore)
      .execute();
  }

  async ids(): Promise<string[]> {
    const rows = await this.db.selectFrom('client_registrations').select('client_id').execute();
    return rows.map((r) => r.client_id);
  }

  async removeUnused(
    before: number,
    now: number,
    limit: number,
    eventsOf?: (clientId: string) => WebhookEvent[],
  ): Promise<string[]> {
    await this.db.deleteFrom('initial_access_tokens').where('expires_at', '<', now).execute();
    const rows = await this.db
      .selectFrom('client_registrations')
      .select('client_id')
      .where('last_used_at', '<', before)
      .limit(limit)
      .execute();
    const removed: string[] = [];
    for (const { client_id } of rows) {
      // Conditional: a client used since the select (another node recorded it) stays.
      const gone = await this.db.transaction().execute(async (trx) => {
        const r = await trx
          .deleteFrom('client_registrations')
          .where('client_id', '=', client_id)
          .where('last_used_at', '<', before)
          .executeTakeFirst();
        if (r.numDeletedRows !== 1n) return false;
        await deleteClientRow(trx, client_id, now);
        await this.outbox?.append(trx, eventsOf?.(client_id), now);
        return true;
      });
      if (gone) removed.push(client_id);
    }
    return removed;
  }

  async addInitialToken(t: InitialAccessToken): Promise<void> {
    await this.db
      .insertInto('initial_access_tokens')
      .values({
        token_hash: t.tokenHash,
        kind: t.kind,
        max_registrations: t.maxRegistrations,
        registrations: t.registrations,
        expires_at: t.expiresAt,
      })
      .onConflict((oc) => oc.column('token_hash').doNothing())
      .execute();
  }

  async findInitialToken(tokenHash: string): Promise<InitialAccessToken | undefined> {
    const row = await this.db
      .selectFrom('initial_access_tokens')
      .selectAll()
      .where('token_hash', '=', tokenHash)
      .executeTakeFirst();
    if (!row) return undefined;
    return {
      tokenHash: row.token_hash,
      kind: row.kind === 'minted' ? 'minted' : 'access_token',
      maxRegistrations: Number(row.max_registrations),
      registrations: Number(row.registrations),
      expiresAt: Number(row.expires_at),
    };
  }
}

function toRow(r: ClientRegistration): ClientRegistrationsTable {
  return {
    client_id: r.clientId,
    token_hash: r.tokenHash,
    metadata: JSON.stringify(r.metadata),
    issued_at: r.issuedAt,
    last_used_at: r.lastUsedAt,
  };
}

function fromRow(row: ClientRegistrationsTable): ClientRegistration {
  return {
    clientId: row.client_id,
    tokenHash: row.token_hash,
    metadata: JSON.parse(row.metadata) as Record<string, unknown>,
    issuedAt: Number(row.issued_at),
    lastUsedAt: Number(row.last_used_at),
  };
}
