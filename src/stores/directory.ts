/**
 * The user and group directory as SCIM sees it (RFC 7643 §4.1, §4.2), over the tables of
 * migration `0009_people`: `users` (with `external_id`, `version`, `updated_at`), `user_emails`,
 * `user_groups`, `group_members`. Part of the one SQL store; reached as
 * `store.directory`.
 *
 * Filters (RFC 7644 §3.4.2.2) become SQL here, with Kysely and bound parameters only, over
 * indexed columns: `id` → `users.subject_id` / `user_groups.id`, `userName` →
 * `users.username_normalized` (caseExact false: the value is lower-cased), `externalId` →
 * `external_id`, `emails.value` (and `emails[...]` value filters over value, type, primary) →
 * `subject_id IN (...)` over `user_emails.value_normalized`, `groups.value` / `members.value` →
 * the same over `group_members`, group `displayName` → `display_name_normalized`, `active`,
 * `meta.created`, `meta.lastModified`. Attributes kept in the claims JSON (`name.*`,
 * `displayName` of users) are not filterable: `invalidFilter` names what is.
 *
 * `eq` on `userName`, `externalId`, `emails.value`, `id`, `groups.value` is an index lookup,
 * `sw` an index range (SQLite compares bytewise; PostgreSQL has text_pattern_ops indexes,
 * `0015_scim_indexes`), `gt`/`ge`/`lt`/`le` and `sortBy` on those and on the `meta` dates an index
 * range or an index order. Everything else (`co`, `ew`, `ne`, `not`, `pr`, `active`,
 * `emails.type`...) reads a whole table, and is bounded so:
 * - PostgreSQL: every list query runs under a statement timeout (`listTimeoutMs`), answered as
 *   `tooMany` (RFC 7644 §3.12) when it is exceeded;
 * - SQLite, which has no statement timeout and runs in the server's own thread: a filter whose
 *   plan (EXPLAIN QUERY PLAN of its count) scans a table is refused as `tooMany` when there are
 *   more than `sqliteScanUsers` users, before it runs.
 * The total of an unfiltered list is the count kept by triggers (`0011_scim`). A page is three
 * queries whatever its size: the rows (for a filter with at most `FILTER_FIRST` matches, with
 * their count in the same query), then every listed user's emails and groups at once; a filter
 * with more matches adds its count.
 */
import { CompiledQuery, type ExpressionBuilder, type Expression, type Kysely, type SelectQueryBuilder, type SqlBool, sql } from 'kysely';
import { type AttrPath, type CompValue, type Filter, ScimError } from '../protocol/scim-filter.js';

/** How long one list query may run on PostgreSQL, milliseconds; beyond it the answer is `tooMany`. */
export const LIST_TIMEOUT_MS = 2000;
/**
 * The most users a filter that scans may read on SQLite; above it such a filter is `tooMany`. A
 * scan of 250,000 users takes about 50 ms on one core of the reference machine, during which the
 * SQLite process answers nothing else.
 */
export const SQLITE_SCAN_USERS = 250_000;

/** How list queries are bounded (tests set small bounds). */
export interface DirectoryLimits {
  /** PostgreSQL statement timeout of a list, milliseconds (default `LIST_TIMEOUT_MS`). */
  listTimeoutMs: number;
  /** On SQLite, the most users a scanning filter may read (default `SQLITE_SCAN_USERS`). */
  sqliteScanUsers: number;
}

/** One of a user's email addresses. */
export interface DirectoryEmail {
  value: string;
  type: string | null;
  primary: boolean;
  verified: boolean;
}

/** A stored user with what SCIM shows of them. */
export interface DirectoryUser {
  subjectId: string;
  username: string;
  /** '' for no tenant. */
  tenant: string;
  externalId: string | null;
  isActive: boolean;
  claims: Record<string, unknown>;
  hasPassword: boolean;
  /** Grows by one at every change (SCIM `meta.version`). */
  version: number;
  /** Unix seconds. */
  createdAt: number;
  /** Unix seconds. */
  updatedAt: number;
  emails: DirectoryEmail[];
  /** The groups the user is a direct member of. */
  groups: { id: string; displayName: string }[];
}

/** What a user create or replace writes. */
export interface UserWrite {
  username: string;
  /** The tenant of a new user (null or absent: none, stored as ''); a replace keeps the user's. */
  tenant?: string | null;
  externalId: string | null;
  isActive: boolean;
  claims: Record<string, unknown>;
  /** An argon2id hash to set; undefined keeps the stored one (replace) or none (create). */
  passwordHash?: string;
  emails: DirectoryEmail[];
}

/** A stored group. */
export interface DirectoryGroup {
  id: string;
  displayName: string;
  externalId: string | null;
  version: number;
  createdAt: number;
  updatedAt: number;
  /** Members with their userName, for `members.display`. */
  members: { subjectId: string; username: string }[];
}

/** What a group create or replace writes. */
export interface GroupWrite {
  displayName: string;
  externalId: string | null;
  /** Subject ids of the members; each must be a stored user. */
  members: string[];
}

/** A list request (RFC 7644 §3.4.2): filter, sort, page (0-based offset). */
export interface ListQuery {
  filter?: Filter;
  /** An attribute path of `SORTABLE`; default the id. */
  sortBy?: AttrPath;
  descending?: boolean;
  offset: number;
  limit: number;
}

interface DirectoryTables {
  users: {
    subject_id: string;
    username: string;
    username_normalized: string;
    tenant: string;
    password_hash: string | null;
    claims: string;
    is_active: number;
    created_at: number;
    external_id: string | null;
    version: number;
    updated_at: number;
  };
  user_emails: { subject_id: string; value: string; value_normalized: string; type: string | null; is_primary: number; verified: number };
  user_groups: { id: string; display_name: string; display_name_normalized: string; external_id: string | null; version: number; created_at: number; updated_at: number };
  group_members: { group_id: string; subject_id: string };
  user_count: { id: number; n: number };
}

type Column = { column: string; type: 'string' | 'lower' | 'boolean' | 'time' };

/** User attributes (lower-cased SCIM paths) that map to a column of `users`. */
const USER_COLUMNS: Record<string, Column> = {
  id: { column: 'users.subject_id', type: 'string' },
  username: { column: 'users.username_normalized', type: 'lower' },
  externalid: { column: 'users.external_id', type: 'string' },
  active: { column: 'users.is_active', type: 'boolean' },
  'meta.created': { column: 'users.created_at', type: 'time' },
  'meta.lastmodified': { column: 'users.updated_at', type: 'time' },
};
/** Email sub-attributes, inside an EXISTS over `user_emails`. */
const EMAIL_COLUMNS: Record<string, Column> = {
  value: { column: 'user_emails.value_normalized', type: 'lower' },
  type: { column: 'user_emails.type', type: 'lower' },
  primary: { column: 'user_emails.is_primary', type: 'boolean' },
};
const GROUP_COLUMNS: Record<string, Column> = {
  id: { column: 'user_groups.id', type: 'string' },
  displayname: { column: 'user_groups.display_name_normalized', type: 'lower' },
  externalid: { column: 'user_groups.external_id', type: 'string' },
  'meta.created': { column: 'user_groups.created_at', type: 'time' },
  'meta.lastmodified': { column: 'user_groups.updated_at', type: 'time' },
};
/** The attributes a list may be sorted by (§3.4.2.3), per resource type. */
const USER_SORT: Record<string, string> = { id: 'users.subject_id', username: 'users.username_normalized', externalid: 'users.external_id', 'meta.created': 'users.created_at', 'meta.lastmodified': 'users.updated_at' };
const GROUP_SORT: Record<string, string> = { id: 'user_groups.id', displayname: 'user_groups.display_name_normalized', externalid: 'user_groups.external_id', 'meta.created': 'user_groups.created_at', 'meta.lastmodified': 'user_groups.updated_at' };

/** The filterable attributes, named in `invalidFilter` answers. */
const USER_FILTERABLE = 'id, userName, externalId, active, emails (value, type, primary), groups.value, meta.created, meta.lastModified';
const GROUP_FILTERABLE = 'id, displayName, externalId, members.value, meta.created, meta.lastModified';

type Eb = ExpressionBuilder<DirectoryTables, keyof DirectoryTables>;
type Dialect = 'sqlite' | 'postgres';

function filterError(detail: string): ScimError {
  return new ScimError(400, detail, 'invalidFilter');
}

/** `path` as a lower-cased dotted key (`name.givenname`), the schema URI dropped (checked by the caller). */
function key(path: AttrPath): string {
  return (path.sub === undefined ? path.attr : `${path.attr}.${path.sub}`).toLowerCase();
}

/** The SQL value a filter's value becomes for `col`. */
function sqlValue(col: Column, value: CompValue, op: string): string | number {
  if (col.type === 'boolean') {
    if (typeof value !== 'boolean') throw filterError(`a boolean attribute compares with true or false`);
    if (op !== 'eq' && op !== 'ne') throw filterError(`"${op}" cannot compare booleans (RFC 7644 §3.4.2.2)`);
    return value ? 1 : 0;
  }
  if (col.type === 'time') {
    const t = typeof value === 'string' ? Date.parse(value) : Number.NaN;
    if (!Number.isFinite(t) || !/^\d{4}-\d{2}-\d{2}T/.test(String(value))) throw filterError('a dateTime compares with an xsd:dateTime string');
    return Math.floor(t / 1000);
  }
  if (typeof value !== 'string') throw filterError('a string attribute compares with a string');
  return col.type === 'lower' ? value.toLowerCase() : value;
}

/** `%`, `_` and `\` taken literally in a LIKE pattern with `escape '\'`. */
function likeEscape(value: string): string {
  return value.replace(/[\\%_]/g, (c) => `\\${c}`);
}

/** One comparison of a column (RFC 7644 §3.4.2.2 Table 3). */
function compareColumn(col: Column, op: string, value: CompValue, d: Dialect): Expression<SqlBool> {
  const ref = sql.ref(col.column);
  if (value === null) {
    if (op === 'eq') return sql<SqlBool>`${ref} is null`;
    if (op === 'ne') return sql<SqlBool>`${ref} is not null`;
    throw filterError(`"${op}" cannot compare with null`);
  }
  const v = sqlValue(col, value, op);
  switch (op) {
    case 'eq': return sql<SqlBool>`${ref} = ${v}`;
    case 'ne': return sql<SqlBool>`(${ref} <> ${v} or ${ref} is null)`;
    case 'gt': return sql<SqlBool>`${ref} > ${v}`;
    case 'ge': return sql<SqlBool>`${ref} >= ${v}`;
    case 'lt': return sql<SqlBool>`${ref} < ${v}`;
    case 'le': return sql<SqlBool>`${ref} <= ${v}`;
  }
  if (col.type === 'time') throw filterError(`"${op}" does not apply to a dateTime`);
  const text = String(v);
  if (d === 'sqlite') {
    // SQLite's LIKE ignores ASCII case, wrong for case-exact attributes, and uses no index. Its
    // BINARY collation compares UTF-8 bytes, so a prefix is an index range (U+10FFFF, a
    // noncharacter, sorts after every other character); co and ew compare exactly.
    if (op === 'sw') return sql<SqlBool>`(${ref} >= ${text} and ${ref} < ${`${text}\u{10FFFF}`})`;
    if (op === 'co') return sql<SqlBool>`instr(${ref}, ${text}) > 0`;
    return sql<SqlBool>`(length(${ref}) >= ${text.length} and substr(${ref}, ${-text.length}) = ${text})`;
  }
  // PostgreSQL's LIKE is case-exact; the lower-cased columns hold lower-cased values.
  const s = likeEscape(text);
  const pattern = op === 'co' ? `%${s}%` : op === 'sw' ? `${s}%` : `%${s}`;
  return sql<SqlBool>`${ref} like ${pattern} escape '\\'`;
}

function present(col: Column): Expression<SqlBool> {
  const ref = sql.ref(col.column);
  return col.type === 'string' || col.type === 'lower' ? sql<SqlBool>`(${ref} is not null and ${ref} <> '')` : sql<SqlBool>`${ref} is not null`;
}

/** A filter over one email row (inside the EXISTS). */
function emailCondition(f: Filter, d: Dialect): Expression<SqlBool> {
  switch (f.kind) {
    case 'and': return sql<SqlBool>`(${emailCondition(f.left, d)} and ${emailCondition(f.right, d)})`;
    case 'or': return sql<SqlBool>`(${emailCondition(f.left, d)} or ${emailCondition(f.right, d)})`;
    case 'not': return sql<SqlBool>`not (${emailCondition(f.filter, d)})`;
    case 'valuePath': throw filterError('value filters do not nest');
    case 'present':
    case 'compare': {
      const col = f.path.sub === undefined ? EMAIL_COLUMNS[f.path.attr.toLowerCase()] : undefined;
      if (!col) throw filterError(`emails can be filtered by value, type and primary`);
      return f.kind === 'present' ? present(col) : compareColumn(col, f.op, f.value, d);
    }
  }
}

/**
 * Users with an email row matching `condition`: `subject_id IN (subquery)`, which both planners
 * answer from the `user_emails_value` index (SQLite runs a correlated EXISTS once per user).
 */
function emailsExist(eb: Eb, condition: Expression<SqlBool>): Expression<SqlBool> {
  return sql<SqlBool>`${sql.ref('users.subject_id')} in (${eb.selectFrom('user_emails').select('user_emails.subject_id').where(condition)})`;
}

/** A filter over users, as a SQL condition on `users`. */
function userCondition(eb: Eb, f: Filter, d: Dialect): Expression<SqlBool> {
  switch (f.kind) {
    case 'and': return sql<SqlBool>`(${userCondition(eb, f.left, d)} and ${userCondition(eb, f.right, d)})`;
    case 'or': return sql<SqlBool>`(${userCondition(eb, f.left, d)} or ${userCondition(eb, f.right, d)})`;
    case 'not': return sql<SqlBool>`not (${userCondition(eb, f.filter, d)})`;
    case 'valuePath':
      if (f.path.attr.toLowerCase() === 'emails' && f.path.sub === undefined) return emailsExist(eb, emailCondition(f.filter, d));
      throw filterError(`value filters apply to emails; filterable: ${USER_FILTERABLE}`);
    case 'present':
    case 'compare': {
      const k = key(f.path);
      if (k === 'emails' || k.startsWith('emails.')) {
        const sub = k === 'emails' ? 'value' : k.slice('emails.'.length);
        const col = EMAIL_COLUMNS[sub];
        if (!col) throw filterError(`emails can be filtered by value, type and primary`);
        if (f.kind === 'present') return emailsExist(eb, present(col));
        // `ne` on a multi-valued attribute: no value equals it.
        if (f.op === 'ne') return sql<SqlBool>`not ${emailsExist(eb, compareColumn(col, 'eq', f.value, d))}`;
        return emailsExist(eb, compareColumn(col, f.op, f.value, d));
      }
      if (k === 'groups' || k === 'groups.value') {
        const col: Column = { column: 'group_members.group_id', type: 'string' };
        const exists = (c: Expression<SqlBool>) => sql<SqlBool>`${sql.ref('users.subject_id')} in (${eb.selectFrom('group_members').select('group_members.subject_id').where(c)})`;
        if (f.kind === 'present') return exists(sql<SqlBool>`1 = 1`);
        if (f.op === 'ne') return sql<SqlBool>`not ${exists(compareColumn(col, 'eq', f.value, d))}`;
        return exists(compareColumn(col, f.op, f.value, d));
      }
      const col = USER_COLUMNS[k];
      if (!col) throw filterError(`"${f.path.sub === undefined ? f.path.attr : `${f.path.attr}.${f.path.sub}`}" is not filterable; filterable: ${USER_FILTERABLE}`);
      return f.kind === 'present' ? present(col) : compareColumn(col, f.op, f.value, d);
    }
  }
}

/** A filter over groups, as a SQL condition on `user_groups`. */
function groupCondition(eb: Eb, f: Filter, d: Dialect): Expression<SqlBool> {
  switch (f.kind) {
    case 'and': return sql<SqlBool>`(${groupCondition(eb, f.left, d)} and ${groupCondition(eb, f.right, d)})`;
    case 'or': return sql<SqlBool>`(${groupCondition(eb, f.left, d)} or ${groupCondition(eb, f.right, d)})`;
    case 'not': return sql<SqlBool>`not (${groupCondition(eb, f.filter, d)})`;
    case 'valuePath':
    case 'present':
    case 'compare': {
      const k = key(f.path);
      if (k === 'members' || k === 'members.value') {
        const col: Column = { column: 'group_members.subject_id', type: 'string' };
        const exists = (c: Expression<SqlBool>) => sql<SqlBool>`${sql.ref('user_groups.id')} in (${eb.selectFrom('group_members').select('group_members.group_id').where(c)})`;
        if (f.kind === 'valuePath') return exists(memberCondition(f.filter, d));
        if (f.kind === 'present') return exists(sql<SqlBool>`1 = 1`);
        if (f.op === 'ne') return sql<SqlBool>`not ${exists(compareColumn(col, 'eq', f.value, d))}`;
        return exists(compareColumn(col, f.op, f.value, d));
      }
      const col = f.kind === 'valuePath' ? undefined : GROUP_COLUMNS[k];
      if (!col || f.kind === 'valuePath') throw filterError(`"${f.path.attr}" is not filterable; filterable: ${GROUP_FILTERABLE}`);
      return f.kind === 'present' ? present(col) : compareColumn(col, f.op, f.value, d);
    }
  }
}

function memberCondition(f: Filter, d: Dialect): Expression<SqlBool> {
  switch (f.kind) {
    case 'and': return sql<SqlBool>`(${memberCondition(f.left, d)} and ${memberCondition(f.right, d)})`;
    case 'or': return sql<SqlBool>`(${memberCondition(f.left, d)} or ${memberCondition(f.right, d)})`;
    case 'not': return sql<SqlBool>`not (${memberCondition(f.filter, d)})`;
    case 'valuePath': throw filterError('value filters do not nest');
    case 'present':
    case 'compare': {
      if (f.path.attr.toLowerCase() !== 'value' || f.path.sub !== undefined) throw filterError('members can be filtered by value');
      const col: Column = { column: 'group_members.subject_id', type: 'string' };
      return f.kind === 'present' ? sql<SqlBool>`1 = 1` : compareColumn(col, f.op, f.value, d);
    }
  }
}

/** Whether `err` is a unique or primary key violation of SQLite or PostgreSQL. */
function isUniqueViolation(err: unknown): boolean {
  const code = (err as { code?: unknown }).code;
  return code === '23505' || code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY';
}

/** Up to how many matches a filtered page is found before it is sorted. */
const FILTER_FIRST = 10_000;

/** What a `tooMany` answer suggests. */
const NARROW = 'narrow it with an eq or sw on userName, externalId or emails.value (indexed), alone or joined by "and"';

function isStatementTimeout(err: unknown): boolean {
  return (err as { code?: unknown }).code === '57014';
}

/** Raised by writes for a taken unique value: `field` names it (`userName`, `displayName`, `emails`). */
export class DirectoryConflict extends Error {
  constructor(readonly field: string) {
    super(`${field} is taken`);
    this.name = 'DirectoryConflict';
  }
}

/** The directory's reads and writes. Writes are transactions; none leaves a partial change. */
export class SqlDirectory {
  private readonly db: Kysely<DirectoryTables>;

  private readonly limits: DirectoryLimits;

  /**
   * @param db a migrated database (migrations up to `0015_scim_indexes`)
   * @param limits the bounds of list queries; defaults `LIST_TIMEOUT_MS`, `SQLITE_SCAN_USERS`
   */
  constructor(
    db: Kysely<unknown>,
    private readonly dialect: Dialect,
    limits: Partial<DirectoryLimits> = {},
  ) {
    this.db = db as Kysely<DirectoryTables>;
    this.limits = { listTimeoutMs: LIST_TIMEOUT_MS, sqliteScanUsers: SQLITE_SCAN_USERS, ...limits };
  }

  /** The stored user with that subject, with emails and groups, or undefined. */
  async user(subjectId: string): Promise<DirectoryUser | undefined> {
    const row = await this.db.selectFrom('users').selectAll().where('subject_id', '=', subjectId).executeTakeFirst();
    if (!row) return undefined;
    return (await this.withDetails([row]))[0];
  }

  /** Whether a stored user (any tenant) has this userName, case-insensitively; `except` is ignored. */
  async usernameTaken(username: string, except?: string): Promise<boolean> {
    let q = this.db.selectFrom('users').select('subject_id').where('username_normalized', '=', username.toLowerCase());
    if (except !== undefined) q = q.where('subject_id', '<>', except);
    return (await q.limit(1).executeTakeFirst()) !== undefined;
  }

  /**
   * A page of users and how many match (RFC 7644 §3.4.2).
   * @throws ScimError 400 `invalidFilter` for an attribute or comparison that cannot be
   *   translated; 400 `tooMany` when PostgreSQL stops the query at `listTimeoutMs`, or when on
   *   SQLite a filter that scans would read more than `sqliteScanUsers` users.
   */
  async listUsers(query: ListQuery): Promise<{ total: number; users: DirectoryUser[] }> {
    const order = sortColumn(query.sortBy, USER_SORT, 'users.subject_id');
    const direction = query.descending ? 'desc' : 'asc';
    return this.bounded(async (db) => {
      const where = (eb: Eb) => (query.filter ? userCondition(eb, query.filter, this.dialect) : sql<SqlBool>`1 = 1`);
      const inOrder = <T extends keyof DirectoryTables, O>(q: SelectQueryBuilder<DirectoryTables, T, O>) => sorted(q, order, 'users.subject_id', direction);
      const pageOf = async (total: number) =>
        query.limit === 0 || query.offset >= total ? [] : inOrder(db.selectFrom('users').selectAll().where(where)).limit(query.limit).offset(query.offset).execute();
      if (!query.filter) {
        // The count kept by triggers (migration 0011_scim), not a scan of every user.
        const total = Number((await db.selectFrom('user_count').select('n').where('id', '=', 1).executeTakeFirstOrThrow()).n);
        return { total, users: await this.withDetails(await pageOf(total), db) };
      }
      const count = db.selectFrom('users').select((eb) => eb.fn.countAll<number>().as('n')).where(where);
      await this.refuseLongScan(db, count.compile());
      // Up to FILTER_FIRST matches (eq, sw, narrow ranges): found first by the filter's index, then
      // counted and sorted, in one query. Otherwise both planners may walk the sort order's index
      // hoping to meet a page of matches early, which reads most users when the matches are few or
      // cluster (EXPLAIN at 1,000,000 users: userName sw "user045" 92 ms on PostgreSQL, userName gt
      // "user0999990" 150 ms on SQLite; 1 to 4 ms found first). The subquery's LIMIT keeps it apart
      // (neither planner merges it into the outer query) and says when there are more.
      if (query.limit > 0) {
        const found = db.selectFrom('users').selectAll().where(where).limit(FILTER_FIRST + 1).as('users');
        const first = await inOrder(db.selectFrom(found).selectAll().select(sql<number | string>`count(*) over ()`.as('matches'))).limit(query.limit).offset(query.offset).execute();
        const matches = first[0] === undefined ? undefined : Number(first[0].matches);
        if (matches !== undefined && matches <= FILTER_FIRST) return { total: matches, users: await this.withDetails(first, db) };
        if (matches === undefined && query.offset === 0) return { total: 0, users: [] };
      }
      // Many matches, a page past the first ones, or count=0: the count, then the page in the
      // planner's order.
      const total = Number((await count.executeTakeFirstOrThrow()).n);
      return { total, users: await this.withDetails(await pageOf(total), db) };
    });
  }

  /**
   * Adds a user with their emails.
   * @throws DirectoryConflict `userName` when a user of that name exists.
   */
  async addUser(subjectId: string, user: UserWrite, now: number): Promise<void> {
    await this.unique('userName', () =>
      this.db.transaction().execute(async (trx) => {
        await trx.insertInto('users').values({
          subject_id: subjectId,
          username: user.username,
          username_normalized: user.username.toLowerCase(),
          tenant: user.tenant ?? '',
          password_hash: user.passwordHash ?? null,
          claims: JSON.stringify(user.claims),
          is_active: user.isActive ? 1 : 0,
          created_at: now,
          external_id: user.externalId,
          version: 1,
          updated_at: now,
        }).execute();
        await insertEmails(trx, subjectId, user.emails);
      }),
    );
  }

  /**
   * Replaces a user's SCIM attributes and emails, when their version is still `expected` (when
   * given), and adds one to the version.
   * @returns false when there is no such user or the version moved on (checked by the caller).
   * @throws DirectoryConflict `userName` when another user has that name.
   */
  async replaceUser(subjectId: string, user: UserWrite, expected: number | undefined, now: number): Promise<boolean> {
    return this.unique('userName', () =>
      this.db.transaction().execute(async (trx) => {
        let update = trx.updateTable('users').set({
          username: user.username,
          username_normalized: user.username.toLowerCase(),
          claims: JSON.stringify(user.claims),
          is_active: user.isActive ? 1 : 0,
          external_id: user.externalId,
          updated_at: now,
          version: sql<number>`version + 1`,
          ...(user.passwordHash !== undefined ? { password_hash: user.passwordHash } : {}),
        }).where('subject_id', '=', subjectId);
        if (expected !== undefined) update = update.where('version', '=', expected);
        const result = await update.executeTakeFirst();
        if (result.numUpdatedRows !== 1n) return false;
        await trx.deleteFrom('user_emails').where('subject_id', '=', subjectId).execute();
        await insertEmails(trx, subjectId, user.emails);
        return true;
      }),
    );
  }

  /** The stored group with that id, with its members, or undefined. */
  async group(id: string): Promise<DirectoryGroup | undefined> {
    const row = await this.db.selectFrom('user_groups').selectAll().where('id', '=', id).executeTakeFirst();
    if (!row) return undefined;
    return (await this.groupsWithMembers([row]))[0];
  }

  /**
   * A page of groups and how many match.
   * @throws ScimError as `listUsers`.
   */
  async listGroups(query: ListQuery): Promise<{ total: number; groups: DirectoryGroup[] }> {
    const order = sortColumn(query.sortBy, GROUP_SORT, 'user_groups.id');
    return this.bounded(async (db) => {
      const where = (eb: Eb) => (query.filter ? groupCondition(eb, query.filter, this.dialect) : sql<SqlBool>`1 = 1`);
      const count = db.selectFrom('user_groups').select((eb) => eb.fn.countAll<number>().as('n')).where(where);
      if (query.filter) await this.refuseLongScan(db, count.compile());
      const total = Number((await count.executeTakeFirstOrThrow()).n);
      const rows = sorted(db.selectFrom('user_groups').selectAll().where(where), order, 'user_groups.id', query.descending ? 'desc' : 'asc');
      const page = query.limit === 0 || query.offset >= total ? [] : await rows.limit(query.limit).offset(query.offset).execute();
      return { total, groups: await this.groupsWithMembers(page, db) };
    });
  }

  /** Which of `subjectIds` are stored users. */
  async existingUsers(subjectIds: readonly string[]): Promise<Set<string>> {
    const found = new Set<string>();
    for (let i = 0; i < subjectIds.length; i += 500) {
      const rows = await this.db.selectFrom('users').select('subject_id').where('subject_id', 'in', subjectIds.slice(i, i + 500)).execute();
      for (const r of rows) found.add(r.subject_id);
    }
    return found;
  }

  /**
   * Adds a group with its members; the members' versions grow (their `groups` changed).
   * @throws DirectoryConflict `displayName` when a group of that name exists.
   */
  async addGroup(id: string, group: GroupWrite, now: number): Promise<void> {
    await this.unique('displayName', () =>
      this.db.transaction().execute(async (trx) => {
        await trx.insertInto('user_groups').values({
          id,
          display_name: group.displayName,
          display_name_normalized: group.displayName.toLowerCase(),
          external_id: group.externalId,
          version: 1,
          created_at: now,
          updated_at: now,
        }).execute();
        await setMembers(trx, id, [], group.members);
      }),
    );
  }

  /**
   * Replaces a group's attributes and members when its version is still `expected` (when given).
   * @returns false when there is no such group or the version moved on.
   * @throws DirectoryConflict `displayName` when another group has that name.
   */
  async replaceGroup(id: string, group: GroupWrite, expected: number | undefined, now: number): Promise<boolean> {
    return this.unique('displayName', () =>
      this.db.transaction().execute(async (trx) => {
        let update = trx.updateTable('user_groups').set({
          display_name: group.displayName,
          display_name_normalized: group.displayName.toLowerCase(),
          external_id: group.externalId,
          updated_at: now,
          version: sql<number>`version + 1`,
        }).where('id', '=', id);
        if (expected !== undefined) update = update.where('version', '=', expected);
        if ((await update.executeTakeFirst()).numUpdatedRows !== 1n) return false;
        const before = (await trx.selectFrom('group_members').select('subject_id').where('group_id', '=', id).execute()).map((r) => r.subject_id);
        await setMembers(trx, id, before, group.members);
        // The display name is in every member's role claim and groups attribute.
        await bumpUsers(trx, before.filter((s) => group.members.includes(s)));
        return true;
      }),
    );
  }

  /**
   * Removes a group, its memberships, and bumps its former members' versions.
   * @returns false when there was no such group.
   */
  async removeGroup(id: string): Promise<boolean> {
    return this.db.transaction().execute(async (trx) => {
      const members = (await trx.selectFrom('group_members').select('subject_id').where('group_id', '=', id).execute()).map((r) => r.subject_id);
      await trx.deleteFrom('group_members').where('group_id', '=', id).execute();
      await bumpUsers(trx, members);
      return (await trx.deleteFrom('user_groups').where('id', '=', id).executeTakeFirst()).numDeletedRows === 1n;
    });
  }

  /** The display names of the groups a user is a direct member of (their `role` claim values). */
  async groupNamesOf(subjectId: string): Promise<string[]> {
    const rows = await this.db
      .selectFrom('group_members')
      .innerJoin('user_groups', 'user_groups.id', 'group_members.group_id')
      .select('user_groups.display_name')
      .where('group_members.subject_id', '=', subjectId)
      .orderBy('user_groups.display_name_normalized')
      .execute();
    return rows.map((r) => r.display_name);
  }

  /**
   * Runs a list query; on PostgreSQL inside a transaction whose statements time out after
   * `listTimeoutMs` (`SET LOCAL`, so the pooled connection keeps no setting).
   * @throws ScimError 400 `tooMany` when the timeout stops a statement.
   */
  private async bounded<T>(run: (db: Kysely<DirectoryTables>) => Promise<T>): Promise<T> {
    if (this.dialect !== 'postgres') return run(this.db);
    const ms = Math.trunc(this.limits.listTimeoutMs);
    try {
      return await this.db.connection().execute(async (conn) => {
        // BEGIN and SET LOCAL in one round trip (a round trip is most of an indexed list's time):
        // a statement without parameters goes by the simple query protocol, which takes several.
        await sql.raw(`begin; set local statement_timeout = ${ms}`).execute(conn);
        try {
          const result = await run(conn);
          await sql`commit`.execute(conn);
          return result;
        } catch (err) {
          await sql`rollback`.execute(conn);
          throw err;
        }
      });
    } catch (err) {
      if (isStatementTimeout(err)) throw new ScimError(400, `the filter takes longer than ${ms} ms; ${NARROW}`, 'tooMany');
      throw err;
    }
  }

  /**
   * On SQLite, refuses a filtered list whose count (`count`) would scan a table that grows with
   * the users (SQLite's own plan says so: `SCAN users`, `SCAN user_emails`, `SCAN group_members`)
   * while there are more than `sqliteScanUsers` users. SQLite has no statement timeout and
   * answers nothing else while it scans; PostgreSQL is bounded by `bounded` instead.
   * @throws ScimError 400 `tooMany`
   */
  private async refuseLongScan(db: Kysely<DirectoryTables>, count: CompiledQuery): Promise<void> {
    if (this.dialect !== 'sqlite') return;
    const plan = await db.executeQuery<{ detail: string }>(CompiledQuery.raw(`explain query plan ${count.sql}`, [...count.parameters]));
    if (!plan.rows.some((step) => /^SCAN (TABLE )?(users|user_emails|group_members)\b/.test(step.detail))) return;
    const users = Number((await db.selectFrom('user_count').select('n').where('id', '=', 1).executeTakeFirstOrThrow()).n);
    if (users > this.limits.sqliteScanUsers)
      throw new ScimError(400, `the filter reads every one of more than ${this.limits.sqliteScanUsers} users; ${NARROW}`, 'tooMany');
  }

  private async unique<T>(field: string, run: () => Promise<T>): Promise<T> {
    try {
      return await run();
    } catch (err) {
      if (isUniqueViolation(err)) throw new DirectoryConflict(field);
      throw err;
    }
  }

  private async withDetails(rows: DirectoryTables['users'][], db: Kysely<DirectoryTables> = this.db): Promise<DirectoryUser[]> {
    if (rows.length === 0) return [];
    const ids = rows.map((r) => r.subject_id);
    const emails = await db.selectFrom('user_emails').selectAll().where('subject_id', 'in', ids).orderBy('subject_id').orderBy('is_primary', 'desc').orderBy('value_normalized').execute();
    const groups = await db
      .selectFrom('group_members')
      .innerJoin('user_groups', 'user_groups.id', 'group_members.group_id')
      .select(['group_members.subject_id', 'user_groups.id', 'user_groups.display_name'])
      .where('group_members.subject_id', 'in', ids)
      .orderBy('user_groups.display_name_normalized')
      .execute();
    return rows.map((r) => ({
      subjectId: r.subject_id,
      username: r.username,
      tenant: r.tenant,
      externalId: r.external_id,
      isActive: Number(r.is_active) === 1,
      claims: JSON.parse(r.claims) as Record<string, unknown>,
      hasPassword: r.password_hash !== null,
      version: Number(r.version),
      createdAt: Number(r.created_at),
      updatedAt: Number(r.updated_at),
      emails: emails.filter((e) => e.subject_id === r.subject_id).map((e) => ({ value: e.value, type: e.type, primary: Number(e.is_primary) === 1, verified: Number(e.verified) === 1 })),
      groups: groups.filter((g) => g.subject_id === r.subject_id).map((g) => ({ id: g.id, displayName: g.display_name })),
    }));
  }

  private async groupsWithMembers(rows: DirectoryTables['user_groups'][], db: Kysely<DirectoryTables> = this.db): Promise<DirectoryGroup[]> {
    if (rows.length === 0) return [];
    const members = await db
      .selectFrom('group_members')
      .innerJoin('users', 'users.subject_id', 'group_members.subject_id')
      .select(['group_members.group_id', 'users.subject_id', 'users.username'])
      .where('group_members.group_id', 'in', rows.map((r) => r.id))
      .orderBy('users.subject_id')
      .execute();
    return rows.map((r) => ({
      id: r.id,
      displayName: r.display_name,
      externalId: r.external_id,
      version: Number(r.version),
      createdAt: Number(r.created_at),
      updatedAt: Number(r.updated_at),
      members: members.filter((m) => m.group_id === r.id).map((m) => ({ subjectId: m.subject_id, username: m.username })),
    }));
  }
}

/** `q` ordered by `order`, then by the id (`tiebreak`) so that pages do not overlap. */
function sorted<T extends keyof DirectoryTables, O>(q: SelectQueryBuilder<DirectoryTables, T, O>, order: string, tiebreak: string, direction: 'asc' | 'desc'): SelectQueryBuilder<DirectoryTables, T, O> {
  const first = q.orderBy(sql.ref(order), direction);
  return order === tiebreak ? first : first.orderBy(sql.ref(tiebreak), direction);
}

function sortColumn(sortBy: AttrPath | undefined, columns: Record<string, string>, fallback: string): string {
  if (sortBy === undefined) return fallback;
  const col = columns[key(sortBy)];
  if (col === undefined) throw new ScimError(400, `"${sortBy.attr}${sortBy.sub ? `.${sortBy.sub}` : ''}" cannot be sorted by; sortable: ${Object.keys(columns).join(', ')}`, 'invalidValue');
  return col;
}

async function insertEmails(trx: Kysely<DirectoryTables>, subjectId: string, emails: readonly DirectoryEmail[]): Promise<void> {
  if (emails.length === 0) return;
  await trx.insertInto('user_emails').values(emails.map((e) => ({
    subject_id: subjectId,
    value: e.value,
    value_normalized: e.value.toLowerCase(),
    type: e.type,
    is_primary: e.primary ? 1 : 0,
    verified: e.verified ? 1 : 0,
  }))).execute();
}

async function setMembers(trx: Kysely<DirectoryTables>, groupId: string, before: readonly string[], after: readonly string[]): Promise<void> {
  const removed = before.filter((s) => !after.includes(s));
  const added = after.filter((s) => !before.includes(s));
  for (let i = 0; i < removed.length; i += 500)
    await trx.deleteFrom('group_members').where('group_id', '=', groupId).where('subject_id', 'in', removed.slice(i, i + 500)).execute();
  for (let i = 0; i < added.length; i += 500)
    await trx.insertInto('group_members').values(added.slice(i, i + 500).map((subject_id) => ({ group_id: groupId, subject_id }))).execute();
  await bumpUsers(trx, [...removed, ...added]);
}

/** Adds one to the versions of `subjectIds` (their groups, and so their representation, changed). */
async function bumpUsers(trx: Kysely<DirectoryTables>, subjectIds: readonly string[]): Promise<void> {
  for (let i = 0; i < subjectIds.length; i += 500)
    await trx.updateTable('users').set({ version: sql<number>`version + 1` }).where('subject_id', 'in', subjectIds.slice(i, i + 500)).execute();
}
