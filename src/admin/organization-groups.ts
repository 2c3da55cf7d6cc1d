/**
 * An organization's roles as groups: the one door to them (SCIM per organization,
 * `scim/organization.ts`). A group's name is a role name of the organization (the rules of a
 * member's roles, `organization-members.ts`), its members are the members holding that role, and
 * changing a group changes those members' roles in the organization, and nothing outside it: never
 * a deployment group, never the users' `role` claim.
 *
 * - The organization's own admin role (`admin`, which makes a member an organization admin of
 *   that organization only) may be given: it is the organization's to give, as Keycloak 26 and
 *   Auth0 let an organization's provisioning assign its own roles. The deployment's admin role
 *   (config `admin.userRole`) may never be a group's name, whatever case, and a group of that
 *   name (a role an operator gave through the management API) is read-only here: no path through
 *   an organization comes near it, even though organization roles never join the `role` claim.
 * - Members are the organization's members who are stored users: the users its SCIM lists show.
 *   Config-file and directory users who are members keep their roles as they are, but a rename or
 *   removal of a group renames or removes the role for every holder.
 * - Every write is one transaction (`stores/sql-organization-groups.ts`) read on every node at its
 *   next request: there is no per-node copy of memberships.
 */
import type { OrganizationGroup, OrganizationGroupRefusal, Store } from '../stores/types.js';
import { newId } from '../crypto/handles.js';
import { AdminError } from './errors.js';
import { MAX_MEMBER_ROLES, parseRoles } from './organization-members.js';

/** A group with its members (stored users holding its role), by subject. */
export interface OrganizationGroupView extends OrganizationGroup {
  members: { subject: string; username: string }[];
}

/** What a group write sets: its name (the role), externalId, and its members' subjects. */
export interface OrganizationGroupWrite {
  name: string;
  externalId: string | null;
  members: readonly string[];
}

/** Lists and writes an organization's roles as groups. */
export class OrganizationGroupAdmin {
  /**
   * @param adminRole config `admin.userRole`, which no group may be named
   */
  constructor(
    private readonly store: Pick<Store, 'organizationGroups'>,
    private readonly adminRole: string,
  ) {}

  /** Every group of the organization `organizationId`, by name, with its members. */
  async list(organizationId: string): Promise<OrganizationGroupView[]> {
    const [groups, holders] = await Promise.all([
      this.store.organizationGroups.list(organizationId),
      this.store.organizationGroups.holders(organizationId),
    ]);
    return groups.map((g) => ({
      ...g,
      members: holders.filter((h) => h.roles.includes(g.name)).map(({ subject, username }) => ({ subject, username })),
    }));
  }

  /**
   * One group of the organization.
   * @throws AdminError `not_found` (also for another organization's group id).
   */
  async get(organizationId: string, id: string): Promise<OrganizationGroupView> {
    const group = await this.store.organizationGroups.get(organizationId, id);
    if (!group) throw new AdminError('not_found', `no group "${id}"`);
    const holders = await this.store.organizationGroups.holders(organizationId, group.name);
    return { ...group, members: holders.map(({ subject, username }) => ({ subject, username })) };
  }

  /** The groups of these role names of the organization (a member's groups). */
  named(organizationId: string, roles: readonly string[]): Promise<OrganizationGroup[]> {
    return this.store.organizationGroups.named(organizationId, roles);
  }

  /**
   * Adds a group and gives its role to its members.
   * @returns the new group's id.
   * @throws AdminError `invalid` (field `name`: no role name, or the deployment's admin role;
   *   `members`: not members of the organization who are stored users, or holding
   *   MAX_MEMBER_ROLES roles already), `conflict` (field `name`: a group of that name, any case).
   */
  async create(organizationId: string, write: OrganizationGroupWrite): Promise<string> {
    this.checkName(write.name);
    const existing = await this.store.organizationGroups.list(organizationId);
    if (existing.some((g) => g.name.toLowerCase() === write.name.toLowerCase())) throw nameTaken(write.name);
    await this.checkMembers(organizationId, write.members);
    const id = newId();
    const group = { id, name: write.name, externalId: write.externalId };
    refuse(
      await this.store.organizationGroups.create(organizationId, group, write.members, MAX_MEMBER_ROLES),
      write.name,
    );
    return id;
  }

  /**
   * Replaces a group as read (`before`): its name (the role renamed for every holder),
   * externalId, and who holds it among the stored users.
   * @returns false when the group or a member changed since `before` was read (nothing changed).
   * @throws AdminError as `create`; `read_only` for a group named as the deployment's admin role.
   */
  async replace(
    organizationId: string,
    before: OrganizationGroupView,
    write: OrganizationGroupWrite,
  ): Promise<boolean> {
    this.checkWritable(before);
    if (write.name !== before.name) {
      this.checkName(write.name);
      const existing = await this.store.organizationGroups.list(organizationId);
      if (existing.some((g) => g.id !== before.id && g.name.toLowerCase() === write.name.toLowerCase()))
        throw nameTaken(write.name);
    }
    await this.checkMembers(organizationId, write.members);
    const had = new Set(before.members.map((m) => m.subject));
    const wanted = new Set(write.members);
    const change = {
      add: [...wanted].filter((s) => !had.has(s)),
      remove: [...had].filter((s) => !wanted.has(s)),
    };
    const next = { before: before.name, name: write.name, externalId: write.externalId };
    const refused = await this.store.organizationGroups.replace(
      organizationId,
      before.id,
      before.version,
      next,
      change,
      MAX_MEMBER_ROLES,
    );
    if (refused?.reason === 'changed') return false;
    refuse(refused, write.name);
    return true;
  }

  /**
   * Removes a group as read: its role is taken from every holder.
   * @returns false when the group changed since it was read (nothing changed).
   * @throws AdminError `read_only` for a group named as the deployment's admin role.
   */
  async remove(organizationId: string, before: OrganizationGroup): Promise<boolean> {
    this.checkWritable(before);
    const refused = await this.store.organizationGroups.remove(organizationId, before.id, before.version);
    return refused === undefined;
  }

  /**
   * @throws AdminError `read_only` for a group named as the deployment's admin role: an operator
   *   may give an organization role of that name through the management API, but no change
   *   through an organization may add to it or take it away.
   */
  private checkWritable(group: OrganizationGroup): void {
    if (group.name.toLowerCase() === this.adminRole.toLowerCase())
      throw new AdminError(
        'read_only',
        `the group "${group.name}" has the name of the deployment's admin role (admin.userRole): only the management API changes it`,
      );
  }

  /** @throws AdminError `invalid` (field `name`) unless a role name that is not the deployment's admin role. */
  private checkName(name: string): void {
    try {
      parseRoles([name]);
    } catch (err) {
      if (!(err instanceof AdminError)) throw err;
      throw new AdminError(
        'invalid',
        `a group's name is a role name: ${err.problems?.[0]?.message ?? err.message}`,
        'name',
      );
    }
    if (name.toLowerCase() === this.adminRole.toLowerCase())
      throw new AdminError(
        'invalid',
        `a group may not be named "${this.adminRole}" (the deployment's admin role, admin.userRole)`,
        'name',
      );
  }

  /** @throws AdminError `invalid` (field `members`) for a subject that is no stored user's membership here. */
  private async checkMembers(organizationId: string, members: readonly string[]): Promise<void> {
    if (members.length === 0) return;
    const holders = new Set((await this.store.organizationGroups.holders(organizationId)).map((h) => h.subject));
    const stranger = members.find((m) => !holders.has(m));
    // The same answer for a user of another organization and for no user at all.
    if (stranger !== undefined)
      throw new AdminError('invalid', `member "${stranger}" is not a user of this organization`, 'members');
  }
}

function nameTaken(name: string): AdminError {
  return new AdminError('conflict', `a group named "${name}" exists`, 'name');
}

/** @throws AdminError for a store refusal other than `changed` (the caller's). */
function refuse(refused: OrganizationGroupRefusal | undefined, name: string): void {
  if (refused === undefined) return;
  switch (refused.reason) {
    case 'name_taken':
      throw nameTaken(name);
    case 'not_member':
      throw new AdminError('invalid', `member "${refused.subject}" is not a user of this organization`, 'members');
    case 'too_many_roles':
      throw new AdminError(
        'invalid',
        `member "${refused.subject}" holds ${MAX_MEMBER_ROLES} roles already, the most a member may`,
        'members',
      );
    case 'changed':
      throw new AdminError('precondition_failed', `group "${name}" changed meanwhile`);
  }
}
