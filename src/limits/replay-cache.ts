/**
 * The replay cache of one-time identifiers: a client assertion's `jti` (RFC 7523 §3 item 7) and a
 * DPoP proof's `jti` (RFC 9449 §11.1) may each be used once until they expire. Kept in the store,
 * so every node that shares the store sees every use; expired entries go with the regular clean-up.
 */
import { newGrantRecord, type GrantStore } from '../stores/types.js';
import { hashHandle } from '../crypto/handles.js';

/** What a one-time identifier belongs to; the same `jti` in two kinds are two entries. */
export type ReplayKind = 'client_assertion' | 'dpop_proof';

/** Remembers one-time identifiers until they expire. */
export class ReplayCache {
  constructor(private readonly grants: GrantStore) {}

  /**
   * Records the first use of `jti` by `issuer` (a client id, or a DPoP key thumbprint).
   * @param expiresAt Unix seconds until which a reuse must be refused (the assertion's or proof's
   *   own acceptance window)
   * @returns true for the first use, false for a replay (also when two uses race: exactly one wins)
   */
  async firstUse(kind: ReplayKind, issuer: string, jti: string, expiresAt: number, now: number): Promise<boolean> {
    return this.grants.putOnce(
      newGrantRecord({
        key: hashHandle(`${kind}\u0000${issuer}\u0000${jti}`),
        type: 'replay',
        clientId: kind === 'client_assertion' ? issuer : '',
        subjectId: null,
        data: {},
        createdAt: now,
        expiresAt,
      }),
    );
  }
}
