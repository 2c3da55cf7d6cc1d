/**
 * Authorization codes (RFC 6749 §4.1.2): stored under the SHA-256 of the code, bound to their
 * client, redirect URI, PKCE challenge and nonce, single use (consumed atomically; a second use
 * revokes the code's grant family, RFC 6749 §4.1.2, done by `grants/authorization-code.ts`).
 */
import { hashHandle } from '../../crypto/handles.js';
import type { GrantRecord, GrantStore } from '../grant-store.js';
import type { AddedClaims, AuthorizationDetail, GrantSubject, RequestedClaims } from './grant-data.js';
import { RecordKind } from './record-kind.js';

/** Data stored with an authorization code (RFC 6749 §4.1.2: bound to client, redirect URI, PKCE, nonce). */
export interface AuthorizationCodeData {
  redirectUri: string;
  scopes: string[];
  nonce?: string;
  codeChallenge?: string;
  codeChallengeMethod?: 'S256' | 'plain';
  /** The DPoP key thumbprint of `dpop_jkt` (RFC 9449 §10): the token request must prove that key. */
  dpopJkt?: string;
  /** The API resources (names) of `resource` (RFC 8707 §2.1): the tokens are for these at most. */
  resources?: string[];
  subject: GrantSubject;
  /** Claims the `claims` parameter asked for and may be released (OIDC Core §5.5): names only. */
  requestedClaims?: RequestedClaims;
  /** The claims the `preToken` hook added at the authorization endpoint: the token request issues them. */
  hookClaims?: AddedClaims;
  /** The authorization details of the request (RFC 9396 §2): the tokens carry them. */
  authorizationDetails?: AuthorizationDetail[];
  [key: string]: unknown;
}

/** What an issued code records besides its data. Times are Unix seconds. */
export interface NewAuthorizationCode {
  clientId: string;
  subjectId: string;
  /** The grant family of the tokens the code gives (RFC 9700 §4.14.2). */
  familyId: string;
  sessionId: string | null;
  data: AuthorizationCodeData;
  createdAt: number;
  /** Creation plus the client's `authorizationCodeLifetime`. */
  expiresAt: number;
}

/** The `authorization_code` records, by code. */
export class AuthorizationCodes {
  private readonly kind: RecordKind<AuthorizationCodeData>;

  constructor(grants: GrantStore) {
    this.kind = new RecordKind(grants, 'authorization_code');
  }

  /** Stores a new code. */
  issue(code: string, record: NewAuthorizationCode): Promise<void> {
    return this.kind.put({ key: hashHandle(code), ...record });
  }

  /** The code's record whatever its state (used, revoked, expired: the caller decides), or undefined. */
  find(code: string): Promise<GrantRecord<AuthorizationCodeData> | undefined> {
    return this.kind.find(hashHandle(code));
  }

  /** Uses the code, atomically: of concurrent redemptions exactly one gets true, and only while it is live at `now`. */
  consume(code: string, now: number): Promise<boolean> {
    return this.kind.consume(hashHandle(code), now);
  }
}
