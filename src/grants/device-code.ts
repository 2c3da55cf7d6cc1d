/**
 * `urn:ietf:params:oauth:grant-type:device_code` (RFC 8628 §3.4–§3.5): the device polls with its
 * device code (`pollAnswer`: `authorization_pending`, `slow_down`, `access_denied`,
 * `expired_token`). Redemption is atomic: of concurrent polls after approval exactly one gets tokens.
 */
import { polledGrant } from './poll.js';
import type { GrantHandler } from './registry.js';

/** The device authorization grant's `grant_type` (RFC 8628 §3.4). */
export const DEVICE_CODE_GRANT = 'urn:ietf:params:oauth:grant-type:device_code';

/**
 * Handles a device code poll.
 * @throws OAuthError `invalid_request` (no device_code), `invalid_grant` (unknown, another
 *   client's, already redeemed, user inactive, denied by the `preToken` hook), `authorization_pending`, `slow_down`,
 *   `access_denied`, `expired_token`, `invalid_target` (any `resource`).
 */
export const deviceCodeGrant: GrantHandler = polledGrant({
  param: 'device_code',
  what: 'device code',
  grantType: DEVICE_CODE_GRANT,
  records: (ctx) => ctx.store.records.deviceCodes,
});
