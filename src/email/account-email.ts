/**
 * What people do through links sent by mail: reset a forgotten password, confirm an
 * address, create an account. Links are random handles (`crypto/handles.ts`), stored as their
 * SHA-256 only (`records/email-links.ts`) and consumed atomically, once.
 *
 * No enumeration: the pages answer a request the same whether the address or username is known or
 * not, and hand the work (lookup, link, SMTP) to `inBackground`, so the answer takes the same time
 * either way (OWASP ASVS 5.0 V6.3.8).
 *
 * Limits, and why nobody can lock another out (OWASP ASVS 5.0 V6.3.1):
 * - per client address (the pages, `email.requestsPerAddress` per hour, 429): one party cannot
 *   flood many mailboxes or fill the store;
 * - per account or target address (here, `email.mailsPerAccount` per `MAIL_WINDOW_SECONDS`):
 *   beyond it a request gets the same answer and no mail, so distributed callers cannot flood
 *   one mailbox either. This cannot deny the owner a link: every mail goes only to the owner's
 *   mailbox, a new link does not cancel the earlier ones (only a password set, or the account
 *   made inactive or removed, ends them), and the window is no longer than a reset
 *   link lives, so while the cap holds back mails, the last one sent in the window still works.
 *   An attacker who triggers mails thus only gives the owner working links.
 */
import type { Logger } from 'pino';
import { type Config, MAX_USERNAME_LENGTH } from '../config/schema.js';
import { newHandle, nowSeconds } from '../crypto/handles.js';
import type { FailureCounterStore } from '../limits/failure-limiter.js';
import { takeQuota } from '../limits/request-quota.js';
import { OAuthError } from '../protocol/errors.js';
import type { EmailLinkPurpose } from '../stores/records/email-links.js';
import { normalizeEmail } from '../stores/user-emails.js';
import type { Store, StoredUser } from '../stores/types.js';
import type { PasswordProblem } from '../users/password-policy.js';
import { isEmailAddress } from '../users/email-address.js';
import { AdminError } from '../admin/errors.js';
import type { UserAdmin } from '../admin/users.js';
import type { Mailer, MailKind } from './mailer.js';
import { DirectoryUnavailable } from '../users/directory.js';

/** How long a password reset link works, seconds (15 minutes). */
export const RESET_LINK_SECONDS = 900;
/** How long a verification or registration link works, seconds. */
export const CONFIRM_LINK_SECONDS = 86_400;
/** The window of the per-account mail cap, seconds: no longer than a reset link lives (see above). */
export const MAIL_WINDOW_SECONDS = RESET_LINK_SECONDS;
/** Most accounts one reset request mails (an address shared by accounts in several tenants). */
const MAX_ACCOUNTS_PER_REQUEST = 5;
/** The outcome of a new password through a reset link. */
export type ResetOutcome =
  | { ok: true; subjectId: string; username: string }
  | { ok: false; reason: 'invalid_link' }
  | { ok: false; reason: 'policy'; problems: PasswordProblem[] };

/**
 * The outcome of a registration link confirmed with a password: `taken` when a config-file user or
 * a user directory holds the address as a username (nothing is stored, the link stays usable).
 */
export type RegistrationOutcome =
  | { ok: true; subjectId: string }
  | { ok: false; reason: 'invalid_link' | 'taken' }
  | { ok: false; reason: 'policy'; problems: PasswordProblem[] };

/** Links by mail for one Sigil instance. */
export class AccountEmail {
  constructor(
    private readonly deps: {
      store: Pick<Store, 'users' | 'emails' | 'records'>;
      /**
       * The user administration, which writes the users (a password set, an account created, an
       * address confirmed) with its rules: the password policy, and the usernames config-file users
       * and user directories hold.
       */
      users: Pick<UserAdmin, 'holderOf' | 'passwordProblems' | 'prepare' | 'commit' | 'update' | 'confirmEmail'>;
      counters: FailureCounterStore;
      mailer: Mailer;
      config: NonNullable<Config['email']>;
      issuer: string;
      log: Logger;
    },
  ) {}

  /**
   * Runs `work` after the page has answered; its failures (an SMTP server that is down) are logged,
   * never shown, so that the answer is the same either way.
   */
  inBackground(work: () => Promise<void>): void {
    void work().catch((err: unknown) => this.deps.log.error({ err }, 'email: sending failed'));
  }

  /**
   * Mails a reset link to every active stored user named by `identifier` (their username, or their
   * verified primary address), at most one per account per the mail cap. Config-file users have
   * no stored password to reset; an unverified address is never trusted with one.
   * @param interaction the pending sign-in the request came from (its id, checked for its shape
   *   by the caller): the link carries it, so that after the reset the page leads back into that
   *   sign-in. It grants nothing: a pending sign-in answers only the browser that started it.
   */
  async requestReset(identifier: string, lang: string, interaction?: string): Promise<void> {
    const value = identifier.trim();
    const byName =
      value.length <= MAX_USERNAME_LENGTH ? await this.deps.store.users.findUserByUsername(value, null) : undefined;
    const subjects = new Set<string>(byName ? [byName.subjectId] : []);
    if (isEmailAddress(value))
      for (const e of await this.deps.store.emails.findByValue(value))
        if (e.isPrimary && e.verified) subjects.add(e.subjectId);
    for (const subjectId of [...subjects].slice(0, MAX_ACCOUNTS_PER_REQUEST)) {
      const user = await this.deps.store.users.findUserBySubject(subjectId);
      const email = await this.deps.store.emails.primary(subjectId);
      if (!user?.isActive || !email?.verified) continue;
      await this.sendLink('reset', user, email.value, lang, interaction);
    }
  }

  /**
   * Tells a user that an application asks for their approval (OpenID CIBA Core 1.0 §7): a mail
   * linking to the approval page. It carries no handle: the page needs the user signed in, and
   * shows the requests waiting for them. The number of such mails is bounded by the requests a
   * client may make for a user (`pendingLimits.backchannelRequestsPerUserAndClient`).
   * @param link the absolute URL of `/account/requests`
   * @throws Error when the SMTP server does not take the message.
   */
  async notifyBackchannelRequest(to: string, lang: string, link: string): Promise<void> {
    await this.deps.mailer.send({ to, kind: 'ciba', lang, link });
  }

  /**
   * Mails a reset link to one stored user, for an administrator (the console): as a request on
   * "Forgot password?" would, to the verified primary address only, within the mail cap.
   * @returns false when nothing was sent: no active stored user, no verified primary address, or
   *   the cap reached.
   */
  async sendReset(subjectId: string, lang: string): Promise<boolean> {
    const user = await this.deps.store.users.findUserBySubject(subjectId);
    const email = user?.isActive ? await this.deps.store.emails.primary(subjectId) : undefined;
    if (!user || !email?.verified) return false;
    return this.sendLink('reset', user, email.value, lang);
  }

  /** The stored user a live reset link is for (to show the form), or undefined. */
  async resetLinkUser(handle: string): Promise<StoredUser | undefined> {
    const link = await this.deps.store.records.emailLinks.findLive(handle, 'reset', nowSeconds());
    return link?.subjectId ? this.deps.store.users.findUserBySubject(link.subjectId) : undefined;
  }

  /**
   * Sets a new password through a reset link: the policy first (a refused password leaves the
   * link usable), then the link is consumed (once, atomically) and the password set
   * (`UserAdmin.update`), which signs the user out everywhere: every session, refresh token,
   * reference token and unused code ends, so whoever knew the old password is signed out (OWASP
   * ASVS 5.0 V7.4.3), and the user's other links end too: an earlier reset mail read by someone
   * else sets no password after.
   */
  async resetPassword(handle: string, password: string): Promise<ResetOutcome> {
    const user = await this.resetLinkUser(handle);
    if (!user?.isActive) return { ok: false, reason: 'invalid_link' };
    const problems = this.deps.users.passwordProblems(password, user.username);
    if (problems.length > 0) return { ok: false, reason: 'policy', problems };
    if (!(await this.deps.store.records.emailLinks.consume(handle, nowSeconds())))
      return { ok: false, reason: 'invalid_link' };
    await this.deps.users.update(user.subjectId, { password }, { signOut: true });
    return { ok: true, subjectId: user.subjectId, username: user.username };
  }

  /**
   * Mails a link that confirms the user's primary address.
   * @returns false when nothing was sent: no stored user or address, the address already confirmed,
   *   or the account's mail cap (`mailsPerAccount` in the window) holds.
   * @throws Error when the SMTP server does not take the message.
   */
  async requestVerification(subjectId: string, lang: string): Promise<boolean> {
    const user = await this.deps.store.users.findUserBySubject(subjectId);
    const email = await this.deps.store.emails.primary(subjectId);
    if (!user || !email || email.verified) return false;
    return this.sendLink('verify', user, email.value, lang);
  }

  /**
   * Confirms an address through its link (GET shows a button, POST calls this: mail scanners that
   * fetch links confirm nothing). The address must still be the user's.
   * @returns the address confirmed, or undefined for a link that is not live.
   */
  async confirmAddress(handle: string): Promise<string | undefined> {
    const now = nowSeconds();
    const link = await this.deps.store.records.emailLinks.findLive(handle, 'verify', now);
    if (!link?.subjectId || !(await this.deps.store.records.emailLinks.consume(handle, now))) return undefined;
    return (await this.deps.users.confirmEmail(link.subjectId, link.data.email)) ? link.data.email : undefined;
  }

  /** The address a live link of `purpose` was sent to, to show before it is confirmed. */
  async linkAddress(handle: string, purpose: EmailLinkPurpose): Promise<string | undefined> {
    return (await this.deps.store.records.emailLinks.findLive(handle, purpose, nowSeconds()))?.data.email;
  }

  /**
   * Self-registration: an address that is taken (some account's address, or a username) gets a
   * note to its owner; a free one a link that creates the account when followed. No account exists
   * before the address is confirmed, so an unconfirmed one can neither sign in nor hold the name.
   * Nothing chosen here goes into the account: its password is chosen on the page the link opens
   * (`confirmRegistration`), by whoever reads the mailbox, so nobody who starts a registration for
   * someone else's address keeps a way into the account its owner then creates (account
   * pre-hijacking).
   */
  async register(email: string, lang: string): Promise<void> {
    if ((await this.addressTaken(email)) || (await this.heldElsewhere(email))) {
      if (await this.capAllows(`address:${normalizeEmail(email)}`))
        await this.deps.mailer.send({
          to: email,
          kind: 'registered',
          lang,
          link: `${this.deps.issuer}/account/forgot`,
        });
      return;
    }
    if (!(await this.capAllows(`address:${normalizeEmail(email)}`))) return;
    const handle = newHandle();
    await this.deps.store.records.emailLinks.issue(
      handle,
      null,
      { purpose: 'register', email },
      nowSeconds(),
      CONFIRM_LINK_SECONDS,
    );
    await this.deps.mailer.send({ to: email, kind: 'register', lang, link: this.linkUrl('register', handle) });
  }

  /**
   * Creates the account of a registration link with the password chosen on the link's page:
   * username and verified primary address are the address. The policy and the user
   * administration's other rules first (`UserAdmin.prepare`: a refusal leaves the link usable),
   * then the link is consumed (once, atomically) and the user stored (`UserAdmin.commit`). A
   * password hash that a link issued by an earlier version carries is never used.
   * @returns the new user's subject; `invalid_link` for a link that is not live, an address taken
   *   meanwhile or one no username may be (longer than `MAX_USERNAME_LENGTH`); `policy` with the
   *   problems of a refused password; `taken` when a config-file user or a user directory holds
   *   the address as a username (the link kept).
   * @throws DirectoryUnavailable when a directory cannot say whether it holds the address: the
   *   link is kept for a later try, no account is made (a stored user of a directory user's name
   *   would answer for them at sign-in).
   */
  async confirmRegistration(handle: string, password: string): Promise<RegistrationOutcome> {
    const now = nowSeconds();
    const link = await this.deps.store.records.emailLinks.findLive(handle, 'register', now);
    if (!link) return { ok: false, reason: 'invalid_link' };
    const { email } = link.data;
    const problems = this.deps.users.passwordProblems(password, email);
    if (problems.length > 0) return { ok: false, reason: 'policy', problems };
    let user;
    try {
      user = await this.deps.users.prepare({ username: email, password, email, emailVerified: true }, true);
    } catch (err) {
      if (!(err instanceof AdminError)) throw err;
      // A stored user holds the name (`exists`): an address taken meanwhile; else a config-file user or a directory.
      const heldElsewhere = err.code === 'conflict' && err.detail?.reason !== 'exists';
      return { ok: false, reason: heldElsewhere ? 'taken' : 'invalid_link' };
    }
    if (!(await this.deps.store.records.emailLinks.consume(handle, now))) return { ok: false, reason: 'invalid_link' };
    if (
      !(await this.deps.store.records.emailLinks.claimAddress(normalizeEmail(email), now)) ||
      (await this.addressTaken(email))
    )
      return { ok: false, reason: 'invalid_link' };
    try {
      return { ok: true, subjectId: (await this.deps.users.commit(user)).subjectId };
    } catch (err) {
      if (err instanceof AdminError && err.code === 'conflict') return { ok: false, reason: 'invalid_link' };
      throw err;
    }
  }

  /**
   * Whether a config-file user or a user directory holds `email` as a username
   * (`UserAdmin.holderOf`). A directory that cannot answer counts as not holding it: the request
   * only mails a link, and the account is made only after `confirmRegistration` has asked again,
   * strictly (`UserAdmin.prepare`).
   */
  private async heldElsewhere(email: string): Promise<boolean> {
    try {
      return (await this.deps.users.holderOf(email)) !== undefined;
    } catch (err) {
      if (err instanceof DirectoryUnavailable) return false;
      throw err;
    }
  }

  private async addressTaken(email: string): Promise<boolean> {
    return (
      (await this.deps.store.emails.findByValue(email)).length > 0 ||
      (await this.deps.store.users.findUserByUsername(email, null)) !== undefined
    );
  }

  private async sendLink(
    kind: Extract<MailKind, 'reset' | 'verify'>,
    user: StoredUser,
    to: string,
    lang: string,
    interaction?: string,
  ): Promise<boolean> {
    if (!(await this.capAllows(`account:${user.subjectId}`))) return false;
    const handle = newHandle();
    const lifetime = kind === 'reset' ? RESET_LINK_SECONDS : CONFIRM_LINK_SECONDS;
    await this.deps.store.records.emailLinks.issue(
      handle,
      user.subjectId,
      { purpose: kind, email: to },
      nowSeconds(),
      lifetime,
    );
    await this.deps.mailer.send({
      to,
      kind,
      lang,
      link: this.linkUrl(kind, handle) + (interaction ? `&interaction=${encodeURIComponent(interaction)}` : ''),
      values: { username: user.username },
    });
    return true;
  }

  /** The per-account (or per-address) mail cap: false once `mailsPerAccount` mails went out in the window. */
  private async capAllows(key: string): Promise<boolean> {
    try {
      await takeQuota(
        this.deps.counters,
        [{ key: `email:${key}`, limit: this.deps.config.mailsPerAccount }],
        MAIL_WINDOW_SECONDS,
      );
      return true;
    } catch (err) {
      // A full cap is a refusal (429); a counter store that cannot answer is an error, logged.
      if (err instanceof OAuthError && err.status === 429) return false;
      throw err;
    }
  }

  private linkUrl(purpose: EmailLinkPurpose, handle: string): string {
    const path =
      purpose === 'reset' ? '/account/reset' : purpose === 'verify' ? '/account/verify' : '/account/register/confirm';
    return `${this.deps.issuer}${path}?token=${encodeURIComponent(handle)}`;
  }
}
