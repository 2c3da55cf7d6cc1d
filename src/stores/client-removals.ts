/**
 * Removal records of stored clients (table `client_removals`, migration `0016_client_removals`):
 * when a client id was last removed from the store, kept as long as a token issued to the removed
 * client could live. A token of that id issued before the removal (an earlier second) is refused from then on
 * (`ClientRegistry.issuedAfterRemoval`), also under a client later created with the same id; ids
 * never removed are unaffected, so a client moved from the config file into the store, or stored
 * rows restored from a backup, keep their tokens.
 */
import { type Kysely, sql } from 'kysely';
import type { Database } from './tables.js';

/** Lifetimes (seconds) a stored client's settings leave out take these defaults (config/schema.ts `clientSchema`). */
const DEFAULT_LIFETIMES = {
  accessTokenLifetime: 3600,
  identityTokenLifetime: 300,
  absoluteRefreshTokenLifetime: 2592000,
};

/**
 * How long (seconds) a token issued to a client of these stored settings can live: the longest of
 * its access token, identity token and absolute refresh token lifetimes (a sliding refresh token
 * never outlives the absolute one), each its schema default when not set.
 */
export function longestTokenLifetime(config: Record<string, unknown>): number {
  return Math.max(
    ...Object.entries(DEFAULT_LIFETIMES).map(([field, fallback]) => {
      const value = config[field];
      return typeof value === 'number' && Number.isFinite(value) && value > 0 ? value : fallback;
    }),
  );
}

/**
 * Deletes a stored client's row and records the removal, in the caller's transaction `trx`: the one
 * place every client deletion goes through (`ClientStore.removeClient` and `replaceClientIf` for
 * `sigil clients remove` and /admin/v1; the registration store's RFC 7592 DELETE and removal of
 * unused clients). The record is upserted: a later removal of the id raises `removed_at` (never
 * lowers it) and `expires_at` (now plus `longestTokenLifetime` of the removed settings).
 * @param now Unix seconds, the removal time
 * @param expected when given, the row is deleted only while its config is this text
 * @returns whether a row was deleted (nothing is recorded otherwise).
 */
export async function deleteClientRow(
  trx: Kysely<Database>,
  clientId: string,
  now: number,
  expected?: string,
): Promise<boolean> {
  const row = await trx.selectFrom('clients').select('config').where('client_id', '=', clientId).executeTakeFirst();
  if (!row || (expected !== undefined && row.config !== expected)) return false;
  const gone = await trx
    .deleteFrom('clients')
    .where('client_id', '=', clientId)
    .where('config', '=', row.config)
    .executeTakeFirst();
  if (gone.numDeletedRows !== 1n) return false;
  let lifetime = DEFAULT_LIFETIMES.absoluteRefreshTokenLifetime;
  try {
    lifetime = longestTokenLifetime(JSON.parse(row.config) as Record<string, unknown>);
  } catch {
    // An unreadable row keeps the default: the longest default lifetime.
  }
  await trx
    .insertInto('client_removals')
    .values({ client_id: clientId, removed_at: now, expires_at: now + lifetime })
    .onConflict((oc) =>
      oc.column('client_id').doUpdateSet({
        removed_at: sql<number>`case when excluded.removed_at > client_removals.removed_at then excluded.removed_at else client_removals.removed_at end`,
        expires_at: sql<number>`case when excluded.expires_at > client_removals.expires_at then excluded.expires_at else client_removals.expires_at end`,
      }),
    )
    .execute();
  return true;
}

/**
 * The removal records still in force at `now` (Unix seconds): client id → `removed_at` (Unix seconds).
 */
export async function listClientRemovals(db: Kysely<Database>, now: number): Promise<Map<string, number>> {
  const rows = await db
    .selectFrom('client_removals')
    .select(['client_id', 'removed_at'])
    .where('expires_at', '>=', now)
    .execute();
  return new Map(rows.map((r) => [r.client_id, Number(r.removed_at)]));
}

/** Deletes the removal records that expired before `before` (Unix seconds); returns how many. */
export async function deleteExpiredClientRemovals(db: Kysely<Database>, before: number): Promise<number> {
  const result = await db.deleteFrom('client_removals').where('expires_at', '<', before).executeTakeFirst();
  return Number(result.numDeletedRows);
}
