/**
 * The second sign-in step (OWASP ASVS 5.0 V6): what comes after the first factor
 * (`MfaService.nextStep`), recorded with the browser's pending sign-in; who a second-step page is
 * for (that pending sign-in, or a live session stepping up); and the check of a typed one-time code
 * (an authenticator app's, or a recovery code) under the failure limits (`mfaAttempt`), with its
 * audit events. The pages (ui/account-mfa.ts) read the request, call these and render.
 */
import type { RequestOrigin } from '../events/events.js';
import type { ClientRegistry } from '../clients/registry.js';
import { nowSeconds } from '../crypto/handles.js';
import type { EventBus } from '../events/events.js';
import type { FailureLimiter } from '../limits/failure-limiter.js';
import type { OAuthError } from '../protocol/errors.js';
import type { Interaction } from '../stores/records/interactions.js';
import { requestsMfa } from '../users/acr.js';
import type { Session } from '../users/sessions.js';
import type { User, UserService } from '../users/users.js';
import { amrWith, type MfaService, type PendingSignIn, type SecondStep } from './factors.js';
import { RECOVERY_KIND } from './recovery.js';
import { mfaAttempt, verifySecondFactor } from './verify.js';

/** Who a second step is for: a sign-in waiting after its first factor, or a live session (step-up). */
export type Who = { pending: PendingSignIn; session?: undefined } | { session: Session; pending?: undefined };

/** The user a second step is for: the pending sign-in's, else the session's. */
export function subjectOf(who: Who): string {
  return who.pending ? who.pending.subjectId : who.session.subjectId;
}

/**
 * The outcome of a typed code: accepted by a factor of `kind` (`totp`, `recovery_code`), wrong
 * (or replayed, or out of the window), or not checked because the failure limits refuse
 * (`refusal`: 429 with `Retry-After`).
 */
export type CodeCheck =
  | { outcome: 'verified'; kind: string }
  | { outcome: 'invalid' }
  | { outcome: 'refused'; refusal: OAuthError };

/** The second step's decisions and code checks. */
export class SecondStepService {
  constructor(
    private readonly mfa: MfaService,
    private readonly users: Pick<UserService, 'findBySubject'>,
    private readonly clients: Pick<ClientRegistry, 'get'>,
    private readonly limiter: FailureLimiter,
    private readonly events: EventBus,
  ) {}

  /**
   * After the first factor: the next step (`MfaService.nextStep`) for the user, asked for when the
   * client (`requireMfa`, global `mfa.required`) or the pending request (`acr_values` asking for
   * MFA) needs it. Unless it is `none`, the sign-in is saved as this browser's pending one, marked
   * `enroll` only when that was the decision: only such a sign-in may add a factor (`enrollee`).
   * @param interaction the pending authorization request the sign-in is for, if any
   */
  async afterFirstFactor(
    browser: string,
    pending: PendingSignIn,
    interaction: Interaction | undefined,
  ): Promise<SecondStep> {
    const client = interaction ? this.clients.get(interaction.request.clientId) : undefined;
    const requested = interaction
      ? requestsMfa(pending, interaction.request.acrValues, interaction.request.essentialAcr)
      : false;
    const step = await this.mfa.nextStep(pending.subjectId, this.mfa.requiredFor(client) || requested);
    if (step !== 'none')
      await this.mfa.savePending(browser, { ...pending, ...(step === 'enroll' ? { enroll: true as const } : {}) });
    return step;
  }

  /**
   * Who the second step is for: this browser's pending sign-in, else the live session of a user
   * who has a second factor or a passkey (step-up); undefined when neither.
   * @param browser the browser id's hash (`SessionService.browserId`)
   * @param session reads the browser's live session (only when there is no pending sign-in)
   */
  async who(browser: string, session: () => Promise<Session | undefined>): Promise<Who | undefined> {
    const pending = await this.mfa.pending(browser);
    if (pending) return { pending };
    const live = await session();
    if (live && (await this.mfa.canStepUp(live.subjectId))) return { session: live };
    return undefined;
  }

  /**
   * Ends this browser's pending sign-in once a factor of `kind` was proved (this step's code, or a
   * factor of another module): of two concurrent completions one gets it, and only for a user
   * still active.
   * @returns the user and the session's `amr` (the first factor's, the kind's, `mfa`; RFC 8176), or
   *   undefined when another request finished the sign-in first or the user is gone or inactive.
   * @throws DirectoryUnavailable before the pending sign-in ends, which then stays for a retry.
   */
  async finishPending(
    browser: string,
    pending: PendingSignIn,
    kind: string,
  ): Promise<{ user: User; amr: string[] } | undefined> {
    // The user first: a user directory that cannot answer must not end the sign-in half way.
    const user = await this.users.findBySubject(pending.subjectId);
    if (!(await this.mfa.finishPending(browser))) return undefined;
    if (!user?.isActive) return undefined;
    return { user, amr: amrWith(pending.amr, kind) };
  }

  /**
   * Whether the user can type a one-time code instead of the security key: an authenticator app, or an unused
   * recovery code.
   */
  async offersCode(subjectId: string): Promise<boolean> {
    return (await this.mfa.listFactors(subjectId)).some((f) =>
      f.kind === RECOVERY_KIND ? f.counter === 0 : f.kind === 'totp',
    );
  }

  /**
   * Checks a typed code for the user under the failure limits and spends it (`verifySecondFactor`);
   * a wrong code counts as a failure. Records `mfa_succeeded` or `mfa_failed`.
   * @param input the form's `code`
   * @param from the request's origin (address, user agent, request id), and the client of the pending request, if any
   * @throws whatever the failure limiter throws other than its refusal (a counter store that fails);
   *   DirectoryUnavailable when the user's directory cannot answer, before the code is spent.
   */
  async verifyCode(
    subjectId: string,
    input: string,
    from: { origin: RequestOrigin; clientId?: string },
  ): Promise<CodeCheck> {
    // The user's directory is asked before the code is spent (the sign-in then needs the user):
    // one that cannot answer leaves the code and the step for a retry.
    await this.users.findBySubject(subjectId);
    const attempt = mfaAttempt(from.origin.remoteAddress, subjectId);
    const refusal = await this.limiter.refusal(attempt);
    if (refusal) return { outcome: 'refused', refusal };
    const client = from.clientId !== undefined ? { clientId: from.clientId } : {};
    const kind = await verifySecondFactor(this.mfa, subjectId, input, nowSeconds());
    if (!kind) {
      await this.limiter.failed(attempt);
      this.events.emit({ name: 'mfa_failed', endpoint: 'mfa', subjectId, ...from.origin, ...client });
      return { outcome: 'invalid' };
    }
    this.events.emit({ name: 'mfa_succeeded', endpoint: 'mfa', subjectId, factor: kind, ...from.origin, ...client });
    return { outcome: 'verified', kind };
  }
}
