/**
 * Server-provided DPoP nonces (RFC 9449 §8), the replay defence that limits how far ahead a proof
 * can be made: the token endpoint and userinfo hand them out and `DPoPVerifier`
 * (validation/dpop.ts) accepts proofs that carry a live one.
 */
import { newHandle } from '../crypto/handles.js';
import type { DPoPNonceRecords } from '../stores/records/dpop-nonces.js';

/**
 * Server-provided DPoP nonces (RFC 9449 §8): random values from `newHandle` (256 bits), kept in
 * the store (hashed, as every handle) with a short life, so every node that shares the store
 * accepts every node's nonces. Each node hands out its current nonce until half its life has
 * passed, then makes a new one; a nonce is accepted until its life ends.
 */
export class DPoPNonces {
  private latest: { nonce: string; renewAt: number } | undefined;

  /** @param lifetimeSeconds how long a nonce is accepted */
  constructor(
    private readonly records: DPoPNonceRecords,
    private readonly lifetimeSeconds: number,
  ) {}

  /** The nonce to hand out now (`now` in Unix seconds); stores a new one when due. */
  async current(now: number): Promise<string> {
    if (this.latest && now < this.latest.renewAt) return this.latest.nonce;
    const nonce = newHandle();
    await this.records.put(nonce, now, now + this.lifetimeSeconds);
    this.latest = { nonce, renewAt: now + Math.floor(this.lifetimeSeconds / 2) };
    return nonce;
  }

  /** Whether `nonce` was issued by a node of this provider and has not expired at `now`. */
  async isValid(nonce: string, now: number): Promise<boolean> {
    if (nonce.length > 100) return false;
    return this.records.isLive(nonce, now);
  }
}
