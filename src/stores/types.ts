/**
 * Storage interfaces. Each has one SQL implementation of its own (`sql-grants.ts`, `sql-users.ts`,
 * ...), all over one Kysely instance (tables: `tables.ts`), composed into `Store` by `openStore`
 * (`sql.ts`). Clients and resources come from the config file and, beside them, from the store
 * (`ClientStore`, `managed-resources.ts`).
 *
 * Times are Unix seconds. Handles (codes, refresh tokens, reference tokens) never reach the store:
 * only `key`, the SHA-256 of the handle, does.
 */
import { hashHandle } from '../crypto/handles.js';
import type { GrantStore } from './grant-store.js';
import type { GrantRecords } from './records/index.js';
import type { SamlParticipation } from './records/saml-logouts.js';
import type { WebAuthnCredentialStore } from './webauthn-credentials.js';
import type { RegistrationStore } from './client-registrations.js';
import type { UserEmailStore } from './user-emails.js';
import type { SqlDirectory } from './directory.js';
import type { AuditEventStore } from './audit-events.js';
import type { ManagedResourceStore } from './managed-resources.js';
import type { ServerSecretStore } from './sql-secrets.js';
import type { WebhookEvent } from '../events/webhook-events.js';
import type { SqlWebhookStore } from './sql-webhooks.js';
import type { SqlWebhookOutbox } from './webhook-outbox.js';
import type { SqlSamlServiceProviderStore } from './sql-saml-service-providers.js';

export { newGrantRecord, type GrantRecord, type GrantStore, type GrantType, type NewGrant } from './grant-store.js';

/**
 * A signing key as stored. `privateKey` is the private JWK as JSON, or a compact JWE of it
 * (`dir`/`A256GCM`) when `SIGIL_DATA_KEY` is set.
 */
export interface StoredKey {
  kid: string;
  alg: string;
  privateKey: string;
  publicJwk: Record<string, unknown>;
  createdAt: number;
  /** When it starts signing (Unix seconds). */
  activatesAt: number;
  /** When it was retired by hand (`sigil keys retire`), or null. */
  retiredAt: number | null;
}

/** Signing keys, shared by every node that uses the store. */
export interface KeyStore {
  /** Every key, oldest first. */
  listKeys(): Promise<StoredKey[]>;
  addKey(key: StoredKey): Promise<void>;
  /** Retires a key; returns false when no such key is live. */
  retireKey(kid: string, now: number): Promise<boolean>;
}

/** Housekeeping shared by the nodes of one store. */
export interface Maintenance {
  /**
   * Takes or renews the lease `name` for `holder` until `until` (Unix seconds), atomically:
   * true when this holder has it.
   */
  acquireLease(name: string, holder: string, now: number, until: number): Promise<boolean>;
  /**
   * Deletes up to `limit` grant rows that expired before `before`, and the client removal records
   * (`ClientStore.listClientRemovals`) that did; returns how many rows were deleted.
   */
  deleteExpired(before: number, limit: number): Promise<number>;
  /** How many pending authorization requests (interactions) are live at `now` (Unix seconds). */
  liveInteractions(now: number): Promise<number>;
}

/** A user kept in the database (`sigil users`), password as an argon2id hash. */
export interface StoredUser {
  subjectId: string;
  username: string;
  tenant: string | null;
  passwordHash: string | null;
  claims: Record<string, unknown>;
  isActive: boolean;
  /** The password is a temporary one an administrator set: the next sign-in must change it. */
  passwordChangeRequired?: boolean;
}

/**
 * A stored user with what the protocol reads beside their row (`UserService`): their primary
 * address and the display names of their SCIM groups.
 */
export interface StoredProfile extends StoredUser {
  /** The primary address (`user_emails`), if any, and whether it is verified. */
  primaryEmail?: { value: string; verified: boolean };
  /** The display names of the groups they are a direct member of, in order of their lower-cased form. */
  groups: string[];
}

/** Clients kept in the database (`sigil clients`), as the config file's client objects. */
export interface ClientStore {
  listClients(): Promise<Record<string, unknown>[]>;
  /**
   * The ids of stored clients removed within the longest lifetime of their tokens, each with when it
   * was last removed (Unix seconds; table `client_removals`, stores/client-removals.ts): records
   * that expired before `now` (Unix seconds) are left out. Every deletion of a stored client writes
   * its record in the deletion's transaction.
   */
  listClientRemovals(now: number): Promise<Map<string, number>>;
  /** Adds or replaces a client, with its webhook `events` in the same transaction. */
  saveClient(clientId: string, config: Record<string, unknown>, events?: readonly WebhookEvent[]): Promise<void>;
  /**
   * Returns false when there was no such client; records the removal (`listClientRemovals`) in the same
   * transaction.
   */
  removeClient(clientId: string): Promise<boolean>;
  /** The stored client's config as saved (JSON text, the basis of its ETag), or undefined. */
  getClient(clientId: string): Promise<string | undefined>;
  /**
   * Replaces a stored client only while its saved JSON text is still `expected` (one conditional
   * UPDATE, so two concurrent changes cannot both win); with `config` undefined, deletes it so and
   * records the removal (`listClientRemovals`) in the same transaction; the webhook `events` too,
   * when it was replaced (or deleted).
   * @returns whether it was replaced (or deleted).
   */
  replaceClientIf(
    clientId: string,
    expected: string,
    config: Record<string, unknown> | undefined,
    events?: readonly WebhookEvent[],
  ): Promise<boolean>;
  /**
   * A counter every change of the stored clients raises (0 before the first): nodes poll it to re-read them
   * at once.
   */
  clientsVersion(): Promise<number>;
}

/**
 * Store key of the link of an upstream identity: the SHA-256 (base64url) of the full pair
 * (provider name, upstream `sub`). OIDC Core §2, §5.7: `sub` is unique only within its issuer and
 * is compared exactly, never cut or case-folded. Never change it: stored links depend on it.
 */
export function externalLinkKey(provider: string, upstreamSubject: string): string {
  return hashHandle(`${provider}\u0000${upstreamSubject}`);
}

/** An upstream identity (federation) as linked to a local user. */
export interface ExternalLink {
  /** `externalLinkKey(provider, upstreamSubject)`. */
  key: string;
  provider: string;
  /** The upstream `sub`, 1 to 255 characters, as the upstream sent it. */
  upstreamSubject: string;
}

/** Users in the database. */
export interface UserStore {
  /**
   * Finds a user by username (case-insensitive) within a tenant; with null, the one user of that name in any
   * tenant.
   */
  findUserByUsername(username: string, tenant: string | null): Promise<StoredUser | undefined>;
  findUserBySubject(subjectId: string): Promise<StoredUser | undefined>;
  /**
   * `findUserByUsername` and `findUserBySubject` with the user's primary address and groups, read
   * in one query: a sign-in, a token refresh and userinfo each look their user up this way.
   */
  findProfile(
    by: { subjectId: string } | { username: string; tenant: string | null },
  ): Promise<StoredProfile | undefined>;
  addUser(user: StoredUser): Promise<void>;
  listUsers(): Promise<StoredUser[]>;
  /**
   * Removes a user, the upstream identities linked to them, their WebAuthn credentials, email
   * addresses, group and organization memberships, in one transaction with the webhook events
   * `left` gives for the organizations (ids) they were a member of, then `events`; returns false
   * when there was no such user (no event is written).
   */
  removeUser(
    subjectId: string,
    events?: readonly WebhookEvent[],
    left?: (organizationIds: string[]) => WebhookEvent[],
  ): Promise<boolean>;
  /**
   * Whether any upstream identity of the provider named `provider` is linked to a local user (a full scan:
   * management only).
   */
  hasExternalLinks(provider: string): Promise<boolean>;
  /** The local subject linked to an upstream identity (`ExternalLink.key`), or undefined. */
  findExternalLink(key: string): Promise<string | undefined>;
  /**
   * Adds `user` linked to the upstream identity `link`, atomically. When `link.key` is linked
   * already (two first sign-ins at once), adds nothing and returns the subject linked first; the
   * webhook `events` are written only with a user added.
   * @returns the linked local subject.
   */
  addExternalUser(link: ExternalLink, user: StoredUser, events?: readonly WebhookEvent[]): Promise<string>;
  /**
   * Links the upstream identity `link` to the existing user `subjectId` (an upstream sign-in with
   * the user's verified address). When `link.key` is linked already, changes nothing.
   * @returns the linked local subject.
   */
  addExternalLink(link: ExternalLink, subjectId: string): Promise<string>;
  /** Returns false when there was no such user. */
  setPasswordHash(subjectId: string, passwordHash: string): Promise<boolean>;
  /** Replaces a user's claims (external users, at each sign-in). */
  updateClaims(subjectId: string, claims: Record<string, unknown>): Promise<void>;
  /**
   * Makes a stored user active or inactive (an inactive user signs in nowhere); raises their version. Returns
   * false when there is no such user.
   */
  setUserActive(subjectId: string, active: boolean): Promise<boolean>;
}

/**
 * One second factor of a user as stored (table `mfa_factors`). The kinds and what their `data`
 * holds are defined in `src/mfa/factors.ts`; the store knows nothing of them.
 */
export interface StoredFactor {
  /** Random id (base64url), public: forms name a factor by it. */
  id: string;
  subjectId: string;
  /** `totp`, `recovery_code`, or a kind another module registers (e.g. WebAuthn). */
  kind: string;
  /** What the user calls it (shown on /account), at most 100 characters. */
  label: string;
  data: Record<string, unknown>;
  /** Grows only (`advanceFactorCounter`): last TOTP time step used; 1 for a spent recovery code. */
  counter: number;
  /** Unix seconds. */
  createdAt: number;
  /** Unix seconds of the last successful use, or null. */
  lastUsedAt: number | null;
}

/** Users' second factors. */
export interface FactorStore {
  /** The user's factors of `kinds` (all kinds when omitted), oldest first. */
  listFactors(subjectId: string, kinds?: readonly string[]): Promise<StoredFactor[]>;
  addFactor(factor: StoredFactor): Promise<void>;
  /**
   * Sets a factor's counter to `next` only while it is below `next`, in one conditional update:
   * of concurrent callers with the same `next` exactly one gets true (a code is used once).
   * @param now Unix seconds, recorded as `lastUsedAt` on success
   */
  advanceFactorCounter(id: string, next: number, now: number): Promise<boolean>;
  /** Removes one factor of the user; false when the user has no such factor. */
  removeFactor(subjectId: string, id: string): Promise<boolean>;
  /** Removes the user's factors of `kinds` (all kinds when omitted); returns how many. */
  removeFactors(subjectId: string, kinds?: readonly string[]): Promise<number>;
  /**
   * Replaces the user's factors of `kind` with `factors` in one transaction (new recovery codes
   * void the old ones at the same instant).
   */
  replaceFactors(subjectId: string, kind: string, factors: readonly StoredFactor[]): Promise<void>;
}

export type { SamlParticipation } from './records/saml-logouts.js';

/**
 * A client that took part in a session (received a code or tokens for it), or a SAML service
 * provider (client id `samlParticipantId`, logout/logout.ts) that received an assertion for it, with what a
 * LogoutRequest to it must name.
 */
export interface SessionParticipant {
  sid: string;
  clientId: string;
  subjectId: string;
  saml?: SamlParticipation;
}

/**
 * A back-channel logout token waiting to be sent (OIDC Back-Channel Logout 1.0 §2.5). The token
 * is signed at each attempt from these fields; `id` is its `jti`, the same on every attempt.
 * With `saml`, it is a SAML LogoutRequest to an SP over SOAP instead (SAML Bindings §3.2, Profiles
 * §4.4.3.3): `clientId` is the SP's participant id, `uri` its SOAP SingleLogoutService.
 */
export interface LogoutDelivery {
  id: string;
  clientId: string;
  uri: string;
  subjectId: string;
  sid: string;
  /** Attempts made so far. */
  attempts: number;
  /** Unix seconds: no attempt after this; the delivery is dropped. */
  giveUpAt: number;
  /** What the SP was told, which the LogoutRequest repeats; absent for a logout token. */
  saml?: SamlParticipation;
}

/**
 * Sessions' participants and the back-channel logout outbox. Ending a session and queueing its
 * logout tokens happen in one transaction; deliveries are claimed with a lease so that of several
 * nodes on one store one sends each.
 */
export interface LogoutStore {
  /**
   * Records that `participant.clientId` took part in the session (idempotent; a SAML participant's
   * `saml` is replaced by the latest assertion's, which is what the SP now holds). `expiresAt`: the
   * session's end, Unix seconds.
   */
  addParticipant(participant: SessionParticipant, expiresAt: number): Promise<void>;
  /**
   * The participant `clientId` of session `sid`, while the session has not been ended, or undefined.
   */
  participant(sid: string, clientId: string): Promise<SessionParticipant | undefined>;
  /**
   * Ends the session `sid` in one transaction: revokes its session row, removes its participants
   * and queues what `plan` returns for them. Of concurrent callers for one session only one gets
   * the participants; the others get an empty list and queue nothing. When its live session row
   * (not yet expired) is revoked here, the webhook events `ended` gives for its subject are written
   * in the same transaction.
   */
  endSession(
    sid: string,
    now: number,
    plan: (participants: SessionParticipant[]) => LogoutDelivery[],
    ended?: (subjectId: string) => WebhookEvent[],
  ): Promise<SessionParticipant[]>;
  /**
   * Forgets that `clientId` took part in any session (a client deleted, RFC 7592 §2.3): a client
   * created later with the same id is not sent logout tokens, with their users' `sub` and `sid`,
   * for sessions the removed one took part in; and drops its queued back-channel logout deliveries,
   * which would otherwise still go to the removed client's logout URI (one already claimed by a
   * sender may still go out once). Returns how many rows went, of both. Found through the index
   * on `session_participants (client_id)` (0017_participants_by_client); the queued deliveries are
   * a short outbox.
   */
  forgetClient(clientId: string): Promise<number>;
  /** The sids of live (not revoked, not expired) sessions of a user. */
  liveSessions(subjectId: string, now: number): Promise<string[]>;
  /** Up to `limit` sids of sessions past their end that still have participants. */
  expiredSessions(now: number, limit: number): Promise<string[]>;
  /**
   * Claims up to `limit` due deliveries (or exactly `ids` when given, if due) for `holder` until
   * `leaseUntil`, each with a conditional update: a delivery leased by a live holder is skipped.
   */
  claimDeliveries(
    holder: string,
    now: number,
    leaseUntil: number,
    limit: number,
    ids?: string[],
  ): Promise<LogoutDelivery[]>;
  /** Removes a delivery this holder has claimed (sent, or given up). */
  finishDelivery(id: string, holder: string): Promise<void>;
  /** Releases a claimed delivery for another attempt at `nextAttemptAt` (Unix seconds). */
  retryDelivery(id: string, holder: string, nextAttemptAt: number, lastError: string): Promise<void>;
  /** The outbox: how many deliveries are queued, and when the oldest was queued (Unix seconds; null when none). */
  outbox(): Promise<{ depth: number; oldestCreatedAt: number | null }>;
}

/**
 * A stored organization's settings: the config file's entry of `organizations` but its `name`,
 * defaults filled in and domains normalized (config/schema/organizations.ts).
 */
export interface OrganizationSettings {
  displayName: string;
  domains: string[];
  identityProviders: string[];
  membership: string;
}

/** An organization managed at run time (migration 0018_organizations). */
export interface StoredOrganization {
  /** Its stable id (`org_id`): random, never derived from the name. */
  id: string;
  name: string;
  settings: OrganizationSettings;
  /** 1 when created, one more with each change: what its ETag names. */
  version: number;
}

/** Why the store refused to write an organization; nothing was written. */
export type OrganizationRefusal =
  | { reason: 'name_taken' }
  /** `domain` is a domain of the stored organization named `organization`. */
  | { reason: 'domain_taken'; domain: string; organization: string }
  /** The organization is gone, or not at the version named. */
  | { reason: 'changed' };

/** A member of an organization: a user's subject and their roles in it. */
export interface OrganizationMember {
  subject: string;
  roles: string[];
}

/**
 * Stored organizations and the members of every organization, stored or config-file (keyed by
 * organization id). Every change of an organization raises the `organizations` change counter
 * (`version`); member changes do not (nodes keep no members in memory).
 */
export interface OrganizationStore {
  /** Every stored organization, by name. */
  list(): Promise<StoredOrganization[]>;
  /** The stored organization of that name, or undefined. */
  get(name: string): Promise<StoredOrganization | undefined>;
  /** Adds an organization with version 1; a refusal when its name or one of its domains is a stored one's. */
  add(organization: Omit<StoredOrganization, 'version'>): Promise<OrganizationRefusal | undefined>;
  /**
   * Replaces an organization's settings while it is at `version` (one more then); a refusal when
   * it is not, or when one of the new domains is another stored organization's.
   */
  update(id: string, version: number, settings: OrganizationSettings): Promise<OrganizationRefusal | undefined>;
  /**
   * Removes an organization at `version` with its domains and members, and writes the webhook
   * events `left` gives for the members it had in the same transaction; false when it is not at it
   * (or gone).
   */
  remove(id: string, version: number, left?: (subjects: string[]) => WebhookEvent[]): Promise<boolean>;
  /** The `organizations` change counter: 0 before the first change. */
  version(): Promise<number>;
  /** Up to `limit` members of an organization by subject, after the subject `after` when given. */
  members(organizationId: string, page: { after?: string; limit: number }): Promise<OrganizationMember[]>;
  /** The membership of `subject` in an organization, or undefined when they are none. */
  member(organizationId: string, subject: string): Promise<OrganizationMember | undefined>;
  /** Up to `limit` memberships of `subject`, by organization id: the ids and the roles. */
  memberships(subject: string, limit: number): Promise<{ organizationId: string; roles: string[] }[]>;
  /**
   * Makes `subject` a member with `roles` unless they are one already, whose roles then stay as
   * they are (one statement: a concurrent change of the member is never overwritten); true when
   * added, and then with the webhook `events` in the same transaction.
   */
  addMember(
    organizationId: string,
    subject: string,
    roles: readonly string[],
    events?: readonly WebhookEvent[],
  ): Promise<boolean>;
  /** Makes `subject` a member with `roles` (with `events`, as `addMember`), or replaces their roles; says which. */
  putMember(
    organizationId: string,
    subject: string,
    roles: readonly string[],
    events?: readonly WebhookEvent[],
  ): Promise<'added' | 'replaced'>;
  /** Replaces the roles of `subject` if they are a member (never makes one); false when they are none. */
  replaceRoles(organizationId: string, subject: string, roles: readonly string[]): Promise<boolean>;
  /** Whether `subject` holds `role` in any membership (of any organization id, in force or not). */
  holdsRole(subject: string, role: string): Promise<boolean>;
  /**
   * Up to `limit` memberships of `subject` holding `role` exactly, by organization id (of any
   * organization id, in force or not); however many memberships without it come between.
   */
  membershipsWithRole(subject: string, role: string, limit: number): Promise<{ organizationId: string }[]>;
  /** Ends a membership, with its webhook `events` in the same transaction; false when there was none. */
  removeMember(organizationId: string, subject: string, events?: readonly WebhookEvent[]): Promise<boolean>;
}

/** An organization's role as a SCIM Group (0019_organization_scim). */
export interface OrganizationGroup {
  /** Stable: random, kept when the role is renamed. */
  id: string;
  /** The role name, as members' roles list it. */
  name: string;
  externalId: string | null;
  /** 1 when created, one more with each change through SCIM. */
  version: number;
  /** Unix seconds. */
  createdAt: number;
  /** Unix seconds. */
  updatedAt: number;
}

/** A member of an organization who is a stored user, with their roles there. */
export interface OrganizationRoleHolder {
  subject: string;
  username: string;
  roles: string[];
}

/** Why a write of an organization's Group was refused. */
export type OrganizationGroupRefusal =
  /** Another Group of the organization has that name. */
  | { reason: 'name_taken' }
  /** The Group or a member's roles changed since they were read (or the Group is gone). */
  | { reason: 'changed' }
  /** `subject` is no member of the organization. */
  | { reason: 'not_member'; subject: string }
  /** `subject` would hold more roles than allowed. */
  | { reason: 'too_many_roles'; subject: string };

/**
 * An organization's roles as SCIM Groups and the provisioned marks of its members
 * (`sql-organization-groups.ts`). Group ids are looked up within their organization only.
 */
export interface OrganizationGroupStore {
  /** The organization's Groups by name. */
  list(organizationId: string): Promise<OrganizationGroup[]>;
  /** The organization's Group with that id, or undefined (also for another organization's id). */
  get(organizationId: string, id: string): Promise<OrganizationGroup | undefined>;
  /** The organization's Groups of these role names. */
  named(organizationId: string, names: readonly string[]): Promise<OrganizationGroup[]>;
  /** The members who are stored users, by subject, with their roles; with `role`, those holding it. */
  holders(organizationId: string, role?: string): Promise<OrganizationRoleHolder[]>;
  /**
   * The memberships of those of `subjects` who are members: their roles, and whether the
   * organization's SCIM client created them into it.
   */
  memberships(
    organizationId: string,
    subjects: readonly string[],
  ): Promise<Map<string, { roles: string[]; provisioned: boolean }>>;
  /** Adds a Group and gives its role to `members` (subjects of members), in one transaction. */
  create(
    organizationId: string,
    group: { id: string; name: string; externalId: string | null },
    members: readonly string[],
    maxRoles: number,
  ): Promise<OrganizationGroupRefusal | undefined>;
  /**
   * Changes a Group still at `version` and named `next.before`: its name (renaming the role of
   * every holder), externalId, and gives or takes its role, in one transaction.
   */
  replace(
    organizationId: string,
    id: string,
    version: number,
    next: { before: string; name: string; externalId: string | null },
    members: { add: readonly string[]; remove: readonly string[] },
    maxRoles: number,
  ): Promise<OrganizationGroupRefusal | undefined>;
  /** Removes a Group still at `version` and its role from every holder, in one transaction. */
  remove(organizationId: string, id: string, version: number): Promise<OrganizationGroupRefusal | undefined>;
}

/** Everything a Sigil instance persists. */
export interface Store {
  /** The grant table itself: only the repositories of `records` (and tests of the store) use it. */
  grants: GrantStore;
  /** The grant table's typed repositories, one per record kind, built once over `grants`. */
  records: GrantRecords;
  logout: LogoutStore;
  keys: KeyStore;
  users: UserStore;
  clients: ClientStore;
  factors: FactorStore;
  maintenance: Maintenance;
  /** WebAuthn credentials: passkeys and security keys (`webauthn-credentials.ts`). */
  webauthn: WebAuthnCredentialStore;
  /** Dynamic clients' registration records and initial access tokens (RFC 7591/7592, `client-registrations.ts`). */
  registrations: RegistrationStore;
  /** Users' email addresses (`user-emails.ts`). */
  emails: UserEmailStore;
  /** Users and groups as SCIM manages them (`directory.ts`). */
  directory: SqlDirectory;
  /** Runs a trivial query: resolves when the store answers (`/readyz`). */
  ping(): Promise<void>;
  close(): Promise<void>;
  /** Stored audit events (migration 0012_admin). */
  audit: AuditEventStore;
  /**
   * Identity resources, API scopes and resources, upstream providers managed at run time (migration
   * 0014_resources).
   */
  resources: ManagedResourceStore;
  /** Organizations managed at run time and the members of every organization (migration 0018_organizations). */
  organizations: OrganizationStore;
  /** Organizations' roles as SCIM Groups, and which members SCIM provisioned (migration 0019_organization_scim). */
  organizationGroups: OrganizationGroupStore;
  /** Secrets that never rotate, the same on every node (migration 0020_server_secrets). */
  secrets: ServerSecretStore;
  /** Webhooks managed at run time and the disabled ones (migration 0021_webhooks). */
  webhooks: SqlWebhookStore;
  /** The webhook outbox: deliveries per webhook and event (migration 0021_webhooks). */
  webhookOutbox: SqlWebhookOutbox;
  /** SAML service providers managed at run time (migration 0023_saml_service_providers). */
  samlServiceProviders: SqlSamlServiceProviderStore;
}
