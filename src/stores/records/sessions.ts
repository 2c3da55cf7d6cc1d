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
  /**
   * The browser's `User-Agent` at sign-in, cut to `USER_AGENT_MAX` characters, and its address
   * (after `trustProxy`): both shown on the user's own /account/sessions page, the browser alone
   * (never the address) on the console's user page. Personal data (GDPR Art. 4(1)); gone with the
   * session row. Absent on sessions stored before they were kept.
   */
  userAgent?: string;
  address?: string;
}

/** The longest `User-Agent` kept with a session, characters. */
export const USER_AGENT_MAX = 200;

/** The most sessions of one user the account page lists (and so the most one user can end there). */
export const SESSIONS_LISTED = 50;

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

  /** The live sessions of a user at `now`, newest first, at most `SESSIONS_LISTED`. */
  async liveOf(subjectId: string, now: number): Promise<Session[]> {
    return (await this.kind.liveOf(subjectId, now, SESSIONS_LISTED)).map((row) => row.data);
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
