/**
 * `urn:ietf:params:oauth:grant-type:device_code` (RFC 8628 §3.4–§3.5): the device polls with its
 * device code; `authorization_pending` until the user answers, `slow_down` (and 5 s more interval)
 * when polled faster than the interval, `access_denied` after a denial, `expired_token` after the
 * lifetime. Redemption is atomic: of concurrent polls after approval exactly one gets tokens.
 */
import type { DeviceCodeData } from '../endpoints/device-authorization.js';
import { OAuthError, invalidGrant } from '../errors.js';
import { hashHandle, nowSeconds } from '../tokens/handles.js';
import { redeemApproval } from './redeem.js';
import type { GrantHandler } from './registry.js';

/**
 * Handles a device code poll.
 * @throws OAuthError `invalid_request` (no device_code), `invalid_grant` (unknown, another
 *   client's, already redeemed, user inactive), `authorization_pending`, `slow_down`,
 *   `access_denied`, `expired_token`.
 */
export const deviceCodeGrant: GrantHandler = async (ctx, { params, client }) => {
  const deviceCode = params.require('device_code');
  const key = hashHandle(deviceCode);
  const row = deviceCode.length <= 512 ? await ctx.store.grants.get(key) : undefined;
  if (!row || row.type !== 'device_code' || row.clientId !== client.clientId || row.revokedAt !== null)
    throw invalidGrant('the device code is invalid');
  if (row.consumedAt !== null) throw invalidGrant('the device code was already redeemed');
  const now = nowSeconds();
  if (row.expiresAt <= now) throw new OAuthError('expired_token', 'the device code expired');
  const data = row.data as DeviceCodeData;
  const nowMs = Date.now();
  if (data.lastPollAt !== undefined && nowMs - data.lastPollAt < data.interval * 1000) {
    await ctx.store.grants.update(key, { ...data, lastPollAt: nowMs, interval: data.interval + 5 }, row.expiresAt);
    throw new OAuthError('slow_down', 'poll less often');
  }
  await ctx.store.grants.update(key, { ...data, lastPollAt: nowMs }, row.expiresAt);
  if (data.status === 'denied') throw new OAuthError('access_denied', 'the user denied the request');
  if (data.status === 'pending' || !data.subject) throw new OAuthError('authorization_pending', 'the user has not answered yet');

  return redeemApproval(ctx, client, row, { subject: data.subject, scopes: data.scopes }, async () => undefined);
};
