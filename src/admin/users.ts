/**
 * User administration: the one door to the stored users (`sigil users`)
 * and to every user's second factors, for the command line and, later, the management API and
 * SCIM. Passwords are stored as argon2id hashes only. Config-file users are read-only and win over
 * stored ones of the same username or subject. A user's subject may never be a client id
 * (RFC 9068 §5).
 */
import { hash } from '@node-rs/argon2';
import { pino } from 'pino';
import type { ResolvedConfig } from '../config/loader.js';
import { clientSubjectCollision, type UserConfig } from '../config/schema.js';
import type { EventBus } from '../events/events.js';
import { MfaService } from '../mfa/factors.js';
import type { Store, StoredFactor, StoredUser } from '../stores/types.js';
import { newId, nowSeconds } from '../crypto/handles.js';
import { productName } from '../config/product-name.js';
import { describePasswordProblems, passwordProblems } from '../users/password-policy.js';
import { AdminError, isJsonObject } from './errors.js';
import { configUsersNamed } from './config-users.js';
import { SessionAdmin } from './sessions.js';
import { isEmailAddress } from '../email/account-email.js';
import type { UserDirectory } from '../users/directory.js';

/** The longest username, as in the config file. */
const MAX_USERNAME_LENGTH = 100;

/** A user as listed: where they are defined. */
export interface UserListing {
  subjectId: string;
  username: string;
  tenant: string | null;
  isActive: boolean;
  source: 'config' | 'store';
}

/** A user to add to the store. */
export interface NewUser {
  /** At most 100 characters; unique (case-insensitive) among the stored users of its tenant. */
  username: string;
  /** Default: a new random id. */
  subjectId?: string;
  /** Default: null, no tenant. */
  tenant?: string | null;
  /** The user's claims, a JSON object (values keep their JSON type); default `{}`. */
  claims?: unknown;
  /** Clear text, stored as an argon2id hash; none: no password sign-in. Checked by the password policy. */
  password?: string;
  /** The primary email address (the `email` claim), at most 320 characters; default none. */
  email?: string;
  /** Whether `email` is known to be the user's (`email_verified`); default false. */
  emailVerified?: boolean;
}

/** What `UserAdmin` asks a user directory: which usernames it holds. */
export type NameHolder = Pick<UserDirectory, 'name' | 'findByUsername'>;

/** Who besides the stored users holds a username (`UserAdmin.holderOf`). */
export type UsernameHolder = { kind: 'config'; username: string; subjectId: string } | { kind: 'directory'; directory: string };

/** A user saved by `UserAdmin.add`. */
export interface AddedUser {
  subjectId: string;
  /** The config-file user with the same username or subject, who wins over the stored one. */
  shadowedBy?: { username: string; subjectId: string };
}

/**
 * Who makes a management change, for its audit event: the door (`endpoint`: `cli`, `scim`, ...)
 * and, through the management API or SCIM, the client and user acting.
 */
export interface AdminAudit {
  events: EventBus;
  endpoint: string;
  clientId?: string;
  sub?: string;
}

/** What making a user inactive ended (zero and zero when the user was made active). */
export interface SignedOut {
  subjectId: string;
  /** Sessions ended, each with back-channel logout queued to its clients. */
  endedSessions: number;
  /** Grant rows revoked: refresh and reference tokens, access-token marks, unused codes. */
  revokedTokens: number;
}

/** @throws AdminError `invalid` (field `email`) unless `email` looks like an address (`isEmailAddress`). */
function checkEmail(email: string): void {
  if (!isEmailAddress(email)) throw new AdminError('invalid', `"${email.slice(0, 50)}" is not an email address`, 'email');
}

/** Adds, changes, removes and lists the stored users; lists and resets any user's second factors. */
export class UserAdmin {
  private readonly mfa: MfaService;

  /**
   * @param sessions ends a user's sessions (a running node's, which sends the back-channel logout
   *   tokens at once); default: a one-off service that queues them for the running nodes
   * @param directories the user directories (config `userDirectories` and a library user's own),
   *   whose usernames no stored user may take (`holderOf`); default none
   */
  constructor(
    private readonly store: Pick<Store, 'users' | 'clients' | 'factors' | 'records' | 'webauthn' | 'emails' | 'logout'>,
    private readonly config: ResolvedConfig,
    private readonly sessions = new SessionAdmin(store, config, pino({ level: 'silent' })),
    private readonly directories: readonly NameHolder[] = [],
  ) {
    // Listing and removing factors reads no secret: no data key. WebAuthn credentials are factors
    // here whether or not WebAuthn is on, so a reset leaves none behind.
    this.mfa = new MfaService(store.factors, store.records, config.mfa, undefined, store.webauthn);
  }

  /** Every user: the config file's first, then the stored ones (those the config shadows too). */
  async list(): Promise<UserListing[]> {
    const stored = await this.store.users.listUsers();
    const listing = (u: UserConfig | StoredUser, source: UserListing['source']): UserListing =>
      ({ subjectId: u.subjectId, username: u.username, tenant: u.tenant ?? null, isActive: u.isActive, source });
    return [...this.config.users.map((u) => listing(u, 'config')), ...stored.map((u) => listing(u, 'store'))];
  }

  /**
   * Who besides the stored users holds `username` (case-insensitively, in any tenant): a config-file
   * user, else a user directory. The one rule of the names a stored user may take: every door that
   * adds or renames a stored user asks it (this service's `add`, SCIM and the console through
   * `ScimService`, self-registration). A config user's name is refused by SCIM and the console and
   * only warned about by `add` (the config user wins, predictably: config users are looked up
   * first); a directory's name is refused everywhere (`checkUsernameFree`), since a stored user of
   * that name would answer for the directory user at sign-in.
   * @throws DirectoryUnavailable when a directory cannot answer: the name may be its user's, so the
   *   caller refuses with a temporary error (503) rather than take it unchecked.
   */
  async holderOf(username: string): Promise<UsernameHolder | undefined> {
    const config = configUsersNamed(this.config.users, username, null)[0];
    if (config) return { kind: 'config', username: config.username, subjectId: config.subjectId };
    for (const directory of this.directories) if (await directory.findByUsername(username)) return { kind: 'directory', directory: directory.name };
    return undefined;
  }

  /**
   * Refuses a username a user directory holds (`holderOf`), for a stored user added or renamed.
   * @throws AdminError `conflict` (field `username`, reason `exists`) naming the directory;
   *   DirectoryUnavailable when a directory cannot answer.
   */
  async checkNotDirectoryName(username: string): Promise<UsernameHolder | undefined> {
    const holder = await this.holderOf(username);
    if (holder?.kind === 'directory')
      throw new AdminError('conflict', `the username "${username}" belongs to a user of directory "${holder.directory}"`, 'username', undefined, { reason: 'exists', item: { kind: 'user', name: username } });
    return holder;
  }

  /**
   * The argon2id hash of a password someone chose for the user `username`, once the password
   * policy accepts it (NIST SP 800-63B-4 §3.1.1.2, `users/password-policy.ts`): the one check of
   * every management door that sets a password (`add`, `setPassword`, SCIM and the console).
   * @throws AdminError `invalid` (field `password`) naming every problem.
   */
  async passwordHash(password: string, username: string): Promise<string> {
    this.checkPolicy(password, username);
    return hash(password);
  }

  /**
   * Adds a user to the store. One of the config file's users may have the same username or subject:
   * the user is saved, and the config one wins (`shadowedBy`). A user directory's username is
   * refused (`holderOf`).
   * @throws AdminError `invalid` for a username over 100 characters (field `username`), claims that
   *   are not a JSON object (`claims`), or a subject that is a config-file or stored client's id
   *   (`subjectId`, RFC 9068 §5); `conflict` when a stored user of the tenant or a user directory
   *   has that username; then `invalid` (field `password`) for a password the policy refuses
   *   (`users/password-policy.ts`), `invalid` (field `email`) for an address that is not one;
   *   DirectoryUnavailable when a directory cannot answer (nothing is stored).
   */
  async add(user: NewUser): Promise<AddedUser> {
    const { username } = user;
    if (username.length > MAX_USERNAME_LENGTH)
      throw new AdminError('invalid', `the username is longer than ${MAX_USERNAME_LENGTH} characters`, 'username');
    const tenant = user.tenant ?? null;
    const subjectId = user.subjectId ?? newId();
    const claims = user.claims === undefined ? {} : user.claims;
    if (!isJsonObject(claims)) throw new AdminError('invalid', 'claims must be a JSON object', 'claims');
    if (await this.store.users.findUserByUsername(username, tenant))
      throw new AdminError('conflict', `a stored user "${username}" exists already`, 'username', undefined, { reason: 'exists', item: { kind: 'user', name: username } });
    const client = this.config.clients.find((c) => c.clientId === subjectId)?.clientId
      ?? (await this.store.clients.listClients()).find((c) => c.clientId === subjectId)?.clientId;
    if (client !== undefined) throw new AdminError('invalid', clientSubjectCollision(String(client), `user "${username}"`), 'subjectId');
    const holder = await this.checkNotDirectoryName(username);
    const shadow = holder?.kind === 'config' ? holder : this.config.users.find((u) => u.subjectId === subjectId);
    if (user.password !== undefined) this.checkPolicy(user.password, username);
    if (user.email !== undefined) checkEmail(user.email);
    const passwordHash = user.password === undefined ? null : await hash(user.password);
    await this.store.users.addUser({ subjectId, username, tenant, passwordHash, claims, isActive: true });
    if (user.email !== undefined) await this.store.emails.setPrimary(subjectId, user.email, user.emailVerified ?? false);
    return { subjectId, ...(shadow ? { shadowedBy: { username: shadow.username, subjectId: shadow.subjectId } } : {}) };
  }

  /**
   * Replaces a stored user's password (argon2id hash). The user is looked up first.
   * @param password clear text; undefined is refused once the user is found
   * @throws AdminError `read_only` for a config-file user, `not_found` for no such user, then
   *   `invalid` (field `password`) without a password or for one the password policy refuses.
   */
  async setPassword(username: string, tenant: string | null, password: string | undefined): Promise<void> {
    const user = await this.store.users.findUserByUsername(username, tenant);
    if (!user) throw this.notStored(username, tenant);
    if (password === undefined) throw new AdminError('invalid', 'a password is required', 'password');
    await this.store.users.setPasswordHash(user.subjectId, await this.passwordHash(password, user.username));
    await this.endMailedLinks(user.subjectId);
  }

  /**
   * Ends every reset, verification and registration link mailed to the user (`EmailLinks.revokeAllOf`):
   * once a password is set for them by anyone (an administrator, SCIM, the user), no older link
   * sets another one.
   */
  async endMailedLinks(subjectId: string): Promise<void> {
    await this.store.records.emailLinks.revokeAllOf(subjectId, (await this.store.emails.primary(subjectId))?.value, nowSeconds());
  }

  /**
   * Sets a stored user's primary email address (the `email` claim; `email_verified` as given).
   * @returns the user's subject.
   * @throws AdminError `read_only` for a config-file user, `not_found` for no such user, `invalid`
   *   (field `email`) for an address that is not one.
   */
  async setEmail(username: string, tenant: string | null, email: string, verified: boolean): Promise<string> {
    const user = await this.store.users.findUserByUsername(username, tenant);
    if (!user) throw this.notStored(username, tenant);
    checkEmail(email);
    await this.store.emails.setPrimary(user.subjectId, email, verified);
    return user.subjectId;
  }

  /**
   * Makes a stored user, found by username, active or inactive (`sigil users enable|disable`), as
   * `setActiveOf` does.
   * @throws AdminError `read_only` for a config-file user, `not_found` for no such user.
   */
  async setActive(username: string, tenant: string | null, active: boolean, audit: AdminAudit): Promise<SignedOut> {
    const user = await this.store.users.findUserByUsername(username, tenant);
    const done = user && (await this.setActiveOf(user.subjectId, active, audit));
    if (!done) throw this.notStored(username, tenant);
    return done;
  }

  /**
   * Makes a stored user active or inactive: the one way every management door (the CLI, SCIM)
   * does it. The flag is stored first, so that every later sign-in (password, passkey, upstream)
   * and every grant is refused as a wrong password is, and access tokens stop working at userinfo
   * and the management API. Made inactive, the user is then signed out everywhere
   * (`signOutEverywhere`). One `admin_changed` audit event (action `user.activate` or
   * `user.deactivate`, target the user) tells who did it.
   * @param write stores the flag and says whether it did; default: the flag alone
   *   (`UserStore.setUserActive`). SCIM passes its versioned write of the whole resource, so that
   *   the flag changes with the other attributes or not at all.
   * @returns undefined, changing nothing more, when `write` stored nothing (no such user, or a
   *   version moved on); else what was ended.
   */
  async setActiveOf(subjectId: string, active: boolean, audit: AdminAudit, write = () => this.store.users.setUserActive(subjectId, active)): Promise<SignedOut | undefined> {
    if (!(await write())) return undefined;
    const ended = active ? { subjectId, endedSessions: 0, revokedTokens: 0 } : await this.signOutEverywhere(subjectId);
    emitUserChange(audit, active ? 'user.activate' : 'user.deactivate', subjectId, { active, ...(active ? {} : { endedSessions: ended.endedSessions, revokedTokens: ended.revokedTokens }) });
    return ended;
  }

  /**
   * Signs a user out everywhere: ends every live session (back-channel logout tokens sent or
   * queued, OIDC Back-Channel Logout 1.0 §2.5; front-channel logout needs the browser, whose
   * session cookie then signs in nobody), then revokes every refresh token, reference token,
   * access-token mark and unused code the user holds, of every client (`GrantFamilies.revokeAllOf`),
   * and every reset, verification and registration link mailed to them (`EmailLinks.revokeAllOf`):
   * none sets a password once the user is made active again, or for a later user of the same
   * subject or address. Consents stay. For a user made inactive or removed.
   */
  async signOutEverywhere(subjectId: string): Promise<SignedOut> {
    const now = nowSeconds();
    await this.endMailedLinks(subjectId);
    const endedSessions = await this.sessions.revokeAllOf(subjectId);
    const revokedTokens = await this.store.records.families.revokeAllOf(subjectId, now);
    return { subjectId, endedSessions, revokedTokens };
  }

  /**
   * Replaces a stored user's claims.
   * @param claims a JSON object of claim names and values
   * @throws AdminError `read_only` for a config-file user, `not_found` for no such user, then
   *   `invalid` (field `claims`) when `claims` is not a JSON object.
   */
  async setClaims(username: string, tenant: string | null, claims: unknown): Promise<string> {
    const user = await this.store.users.findUserByUsername(username, tenant);
    if (!user) throw this.notStored(username, tenant);
    if (!isJsonObject(claims)) throw new AdminError('invalid', 'claims must be a JSON object', 'claims');
    await this.store.users.updateClaims(user.subjectId, claims);
    return user.subjectId;
  }

  /**
   * Removes a stored user, found by username (in `tenant`) or else by subject, with their linked
   * upstream identities and WebAuthn credentials, once they are signed out everywhere
   * (`signOutEverywhere`).
   * Emits the `admin_changed` event `user.remove` through `audit`.
   * @returns the user removed.
   * @throws AdminError `read_only` for a config-file user (by username or subject), `not_found` for no such user.
   */
  async remove(usernameOrSubject: string, tenant: string | null, audit: AdminAudit): Promise<StoredUser> {
    const user = (await this.store.users.findUserByUsername(usernameOrSubject, tenant)) ?? (await this.store.users.findUserBySubject(usernameOrSubject));
    const ended = user ? await this.signOutEverywhere(user.subjectId) : undefined;
    if (!user || !ended || !(await this.store.users.removeUser(user.subjectId))) throw this.notStored(usernameOrSubject, tenant, true);
    emitUserChange(audit, 'user.remove', user.subjectId, { username: user.username, endedSessions: ended.endedSessions, revokedTokens: ended.revokedTokens });
    return user;
  }

  /**
   * A user's second factors: TOTP, recovery codes, security keys and passkeys. The user is the
   * first config-file user of that name (in `tenant` when not null), else the stored one.
   * @throws AdminError `not_found` when there is no such user.
   */
  async secondFactors(username: string, tenant: string | null): Promise<{ subjectId: string; factors: StoredFactor[] }> {
    const subjectId = await this.factorOwner(username, tenant);
    return { subjectId, factors: await this.mfa.listFactors(subjectId) };
  }

  /**
   * Removes every second factor of a user (found as by `secondFactors`), WebAuthn credentials
   * included: the next sign-in is by password alone, or enrols anew where MFA is required. Emits
   * one `mfa_removed` audit event per kind removed.
   * @param audit where the events go, and the `endpoint` they name (e.g. `cli`)
   * @returns the subject and how many factors were removed.
   * @throws AdminError `not_found` when there is no such user.
   */
  async resetSecondFactors(username: string, tenant: string | null, audit: AdminAudit): Promise<{ subjectId: string; removed: number }> {
    const subjectId = await this.factorOwner(username, tenant);
    const factors = await this.mfa.listFactors(subjectId);
    const removed = await this.mfa.removeAllFactors(subjectId);
    for (const kind of new Set(factors.map((f) => f.kind))) audit.events.emit({ name: 'mfa_removed', endpoint: audit.endpoint, subjectId, factor: kind });
    return { subjectId, removed };
  }

  /**
   * NIST SP 800-63B-4 §3.1.1.2 through the password policy.
   * @throws AdminError `invalid` (field `password`) naming every problem, e.g. "the password is a
   *   common or breached password".
   */
  private checkPolicy(password: string, username: string): void {
    const problems = passwordProblems(password, { username, productName: productName(this.config) });
    if (problems.length > 0) throw new AdminError('invalid', describePasswordProblems(problems), 'password');
  }

  private async factorOwner(username: string, tenant: string | null): Promise<string> {
    const stored = await this.store.users.findUserByUsername(username, tenant);
    const subjectId = configUsersNamed(this.config.users, username, tenant)[0]?.subjectId ?? stored?.subjectId;
    if (subjectId === undefined) throw new AdminError('not_found', `no user "${username}"`);
    return subjectId;
  }

  /** The refusal for a user that is not stored: `read_only` when the config file defines them. */
  private notStored(name: string, tenant: string | null, orSubject = false): AdminError {
    const inConfig = configUsersNamed(this.config.users, name, tenant).length > 0 || (orSubject && this.config.users.some((u) => u.subjectId === name));
    return inConfig
      ? new AdminError('read_only', `user "${name}" is defined in the config file, which is read-only`, undefined, undefined, { reason: 'read_only', item: { kind: 'user', name } })
      : new AdminError('not_found', `no stored user "${name}"`, undefined, undefined, { reason: 'not_found', item: { kind: 'user', name } });
  }
}

/** Emits the `admin_changed` event of a change to the user `subjectId`, naming the actor of `audit`. */
function emitUserChange(audit: AdminAudit, action: string, subjectId: string, changes: Record<string, unknown>): void {
  audit.events.emit({
    name: 'admin_changed',
    endpoint: audit.endpoint,
    ...(audit.clientId !== undefined ? { clientId: audit.clientId } : {}),
    ...(audit.sub !== undefined ? { subjectId: audit.sub } : {}),
    action,
    target: { type: 'user', id: subjectId },
    changes,
  });
}
