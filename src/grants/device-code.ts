/**
 * `urn:ietf:params:oauth:grant-type:device_code` (RFC 8628 §3.4–§3.5): the device polls with its
 * device code (`pollAnswer`: `authorization_pending`, `slow_down`, `access_denied`,
 * `expired_token`). Redemption is atomic: of concurrent polls after approval exactly one gets tokens.
 */
import { OAuthError } from '../protocol/errors.js';
import { pollAnswer } from './poll.js';
import { redeemApproval } from './redeem.js';
import { bindingOf, type GrantHandler } from './registry.js';

/** The device authorization grant's `grant_type` (RFC 8628 §3.4). */
export const DEVICE_CODE_GRANT = 'urn:ietf:params:oauth:grant-type:device_code';

/**
 * Handles a device code poll.
 * @throws OAuthError `invalid_request` (no device_code), `invalid_grant` (unknown, another
 *   client's, already redeemed, user inactive, denied by the `preToken` hook), `authorization_pending`, `slow_down`,
 *   `access_denied`, `expired_token`, `invalid_target` (any `resource`).
 */
export const deviceCodeGrant: GrantHandler = async (ctx, req) => {
  const { params, client } = req;
  const deviceCode = params.require('device_code');
  // The device authorization request takes no resource indicators, so the token request cannot narrow to any.
  if (params.has('resource'))
    throw new OAuthError('invalid_target', 'resource indicators are not supported with the device grant');
  const devices = ctx.store.records.deviceCodes;
  const row = await pollAnswer(devices, deviceCode, client.clientId, 'device code');
  const grant = { familyId: row.familyId, consume: (now: number) => devices.consume(row.key, now) };
  return redeemApproval(
    ctx,
    client,
    grant,
    { subject: row.data.subject, scopes: row.data.scopes },
    async () => undefined,
    { ...bindingOf(req), preToken: DEVICE_CODE_GRANT },
  );
};
