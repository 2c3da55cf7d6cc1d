/**
 * Sigil's own protected resources (userinfo, SCIM, the management API): the access token of a
 * request, checked once for all of them. A Bearer token (RFC 6750 §2) or a DPoP-bound token with
 * a proof of its key (RFC 9449 §7); errors carry the `WWW-Authenticate` challenge of RFC 6750 §3
 * or RFC 9449 §7.1.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Services } from '../services.js';
import { OAuthError } from '../protocol/errors.js';
import { Params } from '../protocol/params.js';
import { credentialSource, headerValues, noStore, sendOAuthError } from '../http/request.js';
import { boundKey, userSubjectOf, type ValidAccessToken } from '../tokens/tokens.js';
import { bearerError, extractAccessToken, tokenError, type TokenScheme } from '../validation/bearer.js';
import { type DPoPProof, dpopAlgorithmsFor } from '../validation/dpop.js';
import { nowSeconds } from '../crypto/handles.js';
import type { User } from '../users/users.js';
import type { Client } from '../clients/registry.js';

/** The services this module uses. */
export type ProtectedResourceEndpointServices = Pick<Services, 'clients' | 'dpop' | 'issuer' | 'tokens' | 'users'>;

/** An access token that passed `authenticateAccessToken`. */
export interface PresentedToken {
  valid: ValidAccessToken;
  scheme: TokenScheme;
  /** The token's scopes. */
  scopes: string[];
  /** The client the token was issued to, which still exists. */
  client: Client;
  /** The active user the token acts for, or undefined for a client's own token (`userSubjectOf`). */
  user?: User;
}

/**
 * Checks the access token of a request to the resource at `path` (below the issuer): present
 * (else 401 with a bare challenge, RFC 6750 §3.1), valid and unrevoked, sent as DPoP with a proof
 * of its key when it is DPoP-bound (RFC 9449 §7.1, §7.2; the proof's `htu` is the issuer plus
 * `path`), of a client that still exists and existed when it was issued, and for a user that still exists and
 * is active.
 * @param form the form body of a POST that may carry `access_token` (RFC 6750 §2.2), if any
 * @throws OAuthError 400 `invalid_request` (malformed credentials), 401 without a code (no
 *   token), `invalid_token` or `invalid_dpop_proof`, each with its challenge.
 */
export async function authenticateAccessToken(
  ctx: ProtectedResourceEndpointServices,
  request: FastifyRequest,
  form: Params | undefined,
  path: string,
): Promise<PresentedToken> {
  const { authorization } = credentialSource(request, form ?? Params.empty());
  const presented = extractAccessToken(authorization, form);
  if (presented === undefined) throw bearerError(401);
  return checkAccessToken(ctx, request, presented.token, presented.scheme, path);
}

/**
 * Checks one access token, however it was presented (the Authorization header, a form, or the
 * console's cookie): as `authenticateAccessToken` does after extracting it.
 * @param scheme how it was sent; `DPoP` needs the request's proof
 * @throws OAuthError as `authenticateAccessToken`, but never the bare 401 of a missing token.
 */
export async function checkAccessToken(
  ctx: ProtectedResourceEndpointServices,
  request: FastifyRequest,
  token: string,
  scheme: TokenScheme,
  path: string,
): Promise<PresentedToken> {
  const valid = await ctx.tokens.validateAccessToken(token);
  if (!valid) throw tokenError(scheme, 401, 'invalid_token', 'the access token is invalid or expired');
  // A removed client's tokens end with it (RFC 7592 §2.3), also its JWT access tokens that have no
  // stored mark to revoke (client_credentials): as Duende's token validation has it. A client
  // created later with the same id does not revive them (`issuedAfterRemoval`).
  // `find`: a client added on a sibling worker or node a moment ago is known here too.
  const client = await ctx.clients.find(valid.claims.client_id);
  if (!client || !ctx.clients.issuedAfterRemoval(valid.claims.client_id, valid.claims.iat))
    throw tokenError(scheme, 401, 'invalid_token', 'the client of the access token no longer exists');
  const jkt = boundKey(valid.claims);
  if (scheme === 'Bearer' && jkt !== undefined)
    // RFC 9449 §7.2: a DPoP-bound token is not a bearer token.
    throw tokenError(
      'DPoP',
      401,
      'invalid_token',
      'the access token is DPoP-bound: send it with the DPoP scheme and a proof',
    );
  if (scheme === 'DPoP') {
    // A fapi2 client's proofs use PS256, ES256 or EdDSA here too (FAPI 2.0 SP §5.4.1).
    const proof = await verifyProof(ctx, request, token, path, dpopAlgorithmsFor(client));
    // RFC 9449 §4.3 item 12: the proof key must be the key the token is bound to.
    if (jkt === undefined || proof.jkt !== jkt)
      throw tokenError('DPoP', 401, 'invalid_dpop_proof', 'the access token is not bound to the proof key');
  }
  const scopes = (valid.claims.scope ?? '').split(' ').filter((s) => s.length > 0);
  // Whether the token acts for a user is read from the token, never from `sub` naming a client.
  const subject = userSubjectOf(valid.claims);
  if (subject === undefined) return { valid, scheme, scopes, client };
  const user = await ctx.users.findBySubject(subject);
  if (!user?.isActive) throw tokenError(scheme, 401, 'invalid_token', 'the user is no longer active');
  return { valid, scheme, scopes, client, user };
}

/** Who called a management route, for its audit events. */
export interface Caller {
  /** The client the token was issued to. */
  clientId: string;
  /** The user the token acts for, when one does. */
  sub?: string;
  scopes: string[];
}

/**
 * The guard of a management route (SCIM, /admin/v1): a valid access token
 * (`authenticateAccessToken`) that carries one of `scopes`.
 * @returns the caller, for audit events.
 * @throws OAuthError as `authenticateAccessToken`; 403 `insufficient_scope` with the needed
 *   scope(s) in the challenge (RFC 6750 §3.1).
 */
export async function requireScope(
  ctx: ProtectedResourceEndpointServices,
  request: FastifyRequest,
  path: string,
  scopes: readonly string[],
): Promise<Caller> {
  return callerWithScope(await authenticateAccessToken(ctx, request, undefined, path), scopes);
}

/**
 * The caller of a checked token (`checkAccessToken`) that carries one of `scopes`.
 * @throws OAuthError 403 `insufficient_scope` with the needed scope(s) in the challenge (RFC 6750 §3.1).
 */
export function callerWithScope(token: PresentedToken, scopes: readonly string[]): Caller {
  if (!scopes.some((s) => token.scopes.includes(s)))
    throw tokenError(
      token.scheme,
      403,
      'insufficient_scope',
      'the access token lacks the scope this resource needs',
      scopes.join(' '),
    );
  return {
    clientId: token.valid.claims.client_id,
    ...(token.user ? { sub: token.user.subjectId } : {}),
    scopes: token.scopes,
  };
}

/**
 * Renders a protected resource's token error (RFC 6750 §3): the error travels in
 * `WWW-Authenticate`, and a JSON body repeats it, except when no token was sent at all (§3.1: no
 * error code then, and no body). Other errors keep their JSON body.
 */
export function sendTokenError(reply: FastifyReply, err: OAuthError): FastifyReply {
  const challenge = err.headers['www-authenticate'];
  if (challenge !== undefined && !challenge.includes('error='))
    return noStore(reply).code(err.status).headers(err.headers).send();
  return sendOAuthError(reply, err);
}

/**
 * The DPoP proof of a request presenting `accessToken` (RFC 9449 §7.1): `htm` the request's
 * method, `htu` the resource's URL under the configured issuer, `ath` the token's hash, signed
 * with one of `algorithms` when given (`dpopAlgorithmsFor` the token's client).
 * @throws OAuthError 401 `invalid_dpop_proof` with a DPoP challenge when it is missing or fails a check.
 */
async function verifyProof(
  ctx: ProtectedResourceEndpointServices,
  request: FastifyRequest,
  accessToken: string,
  path: string,
  algorithms: { algorithms?: readonly string[] },
): Promise<DPoPProof> {
  let proof: DPoPProof | undefined;
  try {
    proof = await ctx.dpop.verify(
      headerValues(request, 'dpop'),
      { method: request.method, url: `${ctx.issuer}${path}`, accessToken },
      nowSeconds(),
      algorithms,
    );
  } catch (err) {
    if (err instanceof OAuthError) throw tokenError('DPoP', 401, 'invalid_dpop_proof', err.description);
    throw err;
  }
  if (!proof) throw tokenError('DPoP', 401, 'invalid_dpop_proof', 'a DPoP proof is required with the DPoP scheme');
  return proof;
}
