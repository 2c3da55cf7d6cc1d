/**
 * Access-token records: reference tokens (the token is a random handle; its claims are stored
 * under the handle's SHA-256) and the marks of JWT access tokens (under the SHA-256 of the `jti`),
 * which a grant family's revocation reaches (RFC 7009 §2.1, RFC 9700 §4.14.2). Both are read with
 * the store's short-lived lookup memory (`GrantStore.getRecent`, config `accessTokenCache`).
 */
import { hashHandle } from '../../crypto/handles.js';
import { newGrantRecord, type GrantRecord, type GrantStore } from '../grant-store.js';
import { RecordKind } from './record-kind.js';

/** What an access token's row records for the UserInfo endpoint (OIDC Core §5.5). */
export interface AccessTokenExtras {
  /** User claims the UserInfo endpoint releases for this token beyond its scopes'. */
  userinfoClaims?: string[];
}

/** Stored data of a reference token: the claims its JWT form would carry (RFC 9068 §2.2). */
export interface ReferenceTokenData extends AccessTokenExtras {
  claims: { sub: string; client_id: string; scope?: string; [claim: string]: unknown };
}

/** What every access-token row records besides its data. Times are Unix seconds. */
export interface NewAccessTokenRecord<T> {
  clientId: string;
  subjectId: string | null;
  familyId: string;
  sessionId: string | null;
  data: T;
  createdAt: number;
  /** The token's `exp`. */
  expiresAt: number;
}

/** A revocation of one access token (RFC 7009 §2.1). */
export interface AccessTokenRevocation {
  /** The token's `jti`; it names the revoked row's family. */
  jti: string;
  clientId: string;
  subjectId: string;
  /** The token's `exp`, Unix seconds: the row lives until then. */
  expiresAt: number;
}

/** The `reference_token` and `access_token` records. */
export class AccessTokens {
  private readonly references: RecordKind<ReferenceTokenData>;
  private readonly marks: RecordKind<AccessTokenExtras>;

  constructor(private readonly grants: GrantStore) {
    this.references = new RecordKind(grants, 'reference_token');
    this.marks = new RecordKind(grants, 'access_token');
  }

  /** Stores a new reference token under its handle. */
  putReference(handle: string, record: NewAccessTokenRecord<ReferenceTokenData>): Promise<void> {
    return this.references.put({ key: hashHandle(handle), ...record });
  }

  /** Stores the mark of a new JWT access token under its `jti`. */
  putMark(jti: string, record: NewAccessTokenRecord<AccessTokenExtras>): Promise<void> {
    return this.marks.put({ key: hashHandle(jti), ...record });
  }

  /** The reference token's record when it is one and live at `now` (neither revoked nor expired), or undefined. */
  async findReference(handle: string, now: number): Promise<GrantRecord<ReferenceTokenData> | undefined> {
    const row = await this.references.findRecent(hashHandle(handle));
    return row && row.revokedAt === null && row.expiresAt > now ? row : undefined;
  }

  /**
   * The mark of the JWT access token `jti`: `undefined` when it has none (a token issued outside
   * any revocable grant), `'revoked'` when it was revoked (or its key holds a row of another kind),
   * else the live mark.
   */
  async findMark(jti: string): Promise<GrantRecord<AccessTokenExtras> | 'revoked' | undefined> {
    const row = await this.grants.getRecent(hashHandle(jti));
    if (!row) return undefined;
    if (row.revokedAt !== null || row.type !== 'access_token') return 'revoked';
    return row as unknown as GrantRecord<AccessTokenExtras>;
  }

  /**
   * Whether the row of an access token (by `jti` for a JWT, by handle for a reference token) is
   * revoked now, read from the store itself (not the lookup memory).
   */
  async isRevoked(id: string): Promise<boolean> {
    return (await this.grants.get(hashHandle(id)))?.revokedAt != null;
  }

  /** Revokes a JWT access token by its `jti`, storing a revoked mark if it had none. */
  revokeJwt(revocation: AccessTokenRevocation, now: number): Promise<void> {
    return this.revoke(hashHandle(revocation.jti), 'access_token', revocation, now);
  }

  /** Revokes a reference token by its handle (a row gone meanwhile is stored revoked, with empty data). */
  revokeReference(handle: string, revocation: AccessTokenRevocation, now: number): Promise<void> {
    return this.revoke(hashHandle(handle), 'reference_token', revocation, now);
  }

  private revoke(
    key: string,
    type: 'access_token' | 'reference_token',
    r: AccessTokenRevocation,
    now: number,
  ): Promise<void> {
    const record = newGrantRecord({
      key,
      type,
      clientId: r.clientId,
      subjectId: r.subjectId,
      familyId: r.jti,
      data: {},
      createdAt: now,
      expiresAt: r.expiresAt,
    });
    return this.grants.revoke(record, now);
  }
}
