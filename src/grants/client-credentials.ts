/**
 * `client_credentials` (RFC 6749 §4.4): an access token for the client itself, API scopes only,
 * never a refresh token (§4.4.3) nor an identity token.
 */
import type { GrantHandler } from './registry.js';
import { validateScopes } from '../validation/scopes.js';

/** Handles `grant_type=client_credentials`. @throws OAuthError `invalid_scope`. */
export const clientCredentialsGrant: GrantHandler = async (ctx, { params, client }) => {
  const scopes = validateScopes(params.get('scope'), client, ctx.resources, 'client');
  const response = await ctx.tokens.issue({ client, scopes });
  return { response };
};
