/**
 * Pushed authorization requests (RFC 9126) at the authorization endpoint: which `request_uri`
 * values are Sigil's own references (the rest are JAR URLs, RFC 9101 §5.2). The stored requests
 * are `stores/records/pushed-requests.ts`'s.
 */
import type { GrantStore } from '../stores/grant-store.js';
import { PUSHED_REQUEST_URI_PREFIX, PushedRequests } from '../stores/records/pushed-requests.js';
import { nowSeconds } from '../crypto/handles.js';

/** Whether `requestUri` is one of Sigil's pushed-request references (else a JAR URL, RFC 9101 §5.2). */
export function isPushedRequestUri(requestUri: string): boolean {
  return requestUri.startsWith(PUSHED_REQUEST_URI_PREFIX);
}

/**
 * Takes the pushed request `requestUri` for `clientId`, once (`PushedRequests.take`). Kept with
 * this signature only for `validation/authorize-request.ts`, which passes the store's grant table;
 * new code calls `ctx.store.records.pushedRequests.take`.
 * @returns the stored parameters (the authorization request to validate).
 * @throws OAuthError `invalid_request_uri` for an unknown, expired, used or foreign `request_uri`.
 */
export function takePushedRequest(grants: GrantStore, requestUri: string, clientId: string): Promise<Record<string, string>> {
  return new PushedRequests(grants).take(requestUri, clientId, nowSeconds());
}
