/**
 * `client_credentials` (RFC 6749 §4.4): an access token for the client itself, API scopes only,
 * never a refresh token (§4.4.3) nor an identity token.
 */
import { bindingOf, type GrantHandler } from './registry.js';
import { requestedResources, scopesForResources } from '../resources/resource-indicators.js';
import { validateScopes } from '../resources/scopes.js';
import { parseAuthorizationDetails } from '../resources/authorization-details.js';
import { askPreToken } from './pre-token.js';

/**
 * Handles `grant_type=client_credentials`; `resource` (RFC 8707) narrows the token's audience and
 * scopes, a DPoP proof binds it (RFC 9449 §5); `authorization_details` (RFC 9396 §6) goes into
 * the token and the response as sent.
 * @throws OAuthError `invalid_scope`, `invalid_target`, `invalid_authorization_details`;
 *   `invalid_grant` when the `preToken` hook denies.
 */
export const clientCredentialsGrant: GrantHandler = async (ctx, req) => {
  const { params, client } = req;
  const targets = requestedResources(params.getAll('resource'), client, ctx.resources);
  const scopes = scopesForResources(
    validateScopes(params.get('scope'), client, ctx.resources, 'client'),
    targets,
    ctx.resources,
  );
  const authorizationDetails = parseAuthorizationDetails(params.get('authorization_details'), client, ctx.resources);
  const hookClaims = await askPreToken(ctx, client, undefined, scopes, 'client_credentials');
  const response = await ctx.tokens.issue({
    client,
    scopes,
    ...(hookClaims ? { hookClaims } : {}),
    ...bindingOf(req),
    ...(targets ? { audiences: targets } : {}),
    ...(authorizationDetails ? { authorizationDetails } : {}),
  });
  return { response };
};
