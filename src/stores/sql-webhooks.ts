/**
 * Webhooks managed at run time and the disabled ones (migration `0021_webhooks`;
 * `admin/webhooks.ts` is the one door to them). Every write raises the `webhooks` change counter
 * in its transaction, so that every node re-reads them within its change poll's second; the
 * outbox is `webhook-outbox.ts`.
 */
import type { Kysely } from 'kysely';
import { nowSeconds } from '../crypto/handles.js';
import { raiseChangeCounter, readChangeCounter } from './sql-support.js';
import type { Database } from './tables.js';

/** A stored webhook. */
export interface StoredWebhook {
  name: string;
  url: string;
  events: string[];
  /** The signing secrets as JSON, sealed under the data key when one is set (`sealJson`). */
  secrets: string;
  /** Grows by one at every change (the ETag). */
  version: number;
  /** Unix seconds. */
  createdAt: number;
  updatedAt: number;
}

/** Why a webhook is disabled, and since when (Unix seconds). */
export interface DisabledWebhook {
  disabledAt: number;
  reason: string;
}

/** The stored webhooks and the disabled ones, over the SQL store's database. */
export class SqlWebhookStore {
  constructor(private readonly db: Kysely<Database>) {}

  async list(): Promise<StoredWebhook[]> {
    const rows = await this.db.selectFrom('webhooks').selectAll().orderBy('name').execute();
    return rows.map(toWebhook);
  }

  async get(name: string): Promise<StoredWebhook | undefined> {
    const row = await this.db.selectFrom('webhooks').selectAll().where('name', '=', name).executeTakeFirst();
    return row === undefined ? undefined : toWebhook(row);
  }

  /** Adds a webhook (version 1). @returns false when one of that name is stored. */
  async add(webhook: Pick<StoredWebhook, 'name' | 'url' | 'events' | 'secrets'>): Promise<boolean> {
    return this.db.transaction().execute(async (trx) => {
      await raiseChangeCounter(trx, 'webhooks');
      const now = nowSeconds();
      const inserted = await trx
        .insertInto('webhooks')
        .values({
          name: webhook.name,
          url: webhook.url,
          events: JSON.stringify(webhook.events),
          secrets: webhook.secrets,
          version: 1,
          created_at: now,
          updated_at: now,
        })
        .onConflict((oc) => oc.column('name').doNothing())
        .executeTakeFirst();
      return inserted.numInsertedOrUpdatedRows === 1n;
    });
  }

  /** Replaces a webhook's settings while it is at `version`. @returns false when it is not (or gone). */
  async update(
    name: string,
    version: number,
    settings: Pick<StoredWebhook, 'url' | 'events' | 'secrets'>,
  ): Promise<boolean> {
    return this.db.transaction().execute(async (trx) => {
      await raiseChangeCounter(trx, 'webhooks');
      const updated = await trx
        .updateTable('webhooks')
        .set({
          url: settings.url,
          events: JSON.stringify(settings.events),
          secrets: settings.secrets,
          version: version + 1,
          updated_at: nowSeconds(),
        })
        .where('name', '=', name)
        .where('version', '=', version)
        .executeTakeFirst();
      return updated.numUpdatedRows === 1n;
    });
  }

  /**
   * Removes a webhook at `version` with its deliveries and its disabled mark.
   * @returns false when it is not at that version (or gone).
   */
  async remove(name: string, version: number): Promise<boolean> {
    return this.db.transaction().execute(async (trx) => {
      await raiseChangeCounter(trx, 'webhooks');
      const removed = await trx
        .deleteFrom('webhooks')
        .where('name', '=', name)
        .where('version', '=', version)
        .executeTakeFirst();
      if (removed.numDeletedRows !== 1n) return false;
      await trx.deleteFrom('webhook_deliveries').where('webhook', '=', name).execute();
      await trx.deleteFrom('webhook_disabled').where('name', '=', name).execute();
      return true;
    });
  }

  /** The disabled webhooks by name. */
  async disabled(): Promise<Map<string, DisabledWebhook>> {
    const rows = await this.db.selectFrom('webhook_disabled').selectAll().execute();
    return new Map(rows.map((r) => [r.name, { disabledAt: Number(r.disabled_at), reason: r.reason }]));
  }

  /**
   * Disables a webhook (`reason` says why) or enables it again.
   * @returns whether that changed anything (a webhook disabled already keeps its first reason).
   */
  async setEnabled(name: string, enabled: boolean, reason = ''): Promise<boolean> {
    return this.db.transaction().execute(async (trx) => {
      const changed = enabled
        ? (await trx.deleteFrom('webhook_disabled').where('name', '=', name).executeTakeFirst()).numDeletedRows === 1n
        : (
            await trx
              .insertInto('webhook_disabled')
              .values({ name, disabled_at: nowSeconds(), reason: reason.slice(0, 200) })
              .onConflict((oc) => oc.column('name').doNothing())
              .executeTakeFirst()
          ).numInsertedOrUpdatedRows === 1n;
      if (changed) await raiseChangeCounter(trx, 'webhooks');
      return changed;
    });
  }

  /** The `webhooks` change counter. */
  version(): Promise<number> {
    return readChangeCounter(this.db, 'webhooks');
  }
}

function toWebhook(row: {
  name: string;
  url: string;
  events: string;
  secrets: string;
  version: number;
  created_at: number;
  updated_at: number;
}): StoredWebhook {
  return {
    name: row.name,
    url: row.url,
    events: JSON.parse(row.events) as string[],
    secrets: row.secrets,
    version: Number(row.version),
    createdAt: Number(row.created_at),
    updatedAt: Number(row.updated_at),
  };
}
