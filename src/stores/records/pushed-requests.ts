/**
 * Pushed authorization requests (RFC 9126): a validated request stored under a random handle,
 * referenced by `request_uri=urn:ietf:params:oauth:request_uri:<handle>` (§2.2) at the
 * authorization endpoint, where its client uses it once (§4: one-time use, bound to the client
 * that pushed it). The store keeps the SHA-256 of the handle (prefixed) only.
 */
import { OAuthError } from '../../protocol/errors.js';
import { hashHandle, newHandle } from '../../crypto/handles.js';
import type { GrantStore } from '../grant-store.js';
import { RecordKind } from './record-kind.js';

/** The prefix of every `request_uri` Sigil hands out (RFC 9126 §2.2). */
export const PUSHED_REQUEST_URI_PREFIX = 'urn:ietf:params:oauth:request_uri:';

/** Whether `requestUri` is one of Sigil's pushed-request references (else a JAR URL, RFC 9101 §5.2). */
export function isPushedRequestUri(requestUri: string): boolean {
  return requestUri.startsWith(PUSHED_REQUEST_URI_PREFIX);
}

/** Stored data of a pushed request: its validated parameters. */
export interface PushedRequestData {
  params: Record<string, string>;
}

function keyOf(handle: string): string {
  return hashHandle(`pushed_request\u0000${handle}`);
}

/** The `pushed_request` records, by `request_uri`. */
export class PushedRequests {
  private readonly kind: RecordKind<PushedRequestData>;

  constructor(grants: GrantStore) {
    this.kind = new RecordKind(grants, 'pushed_request');
  }

  /**
   * Stores a validated authorization request's parameters for `lifetime` seconds from `now`.
   * @returns the `request_uri` to hand to the client.
   */
  async push(clientId: string, params: Record<string, string>, lifetime: number, now: number): Promise<string> {
    const handle = newHandle();
    await this.kind.put({ key: keyOf(handle), clientId, data: { params }, createdAt: now, expiresAt: now + lifetime });
    return `${PUSHED_REQUEST_URI_PREFIX}${handle}`;
  }

  /**
   * Takes the pushed request `requestUri` for `clientId`, once: read, checked, then consumed with
   * one atomic update (of concurrent uses exactly one succeeds). A request pushed by another
   * client is left untouched.
   * @returns the stored parameters (the authorization request to validate).
   * @throws OAuthError `invalid_request_uri` for an unknown, expired, used or foreign `request_uri`.
   */
  async take(requestUri: string, clientId: string, now: number): Promise<Record<string, string>> {
    const refuse = () =>
      new OAuthError('invalid_request_uri', "the request_uri is unknown, expired, already used, or not this client's");
    const handle = requestUri.slice(PUSHED_REQUEST_URI_PREFIX.length);
    if (handle === '' || handle.length > 100) throw refuse();
    const key = keyOf(handle);
    const row = await this.kind.findLive(key, now);
    if (!row || row.clientId !== clientId) throw refuse();
    if (!(await this.kind.consume(key, now))) throw refuse();
    return row.data.params;
  }
}
