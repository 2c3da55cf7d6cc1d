/**
 * Sign-ins waiting for their second factor (after the password, `mfa/factors.ts`), one per
 * browser: stored under the SHA-256 of the browser id (prefixed); a new one replaces the
 * browser's previous one; ended once (consumed atomically).
 */
import { hashHandle } from '../../crypto/handles.js';
import type { GrantStore } from '../grant-store.js';
import { RecordKind } from './record-kind.js';

/**
 * A sign-in waiting for its second factor (after the password), bound to the browser.
 */
export interface PendingSignIn {
  subjectId: string;
  tenant: string | null;
  /** `amr` of the first factor (RFC 8176), e.g. `["pwd"]`. */
  amr: string[];
  idp: string;
  /** The pending authorization request (interaction id) to resume, if any. */
  interaction?: string;
  /** The account page to continue at afterwards (`returnPath`: the sign-in started there). */
  returnTo?: string;
  /**
   * The sign-in's decision (`nextStep`) was `enroll`: the only case in which this pending sign-in
   * may add a factor (/account/totp), and only while the user still has none.
   */
  enroll?: true;
  /**
   * The password was a temporary one an administrator set: this sign-in waits for the user to
   * choose a new password (/account/password/required), not for a second factor, and no second
   * step may finish it.
   */
  passwordChange?: true;
}

function keyOf(browser: string): string {
  return hashHandle(`mfa-pending\u0000${browser}`);
}

/** The `mfa_pending` records, by hashed browser id. Times are Unix seconds. */
export class PendingSignIns {
  private readonly kind: RecordKind<PendingSignIn>;

  constructor(grants: GrantStore) {
    this.kind = new RecordKind(grants, 'mfa_pending');
  }

  /** Stores the browser's pending sign-in until `expiresAt`, replacing its previous one. */
  save(browser: string, pending: PendingSignIn, now: number, expiresAt: number): Promise<void> {
    return this.kind.save({
      key: keyOf(browser),
      clientId: '',
      subjectId: pending.subjectId,
      data: pending,
      createdAt: now,
      expiresAt,
    });
  }

  /** The browser's pending sign-in when live at `now`, or undefined. */
  async find(browser: string, now: number): Promise<PendingSignIn | undefined> {
    return (await this.kind.findLive(keyOf(browser), now))?.data;
  }

  /** Ends the browser's pending sign-in, atomically: false when another request ended it first. */
  finish(browser: string, now: number): Promise<boolean> {
    return this.kind.consume(keyOf(browser), now);
  }
}
