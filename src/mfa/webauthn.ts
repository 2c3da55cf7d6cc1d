/**
 * WebAuthn ceremonies (W3C WebAuthn Level 3 §7) with `@simplewebauthn/server`: registration of
 * passkeys (discoverable credentials, user verification required) and security keys (second
 * factor), and authentication with either. Protocol rules kept here:
 * - The relying party ID is the issuer's host name and the only accepted origin the issuer's
 *   origin (§5.1.3, §5.4.1): a response made for another site or origin is refused.
 * - Each challenge is random (the library's 32 bytes), stored under its SHA-256 with what it is
 *   for, the browser and the user it was issued to, lives `challengeLifetime` seconds and is
 *   consumed atomically before the response is checked (§13.4.3): a replayed or late response is
 *   refused, and a refused one cannot be retried with the same challenge.
 * - The signature counter must grow whenever either side has one (§6.1.1, §7.2 step 21); the new
 *   value is written with a compare-and-set, so two uses that read the same value never both pass.
 * - A passkey sign-in requires user verification (§7.2 step 16) and the user handle of the
 *   credential's owner (§7.2 step 6).
 */
import { createHash } from 'node:crypto';
import type {
  AuthenticationResponseJSON,
  PublicKeyCredentialCreationOptionsJSON,
  PublicKeyCredentialRequestOptionsJSON,
  RegistrationResponseJSON,
} from '@simplewebauthn/server';
import type { Store } from '../stores/types.js';
import type { CeremonyPurpose, ChallengeData } from '../stores/records/webauthn-challenges.js';
import type { StoredWebAuthnCredential, WebAuthnKind } from '../stores/webauthn-credentials.js';
import { nowSeconds } from '../crypto/handles.js';

/**
 * `@simplewebauthn/server` and its helpers, loaded at the first ceremony: about 240 ms of module
 * loading that a start without WebAuthn traffic does not pay.
 */
let library:
  | Promise<typeof import('@simplewebauthn/server') & typeof import('@simplewebauthn/server/helpers')>
  | undefined;
function webauthnLibrary(): NonNullable<typeof library> {
  library ??= Promise.all([import('@simplewebauthn/server'), import('@simplewebauthn/server/helpers')]).then(
    ([server, helpers]) => ({
      ...server,
      ...helpers,
    }),
  );
  return library;
}

/** The relying party as the authenticator sees it (W3C WebAuthn L3 §5.4.1). */
export interface RelyingParty {
  /** RP ID: the issuer's host name, without port. */
  id: string;
  /** The one accepted origin: the issuer's scheme, host and port. */
  origin: string;
  /** Display name (config `webauthn.rpName`). */
  name: string;
}

/**
 * The relying party of an issuer: RP ID its host name, origin its origin (WebAuthn L3 §5.1.3:
 * the RP ID must be the origin's effective domain or a suffix of it; the host itself is the
 * narrowest choice). Browsers accept only domain names as RP ID (not IP addresses).
 */
export function relyingPartyOf(issuer: string, name: string): RelyingParty {
  const url = new URL(issuer);
  return { id: url.hostname, origin: url.origin, name };
}

/** Why a response was refused; `reason` is for logs and events, never shown to the user as is. */
export class WebAuthnError extends Error {
  constructor(
    readonly reason:
      | 'malformed'
      | 'challenge'
      | 'unknown_credential'
      | 'wrong_user'
      | 'verification'
      | 'counter'
      | 'duplicate',
    message: string,
  ) {
    super(message);
  }
}

/** The accepted assertion of a credential. */
export interface VerifiedUse {
  credential: StoredWebAuthnCredential;
  /** The authenticator verified the user (UV flag, WebAuthn L3 §6.1). */
  userVerified: boolean;
}

/**
 * The WebAuthn user handle of a subject (WebAuthn L3 §5.4.3: at most 64 bytes, no personal data):
 * the SHA-256 of the subject id, base64url.
 */
export function userHandleOf(subjectId: string): string {
  return createHash('sha256').update(`sigil-webauthn-user\u0000${subjectId}`).digest('base64url');
}

/** Runs the ceremonies against the store. */
export class WebAuthnService {
  /**
   * @param challengeLifetime seconds a challenge may be answered (config `webauthn.challengeLifetime`)
   */
  constructor(
    private readonly store: Store,
    readonly rp: RelyingParty,
    private readonly challengeLifetime: number,
  ) {}

  /**
   * Options for `navigator.credentials.create` (WebAuthn L3 §5.4), challenge stored.
   * A passkey: resident key and user verification required; a security key: no resident key,
   * user verification discouraged (a second factor after the password), cross-platform.
   * The user's existing credentials are excluded (no second registration of one authenticator).
   */
  async registrationOptions(
    user: { subjectId: string; username: string; displayName: string },
    kind: WebAuthnKind,
    browser: string,
  ): Promise<PublicKeyCredentialCreationOptionsJSON> {
    const { generateRegistrationOptions, isoBase64URL } = await webauthnLibrary();
    const existing = await this.store.webauthn.list(user.subjectId);
    const options = await generateRegistrationOptions({
      rpName: this.rp.name,
      rpID: this.rp.id,
      userName: user.username,
      userDisplayName: user.displayName,
      userID: isoBase64URL.toBuffer(userHandleOf(user.subjectId)),
      timeout: this.challengeLifetime * 1000,
      attestationType: 'none',
      excludeCredentials: existing.map((c) => ({ id: c.id, transports: c.transports })),
      authenticatorSelection:
        kind === 'passkey'
          ? { residentKey: 'required', requireResidentKey: true, userVerification: 'required' }
          : {
              residentKey: 'discouraged',
              requireResidentKey: false,
              userVerification: 'discouraged',
              authenticatorAttachment: 'cross-platform',
            },
    });
    await this.saveChallenge(options.challenge, {
      purpose: kind === 'passkey' ? 'register-passkey' : 'register-security-key',
      browser,
      subjectId: user.subjectId,
    });
    return options;
  }

  /**
   * Checks a registration response (WebAuthn L3 §7.1) and stores the credential.
   * @param name the label the user gave it (cut to 100 characters)
   * @throws WebAuthnError `malformed`, `challenge` (unknown, used, expired, other browser, user or
   *   kind), `verification` (origin, RP ID, type, flags, attestation), `duplicate`.
   */
  async register(
    subjectId: string,
    kind: WebAuthnKind,
    response: unknown,
    browser: string,
    name: string,
  ): Promise<StoredWebAuthnCredential> {
    const parsed = asResponse<RegistrationResponseJSON>(response, 'attestationObject');
    const { verifyRegistrationResponse, isoBase64URL } = await webauthnLibrary();
    const challenge = await this.consumeChallenge(
      parsed,
      kind === 'passkey' ? 'register-passkey' : 'register-security-key',
      browser,
      subjectId,
    );
    let result;
    try {
      result = await verifyRegistrationResponse({
        response: parsed,
        expectedChallenge: challenge,
        expectedOrigin: this.rp.origin,
        expectedRPID: this.rp.id,
        requireUserVerification: kind === 'passkey',
      });
    } catch (err) {
      throw new WebAuthnError('verification', (err as Error).message);
    }
    if (!result.verified) throw new WebAuthnError('verification', 'registration not verified');
    const info = result.registrationInfo;
    // A passkey must be discoverable (WebAuthn L3 §6.2.2); the credProps extension is optional,
    // so the authenticator's answer is taken as given when it sends none.
    const credProps = parsed.clientExtensionResults?.credProps;
    if (kind === 'passkey' && credProps && credProps.rk === false)
      throw new WebAuthnError('verification', 'not a discoverable credential');
    const credential: StoredWebAuthnCredential = {
      id: info.credential.id,
      subjectId,
      kind,
      publicKey: isoBase64URL.fromBuffer(info.credential.publicKey),
      counter: info.credential.counter,
      transports: (parsed.response.transports ?? []).filter((t) => typeof t === 'string').slice(0, 8),
      name: name.trim().slice(0, 100) || (kind === 'passkey' ? 'Passkey' : 'Security key'),
      backedUp: info.credentialBackedUp,
      createdAt: nowSeconds(),
      lastUsedAt: null,
    };
    if (!(await this.store.webauthn.add(credential)))
      throw new WebAuthnError('duplicate', 'credential registered already');
    return credential;
  }

  /**
   * Options for `navigator.credentials.get` (WebAuthn L3 §5.5), challenge stored. A passkey
   * sign-in lists no credentials (the authenticator offers its discoverable ones) and requires user
   * verification; the second factor lists the user's credentials and only asks for presence.
   * @param subjectId the user, for `second-factor`
   */
  async authenticationOptions(
    purpose: 'passkey' | 'second-factor',
    browser: string,
    subjectId = '',
  ): Promise<PublicKeyCredentialRequestOptionsJSON> {
    const { generateAuthenticationOptions } = await webauthnLibrary();
    const allow = purpose === 'second-factor' ? await this.store.webauthn.list(subjectId) : [];
    const options = await generateAuthenticationOptions({
      rpID: this.rp.id,
      timeout: this.challengeLifetime * 1000,
      userVerification: purpose === 'passkey' ? 'required' : 'discouraged',
      allowCredentials: allow.map((c) => ({ id: c.id, transports: c.transports })),
    });
    await this.saveChallenge(options.challenge, {
      purpose,
      browser,
      subjectId: purpose === 'passkey' ? '' : subjectId,
    });
    return options;
  }

  /**
   * Checks an assertion (WebAuthn L3 §7.2) and records the use (counter, time).
   * For `passkey`: the credential must be a passkey, its user handle its owner's, the user
   * verified. For `second-factor`: the credential must be `subjectId`'s.
   * @throws WebAuthnError `malformed`, `challenge`, `unknown_credential`, `wrong_user`,
   *   `verification` (signature, origin, RP ID, flags), `counter` (not grown, or a concurrent use).
   */
  async authenticate(
    purpose: 'passkey' | 'second-factor',
    response: unknown,
    browser: string,
    subjectId = '',
  ): Promise<VerifiedUse> {
    const parsed = asResponse<AuthenticationResponseJSON>(response, 'authenticatorData');
    const { verifyAuthenticationResponse, isoBase64URL } = await webauthnLibrary();
    const challenge = await this.consumeChallenge(parsed, purpose, browser, purpose === 'passkey' ? '' : subjectId);
    const credential = await this.store.webauthn.get(parsed.id);
    if (!credential) throw new WebAuthnError('unknown_credential', 'no such credential');
    if (purpose === 'passkey') {
      if (credential.kind !== 'passkey') throw new WebAuthnError('wrong_user', 'not a passkey');
      if (parsed.response.userHandle !== userHandleOf(credential.subjectId))
        throw new WebAuthnError('wrong_user', 'user handle does not match');
    } else if (credential.subjectId !== subjectId) throw new WebAuthnError('wrong_user', "not this user's credential");
    let result;
    try {
      result = await verifyAuthenticationResponse({
        response: parsed,
        expectedChallenge: challenge,
        expectedOrigin: this.rp.origin,
        expectedRPID: this.rp.id,
        credential: {
          id: credential.id,
          publicKey: isoBase64URL.toBuffer(credential.publicKey),
          counter: credential.counter,
          transports: credential.transports,
        },
        requireUserVerification: purpose === 'passkey',
      });
    } catch (err) {
      const message = (err as Error).message;
      throw new WebAuthnError(/counter/i.test(message) ? 'counter' : 'verification', message);
    }
    if (!result.verified) throw new WebAuthnError('verification', 'assertion not verified');
    const { newCounter, userVerified } = result.authenticationInfo;
    if (!(await this.store.webauthn.recordUse(credential.id, credential.counter, newCounter, nowSeconds())))
      throw new WebAuthnError('counter', 'credential used concurrently');
    return { credential: { ...credential, counter: newCounter }, userVerified };
  }

  private async saveChallenge(challenge: string, data: ChallengeData): Promise<void> {
    const now = nowSeconds();
    await this.store.records.webauthnChallenges.put(challenge, data, now, now + this.challengeLifetime);
  }

  /**
   * Finds the challenge the response signed (from its client data) and consumes it, atomically,
   * when it was issued for this purpose, browser and user and is still live.
   * @returns the challenge, for the library's exact comparison.
   */
  private async consumeChallenge(
    response: RegistrationResponseJSON | AuthenticationResponseJSON,
    purpose: CeremonyPurpose,
    browser: string,
    subjectId: string,
  ): Promise<string> {
    const { decodeClientDataJSON } = await webauthnLibrary();
    let challenge: string;
    try {
      challenge = decodeClientDataJSON(response.response.clientDataJSON).challenge;
    } catch {
      throw new WebAuthnError('malformed', 'client data is not valid');
    }
    if (typeof challenge !== 'string' || challenge.length === 0 || challenge.length > 200)
      throw new WebAuthnError('malformed', 'no challenge');
    const challenges = this.store.records.webauthnChallenges;
    const data = (await challenges.find(challenge))?.data;
    if (!data || data.purpose !== purpose || data.browser !== browser || data.subjectId !== subjectId)
      throw new WebAuthnError('challenge', 'unknown challenge');
    if (!(await challenges.consume(challenge, nowSeconds())))
      throw new WebAuthnError('challenge', 'challenge used or expired');
    return challenge;
  }
}

/** Checks the outer shape of a response from the browser (`PublicKeyCredential.toJSON()`). */
function asResponse<T extends RegistrationResponseJSON | AuthenticationResponseJSON>(value: unknown, field: string): T {
  const v = value as { id?: unknown; rawId?: unknown; type?: unknown; response?: Record<string, unknown> } | null;
  if (
    !v ||
    typeof v !== 'object' ||
    typeof v.id !== 'string' ||
    v.id.length === 0 ||
    v.id.length > 1400 ||
    v.type !== 'public-key' ||
    !v.response ||
    typeof v.response !== 'object' ||
    typeof v.response.clientDataJSON !== 'string' ||
    typeof v.response[field] !== 'string'
  )
    throw new WebAuthnError('malformed', 'not a WebAuthn response');
  if (typeof v.rawId !== 'string') (v as { rawId: string }).rawId = v.id;
  if (!('clientExtensionResults' in v)) (v as { clientExtensionResults: object }).clientExtensionResults = {};
  return v as unknown as T;
}
