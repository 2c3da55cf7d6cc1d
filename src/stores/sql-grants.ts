/**
 * The SQL implementation of `GrantStore` (`grant-store.ts`): the `grants` table, both dialects.
 * New rows are committed in groups (`group-commit.ts`); the hottest queries (get, consume) are
 * compiled once and reused; `getRecent` may answer access-token rows from memory
 * (`recent-lookups.ts`).
 */
import { type Compilable, CompiledQuery, type Kysely, type QueryResult, type Selectable } from 'kysely';
import type { GrantRecord, GrantStore, GrantType } from './grant-store.js';
import { GroupCommit } from './group-commit.js';
import { type LookupCacheOptions, RecentLookups } from './recent-lookups.js';
import type { Dialect } from './sql-support.js';
import type { Database, GrantsTable } from './tables.js';

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

/** `GrantStore` over the store's Kysely instance. */
export class SqlGrantStore implements GrantStore {
  private readonly templates = new Map<string, { sql: string; slots: number[] }>();
  /** New grant rows, `put` and `putOnce` alike, committed in groups (see `group-commit.ts`). */
  private readonly puts: GroupCommit<NewRow, boolean>;
  private putSql: { plain: string; once: string } | undefined;
  private readonly recent: RecentLookups;

  /**
   * @param dialect picks how a group of new rows is inserted (see `insertRows`, `insertInTransaction`)
   * @param lookups the bound of `getRecent`
   * @param timedCommit told the duration of each group commit of new rows, in seconds
   */
  constructor(
    private readonly db: Kysely<Database>,
    dialect: Dialect,
    lookups: LookupCacheOptions,
    timedCommit?: (seconds: number) => void,
  ) {
    this.recent = new RecentLookups(lookups);
    this.puts = new GroupCommit(
      (rows) => (dialect === 'postgres' ? this.insertRows(rows) : this.insertInTransaction(rows)),
      timedCommit,
    );
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
    this.putSql ??= {
      plain: this.db.insertInto('grants').values(first.row).compile().sql,
      once: this.db
        .insertInto('grants')
        .values(first.row)
        .onConflict((oc) => oc.column('key').doNothing())
        .compile().sql,
    };
    const sql = this.putSql;
    const insert = async (db: Kysely<Database>, { row, once }: NewRow) =>
      (await db.executeQuery(CompiledQuery.raw(once ? sql.once : sql.plain, Object.values(row)))).numAffectedRows ===
      1n;
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
      const inserted = await db
        .insertInto('grants')
        .values(once)
        .onConflict((oc) => oc.column('key').doNothing())
        .returning('key')
        .execute();
      return new Set(inserted.map((r) => r.key));
    };
    const inserted =
      plain.length > 0 && once.length > 0 ? await this.db.transaction().execute(write) : await write(this.db);
    return rows.map(({ row, once }) => !once || inserted.delete(row.key));
  }

  async get(key: string): Promise<GrantRecord | undefined> {
    const result = await this.run('get', (k: string) => this.db.selectFrom('grants').selectAll().where('key', '=', k), [
      key,
    ]);
    const row = result.rows[0] as GrantRow | undefined;
    return row ? toRecord(row) : undefined;
  }

  async getRecent(key: string): Promise<GrantRecord | undefined> {
    return this.recent.lookup(key, (k) => this.get(k));
  }

  async consume(key: string, now: number): Promise<boolean> {
    this.recent.forget(key);
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
   * Runs one of the hot queries (get, consume) without rebuilding it: Kysely builds and compiles it
   * once, with marker values, and later calls reuse the SQL text with the markers' positions
   * filled from `args`.
   */
  private async run<A extends unknown[]>(
    name: string,
    build: (...args: A) => Compilable,
    args: A,
  ): Promise<QueryResult<unknown>> {
    let template = this.templates.get(name);
    if (!template) {
      const markers = args.map((_, i) => `\u0000sigil-marker-${i}`);
      const compiled = build(...(markers as unknown as A)).compile();
      template = { sql: compiled.sql, slots: compiled.parameters.map((p) => markers.indexOf(p as string)) };
      if (template.slots.some((slot) => slot < 0)) throw new Error(`query ${name} has a constant parameter`);
      this.templates.set(name, template);
    }
    return this.db.executeQuery(
      CompiledQuery.raw(
        template.sql,
        template.slots.map((slot) => args[slot]),
      ),
    );
  }

  async update(key: string, data: Record<string, unknown>, expiresAt: number): Promise<boolean> {
    this.recent.forget(key);
    const result = await this.db
      .updateTable('grants')
      .set({ data: JSON.stringify(data), expires_at: expiresAt })
      .where('key', '=', key)
      .where('revoked_at', 'is', null)
      .executeTakeFirst();
    return result.numUpdatedRows === 1n;
  }

  async replaceData(
    key: string,
    expected: Record<string, unknown>,
    data: Record<string, unknown>,
    expiresAt?: number,
  ): Promise<boolean> {
    this.recent.forget(key);
    // `data` is always written by JSON.stringify and read by JSON.parse, so stringifying what was
    // read gives back the stored text exactly: comparing the text compares the data.
    const result = await this.db
      .updateTable('grants')
      .set(
        expiresAt === undefined
          ? { data: JSON.stringify(data) }
          : { data: JSON.stringify(data), expires_at: expiresAt },
      )
      .where('key', '=', key)
      .where('data', '=', JSON.stringify(expected))
      .where('consumed_at', 'is', null)
      .where('revoked_at', 'is', null)
      .executeTakeFirst();
    return result.numUpdatedRows === 1n;
  }

  async save(record: GrantRecord): Promise<void> {
    this.recent.forget(record.key);
    const row = toRow(record);
    const { key: _key, ...rest } = row;
    await this.db
      .insertInto('grants')
      .values(row)
      .onConflict((oc) => oc.column('key').doUpdateSet(rest))
      .execute();
  }

  async revoke(record: GrantRecord, now: number): Promise<void> {
    this.recent.forget(record.key);
    await this.db
      .insertInto('grants')
      .values(toRow({ ...record, revokedAt: now }))
      .onConflict((oc) => oc.column('key').doUpdateSet({ revoked_at: now }).where('grants.revoked_at', 'is', null))
      .execute();
  }

  async revokeSubject(
    subjectId: string,
    types: readonly GrantType[],
    now: number,
    keepSessionId?: string,
  ): Promise<number> {
    // What getRecent remembers is dropped whole: the update reaches rows of many families.
    this.recent.forgetAll();
    let update = this.db
      .updateTable('grants')
      .set({ revoked_at: now })
      .where('subject_id', '=', subjectId)
      .where('type', 'in', [...types])
      .where('revoked_at', 'is', null)
      .where('expires_at', '>', now);
    if (keepSessionId !== undefined)
      update = update.where((eb) => eb.or([eb('session_id', 'is', null), eb('session_id', '!=', keepSessionId)]));
    const result = await update.executeTakeFirst();
    return Number(result.numUpdatedRows);
  }

  async revokeClient(clientId: string, types: readonly GrantType[], now: number): Promise<number> {
    this.recent.forgetAll();
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
    this.recent.forget(undefined, familyId);
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
    this.recent.forgetAll();
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
            ...(families.length > 0
              ? [
                  eb.and([
                    eb(
                      'family_id',
                      'in',
                      families.map((f) => f.family_id),
                    ),
                    eb('type', '!=', 'session'),
                  ]),
                ]
              : []),
          ]),
        )
        .executeTakeFirst();
      return Number(result.numUpdatedRows);
    });
  }
}
