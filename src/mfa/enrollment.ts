/**
 * Adding and removing a user's factors of the one-time-code kind (OWASP ASVS 5.0 V6):
 * - an authenticator app (RFC 6238) is enrolled with a new random secret, sealed at rest
 *   (`SIGIL_DATA_KEY`) and kept for this browser and user until one valid code of it confirms it
 *   (under the failure limits, `mfaAttempt`); the confirming code's time step is spent;
 * - the first factor added also creates the ten recovery codes (OWASP ASVS 5.0 V6.5), shown once;
 *   new ones replace them on request;
 * - removing the last second factor removes the recovery codes, which have nothing left to stand in for.
 * Who may: a pending sign-in whose own decision was `enroll` while its user still holds nothing
 * (`pendingMayEnroll`), or a session that may change factors (`MfaService.mayChangeFactors`, the
 * pages' check). Every change is an audit event. The pages (ui/account-mfa.ts) read the request,
 * call these and render.
 */
import type { RequestOrigin } from '../events/events.js';
import { nowSeconds } from '../crypto/handles.js';
import type { EventBus } from '../events/events.js';
import type { FailureLimiter } from '../limits/failure-limiter.js';
import type { OAuthError } from '../protocol/errors.js';
import type { UserService } from '../users/users.js';
import { FACTOR_KINDS, type MfaService, newFactorId, type PendingSignIn } from './factors.js';
import { newRecoveryCodes, RECOVERY_KIND, unusedRecoveryCodes } from './recovery.js';
import {
  newTotpSecret,
  normaliseTotpCode,
  openTotpSecret,
  sealTotpSecret,
  totpProvisioning,
  totpStep,
} from './totp.js';
import { mfaAttempt } from './verify.js';

/** What the enrollment page shows: the secret (base32) and its `otpauth://` URI as a QR code (a PNG data URL). */
export interface TotpSetup {
  secret: string;
  qr: string;
}

/**
 * The outcome of a confirming code: no live enrollment (`expired`); not checked because the
 * failure limits refuse (`refused`, 429 with `Retry-After`); wrong (`invalid`); or the factor is
 * stored (`enrolled`, with the new recovery codes in clear when it was the user's first).
 * `setup` is the enrollment to show again.
 */
export type TotpConfirmation =
  | { outcome: 'expired' }
  | { outcome: 'refused'; refusal: OAuthError; setup: TotpSetup }
  | { outcome: 'invalid'; setup: TotpSetup }
  | { outcome: 'enrolled'; recoveryCodes?: string[] };

/** Enrollment of authenticator apps, recovery codes, and removal of factors. */
export class FactorEnrollment {
  constructor(
    private readonly mfa: MfaService,
    private readonly users: Pick<UserService, 'findBySubject'>,
    private readonly limiter: FailureLimiter,
    private readonly events: EventBus,
  ) {}

  /**
   * Whether a pending sign-in may add an authenticator app (forced enrollment): only when its own
   * decision was `enroll` (`SecondStepService.afterFirstFactor`) and its user still has no factor
   * of any kind (a passkey, a security key or recovery codes lock it).
   */
  async pendingMayEnroll(pending: PendingSignIn): Promise<boolean> {
    return pending.enroll === true && (await this.mfa.listFactors(pending.subjectId)).length === 0;
  }

  /**
   * The live enrollment of this browser and user, begun now when there is none: a new secret,
   * sealed, waiting `ENROLLMENT_LIFETIME` for its confirming code.
   * @param browser the browser id's hash (`SessionService.browserId`)
   */
  async begin(browser: string, subjectId: string): Promise<TotpSetup> {
    let enrollment = await this.mfa.enrollment(browser, subjectId);
    if (!enrollment) {
      enrollment = { secret: await sealTotpSecret(newTotpSecret(), this.mfa.dataKey) };
      await this.mfa.saveEnrollment(browser, subjectId, enrollment);
    }
    return this.setupOf(subjectId, enrollment.secret);
  }

  /**
   * Confirms the live enrollment of this browser and user with a code of its secret, under the
   * failure limits: a wrong code (or a second confirmation) counts as a failure and stores
   * nothing. A right one ends the enrollment and stores the factor with the code's time step
   * spent; when the user had no unused recovery codes, ten new ones are made. Records
   * `mfa_enrolled` (for the factor, and for the recovery codes) or `mfa_failed`.
   * @param input the form's `code`
   * @param origin the request's origin (address, user agent, request id)
   * @throws whatever the failure limiter throws other than its refusal (a counter store that fails).
   */
  async confirm(browser: string, subjectId: string, input: string, origin: RequestOrigin): Promise<TotpConfirmation> {
    const enrollment = await this.mfa.enrollment(browser, subjectId);
    if (!enrollment) return { outcome: 'expired' };
    const attempt = mfaAttempt(origin.remoteAddress, subjectId);
    const refusal = await this.limiter.refusal(attempt);
    if (refusal) return { outcome: 'refused', refusal, setup: await this.setupOf(subjectId, enrollment.secret) };
    const now = nowSeconds();
    const code = normaliseTotpCode(input);
    const step =
      code === undefined ? undefined : totpStep(await openTotpSecret(enrollment.secret, this.mfa.dataKey), code, now);
    if (step === undefined || !(await this.mfa.finishEnrollment(browser, subjectId))) {
      await this.limiter.failed(attempt);
      this.events.emit({ name: 'mfa_failed', endpoint: 'mfa_enrollment', subjectId, factor: 'totp', ...origin });
      return { outcome: 'invalid', setup: await this.setupOf(subjectId, enrollment.secret) };
    }
    // The confirming code's step is spent: it cannot sign in a second time.
    await this.mfa.factors.addFactor({
      id: newFactorId(),
      subjectId,
      kind: 'totp',
      label: '',
      data: { secret: enrollment.secret },
      counter: step,
      createdAt: now,
      lastUsedAt: now,
    });
    this.events.emit({ name: 'mfa_enrolled', endpoint: 'mfa_enrollment', subjectId, factor: 'totp', ...origin });
    if ((await unusedRecoveryCodes(this.mfa.factors, subjectId)) > 0) return { outcome: 'enrolled' };
    const recoveryCodes = await newRecoveryCodes(this.mfa.factors, subjectId, now);
    this.events.emit({ name: 'mfa_enrolled', endpoint: 'mfa_enrollment', subjectId, factor: RECOVERY_KIND, ...origin });
    return { outcome: 'enrolled', recoveryCodes };
  }

  /**
   * Replaces the user's recovery codes with ten new ones (the old ones void). Records `mfa_enrolled`.
   * @returns the codes in clear, to show once; undefined when the user has no second factor for
   *   them to stand in for.
   */
  async renewRecoveryCodes(subjectId: string, origin: RequestOrigin): Promise<string[] | undefined> {
    if ((await this.mfa.secondFactors(subjectId)).length === 0) return undefined;
    const codes = await newRecoveryCodes(this.mfa.factors, subjectId, nowSeconds());
    this.events.emit({ name: 'mfa_enrolled', endpoint: 'account', subjectId, factor: RECOVERY_KIND, ...origin });
    return codes;
  }

  /**
   * Removes one factor of the user (any kind but the recovery codes, which go as a set), and the
   * recovery codes with it when no second factor is left. Records `mfa_removed` or
   * `webauthn_removed`.
   * @param id the factor's id, as the form sent it
   * @returns false when the user has no such factor.
   */
  async removeFactor(subjectId: string, id: string, origin: RequestOrigin): Promise<boolean> {
    const factor = (await this.mfa.listFactors(subjectId)).find((f) => f.id === id && f.kind !== RECOVERY_KIND);
    if (!factor || !(await this.mfa.removeFactor(subjectId, factor))) return false;
    const webauthn = FACTOR_KINDS[factor.kind]?.webauthn === true;
    this.events.emit({
      name: webauthn ? 'webauthn_removed' : 'mfa_removed',
      endpoint: 'account',
      subjectId,
      factor: factor.kind,
      ...origin,
    });
    // Recovery codes stand in for a second factor: without one they have nothing to stand in for.
    if (
      (await this.mfa.secondFactors(subjectId)).length === 0 &&
      (await this.mfa.factors.removeFactors(subjectId, [RECOVERY_KIND])) > 0
    )
      this.events.emit({ name: 'mfa_removed', endpoint: 'account', subjectId, factor: RECOVERY_KIND, ...origin });
    return true;
  }

  /** The page's view of a sealed secret: the secret and its QR code, labelled with the user's name. */
  private async setupOf(subjectId: string, sealed: string): Promise<TotpSetup> {
    const user = await this.users.findBySubject(subjectId);
    const secret = await openTotpSecret(sealed, this.mfa.dataKey);
    const { qr } = await totpProvisioning(this.mfa.config.totpIssuer, user?.username ?? subjectId, secret);
    return { secret, qr };
  }
}
