/**
 * Identity resources, API scopes, API resources and upstream identity providers managed at run
 * time (`admin/resources.ts` is the one door to them), one row per item in
 * `managed_resources` (migration `0014_resources`), keyed by kind and name. Each item is its
 * settings as the config file's entry of that kind takes them, saved as JSON text; an API
 * resource's secrets only as `sha256:` digests, an upstream provider's `clientSecret`
 * as `sealedClientSecret` (a JWE under `SIGIL_DATA_KEY`) when a data key is set. Every change raises the
 * `admin_versions` row `resources`, which each node polls to re-read them (0012_admin).
 */
import type { Kysely } from 'kysely';
import { nowSeconds } from '../crypto/handles.js';
import { raiseChangeCounter, readChangeCounter } from './sql-support.js';
import type { Database } from './tables.js';

/** The kinds of managed items, as stored. */
export const MANAGED_KINDS = ['identity_resource', 'api_scope', 'api_resource', 'identity_provider'] as const;
/** One kind of managed item. */
export type ManagedKind = (typeof MANAGED_KINDS)[number];

/** One stored item: its kind, name and saved JSON text (the basis of its ETag). */
export interface ManagedItem {
  kind: ManagedKind;
  name: string;
  config: string;
}

/** The stored managed items. */
export interface ManagedResourceStore {
  /** Every stored item, by kind then name. */
  list(): Promise<ManagedItem[]>;
  /** The saved JSON text of one item, or undefined. */
  get(kind: ManagedKind, name: string): Promise<string | undefined>;
  /** Adds an item; false (nothing written) when one of that kind and name exists already. */
  add(kind: ManagedKind, name: string, config: Record<string, unknown>): Promise<boolean>;
  /**
   * Replaces an item only while its saved JSON text is still `expected` (one conditional UPDATE,
   * so two concurrent changes cannot both win); with `config` undefined, deletes it so.
   * @returns whether it was replaced (or deleted).
   */
  replaceIf(
    kind: ManagedKind,
    name: string,
    expected: string,
    config: Record<string, unknown> | undefined,
  ): Promise<boolean>;
  /** A counter every change raises (0 before the first): nodes poll it to re-read the items at once. */
  version(): Promise<number>;
}

/** `ManagedResourceStore` over the SQL store's database (SQLite or PostgreSQL). */
export class SqlManagedResources implements ManagedResourceStore {
  constructor(private readonly db: Kysely<Database>) {}

  async list(): Promise<ManagedItem[]> {
    const rows = await this.db
      .selectFrom('managed_resources')
      .select(['kind', 'name', 'config'])
      .orderBy('kind')
      .orderBy('name')
      .execute();
    return rows.map((r) => ({ kind: r.kind as ManagedKind, name: r.name, config: r.config }));
  }

  async get(kind: ManagedKind, name: string): Promise<string | undefined> {
    const row = await this.db
      .selectFrom('managed_resources')
      .select('config')
      .where('kind', '=', kind)
      .where('name', '=', name)
      .executeTakeFirst();
    return row?.config;
  }

  async add(kind: ManagedKind, name: string, config: Record<string, unknown>): Promise<boolean> {
    const result = await this.db
      .insertInto('managed_resources')
      .values({ kind, name, config: JSON.stringify(config), updated_at: nowSeconds() })
      .onConflict((oc) => oc.columns(['kind', 'name']).doNothing())
      .executeTakeFirst();
    if (result.numInsertedOrUpdatedRows !== 1n) return false;
    await raiseChangeCounter(this.db, 'resources');
    return true;
  }

  async replaceIf(
    kind: ManagedKind,
    name: string,
    expected: string,
    config: Record<string, unknown> | undefined,
  ): Promise<boolean> {
    const result =
      config === undefined
        ? await this.db
            .deleteFrom('managed_resources')
            .where('kind', '=', kind)
            .where('name', '=', name)
            .where('config', '=', expected)
            .executeTakeFirst()
        : await this.db
            .updateTable('managed_resources')
            .set({ config: JSON.stringify(config), updated_at: nowSeconds() })
            .where('kind', '=', kind)
            .where('name', '=', name)
            .where('config', '=', expected)
            .executeTakeFirst();
    if (('numDeletedRows' in result ? result.numDeletedRows : result.numUpdatedRows) !== 1n) return false;
    await raiseChangeCounter(this.db, 'resources');
    return true;
  }

  async version(): Promise<number> {
    return readChangeCounter(this.db, 'resources');
  }
}
