/**
 * Grant families (RFC 9700 §4.14.2): every record that stems from one authorization (its code,
 * refresh tokens, access-token rows) shares a `familyId`, and a family is revoked as one: reuse of
 * a code or a one-time refresh token, revocation of a refresh token (RFC 7009 §2.1).
 */
import type { GrantStore } from '../grant-store.js';

/** Revocation of whole grant families, whatever the kinds of their records. */
export class GrantFamilies {
  constructor(private readonly grants: GrantStore) {}

  /** Revokes every record of the family at `now` (Unix seconds); returns how many rows changed. */
  revoke(familyId: string, now: number): Promise<number> {
    return this.grants.revokeFamily(familyId, now);
  }

  /**
   * Revokes everything a user holds, of every family: refresh tokens, reference access tokens,
   * JWT access-token marks (introspection says inactive), unused authorization and device codes, CIBA requests
   * (a password reset by mail; a user made inactive, `admin/users.ts`); returns how many rows
   * changed. Sessions are ended by the logout service, consents stay.
   */
  revokeAllOf(subjectId: string, now: number): Promise<number> {
    return this.grants.revokeSubject(
      subjectId,
      ['refresh_token', 'reference_token', 'access_token', 'authorization_code', 'device_code', 'backchannel_request'],
      now,
    );
  }

  /**
   * Revokes everything issued to a client, of every user and family: refresh tokens, reference
   * access tokens, JWT access-token marks, unused authorization and device codes (with their user
   * codes), pushed authorization requests, pending sign-ins (interactions: a consent given inside
   * one must not carry over to a client later created with the same id) and the users' consents
   * (a client deleted, RFC 7592 §2.3); returns how many rows changed.
   */
  revokeAllOfClient(clientId: string, now: number): Promise<number> {
    return this.grants.revokeClient(
      clientId,
      [
        'refresh_token',
        'reference_token',
        'access_token',
        'authorization_code',
        'device_code',
        'user_code',
        'backchannel_request',
        'pushed_request',
        'interaction',
        'consent',
      ],
      now,
    );
  }
}
