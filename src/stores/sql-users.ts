/**
 * The SQL implementation of `UserStore`: users kept in `users` (`sigil users`, federation's first
 * sign-ins, SCIM), with the upstream identities linked to them (`external_links`). Removing a
 * user removes everything stored under their subject: links, second factors, WebAuthn credentials,
 * email addresses and group memberships. SCIM's own view of the same tables is `directory.ts`.
 */
import { CompiledQuery, type Insertable, type Kysely, type Selectable, sql } from 'kysely';
import { nowSeconds } from '../crypto/handles.js';
import type { WebhookEvent } from '../events/webhook-events.js';
import type { Dialect } from './sql-support.js';
import type { ExternalLink, StoredProfile, StoredUser, UserStore } from './types.js';
import type { Database, UsersTable } from './tables.js';
import type { SqlWebhookOutbox } from './webhook-outbox.js';

/** The values a compiled profile query holds in place of its lookup's (never a stored value: NUL first). */
const SUBJECT_SLOT = '\u0000subject';
const USERNAME_SLOT = '\u0000username';
const TENANT_SLOT = '\u0000tenant';
/** What `findProfile` looks a user up by: a subject, a username in any tenant, or in one tenant. */
type ProfileShape = 'subject' | 'username' | 'usernameInTenant';
/** A row of the profile query. */
type ProfileRow = Selectable<UsersTable> & {
  email_value: string | null;
  email_verified: number | null;
  group_names: string | string[] | null;
};

/** `UserStore` over the store's Kysely instance. */
export class SqlUserStore implements UserStore {
  private readonly profileQueries = new Map<ProfileShape, CompiledQuery>();
  /**
   * @param outbox where removals and first sign-ins put their webhook events, in their transaction
   */
  constructor(
    private readonly db: Kysely<Database>,
    private readonly dialect: Dialect,
    private readonly outbox?: SqlWebhookOutbox,
  ) {}

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

  async findProfile(
    by: { subjectId: string } | { username: string; tenant: string | null },
  ): Promise<StoredProfile | undefined> {
    const shape = 'subjectId' in by ? 'subject' : by.tenant === null ? 'username' : 'usernameInTenant';
    const query = this.profileQueries.get(shape) ?? this.compileProfileQuery(shape);
    const value = (p: unknown) =>
      p === SUBJECT_SLOT && 'subjectId' in by
        ? by.subjectId
        : p === USERNAME_SLOT && 'username' in by
          ? by.username.toLowerCase()
          : p === TENANT_SLOT && 'tenant' in by
            ? by.tenant
            : p;
    const { rows } = await this.db.executeQuery<ProfileRow>(CompiledQuery.raw(query.sql, query.parameters.map(value)));
    // Without a tenant the username must name exactly one user, as for config users.
    const [row] = rows;
    if (rows.length !== 1 || !row) return undefined;
    // PostgreSQL's driver parses json; SQLite returns the text (and '[]' for no group, where
    // PostgreSQL's json_agg gives null).
    const groups = typeof row.group_names === 'string' ? (JSON.parse(row.group_names) as string[]) : row.group_names;
    return {
      ...toUser(row),
      ...(row.email_value != null
        ? { primaryEmail: { value: row.email_value, verified: Number(row.email_verified) === 1 } }
        : {}),
      groups: groups ?? [],
    };
  }

  /**
   * The profile query of one shape, compiled once with slot values in place of the lookup's:
   * building it per lookup cost ten times what SQLite takes to run it.
   */
  private compileProfileQuery(shape: ProfileShape): CompiledQuery {
    // Scalar subqueries rather than joins: one row per user whatever their addresses and groups,
    // each served by an index on the subject (user_emails_pk, group_members_subject). Constants are
    // literals: SQLite ran the query four times slower with a bound LIMIT in the subqueries.
    const aggregate = this.dialect === 'postgres' ? sql.raw('json_agg') : sql.raw('json_group_array');
    let query = this.db
      .selectFrom('users')
      .selectAll('users')
      .select((eb) => {
        const primary = eb
          .selectFrom('user_emails')
          .whereRef('user_emails.subject_id', '=', 'users.subject_id')
          .where('is_primary', '=', sql.lit(1))
          .limit(sql.lit(1));
        return [
          primary.select('value').as('email_value'),
          primary.select('verified').as('email_verified'),
          sql<
            string | string[] | null
          >`(select ${aggregate}(user_groups.display_name order by user_groups.display_name_normalized)
          from group_members join user_groups on user_groups.id = group_members.group_id
          where group_members.subject_id = users.subject_id)`.as('group_names'),
        ];
      });
    if (shape === 'subject') query = query.where('subject_id', '=', SUBJECT_SLOT);
    else query = query.where('username_normalized', '=', USERNAME_SLOT);
    if (shape === 'usernameInTenant') query = query.where('tenant', '=', TENANT_SLOT);
    const compiled = query.limit(sql.lit(2)).compile();
    this.profileQueries.set(shape, compiled);
    return compiled;
  }

  async addUser(user: StoredUser): Promise<void> {
    await this.db.insertInto('users').values(toUserRow(user)).execute();
  }

  async findExternalLink(key: string): Promise<string | undefined> {
    const row = await this.db
      .selectFrom('external_links')
      .select('subject_id')
      .where('key', '=', key)
      .executeTakeFirst();
    return row?.subject_id;
  }

  async hasExternalLinks(provider: string): Promise<boolean> {
    // No index on provider: a rare management check (a new upstream provider's name) reads the table.
    const row = await this.db
      .selectFrom('external_links')
      .select('key')
      .where('provider', '=', provider)
      .limit(1)
      .executeTakeFirst();
    return row !== undefined;
  }

  async addExternalUser(link: ExternalLink, user: StoredUser, events?: readonly WebhookEvent[]): Promise<string> {
    return this.db.transaction().execute(async (trx) => {
      // The link first: of two first sign-ins at once, the second waits here for the first's
      // commit, then inserts nothing and takes the first's subject.
      const inserted = await trx
        .insertInto('external_links')
        .values({
          key: link.key,
          provider: link.provider,
          upstream_subject: link.upstreamSubject,
          subject_id: user.subjectId,
          created_at: nowSeconds(),
        })
        .onConflict((oc) => oc.column('key').doNothing())
        .executeTakeFirst();
      if (inserted.numInsertedOrUpdatedRows !== 1n) {
        const row = await trx
          .selectFrom('external_links')
          .select('subject_id')
          .where('key', '=', link.key)
          .executeTakeFirstOrThrow();
        return row.subject_id;
      }
      await trx.insertInto('users').values(toUserRow(user)).execute();
      await this.outbox?.append(trx, events);
      return user.subjectId;
    });
  }

  async addExternalLink(link: ExternalLink, subjectId: string): Promise<string> {
    await this.db
      .insertInto('external_links')
      .values({
        key: link.key,
        provider: link.provider,
        upstream_subject: link.upstreamSubject,
        subject_id: subjectId,
        created_at: nowSeconds(),
      })
      .onConflict((oc) => oc.column('key').doNothing())
      .execute();
    return (await this.findExternalLink(link.key)) ?? subjectId;
  }

  async listUsers(): Promise<StoredUser[]> {
    const rows = await this.db
      .selectFrom('users')
      .selectAll()
      .orderBy('tenant')
      .orderBy('username_normalized')
      .execute();
    return rows.map(toUser);
  }

  async removeUser(
    subjectId: string,
    events?: readonly WebhookEvent[],
    left?: (organizationIds: string[]) => WebhookEvent[],
  ): Promise<boolean> {
    return this.db.transaction().execute(async (trx) => {
      await trx.deleteFrom('external_links').where('subject_id', '=', subjectId).execute();
      await trx.deleteFrom('mfa_factors').where('subject_id', '=', subjectId).execute();
      // Their passkeys and security keys: a later user with the same subject gets none.
      await trx.deleteFrom('webauthn_credentials').where('subject_id', '=', subjectId).execute();
      // Their addresses and group memberships (0009_people): a later user with the same subject has
      // none; the groups they leave change (their SCIM version grows).
      await trx.deleteFrom('user_emails').where('subject_id', '=', subjectId).execute();
      const memberOf = trx.selectFrom('group_members').select('group_id').where('subject_id', '=', subjectId);
      await trx
        .updateTable('user_groups')
        .set({ version: sql<number>`version + 1` })
        .where('id', 'in', memberOf)
        .execute();
      await trx.deleteFrom('group_members').where('subject_id', '=', subjectId).execute();
      // Their organization memberships (0018_organizations): a later user with the same subject is
      // a member of nothing.
      const memberships = await trx
        .deleteFrom('organization_members')
        .where('subject', '=', subjectId)
        .returning('organization_id')
        .execute();
      const result = await trx.deleteFrom('users').where('subject_id', '=', subjectId).executeTakeFirst();
      if (result.numDeletedRows !== 1n) return false;
      await this.outbox?.append(trx, [...(left?.(memberships.map((m) => m.organization_id)) ?? []), ...(events ?? [])]);
      return true;
    });
  }

  async setPasswordHash(subjectId: string, passwordHash: string): Promise<boolean> {
    const result = await this.db
      .updateTable('users')
      .set({ password_hash: passwordHash })
      .where('subject_id', '=', subjectId)
      .executeTakeFirst();
    return result.numUpdatedRows === 1n;
  }

  async setUserActive(subjectId: string, active: boolean): Promise<boolean> {
    const result = await this.db
      .updateTable('users')
      .set({ is_active: active ? 1 : 0, version: sql<number>`version + 1`, updated_at: nowSeconds() })
      .where('subject_id', '=', subjectId)
      .executeTakeFirst();
    return result.numUpdatedRows === 1n;
  }

  async updateClaims(subjectId: string, claims: Record<string, unknown>): Promise<void> {
    await this.db
      .updateTable('users')
      .set({ claims: JSON.stringify(claims) })
      .where('subject_id', '=', subjectId)
      .execute();
  }
}

function toUserRow(user: StoredUser): Insertable<UsersTable> {
  const now = nowSeconds();
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
    passwordChangeRequired: Number(row.password_change_required) === 1,
  };
}
