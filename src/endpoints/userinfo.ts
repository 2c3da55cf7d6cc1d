/**
 * The UserInfo endpoint, `GET`/`POST /connect/userinfo` (OIDC Core §5.3): a valid access token
 * for a user with the `openid` scope returns `sub` and the claims of the granted identity scopes,
 * plus those the authorization request's `claims` parameter asked for under `userinfo` and that
 * were found releasable then (OIDC Core §5.5; `releasableClaims`).
 * A DPoP-bound token (RFC 9449 §7) must come as `Authorization: DPoP <token>` with a proof of its key.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { SigilContext } from '../context.js';
import { OAuthError } from '../protocol/errors.js';
import { Params } from '../protocol/params.js';
import { credentialSource, headerValues, methodNotAllowed, noStore, sendOAuthError } from '../http/request.js';
import { boundKey } from '../tokens/tokens.js';
import { bearerError, extractAccessToken, tokenError, type TokenScheme } from '../validation/bearer.js';
import { type DPoPProof, dpopAlgorithmsFor } from '../validation/dpop.js';
import { nowSeconds } from '../crypto/handles.js';
import { claimsOf } from '../users/users.js';

/** Registers `/connect/userinfo` (GET and POST; other methods 405). */
export function userinfoEndpoint(app: FastifyInstance, ctx: SigilContext): void {
  app.route({
    method: ['GET', 'POST'],
    url: '/connect/userinfo',
    handler: async (request, reply) => {
      let scheme: TokenScheme = 'Bearer';
      try {
        let form: Params | undefined;
        if (request.method === 'POST') {
          if (request.body instanceof Params) form = request.body;
          else if (request.body !== undefined && request.body !== null)
            throw new OAuthError('invalid_request', 'the body must be application/x-www-form-urlencoded', 415);
        }
        const { authorization } = credentialSource(request, form ?? Params.empty());
        const presented = extractAccessToken(authorization, form);
        if (presented === undefined) throw bearerError(401);
        scheme = presented.scheme;
        const valid = await ctx.tokens.validateAccessToken(presented.token);
        if (!valid) throw tokenError(scheme, 401, 'invalid_token', 'the access token is invalid or expired');
        const jkt = boundKey(valid.claims);
        if (scheme === 'Bearer' && jkt !== undefined)
          // RFC 9449 §7.2: a DPoP-bound token is not a bearer token.
          throw tokenError('DPoP', 401, 'invalid_token', 'the access token is DPoP-bound: send it with the DPoP scheme and a proof');
        if (scheme === 'DPoP') {
          // A fapi2 client's proofs use PS256, ES256 or EdDSA here too (FAPI 2.0 SP §5.4.1).
          const client = typeof valid.claims.client_id === 'string' ? ctx.clients.get(valid.claims.client_id) : undefined;
          const proof = await verifyProof(ctx, request, presented.token, client ? dpopAlgorithmsFor(client) : {});
          // RFC 9449 §4.3 item 12: the proof key must be the key the token is bound to.
          if (jkt === undefined || proof.jkt !== jkt) throw tokenError('DPoP', 401, 'invalid_dpop_proof', 'the access token is not bound to the proof key');
        }
        const scopes = (valid.claims.scope ?? '').split(' ');
        if (!scopes.includes('openid')) throw tokenError(scheme, 403, 'insufficient_scope', 'the openid scope is required');
        const user = await ctx.users.findBySubject(valid.claims.sub);
        if (!user || !user.isActive) throw tokenError(scheme, 401, 'invalid_token', 'the user is no longer active');
        const names = ctx.resources.identityClaimNames(scopes);
        for (const name of valid.userinfoClaims ?? []) names.add(name);
        // A token of a removed client is no longer valid (as Duende's token validation has it).
        const tokenClient = ctx.clients.get(valid.claims.client_id);
        if (!tokenClient) throw tokenError(scheme, 401, 'invalid_token', 'the client of the access token no longer exists');
        const released = await ctx.tokens.releasedClaims({ subjectId: user.subjectId, claims: claimsOf(user) }, tokenClient, names, 'userinfo');
        const body = { sub: user.subjectId, ...released };
        return noStore(reply).type('application/json; charset=utf-8').send(body);
      } catch (err) {
        if (err instanceof OAuthError) return sendBearerError(reply, err);
        throw err;
      }
    },
  });
  app.route({ method: ['PUT', 'DELETE', 'PATCH'], url: '/connect/userinfo', handler: methodNotAllowed('GET, POST') });
}

/**
 * The DPoP proof of a userinfo request presenting `accessToken` (RFC 9449 §7.1): `htm` the
 * request's method, `htu` the userinfo URL under the configured issuer, `ath` the token's hash,
 * signed with one of `algorithms` when given (`dpopAlgorithmsFor` the token's client).
 * @throws OAuthError 401 `invalid_dpop_proof` with a DPoP challenge when it is missing or fails a check.
 */
async function verifyProof(
  ctx: SigilContext,
  request: FastifyRequest,
  accessToken: string,
  algorithms: { algorithms?: readonly string[] },
): Promise<DPoPProof> {
  let proof: DPoPProof | undefined;
  try {
    proof = await ctx.dpop.verify(headerValues(request, 'dpop'), { method: request.method, url: `${ctx.issuer}/connect/userinfo`, accessToken }, nowSeconds(), algorithms);
  } catch (err) {
    if (err instanceof OAuthError) throw tokenError('DPoP', 401, 'invalid_dpop_proof', err.description);
    throw err;
  }
  if (!proof) throw tokenError('DPoP', 401, 'invalid_dpop_proof', 'a DPoP proof is required with the DPoP scheme');
  return proof;
}

function sendBearerError(reply: FastifyReply, err: OAuthError): FastifyReply {
  // RFC 6750 §3: the error travels in WWW-Authenticate; a JSON body repeats it for convenience,
  // except when no token was sent at all (§3.1: no error code then).
  // Other errors (a non-form body, credentials in the query) keep their JSON body.
  const challenge = err.headers['www-authenticate'];
  if (challenge !== undefined && !challenge.includes('error=')) {
    return noStore(reply).code(err.status).headers(err.headers).send();
  }
  return sendOAuthError(reply, err);
}
