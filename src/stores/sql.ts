/**
 * Opens the store: `openStore` picks the dialect from the storage URL: `sqlite:<path>`
 * (better-sqlite3, WAL), `postgres://...` (pg pool), or `memory` (SQLite in memory, for tests and
 * the library's quick start), runs the migrations, and composes the `Store` from one module per
 * storage interface, all over the one Kysely instance typed by `tables.ts`.
 */
import { mkdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import SQLite from 'better-sqlite3';
import { Kysely, Migrator, PostgresDialect, SqliteDialect, type SqliteDatabase, sql } from 'kysely';
import { SqliteCheckpointer } from './sqlite-checkpointer.js';
import { migrationProvider } from './migrations.js';
import { SqlLogoutStore } from './sql-logout.js';
import { SqlWebAuthnCredentials } from './webauthn-credentials.js';
import { SqlRegistrationStore } from './client-registrations.js';
import { SqlUserEmails } from './user-emails.js';
import { SqlDirectory } from './directory.js';
import { SqlAuditEvents } from './audit-events.js';
import { SqlManagedResources } from './managed-resources.js';
import { SqlOrganizationGroups } from './sql-organization-groups.js';
import { SqlServerSecrets } from './sql-secrets.js';
import { SqlOrganizations } from './sql-organizations.js';
import { grantRecords } from './records/index.js';
import { SqlGrantStore } from './sql-grants.js';
import { SqlKeyStore } from './sql-keys.js';
import { SqlUserStore } from './sql-users.js';
import { SqlClientStore } from './sql-clients.js';
import { SqlFactorStore } from './sql-factors.js';
import { SqlMaintenance } from './sql-maintenance.js';
import type { LookupCacheOptions } from './recent-lookups.js';
import type { Dialect } from './sql-support.js';
import type { Database } from './tables.js';
import type { Store } from './types.js';
import { SqlWebhookStore } from './sql-webhooks.js';
import { SqlWebhookOutbox } from './webhook-outbox.js';
import { SqlSamlServiceProviderStore } from './sql-saml-service-providers.js';

/** Where a store lives, from its storage URL. */
export type StorageTarget =
  | { kind: 'sqlite'; path: string }
  /** `schema`: a PostgreSQL schema to create and use (tests, several deployments in one database). */
  | { kind: 'postgres'; connectionString: string; schema?: string; poolSize: number };

/**
 * Parses a storage URL (config `storage`): `sqlite:<file>`, `memory`, or
 * `postgres://user@host:port/db[?schema=name&poolSize=n]` (also `postgresql://`).
 * @throws Error naming the accepted forms (never quoting the URL, which may hold a password).
 */
export function parseStorageUrl(url: string): StorageTarget {
  if (url === 'memory') return { kind: 'sqlite', path: ':memory:' };
  if (url.startsWith('sqlite:')) {
    const path = url.slice('sqlite:'.length).replace(/^\/\/(?=\/)/, '');
    if (path.length > 0) return { kind: 'sqlite', path };
  }
  if (/^postgres(ql)?:\/\//.test(url) && URL.canParse(url)) {
    const parsed = new URL(url);
    const schema = parsed.searchParams.get('schema') ?? undefined;
    const poolSize = Number(parsed.searchParams.get('poolSize') ?? 10);
    if (schema !== undefined && !/^[a-z_][a-z0-9_]{0,62}$/.test(schema))
      throw new Error('storage: schema must match [a-z_][a-z0-9_]*');
    if (!Number.isInteger(poolSize) || poolSize < 1 || poolSize > 200)
      throw new Error('storage: poolSize must be 1 to 200');
    parsed.searchParams.delete('schema');
    parsed.searchParams.delete('poolSize');
    return { kind: 'postgres', connectionString: parsed.toString(), poolSize, ...(schema ? { schema } : {}) };
  }
  // The URL is not quoted: it may hold a database password (or come from `$env`/`$file`).
  throw new Error('storage: unsupported URL: use "sqlite:<file>", "postgres://..." or "memory"');
}

/**
 * Opens the store named by `url`, creating the SQLite file's folder if needed, and runs the
 * migrations. `lookups`: the bound of `getRecent` (default: no reuse, every read goes to the store).
 * `timedCommit`, if given, is told the duration of each group commit of new grant rows, in seconds.
 * @throws Error when the URL is unsupported or a migration fails.
 */
export async function openStore(
  url: string,
  lookups: LookupCacheOptions = { maxAgeMilliseconds: 0, maxEntries: 0 },
  timedCommit?: (seconds: number) => void,
): Promise<Store> {
  const target = parseStorageUrl(url);
  const { db, checkpointer } =
    target.kind === 'sqlite' ? openSqlite(target.path) : { db: await openPostgres(target), checkpointer: undefined };
  // Kysely's migrator takes a lock first (on PostgreSQL an advisory lock), so several nodes may
  // start at once. On PostgreSQL its tables are the store's schema's: unqualified, Kysely finds
  // them in any schema of the database (another deployment's) and skips creating them.
  const { error } = await (target.kind === 'postgres' ? currentSchema(db) : Promise.resolve(undefined)).then(
    (migrationTableSchema) =>
      new Migrator({
        db,
        provider: migrationProvider,
        ...(migrationTableSchema ? { migrationTableSchema } : {}),
        // Migrations run together share a timestamp and are then ordered by name. Kysely's default,
        // localeCompare, sets up ICU's collator on its first call (5-9 ms of every start); the names
        // begin with distinct four-digit numbers, which order the same either way.
        nameComparator: (a, b) => (a < b ? -1 : a > b ? 1 : 0),
      }).migrateToLatest(),
    (err: unknown) => ({ error: err }),
  );
  if (error) {
    await checkpointer?.stop();
    await db.destroy();
    throw error instanceof Error ? error : new Error(String(error));
  }
  return composeStore(db, target.kind, lookups, checkpointer, timedCommit);
}

/** The schema unqualified names resolve to (the `schema` of the URL, else the search path's). */
async function currentSchema(db: Kysely<Database>): Promise<string | undefined> {
  const { rows } = await sql<{ schema: string | null }>`select current_schema() as schema`.execute(db);
  return rows[0]?.schema ?? undefined;
}

/** SQLite in WAL mode; a file database gets its checkpoints from a worker thread (see `sqlite-checkpointer.ts`). */
function openSqlite(path: string): { db: Kysely<Database>; checkpointer: SqliteCheckpointer | undefined } {
  if (path !== ':memory:') mkdirSync(dirname(resolve(path)), { recursive: true });
  const sqlite = new SQLite(path);
  sqlite.pragma('journal_mode = WAL');
  sqlite.pragma('synchronous = NORMAL');
  sqlite.pragma('busy_timeout = 5000');
  const checkpointer = path === ':memory:' ? undefined : SqliteCheckpointer.start(sqlite, path);
  return {
    db: new Kysely<Database>({ dialect: new SqliteDialect({ database: withStatementCache(sqlite) }) }),
    checkpointer,
  };
}

async function openPostgres(target: Extract<StorageTarget, { kind: 'postgres' }>): Promise<Kysely<Database>> {
  // Loaded only for PostgreSQL storage, so a SQLite node starts faster.
  const { default: pg } = await import('pg');
  const { schema } = target;
  if (schema) {
    const setup = new pg.Client({ connectionString: target.connectionString });
    await setup.connect();
    try {
      await setup.query(`create schema if not exists ${schema}`);
    } finally {
      await setup.end();
    }
  }
  const pool = new pg.Pool({
    connectionString: target.connectionString,
    max: target.poolSize,
    idleTimeoutMillis: 30_000,
    connectionTimeoutMillis: 5_000,
    ...(schema ? { options: `-c search_path=${schema}` } : {}),
  });
  return new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
}

/**
 * better-sqlite3 with its prepared statements reused: Kysely prepares every query anew, and the
 * store runs a small fixed set of SQL texts, so each is prepared once (bounded, in case of growth).
 */
function withStatementCache(sqlite: SQLite.Database): SqliteDatabase {
  const cache = new Map<string, SQLite.Statement>();
  return {
    close: () => {
      cache.clear();
      sqlite.close();
    },
    prepare: (sql: string) => {
      let statement = cache.get(sql);
      if (!statement) {
        statement = sqlite.prepare(sql);
        if (cache.size < 500) cache.set(sql, statement);
      }
      return statement;
    },
  } as unknown as SqliteDatabase;
}

/**
 * The store over an open, migrated database: one module per storage interface, all on `db`.
 * `close` stops the SQLite checkpointer, if any, then closes the database.
 */
function composeStore(
  db: Kysely<Database>,
  dialect: Dialect,
  lookups: LookupCacheOptions,
  checkpointer: SqliteCheckpointer | undefined,
  timedCommit?: (seconds: number) => void,
): Store {
  const grants = new SqlGrantStore(db, dialect, lookups, timedCommit);
  // The writers of the changes webhooks tell of put their events in the outbox, in their transactions.
  const webhookOutbox = new SqlWebhookOutbox(db);
  const directory = new SqlDirectory(db, dialect, {}, webhookOutbox);
  return {
    grants,
    records: grantRecords(grants),
    logout: new SqlLogoutStore(db, webhookOutbox),
    keys: new SqlKeyStore(db),
    users: new SqlUserStore(db, dialect, webhookOutbox),
    clients: new SqlClientStore(db, webhookOutbox),
    factors: new SqlFactorStore(db),
    maintenance: new SqlMaintenance(db),
    // Modules of their own over the same database: WebAuthn credentials, the stored
    // audit events, the resources managed at run time (0014_resources), dynamic client registration
    // (RFC 7591/7592), users' email addresses (0009_people), SCIM's view of users and groups, and
    // the organizations with their members (0018_organizations) and their roles as SCIM Groups
    // (0019_organization_scim).
    webauthn: new SqlWebAuthnCredentials(db),
    audit: new SqlAuditEvents(db),
    resources: new SqlManagedResources(db),
    organizations: new SqlOrganizations(db, webhookOutbox),
    organizationGroups: new SqlOrganizationGroups(db),
    secrets: new SqlServerSecrets(db),
    registrations: new SqlRegistrationStore(db, webhookOutbox),
    emails: new SqlUserEmails(db),
    directory,
    // Webhooks (0021_webhooks): the stored ones and the disabled ones, and the outbox.
    webhooks: new SqlWebhookStore(db),
    webhookOutbox,
    // SAML service providers managed at run time (0023_saml_service_providers).
    samlServiceProviders: new SqlSamlServiceProviderStore(db),
    async ping() {
      await db.selectFrom('signing_keys').select('kid').limit(1).execute();
    },
    async close() {
      await checkpointer?.stop();
      await db.destroy();
    },
  };
}
