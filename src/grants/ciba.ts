/**
 * `urn:openid:params:grant-type:ciba` (OpenID CIBA Core 1.0 §10.1, §11): the client of a
 * `/connect/ciba` request, in poll or ping mode, redeems its `auth_req_id`. Until the user answers
 * on `/account/requests` the answer is `authorization_pending`; polling faster than the interval is
 * `slow_down` (poll mode only has an interval, but a pinged client polling too early is answered
 * alike); then `access_denied`, or tokens exactly once (the request consumed atomically); after
 * the request's lifetime `expired_token` (`pollAnswer`).
 */
import { CIBA_GRANT } from '../config/schema.js';
import { polledGrant } from './poll.js';
import type { GrantHandler } from './registry.js';

export { CIBA_GRANT };

/**
 * Handles a CIBA token request (`polledGrant`).
 * @throws OAuthError `invalid_request` (no auth_req_id), `invalid_grant` (unknown, another
 *   client's, already redeemed, user inactive, denied by the `preToken` hook), `authorization_pending`, `slow_down`,
 *   `access_denied`, `expired_token`, `invalid_target` (any `resource`: the request named none).
 */
export const cibaGrant: GrantHandler = polledGrant({
  param: 'auth_req_id',
  what: 'auth_req_id',
  grantType: CIBA_GRANT,
  records: (ctx) => ctx.store.records.backchannelRequests,
});
