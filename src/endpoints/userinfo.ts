/**
 * The UserInfo endpoint, `GET`/`POST /connect/userinfo` (OIDC Core §5.3): a valid access token
 * for a user with the `openid` scope returns `sub` and the claims of the granted identity scopes,
 * plus those the authorization request's `claims` parameter asked for under `userinfo` and that
 * were found releasable then (OIDC Core §5.5; `releasableClaims`).
 */
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { SigilContext } from '../context.js';
import { OAuthError } from '../errors.js';
import { Params } from '../http/form.js';
import { credentialSource, methodNotAllowed, noStore, sendOAuthError } from '../http/request.js';
import { pickClaims } from '../tokens/tokens.js';
import { bearerError, extractBearer } from '../validation/bearer.js';
import { claimsOf } from '../users/users.js';

/** Registers `/connect/userinfo` (GET and POST; other methods 405). */
export function userinfoEndpoint(app: FastifyInstance, ctx: SigilContext): void {
  app.route({
    method: ['GET', 'POST'],
    url: '/connect/userinfo',
    // JSON API: the browser-page headers of helmet (CSP, frame options) do not apply.
    helmet: false,
    handler: async (request, reply) => {
      try {
        let form: Params | undefined;
        if (request.method === 'POST') {
          if (request.body instanceof Params) form = request.body;
          else if (request.body !== undefined && request.body !== null)
            throw new OAuthError('invalid_request', 'the body must be application/x-www-form-urlencoded', 415);
        }
        const { authorization } = credentialSource(request, form ?? Params.empty());
        const token = extractBearer(authorization, form);
        if (token === undefined) throw bearerError(401);
        const valid = await ctx.tokens.validateAccessToken(token);
        if (!valid) throw bearerError(401, 'invalid_token', 'the access token is invalid or expired');
        const scopes = (valid.claims.scope ?? '').split(' ');
        if (!scopes.includes('openid')) throw bearerError(403, 'insufficient_scope', 'the openid scope is required');
        const user = await ctx.users.findBySubject(valid.claims.sub);
        if (!user || !user.isActive) throw bearerError(401, 'invalid_token', 'the user is no longer active');
        const names = ctx.resources.identityClaimNames(scopes);
        for (const name of valid.userinfoClaims ?? []) names.add(name);
        const body = { sub: user.subjectId, ...pickClaims(claimsOf(user), names) };
        return noStore(reply).type('application/json; charset=utf-8').send(body);
      } catch (err) {
        if (err instanceof OAuthError) return sendBearerError(reply, err);
        throw err;
      }
    },
  });
  app.route({ method: ['PUT', 'DELETE', 'PATCH'], url: '/connect/userinfo', handler: methodNotAllowed('GET, POST') });
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
