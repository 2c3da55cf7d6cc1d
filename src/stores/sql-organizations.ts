/**
 * Organizations managed at run time and the members of every organization (migration
 * `0018_organizations`; `admin/organizations.ts` is the one door to them).
 *
 * - An organization is a row of `organizations` (id, unique name, settings as JSON text, version)
 *   and one row of `organization_domains` per domain, whose primary key gives a domain one owner.
 * - Every write of an organization raises the `admin_versions` row `organizations` first, in its
 *   own transaction: that takes the row's lock (PostgreSQL) or the write lock (SQLite) before
 *   anything is read, so writers of organizations follow one another and the check of a domain's
 *   owner sees every write committed before. Each node polls the counter to re-read them.
 * - Members are rows of `organization_members` keyed by organization id and subject, of stored
 *   and config-file organizations alike (a config-file one has no row in `organizations`). Each
 *   role a membership write names gets its SCIM Group row first (`sql-organization-groups.ts`);
 *   the `provisioned` mark is written only with the user (`directory.ts`), never here.
 */
import { type Kysely, type SqlBool, sql, type Transaction } from 'kysely';
import { nowSeconds } from '../crypto/handles.js';
import type { WebhookEvent } from '../events/webhook-events.js';
import { addRoleGroups } from './sql-organization-groups.js';
import { raiseChangeCounter, readChangeCounter } from './sql-support.js';
import type { Database } from './tables.js';
import type { SqlWebhookOutbox } from './webhook-outbox.js';
import type {
  OrganizationMember,
  OrganizationRefusal,
  OrganizationSettings,
  OrganizationStore,
  StoredOrganization,
} from './types.js';

/** How many memberships `membershipsWithRole` reads at a time. */
const ROLE_PAGE = 100;

/** A refusal found inside a transaction: thrown to roll it back, returned by the caller. */
class Refused {
  constructor(readonly refusal: OrganizationRefusal) {}
}

/** `OrganizationStore` over the SQL store's database (SQLite or PostgreSQL). */
export class SqlOrganizations implements OrganizationStore {
  /** @param outbox where membership changes put their webhook events, in their transaction */
  constructor(
    private readonly db: Kysely<Database>,
    private readonly outbox?: SqlWebhookOutbox,
  ) {}

  async list(): Promise<StoredOrganization[]> {
    const rows = await this.db
      .selectFrom('organizations')
      .select(['id', 'name', 'settings', 'version'])
      .orderBy('name')
      .execute();
    return rows.map(toOrganization);
  }

  async get(name: string): Promise<StoredOrganization | undefined> {
    const row = await this.db
      .selectFrom('organizations')
      .select(['id', 'name', 'settings', 'version'])
      .where('name', '=', name)
      .executeTakeFirst();
    return row === undefined ? undefined : toOrganization(row);
  }

  add({ id, name, settings }: Omit<StoredOrganization, 'version'>): Promise<OrganizationRefusal | undefined> {
    return this.write(async (trx) => {
      const now = nowSeconds();
      const inserted = await trx
        .insertInto('organizations')
        .values({ id, name, settings: JSON.stringify(settings), version: 1, created_at: now, updated_at: now })
        .onConflict((oc) => oc.doNothing())
        .executeTakeFirst();
      if (inserted.numInsertedOrUpdatedRows !== 1n) throw new Refused({ reason: 'name_taken' });
      await claimDomains(trx, id, settings.domains);
    });
  }

  update(id: string, version: number, settings: OrganizationSettings): Promise<OrganizationRefusal | undefined> {
    return this.write(async (trx) => {
      const updated = await trx
        .updateTable('organizations')
        .set({ settings: JSON.stringify(settings), version: version + 1, updated_at: nowSeconds() })
        .where('id', '=', id)
        .where('version', '=', version)
        .executeTakeFirst();
      if (updated.numUpdatedRows !== 1n) throw new Refused({ reason: 'changed' });
      await trx.deleteFrom('organization_domains').where('organization_id', '=', id).execute();
      await claimDomains(trx, id, settings.domains);
    });
  }

  async remove(id: string, version: number, left?: (subjects: string[]) => WebhookEvent[]): Promise<boolean> {
    const refusal = await this.write(async (trx) => {
      const removed = await trx
        .deleteFrom('organizations')
        .where('id', '=', id)
        .where('version', '=', version)
        .executeTakeFirst();
      if (removed.numDeletedRows !== 1n) throw new Refused({ reason: 'changed' });
      await trx.deleteFrom('organization_domains').where('organization_id', '=', id).execute();
      const members = await trx
        .deleteFrom('organization_members')
        .where('organization_id', '=', id)
        .returning('subject')
        .execute();
      if (left) await this.outbox?.append(trx, left(members.map((m) => m.subject)));
      await trx.deleteFrom('organization_groups').where('organization_id', '=', id).execute();
    });
    return refusal === undefined;
  }

  version(): Promise<number> {
    return readChangeCounter(this.db, 'organizations');
  }

  async members(organizationId: string, page: { after?: string; limit: number }): Promise<OrganizationMember[]> {
    let query = this.db
      .selectFrom('organization_members')
      .select(['subject', 'roles'])
      .where('organization_id', '=', organizationId);
    if (page.after !== undefined) query = query.where('subject', '>', page.after);
    const rows = await query.orderBy('subject').limit(page.limit).execute();
    return rows.map((r) => ({ subject: r.subject, roles: JSON.parse(r.roles) as string[] }));
  }

  async member(organizationId: string, subject: string): Promise<OrganizationMember | undefined> {
    const row = await this.db
      .selectFrom('organization_members')
      .select(['subject', 'roles'])
      .where('organization_id', '=', organizationId)
      .where('subject', '=', subject)
      .executeTakeFirst();
    return row === undefined ? undefined : { subject: row.subject, roles: JSON.parse(row.roles) as string[] };
  }

  async memberships(subject: string, limit: number): Promise<{ organizationId: string; roles: string[] }[]> {
    // The index organization_members_subject serves this.
    const rows = await this.db
      .selectFrom('organization_members')
      .select(['organization_id', 'roles'])
      .where('subject', '=', subject)
      .orderBy('organization_id')
      .limit(limit)
      .execute();
    return rows.map((r) => ({ organizationId: r.organization_id, roles: JSON.parse(r.roles) as string[] }));
  }

  async addMember(
    organizationId: string,
    subject: string,
    roles: readonly string[],
    events?: readonly WebhookEvent[],
  ): Promise<boolean> {
    await addRoleGroups(this.db, organizationId, roles);
    return this.db.transaction().execute(async (trx) => {
      const inserted = await trx
        .insertInto('organization_members')
        .values({ organization_id: organizationId, subject, roles: JSON.stringify(roles), created_at: nowSeconds() })
        .onConflict((oc) => oc.columns(['organization_id', 'subject']).doNothing())
        .executeTakeFirst();
      if (inserted.numInsertedOrUpdatedRows !== 1n) return false;
      await this.outbox?.append(trx, events);
      return true;
    });
  }

  async putMember(
    organizationId: string,
    subject: string,
    roles: readonly string[],
    events?: readonly WebhookEvent[],
  ): Promise<'added' | 'replaced'> {
    if (await this.addMember(organizationId, subject, roles, events)) return 'added';
    // addMember added the Groups of the roles (0019_organization_scim).
    // A removal between the two statements leaves no member: as if it came after this replacement.
    await this.db
      .updateTable('organization_members')
      .set({ roles: JSON.stringify(roles) })
      .where('organization_id', '=', organizationId)
      .where('subject', '=', subject)
      .execute();
    return 'replaced';
  }

  async replaceRoles(organizationId: string, subject: string, roles: readonly string[]): Promise<boolean> {
    await addRoleGroups(this.db, organizationId, roles);
    const result = await this.db
      .updateTable('organization_members')
      .set({ roles: JSON.stringify(roles) })
      .where('organization_id', '=', organizationId)
      .where('subject', '=', subject)
      .executeTakeFirst();
    return result.numUpdatedRows === 1n;
  }

  async holdsRole(subject: string, role: string): Promise<boolean> {
    return (await this.membershipsWithRole(subject, role, 1)).length > 0;
  }

  async membershipsWithRole(subject: string, role: string, limit: number): Promise<{ organizationId: string }[]> {
    // The roles are JSON text: a LIKE on the quoted name narrows the rows, the parsed roles decide
    // (another role's text may hold the quoted name, `x"admin`, and SQLite's LIKE ignores case).
    const pattern = `%${JSON.stringify(role).replace(/[!%_]/g, (c) => `!${c}`)}%`;
    const out: { organizationId: string }[] = [];
    let after: string | undefined;
    for (;;) {
      let query = this.db
        .selectFrom('organization_members')
        .select(['organization_id', 'roles'])
        .where('subject', '=', subject)
        .where(sql<SqlBool>`roles like ${pattern} escape '!'`);
      if (after !== undefined) query = query.where('organization_id', '>', after);
      const rows = await query.orderBy('organization_id').limit(ROLE_PAGE).execute();
      for (const r of rows) {
        if (!(JSON.parse(r.roles) as string[]).includes(role)) continue;
        out.push({ organizationId: r.organization_id });
        if (out.length >= limit) return out;
      }
      if (rows.length < ROLE_PAGE) return out;
      after = rows.at(-1)?.organization_id;
    }
  }

  async removeMember(organizationId: string, subject: string, events?: readonly WebhookEvent[]): Promise<boolean> {
    return this.db.transaction().execute(async (trx) => {
      const result = await trx
        .deleteFrom('organization_members')
        .where('organization_id', '=', organizationId)
        .where('subject', '=', subject)
        .executeTakeFirst();
      if (result.numDeletedRows !== 1n) return false;
      await this.outbox?.append(trx, events);
      return true;
    });
  }

  /**
   * Runs `change` in a transaction after raising the change counter (which orders the writers of
   * organizations, see above); a `Refused` it throws rolls everything back and is returned.
   */
  private async write(change: (trx: Transaction<Database>) => Promise<void>): Promise<OrganizationRefusal | undefined> {
    try {
      await this.db.transaction().execute(async (trx) => {
        await raiseChangeCounter(trx, 'organizations');
        await change(trx);
      });
      return undefined;
    } catch (err) {
      if (err instanceof Refused) return err.refusal;
      throw err;
    }
  }
}

/**
 * Records `domains` as the domains of organization `id`.
 * @throws Refused `domain_taken` naming the first domain another stored organization holds.
 */
async function claimDomains(trx: Transaction<Database>, id: string, domains: readonly string[]): Promise<void> {
  if (domains.length === 0) return;
  const held = await trx
    .selectFrom('organization_domains')
    .innerJoin('organizations', 'organizations.id', 'organization_domains.organization_id')
    .select(['organization_domains.domain', 'organizations.name'])
    .where('organization_domains.domain', 'in', domains)
    .where('organization_domains.organization_id', '<>', id)
    .orderBy('organization_domains.domain')
    .executeTakeFirst();
  if (held !== undefined) throw new Refused({ reason: 'domain_taken', domain: held.domain, organization: held.name });
  await trx
    .insertInto('organization_domains')
    .values(domains.map((domain) => ({ domain, organization_id: id })))
    .execute();
}

function toOrganization(row: { id: string; name: string; settings: string; version: number }): StoredOrganization {
  return {
    id: row.id,
    name: row.name,
    settings: JSON.parse(row.settings) as OrganizationSettings,
    version: Number(row.version),
  };
}
