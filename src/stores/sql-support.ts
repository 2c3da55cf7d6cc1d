/**
 * What the store modules share: the differences between the two dialects that reach past Kysely
 * (their error codes, PostgreSQL's statement timeout) and the change counters of `admin_versions`
 * that nodes poll. Every store module runs on both SQLite and PostgreSQL.
 */
import { type Kysely, sql } from 'kysely';
import type { Database } from './tables.js';

/** The database a store runs on: SQLite (better-sqlite3) or PostgreSQL (pg). */
export type Dialect = 'sqlite' | 'postgres';

/** Whether `err` is a unique or primary key violation of SQLite or PostgreSQL. */
export function isUniqueViolation(err: unknown): boolean {
  const code = (err as { code?: unknown }).code;
  return code === '23505' || code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY';
}

/** Whether `err` is PostgreSQL's `query_canceled` of a statement that ran past `statement_timeout`. */
export function isStatementTimeout(err: unknown): boolean {
  return (err as { code?: unknown }).code === '57014';
}

/**
 * PostgreSQL only: runs `run` on one pooled connection inside a transaction whose statements time
 * out after `ms` milliseconds (`SET LOCAL`, so the pooled connection keeps no setting), committed
 * when `run` resolves and rolled back when it throws.
 * @throws what `run` throws; a statement stopped by the timeout throws an error that
 *   `isStatementTimeout` recognizes.
 */
export async function withStatementTimeout<T>(
  db: Kysely<Database>,
  ms: number,
  run: (db: Kysely<Database>) => Promise<T>,
): Promise<T> {
  return db.connection().execute(async (conn) => {
    // BEGIN and SET LOCAL in one round trip (a round trip is most of an indexed list's time):
    // a statement without parameters goes by the simple query protocol, which takes several.
    await sql.raw(`begin; set local statement_timeout = ${Math.trunc(ms)}`).execute(conn);
    try {
      const result = await run(conn);
      await sql`commit`.execute(conn);
      return result;
    } catch (err) {
      await sql`rollback`.execute(conn);
      throw err;
    }
  });
}

/**
 * A change counter of `admin_versions` (0012_admin): `clients` for the stored clients, `resources`
 * for the managed items, `organizations` for the stored organizations (not their members),
 * `webhooks` for the stored webhooks and which webhooks are disabled (0021_webhooks),
 * `saml_service_providers` for the stored SAML service providers (0023_saml_service_providers).
 */
export type ChangeCounter = 'clients' | 'resources' | 'organizations' | 'webhooks' | 'saml_service_providers';

/** The value of a change counter: 0 before the first change. */
export async function readChangeCounter(db: Kysely<Database>, kind: ChangeCounter): Promise<number> {
  const row = await db.selectFrom('admin_versions').select('version').where('kind', '=', kind).executeTakeFirst();
  return Number(row?.version ?? 0);
}

/** Raises a change counter by one (nodes polling it re-read what it counts). */
export async function raiseChangeCounter(db: Kysely<Database>, kind: ChangeCounter): Promise<void> {
  await db
    .insertInto('admin_versions')
    .values({ kind, version: 1 })
    .onConflict((oc) => oc.column('kind').doUpdateSet({ version: sql<number>`admin_versions.version + 1` }))
    .execute();
}
