/**
 * The UserInfo endpoint, `GET`/`POST /connect/userinfo` (OIDC Core §5.3): a valid access token
 * for a user with the `openid` scope returns `sub` and the claims of the granted identity scopes,
 * plus those the authorization request's `claims` parameter asked for under `userinfo` and that
 * were found releasable then (OIDC Core §5.5; `releasableClaims`).
 * A DPoP-bound token (RFC 9449 §7) must come as `Authorization: DPoP <token>` with a proof of its key.
 */
import type { FastifyInstance } from 'fastify';
import type { Services } from '../services.js';
import { OAuthError } from '../protocol/errors.js';
import { Params } from '../protocol/params.js';
import { methodNotAllowed, noStore } from '../http/request.js';
import { tokenError } from '../validation/bearer.js';
import { claimsOf } from '../users/users.js';
import { organizationClaimsOf } from '../tokens/organization-claims.js';
import { authenticateAccessToken, sendTokenError } from './protected-resource.js';
import type { ProtectedResourceEndpointServices } from './protected-resource.js';

/** The UserInfo endpoint (OIDC Core §5.3). */
export const USERINFO_PATH = '/connect/userinfo';

/** The services this module uses. */
export type UserinfoEndpointServices = Pick<Services, 'resources' | 'tokens'> & ProtectedResourceEndpointServices;

/** Registers `/connect/userinfo` (GET and POST; other methods 405). */
export function userinfoEndpoint(app: FastifyInstance, ctx: UserinfoEndpointServices): void {
  app.route({
    method: ['GET', 'POST'],
    url: USERINFO_PATH,
    handler: async (request, reply) => {
      try {
        let form: Params | undefined;
        if (request.method === 'POST') {
          if (request.body instanceof Params) form = request.body;
          else if (request.body !== undefined && request.body !== null)
            throw new OAuthError('invalid_request', 'the body must be application/x-www-form-urlencoded', 415);
        }
        const token = await authenticateAccessToken(ctx, request, form, USERINFO_PATH);
        const { scheme } = token;
        if (!token.scopes.includes('openid'))
          throw tokenError(scheme, 403, 'insufficient_scope', 'the openid scope is required');
        const { user } = token;
        if (!user) throw tokenError(scheme, 401, 'invalid_token', 'the user is no longer active');
        const names = ctx.resources.identityClaimNames(token.scopes);
        for (const name of token.valid.userinfoClaims ?? []) names.add(name);
        const released = await ctx.tokens.releasedClaims(
          { subjectId: user.subjectId, claims: claimsOf(user) },
          token.client,
          names,
          'userinfo',
        );
        const body = { sub: user.subjectId, ...released, ...organizationClaimsOf(token.valid.claims) };
        return noStore(reply).type('application/json; charset=utf-8').send(body);
      } catch (err) {
        if (err instanceof OAuthError) return sendTokenError(reply, err);
        throw err;
      }
    },
  });
  app.route({ method: ['PUT', 'DELETE', 'PATCH'], url: USERINFO_PATH, handler: methodNotAllowed('GET, POST') });
}
