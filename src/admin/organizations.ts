/**
 * Organization administration: the one door to the stored organizations and to the members of
 * every organization, for /admin/v1 (later the console and the command line).
 *
 * - A stored organization takes the settings of an entry of the config's `organizations` and is
 *   checked as one (config/schema/organizations.ts); its name is not a config-file
 *   organization's, none of its domains is another organization's (config-file or stored: a
 *   domain belongs to one organization at most), and its identity providers are in force (the
 *   config file's or stored ones). Its name cannot change; its id (`org_id`) never does.
 * - A config-file organization's settings are read-only (`read_only`); its members are managed
 *   here like any other's.
 * - A member is a user of Sigil (config-file, stored, or of a user directory, which must answer)
 *   with up to MAX_MEMBER_ROLES role names.
 * - Every change of an organization is in force on this node when the call returns (`reload`), on
 *   the other nodes within about a second (the `organizations` change counter they poll).
 * - An organization admin (a member holding the role `admin`, DESIGN §6b) manages that
 *   organization's members and invitations: `requireOrganizationAdmin` says whether a user is one,
 *   `updateMember` is their way to change roles (of members only; they add people by invitation),
 *   and `refuseOwnMembership` (organization-members.ts) keeps them from their own membership.
 */
import type { Logger } from 'pino';
import {
  AdminError,
  etagOf,
  type FieldProblem,
  ifMatchHolds,
  invalidField,
  isJsonObject,
  type RefusalDetail,
} from './errors.js';
import {
  MAX_ORGANIZATION_NAME,
  MAX_SUBJECT_LENGTH,
  ORGANIZATION_ADMIN_ROLE,
  ORGANIZATION_NAME,
  type OrganizationConfig,
  organization as organizationSchema,
} from '../config/schema.js';
import type { UpstreamProviders } from '../federation/upstream.js';
import { applyMergePatch, changedMembers } from '../protocol/merge-patch.js';
import type {
  OrganizationMember,
  OrganizationRefusal,
  OrganizationSettings,
  Store,
  StoredOrganization,
} from '../stores/types.js';
import type { UserService } from '../users/users.js';
import { cursorAfter, MAX_MEMBER_ROLES, parseRoles, subjectOfCursor } from './organization-members.js';
import { type Membership, newOrganizationId, type Organization } from '../organizations/organization.js';
import type { Organizations } from '../organizations/registry.js';
import { memberEvent } from './webhook-data.js';

/** An organization as the management API shows it, with the strong ETag of its version (quotes included). */
export interface OrganizationView extends Organization {
  etag: string;
}

/** What `OrganizationAdmin` works with besides the store. */
export interface OrganizationAdminOptions {
  /** The organizations in force on this node, which `reload` fills. */
  live: Organizations;
  /** The upstream providers in force: a stored organization's must be among them. */
  upstream: Pick<UpstreamProviders, 'get'>;
  /** Who may be a member: the users of Sigil. */
  users: Pick<UserService, 'findBySubject'>;
  /** Where the reading of the stored organizations warns of one it skips. */
  log: Pick<Logger, 'warn'>;
}

/** Lists, creates, changes and deletes organizations, manages their members, and reloads the stored ones. */
export class OrganizationAdmin {
  /** The reload under way (or the last one), which the next waits for. */
  private reloading: Promise<void> = Promise.resolve();
  /**
   * The settings of each stored organization the last reload validated, by id, with the version
   * read: a reload validates again only what changed since (the schema is most of a reload's
   * cost, about 1 s at 100,000 organizations), and checks every one against the config file and
   * the providers, which may have changed.
   */
  private validated = new Map<string, { version: number; settings: OrganizationConfig }>();

  constructor(
    private readonly store: Pick<Store, 'organizations'>,
    private readonly options: OrganizationAdminOptions,
  ) {}

  /** Every organization: the config file's, then every stored one by name (also one not in force). */
  async list(): Promise<OrganizationView[]> {
    const stored = await this.store.organizations.list();
    return [...this.options.live.configured.map(configView), ...stored.map(storedView)];
  }

  /**
   * One organization, config-file or stored.
   * @throws AdminError `not_found`.
   */
  async get(name: string): Promise<OrganizationView> {
    const configured = this.configured(name);
    return configured ? configView(configured) : storedView(await this.stored(name));
  }

  /**
   * Creates a stored organization from its settings as in the config file's entry, with a new
   * random id.
   * @throws AdminError `invalid` (with `problems`) when it is no valid entry or names an identity
   *   provider not in force; `conflict` when its name or one of its domains is taken.
   */
  async create(body: unknown): Promise<OrganizationView> {
    const settings = this.checked(body);
    if (this.configured(settings.name))
      throw new AdminError(
        'conflict',
        `organization "${settings.name}" exists already`,
        'name',
        undefined,
        refusal('exists', settings.name),
      );
    const created = { id: newOrganizationId(), name: settings.name, settings: storedSettings(settings) };
    this.refuse(await this.store.organizations.add(created), created);
    await this.reload();
    return storedView({ ...created, version: 1 });
  }

  /**
   * Changes a stored organization by a JSON Merge Patch (RFC 7396) of its settings, if it is still
   * the version `ifMatch` names when given, and in any case the version read here.
   * @returns the new version and the names of the settings that changed.
   * @throws AdminError `read_only` for a config-file organization, `not_found`,
   *   `precondition_failed`, `invalid` (`name` cannot change), `conflict` (a domain taken).
   */
  async update(
    name: string,
    patch: unknown,
    ifMatch: string | undefined,
  ): Promise<{ view: OrganizationView; changed: string[] }> {
    const saved = await this.writable(name, ifMatch);
    if (!isJsonObject(patch))
      throw new AdminError('invalid', 'a merge patch of an organization must be a JSON object', '', [
        { path: '', message: 'expected a JSON object' },
      ]);
    if ('name' in patch) throw invalidField('name', 'a name cannot change');
    const settings = storedSettings(this.checked(applyMergePatch({ name, ...saved.settings }, patch)));
    const next = { id: saved.id, name, settings };
    this.refuse(await this.store.organizations.update(saved.id, saved.version, settings), next);
    await this.reload();
    return {
      view: storedView({ ...next, version: saved.version + 1 }),
      changed: changedMembers({ ...saved.settings }, { ...settings }),
    };
  }

  /**
   * Deletes a stored organization and its memberships, if it is still the version `ifMatch`
   * names when given.
   * @throws AdminError `read_only`, `not_found`, `precondition_failed`.
   */
  async delete(name: string, ifMatch?: string): Promise<void> {
    const saved = await this.writable(name, ifMatch);
    const left = (subjects: string[]) =>
      subjects.map((s) => memberEvent('organization.member_removed', saved.id, s, []));
    if (!(await this.store.organizations.remove(saved.id, saved.version, left))) throw changedMeanwhile(name);
    await this.reload();
  }

  /**
   * A page of an organization's members by subject: at most `limit`, after the page `cursor`
   * ended (`next` of the previous page).
   * @throws AdminError `not_found` (no such organization), `invalid` (field `cursor`).
   */
  async members(
    name: string,
    page: { cursor?: string; limit: number },
  ): Promise<{ members: OrganizationMember[]; next?: string }> {
    const { id } = await this.anyOrganization(name);
    const after = page.cursor === undefined ? undefined : subjectOfCursor(page.cursor);
    const rows = await this.store.organizations.members(id, { ...(after ? { after } : {}), limit: page.limit + 1 });
    const members = rows.slice(0, page.limit);
    const last = members.at(-1);
    return { members, ...(rows.length > page.limit && last ? { next: cursorAfter(last.subject) } : {}) };
  }

  /**
   * Makes the user `subject` a member of an organization (config-file or stored) with `roles`,
   * or replaces the roles of a member.
   * @returns the membership, and whether it is new.
   * @throws AdminError `not_found` (no such organization, or no user with that subject: the path
   *   names a user who does not exist), `invalid` (roles); DirectoryUnavailable when a user
   *   directory cannot say whether it holds the subject.
   */
  async putMember(
    name: string,
    subject: string,
    roles: unknown,
  ): Promise<{ member: OrganizationMember; added: boolean }> {
    const { id } = await this.anyOrganization(name);
    const checked = parseRoles(roles);
    await this.userExists(subject);
    const added = memberEvent('organization.member_added', id, subject, checked);
    const outcome = await this.store.organizations.putMember(id, subject, checked, [added]);
    return { member: { subject, roles: checked }, added: outcome === 'added' };
  }

  /**
   * Makes the user `subject` a member of an organization with `roles` (none by default), unless
   * they are one already: then they keep their roles, given by an admin meanwhile perhaps, and
   * gain those of `roles` they lack (an accepted invitation adds, never takes away), up to
   * MAX_MEMBER_ROLES.
   * @returns the membership (the roles in force), and whether it is new.
   * @throws AdminError `not_found` (no such organization or user, or the member was removed
   *   between the statements), `invalid` (roles); DirectoryUnavailable as `putMember`.
   */
  async addMember(
    name: string,
    subject: string,
    roles: readonly string[] = [],
  ): Promise<{ member: OrganizationMember; added: boolean }> {
    const { id } = await this.anyOrganization(name);
    const checked = parseRoles(roles);
    await this.userExists(subject);
    if (
      await this.store.organizations.addMember(id, subject, checked, [
        memberEvent('organization.member_added', id, subject, checked),
      ])
    )
      return { member: { subject, roles: checked }, added: true };
    const member = await this.store.organizations.member(id, subject);
    if (!member) throw new AdminError('not_found', `"${subject}" is not a member of organization "${name}"`);
    const merged = [...new Set([...member.roles, ...checked])].slice(0, MAX_MEMBER_ROLES);
    if (merged.length === member.roles.length) return { member, added: false };
    await this.store.organizations.putMember(id, subject, merged);
    return { member: { subject, roles: merged }, added: false };
  }

  /**
   * Replaces the roles of a member of an organization (config-file or stored); never makes a
   * member: the door of an organization admin, who adds people by invitation (with their consent),
   * never by subject.
   * @returns the membership.
   * @throws AdminError `not_found` (no such organization, or `subject` is no member of it: the same
   *   whether or not a user has that subject, so the deployment's users are not enumerated),
   *   `invalid` (roles).
   */
  async updateMember(name: string, subject: string, roles: unknown): Promise<OrganizationMember> {
    const { id } = await this.anyOrganization(name);
    const checked = parseRoles(roles);
    if (!wellFormedSubject(subject) || !(await this.store.organizations.replaceRoles(id, subject, checked)))
      throw new AdminError('not_found', `"${subject}" is not a member of organization "${name}"`);
    return { subject, roles: checked };
  }

  /**
   * Checks that the user `subject` administers organization `name` (DESIGN §6b "Organization
   * admins"): a member of it (config-file or stored) holding ORGANIZATION_ADMIN_ROLE. Read at each
   * call, from the organization's current name to its id to the membership of that id: a role
   * taken away counts from the next call on, and the admins of a deleted organization hold nothing
   * in one created later under its name (a new id). /admin/v1 asks here for `sigil:org:admin`, and
   * so does the console.
   * @param subject the user acting; undefined (a client acting for itself) administers nothing
   * @throws AdminError `forbidden`, alike for an organization that does not exist, so that the
   *   refusal tells no organization's existence.
   */
  async requireOrganizationAdmin(name: string, subject: string | undefined): Promise<void> {
    const named = name.length <= MAX_ORGANIZATION_NAME && ORGANIZATION_NAME.test(name);
    if (subject !== undefined && named && wellFormedSubject(subject)) {
      const organization = this.configured(name) ?? (await this.store.organizations.get(name));
      // The membership is read for a missing organization too, so both refusals take the same reads.
      const member = await this.store.organizations.member(organization?.id ?? '', subject);
      if (organization && member?.roles.includes(ORGANIZATION_ADMIN_ROLE)) return;
    }
    throw new AdminError('forbidden', 'the caller is not an admin of this organization');
  }

  /**
   * The organizations in force that the user `subject` administers (memberships holding
   * ORGANIZATION_ADMIN_ROLE), by display name: at most `limit`, read from the first `limit + 1`
   * such memberships by organization id, and `more` when there were more of those memberships (an
   * organization admin's console lists them; each of their requests asks `requireOrganizationAdmin`
   * again).
   */
  async administeredBy(subject: string, limit: number): Promise<{ organizations: Organization[]; more: boolean }> {
    if (!wellFormedSubject(subject)) return { organizations: [], more: false };
    const held = await this.store.organizations.membershipsWithRole(subject, ORGANIZATION_ADMIN_ROLE, limit + 1);
    // A membership of an organization no longer in force (deleted, or skipped at a reload) names nothing.
    const inForce = held.flatMap(({ organizationId }) => this.options.live.byId(organizationId) ?? []);
    const organizations = inForce
      .slice(0, limit)
      .sort((a, b) => a.displayName.localeCompare(b.displayName) || a.name.localeCompare(b.name));
    return { organizations, more: held.length > limit };
  }

  /**
   * @throws AdminError `not_found` unless `subject` names a user of Sigil; DirectoryUnavailable
   *   when a user directory cannot say whether it holds the subject.
   */
  private async userExists(subject: string): Promise<void> {
    if (!wellFormedSubject(subject) || (await this.options.users.findBySubject(subject)) === undefined)
      throw new AdminError('not_found', `no user with subject "${subject}"`, undefined, undefined, {
        reason: 'not_found',
        item: { kind: 'user', name: subject },
      });
  }

  /**
   * Ends a membership.
   * @throws AdminError `not_found` (no such organization, or `subject` is no member of it).
   */
  async removeMember(name: string, subject: string): Promise<void> {
    const { id } = await this.anyOrganization(name);
    if (
      !(await this.store.organizations.removeMember(id, subject, [
        memberEvent('organization.member_removed', id, subject, []),
      ]))
    )
      throw new AdminError('not_found', `"${subject}" is not a member of organization "${name}"`);
  }

  /**
   * Re-reads the stored organizations into the registry in force (`options.live`). Each node does
   * so when the store's `organizations` counter moves (its 1 s poll), after its upstream providers
   * changed, and at every `signingKeys.reloadSeconds`. A stored organization that no longer passes
   * the checks together with the config file and the providers (the file changed since) is
   * skipped with a warning, never half-used.
   */
  reload(): Promise<void> {
    // One at a time, each reading the store after the previous applied (as ResourceAdmin.reload).
    const run = this.reloading.then(() => this.load());
    this.reloading = run.catch(() => {});
    return run;
  }

  private async load(): Promise<void> {
    const inForce: Organization[] = [];
    const validated = new Map<string, { version: number; settings: OrganizationConfig }>();
    for (const saved of await this.store.organizations.list())
      try {
        const known = this.validated.get(saved.id);
        const settings =
          known?.version === saved.version ? known.settings : this.parsed({ name: saved.name, ...saved.settings });
        validated.set(saved.id, { version: saved.version, settings });
        inForce.push({ ...this.crossChecked(settings), id: saved.id, source: 'store' });
      } catch (err) {
        if (!(err instanceof AdminError)) throw err;
        this.options.log.warn(
          { organization: saved.name, problem: err.message },
          'a stored organization is not in force: it conflicts with the config file or names an unknown identity provider',
        );
      }
    this.validated = validated;
    this.options.live.setStored(inForce);
  }

  /**
   * `body` as a valid organization, defaults filled in, whose domains no config-file organization
   * of another name holds and whose identity providers are in force.
   * @throws AdminError `invalid` (with `problems`), `conflict` for a config-file organization's domain.
   */
  private checked(body: unknown): OrganizationConfig {
    return this.crossChecked(this.parsed(body));
  }

  /**
   * `body` as a valid organization by the config file's schema, defaults filled in.
   * @throws AdminError `invalid` (with `problems`).
   */
  private parsed(body: unknown): OrganizationConfig {
    if (!isJsonObject(body))
      throw new AdminError('invalid', 'an organization must be a JSON object', '', [
        { path: '', message: 'expected a JSON object' },
      ]);
    const result = organizationSchema.safeParse(body);
    if (!result.success) {
      const problems: FieldProblem[] = result.error.issues.map((i) => ({ path: i.path.join('.'), message: i.message }));
      throw new AdminError('invalid', `${problems[0]?.path}: ${problems[0]?.message}`, problems[0]?.path, problems);
    }
    return result.data;
  }

  /**
   * `o` when no config-file organization of another name holds one of its domains and its
   * identity providers are in force.
   * @throws AdminError `conflict` for a config-file organization's domain, `invalid` for a provider.
   */
  private crossChecked(o: OrganizationConfig): OrganizationConfig {
    o.domains.forEach((d, j) => {
      const owner = this.options.live.configured.find((c) => c.name !== o.name && c.domains.includes(d));
      if (owner) throw domainTaken(o.name, j, d, owner.name);
    });
    o.identityProviders.forEach((p, j) => {
      if (this.options.upstream.get(p) === undefined)
        throw invalidField(`identityProviders.${j}`, `unknown identity provider "${p}"`);
    });
    return o;
  }

  /** @throws AdminError for the store's refusal of a write of `item`, if any. */
  private refuse(
    refused: OrganizationRefusal | undefined,
    item: { name: string; settings: OrganizationSettings },
  ): void {
    if (refused === undefined) return;
    switch (refused.reason) {
      case 'name_taken':
        throw new AdminError(
          'conflict',
          `organization "${item.name}" exists already`,
          'name',
          undefined,
          refusal('exists', item.name),
        );
      case 'domain_taken':
        throw domainTaken(
          item.name,
          item.settings.domains.indexOf(refused.domain),
          refused.domain,
          refused.organization,
        );
      case 'changed':
        throw changedMeanwhile(item.name);
    }
  }

  private configured(name: string): Organization | undefined {
    return this.options.live.configured.find((o) => o.name === name);
  }

  /** @throws AdminError `not_found`. */
  private async stored(name: string): Promise<StoredOrganization> {
    const saved = await this.store.organizations.get(name);
    if (saved === undefined)
      throw new AdminError('not_found', `no organization "${name}"`, undefined, undefined, refusal('not_found', name));
    return saved;
  }

  /** The organization named `name`, config-file or stored, whose members a call manages. @throws AdminError `not_found`. */
  private async anyOrganization(name: string): Promise<{ id: string }> {
    return this.configured(name) ?? (await this.stored(name));
  }

  /** The stored organization to change: not a config-file one, existing, at version `ifMatch` when given. */
  private async writable(name: string, ifMatch: string | undefined): Promise<StoredOrganization> {
    if (this.configured(name))
      throw new AdminError(
        'read_only',
        `organization "${name}" is managed by the config file; change it there (its members are managed here)`,
        undefined,
        undefined,
        refusal('read_only', name),
      );
    const saved = await this.stored(name);
    if (!ifMatchHolds(ifMatch, storedView(saved).etag))
      throw new AdminError(
        'precondition_failed',
        `organization "${name}" is not at the version If-Match names`,
        undefined,
        undefined,
        refusal('changed', name),
      );
    return saved;
  }
}

/**
 * Whether `subject` may be a user's: bounded, without control characters (OIDC Core §2: ASCII; and
 * PostgreSQL refuses a NUL in text).
 */
function wellFormedSubject(subject: string): boolean {
  return subject.length <= MAX_SUBJECT_LENGTH && !/[\u0000-\u001f\u007f]/.test(subject);
}

/** A refusal's stable reason, naming the organization. */
function refusal(reason: RefusalDetail['reason'], name: string): RefusalDetail {
  return { reason, item: { kind: 'organization', name } };
}

function changedMeanwhile(name: string): AdminError {
  return new AdminError(
    'precondition_failed',
    `organization "${name}" changed meanwhile`,
    undefined,
    undefined,
    refusal('changed', name),
  );
}

/** The `conflict` of a domain (at `domains.<index>` of organization `name`) that organization `owner` holds. */
function domainTaken(name: string, index: number, domain: string, owner: string): AdminError {
  return new AdminError(
    'conflict',
    `"${domain}" is a domain of organization "${owner}", so it cannot be one of "${name}": a domain belongs to one organization at most`,
    `domains.${index}`,
    [{ path: `domains.${index}`, message: `a domain of organization "${owner}"` }],
  );
}

/** The settings kept in the store: the entry without its name. */
function storedSettings({ name: _name, ...settings }: OrganizationConfig): OrganizationSettings {
  return settings;
}

function configView(o: Organization): OrganizationView {
  return { ...o, etag: etagOf(JSON.stringify(o)) };
}

function storedView({ id, name, settings, version }: StoredOrganization): OrganizationView {
  return {
    id,
    name,
    displayName: settings.displayName,
    domains: settings.domains,
    identityProviders: settings.identityProviders,
    membership: settings.membership as Membership,
    source: 'store',
    // The id is random per creation: an ETag of a deleted organization never matches a later one of that name.
    etag: etagOf(`${id}.${version}`),
  };
}
