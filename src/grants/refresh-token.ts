/**
 * `refresh_token` (RFC 6749 §6; RFC 9700 §4.14.2): bound to its client; `oneTime` tokens rotate
 * and are consumed atomically, and presenting a consumed one revokes the whole grant family;
 * `reuse` tokens stay the same; `absolute` or `sliding` expiration. A narrower `scope` is allowed,
 * a wider one is `invalid_scope`; the refresh token keeps the original scopes (§6). Likewise
 * `authorization_details` may ask for some of the grant's (RFC 9396 §7.2), which the refresh
 * token keeps all of.
 */
import { invalidGrant } from '../protocol/errors.js';
import { nowSeconds } from '../crypto/handles.js';
import type { RefreshPlan } from '../tokens/tokens.js';
import type { RefreshTokenData } from '../stores/records/refresh-tokens.js';
import { narrowResources, requestedResources, scopesForResources } from '../resources/resource-indicators.js';
import { narrowScopes } from '../resources/scopes.js';
import { narrowAuthorizationDetails } from '../resources/authorization-details.js';
import { bindingOf, type GrantHandler } from './registry.js';
import { claimsOf } from '../users/users.js';
import { askPreToken, mergeAddedClaims } from './pre-token.js';

/**
 * Handles `grant_type=refresh_token`.
 * Once bound, always bound: a refresh token bound to a DPoP key (RFC 9449 §5; any client's, not
 * only a public one's) needs a proof with that key, and a proof on an unbound grant binds the
 * grant from then on (a `reuse` token's stored data records it), so a grant that got bound tokens
 * never again gets Bearer ones. `resource` (RFC 8707 §2.2) may narrow the grant's resources, never
 * widen them.
 * @throws OAuthError `invalid_request` (missing token), `invalid_grant` (unknown, expired,
 *   revoked, consumed, another client's (also an earlier client's of the same id), no or another
 *   DPoP key than it is bound to, bound by a concurrent use meanwhile, user gone or inactive, no
 *   longer a member of the grant's organization, denied by the `preToken` hook),
 *   `invalid_scope`, `invalid_target`, `invalid_authorization_details` (an object that is not one
 *   of the grant's).
 */
export const refreshTokenGrant: GrantHandler = async (ctx, req) => {
  const { params, client } = req;
  const handle = params.require('refresh_token');
  const now = nowSeconds();
  const { refreshTokens, families } = ctx.store.records;
  const row = handle.length <= 512 ? await refreshTokens.find(handle) : undefined;
  // A token created before its client id's last removal is the removed client's, even under a
  // client later created with the id (`issuedAfterRemoval`): deleting a client revokes its refresh
  // tokens, and this holds should that revocation be missed.
  if (!row || row.clientId !== client.clientId || !ctx.clients.issuedAfterRemoval(client.clientId, row.createdAt))
    throw invalidGrant('the refresh token is invalid');
  if (row.revokedAt !== null) throw invalidGrant('the refresh token was revoked');
  if (row.consumedAt !== null) {
    await families.revoke(row.familyId, now);
    throw invalidGrant('the refresh token was already used');
  }
  if (row.expiresAt <= now) throw invalidGrant('the refresh token expired');
  const data = row.data;
  if (data.jkt !== undefined && req.dpop?.jkt !== data.jkt)
    throw invalidGrant('the refresh token is bound to another DPoP key');
  const targets = narrowResources(requestedResources(params.getAll('resource'), client, ctx.resources), data.resources);
  const scopes = scopesForResources(narrowScopes(params.get('scope'), data.scopes), targets, ctx.resources);
  const details = narrowAuthorizationDetails(
    params.get('authorization_details'),
    data.authorizationDetails,
    client,
    ctx.resources,
  );
  const user = await ctx.users.findBySubject(data.subject.subjectId);
  if (!user?.isActive) throw invalidGrant('the user is no longer active');
  const subject = { ...data.subject, claims: claimsOf(user) };
  // The organization stays the one signed in to; its roles are read again (as Auth0 does), so a
  // change of roles reaches the next access token, and a member removed gets no more tokens for it.
  if (data.subject.organization !== undefined) {
    const member = await ctx.store.organizations.member(data.subject.organization.id, user.subjectId);
    if (member === undefined) throw invalidGrant('the user is no longer a member of the organization');
    subject.organization = { ...data.subject.organization, roles: member.roles };
  }
  // Asked again at each refresh, before the token is consumed: a denial leaves it usable.
  const hookClaims = mergeAddedClaims(
    data.hookClaims,
    await askPreToken(ctx, client, subject, scopes, 'refresh_token'),
  );

  let refresh: RefreshPlan;
  if (client.refreshTokenUsage === 'oneTime') {
    if (!(await refreshTokens.consume(handle, now))) {
      // Lost a race with a concurrent use of the same token: that is reuse too.
      await families.revoke(row.familyId, now);
      throw invalidGrant('the refresh token was already used');
    }
    refresh = {
      kind: 'new',
      expiresAt: nextExpiry(data, client, now),
      absoluteExpiresAt: data.absoluteExpiresAt,
      scopes: data.scopes,
      ...(data.resources ? { resources: data.resources } : {}),
      // The grant's, whatever this access token carries (RFC 9396 §7.2): a later refresh may ask for all again.
      ...(data.authorizationDetails ? { authorizationDetails: data.authorizationDetails } : {}),
    };
  } else {
    // The token stays: it records the binding itself. Compare-and-set of the data (with the new
    // expiry of a sliding token in the same update), so that of two concurrent first proofs with
    // different keys only one binds the grant, and a request without a proof that read the data
    // before a concurrent binding cannot write the unbound data back.
    const kept = data.jkt === undefined && req.dpop ? { ...data, jkt: req.dpop.jkt } : data;
    const sliding = client.refreshTokenExpiration === 'sliding';
    if (
      (kept !== data || sliding) &&
      !(await refreshTokens.replaceData(handle, data, kept, sliding ? nextExpiry(data, client, now) : undefined))
    )
      throw invalidGrant('the refresh token was changed by a concurrent request');
    refresh = { kind: 'existing', handle };
  }
  const response = await ctx.tokens.issue({
    client,
    scopes,
    subject,
    familyId: row.familyId,
    refresh,
    identityToken: true,
    ...(data.requestedClaims ? { requestedClaims: data.requestedClaims } : {}),
    ...(hookClaims ? { hookClaims } : {}),
    ...bindingOf(req),
    ...(targets ? { audiences: targets } : {}),
    ...(details ? { authorizationDetails: details } : {}),
  });
  // A concurrent reuse may have revoked the family while the new tokens were being written; the
  // consumed token's row then carries the revocation, and the new tokens must share it: a replayed
  // one-time refresh token ends its whole family (RFC 9700 §4.14.2).
  if (client.refreshTokenUsage === 'oneTime' && (await refreshTokens.find(handle))?.revokedAt != null)
    await families.revoke(row.familyId, nowSeconds());
  return { response, subjectId: user.subjectId };
};

function nextExpiry(
  data: RefreshTokenData,
  client: { refreshTokenExpiration: string; slidingRefreshTokenLifetime: number },
  now: number,
): number {
  return client.refreshTokenExpiration === 'sliding'
    ? Math.min(now + client.slidingRefreshTokenLifetime, data.absoluteExpiresAt)
    : data.absoluteExpiresAt;
}
