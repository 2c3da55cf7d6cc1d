/**
 * The user and group directory as SCIM sees it (RFC 7643 §4.1, §4.2), over the tables of
 * migration `0009_people`: `users` (with `external_id`, `version`, `updated_at`), `user_emails`,
 * `user_groups`, `group_members`. Part of the one SQL store; reached as
 * `store.directory`.
 *
 * Filters (RFC 7644 §3.4.2.2) become SQL in `directory-filter.ts`, over indexed columns where the
 * filter allows. A filter that reads a whole table (`co`, `ew`, `ne`, `not`, `pr`, `active`,
 * `emails.type`...) is bounded so:
 * - PostgreSQL: every list query runs under a statement timeout (`listTimeoutMs`), answered as
 *   `tooMany` (RFC 7644 §3.12) when it is exceeded;
 * - SQLite, which has no statement timeout and runs in the server's own thread: a filter whose
 *   plan (EXPLAIN QUERY PLAN of its count) scans a table is refused as `tooMany` when there are
 *   more than `sqliteScanUsers` users, before it runs.
 * The total of an unfiltered list is the count kept by triggers (`0011_scim`). A page is three
 * queries whatever its size: the rows (for a filter with at most `FILTER_FIRST` matches, with
 * their count in the same query), then every listed user's emails and groups at once; a filter
 * with more matches adds its count.
 *
 * A list may be held to one organization's members (`ListQuery.organizationId`, SCIM per
 * organization): the users are then found through the organization's memberships (their primary
 * key) and counted there, and a new user may join an organization in the transaction that adds
 * them (`addUser`, migration `0019_organization_scim`).
 */
import { CompiledQuery, type Kysely, type Selectable, type SelectQueryBuilder, type SqlBool, sql } from 'kysely';
import { type AttrPath, type Filter, ScimError } from '../protocol/scim-filter.js';
import {
  type Eb,
  GROUP_SORT,
  groupCondition,
  memberOf,
  sortColumn,
  sorted,
  USER_SORT,
  userCondition,
} from './directory-filter.js';
import type { WebhookEvent } from '../events/webhook-events.js';
import { bumpUsers, insertEmails, passwordColumns, setMembers } from './directory-writes.js';
import { type Dialect, isStatementTimeout, isUniqueViolation, withStatementTimeout } from './sql-support.js';
import type { Database, UserGroupsTable, UsersTable } from './tables.js';
import type { SqlWebhookOutbox } from './webhook-outbox.js';

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
  /** The password is a temporary one an administrator set: the next sign-in must change it. */
  passwordChangeRequired: boolean;
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
  /** Whether the password must be changed at the next sign-in (a replace; undefined keeps the flag, a new user has none). */
  passwordChangeRequired?: boolean;
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

/** The organization a new user joins with their creation (`addUser`). */
export interface NewMembership {
  organizationId: string;
  /** The organization's SCIM client creates the user: only it may change or delete them. */
  provisioned: boolean;
}

/** A list request (RFC 7644 §3.4.2): filter, sort, page (0-based offset). */
export interface ListQuery {
  filter?: Filter;
  /** An attribute path of `SORTABLE`; default the id. */
  sortBy?: AttrPath;
  descending?: boolean;
  offset: number;
  limit: number;
  /** Only the members of the organization with this id (SCIM per organization). */
  organizationId?: string;
}

/** Up to how many matches a filtered page is found before it is sorted. */
const FILTER_FIRST = 10_000;

/** What a `tooMany` answer suggests. */
const NARROW = 'narrow it with an eq or sw on userName, externalId or emails.value (indexed), alone or joined by "and"';

/** Raised by writes for a taken unique value: `field` names it (`userName`, `displayName`, `emails`). */
export class DirectoryConflict extends Error {
  constructor(readonly field: string) {
    super(`${field} is taken`);
    this.name = 'DirectoryConflict';
  }
}

/** The directory's reads and writes. Writes are transactions; none leaves a partial change. */
export class SqlDirectory {
  private readonly limits: DirectoryLimits;

  /**
   * @param db a migrated database (migrations up to `0015_scim_indexes`)
   * @param limits the bounds of list queries; defaults `LIST_TIMEOUT_MS`, `SQLITE_SCAN_USERS`
   * @param outbox where user writes put their webhook events, in their transaction
   */
  constructor(
    private readonly db: Kysely<Database>,
    private readonly dialect: Dialect,
    limits: Partial<DirectoryLimits> = {},
    private readonly outbox?: SqlWebhookOutbox,
  ) {
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
    const { organizationId } = query;
    return this.bounded(async (db) => {
      const matching = (eb: Eb) => (query.filter ? userCondition(eb, query.filter, this.dialect) : sql<SqlBool>`1 = 1`);
      const where = (eb: Eb) =>
        organizationId === undefined
          ? matching(eb)
          : sql<SqlBool>`(${matching(eb)} and ${memberOf(eb, organizationId)})`;
      const inOrder = <T extends keyof Database, O>(q: SelectQueryBuilder<Database, T, O>) =>
        sorted(q, order, 'users.subject_id', direction);
      const pageOf = async (total: number) =>
        query.limit === 0 || query.offset >= total
          ? []
          : inOrder(db.selectFrom('users').selectAll().where(where)).limit(query.limit).offset(query.offset).execute();
      if (!query.filter && organizationId === undefined) {
        // The count kept by triggers (migration 0011_scim), not a scan of every user.
        const total = Number(
          (await db.selectFrom('user_count').select('n').where('id', '=', 1).executeTakeFirstOrThrow()).n,
        );
        return { total, users: await this.withDetails(await pageOf(total), db) };
      }
      const count = db
        .selectFrom('users')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .where(where);
      // An organization's members without a filter: read by the membership's primary key.
      if (query.filter) await this.refuseLongScan(db, count.compile());
      // Up to FILTER_FIRST matches (eq, sw, narrow ranges): found first by the filter's index, then
      // counted and sorted, in one query. Otherwise both planners may walk the sort order's index
      // hoping to meet a page of matches early, which reads most users when the matches are few or
      // cluster (EXPLAIN at 1,000,000 users: userName sw "user045" 92 ms on PostgreSQL, userName gt
      // "user0999990" 150 ms on SQLite; 1 to 4 ms found first). The subquery's LIMIT keeps it apart
      // (neither planner merges it into the outer query) and says when there are more.
      if (query.limit > 0) {
        const found = db
          .selectFrom('users')
          .selectAll()
          .where(where)
          .limit(FILTER_FIRST + 1)
          .as('users');
        const first = await inOrder(
          db.selectFrom(found).selectAll().select(sql<number | string>`count(*) over ()`.as('matches')),
        )
          .limit(query.limit)
          .offset(query.offset)
          .execute();
        const matches = first[0] === undefined ? undefined : Number(first[0].matches);
        if (matches !== undefined && matches <= FILTER_FIRST)
          return { total: matches, users: await this.withDetails(first, db) };
        if (matches === undefined && query.offset === 0) return { total: 0, users: [] };
      }
      // Many matches, a page past the first ones, or count=0: the count, then the page in the
      // planner's order.
      const total = Number((await count.executeTakeFirstOrThrow()).n);
      return { total, users: await this.withDetails(await pageOf(total), db) };
    });
  }

  /**
   * Adds a user with their emails and, with `membership`, makes them a member of that
   * organization (without roles) in the same transaction: both or neither are stored, and so are
   * their webhook `events`.
   * @param membership `provisioned`: the organization's SCIM client creates the user
   * @throws DirectoryConflict `userName` when a user of that name exists.
   */
  async addUser(
    subjectId: string,
    user: UserWrite,
    now: number,
    membership?: NewMembership,
    events?: readonly WebhookEvent[],
  ): Promise<void> {
    await this.unique('userName', () =>
      this.db.transaction().execute(async (trx) => {
        await trx
          .insertInto('users')
          .values({
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
          })
          .execute();
        await insertEmails(trx, subjectId, user.emails);
        if (membership)
          await trx
            .insertInto('organization_members')
            .values({
              organization_id: membership.organizationId,
              subject: subjectId,
              roles: '[]',
              created_at: now,
              provisioned: membership.provisioned ? 1 : 0,
            })
            .execute();
        await this.outbox?.append(trx, events, now);
      }),
    );
  }

  /**
   * Replaces a user's SCIM attributes and emails, when their version is still `expected` (when
   * given), and adds one to the version; the webhook `events` in the same transaction.
   * @returns false when there is no such user or the version moved on (checked by the caller).
   * @throws DirectoryConflict `userName` when another user has that name.
   */
  async replaceUser(
    subjectId: string,
    user: UserWrite,
    expected: number | undefined,
    now: number,
    events?: readonly WebhookEvent[],
  ): Promise<boolean> {
    return this.unique('userName', () =>
      this.db.transaction().execute(async (trx) => {
        let update = trx
          .updateTable('users')
          .set({
            username: user.username,
            username_normalized: user.username.toLowerCase(),
            claims: JSON.stringify(user.claims),
            is_active: user.isActive ? 1 : 0,
            external_id: user.externalId,
            updated_at: now,
            version: sql<number>`version + 1`,
            ...passwordColumns(user.passwordHash, user.passwordChangeRequired),
          })
          .where('subject_id', '=', subjectId);
        if (expected !== undefined) update = update.where('version', '=', expected);
        const result = await update.executeTakeFirst();
        if (result.numUpdatedRows !== 1n) return false;
        await trx.deleteFrom('user_emails').where('subject_id', '=', subjectId).execute();
        await insertEmails(trx, subjectId, user.emails);
        await this.outbox?.append(trx, events, now);
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
      const count = db
        .selectFrom('user_groups')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .where(where);
      if (query.filter) await this.refuseLongScan(db, count.compile());
      const total = Number((await count.executeTakeFirstOrThrow()).n);
      const rows = sorted(
        db.selectFrom('user_groups').selectAll().where(where),
        order,
        'user_groups.id',
        query.descending ? 'desc' : 'asc',
      );
      const page =
        query.limit === 0 || query.offset >= total ? [] : await rows.limit(query.limit).offset(query.offset).execute();
      return { total, groups: await this.groupsWithMembers(page, db) };
    });
  }

  /** Which of `subjectIds` are stored users. */
  async existingUsers(subjectIds: readonly string[]): Promise<Set<string>> {
    const found = new Set<string>();
    for (let i = 0; i < subjectIds.length; i += 500) {
      const rows = await this.db
        .selectFrom('users')
        .select('subject_id')
        .where('subject_id', 'in', subjectIds.slice(i, i + 500))
        .execute();
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
        await trx
          .insertInto('user_groups')
          .values({
            id,
            display_name: group.displayName,
            display_name_normalized: group.displayName.toLowerCase(),
            external_id: group.externalId,
            version: 1,
            created_at: now,
            updated_at: now,
          })
          .execute();
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
        let update = trx
          .updateTable('user_groups')
          .set({
            display_name: group.displayName,
            display_name_normalized: group.displayName.toLowerCase(),
            external_id: group.externalId,
            updated_at: now,
            version: sql<number>`version + 1`,
          })
          .where('id', '=', id);
        if (expected !== undefined) update = update.where('version', '=', expected);
        if ((await update.executeTakeFirst()).numUpdatedRows !== 1n) return false;
        const before = (
          await trx.selectFrom('group_members').select('subject_id').where('group_id', '=', id).execute()
        ).map((r) => r.subject_id);
        await setMembers(trx, id, before, group.members);
        // The display name is in every member's role claim and groups attribute.
        await bumpUsers(
          trx,
          before.filter((s) => group.members.includes(s)),
        );
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
      const members = (
        await trx.selectFrom('group_members').select('subject_id').where('group_id', '=', id).execute()
      ).map((r) => r.subject_id);
      await trx.deleteFrom('group_members').where('group_id', '=', id).execute();
      await bumpUsers(trx, members);
      return (await trx.deleteFrom('user_groups').where('id', '=', id).executeTakeFirst()).numDeletedRows === 1n;
    });
  }

  /**
   * Runs a list query; on PostgreSQL inside a transaction whose statements time out after
   * `listTimeoutMs` (`SET LOCAL`, so the pooled connection keeps no setting).
   * @throws ScimError 400 `tooMany` when the timeout stops a statement.
   */
  private async bounded<T>(run: (db: Kysely<Database>) => Promise<T>): Promise<T> {
    if (this.dialect !== 'postgres') return run(this.db);
    const ms = Math.trunc(this.limits.listTimeoutMs);
    try {
      return await withStatementTimeout(this.db, ms, run);
    } catch (err) {
      if (isStatementTimeout(err))
        throw new ScimError(400, `the filter takes longer than ${ms} ms; ${NARROW}`, 'tooMany');
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
  private async refuseLongScan(db: Kysely<Database>, count: CompiledQuery): Promise<void> {
    if (this.dialect !== 'sqlite') return;
    const plan = await db.executeQuery<{ detail: string }>(
      CompiledQuery.raw(`explain query plan ${count.sql}`, [...count.parameters]),
    );
    if (!plan.rows.some((step) => /^SCAN (TABLE )?(users|user_emails|group_members)\b/.test(step.detail))) return;
    const users = Number(
      (await db.selectFrom('user_count').select('n').where('id', '=', 1).executeTakeFirstOrThrow()).n,
    );
    if (users > this.limits.sqliteScanUsers)
      throw new ScimError(
        400,
        `the filter reads every one of more than ${this.limits.sqliteScanUsers} users; ${NARROW}`,
        'tooMany',
      );
  }

  private async unique<T>(field: string, run: () => Promise<T>): Promise<T> {
    try {
      return await run();
    } catch (err) {
      if (isUniqueViolation(err)) throw new DirectoryConflict(field);
      throw err;
    }
  }

  private async withDetails(rows: Selectable<UsersTable>[], db: Kysely<Database> = this.db): Promise<DirectoryUser[]> {
    if (rows.length === 0) return [];
    const ids = rows.map((r) => r.subject_id);
    const emails = await db
      .selectFrom('user_emails')
      .selectAll()
      .where('subject_id', 'in', ids)
      .orderBy('subject_id')
      .orderBy('is_primary', 'desc')
      .orderBy('value_normalized')
      .execute();
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
      passwordChangeRequired: Number(r.password_change_required) === 1,
      version: Number(r.version),
      createdAt: Number(r.created_at),
      updatedAt: Number(r.updated_at),
      emails: emails
        .filter((e) => e.subject_id === r.subject_id)
        .map((e) => ({
          value: e.value,
          type: e.type,
          primary: Number(e.is_primary) === 1,
          verified: Number(e.verified) === 1,
        })),
      groups: groups
        .filter((g) => g.subject_id === r.subject_id)
        .map((g) => ({ id: g.id, displayName: g.display_name })),
    }));
  }

  private async groupsWithMembers(
    rows: Selectable<UserGroupsTable>[],
    db: Kysely<Database> = this.db,
  ): Promise<DirectoryGroup[]> {
    if (rows.length === 0) return [];
    const members = await db
      .selectFrom('group_members')
      .innerJoin('users', 'users.subject_id', 'group_members.subject_id')
      .select(['group_members.group_id', 'users.subject_id', 'users.username'])
      .where(
        'group_members.group_id',
        'in',
        rows.map((r) => r.id),
      )
      .orderBy('users.subject_id')
      .execute();
    return rows.map((r) => ({
      id: r.id,
      displayName: r.display_name,
      externalId: r.external_id,
      version: Number(r.version),
      createdAt: Number(r.created_at),
      updatedAt: Number(r.updated_at),
      members: members
        .filter((m) => m.group_id === r.id)
        .map((m) => ({ subjectId: m.subject_id, username: m.username })),
    }));
  }
}
