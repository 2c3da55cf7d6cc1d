/**
 * Self-service of a signed-in user (the pages of `ui/account-self-service.ts`): changing
 * the password, the user's sessions, the apps connected to the account (consents and tokens), and
 * the profile claims the config lets users edit. Every change is an audit event; every lookup is
 * by the signed-in user's subject, so one user never reads or ends another user's things.
 *
 * Only stored users with a password change anything here (`AccountKind`): a config-file user is
 * changed in the file, a user of an upstream provider or directory where that user lives (their
 * claims are written again at every sign-in). Sessions and connected apps are everybody's.
 */
import { nowSeconds } from '../crypto/handles.js';
import type { EventBus, RequestOrigin } from '../events/events.js';
import { type FailureLimiter, userAttempt } from '../limits/failure-limiter.js';
import type { ClientLookup, EndedSession, LogoutService } from '../logout/logout.js';
import type { OAuthError } from '../protocol/errors.js';
import type { GrantRecords } from '../stores/records/index.js';
import type { Session } from '../stores/records/sessions.js';
import type { UserStore } from '../stores/types.js';
import { MAX_PASSWORD_LENGTH, type PasswordProblem } from './password-policy.js';
import type { UserService } from './users.js';

/**
 * Where a user lives, as the account pages see it: `stored` (in Sigil's store with a password: the
 * password and the editable claims may change), `config` (the config file: read-only),
 * `external` (stored without a password: a user of an upstream provider or a directory, or one
 * who signs in with passkeys only; read-only).
 */
export type AccountKind = 'stored' | 'config' | 'external';

/**
 * The outcome of a password change: not allowed for this kind of user (`read_only`); the failure
 * limits refuse the check of the current password (`refused`, 429 with `Retry-After`); the current
 * password is missing or wrong (`wrong_current`); the two new ones differ (`mismatch`); the policy
 * refuses the new one (`weak`, with its problems); or done (`changed`: how many other sessions
 * ended and tokens were revoked).
 */
export type PasswordChange =
  | { outcome: 'read_only' }
  | { outcome: 'refused'; refusal: OAuthError }
  | { outcome: 'wrong_current' }
  | { outcome: 'mismatch' }
  | { outcome: 'weak'; problems: PasswordProblem[] }
  | { outcome: 'changed'; endedSessions: number; revokedTokens: number };

/** One of the user's live sessions, as listed. */
export interface ListedSession {
  sid: string;
  /** Unix seconds of the sign-in. */
  authTime: number;
  userAgent?: string;
  address?: string;
  /** The session of the request that lists them. */
  current: boolean;
}

/** An app connected to the account: its consent and live refresh tokens. */
export interface ConnectedApp {
  clientId: string;
  /** The client's `clientName`, else its id. */
  name: string;
  /** The scopes consented to and held by refresh tokens, sorted. */
  scopes: string[];
  /** Whether a remembered consent is stored. */
  consented: boolean;
  /** How many live refresh tokens the client holds for the user. */
  refreshTokens: number;
  /** Unix seconds of the newest consent or token. */
  since: number;
}

/** The outcome of a profile edit: done, or per claim the reason it was refused (nothing stored). */
export type ProfileEdit =
  | { outcome: 'read_only' }
  | { outcome: 'invalid'; errors: Record<string, ProfileProblem> }
  | { outcome: 'saved'; changed: string[] };

/** Why an edited claim value is refused. */
export type ProfileProblem = 'too_long' | 'control_characters' | 'not_a_date' | 'not_a_locale' | 'not_a_zone';

/** The longest value of an edited claim, characters (bounded like a username). */
export const PROFILE_VALUE_MAX = 200;

/** The most consents or refresh tokens read to list connected apps. */
const GRANTS_READ = 500;

/** Validators of the claims with a format (OIDC Core §5.1); the others are free text. */
const CLAIM_FORMATS: Record<string, { pattern: RegExp; problem: ProfileProblem }> = {
  // YYYY-MM-DD, or YYYY alone, or 0000-MM-DD when the year is withheld (§5.1).
  birthdate: { pattern: /^(?:\d{4}|\d{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12]\d|3[01]))$/, problem: 'not_a_date' },
  // A BCP 47 language tag (RFC 5646), or with an underscore as §5.1 allows.
  locale: { pattern: /^[A-Za-z]{2,8}(?:[-_][A-Za-z0-9]{1,8}){0,4}$/, problem: 'not_a_locale' },
  // A tz database name: Europe/Paris, America/Los_Angeles, UTC.
  zoneinfo: { pattern: /^[A-Za-z][A-Za-z0-9_+-]*(?:\/[A-Za-z0-9_+-]+){0,2}$/, problem: 'not_a_zone' },
};

// C0 and C1 controls, and the bidirectional overrides that can make a name read otherwise.
const CONTROL = /[\u0000-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/;

/**
 * The writes of the account pages, made by the user administration (`UserAdmin`, a layer up),
 * which holds the password policy and writes every stored user. Structural, as this layer may not
 * import it.
 */
export interface AccountWrites {
  /**
   * The password policy's problems with `password` for the user `username` (NIST SP 800-63B-4
   * §3.1.1.2); empty: accepted.
   */
  passwordProblems(password: string, username: string): PasswordProblem[];
  /**
   * Changes a stored user: a new password (checked by the policy, stored as an argon2id hash; the
   * links mailed to the user end) or new claims.
   */
  update(subjectId: string, change: { password?: string; claims?: Record<string, unknown> }): Promise<unknown>;
}

/** The account's services for the pages. Times are Unix seconds. */
export class AccountService {
  /**
   * @param editableClaims config `account.editableClaims`
   * @param writes changes the user's password and claims (`UserAdmin`)
   */
  constructor(
    private readonly users: UserService,
    private readonly store: Pick<UserStore, 'findUserBySubject'>,
    private readonly records: Pick<GrantRecords, 'sessions' | 'consents' | 'refreshTokens'>,
    private readonly logout: LogoutService,
    private readonly clients: ClientLookup,
    private readonly limiter: FailureLimiter,
    private readonly events: EventBus,
    readonly editableClaims: readonly string[],
    private readonly writes: AccountWrites,
  ) {}

  /** Where the user lives (see `AccountKind`), or undefined for an unknown subject. */
  async kind(subjectId: string): Promise<AccountKind | undefined> {
    if (this.users.isConfigUser(subjectId)) return 'config';
    const stored = await this.store.findUserBySubject(subjectId);
    if (!stored) return undefined;
    return stored.passwordHash ? 'stored' : 'external';
  }

  /**
   * Changes the signed-in user's password (OWASP ASVS 5.0 V6.2.2, V6.2.3). Needs the current
   * password, checked under the failure limits of the login page (per account and address, a
   * slow-down only per account: nobody can lock the user out), unless `recentStrongSignIn` (the
   * session signed in recently with a second factor or passkey, `MfaService.recentStrongSignIn`).
   * The new password is given twice and checked by the policy (NIST SP 800-63B-4 §3.1.1.2).
   *
   * Afterwards the user's other sessions end (back-channel logout to their clients, queued) and
   * every token not issued into this session is revoked: a password change is what a user does
   * who fears the password is known, and tokens got with it (the password grant, another
   * browser) must not outlive it (ASVS 5.0 V7.4.3; the same rule as the password reset, which
   * ends everything). The current session and the tokens its apps hold go on. Every reset,
   * verification and registration link mailed to the user ends as well (`EmailLinks.revokeAllOf`).
   */
  async changePassword(
    session: Session,
    form: { current: string | undefined; password: string; confirm: string },
    recentStrongSignIn: boolean,
    origin: RequestOrigin,
  ): Promise<PasswordChange> {
    const subjectId = session.subjectId;
    if ((await this.kind(subjectId)) !== 'stored') return { outcome: 'read_only' };
    const user = await this.store.findUserBySubject(subjectId);
    if (!user) return { outcome: 'read_only' };
    const failed = (errorDescription: string) =>
      this.events.emit({ name: 'password_change_failed', endpoint: 'account', subjectId, errorDescription, ...origin });
    const current = form.current ?? '';
    if (!recentStrongSignIn || current.length > 0) {
      const attempt = userAttempt(origin.remoteAddress, user.tenant, user.username);
      const refusal = await this.limiter.refusal(attempt);
      if (refusal) return { outcome: 'refused', refusal };
      const checked =
        current.length > 0 && current.length <= MAX_PASSWORD_LENGTH
          ? await this.users.checkPassword(user.username, current, user.tenant)
          : undefined;
      if (checked?.subjectId !== subjectId) {
        await this.limiter.failed(attempt);
        failed('wrong current password');
        return { outcome: 'wrong_current' };
      }
    }
    if (form.password !== form.confirm) return { outcome: 'mismatch' };
    const problems = this.writes.passwordProblems(form.password, user.username);
    if (problems.length > 0) {
      failed(`the new password is refused: ${problems.join(', ')}`);
      return { outcome: 'weak', problems };
    }
    // The links mailed before end with it: a reset link would set another password over this one.
    await this.writes.update(subjectId, { password: form.password });
    // Every other session, not only those the page lists; their clients are told by the next poll.
    const endedSessions = await this.logout.endSessionsOf(subjectId, session.sid, false);
    const revokedTokens = await this.records.refreshTokens.revokeAllBut(subjectId, session.sid, nowSeconds());
    this.events.emit({
      name: 'password_changed',
      endpoint: 'account',
      subjectId,
      method: current.length > 0 ? 'password' : 'recent_sign_in',
      ...origin,
    });
    return { outcome: 'changed', endedSessions, revokedTokens };
  }

  /**
   * Replaces the temporary password an administrator set (`StoredUser.passwordChangeRequired`) at
   * the sign-in that just proved it, before any session exists: the new password is given twice
   * and checked by the policy (NIST SP 800-63B-4 §3.1.1.2); storing it clears the flag.
   * @returns `read_only` when the user has no temporary password (any more); else as `changePassword`,
   *   with nothing ended (the user had been signed out everywhere when it was set).
   */
  async replaceTemporaryPassword(
    subjectId: string,
    form: { password: string; confirm: string },
    origin: RequestOrigin,
  ): Promise<PasswordChange> {
    const user = await this.store.findUserBySubject(subjectId);
    if (!user?.passwordChangeRequired) return { outcome: 'read_only' };
    if (form.password !== form.confirm) return { outcome: 'mismatch' };
    const problems = this.writes.passwordProblems(form.password, user.username);
    if (problems.length > 0) {
      this.events.emit({
        name: 'password_change_failed',
        endpoint: 'account',
        subjectId,
        errorDescription: `the new password is refused: ${problems.join(', ')}`,
        ...origin,
      });
      return { outcome: 'weak', problems };
    }
    await this.writes.update(subjectId, { password: form.password });
    this.events.emit({ name: 'password_changed', endpoint: 'account', subjectId, method: 'password', ...origin });
    return { outcome: 'changed', endedSessions: 0, revokedTokens: 0 };
  }

  /** The user's live sessions, newest first (at most `SESSIONS_LISTED`), the current one marked. */
  async sessions(session: Session): Promise<ListedSession[]> {
    const live = await this.records.sessions.liveOf(session.subjectId, nowSeconds());
    return live.map((s) => ({
      sid: s.sid,
      authTime: s.authTime,
      ...(s.userAgent !== undefined ? { userAgent: s.userAgent } : {}),
      ...(s.address !== undefined ? { address: s.address } : {}),
      current: s.sid === session.sid,
    }));
  }

  /**
   * Ends one of the user's sessions as a logout does (`LogoutService.endSession`: the session
   * revoked, back-channel logout tokens for its clients queued and sent).
   * @param sid a session id from the form: only a live session of this user is ended
   * @returns what ending it did (its clients, for front-channel logout), or undefined when `sid`
   *   names no live session of this user (nothing happens).
   */
  async endSession(session: Session, sid: string, origin: RequestOrigin): Promise<EndedSession | undefined> {
    const mine = (await this.records.sessions.liveOf(session.subjectId, nowSeconds())).some((s) => s.sid === sid);
    if (!mine) return undefined;
    const ended = await this.logout.endSession(sid);
    this.events.emit({
      name: 'session_ended',
      endpoint: 'account',
      subjectId: session.subjectId,
      sessionId: sid,
      ...origin,
    });
    return ended;
  }

  /** The apps connected to the user's account: clients with a live consent or refresh token, newest first. */
  async connectedApps(subjectId: string): Promise<ConnectedApp[]> {
    const now = nowSeconds();
    const apps = new Map<string, ConnectedApp>();
    const entry = (clientId: string, since: number): ConnectedApp => {
      let app = apps.get(clientId);
      if (!app) {
        app = {
          clientId,
          name: this.clients.get(clientId)?.clientName ?? clientId,
          scopes: [],
          consented: false,
          refreshTokens: 0,
          since,
        };
        apps.set(clientId, app);
      }
      app.since = Math.max(app.since, since);
      return app;
    };
    for (const c of await this.records.consents.liveOf(subjectId, now, GRANTS_READ)) {
      const app = entry(c.clientId, c.createdAt);
      app.consented = true;
      app.scopes = [...new Set([...app.scopes, ...c.scopes])];
    }
    for (const t of await this.records.refreshTokens.liveOf(subjectId, now, GRANTS_READ)) {
      const app = entry(t.clientId, t.createdAt);
      app.refreshTokens++;
      app.scopes = [...new Set([...app.scopes, ...t.scopes])];
    }
    return [...apps.values()].map((a) => ({ ...a, scopes: a.scopes.sort() })).sort((a, b) => b.since - a.since);
  }

  /**
   * Revokes what the user gave a client (`Consents.withdraw`): the consent and every token of the
   * user at that client; its refresh tokens then fail with `invalid_grant`. Sessions go on.
   * @returns false when the user had nothing live at that client (nothing happens).
   */
  async revokeApp(subjectId: string, clientId: string, origin: RequestOrigin): Promise<boolean> {
    if (!(await this.connectedApps(subjectId)).some((a) => a.clientId === clientId)) return false;
    await this.records.consents.withdraw(subjectId, clientId, nowSeconds());
    this.events.emit({ name: 'grants_revoked', endpoint: 'account', subjectId, clientId, ...origin });
    return true;
  }

  /**
   * Sets the user's editable claims (config `account.editableClaims`) from the form: a value is
   * trimmed, at most `PROFILE_VALUE_MAX` characters, without control characters, in its claim's
   * format where it has one; an empty value removes the claim. Fields of other claims are
   * ignored. Nothing is stored when one value is refused.
   * @param values claim name → submitted value (absent fields leave their claim as it is)
   */
  async updateProfile(
    subjectId: string,
    values: Record<string, string | undefined>,
    origin: RequestOrigin,
  ): Promise<ProfileEdit> {
    if ((await this.kind(subjectId)) !== 'stored') return { outcome: 'read_only' };
    const user = await this.store.findUserBySubject(subjectId);
    if (!user) return { outcome: 'read_only' };
    const errors: Record<string, ProfileProblem> = {};
    const claims = { ...user.claims };
    const changed: string[] = [];
    for (const name of this.editableClaims) {
      const raw = values[name];
      if (raw === undefined) continue;
      const value = raw.trim();
      const problem = profileProblem(name, value);
      if (problem) {
        errors[name] = problem;
        continue;
      }
      if (value === (typeof claims[name] === 'string' ? claims[name] : '')) continue;
      if (value === '') delete claims[name];
      else claims[name] = value;
      changed.push(name);
    }
    if (Object.keys(errors).length > 0) return { outcome: 'invalid', errors };
    if (changed.length > 0) {
      await this.writes.update(subjectId, { claims });
      this.events.emit({ name: 'profile_updated', endpoint: 'account', subjectId, claims: changed, ...origin });
    }
    return { outcome: 'saved', changed };
  }
}

/**
 * Why a value of an editable claim is refused, or undefined when it is fine (an empty value is
 * fine: it removes the claim).
 */
export function profileProblem(claim: string, value: string): ProfileProblem | undefined {
  if (value.length > PROFILE_VALUE_MAX) return 'too_long';
  if (CONTROL.test(value)) return 'control_characters';
  const format = CLAIM_FORMATS[claim];
  if (value !== '' && format && !format.pattern.test(value)) return format.problem;
  return undefined;
}
