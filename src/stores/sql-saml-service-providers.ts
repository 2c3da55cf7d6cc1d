/**
 * SAML service providers managed at run time (migration `0023_saml_service_providers`;
 * `admin/saml-service-providers.ts` is the one door to them). A row holds one SP's settings as the
 * config file's `samlServiceProviders` entries take them (JSON, its metadata read already), keyed
 * by the SHA-256 of its entity ID: an entity ID may be 1,024 characters, longer than an index key
 * may be in every dialect. Every write raises the `saml_service_providers` change counter in its
 * transaction, so that every node re-reads them within its change poll's second.
 */
import type { Kysely } from 'kysely';
import { nowSeconds, sha256 } from '../crypto/handles.js';
import { raiseChangeCounter, readChangeCounter } from './sql-support.js';
import type { Database } from './tables.js';

/** A stored SAML service provider. */
export interface StoredSamlServiceProvider {
  entityId: string;
  /** Its settings as a `samlServiceProviders` entry takes them (entityId included). */
  settings: Record<string, unknown>;
  /** Grows by one at every change (the ETag). */
  version: number;
  /** Unix seconds. */
  createdAt: number;
  updatedAt: number;
}

/** The row key of an entity ID: the base64url of its SHA-256. */
function keyOf(entityId: string): string {
  return sha256(entityId).toString('base64url');
}

/** The stored SAML service providers, over the SQL store's database. */
export class SqlSamlServiceProviderStore {
  constructor(private readonly db: Kysely<Database>) {}

  /** Every stored SP, by entity ID. */
  async list(): Promise<StoredSamlServiceProvider[]> {
    const rows = await this.db.selectFrom('saml_service_providers').selectAll().orderBy('entity_id').execute();
    return rows.map(toStored);
  }

  async get(entityId: string): Promise<StoredSamlServiceProvider | undefined> {
    const row = await this.db
      .selectFrom('saml_service_providers')
      .selectAll()
      .where('key', '=', keyOf(entityId))
      .executeTakeFirst();
    return row === undefined ? undefined : toStored(row);
  }

  /** Adds an SP (version 1). @returns false when one of that entity ID is stored. */
  async add(entityId: string, settings: Record<string, unknown>): Promise<boolean> {
    return this.db.transaction().execute(async (trx) => {
      await raiseChangeCounter(trx, 'saml_service_providers');
      const now = nowSeconds();
      const inserted = await trx
        .insertInto('saml_service_providers')
        .values({
          key: keyOf(entityId),
          entity_id: entityId,
          settings: JSON.stringify(settings),
          version: 1,
          created_at: now,
          updated_at: now,
        })
        .onConflict((oc) => oc.column('key').doNothing())
        .executeTakeFirst();
      return inserted.numInsertedOrUpdatedRows === 1n;
    });
  }

  /** Replaces an SP's settings while it is at `version`. @returns false when it is not (or gone). */
  async update(entityId: string, version: number, settings: Record<string, unknown>): Promise<boolean> {
    return this.db.transaction().execute(async (trx) => {
      await raiseChangeCounter(trx, 'saml_service_providers');
      const updated = await trx
        .updateTable('saml_service_providers')
        .set({ settings: JSON.stringify(settings), version: version + 1, updated_at: nowSeconds() })
        .where('key', '=', keyOf(entityId))
        .where('version', '=', version)
        .executeTakeFirst();
      return updated.numUpdatedRows === 1n;
    });
  }

  /** Removes an SP at `version`. @returns false when it is not at that version (or gone). */
  async remove(entityId: string, version: number): Promise<boolean> {
    return this.db.transaction().execute(async (trx) => {
      await raiseChangeCounter(trx, 'saml_service_providers');
      const removed = await trx
        .deleteFrom('saml_service_providers')
        .where('key', '=', keyOf(entityId))
        .where('version', '=', version)
        .executeTakeFirst();
      return removed.numDeletedRows === 1n;
    });
  }

  /** The `saml_service_providers` change counter. */
  version(): Promise<number> {
    return readChangeCounter(this.db, 'saml_service_providers');
  }
}

function toStored(row: {
  entity_id: string;
  settings: string;
  version: number;
  created_at: number;
  updated_at: number;
}): StoredSamlServiceProvider {
  return {
    entityId: row.entity_id,
    settings: JSON.parse(row.settings) as Record<string, unknown>,
    version: Number(row.version),
    createdAt: Number(row.created_at),
    updatedAt: Number(row.updated_at),
  };
}
