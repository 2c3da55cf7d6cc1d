/**
 * Server-provided DPoP nonces (RFC 9449 §8), stored under the SHA-256 of the nonce (prefixed) so
 * that every node sharing the store accepts every node's nonces until they expire.
 */
import { hashHandle } from '../../crypto/handles.js';
import type { GrantStore } from '../grant-store.js';
import { RecordKind } from './record-kind.js';

function keyOf(nonce: string): string {
  return hashHandle(`dpop_nonce\u0000${nonce}`);
}

/** The `dpop_nonce` records (no data). Times are Unix seconds. */
export class DPoPNonceRecords {
  private readonly kind: RecordKind<Record<string, never>>;

  constructor(grants: GrantStore) {
    this.kind = new RecordKind(grants, 'dpop_nonce');
  }

  /** Stores a new nonce, accepted until `expiresAt`. */
  put(nonce: string, now: number, expiresAt: number): Promise<void> {
    return this.kind.put({ key: keyOf(nonce), clientId: '', subjectId: null, data: {}, createdAt: now, expiresAt });
  }

  /** Whether `nonce` is stored and unexpired at `now`. */
  async isLive(nonce: string, now: number): Promise<boolean> {
    const row = await this.kind.find(keyOf(nonce));
    return row !== undefined && row.expiresAt > now;
  }
}
