/**
 * Passkeys and security keys as the browser pages use them (the WebAuthn ceremonies
 * themselves are mfa/webauthn.ts's): the quotas on new challenges, the failure limits, the pending
 * security key step and the audit events around each ceremony. The pages (ui/passkeys.ts) read the
 * request, call these and render.
 * - A user's credentials: registered (passkey or security key) and removed.
 * - A passwordless sign-in with a passkey (`signIn`).
 * - The security key step after a right password, or as the step-up of a live session
 *   (`startStep` … `completeStep`): a `webauthn_pending` record (stores/records/webauthn-pending.ts)
 *   under the SHA-256 of a random handle that the browser keeps in an HttpOnly cookie
 *   (http/cookies.ts), bound to the browser id, living `webauthn.challengeLifetime`, used once.
 *
 * `amr` (RFC 8176 §2) of these sign-ins:
 * - password + security key: `pwd`, `hwk` (proof of possession of a hardware key: security keys
 *   keep their key in the token), `mfa`.
 * - passkey with user verification: `swk`, `user`, `mfa`. `swk`: the RP asks for no attestation
 *   and synced passkeys live in a software keychain, so no hardware claim is made; `user`: the
 *   authenticator tested and verified the user (the UV flag, WebAuthn L3 §6.1), and WebAuthn does
 *   not say whether by PIN, fingerprint or face (`pin`/`fpt`/`face`); `mfa`: possession of the key
 *   plus that verification are two factors (a multi-factor cryptographic authenticator).
 *   A passkey is only accepted with user verification, so a passkey sign-in always carries `mfa`.
 */
import type { RequestOrigin } from '../events/events.js';
import type {
  PublicKeyCredentialCreationOptionsJSON,
  PublicKeyCredentialRequestOptionsJSON,
} from '@simplewebauthn/server';
import type { ResolvedConfig } from '../config/loader.js';
import { newHandle, nowSeconds } from '../crypto/handles.js';
import type { EventBus } from '../events/events.js';
import type { CookieValue } from '../http/cookies.js';
import { type CredentialAttempt, type FailureLimiter, userAttempt } from '../limits/failure-limiter.js';
import { addressQuotaKey, chargeQuota } from '../limits/request-quota.js';
import type { OAuthError } from '../protocol/errors.js';
import type { WebAuthnPending, WebAuthnPendingSteps } from '../stores/records/webauthn-pending.js';
import type {
  StoredWebAuthnCredential,
  WebAuthnCredentialStore,
  WebAuthnKind,
} from '../stores/webauthn-credentials.js';
import type { User, UserService } from '../users/users.js';
import { amrWith, type MfaService } from './factors.js';
import { WebAuthnError, type WebAuthnService } from './webauthn.js';

export type { WebAuthnPending };

/**
 * `amr` of a password sign-in completed with a credential (RFC 8176 §2): `pwd`, the kind's value of
 * `FACTOR_KINDS` (`hwk`, `swk`), `mfa`.
 */
export function secondFactorAmr(kind: WebAuthnKind): string[] {
  return amrWith(['pwd'], kind);
}

/** `amr` of a passkey sign-in with user verification (RFC 8176 §2; see the module comment). */
export const PASSKEY_AMR: readonly string[] = ['swk', 'user', 'mfa'];

/** The limiter's view of a passkey sign-in: per address (a signature cannot be guessed, so no identity-wide count). */
function passkeyAttempt(address: string): CredentialAttempt {
  return { address, identity: 'webauthn:passkey', identityWide: false };
}

/**
 * Where a ceremony's request came from: its origin (address, user agent, request id, for the
 * limits and the audit events), and the pending request's client, if any.
 */
export interface Caller {
  origin: RequestOrigin;
  clientId?: string;
}

/**
 * The outcome of a sign-in with a credential: not checked because the failure limits refuse
 * (`refused`, 429 with `Retry-After`); refused (`failed`, counted and recorded); or signed in
 * (`user` with the sign-in's `amr`).
 */
export type CeremonySignIn =
  | { outcome: 'refused'; refusal: OAuthError }
  | { outcome: 'failed' }
  | { outcome: 'signed-in'; user: User; amr: string[] };

/**
 * The outcome of the security key step's answer: as `CeremonySignIn`, or `used` (another request
 * completed or cancelled the step first), or `ended`: the step is spent (its cookie goes) but its
 * user is gone or inactive.
 */
export type StepCompletion = CeremonySignIn | { outcome: 'used' } | { outcome: 'ended' };

/** The ceremonies of the passkey pages. */
export class PasskeyCeremonies {
  /**
   * @param steps the pending security key steps (`store.records.webauthnPending`)
   * @param config config `webauthn`
   */
  constructor(
    private readonly webauthn: WebAuthnService,
    private readonly credentials: WebAuthnCredentialStore,
    private readonly steps: WebAuthnPendingSteps,
    private readonly mfa: MfaService,
    private readonly users: Pick<UserService, 'findBySubject'>,
    private readonly limiter: FailureLimiter,
    private readonly events: EventBus,
    private readonly config: ResolvedConfig['webauthn'],
  ) {}

  /** A user's credentials, oldest first. */
  list(subjectId: string): Promise<StoredWebAuthnCredential[]> {
    return this.credentials.list(subjectId);
  }

  /**
   * Options for registering a credential of `kind` (`WebAuthnService.registrationOptions`), the
   * challenge counted against the quotas (`challengeQuota`).
   * @throws OAuthError 429 `temporarily_unavailable` with `Retry-After`.
   */
  async registrationOptions(
    user: User,
    kind: WebAuthnKind,
    browser: string,
    address: string,
  ): Promise<PublicKeyCredentialCreationOptionsJSON> {
    const display = user.claims.name;
    await this.challengeQuota(browser, address);
    return this.webauthn.registrationOptions(
      {
        subjectId: user.subjectId,
        username: user.username,
        displayName: typeof display === 'string' ? display : user.username,
      },
      kind,
      browser,
    );
  }

  /**
   * Checks a registration response and stores the credential (`WebAuthnService.register`).
   * Records `webauthn_registered` or `webauthn_failed`.
   * @param response the parsed form field `response`
   * @param name the label the user gave it
   * @returns false when the response was refused.
   */
  async register(
    subjectId: string,
    kind: WebAuthnKind,
    response: unknown,
    browser: string,
    name: string,
    origin: RequestOrigin,
  ): Promise<boolean> {
    try {
      await this.webauthn.register(subjectId, kind, response, browser, name);
    } catch (err) {
      if (!(err instanceof WebAuthnError)) throw err;
      this.events.emit({
        name: 'webauthn_failed',
        endpoint: 'account',
        subjectId,
        factor: kind,
        error: err.reason,
        ...origin,
      });
      return false;
    }
    this.events.emit({ name: 'webauthn_registered', endpoint: 'account', subjectId, factor: kind, ...origin });
    return true;
  }

  /**
   * Removes one of the user's credentials. Records `webauthn_removed`.
   * @param id the credential id as the form sent it
   * @returns false when the user has no such credential.
   */
  async remove(subjectId: string, id: string, origin: RequestOrigin): Promise<boolean> {
    const credential = id.length > 0 && id.length <= 1400 ? await this.credentials.get(id) : undefined;
    if (!credential || !(await this.credentials.remove(subjectId, id))) return false;
    this.events.emit({ name: 'webauthn_removed', endpoint: 'account', subjectId, factor: credential.kind, ...origin });
    return true;
  }

  /**
   * Options for a passkey sign-in, the challenge counted against the quotas.
   * @throws OAuthError 429 `temporarily_unavailable` with `Retry-After`.
   */
  async passkeyOptions(browser: string, address: string): Promise<PublicKeyCredentialRequestOptionsJSON> {
    await this.challengeQuota(browser, address);
    return this.webauthn.authenticationOptions('passkey', browser);
  }

  /**
   * A passwordless sign-in with a passkey, under the failure limits per address: the assertion
   * must be good, its user active and of the pending request's tenant. A refusal counts as a
   * failure and is recorded (`webauthn_failed`, `user_login_failed`); a success as
   * `webauthn_succeeded` (the caller starts the session).
   * @param response the parsed form field `response`
   * @param tenant the pending request's tenant, or null
   */
  async signIn(response: unknown, browser: string, tenant: string | null, from: Caller): Promise<CeremonySignIn> {
    const attempt = passkeyAttempt(from.origin.remoteAddress);
    const refusal = await this.limiter.refusal(attempt);
    if (refusal) return { outcome: 'refused', refusal };
    const failed = async (reason: string, subjectId?: string): Promise<CeremonySignIn> => {
      await this.limiter.failed(attempt);
      const common = {
        endpoint: 'login',
        ...from.origin,
        ...(subjectId ? { subjectId } : {}),
        ...(from.clientId !== undefined ? { clientId: from.clientId } : {}),
      };
      this.events.emit({ name: 'webauthn_failed', factor: 'passkey', error: reason, ...common });
      this.events.emit({
        name: 'user_login_failed',
        method: 'passkey',
        errorDescription: `passkey: ${reason}`,
        ...common,
      });
      return { outcome: 'failed' };
    };
    let use;
    try {
      use = await this.webauthn.authenticate('passkey', response, browser);
    } catch (err) {
      if (!(err instanceof WebAuthnError)) throw err;
      return failed(err.reason);
    }
    const user = await this.users.findBySubject(use.credential.subjectId);
    if (!user?.isActive) return failed('inactive user', use.credential.subjectId);
    if (tenant !== null && user.tenant !== tenant) return failed('other tenant', user.subjectId);
    this.events.emit({
      name: 'webauthn_succeeded',
      endpoint: 'login',
      subjectId: user.subjectId,
      factor: 'passkey',
      ...from.origin,
    });
    return { outcome: 'signed-in', user, amr: [...PASSKEY_AMR] };
  }

  /**
   * Starts the security key step for a user with a WebAuthn credential (a security key, or a
   * passkey used as the second step) while WebAuthn is enabled. Whether a user is asked is MFA
   * core's decision (`MfaService.nextStep`); this is where users with a credential are sent.
   * @param interaction the pending authorization request's id, if any
   * @param options `codeLink`: where the step's page offers a one-time code instead; `returnTo`:
   *   the account page to continue at afterwards
   * @returns the step and the cookie that names it (Max-Age `webauthn.challengeLifetime`), or
   *   undefined when the step does not apply (the caller signs in at once).
   */
  async startStep(
    user: User,
    browser: string,
    interaction: string | undefined,
    options: { codeLink?: string; returnTo?: string },
  ): Promise<{ pending: WebAuthnPending; cookie: CookieValue } | undefined> {
    if (!this.config.enabled) return undefined;
    if ((await this.credentials.list(user.subjectId)).length === 0) return undefined;
    const handle = newHandle();
    const now = nowSeconds();
    const lifetime = this.config.challengeLifetime;
    const pending: WebAuthnPending = {
      subjectId: user.subjectId,
      username: user.username,
      tenant: user.tenant,
      interaction: interaction ?? '',
      browser,
      ...(options.codeLink ? { codeLink: options.codeLink } : {}),
      ...(options.returnTo ? { returnTo: options.returnTo } : {}),
    };
    await this.steps.put(handle, pending, now, now + lifetime);
    return { pending, cookie: { value: handle, maxAge: lifetime } };
  }

  /**
   * The live security key step of a step cookie, when it was started in this browser.
   * @param cookie the step cookie's value as sent
   * @param browser reads the browser id's hash; only read once a live step is found (it may set
   *   the browser id cookie)
   */
  async step(cookie: string | undefined, browser: () => string): Promise<WebAuthnPending | undefined> {
    if (!cookie || cookie.length > 100) return undefined;
    const pending = await this.steps.find(cookie, nowSeconds());
    return pending && pending.browser === browser() ? pending : undefined;
  }

  /**
   * Options for the security key step's assertion (the user's credentials), the challenge
   * counted against the quotas.
   * @throws OAuthError 429 `temporarily_unavailable` with `Retry-After`.
   */
  async stepOptions(pending: WebAuthnPending, address: string): Promise<PublicKeyCredentialRequestOptionsJSON> {
    await this.challengeQuota(pending.browser, address);
    return this.webauthn.authenticationOptions('second-factor', pending.browser, pending.subjectId);
  }

  /** Ends the step of a step cookie unanswered (the user cancelled). */
  async cancelStep(cookie: string): Promise<void> {
    await this.steps.consume(cookie, nowSeconds());
  }

  /**
   * Completes the security key step with the assertion of one of its user's credentials, under
   * the failure limits of the user's password (`userAttempt`). A refused assertion counts and is
   * recorded (`webauthn_failed`). The step is single-use: of two concurrent completions one signs
   * in; it also ends the browser's pending one-time code form of the same sign-in. Records
   * `webauthn_succeeded` (the caller starts the session, `amr` as `secondFactorAmr`).
   * @param cookie the step cookie's value (of `pending`, from `step`)
   * @param response the parsed form field `response`
   * @throws DirectoryUnavailable when the user's directory cannot answer, before anything is spent.
   */
  async completeStep(
    cookie: string,
    pending: WebAuthnPending,
    response: unknown,
    from: Caller,
  ): Promise<StepCompletion> {
    const attempt = userAttempt(from.origin.remoteAddress, pending.tenant, pending.username);
    const refusal = await this.limiter.refusal(attempt);
    if (refusal) return { outcome: 'refused', refusal };
    // The user first: a user directory that cannot answer leaves the challenge and the step for a retry.
    const user = await this.users.findBySubject(pending.subjectId);
    let use;
    try {
      use = await this.webauthn.authenticate('second-factor', response, pending.browser, pending.subjectId);
    } catch (err) {
      if (!(err instanceof WebAuthnError)) throw err;
      await this.limiter.failed(attempt);
      this.events.emit({
        name: 'webauthn_failed',
        endpoint: 'login',
        subjectId: pending.subjectId,
        factor: 'security-key',
        error: err.reason,
        ...from.origin,
        ...(from.clientId !== undefined ? { clientId: from.clientId } : {}),
      });
      return { outcome: 'failed' };
    }
    if (!(await this.steps.consume(cookie, nowSeconds()))) return { outcome: 'used' };
    // The one-time code form of the same sign-in (MFA core), if one was offered, closes too.
    await this.mfa.finishPending(pending.browser);
    if (!user?.isActive) return { outcome: 'ended' };
    this.events.emit({
      name: 'webauthn_succeeded',
      endpoint: 'login',
      subjectId: user.subjectId,
      factor: use.credential.kind,
      ...from.origin,
    });
    return { outcome: 'signed-in', user, amr: secondFactorAmr(use.credential.kind) };
  }

  /**
   * Counts a new challenge against the browser's and the address's quota (config
   * `webauthn.challengesPerBrowser`, `challengesPerAddress` per `challengeLifetime`): each is a
   * stored row, and the sign-in options are open to anyone with the login page.
   * @throws OAuthError 429 `temporarily_unavailable` with `Retry-After`.
   */
  private challengeQuota(browser: string, address: string): Promise<void> {
    return chargeQuota(
      this.limiter,
      'passkey_challenge_quota',
      [
        { key: `webauthn:browser:${browser}`, limit: this.config.challengesPerBrowser },
        { key: `webauthn:address:${addressQuotaKey(address)}`, limit: this.config.challengesPerAddress },
      ],
      this.config.challengeLifetime,
    );
  }
}
