/**
 * The Groups of an organization's SCIM endpoint (`/scim/v2/organizations/{name}/Groups`): the
 * organization's roles (`admin/organization-groups.ts` writes them). A Group's `displayName` is a
 * role name, its `members` the members who are stored users and hold the role; creating, changing
 * or deleting a Group gives, renames or takes that role in this organization only (the tokens'
 * `org_roles`), never a deployment group or the `role` claim. Ids are stable through renames.
 *
 * An organization has a handful of roles, so a list is filtered (every operator of RFC 7644
 * §3.4.2.2), sorted and paged in memory over its Groups, read at once with their members; the
 * ETag covers the members (`versionTag`), whose roles other doors change too.
 */
import { AdminError } from '../admin/errors.js';
import type { OrganizationGroupView } from '../admin/organization-groups.js';
import { type AttrPath, matches, ScimError } from '../protocol/scim-filter.js';
import { type ListParams, listQuery } from './listing.js';
import type { OrganizationScimDeps, OrganizationScope } from './organization-scope.js';
import { versionTag } from './organization-scope.js';
import { applyPatch } from './patch.js';
import {
  groupResource,
  changedAttributes,
  checkIfMatchTag,
  field,
  invalidValue,
  type Json,
  memberIdsOf,
  optionalString,
  retried,
  type ScimResult,
  schemasOf,
} from './representation.js';
import { definitionOf, GROUP_ATTRIBUTES, GROUP_SCHEMA } from './schemas.js';
import type { ScimActor } from './service.js';
import { listResponse, MAX_STRING } from './users.js';

/** The attributes a list of an organization's Groups may be sorted by, and each one's sort key. */
const SORT: Record<string, (g: OrganizationGroupView) => string | number> = {
  id: (g) => g.id,
  displayname: (g) => g.name.toLowerCase(),
  externalid: (g) => g.externalId ?? '',
  'meta.created': (g) => g.createdAt,
  'meta.lastmodified': (g) => g.updatedAt,
};

/** The Groups of one organization. */
export class OrganizationGroups {
  constructor(
    private readonly deps: OrganizationScimDeps,
    private readonly scope: OrganizationScope,
  ) {}

  private get organizationId(): string {
    return this.scope.organization.id;
  }

  /** A Group of this organization. @throws ScimError 404 (also for another organization's Group id). */
  async get(id: string): Promise<ScimResult> {
    const group = await this.find(id);
    return { resource: this.resourceOf(group), etag: tagOf(group) };
  }

  /** A ListResponse of the organization's Groups (§3.4.2). @throws ScimError 400 for bad parameters. */
  async list(params: ListParams): Promise<Json> {
    const q = listQuery(params);
    const sortKey = sortKeyOf(q.sortBy);
    const all = (await this.deps.groups.list(this.organizationId)).map((g) => ({ g, r: this.resourceOf(g) }));
    const { filter } = q;
    const found = filter ? all.filter(({ r }) => matches(filter, r, caseExact)) : all;
    found.sort((a, b) => compare(sortKey(a.g), sortKey(b.g)) || compare(a.g.id, b.g.id));
    if (q.descending) found.reverse();
    const page = found.slice(q.offset, q.offset + q.limit).map(({ r }) => r);
    return listResponse(found.length, q.startIndex, page, params);
  }

  /** Creates a Group: a role given to its members. @throws ScimError 400, 409 `uniqueness` for a taken name. */
  async create(body: unknown, actor: ScimActor): Promise<ScimResult> {
    const write = groupInput(schemasOf(body, GROUP_SCHEMA));
    let id: string;
    try {
      id = await this.deps.groups.create(this.organizationId, write);
    } catch (err) {
      throw groupRefusal(err);
    }
    const created = await this.get(id);
    this.scope.audit('resource_created', actor, 'Group', id, changedAttributes({}, created.resource));
    return created;
  }

  /** Replaces a Group (§3.5.1). @throws ScimError 404, 412, 400, 409. */
  replace(id: string, body: unknown, ifMatch: string | undefined, actor: ScimActor): Promise<ScimResult> {
    const input = schemasOf(body, GROUP_SCHEMA);
    return retried(ifMatch, async () => this.write(await this.current(id, ifMatch), input, actor));
  }

  /** Applies a PATCH to a Group (§3.5.2). @throws ScimError 404, 412, 400, 409. */
  patch(id: string, body: unknown, ifMatch: string | undefined, actor: ScimActor): Promise<ScimResult> {
    return retried(ifMatch, async () => {
      const before = await this.current(id, ifMatch);
      return this.write(before, applyPatch(this.resourceOf(before), body, GROUP_ATTRIBUTES, GROUP_SCHEMA), actor);
    });
  }

  /** Deletes a Group: every holder loses the role. @throws ScimError 404, 412, 403. */
  async delete(id: string, ifMatch: string | undefined, actor: ScimActor): Promise<void> {
    await retried(ifMatch, async () => {
      const before = await this.current(id, ifMatch);
      let removed: boolean;
      try {
        removed = await this.deps.groups.remove(this.organizationId, before);
      } catch (err) {
        throw groupRefusal(err);
      }
      return removed ? { resource: {}, etag: '' } : undefined;
    });
    this.scope.audit('resource_deleted', actor, 'Group', id, []);
  }

  /** The Group `id` as read, at `ifMatch`. @throws ScimError 404, 412. */
  private async current(id: string, ifMatch: string | undefined): Promise<OrganizationGroupView> {
    const group = await this.find(id);
    checkIfMatchTag(ifMatch, tagOf(group));
    return group;
  }

  /** Writes `body` over `before` if nothing changed since it was read; undefined when something did. */
  private async write(before: OrganizationGroupView, body: Json, actor: ScimActor): Promise<ScimResult | undefined> {
    const write = groupInput(body);
    let written: boolean;
    try {
      written = await this.deps.groups.replace(this.organizationId, before, write);
    } catch (err) {
      throw groupRefusal(err);
    }
    if (!written) return undefined;
    const after = await this.get(before.id);
    const changed = changedAttributes(this.resourceOf(before), after.resource);
    this.scope.audit('resource_updated', actor, 'Group', before.id, changed);
    return after;
  }

  private async find(id: string): Promise<OrganizationGroupView> {
    // Ids are 22 base64url characters; anything else is no Group (and PostgreSQL refuses a NUL).
    if (!/^[A-Za-z0-9_-]{1,64}$/.test(id)) throw new ScimError(404, `no group "${id}"`);
    try {
      return await this.deps.groups.get(this.organizationId, id);
    } catch (err) {
      throw groupRefusal(err);
    }
  }

  private resourceOf(g: OrganizationGroupView): Json {
    return groupResource(this.scope.base, { ...g, displayName: g.name }, tagOf(g));
  }
}

function tagOf(g: OrganizationGroupView): string {
  return versionTag(g.version, [g.name, ...g.members.map((m) => m.subject)]);
}

/**
 * A Group representation's name, externalId and member ids. The name's rules (a role name, not
 * the deployment's admin role) are the group admin's.
 * @throws ScimError 400 `invalidValue`.
 */
function groupInput(o: Json): { name: string; externalId: string | null; members: string[] } {
  const name = field(o, 'displayName');
  if (typeof name !== 'string' || name.length === 0 || name.length > MAX_STRING)
    throw invalidValue(`displayName is required: a string of 1 to ${MAX_STRING} characters`);
  return { name, externalId: optionalString(o, 'externalId', MAX_STRING) ?? null, members: memberIdsOf(o) };
}

/** A refusal of the group admin as SCIM answers it (RFC 7644 §3.12); any other error as it is. */
function groupRefusal(err: unknown): unknown {
  if (!(err instanceof AdminError)) return err;
  switch (err.code) {
    case 'invalid':
      return invalidValue(err.message);
    case 'conflict':
      return new ScimError(409, err.message, 'uniqueness');
    case 'precondition_failed':
      return new ScimError(412, 'the resource was changed concurrently; read it again');
    case 'read_only':
      return new ScimError(403, err.message);
    default:
      return new ScimError(404, err.message);
  }
}

/** Whether a Group attribute (or a member's sub-attribute) compares case-exactly (RFC 7643 §7). */
function caseExact(attr: string): boolean {
  return (definitionOf(GROUP_ATTRIBUTES, attr) ?? definitionOf(GROUP_ATTRIBUTES, 'members', attr))?.caseExact ?? false;
}

/** The sort key of `sortBy`. @throws ScimError 400 `invalidValue` for an attribute that cannot be sorted by. */
function sortKeyOf(sortBy: AttrPath | undefined): (g: OrganizationGroupView) => string | number {
  if (sortBy === undefined) return SORT.id as (g: OrganizationGroupView) => string;
  const key = SORT[(sortBy.sub === undefined ? sortBy.attr : `${sortBy.attr}.${sortBy.sub}`).toLowerCase()];
  if (key === undefined)
    throw invalidValue(`"${sortBy.attr}" cannot be sorted by; sortable: ${Object.keys(SORT).join(', ')}`);
  return key;
}

function compare(a: string | number, b: string | number): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
