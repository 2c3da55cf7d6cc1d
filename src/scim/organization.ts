/**
 * SCIM 2.0 per organization: `/scim/v2/organizations/{name}/Users` and `/Groups`, the door an
 * organization's own identity provider (Entra ID, Okta) provisions its people through. The
 * endpoint lets only a client whose config names that organization (`organization`) in; here every
 * read and write is held to the organization's id:
 *
 * - Users are the organization's members who are stored users (as at /scim/v2, config-file and
 *   directory users are no SCIM resources). Anyone else's id is 404, the same answer whether the
 *   user exists elsewhere or not. A user's `groups` are their roles in the organization, never the
 *   deployment's groups. `organization-users.ts`.
 * - Groups are the organization's roles (`admin/organization-groups.ts`). `organization-groups.ts`.
 * - Every change is audited as at /scim/v2 (`resource_created`, `resource_updated`,
 *   `resource_deleted`) with `organization` naming it; a membership made or ended also as the
 *   management API records it (`admin_changed`, `organization.member_add` / `member_remove`).
 *
 * Nothing is held per node: memberships, roles and users are read from the database at each
 * request, so a change is in force on every node at once.
 */
import { emitAdminChange } from '../admin/audit.js';
import type { Organization } from '../organizations/organization.js';
import { OrganizationGroups } from './organization-groups.js';
import { type OrganizationScimDeps, type OrganizationScope, organizationScimBase } from './organization-scope.js';
import { OrganizationUsers } from './organization-users.js';
import type { ScimResources } from './service.js';

/** The SCIM resources of each organization. */
export class OrganizationScim {
  /** @param scimBase `<issuer>/scim/v2` */
  constructor(
    private readonly deps: OrganizationScimDeps,
    private readonly scimBase: string,
  ) {}

  /** The SCIM Users and Groups of `organization` (in force: the endpoint found it by name). */
  in(organization: Pick<Organization, 'id' | 'name'>): ScimResources {
    const { events } = this.deps;
    const scope: OrganizationScope = {
      organization,
      base: organizationScimBase(this.scimBase, organization.name),
      audit: (name, actor, type, id, changed) =>
        events.emit({
          name,
          endpoint: 'scim',
          clientId: actor.clientId,
          ...(actor.sub !== undefined ? { subjectId: actor.sub } : {}),
          target: { type, id },
          changed,
          organization: organization.name,
        }),
      memberChanged: (action, actor, subject) =>
        emitAdminChange(events, 'scim', actor, action, { type: 'organization', id: organization.name }, { subject }),
    };
    const users = new OrganizationUsers(this.deps, scope);
    const groups = new OrganizationGroups(this.deps, scope);
    return {
      getUser: (id) => users.get(id),
      listUsers: (params) => users.list(params),
      createUser: (body, actor) => users.create(body, actor),
      replaceUser: (id, body, ifMatch, actor) => users.replace(id, body, ifMatch, actor),
      patchUser: (id, body, ifMatch, actor) => users.patch(id, body, ifMatch, actor),
      deleteUser: (id, ifMatch, actor) => users.delete(id, ifMatch, actor),
      getGroup: (id) => groups.get(id),
      listGroups: (params) => groups.list(params),
      createGroup: (body, actor) => groups.create(body, actor),
      replaceGroup: (id, body, ifMatch, actor) => groups.replace(id, body, ifMatch, actor),
      patchGroup: (id, body, ifMatch, actor) => groups.patch(id, body, ifMatch, actor),
      deleteGroup: (id, ifMatch, actor) => groups.delete(id, ifMatch, actor),
    };
  }
}
