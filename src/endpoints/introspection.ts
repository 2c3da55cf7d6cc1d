/**
 * Token introspection, `POST /connect/introspect` (RFC 7662). Callers authenticate: an API
 * resource with its name and secret (Basic or form), or a confidential client. An API sees tokens
 * whose audience includes it; a client sees tokens issued to it. Anything else is `{"active":false}`.
 */
import type { FastifyInstance } from 'fastify';
import type { Services } from '../services.js';
import { OAuthError, invalidRequest } from '../protocol/errors.js';
import { credentialSource, formBody, methodNotAllowed, noStore, originOf, sendOAuthError } from '../http/request.js';
import { findToken, type FoundToken } from '../tokens/lookup.js';
import { boundKey, userSubjectOf } from '../tokens/tokens.js';
import {
  authenticateApiResource,
  authenticateClient,
  findCredentials,
  invalidClient,
} from '../clients/authentication.js';
import type { ClientAuthServices } from '../clients/authentication.js';

/** The introspection endpoint (RFC 7662 §2). */
export const INTROSPECTION_PATH = '/connect/introspect';

/** The services this module uses. */
export type IntrospectionEndpointServices = Pick<
  Services,
  'apiSecrets' | 'clients' | 'events' | 'issuer' | 'limiter' | 'resources' | 'store' | 'tokens' | 'users'
> &
  ClientAuthServices;

type Caller = { kind: 'api'; name: string } | { kind: 'client'; clientId: string };

/** Registers `/connect/introspect` (POST form; other methods 405, other bodies 415). */
export function introspectionEndpoint(app: FastifyInstance, ctx: IntrospectionEndpointServices): void {
  app.post(INTROSPECTION_PATH, async (request, reply) => {
    try {
      const params = formBody(request, 'status');
      const source = credentialSource(request, params);
      const presented = findCredentials(source);
      if (!presented) throw invalidClient('authentication is required');
      let caller: Caller;
      const api = await authenticateApiResource(presented, ctx.apiSecrets, ctx.limiter, request.ip);
      if (api !== undefined) caller = { kind: 'api', name: api };
      else {
        const { client } = await authenticateClient(source, ctx, request.ip, INTROSPECTION_PATH);
        if (client.isPublic) throw invalidClient('public clients cannot introspect');
        caller = { kind: 'client', clientId: client.clientId };
      }
      const token = params.get('token');
      if (token === undefined) throw invalidRequest('parameter "token" is missing');
      const found = await findToken(ctx.tokens, ctx.store.records.refreshTokens, token, params.get('token_type_hint'));
      // A removed client's tokens are inactive (RFC 7592 §2.3), also its JWT access tokens without a
      // stored mark, and they stay so under a client later created with the same id. A client added
      // on a sibling worker or node a moment ago is looked for first (`find`).
      if (found)
        await ctx.clients.find(found.kind === 'refresh_token' ? found.row.clientId : found.token.claims.client_id);
      const live =
        found &&
        (found.kind === 'refresh_token'
          ? ctx.clients.stillIssuesTo(found.row.clientId, found.row.createdAt)
          : ctx.clients.stillIssuesTo(found.token.claims.client_id, found.token.claims.iat));
      const body =
        found && live && visibleTo(ctx, found, caller) && (await userActive(ctx, found))
          ? describe(ctx, found)
          : { active: false };
      return noStore(reply).type('application/json; charset=utf-8').send(body);
    } catch (err) {
      if (!(err instanceof OAuthError)) throw err;
      if (err.code === 'invalid_client')
        ctx.events.emit({
          name: 'api_authentication_failed',
          endpoint: 'introspection',
          error: err.code,
          ...originOf(request),
        });
      return sendOAuthError(reply, err);
    }
  });
  app.route({ method: ['GET', 'PUT', 'DELETE', 'PATCH'], url: INTROSPECTION_PATH, handler: methodNotAllowed('POST') });
}

function audiences(ctx: IntrospectionEndpointServices, found: FoundToken): string[] {
  if (found.kind === 'refresh_token') return ctx.resources.audiences(found.data.scopes);
  const aud = found.token.claims.aud;
  return aud === undefined ? [] : Array.isArray(aud) ? aud : [aud];
}

/**
 * Whether the user a token acts for is still there and active (a client's own token: yes). A user
 * made inactive (SCIM `active: false`, or by the profile service's `isActive`, which
 * `findBySubject` folds in) has no active tokens (RFC 7662 §2.2 `active`).
 */
async function userActive(ctx: IntrospectionEndpointServices, found: FoundToken): Promise<boolean> {
  const sub = found.kind === 'refresh_token' ? found.data.subject.subjectId : userSubjectOf(found.token.claims);
  if (sub === undefined) return true;
  return (await ctx.users.findBySubject(sub))?.isActive === true;
}

function visibleTo(ctx: IntrospectionEndpointServices, found: FoundToken, caller: Caller): boolean {
  // An API resource sees only access tokens it is an audience of, never refresh tokens.
  if (caller.kind === 'api') return found.kind === 'access_token' && audiences(ctx, found).includes(caller.name);
  const owner = found.kind === 'refresh_token' ? found.row.clientId : found.token.claims.client_id;
  return owner === caller.clientId;
}

/** The active response of RFC 7662 §2.2. */
function describe(ctx: IntrospectionEndpointServices, found: FoundToken): Record<string, unknown> {
  if (found.kind === 'access_token') {
    // RFC 7662 §2.2: token_type as in RFC 6749 §5.1; RFC 9449 §6.2: `cnf` (among the claims)
    // and token_type DPoP for a DPoP-bound token, so a resource server can check the binding.
    return {
      active: true,
      ...found.token.claims,
      token_type: boundKey(found.token.claims) !== undefined ? 'DPoP' : 'Bearer',
    };
  }
  const { row, data } = found;
  const aud = ctx.resources.audiences(data.scopes);
  return {
    active: true,
    iss: ctx.issuer,
    sub: data.subject.subjectId,
    client_id: row.clientId,
    scope: data.scopes.join(' '),
    ...(aud.length > 0 ? { aud: aud.length === 1 ? aud[0] : aud } : {}),
    iat: row.createdAt,
    exp: row.expiresAt,
    auth_time: data.subject.authTime,
    // RFC 8176 / OIDC Core §2: how the user signed in (e.g. `pwd otp mfa`), and the class when asked.
    ...(data.subject.amr ? { amr: data.subject.amr } : {}),
    ...(data.subject.acr ? { acr: data.subject.acr } : {}),
    ...(data.jkt !== undefined ? { cnf: { jkt: data.jkt } } : {}),
    // RFC 9396 §9.2: the grant's authorization details, as with its access tokens.
    ...(data.authorizationDetails ? { authorization_details: data.authorizationDetails } : {}),
    token_type: 'refresh_token',
  };
}
