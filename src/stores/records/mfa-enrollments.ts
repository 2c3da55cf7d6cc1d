/**
 * TOTP secrets waiting for their first code (enrollment, `mfa/factors.ts`), per browser and user:
 * stored under the SHA-256 of both (prefixed); a new one replaces the previous one; confirmed once
 * (consumed atomically).
 */
import { hashHandle } from '../../crypto/handles.js';
import type { GrantStore } from '../grant-store.js';
import { RecordKind } from './record-kind.js';

/** A TOTP secret waiting for its first code (enrollment), per browser and user. */
export interface PendingEnrollment {
  /** The secret sealed with `sealJson` (src/keys/keys.ts). */
  secret: string;
}

function keyOf(browser: string, subjectId: string): string {
  return hashHandle(`mfa-enrollment\u0000${browser}\u0000${subjectId}`);
}

/** The `mfa_enrollment` records, by hashed browser id and user. Times are Unix seconds. */
export class PendingEnrollments {
  private readonly kind: RecordKind<PendingEnrollment>;

  constructor(grants: GrantStore) {
    this.kind = new RecordKind(grants, 'mfa_enrollment');
  }

  /** Stores the enrollment until `expiresAt`, replacing this browser's and user's previous one. */
  save(
    browser: string,
    subjectId: string,
    enrollment: PendingEnrollment,
    now: number,
    expiresAt: number,
  ): Promise<void> {
    return this.kind.save({
      key: keyOf(browser, subjectId),
      clientId: '',
      subjectId,
      data: enrollment,
      createdAt: now,
      expiresAt,
    });
  }

  /** The live enrollment of this browser and user, or undefined. */
  async find(browser: string, subjectId: string, now: number): Promise<PendingEnrollment | undefined> {
    return (await this.kind.findLive(keyOf(browser, subjectId), now))?.data;
  }

  /** Ends the enrollment once confirmed, atomically: false when already confirmed. */
  finish(browser: string, subjectId: string, now: number): Promise<boolean> {
    return this.kind.consume(keyOf(browser, subjectId), now);
  }
}
