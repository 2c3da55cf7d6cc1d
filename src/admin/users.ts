/**
 * User administration: the one writer of the stored users, for every door that creates, changes or
 * removes one (`sigil users`, /admin/v1/users, the web console, SCIM, self-registration, the
 * password reset by mail, the account page), and the reader of every user's second factors. The
 * rules live here: the username and subject bounds and the password policy (`user-rules.ts`), which
 * usernames are free (stored users, config-file users, user directories), what making a user
 * inactive ends, and the `admin_changed` audit event of each change. Passwords are stored as
 * argon2id hashes only. Config-file users are read-only and win over stored ones of the same
 * username or subject. A user's subject may never be a client id (RFC 9068 §5).
 */
import { hash } from '@node-rs/argon2';
import { pino } from 'pino';
import type { ResolvedConfig } from '../config/loader.js';
import type { UserConfig } from '../config/schema.js';
import { MfaService } from '../mfa/factors.js';
import type { DirectoryUser, NewMembership, UserWrite } from '../stores/directory.js';
import { externalLinkKey, type Store, type StoredFactor, type StoredUser } from '../stores/types.js';
import { newId, nowSeconds } from '../crypto/handles.js';
import { productName } from '../config/product-name.js';
import type { PasswordProblem } from '../users/password-policy.js';
import type { User } from '../users/user.js';
import { AdminError, ifMatchHolds } from './errors.js';
import { configUsersNamed } from './config-users.js';
import { SessionAdmin } from './sessions.js';
import { UserNames } from './user-names.js';
import { addUpstreamUser, verifiedOwner } from './upstream-links.js';
import { auditChanged, auditCreated, emitUserChange } from './user-audit.js';
import {
  carriedOver,
  checkClaims,
  checkEmail,
  checkEmails,
  checkPassword,
  checkSubject,
  checkUsername,
  conflictOf,
  policyProblems,
  withPrimary,
} from './user-rules.js';
import type {
  AddedUser,
  AdminAudit,
  NameHolder,
  NewUser,
  PreparedUser,
  RemovedUser,
  SignedOut,
  UserChange,
  UserKey,
  UserListing,
  UsernameHolder,
} from './user-types.js';
import { configUserView, pageOfUsers, storedUserView, type UserView } from './user-views.js';
import { memberEvent, userChanged, userCreated, userDeleted } from './webhook-data.js';

/** Tries of a change that names no version, each against the newest one, before it is refused as concurrent. */
const UPDATE_TRIES = 3;

/** Adds, changes, removes and lists the stored users; lists and resets any user's second factors. */
export class UserAdmin {
  private readonly mfa: MfaService;
  private readonly names: UserNames;

  /**
   * @param sessions ends a user's sessions (a running node's, which sends the back-channel logout
   *   tokens at once); default: a one-off service that queues them for the running nodes
   * @param directories the user directories (config `userDirectories` and a library user's own),
   *   whose usernames no stored user may take (`holderOf`); default none
   */
  constructor(
    private readonly store: Pick<
      Store,
      'users' | 'clients' | 'factors' | 'records' | 'webauthn' | 'emails' | 'logout' | 'directory' | 'grants'
    >,
    private readonly config: ResolvedConfig,
    private readonly sessions = new SessionAdmin(store, config, pino({ level: 'silent' })),
    directories: readonly NameHolder[] = [],
  ) {
    // Listing and removing factors reads no secret: no data key. WebAuthn credentials are factors
    // here whether or not WebAuthn is on, so a reset leaves none behind.
    this.mfa = new MfaService(store.factors, store.records, config.mfa, undefined, store.webauthn);
    this.names = new UserNames(store, config, directories);
  }

  /** Every user: the config file's first, then the stored ones (those the config shadows too). */
  async list(): Promise<UserListing[]> {
    const stored = await this.store.users.listUsers();
    const listing = (u: UserConfig | StoredUser, source: UserListing['source']): UserListing => ({
      subjectId: u.subjectId,
      username: u.username,
      tenant: u.tenant ?? null,
      isActive: u.isActive,
      source,
    });
    return [...this.config.users.map((u) => listing(u, 'config')), ...stored.map((u) => listing(u, 'store'))];
  }

  /**
   * A page of users: the config file's first (in file order), then the stored ones by username.
   * @param query `contains`: only usernames containing it (case-insensitive); `cursor`: the `next`
   *   of the previous page; `limit`: users per page
   * @returns the page and the cursor of the next one (undefined on the last).
   * @throws AdminError `invalid` (field `cursor`) for a cursor of no page; ScimError 400 `tooMany`
   *   when `contains` would scan more users than the store reads in one list (`stores/directory.ts`).
   */
  async page(query: {
    contains?: string;
    cursor?: string;
    limit: number;
  }): Promise<{ users: UserView[]; next?: string }> {
    return pageOfUsers(this.store.directory, this.config.users, query);
  }

  /**
   * One user, config-file (which wins) or stored.
   * @throws AdminError `not_found`.
   */
  async get(subjectId: string): Promise<UserView> {
    const inConfig = this.config.users.find((u) => u.subjectId === subjectId);
    if (inConfig) return configUserView(inConfig);
    return storedUserView(await this.stored(subjectId));
  }

  /**
   * Who besides the stored users holds `username` (`UserNames.holderOf`): a config-file user, else
   * a user directory.
   * @throws DirectoryUnavailable when a directory cannot answer.
   */
  holderOf(username: string): Promise<UsernameHolder | undefined> {
    return this.names.holderOf(username);
  }

  /**
   * The subject of the user an admin names by username (`UserNames.subjectOf`): for the doors that
   * take a username where the services take a subject (the console's member form).
   * @throws DirectoryUnavailable when a directory cannot answer.
   */
  subjectOfUsername(username: string): Promise<string | undefined> {
    return this.names.subjectOf(username);
  }

  /**
   * The password policy's problems with a password someone chose for the user `username` (NIST SP
   * 800-63B-4 §3.1.1.2, `users/password-policy.ts`), empty when it is accepted: for the pages that
   * word each problem before anything is spent (a mailed link, the current session).
   */
  passwordProblems(password: string, username: string): PasswordProblem[] {
    return policyProblems(password, username, productName(this.config));
  }

  /**
   * Checks a new user against every rule and hashes the password; stores nothing (`commit` does).
   * For a door that must spend something between the two (self-registration consumes its link).
   * @param strictNames whether a config-file user's username or subject is refused (every door but
   *   `sigil users add`, which saves such a user, `shadowedBy` naming the config user who wins)
   * @throws AdminError `invalid` for a username out of bounds (field `username`), claims that are
   *   not a JSON object (`claims`), a subject out of bounds or that is a client's id (`subjectId`,
   *   RFC 9068 §5); `conflict` (field `username`) when a stored user of the tenant (detail `exists`),
   *   a user directory or (strict) a config-file user (no detail) holds the username, (field
   *   `subjectId`) when a stored or (strict) config-file user has the subject; `PasswordRefused`
   *   for a password the policy refuses; `invalid` (field `email`) for addresses that are not;
   *   DirectoryUnavailable when a directory cannot answer.
   */
  async prepare(user: NewUser, strictNames = false): Promise<PreparedUser> {
    const { username } = user;
    checkUsername(username);
    const tenant = user.tenant ?? null;
    const subjectId = user.subjectId ?? newId();
    checkSubject(subjectId);
    const claims = checkClaims(user.claims === undefined ? {} : user.claims);
    await this.names.checkNameFree(username, tenant, undefined, strictNames);
    await this.names.checkSubjectFree(subjectId, username);
    const shadow =
      configUsersNamed(this.config.users, username, null)[0] ??
      this.config.users.find((u) => u.subjectId === subjectId);
    if (shadow && strictNames)
      throw new AdminError('conflict', `subject "${subjectId}" is a config-file user's`, 'subjectId');
    if (user.password !== undefined) checkPassword(user.password, username, productName(this.config));
    const emails = user.emails
      ? user.emails.map((e) => ({ ...e, verified: false }))
      : user.email === undefined
        ? []
        : [{ value: user.email, type: null, primary: true, verified: user.emailVerified ?? false }];
    if (user.email !== undefined) checkEmail(user.email);
    checkEmails(emails);
    const write: UserWrite = {
      username,
      tenant,
      externalId: user.externalId ?? null,
      isActive: user.active ?? true,
      claims,
      emails,
      ...(user.password !== undefined ? { passwordHash: await hash(user.password) } : {}),
    };
    return {
      subjectId,
      write,
      ...(shadow ? { shadowedBy: { username: shadow.username, subjectId: shadow.subjectId } } : {}),
    };
  }

  /**
   * Stores a user `prepare` checked, with their addresses and, with `membership`, their membership
   * of that organization, in one transaction; emits `admin_changed` (`user.create`) when `audit` is
   * given.
   * @throws AdminError `conflict` (field `username`) when a user took the name meanwhile.
   */
  async commit(user: PreparedUser, audit?: AdminAudit, membership?: NewMembership): Promise<AddedUser> {
    const { subjectId, write } = user;
    try {
      const events = userCreated(subjectId, write, membership?.organizationId);
      await this.store.directory.addUser(subjectId, write, nowSeconds(), membership, events);
    } catch (err) {
      throw conflictOf(err, write.username);
    }
    if (audit && !audit.recordsChanges) auditCreated(audit, subjectId, write);
    return { subjectId, ...(user.shadowedBy ? { shadowedBy: user.shadowedBy } : {}) };
  }

  /**
   * Adds a user to the store: `prepare`, then `commit`. One of the config file's users may have the
   * same username or subject unless `strictNames`: the user is saved, and the config one wins.
   * `membership`: the user joins that organization with their creation (SCIM per organization).
   * @throws as `prepare` and `commit`.
   */
  async create(
    user: NewUser,
    options: { audit?: AdminAudit; strictNames?: boolean; membership?: NewMembership } = {},
  ): Promise<AddedUser> {
    return this.commit(await this.prepare(user, options.strictNames), options.audit, options.membership);
  }

  /**
   * Changes a stored user: the one way every door changes one. The write is conditional on the
   * version read (one UPDATE), so a concurrent change is never overwritten unseen. A user made
   * inactive is then signed out everywhere (`signOutEverywhere`): every later sign-in (password,
   * passkey, upstream) and every grant is refused as a wrong password is, and access tokens stop
   * working at userinfo and the management API. A password set ends the links mailed to the user.
   * With `audit`, one `admin_changed` event per aspect changed: `user.activate` or
   * `user.deactivate`, `user.password`, `user.claims` (the claim names), `user.update` (username,
   * external id, addresses).
   * @param options `ifMatch`: the user's ETag as shown (`UserView.etag`), else `precondition_failed`;
   *   `version`: the directory version the caller read (SCIM), else nothing is changed and the
   *   result is undefined; with neither, the change is applied to the newest version. `signOut`:
   *   sign the user out everywhere after the change, as deactivation does (a password reset by
   *   mail: whoever knew the old password)
   * @returns what signing out ended, if the user was made inactive or `signOut`; undefined as said.
   * @throws AdminError `read_only` for a config-file user, `not_found`, `precondition_failed`, the
   *   refusals of `prepare` for the values given; DirectoryUnavailable for a rename while a
   *   directory cannot answer.
   */
  async update(
    subjectId: string,
    change: UserChange,
    options: { audit?: AdminAudit; ifMatch?: string; version?: number; signOut?: boolean } = {},
  ): Promise<{ signedOut?: SignedOut } | undefined> {
    for (let i = 0; i < (options.version === undefined ? UPDATE_TRIES : 1); i++) {
      const before = await this.stored(subjectId);
      if (!ifMatchHolds(options.ifMatch, storedUserView(before).etag))
        throw new AdminError(
          'precondition_failed',
          `user "${before.username}" is not at the version If-Match names`,
          undefined,
          undefined,
          { reason: 'changed', item: { kind: 'user', name: before.username } },
        );
      if (options.version !== undefined && before.version !== options.version) return undefined;
      const write = await this.changed(before, change);
      let written: boolean;
      try {
        const events = userChanged(before, write);
        written = await this.store.directory.replaceUser(subjectId, write, before.version, nowSeconds(), events);
      } catch (err) {
        throw conflictOf(err, write.username);
      }
      if (written) return this.changeMade(before, write, change, options);
      if (options.version !== undefined) return undefined;
    }
    throw new AdminError(
      'precondition_failed',
      `user "${subjectId}" was changed concurrently; try again`,
      undefined,
      undefined,
      { reason: 'changed', item: { kind: 'user', name: subjectId } },
    );
  }

  /**
   * Makes a stored user active or inactive (`update` with `active`, which says what that ends).
   * @throws AdminError `read_only` for a config-file user, `not_found` for no such user.
   */
  async setActive(user: UserKey, active: boolean, audit: AdminAudit): Promise<SignedOut> {
    const subjectId = await this.subjectOf(user);
    const done = await this.update(subjectId, { active }, { audit });
    return done?.signedOut ?? { subjectId, endedSessions: 0, revokedTokens: 0 };
  }

  /**
   * Replaces a stored user's password (`update`). The user is looked up first.
   * @param password clear text; undefined is refused once the user is found
   * @throws AdminError `read_only` for a config-file user, `not_found` for no such user, then
   *   `invalid` (field `password`) without a password, `PasswordRefused` for one the policy refuses.
   */
  async setPassword(username: string, tenant: string | null, password: string | undefined): Promise<void> {
    const subjectId = await this.subjectOf({ username, tenant });
    if (password === undefined) throw new AdminError('invalid', 'a password is required', 'password');
    await this.update(subjectId, { password });
  }

  /**
   * Sets a stored user's primary address (`update` with `email`).
   * @returns the user's subject.
   * @throws AdminError `read_only` for a config-file user, `not_found` for no such user, `invalid`
   *   (field `email`) for an address that is not one.
   */
  async setEmail(username: string, tenant: string | null, email: string, verified: boolean): Promise<string> {
    const subjectId = await this.subjectOf({ username, tenant });
    await this.update(subjectId, { email: { value: email, verified } });
    return subjectId;
  }

  /**
   * Replaces a stored user's claims (`update` with `claims`).
   * @throws AdminError `read_only` for a config-file user, `not_found` for no such user, then
   *   `invalid` (field `claims`) when `claims` is not a JSON object.
   */
  async setClaims(username: string, tenant: string | null, claims: unknown): Promise<string> {
    const subjectId = await this.subjectOf({ username, tenant });
    await this.update(subjectId, { claims });
    return subjectId;
  }

  /**
   * Removes a stored user with their addresses, group memberships, linked upstream identities,
   * second factors and WebAuthn credentials, once they are signed out everywhere
   * (`signOutEverywhere`). Emits the `admin_changed` event `user.remove` through `audit`.
   * @param ifMatch when given, the user's ETag as shown (`UserView.etag`)
   * @throws AdminError `read_only` for a config-file user, `not_found`, `precondition_failed`.
   */
  async delete(subjectId: string, audit: AdminAudit, ifMatch?: string): Promise<RemovedUser> {
    const user = await this.stored(subjectId);
    if (!ifMatchHolds(ifMatch, storedUserView(user).etag))
      throw new AdminError(
        'precondition_failed',
        `user "${user.username}" is not at the version If-Match names`,
        undefined,
        undefined,
        { reason: 'changed', item: { kind: 'user', name: user.username } },
      );
    const ended = await this.signOutEverywhere(subjectId);
    const left = (ids: string[]) => ids.map((id) => memberEvent('organization.member_removed', id, subjectId, []));
    if (!(await this.store.users.removeUser(subjectId, userDeleted(subjectId, user.username), left)))
      throw this.notStored(subjectId, null, 'subject');
    if (!audit.recordsChanges)
      emitUserChange(audit, 'user.remove', subjectId, {
        username: user.username,
        endedSessions: ended.endedSessions,
        revokedTokens: ended.revokedTokens,
      });
    return { subjectId, username: user.username };
  }

  /**
   * Deletes a stored user found by username (in `tenant`) or else by subject (`delete`), as
   * `sigil users remove` names them.
   * @throws AdminError `read_only` for a config-file user (by username or subject), `not_found` for no such user.
   */
  async deleteNamed(usernameOrSubject: string, tenant: string | null, audit: AdminAudit): Promise<RemovedUser> {
    const user =
      (await this.store.users.findUserByUsername(usernameOrSubject, tenant)) ??
      (await this.store.users.findUserBySubject(usernameOrSubject));
    if (!user) throw this.notStored(usernameOrSubject, tenant, 'either');
    return this.delete(user.subjectId, audit);
  }

  /**
   * Marks a user's address verified (`email_verified`), once its owner followed the link mailed to
   * it: only while the address is still the user's.
   * @returns false when the user has no such address (nothing changes).
   */
  async confirmEmail(subjectId: string, address: string): Promise<boolean> {
    return this.store.emails.markVerified(subjectId, address);
  }

  /**
   * Finds or creates the local user linked to an upstream identity (a sign-in at an upstream
   * provider, federation/upstream.ts) and writes the claims the provider mapped, at every
   * sign-in, so that they follow the upstream. The link is the exact pair (provider, upstream
   * `sub`: `externalLinkKey`), so the subject stays the same across sign-ins and two upstream users
   * never share a local account. With `linkByEmail` (the provider's `linkVerifiedEmail`), a first
   * sign-in whose claims say `email_verified: true` links to the one stored user of that tenant
   * whose primary address is that email and verified; an unverified email never links to anyone.
   * Otherwise a new user is made, with no password; their
   * username, for display only, is `<provider>:<sub>` when that fits and is free, else
   * `<provider>:<local subject>`. The provider owns the claims named in `owned`: one it
   * does not send is removed; every other claim of the user (set locally, or by another provider)
   * stays.
   * @param sub the upstream subject, 1 to 255 characters (`upstreamSubject`)
   * @returns the user, with the claims written.
   * @throws Error when the link names a user that no longer exists.
   */
  async linkUpstream(
    provider: string,
    sub: string,
    claims: Record<string, unknown>,
    tenant: string | null,
    owned: readonly string[] = Object.keys(claims),
    linkByEmail = false,
  ): Promise<User> {
    const link = { key: externalLinkKey(provider, sub), provider, upstreamSubject: sub };
    let subjectId = await this.store.users.findExternalLink(link.key);
    if (subjectId === undefined) {
      const owner = linkByEmail ? await verifiedOwner(this.store, claims, tenant) : undefined;
      subjectId = owner
        ? await this.store.users.addExternalLink(link, owner)
        : await addUpstreamUser(this.store, link, claims, tenant);
    }
    const existing = await this.store.users.findUserBySubject(subjectId);
    if (!existing) throw new Error('the linked local user no longer exists');
    const kept = Object.fromEntries(Object.entries(existing.claims).filter(([c]) => !owned.includes(c)));
    const written = { ...kept, ...claims };
    await this.store.users.updateClaims(existing.subjectId, written);
    return {
      subjectId: existing.subjectId,
      username: existing.username,
      tenant: existing.tenant,
      isActive: existing.isActive,
      claims: written,
    };
  }

  /**
   * A user's second factors: TOTP, recovery codes, security keys and passkeys. The user is the
   * first config-file user of that name (in `tenant` when not null), else the stored one.
   * @throws AdminError `not_found` when there is no such user.
   */
  async secondFactors(
    username: string,
    tenant: string | null,
  ): Promise<{ subjectId: string; factors: StoredFactor[] }> {
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
  async resetSecondFactors(
    username: string,
    tenant: string | null,
    audit: AdminAudit,
  ): Promise<{ subjectId: string; removed: number }> {
    const subjectId = await this.factorOwner(username, tenant);
    const factors = await this.mfa.listFactors(subjectId);
    const removed = await this.mfa.removeAllFactors(subjectId);
    for (const kind of new Set(factors.map((f) => f.kind)))
      audit.events.emit({ name: 'mfa_removed', endpoint: audit.endpoint, subjectId, factor: kind });
    return { subjectId, removed };
  }

  /** The stored user to change, with what the directory holds of them. @throws AdminError `read_only`, `not_found`. */
  private async stored(subjectId: string): Promise<DirectoryUser> {
    const user = await this.store.directory.user(subjectId);
    if (!user) throw this.notStored(subjectId, null, 'subject');
    return user;
  }

  /** What `change` makes of `before`, checked by the rules of `prepare`. */
  private async changed(before: DirectoryUser, change: UserChange): Promise<UserWrite> {
    const username = change.username ?? before.username;
    if (username !== before.username) {
      checkUsername(username);
      if (username.toLowerCase() !== before.username.toLowerCase())
        await this.names.checkNameFree(username, before.tenant === '' ? null : before.tenant, before.subjectId, true);
    }
    const claims = change.claims === undefined ? before.claims : checkClaims(change.claims, before.claims);
    if (change.email !== undefined) checkEmail(change.email.value);
    const emails = change.emails
      ? carriedOver(change.emails, before.emails)
      : change.email === undefined
        ? before.emails
        : withPrimary(before.emails, change.email);
    checkEmails(emails);
    if (change.password !== undefined) checkPassword(change.password, username, productName(this.config));
    return {
      username,
      externalId: change.externalId === undefined ? before.externalId : change.externalId,
      isActive: change.active ?? before.isActive,
      claims,
      emails,
      ...(change.password !== undefined
        ? { passwordHash: await hash(change.password), passwordChangeRequired: change.passwordChangeRequired === true }
        : {}),
    };
  }

  /**
   * What follows a change written over `before`: the sign-out of a deactivated user (or as asked), mailed
   * links ended, the audit events.
   */
  private async changeMade(
    before: DirectoryUser,
    write: UserWrite,
    change: UserChange,
    options: { audit?: AdminAudit; signOut?: boolean },
  ): Promise<{ signedOut?: SignedOut }> {
    const { subjectId } = before;
    const { audit } = options;
    const deactivated = before.isActive && !write.isActive;
    const signedOut = deactivated || options.signOut ? await this.signOutEverywhere(subjectId) : undefined;
    // Once a password is set for them by anyone, no older link sets another one.
    if (write.passwordHash !== undefined && !signedOut) await this.endMailedLinks(subjectId);
    if (audit) auditChanged(audit, subjectId, before, write, change, signedOut);
    return signedOut ? { signedOut } : {};
  }

  /**
   * Signs a user out everywhere: ends every live session (back-channel logout tokens sent or
   * queued, OIDC Back-Channel Logout 1.0 §2.5; front-channel logout needs the browser, whose
   * session cookie then signs in nobody), then revokes every refresh token, reference token,
   * access-token mark and unused code the user holds, of every client (`GrantFamilies.revokeAllOf`),
   * and every reset, verification and registration link mailed to them (`endMailedLinks`): none
   * sets a password once the user is made active again, or for a later user of the same subject
   * or address. Consents stay. For a user made inactive or removed.
   */
  private async signOutEverywhere(subjectId: string): Promise<SignedOut> {
    const now = nowSeconds();
    await this.endMailedLinks(subjectId);
    const endedSessions = await this.sessions.revokeAllOf(subjectId);
    const revokedTokens = await this.store.records.families.revokeAllOf(subjectId, now);
    return { subjectId, endedSessions, revokedTokens };
  }

  /** Ends every reset, verification and registration link mailed to the user (`EmailLinks.revokeAllOf`). */
  private async endMailedLinks(subjectId: string): Promise<void> {
    await this.store.records.emailLinks.revokeAllOf(
      subjectId,
      (await this.store.emails.primary(subjectId))?.value,
      nowSeconds(),
    );
  }

  /** The subject of a stored user. @throws AdminError `read_only` for a config-file user, `not_found`. */
  private async subjectOf(user: UserKey): Promise<string> {
    if (typeof user === 'string') return user;
    const found = await this.store.users.findUserByUsername(user.username, user.tenant);
    if (!found) throw this.notStored(user.username, user.tenant, 'name');
    return found.subjectId;
  }

  private async factorOwner(username: string, tenant: string | null): Promise<string> {
    const stored = await this.store.users.findUserByUsername(username, tenant);
    const subjectId = configUsersNamed(this.config.users, username, tenant)[0]?.subjectId ?? stored?.subjectId;
    if (subjectId === undefined) throw new AdminError('not_found', `no user "${username}"`);
    return subjectId;
  }

  /**
   * The refusal for a user that is not stored: `read_only` when the config file defines them, looked up `by`
   * username, subject or either.
   */
  private notStored(name: string, tenant: string | null, by: 'name' | 'subject' | 'either'): AdminError {
    const named = by !== 'subject' && configUsersNamed(this.config.users, name, tenant).length > 0;
    const inConfig = named || (by !== 'name' && this.config.users.some((u) => u.subjectId === name));
    return inConfig
      ? new AdminError(
          'read_only',
          `user "${name}" is defined in the config file, which is read-only`,
          undefined,
          undefined,
          { reason: 'read_only', item: { kind: 'user', name } },
        )
      : new AdminError('not_found', `no stored user "${name}"`, undefined, undefined, {
          reason: 'not_found',
          item: { kind: 'user', name },
        });
  }
}
