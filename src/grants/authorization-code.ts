/**
 * `authorization_code` (RFC 6749 §4.1.3; RFC 7636 §4.6; OIDC Core §3.1.3.2): the code is bound to
 * its client, its redirect URI and its PKCE challenge, and is single use. Every check runs before
 * the code is consumed, so a failed request changes nothing; a second use of a consumed
 * code revokes every token issued from it (RFC 6749 §4.1.2).
 */
import { invalidGrant, invalidRequest } from '../protocol/errors.js';
import { nowSeconds } from '../crypto/handles.js';
import { verifyPkce } from '../validation/pkce.js';
import { narrowAuthorizationDetails } from '../resources/authorization-details.js';
import { narrowResources, requestedResources } from '../resources/resource-indicators.js';
import { redeemApproval } from './redeem.js';
import { bindingOf, type GrantHandler } from './registry.js';

/**
 * Handles `grant_type=authorization_code`.
 * A code issued for a `dpop_jkt` (RFC 9449 §10) needs a DPoP proof with that key; a code issued
 * for resources (RFC 8707 §2.1) gives tokens for those or, with `resource`, some of them; a code
 * with authorization details gives all of them or, with `authorization_details`, some of them
 * (RFC 9396 §6.1; `narrowAuthorizationDetails`), while its refresh token keeps them all.
 * @throws OAuthError `invalid_request` (missing code or redirect_uri), `invalid_grant` (unknown,
 *   expired, used, another client's, redirect_uri or PKCE mismatch, no or another DPoP key than
 *   `dpop_jkt`, user inactive), `invalid_target` (a resource outside the code's),
 *   `invalid_authorization_details` (an object that is not one of the code's).
 */
export const authorizationCodeGrant: GrantHandler = async (ctx, req) => {
  const { params, client } = req;
  const code = params.require('code');
  const redirectUri = params.get('redirect_uri');
  const verifier = params.get('code_verifier');
  const now = nowSeconds();
  const codes = ctx.store.records.codes;
  const row = code.length <= 512 ? await codes.find(code) : undefined;
  if (!row || row.clientId !== client.clientId) throw invalidGrant('the authorization code is invalid');
  if (row.consumedAt !== null || row.revokedAt !== null) {
    await ctx.store.records.families.revoke(row.familyId, now);
    throw invalidGrant('the authorization code was already used');
  }
  if (row.expiresAt <= now) throw invalidGrant('the authorization code expired');
  const data = row.data;
  if (data.dpopJkt !== undefined && req.dpop?.jkt !== data.dpopJkt)
    throw invalidGrant('the authorization code is bound to another DPoP key (dpop_jkt)');
  if (redirectUri === undefined) throw invalidRequest('parameter "redirect_uri" is missing');
  if (redirectUri !== data.redirectUri) throw invalidGrant('redirect_uri differs from the authorization request');
  if (data.codeChallenge !== undefined) {
    if (verifier === undefined || !verifyPkce(verifier, data.codeChallenge, data.codeChallengeMethod ?? 'plain'))
      throw invalidGrant('PKCE verification failed');
  } else if (verifier !== undefined) {
    // RFC 9700 §4.8.2: a verifier for a code issued without a challenge is a downgrade attempt.
    throw invalidGrant('no code_challenge was sent for this code');
  }
  const targets = narrowResources(requestedResources(params.getAll('resource'), client, ctx.resources), data.resources);
  const details = narrowAuthorizationDetails(
    params.get('authorization_details'),
    data.authorizationDetails,
    client,
    ctx.resources,
  );
  const grant = { familyId: row.familyId, consume: (at: number) => codes.consume(code, at) };
  return redeemApproval(
    ctx,
    client,
    grant,
    data,
    () => ctx.store.records.families.revoke(row.familyId, now).then(() => undefined),
    {
      ...bindingOf(req),
      ...(targets ? { targets } : {}),
      ...(details ? { authorizationDetails: details } : {}),
    },
  );
};
