/**
 * The SQL implementation of `Maintenance`: the leases that let one node at a time run a periodic
 * job (`housekeeping.ts`), the clean-up of expired rows, and the count of pending authorization
 * requests.
 */
import type { Kysely } from 'kysely';
import { deleteExpiredClientRemovals } from './client-removals.js';
import type { Maintenance } from './types.js';
import type { Database } from './tables.js';

/** `Maintenance` over the store's Kysely instance. */
export class SqlMaintenance implements Maintenance {
  constructor(private readonly db: Kysely<Database>) {}

  async acquireLease(name: string, holder: string, now: number, until: number): Promise<boolean> {
    await this.db
      .insertInto('leases')
      .values({ name, holder, until: 0 })
      .onConflict((oc) => oc.column('name').doNothing())
      .execute();
    const result = await this.db
      .updateTable('leases')
      .set({ holder, until })
      .where('name', '=', name)
      .where((eb) => eb.or([eb('holder', '=', holder), eb('until', '<', now)]))
      .executeTakeFirst();
    return result.numUpdatedRows === 1n;
  }

  async liveInteractions(now: number): Promise<number> {
    const row = await this.db
      .selectFrom('grants')
      .select((eb) => eb.fn.countAll<number | string | bigint>().as('live'))
      .where('type', '=', 'interaction')
      .where('expires_at', '>', now)
      .where('consumed_at', 'is', null)
      .executeTakeFirstOrThrow();
    return Number(row.live);
  }

  async deleteExpired(before: number, limit: number): Promise<number> {
    const batch = this.db.selectFrom('grants').select('key').where('expires_at', '<', before).limit(limit);
    const result = await this.db.deleteFrom('grants').where('key', 'in', batch).executeTakeFirst();
    // Removal records of clients (few: one per id removed within a token lifetime) go with them.
    return Number(result.numDeletedRows) + (await deleteExpiredClientRemovals(this.db, before));
  }
}
