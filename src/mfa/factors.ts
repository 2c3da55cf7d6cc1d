/**
 * A user's second factors and the decision "which step comes next" after the first factor
 * (password or upstream sign-in). OWASP ASVS 5.0 V6 (authentication); RFC 8176 (`amr` values).
 *
 * Adding a factor kind (e.g. WebAuthn security keys) takes one entry in `FACTOR_KINDS`: its `amr`
 * values, whether holding it makes the user "a user with a second factor" (so every sign-in asks
 * for one), its strength (which sign-ins may change the factors of a user who holds it), the
 * message key of its name on /account, and the page that adds one. Its rows live in
 * the same store table (`FactorStore`: kind = the entry's key, its own JSON in `data`, `counter`
 * for anything that must only grow, advanced atomically by `advanceFactorCounter`), or, for the
 * WebAuthn kinds (`webauthn: true`), in `webauthn_credentials` (src/stores/webauthn-credentials.ts),
 * which `MfaService` lists and removes alongside. The /account page then lists, links to adding,
 * and removes every kind without further changes. The kind's own pages (src/mfa/<kind>.ts, src/ui/<kind>.ts) find who
 * is signing in with `SecondStepService.who` (src/mfa/second-step.ts) and finish with
 * `completeSecondFactor` (ui/account-mfa.ts), which starts or steps up the session with the
 * kind's `amr` and resumes the authorization request.
 */
import { randomBytes } from 'node:crypto';
import type { ResolvedConfig } from '../config/loader.js';
import type { FactorStore, StoredFactor } from '../stores/types.js';
import type { GrantRecords } from '../stores/records/index.js';
import type { PendingEnrollment } from '../stores/records/mfa-enrollments.js';
import type { PendingSignIn } from '../stores/records/mfa-pending.js';
import type { WebAuthnCredentialStore } from '../stores/webauthn-credentials.js';
import { nowSeconds } from '../crypto/handles.js';
import type { Messages } from '../page-kit/i18n.js';
import type { Session } from '../users/sessions.js';

/** What Sigil knows about one kind of factor. */
export interface FactorKind {
  /** RFC 8176 `amr` values a use of the factor adds to the session (besides `mfa`). */
  amr: readonly string[];
  /** Holding one makes every sign-in of the user ask for a second factor. */
  secondFactor: boolean;
  /**
   * How strong a proof of the user a use of it is, for adding and removing factors
   * (`MfaService.mayChangeFactors`): a session whose `amr` shows a use of a kind of this strength
   * (one of `amr`) may change the factors of a user who holds nothing stronger.
   */
  strength: number;
  /** The message key of its name on the /account page. */
  nameKey: keyof Messages;
  /** Where /account links to add one (a page of the kind's module), and the link's message key. */
  add?: { path: string; labelKey: keyof Messages };
  /**
   * Its rows live in `webauthn_credentials` (src/stores/webauthn-credentials.ts), not in
   * `mfa_factors`; the kind exists only while `webauthn.enabled`.
   */
  webauthn?: true;
}

/**
 * The factor kinds. `totp`: an authenticator app (RFC 6238), amr `otp`. `recovery_code`: one of
 * the ten single-use codes (a one-time password too, amr `otp`); it stands in for the other
 * factors but is not one by itself. `security-key`: a WebAuthn security key (src/mfa/webauthn.ts),
 * amr `hwk`, a second factor. `passkey`: a WebAuthn passkey, amr `swk`; a way to sign in on its
 * own (with user verification, which makes that sign-in MFA), not a lock on the password, so it
 * does not make every password sign-in ask for a second factor; where MFA is required it serves
 * as the second step (`nextStep`). Both are added at /account/passkeys (one link).
 * Strength: the WebAuthn kinds 2 (a signature by a key that never leaves the authenticator), the
 * one-time codes 1.
 */
export const FACTOR_KINDS: Record<string, FactorKind> = {
  totp: {
    amr: ['otp'],
    secondFactor: true,
    strength: 1,
    nameKey: 'factorTotp',
    add: { path: '/account/totp', labelKey: 'addTotp' },
  },
  recovery_code: { amr: ['otp'], secondFactor: false, strength: 1, nameKey: 'factorRecoveryCodes' },
  'security-key': {
    amr: ['hwk'],
    secondFactor: true,
    strength: 2,
    nameKey: 'passkeyKindSecurityKey',
    add: { path: '/account/passkeys', labelKey: 'managePasskeys' },
    webauthn: true,
  },
  passkey: { amr: ['swk'], secondFactor: false, strength: 2, nameKey: 'passkeyKindPasskey', webauthn: true },
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
  const amr = Array.isArray(claims.amr)
    ? claims.amr.filter((v): v is string => typeof v === 'string' && v.length > 0 && v.length <= 100).slice(0, 10)
    : [];
  if (!amr.includes(AMR_MFA)) return { amr: ['external'] };
  const acr =
    typeof claims.acr === 'string' && claims.acr.length > 0 && claims.acr.length <= 300 ? claims.acr : undefined;
  return { amr, ...(acr ? { upstreamAcr: acr } : {}) };
}

/**
 * What must happen after the first factor: nothing, a one-time code (`verify`: TOTP or a
 * recovery code), the security key step (`security-key`: a WebAuthn credential, which a user
 * who has one is asked for first; its page offers the code when the user also has one), or
 * enrolling one.
 */
export type SecondStep = 'none' | 'verify' | 'security-key' | 'enroll';

/** The pending states of the second step, as stored (`stores/records/mfa-pending.ts`, `mfa-enrollments.ts`). */
export type { PendingEnrollment, PendingSignIn };

/** How long a sign-in waits for its second factor (`PendingSignIn`, one per browser), seconds. */
export const PENDING_SIGN_IN_LIFETIME = 300;

/** How long an enrollment waits for its confirming code, seconds. */
export const ENROLLMENT_LIFETIME = 600;

/** A user's factors and the pending states of the second step. */
export class MfaService {
  /**
   * @param factors the store of factors
   * @param records where pending sign-ins and enrollments live (short-lived grant records)
   * @param config the resolved config (`mfa`)
   * @param dataKey `SIGIL_DATA_KEY`, sealing TOTP secrets at rest when set
   * @param webauthn the WebAuthn credentials when `webauthn.enabled`, else undefined (the
   *   `webauthn` kinds of `FACTOR_KINDS` then do not exist)
   */
  constructor(
    readonly factors: FactorStore,
    private readonly records: Pick<GrantRecords, 'pendingSignIns' | 'enrollments'>,
    readonly config: ResolvedConfig['mfa'],
    readonly dataKey: Uint8Array | undefined,
    private readonly webauthn?: WebAuthnCredentialStore,
  ) {}

  /** Whether a factor kind exists here (WebAuthn kinds only with `webauthn.enabled`). */
  hasKind(kind: string): boolean {
    const k = FACTOR_KINDS[kind];
    return k !== undefined && (!k.webauthn || this.webauthn !== undefined);
  }

  /**
   * Every factor of the user (all kinds, recovery codes included): the `mfa_factors` rows, then
   * the WebAuthn credentials as factors (`label` its name, `data` empty), each oldest first.
   */
  async listFactors(subjectId: string): Promise<StoredFactor[]> {
    const own = await this.factors.listFactors(subjectId);
    const keys = this.webauthn ? await this.webauthn.list(subjectId) : [];
    return [
      ...own,
      ...keys.map((c) => ({
        id: c.id,
        subjectId,
        kind: c.kind,
        label: c.name,
        data: {},
        counter: c.counter,
        createdAt: c.createdAt,
        lastUsedAt: c.lastUsedAt,
      })),
    ];
  }

  /** The user's factors that count as a second factor (`FactorKind.secondFactor`), of every source. */
  async secondFactors(subjectId: string): Promise<StoredFactor[]> {
    return (await this.listFactors(subjectId)).filter((f) => FACTOR_KINDS[f.kind]?.secondFactor);
  }

  /**
   * Removes one factor of the user from the store its kind lives in.
   * @returns false when the user has no such factor.
   */
  removeFactor(subjectId: string, factor: Pick<StoredFactor, 'id' | 'kind'>): Promise<boolean> {
    if (FACTOR_KINDS[factor.kind]?.webauthn)
      return this.webauthn ? this.webauthn.remove(subjectId, factor.id) : Promise.resolve(false);
    return this.factors.removeFactor(subjectId, factor.id);
  }

  /** Removes every factor of the user, of every source (`sigil users mfa reset`); returns how many. */
  async removeAllFactors(subjectId: string): Promise<number> {
    let removed = await this.factors.removeFactors(subjectId);
    for (const c of this.webauthn ? await this.webauthn.list(subjectId) : [])
      if (await this.webauthn?.remove(subjectId, c.id)) removed++;
    return removed;
  }

  /**
   * Whether a client's sign-ins need a second factor: its `requireMfa`, else the global
   * `mfa.required`.
   */
  requiredFor(client: { requireMfa?: boolean | undefined } | undefined): boolean {
    return client?.requireMfa ?? this.config.required;
  }

  /**
   * The step after the first factor (the one decision, for the login page, step-up, the device
   * flow and the password grant): a user with a second factor is always asked for one, the
   * security key step when they have a security key, else a one-time code (`verify`); where
   * one is required: the security key step for a user with only a passkey, `enroll` only for a
   * user with nothing at all (any credential locks enrollment: left-over recovery codes are
   * typed at `verify`); else `none`.
   * @param required the client's policy or the request's `acr_values` ask for MFA
   */
  async nextStep(subjectId: string, required: boolean): Promise<SecondStep> {
    const all = await this.listFactors(subjectId);
    const second = all.filter((f) => FACTOR_KINDS[f.kind]?.secondFactor);
    if (second.some((f) => FACTOR_KINDS[f.kind]?.webauthn)) return 'security-key';
    if (second.length > 0) return 'verify';
    if (!required) return 'none';
    // A passkey serves as the second step where one is required.
    if (all.some((f) => FACTOR_KINDS[f.kind]?.webauthn)) return 'security-key';
    return all.length === 0 ? 'enroll' : 'verify';
  }

  /**
   * Whether a live session may add or remove the user's factors: signed in within
   * `mfa.freshSignInSeconds`, and with a use of the strongest kind the user holds
   * (`FactorKind.strength`, read from the session's `amr`): a passkey or security key when the
   * user has one, else a one-time code when the user has an authenticator app (or recovery
   * codes). Only a sign-in at Sigil proves a factor: an upstream provider's `amr` (`hwk`, `otp`,
   * ...) tells how it authenticated the user, not that the user used the factors held here. A
   * user with nothing may enroll from any recent session. OWASP ASVS 5.0 V6.2 (re-authentication
   * before changes to authentication factors).
   */
  async mayChangeFactors(session: Pick<Session, 'amr' | 'idp' | 'subjectId' | 'authTime'>): Promise<boolean> {
    if (nowSeconds() - session.authTime > this.config.freshSignInSeconds) return false;
    const held = Math.max(
      0,
      ...(await this.listFactors(session.subjectId)).map((f) => FACTOR_KINDS[f.kind]?.strength ?? 0),
    );
    const used = session.idp === 'local' ? session.amr : [];
    const proved = Math.max(
      0,
      ...Object.values(FACTOR_KINDS)
        .filter((k) => k.amr.some((v) => used.includes(v)))
        .map((k) => k.strength),
    );
    return proved >= held;
  }

  /**
   * Whether a live session is a recent strong sign-in: signed in at Sigil within
   * `mfa.freshSignInSeconds`, with a second factor or a passkey (an `amr` of a factor kind: `otp`,
   * `hwk`, `swk`). Such a session may change the password without the current one (OWASP ASVS 5.0
   * V6.2.3 asks for the current password or a re-authentication; NIST SP 800-63B §6.1.2.3 allows
   * the change after authenticating with another factor, as Keycloak's "max auth age" does). A
   * password alone, or an upstream provider's word, is not strong; nor is a factor enrolled during
   * the session (enrolling adds its `amr` to the session, but proves only the session itself):
   * the factor used must have been held before the sign-in.
   */
  async recentStrongSignIn(session: Pick<Session, 'amr' | 'idp' | 'authTime' | 'subjectId'>): Promise<boolean> {
    if (nowSeconds() - session.authTime > this.config.freshSignInSeconds) return false;
    const used = session.idp === 'local' ? session.amr : [];
    if (used.length === 0) return false;
    return (await this.listFactors(session.subjectId)).some(
      (f) => f.createdAt < session.authTime && FACTOR_KINDS[f.kind]?.amr.some((v) => used.includes(v)),
    );
  }

  /** Whether the user has anything that can serve as the second step (a second factor, or a passkey). */
  async canStepUp(subjectId: string): Promise<boolean> {
    return (await this.listFactors(subjectId)).some(
      (f) => FACTOR_KINDS[f.kind]?.secondFactor || FACTOR_KINDS[f.kind]?.webauthn,
    );
  }

  /** Stores a sign-in waiting for its second factor, replacing this browser's previous one. */
  async savePending(browser: string, pending: PendingSignIn): Promise<void> {
    const now = nowSeconds();
    await this.records.pendingSignIns.save(browser, pending, now, now + PENDING_SIGN_IN_LIFETIME);
  }

  /** This browser's live sign-in waiting for its second factor, or undefined. */
  async pending(browser: string): Promise<PendingSignIn | undefined> {
    const pending = await this.records.pendingSignIns.find(browser, nowSeconds());
    // One waiting for a new password is no second step's to finish.
    return pending?.passwordChange ? undefined : pending;
  }

  /** This browser's live sign-in waiting for a new password (`PendingSignIn.passwordChange`), or undefined. */
  async pendingPasswordChange(browser: string): Promise<PendingSignIn | undefined> {
    const pending = await this.records.pendingSignIns.find(browser, nowSeconds());
    return pending?.passwordChange ? pending : undefined;
  }

  /** Ends this browser's pending sign-in, atomically: false when another request ended it first. */
  finishPending(browser: string): Promise<boolean> {
    return this.records.pendingSignIns.finish(browser, nowSeconds());
  }

  /** Stores a TOTP secret waiting for its first code, for this browser and user. */
  async saveEnrollment(browser: string, subjectId: string, enrollment: PendingEnrollment): Promise<void> {
    const now = nowSeconds();
    await this.records.enrollments.save(browser, subjectId, enrollment, now, now + ENROLLMENT_LIFETIME);
  }

  /** The live enrollment of this browser and user, or undefined. */
  async enrollment(browser: string, subjectId: string): Promise<PendingEnrollment | undefined> {
    return this.records.enrollments.find(browser, subjectId, nowSeconds());
  }

  /** Ends an enrollment once confirmed, atomically: false when already confirmed. */
  finishEnrollment(browser: string, subjectId: string): Promise<boolean> {
    return this.records.enrollments.finish(browser, subjectId, nowSeconds());
  }
}

/** A new random factor id (base64url, 22 characters). */
export function newFactorId(): string {
  return randomBytes(16).toString('base64url');
}
