/**
 * WebAuthn ceremonies' challenges (WebAuthn L3 §13.4.3: random, used once): stored under the
 * SHA-256 of the challenge with what it may be answered with, consumed atomically when answered.
 */
import { hashHandle } from '../../crypto/handles.js';
import type { GrantRecord, GrantStore } from '../grant-store.js';
import { RecordKind } from './record-kind.js';

/**
 * What a challenge may be answered with: a new credential of a kind (`register`), a passkey
 * sign-in (`passkey`), or the assertion after the password (`second-factor`).
 */
export type CeremonyPurpose = 'register-passkey' | 'register-security-key' | 'passkey' | 'second-factor';

/** The challenge row's data. */
export interface ChallengeData {
  purpose: CeremonyPurpose;
  /** Hashed browser id (`SessionService.browserId`). */
  browser: string;
  /** The user it was issued for; empty for a passkey sign-in (the user is not known yet). */
  subjectId: string;
}

/** The `webauthn_challenge` records, by challenge. Times are Unix seconds. */
export class WebAuthnChallenges {
  private readonly kind: RecordKind<ChallengeData>;

  constructor(grants: GrantStore) {
    this.kind = new RecordKind(grants, 'webauthn_challenge');
  }

  /** Stores a new challenge until `expiresAt`. */
  put(challenge: string, data: ChallengeData, now: number, expiresAt: number): Promise<void> {
    return this.kind.put({
      key: hashHandle(challenge),
      clientId: '',
      subjectId: data.subjectId || null,
      data,
      createdAt: now,
      expiresAt,
    });
  }

  /** The challenge's record whatever its state, or undefined. */
  find(challenge: string): Promise<GrantRecord<ChallengeData> | undefined> {
    return this.kind.find(hashHandle(challenge));
  }

  /** Uses the challenge, atomically: false when used already or expired. */
  consume(challenge: string, now: number): Promise<boolean> {
    return this.kind.consume(hashHandle(challenge), now);
  }
}
