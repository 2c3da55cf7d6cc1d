/**
 * The SQL implementation of `ClientStore`: clients kept in `clients` as the config file's client
 * objects (JSON text). Every change raises the `clients` change counter, which each node polls to
 * re-read them; every deletion records the removal (`client-removals.ts`) in its transaction.
 */
import type { Kysely } from 'kysely';
import { nowSeconds } from '../crypto/handles.js';
import { deleteClientRow, listClientRemovals } from './client-removals.js';
import { raiseChangeCounter, readChangeCounter } from './sql-support.js';
import type { ClientStore } from './types.js';
import type { Database } from './tables.js';

/** `ClientStore` over the store's Kysely instance. */
export class SqlClientStore implements ClientStore {
  constructor(private readonly db: Kysely<Database>) {}

  async listClients(): Promise<Record<string, unknown>[]> {
    const rows = await this.db.selectFrom('clients').select('config').orderBy('client_id').execute();
    return rows.map((r) => JSON.parse(r.config) as Record<string, unknown>);
  }

  async listClientRemovals(now: number): Promise<Map<string, number>> {
    return listClientRemovals(this.db, now);
  }

  async saveClient(clientId: string, config: Record<string, unknown>): Promise<void> {
    const row = { client_id: clientId, config: JSON.stringify(config), created_at: nowSeconds() };
    await this.db
      .insertInto('clients')
      .values(row)
      .onConflict((oc) => oc.column('client_id').doUpdateSet({ config: row.config }))
      .execute();
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
  ): Promise<boolean> {
    if (config === undefined) {
      const now = nowSeconds();
      if (!(await this.db.transaction().execute((trx) => deleteClientRow(trx, clientId, now, expected)))) return false;
    } else {
      const result = await this.db
        .updateTable('clients')
        .set({ config: JSON.stringify(config) })
        .where('client_id', '=', clientId)
        .where('config', '=', expected)
        .executeTakeFirst();
      if (result.numUpdatedRows !== 1n) return false;
    }
    await raiseChangeCounter(this.db, 'clients');
    return true;
  }
}
