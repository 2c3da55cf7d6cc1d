/**
 * The replay cache of one-time identifiers: a client assertion's `jti` (RFC 7523 §3 item 7), a
 * DPoP proof's `jti` (RFC 9449 §11.1), a SAML AuthnRequest's `ID` (SAML Profiles §4.1.4.5, per
 * SP) and an ID-JAG's `jti` (per identity issuer) may each be used once until they expire. Kept in the store
 * (`stores/records/replay-marks.ts`), so every node that shares the store sees every use; expired
 * entries go with the regular clean-up.
 */
import type { GrantStore } from '../stores/grant-store.js';
import { ReplayMarks, type ReplayKind } from '../stores/records/replay-marks.js';

export type { ReplayKind };

/** Remembers one-time identifiers until they expire. */
export class ReplayCache {
  private readonly marks: ReplayMarks;

  /** @param grants the store's grant table; the cache keeps its entries as `replay` records in it */
  constructor(grants: GrantStore) {
    this.marks = new ReplayMarks(grants);
  }

  /**
   * Records the first use of `jti` by `issuer` (a client id, a DPoP key thumbprint, an SP's entity ID, an
   * ID-JAG's issuer).
   * @param expiresAt Unix seconds until which a reuse must be refused (the assertion's or proof's
   *   own acceptance window)
   * @returns true for the first use, false for a replay (also when two uses race: exactly one wins)
   */
  firstUse(kind: ReplayKind, issuer: string, jti: string, expiresAt: number, now: number): Promise<boolean> {
    return this.marks.firstUse(kind, issuer, jti, expiresAt, now);
  }
}
