/**
 * `urn:openid:params:grant-type:ciba` (OpenID CIBA Core 1.0 §10.1, §11): the client of a
 * `/connect/ciba` request, in poll or ping mode, redeems its `auth_req_id`. Until the user answers
 * on `/account/requests` the answer is `authorization_pending`; polling faster than the interval is
 * `slow_down` (poll mode only has an interval, but a pinged client polling too early is answered
 * alike); then `access_denied`, or tokens exactly once (the request consumed atomically); after
 * the request's lifetime `expired_token` (`pollAnswer`).
 */
import { CIBA_GRANT } from '../config/schema.js';
import { OAuthError } from '../protocol/errors.js';
import { pollAnswer } from './poll.js';
import { redeemApproval } from './redeem.js';
import { bindingOf, type GrantHandler } from './registry.js';

export { CIBA_GRANT };

/**
 * Handles a CIBA token request.
 * @throws OAuthError `invalid_request` (no auth_req_id), `invalid_grant` (unknown, another
 *   client's, already redeemed, user inactive, denied by the `preToken` hook), `authorization_pending`, `slow_down`,
 *   `access_denied`, `expired_token`, `invalid_target` (any `resource`: the request named none).
 */
export const cibaGrant: GrantHandler = async (ctx, req) => {
  const { params, client } = req;
  const authReqId = params.require('auth_req_id');
  if (params.has('resource'))
    throw new OAuthError('invalid_target', 'resource indicators are not supported with the CIBA grant');
  const requests = ctx.store.records.backchannelRequests;
  const row = await pollAnswer(requests, authReqId, client.clientId, 'auth_req_id');
  const grant = { familyId: row.familyId, consume: (now: number) => requests.consume(row.key, now) };
  return redeemApproval(
    ctx,
    client,
    grant,
    { subject: row.data.subject, scopes: row.data.scopes },
    async () => undefined,
    // The approval page asks no hook, so the `preToken` hook is asked here, as for the device code.
    { ...bindingOf(req), preToken: CIBA_GRANT },
  );
};
