/**
 * The security key step after a right password (or a live session's step-up): a pending record
 * under the SHA-256 of a random handle kept in an HttpOnly cookie, used once (consumed atomically
 * when the key answers or the step is cancelled).
 */
import { hashHandle } from '../../crypto/handles.js';
import type { GrantStore } from '../grant-store.js';
import { RecordKind } from './record-kind.js';

/** A password checked (or a session to step up), the security key still to come. */
export interface WebAuthnPending {
  subjectId: string;
  username: string;
  tenant: string | null;
  /** The pending authorization request's interaction id, or empty. */
  interaction: string;
  /** Hashed browser id. */
  browser: string;
  /** The one-time code page, offered instead (the user also has TOTP or recovery codes). */
  codeLink?: string;
  /** The account page to continue at afterwards (`returnPath`: the sign-in started there). */
  returnTo?: string;
}

/** The `webauthn_pending` records, by cookie handle. Times are Unix seconds. */
export class WebAuthnPendingSteps {
  private readonly kind: RecordKind<WebAuthnPending>;

  constructor(grants: GrantStore) {
    this.kind = new RecordKind(grants, 'webauthn_pending');
  }

  /** Stores a pending step under `handle` until `expiresAt`. */
  put(handle: string, pending: WebAuthnPending, now: number, expiresAt: number): Promise<void> {
    return this.kind.put({
      key: hashHandle(handle),
      clientId: '',
      subjectId: pending.subjectId,
      data: pending,
      createdAt: now,
      expiresAt,
    });
  }

  /** The pending step of `handle` when live at `now`, or undefined. */
  async find(handle: string, now: number): Promise<WebAuthnPending | undefined> {
    return (await this.kind.findLive(hashHandle(handle), now))?.data;
  }

  /** Ends the step, atomically: of two concurrent completions exactly one gets true. */
  consume(handle: string, now: number): Promise<boolean> {
    return this.kind.consume(hashHandle(handle), now);
  }
}
