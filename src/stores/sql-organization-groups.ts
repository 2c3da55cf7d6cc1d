/**
 * An organization's roles as SCIM Groups (migration `0019_organization_scim`;
 * `admin/organization-groups.ts` is the one door to them), and which members SCIM provisioned.
 *
 * - A Group is a row of `organization_groups`: its stable id (random, kept through a rename), the
 *   role name, externalId and version. Who holds a role stays where tokens read it,
 *   `organization_members.roles`: a Group's members are the members whose roles list its name.
 * - A Group's write is one transaction: its row and every membership whose roles it changes. A
 *   membership is rewritten only if its roles are still the ones read (`where roles = <read>`), so a
 *   concurrent change of a member (the admin API, an invitation) is never overwritten unseen: the
 *   transaction is rolled back and the caller tries again.
 * - Every membership write elsewhere adds the rows of its roles (`addRoleGroups`), so every role in
 *   use is a Group.
 */
import { type Kysely, sql, type Transaction } from 'kysely';
import { newId, nowSeconds } from '../crypto/handles.js';
import { isUniqueViolation } from './sql-support.js';
import type { Database } from './tables.js';
import type {
  OrganizationGroup,
  OrganizationGroupRefusal,
  OrganizationGroupStore,
  OrganizationRoleHolder,
} from './types.js';

/** A refusal found inside a transaction: thrown to roll it back, returned by the caller. */
class Refused {
  constructor(readonly refusal: OrganizationGroupRefusal) {}
}

/**
 * Adds a Group row for each of `roles` of organization `organizationId` that has none (a new
 * random id each). Called before a membership with these roles is written.
 */
export async function addRoleGroups(
  db: Kysely<Database>,
  organizationId: string,
  roles: readonly string[],
): Promise<void> {
  if (roles.length === 0) return;
  const now = nowSeconds();
  await db
    .insertInto('organization_groups')
    .values(
      roles.map((name) => ({
        id: newId(),
        organization_id: organizationId,
        name,
        external_id: null,
        version: 1,
        created_at: now,
        updated_at: now,
      })),
    )
    .onConflict((oc) => oc.columns(['organization_id', 'name']).doNothing())
    .execute();
}

/**
 * A LIKE pattern that every roles column holding `role` matches (its JSON string, `\` escaping
 * LIKE's wildcards): narrows the memberships read; the roles are then compared exactly.
 */
function holding(role: string): string {
  return `%${JSON.stringify(role).replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}

/** `OrganizationGroupStore` over the SQL store's database (SQLite or PostgreSQL). */
export class SqlOrganizationGroups implements OrganizationGroupStore {
  constructor(private readonly db: Kysely<Database>) {}

  async list(organizationId: string): Promise<OrganizationGroup[]> {
    const rows = await this.db
      .selectFrom('organization_groups')
      .selectAll()
      .where('organization_id', '=', organizationId)
      .orderBy('name')
      .execute();
    return rows.map(toGroup);
  }

  async get(organizationId: string, id: string): Promise<OrganizationGroup | undefined> {
    const row = await this.db
      .selectFrom('organization_groups')
      .selectAll()
      .where('organization_id', '=', organizationId)
      .where('id', '=', id)
      .executeTakeFirst();
    return row === undefined ? undefined : toGroup(row);
  }

  async named(organizationId: string, names: readonly string[]): Promise<OrganizationGroup[]> {
    if (names.length === 0) return [];
    const rows = await this.db
      .selectFrom('organization_groups')
      .selectAll()
      .where('organization_id', '=', organizationId)
      .where('name', 'in', names)
      .orderBy('name')
      .execute();
    return rows.map(toGroup);
  }

  async holders(organizationId: string, role?: string): Promise<OrganizationRoleHolder[]> {
    let query = this.db
      .selectFrom('organization_members')
      .innerJoin('users', 'users.subject_id', 'organization_members.subject')
      .select(['organization_members.subject', 'users.username', 'organization_members.roles'])
      .where('organization_members.organization_id', '=', organizationId);
    if (role !== undefined)
      query = query.where(sql<boolean>`organization_members.roles like ${holding(role)} escape '\\'`);
    const rows = await query.orderBy('organization_members.subject').execute();
    return rows
      .map((r) => ({ subject: r.subject, username: r.username, roles: JSON.parse(r.roles) as string[] }))
      .filter((h) => role === undefined || h.roles.includes(role));
  }

  async memberships(
    organizationId: string,
    subjects: readonly string[],
  ): Promise<Map<string, { roles: string[]; provisioned: boolean }>> {
    const found = new Map<string, { roles: string[]; provisioned: boolean }>();
    for (let i = 0; i < subjects.length; i += 500) {
      const rows = await this.db
        .selectFrom('organization_members')
        .select(['subject', 'roles', 'provisioned'])
        .where('organization_id', '=', organizationId)
        .where('subject', 'in', subjects.slice(i, i + 500))
        .execute();
      for (const r of rows)
        found.set(r.subject, { roles: JSON.parse(r.roles) as string[], provisioned: Number(r.provisioned) === 1 });
    }
    return found;
  }

  create(
    organizationId: string,
    group: { id: string; name: string; externalId: string | null },
    members: readonly string[],
    maxRoles: number,
  ): Promise<OrganizationGroupRefusal | undefined> {
    return this.write(async (trx) => {
      const now = nowSeconds();
      await trx
        .insertInto('organization_groups')
        .values({
          id: group.id,
          organization_id: organizationId,
          name: group.name,
          external_id: group.externalId,
          version: 1,
          created_at: now,
          updated_at: now,
        })
        .execute();
      for (const subject of members) await editRoles(trx, organizationId, subject, (r) => [...r, group.name], maxRoles);
    });
  }

  replace(
    organizationId: string,
    id: string,
    version: number,
    next: { before: string; name: string; externalId: string | null },
    members: { add: readonly string[]; remove: readonly string[] },
    maxRoles: number,
  ): Promise<OrganizationGroupRefusal | undefined> {
    return this.write(async (trx) => {
      const updated = await trx
        .updateTable('organization_groups')
        .set({ name: next.name, external_id: next.externalId, version: version + 1, updated_at: nowSeconds() })
        .where('organization_id', '=', organizationId)
        .where('id', '=', id)
        .where('version', '=', version)
        .where('name', '=', next.before)
        .executeTakeFirst();
      if (updated.numUpdatedRows !== 1n) throw new Refused({ reason: 'changed' });
      // A rename renames the role of every member holding it, also of members no SCIM list shows
      // (config-file and directory users): the Group is the role.
      if (next.name !== next.before)
        await this.editHolders(trx, organizationId, next.before, (r) =>
          r.map((x) => (x === next.before ? next.name : x)),
        );
      for (const subject of members.add)
        await editRoles(trx, organizationId, subject, (r) => [...r, next.name], maxRoles);
      for (const subject of members.remove)
        await editRoles(trx, organizationId, subject, (r) => r.filter((x) => x !== next.name), maxRoles);
    });
  }

  async remove(organizationId: string, id: string, version: number): Promise<OrganizationGroupRefusal | undefined> {
    return this.write(async (trx) => {
      const row = await trx
        .selectFrom('organization_groups')
        .select('name')
        .where('organization_id', '=', organizationId)
        .where('id', '=', id)
        .where('version', '=', version)
        .executeTakeFirst();
      if (row === undefined) throw new Refused({ reason: 'changed' });
      await trx.deleteFrom('organization_groups').where('id', '=', id).execute();
      await this.editHolders(trx, organizationId, row.name, (r) => r.filter((x) => x !== row.name));
    });
  }

  /** Rewrites the roles of every member of the organization holding `role`, by `edit`. */
  private async editHolders(
    trx: Transaction<Database>,
    organizationId: string,
    role: string,
    edit: (roles: string[]) => string[],
  ): Promise<void> {
    const rows = await trx
      .selectFrom('organization_members')
      .select(['subject', 'roles'])
      .where('organization_id', '=', organizationId)
      .where(sql<boolean>`roles like ${holding(role)} escape '\\'`)
      .execute();
    for (const r of rows)
      if ((JSON.parse(r.roles) as string[]).includes(role))
        await editRoles(trx, organizationId, r.subject, edit, Number.POSITIVE_INFINITY);
  }

  /**
   * Runs `change` in a transaction; a `Refused` it throws (or a unique violation: a role of that
   * name exists) rolls everything back and is returned.
   */
  private async write(
    change: (trx: Transaction<Database>) => Promise<void>,
  ): Promise<OrganizationGroupRefusal | undefined> {
    try {
      await this.db.transaction().execute(change);
      return undefined;
    } catch (err) {
      if (err instanceof Refused) return err.refusal;
      if (isUniqueViolation(err)) return { reason: 'name_taken' };
      throw err;
    }
  }
}

/**
 * Rewrites one member's roles by `edit` (duplicates dropped), if they are still the roles read.
 * @throws Refused `not_member` when `subject` is no member, `too_many_roles` beyond `maxRoles`,
 *   `changed` when the roles changed since they were read.
 */
async function editRoles(
  trx: Transaction<Database>,
  organizationId: string,
  subject: string,
  edit: (roles: string[]) => string[],
  maxRoles: number,
): Promise<void> {
  const row = await trx
    .selectFrom('organization_members')
    .select('roles')
    .where('organization_id', '=', organizationId)
    .where('subject', '=', subject)
    .executeTakeFirst();
  if (row === undefined) throw new Refused({ reason: 'not_member', subject });
  const before = JSON.parse(row.roles) as string[];
  const after = [...new Set(edit(before))];
  if (after.length === before.length && after.every((r, i) => r === before[i])) return;
  if (after.length > maxRoles && after.length > before.length) throw new Refused({ reason: 'too_many_roles', subject });
  const updated = await trx
    .updateTable('organization_members')
    .set({ roles: JSON.stringify(after) })
    .where('organization_id', '=', organizationId)
    .where('subject', '=', subject)
    .where('roles', '=', row.roles)
    .executeTakeFirst();
  if (updated.numUpdatedRows !== 1n) throw new Refused({ reason: 'changed' });
}

function toGroup(row: {
  id: string;
  name: string;
  external_id: string | null;
  version: number;
  created_at: number;
  updated_at: number;
}): OrganizationGroup {
  return {
    id: row.id,
    name: row.name,
    externalId: row.external_id,
    version: Number(row.version),
    createdAt: Number(row.created_at),
    updatedAt: Number(row.updated_at),
  };
}
