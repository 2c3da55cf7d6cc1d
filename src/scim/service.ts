/**
 * The SCIM 2.0 service (RFC 7643, RFC 7644) over the stored users and groups: representations,
 * input validation, versions (ETags, §3.14), create, replace, PATCH, delete and lists, and the
 * SCIM audit events of every change (`resource_created`, `resource_updated`, `resource_deleted`).
 *
 * Users: the stored users (config-file users are not SCIM resources). SCIM parses and renders
 * them; `UserAdmin` writes them, with its rules: which userNames are free (stored users, config-file
 * users, the user directories), the password policy, and what deactivating a user means (their
 * sessions end with back-channel logout, their tokens are revoked, every later sign-in or grant is
 * refused as a wrong password is). Its refusals are answered here as RFC 7644 §3.12 has them.
 * `name.formatted`, `name.givenName`, `name.familyName` are the OIDC claims `name`, `given_name`,
 * `family_name`; `displayName` is the claim `display_name`; the primary email (else the first) is
 * the claim `email`, with `email_verified` from its verification state. Every read goes to the
 * database, so a change is in force on every node at once (there is no per-node user cache).
 *
 * Groups exist only here: SCIM provisions them, and the console's user pages use this service's
 * group operations too; their names join the members' `role` claim.
 */
import type { EventBus } from '../events/events.js';
import { MAX_SUBJECT_LENGTH } from '../config/schema.js';
import type { AdminAudit } from '../admin/user-types.js';
import type { UserAdmin } from '../admin/users.js';
import { newId, nowSeconds } from '../crypto/handles.js';
import { ScimError } from '../protocol/scim-filter.js';
import { DirectoryConflict, type DirectoryGroup, type DirectoryUser } from '../stores/directory.js';
import type { Store } from '../stores/types.js';
import { type ListParams, listQuery } from './listing.js';
import { listResponse, MAX_STRING, userInput, userResource } from './users.js';
import {
  groupResource,
  changedAttributes,
  checkIfMatch,
  etagOf,
  field,
  invalidValue,
  type Json,
  memberIdsOf,
  optionalString,
  retried,
  type ScimResult,
  schemasOf,
  scimRefusal,
} from './representation.js';
import { applyPatch } from './patch.js';
import { GROUP_ATTRIBUTES, GROUP_SCHEMA, MAX_COUNT, PATCH_OP, USER_ATTRIBUTES, USER_SCHEMA } from './schemas.js';

/** Who made a change (the management guard's caller). */
export interface ScimActor {
  clientId: string;
  sub?: string;
}

/**
 * The User and Group operations of one SCIM base URL (`/scim/v2`, or an organization's
 * `/scim/v2/organizations/{name}`): what the endpoint calls. Errors are `ScimError`s (RFC 7644 §3.12).
 */
export interface ScimResources {
  getUser(id: string): Promise<ScimResult>;
  listUsers(params: ListParams): Promise<Json>;
  createUser(body: unknown, actor: ScimActor): Promise<ScimResult>;
  replaceUser(id: string, body: unknown, ifMatch: string | undefined, actor: ScimActor): Promise<ScimResult>;
  patchUser(id: string, body: unknown, ifMatch: string | undefined, actor: ScimActor): Promise<ScimResult>;
  deleteUser(id: string, ifMatch: string | undefined, actor: ScimActor): Promise<void>;
  getGroup(id: string): Promise<ScimResult>;
  listGroups(params: ListParams): Promise<Json>;
  createGroup(body: unknown, actor: ScimActor): Promise<ScimResult>;
  replaceGroup(id: string, body: unknown, ifMatch: string | undefined, actor: ScimActor): Promise<ScimResult>;
  patchGroup(id: string, body: unknown, ifMatch: string | undefined, actor: ScimActor): Promise<ScimResult>;
  deleteGroup(id: string, ifMatch: string | undefined, actor: ScimActor): Promise<void>;
}

/** SCIM users and groups of the deployment, at `/scim/v2`. */
export class ScimService implements ScimResources {
  /**
   * @param base the SCIM base URL (`<issuer>/scim/v2`), for `meta.location` and `$ref`
   * @param users writes the users (`create`, `update`, `delete`) with their rules, as every door does
   */
  constructor(
    private readonly store: Pick<Store, 'directory'>,
    private readonly events: EventBus,
    private readonly users: Pick<UserAdmin, 'create' | 'update' | 'delete'>,
    private readonly base: string,
    /** `admin.userRole`: no group may carry it (see `groupInput`). */
    private readonly adminRole: string,
  ) {}

  // ---------------------------------------------------------------- users

  /** The user resource (§3.4.1). @throws ScimError 404. */
  async getUser(id: string): Promise<ScimResult> {
    const user = await this.findUser(id);
    return { resource: this.resourceOf(user), etag: etagOf(user.version) };
  }

  /** A ListResponse of users (§3.4.2). @throws ScimError 400 for bad parameters. */
  async listUsers(params: ListParams): Promise<Json> {
    const q = listQuery(params);
    const { total, users } = await this.store.directory.listUsers(q);
    return listResponse(
      total,
      q.startIndex,
      users.map((u) => this.resourceOf(u)),
      params,
    );
  }

  /**
   * Creates a user (§3.3) through `UserAdmin.create`.
   * @throws ScimError 400 (`invalidSyntax`, `invalidValue`, also for a password the policy
   *   refuses), 409 `uniqueness` for a taken userName (stored, config-file or directory user),
   *   503 when a user directory cannot say whether it holds the userName.
   */
  async createUser(body: unknown, actor: ScimActor): Promise<ScimResult> {
    const { username, ...input } = userInput(schemasOf(body, USER_SCHEMA), undefined);
    let id: string;
    try {
      const options = { audit: this.auditOf(actor), strictNames: true };
      ({ subjectId: id } = await this.users.create({ username, ...input }, options));
    } catch (err) {
      throw scimRefusal(err, username);
    }
    const created = await this.findUser(id);
    const resource = this.resourceOf(created);
    const changed = changedAttributes({}, resource, input.password !== undefined ? ['password'] : []);
    this.audit('resource_created', actor, 'User', id, changed);
    return { resource, etag: etagOf(created.version) };
  }

  /**
   * Replaces a user (§3.5.1): attributes left out are cleared, except the password (kept).
   * @throws ScimError 404, 412 (If-Match), 400, 409 `uniqueness`, 503 for a rename while a user
   *   directory cannot answer.
   */
  async replaceUser(id: string, body: unknown, ifMatch: string | undefined, actor: ScimActor): Promise<ScimResult> {
    const input = schemasOf(body, USER_SCHEMA);
    return retried(ifMatch, async () => {
      const before = await this.findUser(id);
      checkIfMatch(ifMatch, before.version);
      return this.writeUser(before, input, actor);
    });
  }

  /**
   * Applies a PATCH to a user (§3.5.2).
   * @throws ScimError 404, 412, 400 (`invalidSyntax`, `invalidPath`, `noTarget`, `mutability`, `invalidValue`), 409.
   */
  async patchUser(id: string, body: unknown, ifMatch: string | undefined, actor: ScimActor): Promise<ScimResult> {
    return retried(ifMatch, async () => {
      const before = await this.findUser(id);
      checkIfMatch(ifMatch, before.version);
      return this.writeUser(before, applyPatch(this.resourceOf(before), body, USER_ATTRIBUTES, USER_SCHEMA), actor);
    });
  }

  /**
   * Deletes a user (§3.6) through `UserAdmin.delete`: their sessions end (back-channel logout),
   * their tokens are revoked, their emails, memberships, factors and links go with them.
   * @throws ScimError 404, 412.
   */
  async deleteUser(id: string, ifMatch: string | undefined, actor: ScimActor): Promise<void> {
    const user = await this.findUser(id);
    checkIfMatch(ifMatch, user.version);
    try {
      await this.users.delete(id, this.auditOf(actor));
    } catch (err) {
      throw scimRefusal(err, user.username);
    }
    this.audit('resource_deleted', actor, 'User', id, []);
  }

  /**
   * Writes `body` over `before` through `UserAdmin.update` if its version is still current;
   * undefined when it is not.
   */
  private async writeUser(before: DirectoryUser, body: Json, actor: ScimActor): Promise<ScimResult | undefined> {
    const input = userInput(body, before);
    let written: unknown;
    try {
      const options = { audit: this.auditOf(actor), version: before.version };
      written = await this.users.update(before.subjectId, input, options);
    } catch (err) {
      throw scimRefusal(err, input.username);
    }
    // The version moved on between the read and the write: a concurrent change (§3.14).
    if (!written) return undefined;
    const after = await this.findUser(before.subjectId);
    const resource = this.resourceOf(after);
    const password = input.password !== undefined ? ['password'] : [];
    const changed = changedAttributes(this.resourceOf(before), resource, password);
    this.audit('resource_updated', actor, 'User', before.subjectId, changed);
    return { resource, etag: etagOf(after.version) };
  }

  private resourceOf(u: DirectoryUser): Json {
    return userResource(u, this.base);
  }

  private async findUser(id: string): Promise<DirectoryUser> {
    const user = id.length <= MAX_SUBJECT_LENGTH ? await this.store.directory.user(id) : undefined;
    if (!user) throw new ScimError(404, `no user "${id}"`);
    return user;
  }

  /** A group write refused by the store for a taken displayName: 409 `uniqueness`. */
  private conflict(err: unknown): unknown {
    if (err instanceof DirectoryConflict) return new ScimError(409, `${err.field} is taken`, 'uniqueness');
    return err;
  }

  /** Who makes a change through SCIM, for `UserAdmin`'s audit events (SCIM records the changes in its own, `audit`). */
  private auditOf(actor: ScimActor): AdminAudit {
    return { events: this.events, endpoint: 'scim', ...actor, recordsChanges: true };
  }

  // ---------------------------------------------------------------- groups

  /** The group resource. @throws ScimError 404. */
  async getGroup(id: string, params: { excludeMembers?: boolean } = {}): Promise<ScimResult> {
    const group = await this.findGroup(id);
    return { resource: this.groupResource(group, params.excludeMembers), etag: etagOf(group.version) };
  }

  /** A ListResponse of groups. @throws ScimError 400. */
  async listGroups(params: ListParams): Promise<Json> {
    const q = listQuery(params);
    const { total, groups } = await this.store.directory.listGroups(q);
    return listResponse(
      total,
      q.startIndex,
      groups.map((g) => this.groupResource(g)),
      params,
    );
  }

  /** Creates a group. @throws ScimError 400, 409 `uniqueness` for a taken displayName. */
  async createGroup(body: unknown, actor: ScimActor): Promise<ScimResult> {
    const write = await this.groupInput(schemasOf(body, GROUP_SCHEMA));
    const id = newId();
    try {
      await this.store.directory.addGroup(id, write, nowSeconds());
    } catch (err) {
      throw this.conflict(err);
    }
    const created = await this.findGroup(id);
    const resource = this.groupResource(created);
    this.audit('resource_created', actor, 'Group', id, changedAttributes({}, resource));
    return { resource, etag: etagOf(created.version) };
  }

  /** Replaces a group. @throws ScimError 404, 412, 400, 409. */
  async replaceGroup(id: string, body: unknown, ifMatch: string | undefined, actor: ScimActor): Promise<ScimResult> {
    const input = schemasOf(body, GROUP_SCHEMA);
    return retried(ifMatch, async () => {
      const before = await this.findGroup(id);
      checkIfMatch(ifMatch, before.version);
      return this.writeGroup(before, input, actor);
    });
  }

  /** Applies a PATCH to a group. @throws ScimError 404, 412, 400, 409. */
  async patchGroup(id: string, body: unknown, ifMatch: string | undefined, actor: ScimActor): Promise<ScimResult> {
    return retried(ifMatch, async () => {
      const before = await this.findGroup(id);
      checkIfMatch(ifMatch, before.version);
      return this.writeGroup(
        before,
        applyPatch(this.groupResource(before), body, GROUP_ATTRIBUTES, GROUP_SCHEMA),
        actor,
      );
    });
  }

  /** Deletes a group; its members lose its role. @throws ScimError 404, 412. */
  async deleteGroup(id: string, ifMatch: string | undefined, actor: ScimActor): Promise<void> {
    const group = await this.findGroup(id);
    checkIfMatch(ifMatch, group.version);
    if (!(await this.store.directory.removeGroup(id))) throw new ScimError(404, `no group "${id}"`);
    this.audit('resource_deleted', actor, 'Group', id, []);
  }

  /** Every group by name (at most `MAX_COUNT`) with how many members it has: the groups the console offers. */
  async groupChoices(): Promise<{ id: string; name: string; members: number }[]> {
    const query = { sortBy: { attr: 'displayName' }, offset: 0, limit: MAX_COUNT };
    const { groups } = await this.store.directory.listGroups(query);
    return groups.map((g) => ({ id: g.id, name: g.displayName, members: g.members.length }));
  }

  /**
   * Creates a group of that name without members (the console's form), as `createGroup`.
   * @throws ScimError 400, 409.
   */
  async createNamedGroup(displayName: string, actor: ScimActor): Promise<void> {
    await this.createGroup({ schemas: [GROUP_SCHEMA], displayName }, actor);
  }

  /**
   * Makes a user a member of exactly the groups `groupIds` (the console's user page): each group
   * joined or left is changed as a PATCH of its members would change it, with its audit event.
   * @throws ScimError 404 for no such user or group, 400 as `patchGroup`.
   */
  async setGroupsOf(subjectId: string, groupIds: readonly string[], actor: ScimActor): Promise<void> {
    const current = new Set((await this.findUser(subjectId)).groups.map((g) => g.id));
    const wanted = new Set(groupIds);
    const patch = (id: string, operation: Json) =>
      this.patchGroup(id, { schemas: [PATCH_OP], Operations: [operation] }, undefined, actor);
    for (const id of wanted)
      if (!current.has(id)) await patch(id, { op: 'add', path: 'members', value: [{ value: subjectId }] });
    for (const id of current)
      if (!wanted.has(id)) await patch(id, { op: 'remove', path: `members[value eq ${JSON.stringify(subjectId)}]` });
  }

  /** Writes `body` over `before` if its version is still current; undefined when it is not. */
  private async writeGroup(before: DirectoryGroup, body: Json, actor: ScimActor): Promise<ScimResult | undefined> {
    const write = await this.groupInput(body);
    let written: boolean;
    try {
      written = await this.store.directory.replaceGroup(before.id, write, before.version, nowSeconds());
    } catch (err) {
      throw this.conflict(err);
    }
    if (!written) return undefined;
    const after = await this.findGroup(before.id);
    const resource = this.groupResource(after);
    this.audit('resource_updated', actor, 'Group', before.id, changedAttributes(this.groupResource(before), resource));
    return { resource, etag: etagOf(after.version) };
  }

  private async findGroup(id: string): Promise<DirectoryGroup> {
    const group = id.length <= 64 ? await this.store.directory.group(id) : undefined;
    if (!group) throw new ScimError(404, `no group "${id}"`);
    return group;
  }

  private async groupInput(o: Json): Promise<{ displayName: string; externalId: string | null; members: string[] }> {
    const displayName = field(o, 'displayName');
    if (typeof displayName !== 'string' || displayName.trim().length === 0 || displayName.length > MAX_STRING)
      throw invalidValue(`displayName is required: a string of 1 to ${MAX_STRING} characters`);
    // A group's name joins its members' role claim; the admin role (config admin.userRole) gives
    // the management scopes. Provisioning (the scim scope) must not make anyone an administrator,
    // so no group may carry that name: the role comes from the config, the CLI or the admin API.
    if (displayName.trim().toLowerCase() === this.adminRole.toLowerCase())
      throw invalidValue(
        `a group may not be named "${this.adminRole}" (the role admin.userRole names, which only the configuration or the admin API gives)`,
      );
    const externalId = optionalString(o, 'externalId', MAX_STRING) ?? null;
    const members = memberIdsOf(o);
    const existing = await this.store.directory.existingUsers(members);
    const missing = members.find((m) => !existing.has(m));
    if (missing !== undefined) throw invalidValue(`member "${missing}" is not a user`);
    return { displayName, externalId, members };
  }

  private groupResource(g: DirectoryGroup, excludeMembers = false): Json {
    const members = g.members.map((m) => ({ subject: m.subjectId, username: m.username }));
    return groupResource(this.base, { ...g, members }, etagOf(g.version), excludeMembers);
  }

  // ---------------------------------------------------------------- shared

  private audit(
    name: 'resource_created' | 'resource_updated' | 'resource_deleted',
    actor: ScimActor,
    type: 'User' | 'Group',
    id: string,
    changed: string[],
  ): void {
    this.events.emit({
      name,
      endpoint: 'scim',
      clientId: actor.clientId,
      ...(actor.sub !== undefined ? { subjectId: actor.sub } : {}),
      target: { type, id },
      changed,
    });
  }
}
