/**
 * Refresh tokens (RFC 6749 §6; RFC 9700 §4.14.2), stored under the SHA-256 of the handle in their
 * grant family. `oneTime` tokens are consumed atomically when used (a consumed one presented again
 * revokes the family, `grants/refresh-token.ts`); `reuse` tokens keep their row, whose data records
 * a DPoP binding made later (compare-and-set) and whose expiry slides.
 */
import { hashHandle } from '../../crypto/handles.js';
import type { GrantRecord, GrantStore } from '../grant-store.js';
import type { AddedClaims, AuthorizationDetail, GrantSubject, RequestedClaims } from './grant-data.js';
import { RecordKind } from './record-kind.js';

/** Stored data of a refresh token. */
export interface RefreshTokenData {
  scopes: string[];
  /**
   * The DPoP key thumbprint the refresh token, and so its grant, is bound to (RFC 9449 §5): every
   * refresh needs a proof with this key. Absent: unbound (also every refresh token a confidential,
   * non-fapi2 client got before Sigil recorded the binding for all clients).
   */
  jkt?: string;
  /** The API resources (names) the grant was limited to by resource indicators (RFC 8707 §2). */
  resources?: string[];
  subject: GrantSubject;
  /** Unix seconds beyond which no refresh extends the token (`absoluteRefreshTokenLifetime`). */
  absoluteExpiresAt: number;
  /** The `claims` request of the original authorization (OIDC Core §5.5), when it released any. */
  requestedClaims?: RequestedClaims;
  /** The claims a `preToken` hook added when the grant was made (or last refreshed). */
  hookClaims?: AddedClaims;
  /** The authorization details of the grant (RFC 9396), which every refresh carries on unchanged. */
  authorizationDetails?: AuthorizationDetail[];
  [key: string]: unknown;
}

/** The `refresh_token` records, by handle. Times are Unix seconds. */
export class RefreshTokens {
  private readonly kind: RecordKind<RefreshTokenData>;

  constructor(private readonly grants: GrantStore) {
    this.kind = new RecordKind(grants, 'refresh_token');
  }

  /** Stores a new refresh token. */
  issue(
    handle: string,
    record: {
      clientId: string;
      subjectId: string;
      familyId: string;
      sessionId: string | null;
      data: RefreshTokenData;
      createdAt: number;
      expiresAt: number;
    },
  ): Promise<void> {
    return this.kind.put({ key: hashHandle(handle), ...record });
  }

  /** The user's live refresh tokens at `now` (client, scopes, issue time), newest first, at most `limit`. */
  async liveOf(
    subjectId: string,
    now: number,
    limit: number,
  ): Promise<{ clientId: string; scopes: string[]; createdAt: number }[]> {
    return (await this.kind.liveOf(subjectId, now, limit)).map((row) => ({
      clientId: row.clientId,
      scopes: row.data.scopes,
      createdAt: row.createdAt,
    }));
  }

  /**
   * Revokes the user's tokens (refresh and reference tokens, access-token marks) except those
   * issued into the session `keepSessionId` (after a password change); returns how many.
   */
  revokeAllBut(subjectId: string, keepSessionId: string, now: number): Promise<number> {
    return this.grants.revokeSubject(
      subjectId,
      ['refresh_token', 'reference_token', 'access_token'],
      now,
      keepSessionId,
    );
  }

  /** The token's record whatever its state (the caller tells revoked, used and expired apart), or undefined. */
  find(handle: string): Promise<GrantRecord<RefreshTokenData> | undefined> {
    return this.kind.find(hashHandle(handle));
  }

  /** The token's record when live at `now` (neither consumed, revoked nor expired), or undefined. */
  findLive(handle: string, now: number): Promise<GrantRecord<RefreshTokenData> | undefined> {
    return this.kind.findLive(hashHandle(handle), now);
  }

  /** Uses a `oneTime` token, atomically: of concurrent uses exactly one gets true. */
  consume(handle: string, now: number): Promise<boolean> {
    return this.kind.consume(hashHandle(handle), now);
  }

  /**
   * Compare-and-set of a `reuse` token's data (its first DPoP binding) and, for a sliding token,
   * its new expiry (`expiresAt`, Unix seconds) in the same update: false when the data was changed
   * meanwhile (a concurrent request bound it), or the token is revoked or gone, so that no request
   * writes back data it read before a binding.
   */
  replaceData(
    handle: string,
    expected: RefreshTokenData,
    data: RefreshTokenData,
    expiresAt?: number,
  ): Promise<boolean> {
    return this.kind.replaceData(hashHandle(handle), expected, data, expiresAt);
  }
}
