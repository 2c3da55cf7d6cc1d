/**
 * Storage interfaces (DESIGN §3). One SQL implementation serves them all (`sql.ts`); clients and
 * resources come from the config file and are not stored here yet.
 *
 * Times are Unix seconds. Handles (codes, refresh tokens, reference tokens) never reach the store:
 * only `key`, the SHA-256 of the handle, does.
 */
import { hashHandle } from '../crypto/handles.js';
import type { WebAuthnCredentialStore } from './webauthn-credentials.js';

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
  | 'webauthn_pending';

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
   */
  replaceData(key: string, expected: Record<string, unknown>, data: Record<string, unknown>): Promise<boolean>;
  /** Stores `record`, replacing whatever is stored under its key (remembered consents). */
  save(record: GrantRecord): Promise<void>;
  /** Revokes one record; inserts `record` in revoked state when there is no row under its key yet. */
  revoke(record: GrantRecord, now: number): Promise<void>;
  /** Revokes every record of a family; returns how many rows changed. */
  revokeFamily(familyId: string, now: number): Promise<number>;
}

/**
 * A signing key as stored. `privateKey` is the private JWK as JSON, or a compact JWE of it
 * (`dir`/`A256GCM`) when `SIGIL_DATA_KEY` is set.
 */
export interface StoredKey {
  kid: string;
  alg: string;
  privateKey: string;
  publicJwk: Record<string, unknown>;
  createdAt: number;
  /** When it starts signing (Unix seconds). */
  activatesAt: number;
  /** When it was retired by hand (`sigil keys retire`), or null. */
  retiredAt: number | null;
}

/** Signing keys, shared by every node that uses the store (DESIGN §3). */
export interface KeyStore {
  /** Every key, oldest first. */
  listKeys(): Promise<StoredKey[]>;
  addKey(key: StoredKey): Promise<void>;
  /** Retires a key; returns false when no such key is live. */
  retireKey(kid: string, now: number): Promise<boolean>;
}

/** Housekeeping shared by the nodes of one store. */
export interface Maintenance {
  /**
   * Takes or renews the lease `name` for `holder` until `until` (Unix seconds), atomically:
   * true when this holder has it.
   */
  acquireLease(name: string, holder: string, now: number, until: number): Promise<boolean>;
  /** Deletes up to `limit` grant rows that expired before `before`; returns how many. */
  deleteExpired(before: number, limit: number): Promise<number>;
}

/** A user kept in the database (`sigil users`, issue 6), password as an argon2id hash. */
export interface StoredUser {
  subjectId: string;
  username: string;
  tenant: string | null;
  passwordHash: string | null;
  claims: Record<string, unknown>;
  isActive: boolean;
}

/** Clients kept in the database (`sigil clients`), as config objects of DESIGN §4. */
export interface ClientStore {
  listClients(): Promise<Record<string, unknown>[]>;
  /** Adds or replaces a client. */
  saveClient(clientId: string, config: Record<string, unknown>): Promise<void>;
  /** Returns false when there was no such client. */
  removeClient(clientId: string): Promise<boolean>;
}

/**
 * Store key of the link of an upstream identity: the SHA-256 (base64url) of the full pair
 * (provider name, upstream `sub`). OIDC Core §2, §5.7: `sub` is unique only within its issuer and
 * is compared exactly, never cut or case-folded. Never change it: stored links depend on it.
 */
export function externalLinkKey(provider: string, upstreamSubject: string): string {
  return hashHandle(`${provider}\u0000${upstreamSubject}`);
}

/** An upstream identity (federation) as linked to a local user. */
export interface ExternalLink {
  /** `externalLinkKey(provider, upstreamSubject)`. */
  key: string;
  provider: string;
  /** The upstream `sub`, 1 to 255 characters, as the upstream sent it. */
  upstreamSubject: string;
}

/** Users in the database. */
export interface UserStore {
  /** Finds a user by username (case-insensitive) within a tenant; with null, the one user of that name in any tenant. */
  findUserByUsername(username: string, tenant: string | null): Promise<StoredUser | undefined>;
  findUserBySubject(subjectId: string): Promise<StoredUser | undefined>;
  addUser(user: StoredUser): Promise<void>;
  listUsers(): Promise<StoredUser[]>;
  /** Removes a user, the upstream identities linked to them and their WebAuthn credentials; returns false when there was no such user. */
  removeUser(subjectId: string): Promise<boolean>;
  /** The local subject linked to an upstream identity (`ExternalLink.key`), or undefined. */
  findExternalLink(key: string): Promise<string | undefined>;
  /**
   * Adds `user` linked to the upstream identity `link`, atomically. When `link.key` is linked
   * already (two first sign-ins at once), adds nothing and returns the subject linked first.
   * @returns the linked local subject.
   */
  addExternalUser(link: ExternalLink, user: StoredUser): Promise<string>;
  /** Returns false when there was no such user. */
  setPasswordHash(subjectId: string, passwordHash: string): Promise<boolean>;
  /** Replaces a user's claims (external users, at each sign-in). */
  updateClaims(subjectId: string, claims: Record<string, unknown>): Promise<void>;
}

/**
 * One second factor of a user as stored (table `mfa_factors`). The kinds and what their `data`
 * holds are defined in `src/mfa/factors.ts`; the store knows nothing of them.
 */
export interface StoredFactor {
  /** Random id (base64url), public: forms name a factor by it. */
  id: string;
  subjectId: string;
  /** `totp`, `recovery_code`, or a kind another module registers (e.g. WebAuthn). */
  kind: string;
  /** What the user calls it (shown on /account), at most 100 characters. */
  label: string;
  data: Record<string, unknown>;
  /** Grows only (`advanceFactorCounter`): last TOTP time step used; 1 for a spent recovery code. */
  counter: number;
  /** Unix seconds. */
  createdAt: number;
  /** Unix seconds of the last successful use, or null. */
  lastUsedAt: number | null;
}

/** Users' second factors. */
export interface FactorStore {
  /** The user's factors of `kinds` (all kinds when omitted), oldest first. */
  listFactors(subjectId: string, kinds?: readonly string[]): Promise<StoredFactor[]>;
  addFactor(factor: StoredFactor): Promise<void>;
  /**
   * Sets a factor's counter to `next` only while it is below `next`, in one conditional update:
   * of concurrent callers with the same `next` exactly one gets true (a code is used once).
   * @param now Unix seconds, recorded as `lastUsedAt` on success
   */
  advanceFactorCounter(id: string, next: number, now: number): Promise<boolean>;
  /** Removes one factor of the user; false when the user has no such factor. */
  removeFactor(subjectId: string, id: string): Promise<boolean>;
  /** Removes the user's factors of `kinds` (all kinds when omitted); returns how many. */
  removeFactors(subjectId: string, kinds?: readonly string[]): Promise<number>;
  /**
   * Replaces the user's factors of `kind` with `factors` in one transaction (new recovery codes
   * void the old ones at the same instant).
   */
  replaceFactors(subjectId: string, kind: string, factors: readonly StoredFactor[]): Promise<void>;
}

/** A client that took part in a session (received a code or tokens for it). */
export interface SessionParticipant {
  sid: string;
  clientId: string;
  subjectId: string;
}

/**
 * A back-channel logout token waiting to be sent (OIDC Back-Channel Logout 1.0 §2.5). The token
 * is signed at each attempt from these fields; `id` is its `jti`, the same on every attempt.
 */
export interface LogoutDelivery {
  id: string;
  clientId: string;
  uri: string;
  subjectId: string;
  sid: string;
  /** Attempts made so far. */
  attempts: number;
  /** Unix seconds: no attempt after this; the delivery is dropped. */
  giveUpAt: number;
}

/**
 * Sessions' participants and the back-channel logout outbox. Ending a session and queueing its
 * logout tokens happen in one transaction; deliveries are claimed with a lease so that of several
 * nodes on one store one sends each.
 */
export interface LogoutStore {
  /** Records that `participant.clientId` took part in the session (idempotent). `expiresAt`: the session's end, Unix seconds. */
  addParticipant(participant: SessionParticipant, expiresAt: number): Promise<void>;
  /**
   * Ends the session `sid` in one transaction: revokes its session row, removes its participants
   * and queues what `plan` returns for them. Of concurrent callers for one session only one gets
   * the participants; the others get an empty list and queue nothing.
   */
  endSession(sid: string, now: number, plan: (participants: SessionParticipant[]) => LogoutDelivery[]): Promise<SessionParticipant[]>;
  /** The sids of live (not revoked, not expired) sessions of a user. */
  liveSessions(subjectId: string, now: number): Promise<string[]>;
  /** Up to `limit` sids of sessions past their end that still have participants. */
  expiredSessions(now: number, limit: number): Promise<string[]>;
  /**
   * Claims up to `limit` due deliveries (or exactly `ids` when given, if due) for `holder` until
   * `leaseUntil`, each with a conditional update: a delivery leased by a live holder is skipped.
   */
  claimDeliveries(holder: string, now: number, leaseUntil: number, limit: number, ids?: string[]): Promise<LogoutDelivery[]>;
  /** Removes a delivery this holder has claimed (sent, or given up). */
  finishDelivery(id: string, holder: string): Promise<void>;
  /** Releases a claimed delivery for another attempt at `nextAttemptAt` (Unix seconds). */
  retryDelivery(id: string, holder: string, nextAttemptAt: number, lastError: string): Promise<void>;
}

/** Everything a Sigil instance persists. */
export interface Store {
  grants: GrantStore;
  logout: LogoutStore;
  keys: KeyStore;
  users: UserStore;
  clients: ClientStore;
  factors: FactorStore;
  maintenance: Maintenance;
  /** WebAuthn credentials: passkeys and security keys (issue 12, `webauthn-credentials.ts`). */
  webauthn: WebAuthnCredentialStore;
  /** Runs a trivial query: resolves when the store answers (`/readyz`). */
  ping(): Promise<void>;
  close(): Promise<void>;
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
