/**
 * The one SQL implementation of the store interfaces, on Kysely. `openStore` picks the
 * dialect from the storage URL: `sqlite:<path>` (better-sqlite3, WAL), `postgres://...` (pg pool),
 * or `memory` (SQLite in memory, for tests and the library's quick start).
 */
import { mkdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import SQLite from 'better-sqlite3';
import {
  type Compilable,
  CompiledQuery,
  type Generated,
  Kysely,
  Migrator,
  PostgresDialect,
  type QueryResult,
  SqliteDialect,
  type SqliteDatabase,
  type Insertable,
  type Selectable,
  sql,
} from 'kysely';
import { GroupCommit } from './group-commit.js';
import { SqliteCheckpointer } from './sqlite-checkpointer.js';
import { migrationProvider } from './migrations.js';
import { deleteClientRow, deleteExpiredClientRemovals, listClientRemovals } from './client-removals.js';
import { type LogoutTables, SqlLogoutStore } from './sql-logout.js';
import { SqlWebAuthnCredentials, type WebAuthnCredentialStore } from './webauthn-credentials.js';
import { type RegistrationStore, SqlRegistrationStore } from './client-registrations.js';
import { SqlUserEmails, type UserEmailStore } from './user-emails.js';
import { SqlDirectory } from './directory.js';
import { type AuditEventStore, SqlAuditEvents } from './audit-events.js';
import { type ManagedResourceStore, SqlManagedResources } from './managed-resources.js';
import { grantRecords, type GrantRecords } from './records/index.js';
import type {
  ClientStore,
  ExternalLink,
  FactorStore,
  GrantRecord,
  GrantStore,
  GrantType,
  KeyStore,
  LogoutStore,
  Maintenance,
  Store,
  StoredFactor,
  StoredKey,
  StoredUser,
  UserStore,
} from './types.js';

interface GrantsTable {
  key: string;
  type: string;
  client_id: string;
  subject_id: string | null;
  family_id: string;
  session_id: string | null;
  data: string;
  created_at: number;
  expires_at: number;
  consumed_at: number | null;
  revoked_at: number | null;
}
interface KeysTable {
  kid: string;
  alg: string;
  private_jwk: string;
  public_jwk: string;
  created_at: number;
  activates_at: number;
  retired_at: number | null;
}
interface ClientsTable {
  client_id: string;
  config: string;
  created_at: number;
}
interface LeasesTable {
  name: string;
  holder: string;
  until: number;
}
interface UsersTable {
  subject_id: string;
  username: string;
  username_normalized: string;
  tenant: string;
  password_hash: string | null;
  claims: string;
  is_active: number;
  created_at: Generated<number>;
  external_id: string | null;
  version: Generated<number>;
  updated_at: Generated<number>;
}
interface UserEmailsTable {
  subject_id: string;
  value: string;
  value_normalized: string;
  type: string | null;
  is_primary: number;
  verified: number;
}
interface UserGroupsTable {
  id: string;
  display_name: string;
  display_name_normalized: string;
  external_id: string | null;
  version: Generated<number>;
  created_at: number;
  updated_at: number;
}
interface GroupMembersTable {
  group_id: string;
  subject_id: string;
}
interface ExternalLinksTable {
  key: string;
  provider: string;
  upstream_subject: string;
  subject_id: string;
  created_at: number;
}
interface FactorsTable {
  id: string;
  subject_id: string;
  kind: string;
  label: string;
  data: string;
  counter: number;
  created_at: number;
  last_used_at: number | null;
}
interface Database {
  external_links: ExternalLinksTable;
  mfa_factors: FactorsTable;
  grants: GrantsTable;
  signing_keys: KeysTable;
  users: UsersTable;
  user_emails: UserEmailsTable;
  user_groups: UserGroupsTable;
  group_members: GroupMembersTable;
  leases: LeasesTable;
  clients: ClientsTable;
  admin_versions: AdminVersionsTable;
}

/** Migration 0012_admin: a change counter per kind of managed item (`clients`). */
interface AdminVersionsTable {
  kind: string;
  version: number;
}

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
    if (schema !== undefined && !/^[a-z_][a-z0-9_]{0,62}$/.test(schema)) throw new Error('storage: schema must match [a-z_][a-z0-9_]*');
    if (!Number.isInteger(poolSize) || poolSize < 1 || poolSize > 200) throw new Error('storage: poolSize must be 1 to 200');
    parsed.searchParams.delete('schema');
    parsed.searchParams.delete('poolSize');
    return { kind: 'postgres', connectionString: parsed.toString(), poolSize, ...(schema ? { schema } : {}) };
  }
  // The URL is not quoted: it may hold a database password (or come from `$env`/`$file`).
  throw new Error('storage: unsupported URL: use "sqlite:<file>", "postgres://..." or "memory"');
}

/** How much `GrantStore.getRecent` may answer from memory. */
export interface LookupCacheOptions {
  /** Longest time a row read is reused, in milliseconds; 0 reads the store every time. */
  maxAgeMilliseconds: number;
  /** Most rows kept (the oldest read is dropped first). */
  maxEntries: number;
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
  const { db, checkpointer } = target.kind === 'sqlite' ? openSqlite(target.path) : { db: await openPostgres(target), checkpointer: undefined };
  // Kysely's migrator takes a lock first (on PostgreSQL an advisory lock), so several nodes may
  // start at once. On PostgreSQL its tables are the store's schema's: unqualified, Kysely finds
  // them in any schema of the database (another deployment's) and skips creating them.
  const { error } = await (target.kind === 'postgres' ? currentSchema(db) : Promise.resolve(undefined)).then(
    (migrationTableSchema) => new Migrator({ db, provider: migrationProvider, ...(migrationTableSchema ? { migrationTableSchema } : {}) }).migrateToLatest(),
    (err: unknown) => ({ error: err }),
  );
  if (error) {
    await checkpointer?.stop();
    await db.destroy();
    throw error instanceof Error ? error : new Error(String(error));
  }
  return new SqlStore(db, target.kind, lookups, checkpointer, timedCommit);
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
  return { db: new Kysely<Database>({ dialect: new SqliteDialect({ database: withStatementCache(sqlite) }) }), checkpointer };
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

type GrantRow = Selectable<GrantsTable>;

/** A grant row waiting for its group's commit; `once`: skipped (false) if its key is stored already. */
interface NewRow {
  row: GrantsTable;
  once: boolean;
}

function toRecord(row: GrantRow): GrantRecord {
  return {
    key: row.key,
    type: row.type as GrantRecord['type'],
    clientId: row.client_id,
    subjectId: row.subject_id,
    familyId: row.family_id,
    sessionId: row.session_id,
    data: JSON.parse(row.data) as Record<string, unknown>,
    createdAt: Number(row.created_at),
    expiresAt: Number(row.expires_at),
    consumedAt: row.consumed_at === null ? null : Number(row.consumed_at),
    revokedAt: row.revoked_at === null ? null : Number(row.revoked_at),
  };
}

function toRow(r: GrantRecord): GrantsTable {
  return {
    key: r.key,
    type: r.type,
    client_id: r.clientId,
    subject_id: r.subjectId,
    family_id: r.familyId,
    session_id: r.sessionId,
    data: JSON.stringify(r.data),
    created_at: r.createdAt,
    expires_at: r.expiresAt,
    consumed_at: r.consumedAt,
    revoked_at: r.revokedAt,
  };
}

class SqlStore implements Store, GrantStore, KeyStore, UserStore, ClientStore, FactorStore, Maintenance {
  readonly grants: GrantStore = this;
  readonly records: GrantRecords = grantRecords(this);
  readonly keys: KeyStore = this;
  readonly users: UserStore = this;
  readonly maintenance: Maintenance = this;
  readonly clients: ClientStore = this;
  readonly factors: FactorStore = this;
  readonly logout: LogoutStore;
  // Modules of their own over the same database: WebAuthn credentials, the stored
  // audit events, the resources managed at run time (0014_resources), dynamic client registration
  // (RFC 7591/7592), users' email addresses (0009_people) and SCIM's view of users and groups.
  readonly webauthn: WebAuthnCredentialStore;
  readonly audit: AuditEventStore;
  readonly resources: ManagedResourceStore;
  readonly registrations: RegistrationStore;
  readonly emails: UserEmailStore;
  readonly directory: SqlDirectory;

  private readonly templates = new Map<string, { sql: string; slots: number[] }>();
  /** New grant rows, `put` and `putOnce` alike, committed in groups (see `group-commit.ts`). */
  private readonly puts: GroupCommit<NewRow, boolean>;
  private putSql: { plain: string; once: string } | undefined;

  /** Access-token rows recently read by `getRecent`, with the `performance.now()` of the read's start. */
  private readonly recent = new Map<string, { row: GrantRecord; at: number }>();
  /** Counts the changes made through this store, so that a read overtaken by one is not kept. */
  private generation = 0;

  constructor(
    private readonly db: Kysely<Database>,
    private readonly dialect: StorageTarget['kind'],
    private readonly lookups: LookupCacheOptions,
    private readonly checkpointer?: SqliteCheckpointer,
    timedCommit?: (seconds: number) => void,
  ) {
    this.logout = new SqlLogoutStore(db as unknown as Kysely<LogoutTables>);
    const untyped = db as Kysely<unknown>;
    this.webauthn = new SqlWebAuthnCredentials(untyped);
    this.audit = new SqlAuditEvents(untyped);
    this.resources = new SqlManagedResources(untyped);
    this.registrations = new SqlRegistrationStore(untyped);
    this.emails = new SqlUserEmails(untyped);
    this.directory = new SqlDirectory(untyped, dialect);
    this.puts = new GroupCommit((rows) => (dialect === 'postgres' ? this.insertRows(rows) : this.insertInTransaction(rows)), timedCommit);
  }

  /**
   * Stores a new row durably: resolves once the transaction holding it has committed. Rows put
   * while another group's commit is in flight are committed together in the next transaction.
   */
  async put(record: GrantRecord): Promise<void> {
    await this.puts.add({ row: toRow(record), once: false });
  }

  /** As `put`, but a row whose key is stored already is skipped (false) instead of failing. */
  async putOnce(record: GrantRecord): Promise<boolean> {
    return this.puts.add({ row: toRow(record), once: true });
  }

  /**
   * SQLite: the prepared one-row insert (`putOnce`: with `ON CONFLICT DO NOTHING`), repeated inside
   * one transaction (one WAL commit). A row's result is whether it was inserted.
   */
  private async insertInTransaction(rows: NewRow[]): Promise<boolean[]> {
    const [first] = rows as [NewRow];
    const sql = (this.putSql ??= {
      plain: this.db.insertInto('grants').values(first.row).compile().sql,
      once: this.db.insertInto('grants').values(first.row).onConflict((oc) => oc.column('key').doNothing()).compile().sql,
    });
    const insert = async (db: Kysely<Database>, { row, once }: NewRow) =>
      (await db.executeQuery(CompiledQuery.raw(once ? sql.once : sql.plain, Object.values(row)))).numAffectedRows === 1n;
    if (rows.length === 1) return [await insert(this.db, first)];
    return this.db.transaction().execute(async (trx) => {
      const inserted: boolean[] = [];
      for (const row of rows) inserted.push(await insert(trx, row));
      return inserted;
    });
  }

  /**
   * PostgreSQL: one multi-row insert for the `put` rows and one `ON CONFLICT DO NOTHING ...
   * RETURNING key` for the `putOnce` rows, in one transaction when there are both. Of `putOnce`
   * rows sharing a key in one group, one is stored and the first caller is told true.
   */
  private async insertRows(rows: NewRow[]): Promise<boolean[]> {
    const plain = rows.filter((r) => !r.once).map((r) => r.row);
    const once = rows.filter((r) => r.once).map((r) => r.row);
    const write = async (db: Kysely<Database>) => {
      if (plain.length > 0) await db.insertInto('grants').values(plain).execute();
      if (once.length === 0) return new Set<string>();
      const inserted = await db.insertInto('grants').values(once).onConflict((oc) => oc.column('key').doNothing()).returning('key').execute();
      return new Set(inserted.map((r) => r.key));
    };
    const inserted = plain.length > 0 && once.length > 0 ? await this.db.transaction().execute(write) : await write(this.db);
    return rows.map(({ row, once }) => !once || inserted.delete(row.key));
  }

  async get(key: string): Promise<GrantRecord | undefined> {
    const result = await this.run('get', (k: string) => this.db.selectFrom('grants').selectAll().where('key', '=', k), [key]);
    const row = result.rows[0] as GrantRow | undefined;
    return row ? toRecord(row) : undefined;
  }

  async getRecent(key: string): Promise<GrantRecord | undefined> {
    const { maxAgeMilliseconds, maxEntries } = this.lookups;
    if (maxAgeMilliseconds <= 0) return this.get(key);
    // The age counts from before the read: a row is never reused later than the bound after the
    // moment the store was asked, whatever the read's own duration.
    const started = performance.now();
    const hit = this.recent.get(key);
    if (hit && started - hit.at < maxAgeMilliseconds) return hit.row;
    const generation = this.generation;
    const row = await this.get(key);
    this.recent.delete(key);
    // A change made here while the read was under way may not be in `row`: use it, keep it not.
    if (row && generation === this.generation && (row.type === 'reference_token' || row.type === 'access_token')) {
      if (this.recent.size >= maxEntries) {
        const oldest = this.recent.keys().next();
        if (!oldest.done) this.recent.delete(oldest.value);
      }
      this.recent.set(key, { row, at: started });
    }
    return row;
  }

  /** Drops everything `getRecent` remembers. */
  private forgetAll(): void {
    this.generation++;
    this.recent.clear();
  }

  /** Drops what `getRecent` remembers of `key`, or of every row of `familyId`. */
  private forget(key: string | undefined, familyId?: string): void {
    this.generation++;
    if (this.recent.size === 0) return;
    if (key !== undefined) this.recent.delete(key);
    if (familyId !== undefined) for (const [k, { row }] of this.recent) if (row.familyId === familyId) this.recent.delete(k);
  }

  async consume(key: string, now: number): Promise<boolean> {
    this.forget(key);
    const result = await this.run(
      'consume',
      (k: string, t: number) =>
        this.db
          .updateTable('grants')
          .set({ consumed_at: t })
          .where('key', '=', k)
          .where('consumed_at', 'is', null)
          .where('revoked_at', 'is', null)
          .where('expires_at', '>', t),
      [key, now],
    );
    return result.numAffectedRows === 1n;
  }

  /**
   * Runs one of the hot queries (put, get, consume) without rebuilding it: Kysely builds and
   * compiles it once, with marker values, and later calls reuse the SQL text with the markers'
   * positions filled from `args` (or with `values` in order, for an insert of one row).
   */
  private async run<A extends unknown[]>(
    name: string,
    build: (...args: A) => Compilable,
    args: A,
    values?: unknown[],
  ): Promise<QueryResult<unknown>> {
    let template = this.templates.get(name);
    if (!template) {
      if (values) template = { sql: build(...args).compile().sql, slots: values.map((_, i) => i) };
      else {
        const markers = args.map((_, i) => `\u0000sigil-marker-${i}`);
        const compiled = build(...(markers as unknown as A)).compile();
        template = { sql: compiled.sql, slots: compiled.parameters.map((p) => markers.indexOf(p as string)) };
        if (template.slots.some((slot) => slot < 0)) throw new Error(`query ${name} has a constant parameter`);
      }
      this.templates.set(name, template);
    }
    const source = values ?? args;
    return this.db.executeQuery(CompiledQuery.raw(template.sql, template.slots.map((slot) => source[slot])));
  }

  async update(key: string, data: Record<string, unknown>, expiresAt: number): Promise<boolean> {
    this.forget(key);
    const result = await this.db
      .updateTable('grants')
      .set({ data: JSON.stringify(data), expires_at: expiresAt })
      .where('key', '=', key)
      .where('revoked_at', 'is', null)
      .executeTakeFirst();
    return result.numUpdatedRows === 1n;
  }

  async replaceData(key: string, expected: Record<string, unknown>, data: Record<string, unknown>, expiresAt?: number): Promise<boolean> {
    this.forget(key);
    // `data` is always written by JSON.stringify and read by JSON.parse, so stringifying what was
    // read gives back the stored text exactly: comparing the text compares the data.
    const result = await this.db
      .updateTable('grants')
      .set(expiresAt === undefined ? { data: JSON.stringify(data) } : { data: JSON.stringify(data), expires_at: expiresAt })
      .where('key', '=', key)
      .where('data', '=', JSON.stringify(expected))
      .where('consumed_at', 'is', null)
      .where('revoked_at', 'is', null)
      .executeTakeFirst();
    return result.numUpdatedRows === 1n;
  }

  async save(record: GrantRecord): Promise<void> {
    this.forget(record.key);
    const row = toRow(record);
    const { key: _key, ...rest } = row;
    await this.db
      .insertInto('grants')
      .values(row)
      .onConflict((oc) => oc.column('key').doUpdateSet(rest))
      .execute();
  }

  async revoke(record: GrantRecord, now: number): Promise<void> {
    this.forget(record.key);
    await this.db
      .insertInto('grants')
      .values(toRow({ ...record, revokedAt: now }))
      .onConflict((oc) => oc.column('key').doUpdateSet({ revoked_at: now }).where('grants.revoked_at', 'is', null))
      .execute();
  }

  async revokeSubject(subjectId: string, types: readonly GrantType[], now: number, keepSessionId?: string): Promise<number> {
    // What getRecent remembers is dropped whole: the update reaches rows of many families.
    this.forgetAll();
    let update = this.db
      .updateTable('grants')
      .set({ revoked_at: now })
      .where('subject_id', '=', subjectId)
      .where('type', 'in', [...types])
      .where('revoked_at', 'is', null)
      .where('expires_at', '>', now);
    if (keepSessionId !== undefined) update = update.where((eb) => eb.or([eb('session_id', 'is', null), eb('session_id', '!=', keepSessionId)]));
    const result = await update.executeTakeFirst();
    return Number(result.numUpdatedRows);
  }

  async revokeClient(clientId: string, types: readonly GrantType[], now: number): Promise<number> {
    this.forgetAll();
    const result = await this.db
      .updateTable('grants')
      .set({ revoked_at: now })
      .where('client_id', '=', clientId)
      .where('type', 'in', [...types])
      .where('revoked_at', 'is', null)
      .where('expires_at', '>', now)
      .executeTakeFirst();
    return Number(result.numUpdatedRows);
  }

  async revokeFamily(familyId: string, now: number): Promise<number> {
    this.forget(undefined, familyId);
    const result = await this.db
      .updateTable('grants')
      .set({ revoked_at: now })
      .where('family_id', '=', familyId)
      .where('revoked_at', 'is', null)
      .executeTakeFirst();
    return Number(result.numUpdatedRows);
  }

  async listLive(subjectId: string, type: GrantType, now: number, limit: number): Promise<GrantRecord[]> {
    // subject_id, then type: the grants_subject index (subject_id, client_id, type) serves both.
    const rows = await this.db
      .selectFrom('grants')
      .selectAll()
      .where('subject_id', '=', subjectId)
      .where('type', '=', type)
      .where('revoked_at', 'is', null)
      .where('consumed_at', 'is', null)
      .where('expires_at', '>', now)
      .orderBy('created_at', 'desc')
      .limit(limit)
      .execute();
    return rows.map((r) => toRecord(r as GrantRow));
  }

  async revokeSubjectAtClient(subjectId: string, clientId: string, now: number): Promise<number> {
    // What getRecent remembers is dropped whole: these updates reach rows of many families.
    this.forgetAll();
    return this.db.transaction().execute(async (trx) => {
      const families = await trx
        .selectFrom('grants')
        .select('family_id')
        .distinct()
        .where('subject_id', '=', subjectId)
        .where('client_id', '=', clientId)
        .where('revoked_at', 'is', null)
        .where('expires_at', '>', now)
        .execute();
      const result = await trx
        .updateTable('grants')
        .set({ revoked_at: now })
        .where('revoked_at', 'is', null)
        .where('expires_at', '>', now)
        .where((eb) =>
          eb.or([
            eb.and([eb('subject_id', '=', subjectId), eb('client_id', '=', clientId)]),
            // A refresh token's family (its access-token marks and reference tokens), but never a
            // session: sessions are the user's, not the client's.
            ...(families.length > 0 ? [eb.and([eb('family_id', 'in', families.map((f) => f.family_id)), eb('type', '!=', 'session')])] : []),
          ]),
        )
        .executeTakeFirst();
      return Number(result.numUpdatedRows);
    });
  }

  async listKeys(): Promise<StoredKey[]> {
    const rows = await this.db.selectFrom('signing_keys').selectAll().orderBy('created_at').orderBy('kid').execute();
    return rows.map((r) => ({
      kid: r.kid,
      alg: r.alg,
      privateKey: r.private_jwk,
      publicJwk: JSON.parse(r.public_jwk) as Record<string, unknown>,
      createdAt: Number(r.created_at),
      activatesAt: Number(r.activates_at),
      retiredAt: r.retired_at === null ? null : Number(r.retired_at),
    }));
  }

  async addKey(key: StoredKey): Promise<void> {
    await this.db
      .insertInto('signing_keys')
      .values({
        kid: key.kid,
        alg: key.alg,
        private_jwk: key.privateKey,
        public_jwk: JSON.stringify(key.publicJwk),
        created_at: key.createdAt,
        activates_at: key.activatesAt,
        retired_at: key.retiredAt,
      })
      .execute();
  }

  async retireKey(kid: string, now: number): Promise<boolean> {
    const result = await this.db
      .updateTable('signing_keys')
      .set({ retired_at: now })
      .where('kid', '=', kid)
      .where('retired_at', 'is', null)
      .executeTakeFirst();
    return result.numUpdatedRows === 1n;
  }

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
    return Number(result.numDeletedRows) + (await deleteExpiredClientRemovals(this.db as Kysely<unknown>, before));
  }

  async findUserByUsername(username: string, tenant: string | null): Promise<StoredUser | undefined> {
    let query = this.db.selectFrom('users').selectAll().where('username_normalized', '=', username.toLowerCase());
    if (tenant !== null) query = query.where('tenant', '=', tenant);
    // Without a tenant the username must name exactly one user, as for config users.
    const rows = await query.limit(2).execute();
    return rows.length === 1 && rows[0] ? toUser(rows[0]) : undefined;
  }

  async findUserBySubject(subjectId: string): Promise<StoredUser | undefined> {
    const row = await this.db.selectFrom('users').selectAll().where('subject_id', '=', subjectId).executeTakeFirst();
    return row ? toUser(row) : undefined;
  }

  async addUser(user: StoredUser): Promise<void> {
    await this.db.insertInto('users').values(toUserRow(user)).execute();
  }

  async findExternalLink(key: string): Promise<string | undefined> {
    const row = await this.db.selectFrom('external_links').select('subject_id').where('key', '=', key).executeTakeFirst();
    return row?.subject_id;
  }

  async hasExternalLinks(provider: string): Promise<boolean> {
    // No index on provider: a rare management check (a new upstream provider's name) reads the table.
    const row = await this.db.selectFrom('external_links').select('key').where('provider', '=', provider).limit(1).executeTakeFirst();
    return row !== undefined;
  }

  async addExternalUser(link: ExternalLink, user: StoredUser): Promise<string> {
    return this.db.transaction().execute(async (trx) => {
      // The link first: of two first sign-ins at once, the second waits here for the first's
      // commit, then inserts nothing and takes the first's subject.
      const inserted = await trx
        .insertInto('external_links')
        .values({ key: link.key, provider: link.provider, upstream_subject: link.upstreamSubject, subject_id: user.subjectId, created_at: Math.floor(Date.now() / 1000) })
        .onConflict((oc) => oc.column('key').doNothing())
        .executeTakeFirst();
      if (inserted.numInsertedOrUpdatedRows !== 1n) {
        const row = await trx.selectFrom('external_links').select('subject_id').where('key', '=', link.key).executeTakeFirstOrThrow();
        return row.subject_id;
      }
      await trx.insertInto('users').values(toUserRow(user)).execute();
      return user.subjectId;
    });
  }

  async listUsers(): Promise<StoredUser[]> {
    const rows = await this.db.selectFrom('users').selectAll().orderBy('tenant').orderBy('username_normalized').execute();
    return rows.map(toUser);
  }

  async removeUser(subjectId: string): Promise<boolean> {
    return this.db.transaction().execute(async (trx) => {
      await trx.deleteFrom('external_links').where('subject_id', '=', subjectId).execute();
      await trx.deleteFrom('mfa_factors').where('subject_id', '=', subjectId).execute();
      // Their passkeys and security keys: a later user with the same subject gets none.
      await sql`delete from webauthn_credentials where subject_id = ${subjectId}`.execute(trx);
      // Their addresses and group memberships (0009_people): a later user with the same subject has
      // none; the groups they leave change (their SCIM version grows).
      await trx.deleteFrom('user_emails').where('subject_id', '=', subjectId).execute();
      const memberOf = trx.selectFrom('group_members').select('group_id').where('subject_id', '=', subjectId);
      await trx.updateTable('user_groups').set({ version: sql<number>`version + 1` }).where('id', 'in', memberOf).execute();
      await trx.deleteFrom('group_members').where('subject_id', '=', subjectId).execute();
      const result = await trx.deleteFrom('users').where('subject_id', '=', subjectId).executeTakeFirst();
      return result.numDeletedRows === 1n;
    });
  }

  async setPasswordHash(subjectId: string, passwordHash: string): Promise<boolean> {
    const result = await this.db.updateTable('users').set({ password_hash: passwordHash }).where('subject_id', '=', subjectId).executeTakeFirst();
    return result.numUpdatedRows === 1n;
  }

  async groupNames(subjectId: string): Promise<string[]> {
    return this.directory.groupNamesOf(subjectId);
  }

  async setUserActive(subjectId: string, active: boolean): Promise<boolean> {
    const result = await this.db
      .updateTable('users')
      .set({ is_active: active ? 1 : 0, version: sql<number>`version + 1`, updated_at: Math.floor(Date.now() / 1000) })
      .where('subject_id', '=', subjectId)
      .executeTakeFirst();
    return result.numUpdatedRows === 1n;
  }

  async updateClaims(subjectId: string, claims: Record<string, unknown>): Promise<void> {
    await this.db.updateTable('users').set({ claims: JSON.stringify(claims) }).where('subject_id', '=', subjectId).execute();
  }

  async listClients(): Promise<Record<string, unknown>[]> {
    const rows = await this.db.selectFrom('clients').select('config').orderBy('client_id').execute();
    return rows.map((r) => JSON.parse(r.config) as Record<string, unknown>);
  }

  async listClientRemovals(now: number): Promise<Map<string, number>> {
    return listClientRemovals(this.db as Kysely<unknown>, now);
  }

  async saveClient(clientId: string, config: Record<string, unknown>): Promise<void> {
    const row = { client_id: clientId, config: JSON.stringify(config), created_at: Math.floor(Date.now() / 1000) };
    await this.db
      .insertInto('clients')
      .values(row)
      .onConflict((oc) => oc.column('client_id').doUpdateSet({ config: row.config }))
      .execute();
    await this.clientsChanged();
  }

  async removeClient(clientId: string): Promise<boolean> {
    const now = Math.floor(Date.now() / 1000);
    if (!(await this.db.transaction().execute((trx) => deleteClientRow(trx, clientId, now)))) return false;
    await this.clientsChanged();
    return true;
  }

  async clientsVersion(): Promise<number> {
    const row = await this.db.selectFrom('admin_versions').select('version').where('kind', '=', 'clients').executeTakeFirst();
    return Number(row?.version ?? 0);
  }

  /** Raises the stored clients' change counter (`clientsVersion`). */
  private async clientsChanged(): Promise<void> {
    await this.db
      .insertInto('admin_versions')
      .values({ kind: 'clients', version: 1 })
      .onConflict((oc) => oc.column('kind').doUpdateSet({ version: sql<number>`admin_versions.version + 1` }))
      .execute();
  }

  async getClient(clientId: string): Promise<string | undefined> {
    const row = await this.db.selectFrom('clients').select('config').where('client_id', '=', clientId).executeTakeFirst();
    return row?.config;
  }

  async replaceClientIf(clientId: string, expected: string, config: Record<string, unknown> | undefined): Promise<boolean> {
    if (config === undefined) {
      const now = Math.floor(Date.now() / 1000);
      if (!(await this.db.transaction().execute((trx) => deleteClientRow(trx, clientId, now, expected)))) return false;
    } else {
      const result = await this.db.updateTable('clients').set({ config: JSON.stringify(config) }).where('client_id', '=', clientId).where('config', '=', expected).executeTakeFirst();
      if (result.numUpdatedRows !== 1n) return false;
    }
    await this.clientsChanged();
    return true;
  }

  async listFactors(subjectId: string, kinds?: readonly string[]): Promise<StoredFactor[]> {
    let query = this.db.selectFrom('mfa_factors').selectAll().where('subject_id', '=', subjectId);
    if (kinds) {
      if (kinds.length === 0) return [];
      query = query.where('kind', 'in', [...kinds]);
    }
    const rows = await query.orderBy('created_at').orderBy('id').execute();
    return rows.map(toFactor);
  }

  async addFactor(factor: StoredFactor): Promise<void> {
    await this.db.insertInto('mfa_factors').values(toFactorRow(factor)).execute();
  }

  async advanceFactorCounter(id: string, next: number, now: number): Promise<boolean> {
    const result = await this.db
      .updateTable('mfa_factors')
      .set({ counter: next, last_used_at: now })
      .where('id', '=', id)
      .where('counter', '<', next)
      .executeTakeFirst();
    return result.numUpdatedRows === 1n;
  }

  async removeFactor(subjectId: string, id: string): Promise<boolean> {
    const result = await this.db.deleteFrom('mfa_factors').where('id', '=', id).where('subject_id', '=', subjectId).executeTakeFirst();
    return result.numDeletedRows === 1n;
  }

  async removeFactors(subjectId: string, kinds?: readonly string[]): Promise<number> {
    let query = this.db.deleteFrom('mfa_factors').where('subject_id', '=', subjectId);
    if (kinds) {
      if (kinds.length === 0) return 0;
      query = query.where('kind', 'in', [...kinds]);
    }
    return Number((await query.executeTakeFirst()).numDeletedRows);
  }

  async replaceFactors(subjectId: string, kind: string, factors: readonly StoredFactor[]): Promise<void> {
    await this.db.transaction().execute(async (trx) => {
      await trx.deleteFrom('mfa_factors').where('subject_id', '=', subjectId).where('kind', '=', kind).execute();
      if (factors.length > 0) await trx.insertInto('mfa_factors').values(factors.map(toFactorRow)).execute();
    });
  }

  async ping(): Promise<void> {
    await this.db.selectFrom('signing_keys').select('kid').limit(1).execute();
  }

  async close(): Promise<void> {
    await this.checkpointer?.stop();
    await this.db.destroy();
  }
}

function toUserRow(user: StoredUser): Insertable<UsersTable> {
  const now = Math.floor(Date.now() / 1000);
  return {
    subject_id: user.subjectId,
    username: user.username,
    username_normalized: user.username.toLowerCase(),
    tenant: user.tenant ?? '',
    password_hash: user.passwordHash,
    claims: JSON.stringify(user.claims),
    is_active: user.isActive ? 1 : 0,
    created_at: now,
    updated_at: now,
  };
}

function toUser(row: Selectable<UsersTable>): StoredUser {
  return {
    subjectId: row.subject_id,
    username: row.username,
    tenant: row.tenant === '' ? null : row.tenant,
    passwordHash: row.password_hash,
    claims: JSON.parse(row.claims) as Record<string, unknown>,
    isActive: row.is_active === 1,
  };
}

function toFactorRow(f: StoredFactor): FactorsTable {
  return {
    id: f.id,
    subject_id: f.subjectId,
    kind: f.kind,
    label: f.label,
    data: JSON.stringify(f.data),
    counter: f.counter,
    created_at: f.createdAt,
    last_used_at: f.lastUsedAt,
  };
}

function toFactor(row: Selectable<FactorsTable>): StoredFactor {
  return {
    id: row.id,
    subjectId: row.subject_id,
    kind: row.kind,
    label: row.label,
    data: JSON.parse(row.data) as Record<string, unknown>,
    counter: Number(row.counter),
    createdAt: Number(row.created_at),
    lastUsedAt: row.last_used_at === null ? null : Number(row.last_used_at),
  };
}
