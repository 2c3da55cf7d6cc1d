/**
 * SCIM filters and sort orders (RFC 7644 §3.4.2.2, §3.4.2.3) as SQL conditions for the directory's
 * list queries (`directory.ts`), with Kysely and bound parameters only, over indexed columns:
 * `id` → `users.subject_id` / `user_groups.id`, `userName` →
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
 * `emails.type`...) reads a whole table; `directory.ts` bounds how long such a list may run.
 */
import { type ExpressionBuilder, type Expression, type SelectQueryBuilder, type SqlBool, sql } from 'kysely';
import { type AttrPath, type CompValue, type Filter, ScimError } from '../protocol/scim-filter.js';
import type { Dialect } from './sql-support.js';
import type { Database } from './tables.js';

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
export const USER_SORT: Record<string, string> = {
  id: 'users.subject_id',
  username: 'users.username_normalized',
  externalid: 'users.external_id',
  'meta.created': 'users.created_at',
  'meta.lastmodified': 'users.updated_at',
};
export const GROUP_SORT: Record<string, string> = {
  id: 'user_groups.id',
  displayname: 'user_groups.display_name_normalized',
  externalid: 'user_groups.external_id',
  'meta.created': 'user_groups.created_at',
  'meta.lastmodified': 'user_groups.updated_at',
};

/** The filterable attributes, named in `invalidFilter` answers. */
const USER_FILTERABLE =
  'id, userName, externalId, active, emails (value, type, primary), groups.value, meta.created, meta.lastModified';
const GROUP_FILTERABLE = 'id, displayName, externalId, members.value, meta.created, meta.lastModified';

/** An expression builder over the store's tables, as the list queries' `where` callbacks get it. */
export type Eb = ExpressionBuilder<Database, keyof Database>;

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
    if (!Number.isFinite(t) || !/^\d{4}-\d{2}-\d{2}T/.test(String(value)))
      throw filterError('a dateTime compares with an xsd:dateTime string');
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
    case 'eq':
      return sql<SqlBool>`${ref} = ${v}`;
    case 'ne':
      return sql<SqlBool>`(${ref} <> ${v} or ${ref} is null)`;
    case 'gt':
      return sql<SqlBool>`${ref} > ${v}`;
    case 'ge':
      return sql<SqlBool>`${ref} >= ${v}`;
    case 'lt':
      return sql<SqlBool>`${ref} < ${v}`;
    case 'le':
      return sql<SqlBool>`${ref} <= ${v}`;
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
  return col.type === 'string' || col.type === 'lower'
    ? sql<SqlBool>`(${ref} is not null and ${ref} <> '')`
    : sql<SqlBool>`${ref} is not null`;
}

/** A filter over one email row (inside the EXISTS). */
function emailCondition(f: Filter, d: Dialect): Expression<SqlBool> {
  switch (f.kind) {
    case 'and':
      return sql<SqlBool>`(${emailCondition(f.left, d)} and ${emailCondition(f.right, d)})`;
    case 'or':
      return sql<SqlBool>`(${emailCondition(f.left, d)} or ${emailCondition(f.right, d)})`;
    case 'not':
      return sql<SqlBool>`not (${emailCondition(f.filter, d)})`;
    case 'valuePath':
      throw filterError('value filters do not nest');
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
export function userCondition(eb: Eb, f: Filter, d: Dialect): Expression<SqlBool> {
  switch (f.kind) {
    case 'and':
      return sql<SqlBool>`(${userCondition(eb, f.left, d)} and ${userCondition(eb, f.right, d)})`;
    case 'or':
      return sql<SqlBool>`(${userCondition(eb, f.left, d)} or ${userCondition(eb, f.right, d)})`;
    case 'not':
      return sql<SqlBool>`not (${userCondition(eb, f.filter, d)})`;
    case 'valuePath':
      if (f.path.attr.toLowerCase() === 'emails' && f.path.sub === undefined)
        return emailsExist(eb, emailCondition(f.filter, d));
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
        const exists = (c: Expression<SqlBool>) =>
          sql<SqlBool>`${sql.ref('users.subject_id')} in (${eb.selectFrom('group_members').select('group_members.subject_id').where(c)})`;
        if (f.kind === 'present') return exists(sql<SqlBool>`1 = 1`);
        if (f.op === 'ne') return sql<SqlBool>`not ${exists(compareColumn(col, 'eq', f.value, d))}`;
        return exists(compareColumn(col, f.op, f.value, d));
      }
      const col = USER_COLUMNS[k];
      if (!col)
        throw filterError(
          `"${f.path.sub === undefined ? f.path.attr : `${f.path.attr}.${f.path.sub}`}" is not filterable; filterable: ${USER_FILTERABLE}`,
        );
      return f.kind === 'present' ? present(col) : compareColumn(col, f.op, f.value, d);
    }
  }
}

/**
 * The users who are members of the organization `organizationId`: `users.subject_id IN` its
 * memberships, read by their primary key (organization id, subject).
 */
export function memberOf(eb: Eb, organizationId: string): Expression<SqlBool> {
  return sql<SqlBool>`${sql.ref('users.subject_id')} in (${eb
    .selectFrom('organization_members')
    .select('organization_members.subject')
    .where('organization_members.organization_id', '=', organizationId)})`;
}

/** A filter over groups, as a SQL condition on `user_groups`. */
export function groupCondition(eb: Eb, f: Filter, d: Dialect): Expression<SqlBool> {
  switch (f.kind) {
    case 'and':
      return sql<SqlBool>`(${groupCondition(eb, f.left, d)} and ${groupCondition(eb, f.right, d)})`;
    case 'or':
      return sql<SqlBool>`(${groupCondition(eb, f.left, d)} or ${groupCondition(eb, f.right, d)})`;
    case 'not':
      return sql<SqlBool>`not (${groupCondition(eb, f.filter, d)})`;
    case 'valuePath':
    case 'present':
    case 'compare': {
      const k = key(f.path);
      if (k === 'members' || k === 'members.value') {
        const col: Column = { column: 'group_members.subject_id', type: 'string' };
        const exists = (c: Expression<SqlBool>) =>
          sql<SqlBool>`${sql.ref('user_groups.id')} in (${eb.selectFrom('group_members').select('group_members.group_id').where(c)})`;
        if (f.kind === 'valuePath') return exists(memberCondition(f.filter, d));
        if (f.kind === 'present') return exists(sql<SqlBool>`1 = 1`);
        if (f.op === 'ne') return sql<SqlBool>`not ${exists(compareColumn(col, 'eq', f.value, d))}`;
        return exists(compareColumn(col, f.op, f.value, d));
      }
      const col = f.kind === 'valuePath' ? undefined : GROUP_COLUMNS[k];
      if (!col || f.kind === 'valuePath')
        throw filterError(`"${f.path.attr}" is not filterable; filterable: ${GROUP_FILTERABLE}`);
      return f.kind === 'present' ? present(col) : compareColumn(col, f.op, f.value, d);
    }
  }
}

function memberCondition(f: Filter, d: Dialect): Expression<SqlBool> {
  switch (f.kind) {
    case 'and':
      return sql<SqlBool>`(${memberCondition(f.left, d)} and ${memberCondition(f.right, d)})`;
    case 'or':
      return sql<SqlBool>`(${memberCondition(f.left, d)} or ${memberCondition(f.right, d)})`;
    case 'not':
      return sql<SqlBool>`not (${memberCondition(f.filter, d)})`;
    case 'valuePath':
      throw filterError('value filters do not nest');
    case 'present':
    case 'compare': {
      if (f.path.attr.toLowerCase() !== 'value' || f.path.sub !== undefined)
        throw filterError('members can be filtered by value');
      const col: Column = { column: 'group_members.subject_id', type: 'string' };
      return f.kind === 'present' ? sql<SqlBool>`1 = 1` : compareColumn(col, f.op, f.value, d);
    }
  }
}

/** `q` ordered by `order`, then by the id (`tiebreak`) so that pages do not overlap. */
export function sorted<T extends keyof Database, O>(
  q: SelectQueryBuilder<Database, T, O>,
  order: string,
  tiebreak: string,
  direction: 'asc' | 'desc',
): SelectQueryBuilder<Database, T, O> {
  const first = q.orderBy(sql.ref(order), direction);
  return order === tiebreak ? first : first.orderBy(sql.ref(tiebreak), direction);
}

/**
 * The column `sortBy` names in `columns` (`USER_SORT` or `GROUP_SORT`); `fallback` when there is
 * no `sortBy`.
 * @throws ScimError 400 `invalidValue` for an attribute that cannot be sorted by.
 */
export function sortColumn(sortBy: AttrPath | undefined, columns: Record<string, string>, fallback: string): string {
  if (sortBy === undefined) return fallback;
  const col = columns[key(sortBy)];
  if (col === undefined)
    throw new ScimError(
      400,
      `"${sortBy.attr}${sortBy.sub ? `.${sortBy.sub}` : ''}" cannot be sorted by; sortable: ${Object.keys(columns).join(', ')}`,
      'invalidValue',
    );
  return col;
}
