/**
 * The grant table's interface: every short- or long-lived artefact Sigil keeps under
 * the hash of a handle (codes, tokens, consents, sessions, pending states), one row shape with the
 * kind's own JSON in `data`. Only the typed repositories of `records/` and the SQL implementation
 * use it; everything else goes through a repository, which owns its kind's key and data shape.
 *
 * Times are Unix seconds. Handles never reach the store: only `key`, the SHA-256 of the handle, does.
 */

/** What a stored grant row is. `access_token` rows track JWT access tokens (by `jti`) for revocation. */
export type GrantType =
  | 'authorization_code'
  | 'refresh_token'
  | 'reference_token'
  | 'access_token'
  | 'device_code'
  | 'consent'
  | 'session'
  | 'interaction'
  | 'user_code'
  | 'federation'
  /** An authorization request pushed to `/connect/par` (RFC 9126), used once by its `request_uri`. */
  | 'pushed_request'
  /** A one-time identifier seen once (client assertion or DPoP proof `jti`), kept until it expires. */
  | 'replay'
  /** A sign-in waiting for its second factor (src/mfa/factors.ts). */
  | 'mfa_pending'
  /** A TOTP secret waiting for its confirming code (src/mfa/factors.ts). */
  | 'mfa_enrollment'
  /** A server-provided DPoP nonce (RFC 9449 §8), accepted until it expires. */
  | 'dpop_nonce'
  /** A WebAuthn ceremony's challenge, consumed once (`mfa/webauthn.ts`). */
  | 'webauthn_challenge'
  /** A password checked, the security key still to come (`mfa/webauthn.ts`). */
  | 'webauthn_pending'
  /** A link sent by mail: password reset, address verification, registration (`records/email-links.ts`). */
  | 'email_link'
  /** An invitation to join an organization, sent by mail (`records/organization-invitations.ts`). */
  | 'org_invitation'
  /** A SAML single logout under way through the browser, from SP to SP (`records/saml-logouts.ts`). */
  | 'saml_logout'
  /** A CIBA request waiting for, or holding, its user's answer (`records/backchannel-requests.ts`). */
  | 'backchannel_request';

/** One persisted grant artefact. */
export interface GrantRecord<D = Record<string, unknown>> {
  /** SHA-256 of the handle, base64url (see `crypto/handles.ts`). */
  key: string;
  type: GrantType;
  clientId: string;
  /** The user, or null for client-only grants. */
  subjectId: string | null;
  /** The grant family: every token that stems from one authorization shares it (RFC 9700 §4.14.2). */
  familyId: string;
  sessionId: string | null;
  data: D;
  createdAt: number;
  expiresAt: number;
  consumedAt: number | null;
  revokedAt: number | null;
}

/** Codes, refresh tokens, reference tokens, JWT revocation marks, consents and device codes. */
export interface GrantStore {
  /**
   * Stores a new record; resolves once it is committed (puts made at about the same time may share
   * one transaction: group commit). Rejects, storing nothing, when a record is stored under its key.
   */
  put(record: GrantRecord): Promise<void>;
  /**
   * Stores a new record unless one is stored under its key, atomically: of concurrent callers with
   * the same key exactly one gets true (the replay cache of one-time identifiers).
   */
  putOnce(record: GrantRecord): Promise<boolean>;
  /** The record under `key`, whatever its state, or undefined. */
  get(key: string): Promise<GrantRecord | undefined>;
  /**
   * As `get`, for access-token lookups (introspection, userinfo): a `reference_token` or
   * `access_token` row read by this process less than the store's lookup bound ago (config
   * `accessTokenCache.maxAgeMilliseconds`) may be answered from memory. A change made through this
   * process (revoke, revokeFamily, update, ...) is seen at once; one made by another process or
   * node is seen once the bound has passed. The record returned must not be modified.
   */
  getRecent(key: string): Promise<GrantRecord | undefined>;
  /**
   * Marks a single-use record consumed, atomically: of concurrent callers exactly one gets true,
   * and only while the record is neither consumed, revoked nor expired at `now`.
   */
  consume(key: string, now: number): Promise<boolean>;
  /** Sets new data and expiry on a live record (sliding refresh tokens). Returns false if none. */
  update(key: string, data: Record<string, unknown>, expiresAt: number): Promise<boolean>;
  /**
   * Compare-and-set of a live record's data: replaces it with `data` only while the stored data is
   * still `expected` (as read by `get`) and the record is neither consumed nor revoked, in one
   * conditional update. False when another writer changed it first, or the record is gone; the
   * caller reads again and decides anew. Two writers starting from one read never both succeed.
   * With `expiresAt` (Unix seconds) the same update also sets the expiry (a sliding refresh token).
   */
  replaceData(
    key: string,
    expected: Record<string, unknown>,
    data: Record<string, unknown>,
    expiresAt?: number,
  ): Promise<boolean>;
  /** Stores `record`, replacing whatever is stored under its key (remembered consents). */
  save(record: GrantRecord): Promise<void>;
  /** Revokes one record; inserts `record` in revoked state when there is no row under its key yet. */
  revoke(record: GrantRecord, now: number): Promise<void>;
  /**
   * Revokes every live record (not revoked, not expired at `now`) of the subject of one of `types`,
   * in one update along the `grants_subject` index, except, with `keepSessionId`, those issued
   * into that session (a password change keeps the browser's own); returns how many rows changed.
   * A password reset or change and a user made inactive end the user's tokens this way.
   */
  revokeSubject(subjectId: string, types: readonly GrantType[], now: number, keepSessionId?: string): Promise<number>;
  /**
   * Revokes every live record (not revoked, not expired at `now`) of one client of one of `types`
   * (a client deleted: RFC 7592 §2.3); returns how many rows changed. No index leads with the
   * client, so this reads the table: for the rare removal of a client, never a request's path.
   */
  revokeClient(clientId: string, types: readonly GrantType[], now: number): Promise<number>;
  /** Revokes every record of a family; returns how many rows changed. */
  revokeFamily(familyId: string, now: number): Promise<number>;
  /**
   * The live records (neither consumed, revoked nor expired at `now`) of one user and kind, newest
   * first, at most `limit`: a read along the `grants_subject` index (subject, client, type), never
   * a scan of the table (the account pages' sessions and connected apps).
   */
  listLive(subjectId: string, type: GrantType, now: number, limit: number): Promise<GrantRecord[]>;
  /**
   * Revokes every live record of one user at one client, whatever its kind (consent, refresh and
   * reference tokens, access-token marks, codes), in one update along the `grants_subject` index;
   * returns how many rows changed. The families of the refresh tokens it hit are revoked with them.
   */
  revokeSubjectAtClient(subjectId: string, clientId: string, now: number): Promise<number>;
}

/** The fields that vary when a grant row is created; the rest start empty. */
export interface NewGrant<D> {
  key: string;
  type: GrantType;
  clientId: string;
  subjectId?: string | null;
  /** Default: derived from `key` (a family of one). */
  familyId?: string;
  sessionId?: string | null;
  data: D;
  /** Unix seconds. */
  createdAt: number;
  /** Unix seconds. */
  expiresAt: number;
}

/** A new, live grant record: not consumed, not revoked. */
export function newGrantRecord<D extends object>(grant: NewGrant<D>): GrantRecord {
  return {
    key: grant.key,
    type: grant.type,
    clientId: grant.clientId,
    subjectId: grant.subjectId ?? null,
    familyId: grant.familyId ?? grant.key.slice(0, 22),
    sessionId: grant.sessionId ?? null,
    data: grant.data as unknown as Record<string, unknown>,
    createdAt: grant.createdAt,
    expiresAt: grant.expiresAt,
    consumedAt: null,
    revokedAt: null,
  };
}
