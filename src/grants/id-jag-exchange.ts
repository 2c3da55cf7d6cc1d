/**
 * Sigil as the enterprise identity provider of the Identity Assertion JWT Authorization Grant
 * (ID-JAG, draft-ietf-oauth-identity-assertion-authz-grant §"Token Exchange"): a client trades an
 * identity token Sigil issued to it for an ID-JAG, a short-lived JWT that names the user to
 * another trust domain's authorization server (`audience`), which redeems it with the JWT bearer
 * grant (RFC 7523 §2.1; Sigil's side of that is `jwt-bearer.ts`). It is the token exchange grant
 * (RFC 8693) asked for `requested_token_type=urn:ietf:params:oauth:token-type:id-jag`.
 *
 * Policy:
 * - Which subject token: an identity token (`subject_token_type` id_token) signed by Sigil's keys,
 *   of Sigil's issuer, unexpired (`ID_TOKEN_LEEWAY`), whose `aud` includes the requesting client
 *   (draft §"Processing Rules": the audience of the subject token must match the authenticated
 *   client; an `azp`, when present, too), still issued to a client that was not removed since, for
 *   a user still active. An access token is no identity token (`typ` at+jwt is refused).
 * - For whom: the audiences listed in the client's `idJagAudiences`, each with the client's id at
 *   that server, the ID-JAG's `client_id` (draft §"Cross-Domain Client ID Handling"); any other
 *   audience, and Sigil's own issuer, are `invalid_target` (RFC 8693 §2.2.2).
 * - What: `scope` and `resource` are copied into the ID-JAG for the resource's server to decide,
 *   which grants nothing beyond them; they are checked for form only. `email` and `email_verified`
 *   go along where the user has them (draft: so the resource's server can find an account that
 *   has not signed in there yet); `auth_time`, `acr` and `amr` of the identity token too.
 * - How long: `ID_JAG_LIFETIME` seconds; nothing records it here, the resource's server keeps its
 *   `jti` until it expires.
 */
import { errors as joseErrors, type JWTPayload, jwtVerify } from 'jose';
import { isResourceIndicator } from '../config/schema.js';
import { newId, nowSeconds } from '../crypto/handles.js';
import { invalidGrant, invalidRequest } from '../protocol/errors.js';
import { invalidTarget, MAX_RESOURCE_LENGTH } from '../resources/resource-indicators.js';
import { parseScope } from '../resources/scopes.js';
import type { GrantHandler } from './registry.js';

/** Token type identifier of an ID-JAG (draft §"OAuth URI Registration"). */
export const ID_JAG_TOKEN_TYPE = 'urn:ietf:params:oauth:token-type:id-jag';
/** Token type identifier of an OpenID Connect identity token (RFC 8693 §3). */
export const ID_TOKEN_TYPE = 'urn:ietf:params:oauth:token-type:id_token';
/** The JOSE `typ` of an ID-JAG (draft §"Identity Assertion JWT Authorization Grant"; RFC 8725 §3.11). */
export const ID_JAG_TYP = 'oauth-id-jag+jwt';
/** Lifetime of an ID-JAG Sigil issues, seconds: long enough for one token request at another server. */
export const ID_JAG_LIFETIME = 300;
/** Clock skew tolerated on the identity token's `exp` and `iat`, seconds. */
export const ID_TOKEN_LEEWAY = 30;
/** Longest subject token tried, in characters (Sigil's identity tokens are well under it). */
const MAX_SUBJECT_TOKEN_LENGTH = 8192;
/** Most `resource` values copied into one ID-JAG. */
const MAX_ID_JAG_RESOURCES = 10;

/**
 * Handles a token exchange for an ID-JAG (the caller has checked `requested_token_type`).
 * @throws OAuthError `invalid_request` (missing, repeated or unknown-typed parameters; an
 *   `actor_token`, which the draft does not use; a subject token that is no valid unexpired
 *   identity token of Sigil for this client, RFC 8693 §2.2.2), `invalid_grant` (its user is gone
 *   or inactive), `invalid_target` (an audience not in `idJagAudiences`, a malformed `resource`),
 *   `invalid_scope` (a malformed `scope`).
 */
export const idJagExchange: GrantHandler = async (ctx, req) => {
  const { params, client } = req;
  const subjectToken = params.require('subject_token');
  if (params.require('subject_token_type') !== ID_TOKEN_TYPE)
    throw invalidRequest('an ID-JAG is issued for an identity token (subject_token_type id_token)');
  if (params.has('actor_token') || params.has('actor_token_type'))
    throw invalidRequest('an ID-JAG request takes no actor_token');
  const audience = params.require('audience');
  const target = client.idJagAudiences.find((a) => a.issuer === audience);
  if (!target || audience === ctx.issuer)
    throw invalidTarget('this client may not ask for an ID-JAG for this audience (see idJagAudiences)');
  const resources = params.getAll('resource');
  if (
    resources.length > MAX_ID_JAG_RESOURCES ||
    resources.some((r) => r.length > MAX_RESOURCE_LENGTH || !isResourceIndicator(r))
  )
    throw invalidTarget('resource must be at most ten absolute URIs without fragment');
  const scopeParam = params.get('scope');
  const scopes = scopeParam === undefined ? [] : parseScope(scopeParam);

  const idToken = await verifiedIdentityToken(ctx, subjectToken);
  const aud = Array.isArray(idToken.aud) ? idToken.aud : [idToken.aud];
  if (!aud.includes(client.clientId) || (idToken.azp !== undefined && idToken.azp !== client.clientId))
    throw invalidRequest('the subject_token was not issued to this client');
  // A removed client's identity tokens are no subject tokens, also under a client later created with the same id.
  if (!ctx.clients.stillIssuesTo(client.clientId, idToken.iat))
    throw invalidRequest('the subject_token was not issued to this client');
  const user = await ctx.users.findBySubject(idToken.sub);
  if (!user?.isActive) throw invalidGrant('the user is not active');

  const now = nowSeconds();
  const claims: JWTPayload & Record<string, unknown> = {
    iss: ctx.issuer,
    sub: user.subjectId,
    aud: target.issuer,
    client_id: target.clientId,
    jti: newId(),
    iat: now,
    exp: now + ID_JAG_LIFETIME,
  };
  if (resources.length > 0) claims.resource = resources.length === 1 ? resources[0] : resources;
  if (scopes.length > 0) claims.scope = scopes.join(' ');
  for (const name of ['auth_time', 'acr', 'amr'] as const)
    if (idToken[name] !== undefined) claims[name] = idToken[name];
  if (typeof user.claims.email === 'string') {
    claims.email = user.claims.email;
    claims.email_verified = user.claims.email_verified === true;
  }
  return {
    response: {
      access_token: ctx.keys.sign(claims, ID_JAG_TYP),
      issued_token_type: ID_JAG_TOKEN_TYPE,
      token_type: 'N_A',
      expires_in: ID_JAG_LIFETIME,
      ...(scopes.length > 0 ? { scope: scopes.join(' ') } : {}),
    },
    subjectId: user.subjectId,
  };
};

/** The claims of an identity token Sigil issued, as the exchange reads them. */
interface IdentityTokenClaims extends JWTPayload {
  sub: string;
  aud: string | string[];
  iat: number;
  azp?: unknown;
  auth_time?: unknown;
  acr?: unknown;
  amr?: unknown;
}

/**
 * Verifies `token` as an identity token of Sigil: `typ` JWT (an access token's is at+jwt, a
 * logout token's logout+jwt), one of Sigil's algorithms and keys, Sigil's issuer, `sub`, `aud`,
 * `iat` and an `exp` not past (`ID_TOKEN_LEEWAY`).
 * @throws OAuthError `invalid_request` when it is not one (RFC 8693 §2.2.2).
 */
async function verifiedIdentityToken(ctx: Parameters<GrantHandler>[0], token: string): Promise<IdentityTokenClaims> {
  if (token.length > MAX_SUBJECT_TOKEN_LENGTH) throw invalidRequest('the subject_token is not a valid identity token');
  try {
    const { payload } = await jwtVerify(token, ctx.keys.verificationKeys, {
      issuer: ctx.issuer,
      typ: 'JWT',
      algorithms: [...ctx.keys.algorithms],
      requiredClaims: ['sub', 'aud', 'exp', 'iat'],
      clockTolerance: ID_TOKEN_LEEWAY,
    });
    return payload as IdentityTokenClaims;
  } catch (err) {
    if (err instanceof joseErrors.JWTExpired) throw invalidRequest('the subject_token has expired');
    if (err instanceof joseErrors.JOSEError || err instanceof TypeError)
      throw invalidRequest('the subject_token is not a valid identity token of this issuer');
    throw err;
  }
}
