/**
 * Token revocation, `POST /connect/revocation` (RFC 7009). A client revokes its own tokens:
 * a refresh token ends its whole grant family (access tokens included), an access token
 * ends itself (a JWT by its `jti`). Unknown tokens and other clients' tokens change nothing and
 * still get 200 (§2.2).
 */
import type { FastifyInstance } from 'fastify';
import type { Services } from '../services.js';
import { OAuthError, invalidRequest } from '../protocol/errors.js';
import { credentialSource, formBody, methodNotAllowed, noStore, originOf, sendOAuthError } from '../http/request.js';
import { nowSeconds } from '../crypto/handles.js';
import { findToken } from '../tokens/lookup.js';
import { authenticateClient } from '../clients/authentication.js';
import type { ClientAuthServices } from '../clients/authentication.js';

/** The revocation endpoint (RFC 7009 §2). */
export const REVOCATION_PATH = '/connect/revocation';

/** The services this module uses. */
export type RevocationEndpointServices = Pick<Services, 'events' | 'store' | 'tokens'> & ClientAuthServices;

/** Registers `/connect/revocation` (POST form; other methods 405, other bodies 415). */
export function revocationEndpoint(app: FastifyInstance, ctx: RevocationEndpointServices): void {
  app.post(REVOCATION_PATH, async (request, reply) => {
    try {
      const params = formBody(request, 'status');
      const { client } = await authenticateClient(credentialSource(request, params), ctx, request.ip, REVOCATION_PATH);
      const value = params.get('token');
      if (value === undefined) throw invalidRequest('parameter "token" is missing');
      const found = await findToken(ctx.tokens, ctx.store.records.refreshTokens, value, params.get('token_type_hint'));
      const now = nowSeconds();
      if (found?.kind === 'refresh_token' && found.row.clientId === client.clientId) {
        await ctx.store.records.families.revoke(found.row.familyId, now);
        ctx.events.emit({
          name: 'token_revoked',
          endpoint: 'revocation',
          clientId: client.clientId,
          subjectId: found.data.subject.subjectId,
          tokenTypes: ['refresh_token'],
          ...originOf(request),
        });
      } else if (found?.kind === 'access_token' && found.token.claims.client_id === client.clientId) {
        const claims = found.token.claims;
        const revocation = {
          jti: String(claims.jti),
          clientId: client.clientId,
          subjectId: claims.sub,
          expiresAt: Number(claims.exp),
        };
        if (found.token.format === 'jwt') await ctx.store.records.accessTokens.revokeJwt(revocation, now);
        else await ctx.store.records.accessTokens.revokeReference(value, revocation, now);
        ctx.events.emit({
          name: 'token_revoked',
          endpoint: 'revocation',
          clientId: client.clientId,
          subjectId: claims.sub,
          tokenTypes: ['access_token'],
          ...originOf(request),
        });
      }
      return noStore(reply).code(200).send();
    } catch (err) {
      if (!(err instanceof OAuthError)) throw err;
      return sendOAuthError(reply, err);
    }
  });
  app.route({ method: ['GET', 'PUT', 'DELETE', 'PATCH'], url: REVOCATION_PATH, handler: methodNotAllowed('POST') });
}
