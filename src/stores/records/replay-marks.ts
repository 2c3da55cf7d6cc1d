/**
 * One-time identifiers seen once (a client assertion's `jti`, RFC 7523 §3 item 7; a DPoP proof's
 * `jti`, RFC 9449 §11.1; a SAML request's `ID`, SAML Profiles §4.1.4.5; an ID-JAG's `jti`, per
 * issuer, RFC 7523 §3 item 7): stored under the SHA-256 of (kind, issuer, jti) until they expire; the
 * first use inserts the row, a reuse finds it taken (`GrantStore.putOnce`, atomic).
 */
import { hashHandle } from '../../crypto/handles.js';
import type { GrantStore } from '../grant-store.js';
import { RecordKind } from './record-kind.js';

/** What a one-time identifier belongs to; the same `jti` in two kinds are two entries. */
export type ReplayKind = 'client_assertion' | 'dpop_proof' | 'saml_request' | 'id_jag';

/** The `replay` records (no data). Times are Unix seconds. */
export class ReplayMarks {
  private readonly kind: RecordKind<Record<string, never>>;

  constructor(grants: GrantStore) {
    this.kind = new RecordKind(grants, 'replay');
  }

  /**
   * Records the first use of `jti` by `issuer` (a client id, a DPoP key thumbprint, an SP's entity ID, an ID-JAG's
   * issuer) until
   * `expiresAt`.
   * @returns true for the first use, false for a replay (also when two uses race: exactly one wins)
   */
  firstUse(kind: ReplayKind, issuer: string, jti: string, expiresAt: number, now: number): Promise<boolean> {
    return this.kind.putOnce({
      key: hashHandle(`${kind}\u0000${issuer}\u0000${jti}`),
      clientId: kind === 'client_assertion' ? issuer : '',
      subjectId: null,
      data: {},
      createdAt: now,
      expiresAt,
    });
  }
}
