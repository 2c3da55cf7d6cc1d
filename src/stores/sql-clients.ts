/**
 * The SQL implementation of `ClientStore`: clients kept in `clients` as the config file's client
 * objects (JSON text). Every change raises the `clients` change counter, which each node polls to
 * re-read them; every deletion records the removal (`client-removals.ts`) in its transaction, and
 * every change its webhook events (`client.created`, ...) in its own.
 */
import type { Kysely } from 'kysely';
import { nowSeconds } from '../crypto/handles.js';
import type { WebhookEvent } from '../events/webhook-events.js';
import { deleteClientRow, listClientRemovals } from './client-removals.js';
import { raiseChangeCounter, readChangeCounter } from './sql-support.js';
import type { ClientStore } from './types.js';
import type { Database } from './tables.js';
import type { SqlWebhookOutbox } from './webhook-outbox.js';

/** `ClientStore` over the store's Kysely instance. */
export class SqlClientStore implements ClientStore {
  /** @param outbox where changes put their webhook events, in their transaction */
  constructor(
    private readonly db: Kysely<Database>,
    private readonly outbox?: SqlWebhookOutbox,
  ) {}

  async listClients(): Promise<Record<string, unknown>[]> {
    const rows = await this.db.selectFrom('clients').select('config').orderBy('client_id').execute();
    return rows.map((r) => JSON.parse(r.config) as Record<string, unknown>);
  }

  async listClientRemovals(now: number): Promise<Map<string, number>> {
    return listClientRemovals(this.db, now);
  }

  async saveClient(clientId: string, config: Record<string, unknown>, events?: readonly WebhookEvent[]): Promise<void> {
    const row = { client_id: clientId, config: JSON.stringify(config), created_at: nowSeconds() };
    await this.db.transaction().execute(async (trx) => {
      await trx
        .insertInto('clients')
        .values(row)
        .onConflict((oc) => oc.column('client_id').doUpdateSet({ config: row.config }))
        .execute();
      await this.outbox?.append(trx, events);
    });
    await raiseChangeCounter(this.db, 'clients');
  }

  async removeClient(clientId: string): Promise<boolean> {
    const now = nowSeconds();
    if (!(await this.db.transaction().execute((trx) => deleteClientRow(trx, clientId, now)))) return false;
    await raiseChangeCounter(this.db, 'clients');
    return true;
  }

  async clientsVersion(): Promise<number> {
    return readChangeCounter(this.db, 'clients');
  }

  async getClient(clientId: string): Promise<string | undefined> {
    const row = await this.db
      .selectFrom('clients')
      .select('config')
      .where('client_id', '=', clientId)
      .executeTakeFirst();
    return row?.config;
  }

  async replaceClientIf(
    clientId: string,
    expected: string,
    config: Record<string, unknown> | undefined,
    events?: readonly WebhookEvent[],
  ): Promise<boolean> {
    const now = nowSeconds();
    const done = await this.db.transaction().execute(async (trx) => {
      if (config === undefined) {
        if (!(await deleteClientRow(trx, clientId, now, expected))) return false;
      } else {
        const result = await trx
          .updateTable('clients')
          .set({ config: JSON.stringify(config) })
          .where('client_id', '=', clientId)
          .where('config', '=', expected)
          .executeTakeFirst();
        if (result.numUpdatedRows !== 1n) return false;
      }
      await this.outbox?.append(trx, events, now);
      return true;
    });
    if (!done) return false;
    await raiseChangeCounter(this.db, 'clients');
    return true;
  }
}
