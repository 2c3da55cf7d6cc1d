/**
 * What the SCIM resources of one organization share (`organization.ts`, `organization-users.ts`,
 * `organization-groups.ts`): their collaborators, the organization they are held to with its base
 * URL and audit, and the ETags of representations that show more than a version counts.
 */
import type { OrganizationGroupAdmin } from '../admin/organization-groups.js';
import type { OrganizationAdmin } from '../admin/organizations.js';
import type { UserAdmin } from '../admin/users.js';
import { sha256 } from '../crypto/handles.js';
import type { EventBus } from '../events/events.js';
import type { Organization } from '../organizations/organization.js';
import type { Store } from '../stores/types.js';
import type { ScimActor } from './service.js';

/** What the SCIM resources of an organization work with. */
export interface OrganizationScimDeps {
  store: Pick<Store, 'directory' | 'organizationGroups'>;
  events: EventBus;
  /** Writes the users, with their rules, as every door does. */
  users: Pick<UserAdmin, 'create' | 'update' | 'delete'>;
  /** Ends a membership (a member SCIM did not provision). */
  organizations: Pick<OrganizationAdmin, 'removeMember'>;
  /** Writes the organization's roles as groups. */
  groups: OrganizationGroupAdmin;
}

/** One organization's SCIM resources: its id and name, its base URL, and how its changes are audited. */
export interface OrganizationScope {
  organization: Pick<Organization, 'id' | 'name'>;
  /** `<issuer>/scim/v2/organizations/<name>`: `meta.location` and `$ref` are under it. */
  base: string;
  /** Emits a `resource_*` event naming the organization. */
  audit(
    name: 'resource_created' | 'resource_updated' | 'resource_deleted',
    actor: ScimActor,
    type: 'User' | 'Group',
    id: string,
    changed: string[],
  ): void;
  /** Emits the `admin_changed` event of a membership made or ended (`organization.member_add`, `member_remove`). */
  memberChanged(
    action: 'organization.member_add' | 'organization.member_remove',
    actor: ScimActor,
    subject: string,
  ): void;
}

/** The SCIM base URL of the organization `name`: `<scimBase>/organizations/<name>`. */
export function organizationScimBase(scimBase: string, name: string): string {
  return `${scimBase}/organizations/${encodeURIComponent(name)}`;
}

/**
 * A weak ETag (RFC 7644 §3.14) of a version and the values beside it that the representation
 * shows but the version does not count (a member's roles, a group's members): `W/"<version>-<hash>"`.
 */
export function versionTag(version: number, beside: readonly string[]): string {
  const digest = sha256(JSON.stringify([...beside].sort()))
    .subarray(0, 6)
    .toString('base64url');
  return `W/"${version}-${digest}"`;
}
