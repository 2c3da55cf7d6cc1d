/**
 * `urn:ietf:params:oauth:grant-type:device_code` (RFC 8628 §3.4–§3.5): the device polls with its
 * device code; `authorization_pending` until the user answers, `slow_down` (and 5 s more interval)
 * when polled faster than the interval, `access_denied` after a denial, `expired_token` after the
 * lifetime. Redemption is atomic: of concurrent polls after approval exactly one gets tokens.
 *
 * A poll records its time with a compare-and-set on the data it read (`DeviceCodes.recordPoll`),
 * never by writing back a stale row: an approval stored between a poll's read and its write (on
 * another node, say) makes the write fail, and the poll judges the row again as it is now.
 */
import type { DeviceCodeData } from '../stores/records/device-codes.js';
import { OAuthError, invalidGrant } from '../protocol/errors.js';
import { nowSeconds } from '../crypto/handles.js';
import { redeemApproval } from './redeem.js';
import { bindingOf, type GrantHandler } from './registry.js';

/** The device authorization grant's `grant_type` (RFC 8628 §3.4). */
export const DEVICE_CODE_GRANT = 'urn:ietf:params:oauth:grant-type:device_code';

/** Reads of a changing row before a poll gives up: whoever keeps changing it polls too fast. */
const MAX_ATTEMPTS = 4;

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
  const key = devices.keyOf(deviceCode);
  for (let attempt = 1; ; attempt++) {
    const row = deviceCode.length <= 512 ? await devices.findByKey(key) : undefined;
    if (!row || row.clientId !== client.clientId || row.revokedAt !== null)
      throw invalidGrant('the device code is invalid');
    if (row.consumedAt !== null) throw invalidGrant('the device code was already redeemed');
    if (row.expiresAt <= nowSeconds()) throw new OAuthError('expired_token', 'the device code expired');
    const data = row.data;
    const nowMs = Date.now();
    const tooFast = data.lastPollAt !== undefined && nowMs - data.lastPollAt < data.interval * 1000;
    const next: DeviceCodeData = tooFast
      ? { ...data, lastPollAt: nowMs, interval: data.interval + 5 }
      : { ...data, lastPollAt: nowMs };
    if (!(await devices.recordPoll(key, data, next))) {
      // Changed since the read: an answer, a redemption or another poll. Judge it again.
      if (attempt < MAX_ATTEMPTS) continue;
      throw new OAuthError('slow_down', 'poll less often');
    }
    if (tooFast) throw new OAuthError('slow_down', 'poll less often');
    if (data.status === 'denied') throw new OAuthError('access_denied', 'the user denied the request');
    if (data.status === 'pending' || !data.subject)
      throw new OAuthError('authorization_pending', 'the user has not answered yet');
    const grant = { familyId: row.familyId, consume: (now: number) => devices.consume(key, now) };
    return redeemApproval(ctx, client, grant, { subject: data.subject, scopes: data.scopes }, async () => undefined, {
      ...bindingOf(req),
      preToken: DEVICE_CODE_GRANT,
    });
  }
};
