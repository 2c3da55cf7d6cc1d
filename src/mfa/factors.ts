/**
 * A user's second factors and the decision "which step comes next" after the first factor
 * (password or upstream sign-in). OWASP ASVS 5.0 V6 (authentication); RFC 8176 (`amr` values).
 *
 * Adding a factor kind (e.g. WebAuthn security keys) takes one entry in `FACTOR_KINDS`: its `amr`
 * values, whether holding it makes the user "a user with a second factor" (so every sign-in asks
 * for one), the message key of its name on /account, and the page that adds one. Its rows live in
 * the same store table (`FactorStore`: kind = the entry's key, its own JSON in `data`, `counter`
 * for anything that must only grow, such as a WebAuthn sign count, advanced atomically by
 * `advanceFactorCounter`). The /account page then lists, links to adding, and removes every kind
 * without further changes. The kind's own pages (src/mfa/<kind>.ts, src/ui/<kind>.ts) find who
 * is signing in with `secondStepWho` and finish with `completeSecondFactor` (both in
 * ui/account-mfa.ts), which starts or steps up the session with the kind's `amr` and resumes the
 * authorization request.
 */
import { randomBytes } from 'node:crypto';
import type { ResolvedConfig } from '../config/loader.js';
import type { GrantStore, FactorStore, StoredFactor } from '../stores/types.js';
import { newGrantRecord } from '../stores/types.js';
import { hashHandle, nowSeconds } from '../tokens/handles.js';
import type { Messages } from '../ui/i18n.js';
import type { Session } from '../users/sessions.js';

/** What Sigil knows about one kind of factor. */
export interface FactorKind {
  /** RFC 8176 `amr` values a use of the factor adds to the session (besides `mfa`). */
  amr: readonly string[];
  /** Holding one makes every sign-in of the user ask for a second factor. */
  secondFactor: boolean;
  /** The message key of its name on the /account page. */
  nameKey: keyof Messages;
  /** Where /account links to add one (a page of the kind's module), and the link's message key. */
  add?: { path: string; labelKey: keyof Messages };
}

/**
 * The factor kinds. `totp`: an authenticator app (RFC 6238), amr `otp`. `recovery_code`: one of
 * the ten single-use codes (a one-time password too, amr `otp`); it stands in for the other
 * factors but is not one by itself.
 */
export const FACTOR_KINDS: Record<string, FactorKind> = {
  totp: { amr: ['otp'], secondFactor: true, nameKey: 'factorTotp', add: { path: '/account/totp', labelKey: 'addTotp' } },
  recovery_code: { amr: ['otp'], secondFactor: false, nameKey: 'factorRecoveryCodes' },
};

/** The `amr` value of a multi-factor sign-in (RFC 8176 §2). */
export const AMR_MFA = 'mfa';

/** Whether a session was signed in with more than one factor (its `amr` has `mfa`). */
export function sessionHasMfa(session: Pick<Session, 'amr'>): boolean {
  return session.amr.includes(AMR_MFA);
}

/** The `amr` of a session after a second factor of `kind`: the first factor's values, the kind's, and `mfa`. */
export function amrWith(first: readonly string[], kind: string): string[] {
  const add = FACTOR_KINDS[kind]?.amr ?? [];
  return [...new Set([...first.filter((v) => v !== AMR_MFA), ...add, AMR_MFA])];
}

/**
 * How an upstream sign-in (federation) counts: when the upstream's identity token asserts MFA
 * (`amr` containing `mfa`, RFC 8176 §2), its `amr` values and its `acr` (OIDC Core §2) are
 * carried into the session and so into Sigil's tokens; otherwise the sign-in is one factor,
 * `amr` `["external"]`. Values are kept only when they are short strings (at most 10 of them,
 * 100 characters each; `acr` at most 300).
 * @param claims the verified claims of the upstream identity token (and userinfo)
 */
export function upstreamAuthentication(claims: Record<string, unknown>): { amr: string[]; upstreamAcr?: string } {
  const amr = Array.isArray(claims.amr) ? claims.amr.filter((v): v is string => typeof v === 'string' && v.length > 0 && v.length <= 100).slice(0, 10) : [];
  if (!amr.includes(AMR_MFA)) return { amr: ['external'] };
  const acr = typeof claims.acr === 'string' && claims.acr.length > 0 && claims.acr.length <= 300 ? claims.acr : undefined;
  return { amr, ...(acr ? { upstreamAcr: acr } : {}) };
}

/** What must happen after the first factor: nothing, verifying a second factor, or enrolling one. */
export type SecondStep = 'none' | 'verify' | 'enroll';

/**
 * A sign-in waiting for its second factor (after the password), bound to the browser. Stored as a
 * grant row under the SHA-256 of the browser id, lives `PENDING_SIGN_IN_LIFETIME` seconds.
 */
export interface PendingSignIn {
  subjectId: string;
  tenant: string | null;
  /** `amr` of the first factor (RFC 8176), e.g. `["pwd"]`. */
  amr: string[];
  idp: string;
  /** The pending authorization request (interaction id) to resume, if any. */
  interaction?: string;
  /** Continue at /account afterwards (the sign-in started there). */
  toAccount?: boolean;
}

/** How long a sign-in waits for its second factor, seconds. */
export const PENDING_SIGN_IN_LIFETIME = 300;

/** A TOTP secret waiting for its first code (enrollment), per browser and user. */
export interface PendingEnrollment {
  /** The secret sealed with `sealJson` (src/keys/keys.ts). */
  secret: string;
}

/** How long an enrollment waits for its confirming code, seconds. */
export const ENROLLMENT_LIFETIME = 600;

/** A user's factors and the pending states of the second step. */
export class MfaService {
  /**
   * @param factors the store of factors
   * @param grants where pending sign-ins and enrollments live (short-lived grant rows)
   * @param config the resolved config (`mfa`)
   * @param dataKey `SIGIL_DATA_KEY`, sealing TOTP secrets at rest when set
   */
  constructor(
    readonly factors: FactorStore,
    private readonly grants: GrantStore,
    readonly config: ResolvedConfig['mfa'],
    readonly dataKey: Uint8Array | undefined,
  ) {}

  /** Every factor of the user (all kinds, recovery codes included), oldest first. */
  listFactors(subjectId: string): Promise<StoredFactor[]> {
    return this.factors.listFactors(subjectId);
  }

  /** The user's factors that count as a second factor (`FactorKind.secondFactor`). */
  async secondFactors(subjectId: string): Promise<StoredFactor[]> {
    const kinds = Object.entries(FACTOR_KINDS).filter(([, k]) => k.secondFactor).map(([name]) => name);
    return this.factors.listFactors(subjectId, kinds);
  }

  /**
   * Whether a client's sign-ins need a second factor: its `requireMfa`, else the global
   * `mfa.required`.
   */
  requiredFor(client: { requireMfa?: boolean | undefined } | undefined): boolean {
    return client?.requireMfa ?? this.config.required;
  }

  /**
   * The step after the first factor: `verify` when the user has a second factor (always asked),
   * `enroll` when none but one is required, else `none`.
   * @param required the client's policy or the request's `acr_values` ask for MFA
   */
  async nextStep(subjectId: string, required: boolean): Promise<SecondStep> {
    if ((await this.secondFactors(subjectId)).length > 0) return 'verify';
    return required ? 'enroll' : 'none';
  }

  /**
   * Where a live session goes before it may be used for a request: undefined when it has MFA or
   * needs none; `/account/mfa` (step-up) when the user has a second factor; for a user without
   * one who needs it, `/account/totp` when the session signed in within `freshSignInSeconds`,
   * else `/account/login` (enrolling needs a recent password: an old session could otherwise
   * bind someone else's authenticator to the account).
   * @param required the client's policy or the request asks for MFA
   */
  async stepUpPage(session: Pick<Session, 'amr' | 'subjectId' | 'authTime'>, required: boolean): Promise<string | undefined> {
    if (sessionHasMfa(session)) return undefined;
    const step = await this.nextStep(session.subjectId, required);
    if (step === 'none') return undefined;
    if (step === 'verify') return '/account/mfa';
    return nowSeconds() - session.authTime <= this.config.freshSignInSeconds ? '/account/totp' : '/account/login';
  }

  /** Stores a sign-in waiting for its second factor, replacing this browser's previous one. */
  async savePending(browser: string, pending: PendingSignIn): Promise<void> {
    const now = nowSeconds();
    await this.grants.save(newGrantRecord({
      key: pendingKey(browser),
      type: 'mfa_pending',
      clientId: '',
      subjectId: pending.subjectId,
      data: { ...pending },
      createdAt: now,
      expiresAt: now + PENDING_SIGN_IN_LIFETIME,
    }));
  }

  /** This browser's live pending sign-in, or undefined. */
  async pending(browser: string): Promise<PendingSignIn | undefined> {
    const row = await this.grants.get(pendingKey(browser));
    if (!row || row.type !== 'mfa_pending' || row.consumedAt !== null || row.revokedAt !== null || row.expiresAt <= nowSeconds()) return undefined;
    return row.data as unknown as PendingSignIn;
  }

  /** Ends this browser's pending sign-in, atomically: false when another request ended it first. */
  finishPending(browser: string): Promise<boolean> {
    return this.grants.consume(pendingKey(browser), nowSeconds());
  }

  /** Stores a TOTP secret waiting for its first code, for this browser and user. */
  async saveEnrollment(browser: string, subjectId: string, enrollment: PendingEnrollment): Promise<void> {
    const now = nowSeconds();
    await this.grants.save(newGrantRecord({
      key: enrollmentKey(browser, subjectId),
      type: 'mfa_enrollment',
      clientId: '',
      subjectId,
      data: { ...enrollment },
      createdAt: now,
      expiresAt: now + ENROLLMENT_LIFETIME,
    }));
  }

  /** The live enrollment of this browser and user, or undefined. */
  async enrollment(browser: string, subjectId: string): Promise<PendingEnrollment | undefined> {
    const row = await this.grants.get(enrollmentKey(browser, subjectId));
    if (!row || row.type !== 'mfa_enrollment' || row.consumedAt !== null || row.revokedAt !== null || row.expiresAt <= nowSeconds()) return undefined;
    return row.data as unknown as PendingEnrollment;
  }

  /** Ends an enrollment once confirmed, atomically: false when already confirmed. */
  finishEnrollment(browser: string, subjectId: string): Promise<boolean> {
    return this.grants.consume(enrollmentKey(browser, subjectId), nowSeconds());
  }
}

/** A new random factor id (base64url, 22 characters). */
export function newFactorId(): string {
  return randomBytes(16).toString('base64url');
}

function pendingKey(browser: string): string {
  return hashHandle(`mfa-pending\u0000${browser}`);
}

function enrollmentKey(browser: string, subjectId: string): string {
  return hashHandle(`mfa-enrollment\u0000${browser}\u0000${subjectId}`);
}
