/**
 * Pushed authorization requests (RFC 9126): a validated request stored under a random handle,
 * referenced by `request_uri=urn:ietf:params:oauth:request_uri:<handle>` at the authorization
 * endpoint, where its client uses it once (§4: one-time use, bound to the client that pushed it).
 * The store keeps the SHA-256 of the handle only.
 */
import { OAuthError } from '../protocol/errors.js';
import { newGrantRecord, type GrantStore } from '../stores/types.js';
import { hashHandle, newHandle, nowSeconds } from '../crypto/handles.js';

/** The prefix of every `request_uri` Sigil hands out (RFC 9126 §2.2). */
export const PUSHED_REQUEST_URI_PREFIX = 'urn:ietf:params:oauth:request_uri:';

/** Whether `requestUri` is one of Sigil's pushed-request references (else a JAR URL, RFC 9101 §5.2). */
export function isPushedRequestUri(requestUri: string): boolean {
  return requestUri.startsWith(PUSHED_REQUEST_URI_PREFIX);
}

function keyOf(handle: string): string {
  return hashHandle(`pushed_request\u0000${handle}`);
}

/**
 * Stores a validated authorization request's parameters for `lifetime` seconds.
 * @returns the `request_uri` to hand to the client.
 */
export async function storePushedRequest(
  grants: GrantStore,
  clientId: string,
  params: Record<string, string>,
  lifetime: number,
): Promise<string> {
  const handle = newHandle();
  const now = nowSeconds();
  await grants.put(
    newGrantRecord({ key: keyOf(handle), type: 'pushed_request', clientId, data: { params }, createdAt: now, expiresAt: now + lifetime }),
  );
  return `${PUSHED_REQUEST_URI_PREFIX}${handle}`;
}

/**
 * Takes the pushed request `requestUri` for `clientId`, once: read, checked, then consumed with one
 * atomic update (of concurrent uses exactly one succeeds). A request pushed by another client is
 * left untouched.
 * @returns the stored parameters (the authorization request to validate).
 * @throws OAuthError `invalid_request_uri` for an unknown, expired, used or foreign `request_uri`.
 */
export async function takePushedRequest(grants: GrantStore, requestUri: string, clientId: string): Promise<Record<string, string>> {
  const refuse = () => new OAuthError('invalid_request_uri', 'the request_uri is unknown, expired, already used, or not this client\'s');
  const handle = requestUri.slice(PUSHED_REQUEST_URI_PREFIX.length);
  if (handle === '' || handle.length > 100) throw refuse();
  const key = keyOf(handle);
  const row = await grants.get(key);
  const now = nowSeconds();
  if (!row || row.type !== 'pushed_request' || row.clientId !== clientId) throw refuse();
  if (row.consumedAt !== null || row.revokedAt !== null || row.expiresAt <= now) throw refuse();
  if (!(await grants.consume(key, now))) throw refuse();
  return (row.data as { params: Record<string, string> }).params;
}
