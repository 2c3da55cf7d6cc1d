/**
 * Browser sign-in sessions (OIDC Core §3.1.2.3) as stored: under the SHA-256 of the cookie's
 * handle, in a grant family named by the session id (`sid`), so that ending the session
 * (`LogoutStore.endSession`) revokes it with its family.
 */
import { hashHandle } from '../../crypto/handles.js';
import type { GrantRecord, GrantStore } from '../grant-store.js';
import { RecordKind } from './record-kind.js';

/** A signed-in user's session. */
export interface Session {
  /** Session id (`sid` claim): public, distinct from the cookie handle. */
  sid: string;
  subjectId: string;
  /** Unix seconds of the authentication. */
  authTime: number;
  amr: string[];
  idp: string;
  tenant: string | null;
  /** The upstream provider's `acr`, kept when it asserted MFA (federation). */
  upstreamAcr?: string;
  /** Unix seconds when the session ends (absent on sessions stored before it was recorded). */
  expiresAt?: number;
}

/** The `session` records, by cookie handle. Times are Unix seconds. */
export class SessionRecords {
  private readonly kind: RecordKind<Session>;

  constructor(grants: GrantStore) {
    this.kind = new RecordKind(grants, 'session');
  }

  /** Stores a new session under `handle` until `expiresAt`. */
  create(handle: string, session: Session, now: number, expiresAt: number): Promise<void> {
    return this.kind.put({
      key: hashHandle(handle),
      clientId: '',
      subjectId: session.subjectId,
      familyId: session.sid,
      sessionId: session.sid,
      data: session,
      createdAt: now,
      expiresAt,
    });
  }

  /** The session's record whatever its state, or undefined. */
  find(handle: string): Promise<GrantRecord<Session> | undefined> {
    return this.kind.find(hashHandle(handle));
  }

  /** The session's record when neither revoked nor expired at `now`, or undefined. */
  async findLive(handle: string, now: number): Promise<GrantRecord<Session> | undefined> {
    const row = await this.find(handle);
    return row && row.revokedAt === null && row.expiresAt > now ? row : undefined;
  }

  /**
   * Moves the session `row` to a new handle with `session` as its data (same sid, family and
   * expiry), then revokes the old handle's row: the cookie value changes, the session goes on.
   */
  async reissue(row: GrantRecord<Session>, fresh: string, session: Session, now: number): Promise<void> {
    await this.kind.putCopy({ ...row, key: hashHandle(fresh), data: session, createdAt: now });
    await this.kind.revoke(row, now);
  }
}
