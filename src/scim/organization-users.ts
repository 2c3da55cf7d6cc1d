/**
 * The Users of an organization's SCIM endpoint (`/scim/v2/organizations/{name}/Users`): its
 * members who are stored users, parsed, rendered and written as at /scim/v2 (`UserAdmin`, its
 * rules, its refusals as RFC 7644 §3.12 has them), with what belongs to the organization:
 *
 * - POST creates the user and makes them a member, marked as provisioned by this organization,
 *   in one transaction (`UserAdmin.create` with a membership): if the create fails nothing is
 *   stored. A userName any user holds (a member of another organization, a config-file or
 *   directory user) is 409 `uniqueness` (§3.3), never a link to that user.
 * - PUT and PATCH change only users this organization provisioned. Any other member (one added
 *   through the management API or an invitation, a member of another organization too, a user of
 *   the deployment) is read-only here, 403: another party's user's email changed through an
 *   organization would let that organization take the account over by a password reset.
 * - DELETE of a provisioned user deletes the user (their sessions end, their tokens are revoked,
 *   their other memberships go with them), as Keycloak 26 deletes an organization's "managed"
 *   members with their membership; DELETE of any other member ends only the membership, as
 *   Keycloak 26 removes an "unmanaged" member from an organization without deleting the user.
 * - `active: false` deactivates a provisioned user as at /scim/v2 (`UserAdmin.update`).
 * - A user's `groups` are their roles in the organization (its Groups); the ETag covers them
 *   (`versionTag`), since the user's version does not count them. `groups` cannot be filtered on:
 *   at /scim/v2 that filter reads the deployment's groups.
 */
import type { AdminAudit } from '../admin/user-types.js';
import { MAX_SUBJECT_LENGTH } from '../config/schema.js';
import { type Filter, ScimError } from '../protocol/scim-filter.js';
import type { DirectoryUser } from '../stores/directory.js';
import { type ListParams, listQuery } from './listing.js';
import type { OrganizationScimDeps, OrganizationScope } from './organization-scope.js';
import { versionTag } from './organization-scope.js';
import { applyPatch } from './patch.js';
import {
  changedAttributes,
  checkIfMatchTag,
  type Json,
  retried,
  type ScimResult,
  schemasOf,
  scimRefusal,
} from './representation.js';
import { USER_ATTRIBUTES, USER_SCHEMA } from './schemas.js';
import type { ScimActor } from './service.js';
import { listResponse, userInput, userResource } from './users.js';

/** A member who is a stored user, as read for one request. */
interface Member {
  user: DirectoryUser;
  roles: string[];
  provisioned: boolean;
}

/** The Users of one organization. */
export class OrganizationUsers {
  constructor(
    private readonly deps: OrganizationScimDeps,
    private readonly scope: OrganizationScope,
  ) {}

  private get organizationId(): string {
    return this.scope.organization.id;
  }

  /** A member's User resource. @throws ScimError 404 for anyone who is not a member and a stored user. */
  async get(id: string): Promise<ScimResult> {
    const member = await this.find(id);
    const resource = await this.resourceOf(member);
    return { resource, etag: String((resource.meta as Json).version) };
  }

  /** A ListResponse of the members (§3.4.2). @throws ScimError 400 for bad parameters or a filter on `groups`. */
  async list(params: ListParams): Promise<Json> {
    const q = listQuery(params);
    if (q.filter && namesGroups(q.filter))
      throw new ScimError(
        400,
        "the groups of an organization's users cannot be filtered; list its Groups",
        'invalidFilter',
      );
    const { total, users } = await this.deps.store.directory.listUsers({ ...q, organizationId: this.organizationId });
    const memberships = await this.deps.store.organizationGroups.memberships(
      this.organizationId,
      users.map((u) => u.subjectId),
    );
    const members = users.map((user) => ({ user, roles: [], provisioned: false, ...memberships.get(user.subjectId) }));
    return listResponse(total, q.startIndex, await this.resourcesOf(members), params);
  }

  /**
   * Creates a user as a member provisioned by this organization (§3.3), in one transaction.
   * @throws ScimError 400, 409 `uniqueness` for a taken userName, 503 as at /scim/v2.
   */
  async create(body: unknown, actor: ScimActor): Promise<ScimResult> {
    const { username, ...input } = userInput(schemasOf(body, USER_SCHEMA), undefined);
    let id: string;
    try {
      const membership = { organizationId: this.organizationId, provisioned: true };
      const options = { audit: this.auditOf(actor), strictNames: true, membership };
      ({ subjectId: id } = await this.deps.users.create({ username, ...input }, options));
    } catch (err) {
      throw scimRefusal(err, username);
    }
    const created = await this.get(id);
    const password = input.password !== undefined ? ['password'] : [];
    this.scope.audit('resource_created', actor, 'User', id, changedAttributes({}, created.resource, password));
    this.scope.memberChanged('organization.member_add', actor, id);
    return created;
  }

  /** Replaces a provisioned user (§3.5.1). @throws ScimError 404, 403 (not provisioned here), 412, 400, 409. */
  replace(id: string, body: unknown, ifMatch: string | undefined, actor: ScimActor): Promise<ScimResult> {
    const input = schemasOf(body, USER_SCHEMA);
    return retried(ifMatch, async () => {
      const before = await this.writable(id, ifMatch);
      return this.write(before, input, actor);
    });
  }

  /** Applies a PATCH to a provisioned user (§3.5.2). @throws ScimError as `replace`. */
  patch(id: string, body: unknown, ifMatch: string | undefined, actor: ScimActor): Promise<ScimResult> {
    return retried(ifMatch, async () => {
      const before = await this.writable(id, ifMatch);
      const patched = applyPatch(await this.resourceOf(before), body, USER_ATTRIBUTES, USER_SCHEMA);
      return this.write(before, patched, actor);
    });
  }

  /**
   * Deletes a provisioned user; ends any other member's membership only (see above).
   * @throws ScimError 404, 412.
   */
  async delete(id: string, ifMatch: string | undefined, actor: ScimActor): Promise<void> {
    const member = await this.find(id);
    checkIfMatchTag(ifMatch, versionTag(member.user.version, member.roles));
    try {
      if (member.provisioned) await this.deps.users.delete(id, this.auditOf(actor));
      else await this.deps.organizations.removeMember(this.scope.organization.name, id);
    } catch (err) {
      throw scimRefusal(err, member.user.username);
    }
    this.scope.audit('resource_deleted', actor, 'User', id, []);
    if (!member.provisioned) this.scope.memberChanged('organization.member_remove', actor, id);
  }

  /**
   * The member `id` as read, if this organization provisioned them and they are at `ifMatch`.
   * @throws ScimError 404, 403 for a member this organization did not provision, 412.
   */
  private async writable(id: string, ifMatch: string | undefined): Promise<Member> {
    const member = await this.find(id);
    if (!member.provisioned)
      throw new ScimError(
        403,
        "this user was not provisioned through this organization's SCIM endpoint: it may read the user and end the membership (DELETE), not change the user",
      );
    checkIfMatchTag(ifMatch, versionTag(member.user.version, member.roles));
    return member;
  }

  /** Writes `body` over `before` through `UserAdmin.update` if its version is still current; undefined when not. */
  private async write(before: Member, body: Json, actor: ScimActor): Promise<ScimResult | undefined> {
    const input = userInput(body, before.user);
    let written: unknown;
    try {
      const options = { audit: this.auditOf(actor), version: before.user.version };
      written = await this.deps.users.update(before.user.subjectId, input, options);
    } catch (err) {
      throw scimRefusal(err, input.username);
    }
    if (!written) return undefined;
    const after = await this.get(before.user.subjectId);
    const password = input.password !== undefined ? ['password'] : [];
    const changed = changedAttributes(await this.resourceOf(before), after.resource, password);
    this.scope.audit('resource_updated', actor, 'User', before.user.subjectId, changed);
    return after;
  }

  /** The member `id`. @throws ScimError 404, the same for a user of another organization as for no user. */
  private async find(id: string): Promise<Member> {
    // No subject has a control character, and PostgreSQL refuses a NUL in text.
    const wellFormed = id.length <= MAX_SUBJECT_LENGTH && !/[\u0000-\u001f\u007f]/.test(id);
    const membership = wellFormed
      ? (await this.deps.store.organizationGroups.memberships(this.organizationId, [id])).get(id)
      : undefined;
    const user = membership ? await this.deps.store.directory.user(id) : undefined;
    if (!membership || !user) throw new ScimError(404, `no user "${id}"`);
    return { user, ...membership };
  }

  private async resourceOf(member: Member): Promise<Json> {
    return (await this.resourcesOf([member]))[0] as Json;
  }

  /** The User resources of `members`, their groups their roles here (one read of the roles' Groups). */
  private async resourcesOf(members: readonly Member[]): Promise<Json[]> {
    const roles = [...new Set(members.flatMap((m) => m.roles))];
    const groups = new Map(
      (await this.deps.groups.named(this.organizationId, roles)).map((g) => [
        g.name,
        { id: g.id, displayName: g.name },
      ]),
    );
    return members.map((m) =>
      userResource(m.user, this.scope.base, {
        groups: m.roles.flatMap((r) => groups.get(r) ?? []),
        etag: versionTag(m.user.version, m.roles),
      }),
    );
  }

  /** Who makes a change, for `UserAdmin` (SCIM records the changes in its own events). */
  private auditOf(actor: ScimActor): AdminAudit {
    return { events: this.deps.events, endpoint: 'scim', ...actor, recordsChanges: true };
  }
}

/** Whether a filter names the `groups` attribute anywhere. */
function namesGroups(f: Filter): boolean {
  switch (f.kind) {
    case 'and':
    case 'or':
      return namesGroups(f.left) || namesGroups(f.right);
    case 'not':
      return namesGroups(f.filter);
    default:
      return f.path.attr.toLowerCase() === 'groups';
  }
}
