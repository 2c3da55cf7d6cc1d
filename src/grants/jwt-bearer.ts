/**
 * Sigil as the resource's authorization server of the Identity Assertion JWT Authorization Grant
 * (ID-JAG, draft-ietf-oauth-identity-assertion-authz-grant §"Access Token Request"): a client
 * presents an ID-JAG that an enterprise identity provider of `trustedIdentityIssuers` issued for
 * Sigil, as the JWT bearer authorization grant (`grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer`,
 * `assertion`, RFC 7523 §2.1), and gets an access token for the user it names.
 *
 * Checks (RFC 7521 §5.2, RFC 7523 §3, the draft's processing rules), each failure `invalid_grant`
 * (RFC 7523 §3.1): `typ` oauth-id-jag+jwt (RFC 8725 §3.11); `iss` a trusted issuer, never Sigil
 * itself (draft §"Cross-Domain Use": an IdP must not redeem its own ID-JAGs); the signature by a
 * key of the issuer's `jwksUri` (fetched under the SSRF guard, cached: `ClientKeys.forIssuer`);
 * `aud` Sigil's issuer alone; `client_id` the authenticated client (the client authenticates as
 * at every token request, and lists the grant in `allowedGrantTypes`); `exp` not past and at most
 * `MAX_ID_JAG_LIFETIME` seconds after `iat` and ahead of now, `iat` not in the future (clock skew
 * `ASSERTION_CLOCK_SKEW`); `jti` used once per issuer, remembered until `exp` (the replay cache,
 * recorded last, so a refused request uses up nothing).
 *
 * Who: the subject maps onto an existing local user, never a new one (`subjectMapping`): `link`
 * takes the user an upstream sign-in linked to (provider, `sub`) through every identity provider
 * whose `authority` is the issuer (links are kept per provider name; an issuer has no name of its
 * own, and its users have signed in here through such a provider, under the same `sub`); `email`
 * takes the one stored user whose verified primary address is the assertion's `email`, which must
 * carry `email_verified` true. No user, two users, or an inactive one: `invalid_grant`.
 *
 * What: nothing beyond the assertion. Its `scope` (RFC 6749 §3.3), narrowed by a `scope`
 * parameter (never widened: `invalid_scope`) and to what the client may have, without
 * `offline_access`: no refresh token and no identity token are issued. Its `resource` (RFC 8707)
 * becomes the access token's audience, narrowed by `resource` parameters; an unknown one is
 * `invalid_target`.
 */
import { decodeJwt, decodeProtectedHeader, errors as joseErrors, type JWTPayload, jwtVerify } from 'jose';
import { ASYMMETRIC_ASSERTION_ALGORITHMS, JWT_BEARER_GRANT, type TrustedIdentityIssuer } from '../config/schema.js';
import { ASSERTION_CLOCK_SKEW, MAX_ASSERTION_LENGTH } from '../clients/authentication.js';
import { nowSeconds } from '../crypto/handles.js';
import { invalidGrant, invalidScope } from '../protocol/errors.js';
import { CALLER_JSON_BOUNDS, jwsBoundsViolation } from '../protocol/json-bounds.js';
import { narrowResources, requestedResources, scopesForResources } from '../resources/resource-indicators.js';
import { allowedScopes, narrowScopes, OFFLINE_ACCESS, parseScope } from '../resources/scopes.js';
import { authorityOf, isOpenIdProvider } from '../federation/presets.js';
import { externalLinkKey } from '../stores/types.js';
import { claimsOf, type User } from '../users/users.js';
import { ID_JAG_TYP } from './id-jag-exchange.js';
import { bindingOf, type GrantHandler, type GrantServices } from './registry.js';
import { askPreToken } from './pre-token.js';

/** Longest lifetime (`exp` − `iat`) of an ID-JAG accepted, and how far ahead its `exp` may be, in seconds. */
export const MAX_ID_JAG_LIFETIME = 600;
/** Longest `sub` accepted (OIDC Core §2: at most 255 ASCII characters). */
const MAX_SUBJECT_LENGTH = 255;
/** Longest `jti` accepted. */
const MAX_JTI_LENGTH = 256;
/** Most `resource` values of an assertion. */
const MAX_ASSERTION_RESOURCES = 20;

/** The claims of a verified ID-JAG that the grant reads. */
interface IdJagClaims extends JWTPayload {
  iss: string;
  sub: string;
  jti: string;
  exp: number;
  iat: number;
  client_id?: unknown;
  scope?: unknown;
  resource?: unknown;
  email?: unknown;
  email_verified?: unknown;
  auth_time?: unknown;
  amr?: unknown;
}

/**
 * Handles `grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer` with an ID-JAG `assertion`.
 * @throws OAuthError `invalid_request` (missing or repeated `assertion`), `invalid_grant` (any
 *   check of the assertion, an unmapped or inactive user, a replay, a `preToken` hook's denial), `invalid_scope` (a `scope`
 *   beyond the assertion's, nothing left to grant), `invalid_target` (an unknown resource).
 */
export const jwtBearerGrant: GrantHandler = async (ctx, req) => {
  const { params, client } = req;
  const { claims, trusted } = await verifiedIdJag(ctx, params.require('assertion'), client.clientId);

  const user = await mappedUser(ctx, trusted, claims);
  if (!user?.isActive) throw invalidGrant('the assertion names no active user here');

  // The assertion's scope is the most that is granted; the parameter and the client narrow it.
  const asserted = typeof claims.scope === 'string' ? parseScope(claims.scope) : [];
  const requested = narrowScopes(params.get('scope'), asserted);
  const allowed = allowedScopes(client, ctx.resources, 'user');
  const granted = requested.filter((s) => s !== OFFLINE_ACCESS && allowed.includes(s));
  if (granted.length === 0) throw invalidScope("no scope of the assertion's can be granted to this client");
  const targets = narrowResources(
    requestedResources(params.getAll('resource'), client, ctx.resources),
    requestedResources(assertedResources(claims.resource), client, ctx.resources),
  );
  const scopes = scopesForResources(granted, targets, ctx.resources);

  const now = nowSeconds();
  const subject = {
    subjectId: user.subjectId,
    authTime: typeof claims.auth_time === 'number' ? claims.auth_time : now,
    amr: ['external'],
    idp: trusted.issuer,
    claims: claimsOf(user),
  };
  // Before the jti is recorded: a denial uses up nothing.
  const hookClaims = await askPreToken(ctx, client, subject, scopes, JWT_BEARER_GRANT);
  if (!(await ctx.replay.firstUse('id_jag', trusted.issuer, claims.jti, claims.exp + ASSERTION_CLOCK_SKEW, now)))
    throw invalidGrant('the assertion was used before (jti)');
  const response = await ctx.tokens.issue({
    client,
    scopes,
    subject,
    ...(hookClaims ? { hookClaims } : {}),
    refresh: { kind: 'none' },
    ...bindingOf(req),
    ...(targets ? { audiences: targets } : {}),
  });
  return { response, subjectId: user.subjectId };
};

/**
 * The verified claims of an ID-JAG for `clientId` at this server, and its trusted issuer.
 * @throws OAuthError `invalid_grant` for every check the module's docstring lists but the `jti`'s
 */
async function verifiedIdJag(
  ctx: Pick<GrantServices, 'clientKeys' | 'config' | 'issuer'>,
  assertion: string,
  clientId: string,
): Promise<{ claims: IdJagClaims; trusted: TrustedIdentityIssuer }> {
  if (assertion.length > MAX_ASSERTION_LENGTH || jwsBoundsViolation(assertion, CALLER_JSON_BOUNDS))
    throw invalidGrant('the assertion is too large');
  let typ: unknown;
  let iss: unknown;
  try {
    typ = decodeProtectedHeader(assertion).typ;
    iss = decodeJwt(assertion).iss;
  } catch {
    throw invalidGrant('the assertion is not a JWT');
  }
  if (typeof typ !== 'string' || typ.toLowerCase() !== ID_JAG_TYP)
    throw invalidGrant(`the assertion is not an ID-JAG (typ ${ID_JAG_TYP})`);
  if (iss === ctx.issuer) throw invalidGrant('an ID-JAG of this server is not redeemed here');
  const trusted = ctx.config.trustedIdentityIssuers.find((t) => t.issuer === iss);
  if (!trusted) throw invalidGrant("the assertion's issuer is not trusted here");
  let payload: JWTPayload;
  try {
    ({ payload } = await jwtVerify(assertion, ctx.clientKeys.forIssuer(trusted.jwksUri), {
      issuer: trusted.issuer,
      typ: ID_JAG_TYP,
      algorithms: [...ASYMMETRIC_ASSERTION_ALGORITHMS],
      requiredClaims: ['iss', 'sub', 'aud', 'exp', 'iat', 'jti', 'client_id'],
      clockTolerance: ASSERTION_CLOCK_SKEW,
    }));
  } catch (err) {
    throw invalidGrant(describeFailure(err));
  }
  const claims = payload as IdJagClaims;
  const aud = Array.isArray(claims.aud) && claims.aud.length === 1 ? claims.aud[0] : claims.aud;
  if (aud !== ctx.issuer) throw invalidGrant("the assertion's aud must be this server's issuer identifier");
  if (claims.client_id !== clientId) throw invalidGrant('the assertion was issued for another client');
  const now = nowSeconds();
  if (
    typeof claims.iat !== 'number' ||
    typeof claims.exp !== 'number' ||
    claims.iat > now + ASSERTION_CLOCK_SKEW ||
    claims.exp - claims.iat > MAX_ID_JAG_LIFETIME ||
    claims.exp > now + MAX_ID_JAG_LIFETIME + ASSERTION_CLOCK_SKEW
  )
    throw invalidGrant(`the assertion's lifetime is more than ${MAX_ID_JAG_LIFETIME} seconds or starts in the future`);
  if (typeof claims.sub !== 'string' || claims.sub === '' || claims.sub.length > MAX_SUBJECT_LENGTH)
    throw invalidGrant("the assertion's sub is missing or too long");
  if (typeof claims.jti !== 'string' || claims.jti === '' || claims.jti.length > MAX_JTI_LENGTH)
    throw invalidGrant("the assertion's jti is missing or too long");
  return { claims, trusted };
}

/** An `error_description` for a failed `jwtVerify` of an ID-JAG. */
function describeFailure(err: unknown): string {
  if (err instanceof joseErrors.JWTExpired) return 'the assertion has expired';
  if (err instanceof joseErrors.JWTClaimValidationFailed)
    return `the assertion's ${err.claim} claim is missing or wrong (${err.reason})`;
  if (err instanceof joseErrors.JOSEAlgNotAllowed) return "the assertion's algorithm is not allowed";
  if (err instanceof joseErrors.JWKSNoMatchingKey || err instanceof joseErrors.JWKSMultipleMatchingKeys)
    return "no key of the issuer's matches the assertion";
  if (err instanceof joseErrors.JWSSignatureVerificationFailed) return "the assertion's signature is wrong";
  if (err instanceof joseErrors.JWKSTimeout) return "the issuer's keys could not be fetched in time";
  if (err instanceof joseErrors.JOSEError) return 'the assertion could not be verified';
  // Not jose's own: a refused or failed fetch of the jwksUri (OutboundRefused), or a key jose cannot use.
  return "the issuer's keys could not be fetched or used";
}

/** The `resource` claim's values (a URI or an array of them, draft §"Identity Assertion JWT Authorization Grant"). */
function assertedResources(resource: unknown): string[] {
  if (resource === undefined) return [];
  const values = Array.isArray(resource) ? resource : [resource];
  if (values.length > MAX_ASSERTION_RESOURCES || values.some((v) => typeof v !== 'string'))
    throw invalidGrant("the assertion's resource is not a URI or a short array of URIs");
  return values as string[];
}

/**
 * The local user the assertion's subject maps onto under the issuer's `subjectMapping`, or
 * undefined when none or more than one does.
 * @throws OAuthError `invalid_grant` in `email` mode for an assertion without a verified `email`
 */
async function mappedUser(
  ctx: Pick<GrantServices, 'store' | 'upstream' | 'users'>,
  trusted: TrustedIdentityIssuer,
  claims: IdJagClaims,
): Promise<User | undefined> {
  const subjects = new Set<string>();
  if (trusted.subjectMapping === 'link') {
    for (const provider of ctx.upstream.all())
      if (isOpenIdProvider(provider) && authorityOf(provider) === trusted.issuer) {
        const linked = await ctx.store.users.findExternalLink(externalLinkKey(provider.name, claims.sub));
        if (linked !== undefined) subjects.add(linked);
      }
  } else {
    if (typeof claims.email !== 'string' || claims.email_verified !== true)
      throw invalidGrant('the assertion carries no verified email');
    for (const e of await ctx.store.emails.findByValue(claims.email))
      if (e.isPrimary && e.verified) subjects.add(e.subjectId);
  }
  const [only, ...more] = subjects;
  if (only === undefined || more.length > 0) return undefined;
  return ctx.users.findBySubject(only);
}
