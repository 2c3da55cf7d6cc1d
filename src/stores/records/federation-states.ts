/**
 * Sign-ins in flight at an upstream identity provider: what the callback needs, stored under the
 * SHA-256 of the `state` sent upstream (OIDC Core §3.1.2.1), used once (consumed atomically at the
 * callback, so a replayed callback is refused).
 */
import { hashHandle } from '../../crypto/handles.js';
import type { GrantRecord, GrantStore } from '../grant-store.js';
import { RecordKind } from './record-kind.js';

/** What the callback needs, stored under the SHA-256 of `state`. */
export interface FederationState {
  /** The upstream provider's name. */
  provider: string;
  /** The pending authorization request to resume. */
  interactionId: string;
  nonce: string;
  /** The PKCE verifier of the upstream request (RFC 7636). */
  codeVerifier: string;
  /** Hashed browser id: the callback must come back to the same browser. */
  browser: string;
  /** The fields of a form_post answer (Apple), kept until the browser comes back by GET with its cookies. */
  posted?: PostedCallback;
  [key: string]: unknown;
}

/** The fields an upstream posted to the callback (response_mode=form_post), each as sent once. */
export interface PostedCallback {
  code?: string;
  error?: string;
  /** Apple's `user` JSON (the name, first sign-in only). */
  user?: string;
}

/** The `federation` records, by upstream `state`. Times are Unix seconds. */
export class FederationStates {
  private readonly kind: RecordKind<FederationState>;

  constructor(grants: GrantStore) {
    this.kind = new RecordKind(grants, 'federation');
  }

  /** Stores the sign-in started with `state` until `expiresAt`. */
  put(
    state: string,
    record: { clientId: string; data: FederationState; createdAt: number; expiresAt: number },
  ): Promise<void> {
    return this.kind.put({ key: hashHandle(state), ...record });
  }

  /** The record of `state` whatever its state, or undefined. */
  find(state: string): Promise<GrantRecord<FederationState> | undefined> {
    return this.kind.find(hashHandle(state));
  }

  /**
   * Keeps the fields of a form_post answer with the live, unused sign-in of `state`, once
   * (atomically).
   * @returns false when there is no such sign-in, it is not provider's, or it was posted already.
   */
  async post(state: string, provider: string, posted: PostedCallback, now: number): Promise<boolean> {
    const key = hashHandle(state);
    const row = await this.kind.findLive(key, now);
    if (!row || row.data.provider !== provider || row.data.posted !== undefined) return false;
    // Compare-and-set: of two posts for one state, only the first is kept.
    return this.kind.replaceData(key, row.data, { ...row.data, posted });
  }

  /** Uses `state`, atomically: false when used already or expired. */
  consume(state: string, now: number): Promise<boolean> {
    return this.kind.consume(hashHandle(state), now);
  }
}
