/**
 * The config-file contract, as a zod schema. Field names are camelCase, protocol
 * values keep their wire spelling, every lifetime is in seconds. Unknown fields are refused, so a
 * typo stops the start with the field's path instead of being ignored.
 */
import { isIP } from 'node:net';
// A namespace import, as zod documents it: a bundler then keeps only the schema kinds used here,
// where `import { z }` keeps all of zod, its forty-odd locales included (dist/cli/main.js).
import * as z from 'zod';
import { LOOPBACK } from './hosts.js';
import { redirectUriProblem } from './redirect-uris.js';
import { userDirectories } from './user-directories.js';

const lifetime = z.number().int().positive();
/**
 * The profile claims a user may edit on /account/profile (config `account.editableClaims`): OIDC
 * Core §5.1 claims that describe the person and that no app should trust for access. Left out on
 * purpose: `sub`, `email`, `email_verified`, `phone_number(_verified)`, `preferred_username`
 * (apps may key on them), `role`, `tenant`, and URL claims (`picture`, `website`, `profile`).
 */
export const EDITABLE_CLAIMS = ['name', 'given_name', 'family_name', 'middle_name', 'nickname', 'gender', 'birthdate', 'zoneinfo', 'locale'] as const;

const nonEmpty = z.string().min(1);
/** A secret: clear text, or `sha256:<base64 of the 32-byte digest>` (checked here, not at start). */
const secret = nonEmpty.refine(
  (s) => !s.startsWith('sha256:') || Buffer.from(s.slice('sha256:'.length), 'base64').length === 32,
  'a "sha256:" secret must be the base64 of 32 bytes',
);

/** An absolute URL that is https, or http on a loopback host (development and tests). */
const httpsOrLoopback = z.url().refine((u) => {
  // Runs after a failed z.url() check too (its issue does not abort): an unparsable value is z.url()'s to report.
  if (!URL.canParse(u)) return true;
  const url = new URL(u);
  return url.protocol === 'https:' || (url.protocol === 'http:' && LOOPBACK.test(url.hostname));
}, 'must be https (http only for loopback hosts)');

/**
 * How a client authenticates at the back-channel endpoints (RFC 6749 §2.3.1; OIDC Core §9;
 * RFC 7523 §2.2).
 */
export const TOKEN_ENDPOINT_AUTH_METHODS = ['client_secret_basic', 'client_secret_post', 'client_secret_jwt', 'private_key_jwt', 'none'] as const;
export type TokenEndpointAuthMethod = (typeof TOKEN_ENDPOINT_AUTH_METHODS)[number];

/** Algorithms of `private_key_jwt` client assertions (JWA, RFC 7518 §3.1; EdDSA: RFC 8037). */
export const ASYMMETRIC_ASSERTION_ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA'] as const;
/** Algorithms of `client_secret_jwt` client assertions: HMAC over the client's clear-text secret. */
export const SYMMETRIC_ASSERTION_ALGORITHMS = ['HS256', 'HS384', 'HS512'] as const;
/** Every client assertion algorithm Sigil verifies (`none` is never one). */
export const ASSERTION_ALGORITHMS = [...ASYMMETRIC_ASSERTION_ALGORITHMS, ...SYMMETRIC_ASSERTION_ALGORITHMS] as const;

/**
 * Grant type names a client may list; any other name must be a registered extension
 * grant (checked by `resolveConfig`, which knows them).
 */
export const BUILT_IN_GRANT_TYPES = [
  'authorization_code',
  'refresh_token',
  'client_credentials',
  'password',
  'implicit',
  'hybrid',
  'urn:ietf:params:oauth:grant-type:device_code',
  'urn:ietf:params:oauth:grant-type:token-exchange',
] as const;

/** Algorithms Sigil can sign tokens with (JWA, RFC 7518 §3.1; EdDSA with Ed25519: RFC 8037). */
export const SIGNING_ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA'] as const;
export type SigningAlgorithm = (typeof SIGNING_ALGORITHMS)[number];
/**
 * Default `signingAlgorithms`: RS256 signs by default; ES256 serves FAPI 2.0 clients.
 * PS256 and EdDSA are available by listing them (one key each is generated on first start).
 */
export const DEFAULT_SIGNING_ALGORITHMS: SigningAlgorithm[] = ['RS256', 'ES256'];

/**
 * The signing algorithms of the FAPI 2.0 Security Profile (§5.4.1): what a `profile: "fapi2"`
 * client may sign its assertions, request objects and DPoP proofs with, and what Sigil signs its
 * tokens with (RS256 is not among them).
 */
export const FAPI2_ALGORITHMS = ['PS256', 'ES256', 'EdDSA'] as const;

/** Per-client security profiles (`profile`): `fapi2` is the FAPI 2.0 Security Profile (final), §5.3.2. */
export const CLIENT_PROFILES = ['fapi2'] as const;

/** Grant types a `fapi2` client may not have: only `response_type=code`, and no password grant (RFC 9700 §2.4). */
const FAPI2_REFUSED_GRANTS = ['implicit', 'hybrid', 'password'];
/** The longest authorization code lifetime of a `fapi2` client, in seconds (FAPI 2.0 SP §5.3.2.1). */
export const FAPI2_MAX_CODE_LIFETIME = 60;

/**
 * Sigil's own API: the built-in API resource `sigil` (the `aud` of its tokens) and its
 * scopes. `scim`: SCIM 2.0 users and groups at /scim/v2 (RFC 7644); `sigil:admin`: everything
 * under /admin/v1; `sigil:admin:read`: its GET requests; `sigil:register`: initial access tokens
 * for Dynamic Client Registration (RFC 7591 §3). Clients list them in `allowedScopes` like any API
 * scope; a token acting for a user carries them only for an `admin.userRole` user after MFA.
 */
export const MANAGEMENT_RESOURCE = 'sigil';
/** The scopes of `MANAGEMENT_RESOURCE`. */
export const MANAGEMENT_SCOPES = ['scim', 'sigil:admin', 'sigil:admin:read', 'sigil:register'] as const;

/** Whether a scope belongs to Sigil's management API (`MANAGEMENT_SCOPES`, or any `sigil:` name): never a dynamic client's. */
export function isManagementScope(scope: string): boolean {
  return scope.startsWith('sigil:') || (MANAGEMENT_SCOPES as readonly string[]).includes(scope);
}

/** One entry of `identityResources` (also a stored identity resource, /admin/v1/identity-resources). */
export const identityResource = z.strictObject({
  name: nonEmpty.meta({ description: "The scope name" }),
  displayName: z.string().max(200).optional().meta({ description: "Shown on the consent page instead of the scope name" }),
  description: z.string().max(500).optional().meta({ description: "Shown on the consent page under the display name" }),
  userClaims: z.array(nonEmpty).default([]).meta({ description: "User claims the scope releases" }),
  required: z.boolean().default(false).meta({ description: "Always granted when requested (not optional on the consent page)" }),
});

/** One entry of `apiScopes` (also a stored API scope, /admin/v1/api-scopes). */
export const apiScope = z.strictObject({
  name: nonEmpty.meta({ description: "The scope name" }),
  displayName: z.string().max(200).optional().meta({ description: "Shown on the consent page instead of \"Use <name>\"" }),
  description: z.string().max(500).optional().meta({ description: "Shown on the consent page under the display name" }),
  userClaims: z.array(nonEmpty).default([]).meta({ description: "User claims that go into access tokens carrying this scope" }),
});

/** One entry of `apiResources` (also a stored API resource, /admin/v1/api-resources). */
export const apiResource = z.strictObject({
  name: nonEmpty.meta({ description: "The API's name: the aud of access tokens for its scopes" }),
  scopes: z.array(nonEmpty).default([]).meta({ description: "Names of the apiScopes that belong to this API" }),
  secrets: z.array(secret).default([]).meta({ description: "Secrets the API authenticates with at introspection: clear text or sha256:<base64>", spec: "RFC 7662 §2.1" }),
  userClaims: z.array(nonEmpty).default([]).meta({ description: "User claims that go into access tokens for this API" }),
  resourceUris: z.array(nonEmpty.max(512)).default([]).meta({ description: "Resource indicators that name this API: absolute URIs without fragment, at most 512 characters, each owned by one API; a resource parameter naming one narrows the token's aud and scopes to this API", spec: "RFC 8707 §2" }),
});

/** An absolute https URL without fragment, or http on a loopback host. */
function isLogoutUri(u: string): boolean {
  if (!URL.canParse(u)) return false;
  const url = new URL(u);
  return url.hash === '' && (url.protocol === 'https:' || (url.protocol === 'http:' && LOOPBACK.test(url.hostname)));
}
const LOGOUT_URI_RULE = 'must be an https URL without fragment (http only for loopback hosts)';
/** A client's page for people (OpenID Connect Dynamic Client Registration 1.0 §2): the same rule as logout URIs. */
const clientPageUri = nonEmpty.max(2048).refine(isLogoutUri, LOGOUT_URI_RULE);

/** The client settings the `fapi2` profile constrains, as written (unset: undefined). */
interface ProfiledSettings {
  profile: 'fapi2' | null;
  requireClientSecret: boolean;
  allowedGrantTypes: string[];
  requirePkce: boolean;
  allowPlainTextPkce: boolean;
  allowAccessTokensViaBrowser: boolean;
  authorizationCodeLifetime?: number | undefined;
  tokenEndpointAuthMethod?: TokenEndpointAuthMethod | null | undefined;
  tokenEndpointAuthSigningAlgorithms?: (typeof ASSERTION_ALGORITHMS)[number][] | undefined;
  requirePushedAuthorizationRequests?: boolean | undefined;
  requireDPoP?: boolean | undefined;
}

/**
 * The settings of a `profile: "fapi2"` client that the FAPI 2.0 Security Profile (final) forbids,
 * each as [field, why]. Settings the profile requires and the client leaves unset are implied
 * (`withProfileDefaults`); only explicit contradictions are refused: a public client (§5.3.2.1:
 * confidential clients only), `implicit`/`hybrid` (§5.3.2.2: `response_type=code` only) or
 * `password` grants (RFC 9700 §2.4), PKCE off or plain (§5.3.2.2: S256), access tokens from the
 * authorization endpoint, a code lifetime over 60 s (§5.3.2.1), an authentication method other
 * than `private_key_jwt` (§5.3.2.1; mTLS comes in a later step), assertion algorithms outside
 * PS256/ES256/EdDSA (§5.4.1), PAR or DPoP switched off (§5.3.2.2, §5.3.2.1: sender-constrained tokens).
 * @returns the contradictions, empty for a conforming (or non-`fapi2`) client.
 */
export function fapi2Contradictions(c: ProfiledSettings): [string, string][] {
  if (c.profile !== 'fapi2') return [];
  const out: [string, string][] = [];
  const why = (field: string, message: string) => out.push([field, `profile "fapi2": ${message}`]);
  if (!c.requireClientSecret) why('requireClientSecret', 'FAPI 2.0 allows confidential clients only');
  const refused = c.allowedGrantTypes.filter((g) => FAPI2_REFUSED_GRANTS.includes(g));
  if (refused.length > 0) why('allowedGrantTypes', `${refused.map((g) => `"${g}"`).join(', ')} not allowed (response_type=code only, no password grant)`);
  if (!c.requirePkce) why('requirePkce', 'PKCE is required');
  if (c.allowPlainTextPkce) why('allowPlainTextPkce', 'PKCE must use S256');
  if (c.allowAccessTokensViaBrowser) why('allowAccessTokensViaBrowser', 'access tokens come from the token endpoint only');
  if (c.authorizationCodeLifetime !== undefined && c.authorizationCodeLifetime > FAPI2_MAX_CODE_LIFETIME)
    why('authorizationCodeLifetime', `authorization codes live at most ${FAPI2_MAX_CODE_LIFETIME} seconds`);
  if (c.tokenEndpointAuthMethod != null && c.tokenEndpointAuthMethod !== 'private_key_jwt')
    why('tokenEndpointAuthMethod', 'the client must authenticate with private_key_jwt');
  const algs = (c.tokenEndpointAuthSigningAlgorithms ?? []).filter((a) => !(FAPI2_ALGORITHMS as readonly string[]).includes(a));
  if (algs.length > 0) why('tokenEndpointAuthSigningAlgorithms', `${algs.join(', ')} not allowed (PS256, ES256, EdDSA only)`);
  if (c.requirePushedAuthorizationRequests === false) why('requirePushedAuthorizationRequests', 'authorization requests must be pushed (PAR)');
  if (c.requireDPoP === false) why('requireDPoP', 'tokens must be sender-constrained (DPoP)');
  return out;
}

/**
 * Fills the settings a client left unset: the profile's values for a `fapi2` client (see
 * `clientSchema.profile`), the general defaults otherwise.
 */
function withProfileDefaults<T extends ProfiledSettings>(c: T) {
  const fapi2 = c.profile === 'fapi2';
  return {
    ...c,
    authorizationCodeLifetime: c.authorizationCodeLifetime ?? (fapi2 ? FAPI2_MAX_CODE_LIFETIME : 300),
    tokenEndpointAuthMethod: c.tokenEndpointAuthMethod ?? (fapi2 ? ('private_key_jwt' as const) : null),
    tokenEndpointAuthSigningAlgorithms: c.tokenEndpointAuthSigningAlgorithms ?? [...(fapi2 ? FAPI2_ALGORITHMS : ASSERTION_ALGORITHMS)],
    requirePushedAuthorizationRequests: c.requirePushedAuthorizationRequests ?? fapi2,
    requireDPoP: c.requireDPoP ?? fapi2,
  };
}

/** One client of the config; also the shape of clients kept in the store (`sigil clients add`). */
export const clientSchema = z.strictObject({
  clientId: nonEmpty.max(100).meta({ description: "The client identifier; at most 100 characters; never a user's subjectId", spec: "RFC 6749 §2.2; RFC 9068 §5" }),
  clientName: z.string().optional().meta({ description: "Shown on the login and consent pages" }),
  logoUri: clientPageUri.optional().meta({ description: "The client's logo, shown on the consent page (its origin is allowed as an image source there)", spec: "OIDC Dynamic Client Registration §2 logo_uri" }),
  clientUri: clientPageUri.optional().meta({ description: "The client's home page: linked from the consent page and the way back on error pages", spec: "OIDC Dynamic Client Registration §2 client_uri" }),
  policyUri: clientPageUri.optional().meta({ description: "The client's privacy policy, linked from the consent page", spec: "OIDC Dynamic Client Registration §2 policy_uri" }),
  tosUri: clientPageUri.optional().meta({ description: "The client's terms of service, linked from the consent page", spec: "OIDC Dynamic Client Registration §2 tos_uri" }),
  enabled: z.boolean().default(true).meta({ description: "A disabled client is unknown" }),
  clientSecrets: z.array(secret).default([]).meta({ description: "Clear text, or sha256:<base64 of the SHA-256 digest>; compared in constant time", spec: "RFC 6749 §2.3.1" }),
  requireClientSecret: z.boolean().default(true).meta({ description: "false makes a public client, identified by client_id alone", spec: "RFC 6749 §2.1" }),
  allowedGrantTypes: z.array(nonEmpty).min(1).meta({ description: "client_credentials, password, authorization_code, refresh_token, implicit, hybrid, the device code and token exchange URNs, or a registered extension grant's name; any other name stops the start", spec: "RFC 6749 §4; RFC 8628; RFC 8693" }),
  allowedScopes: z.array(nonEmpty).default([]).meta({ description: "Identity and API scope names; scope omitted at the token endpoint means all that the grant can carry", spec: "RFC 6749 §3.3" }),
  redirectUris: z.array(nonEmpty).default([]).meta({ description: "Where codes and tokens are sent, matched string for string (a registered loopback IP URI matches any port): absolute, no fragment, no * (no wildcards), no user info, no white space; https, http only on a loopback host (127.0.0.0/8, [::1], localhost; any host with allowHttpRedirectUris), or a private-use scheme in reverse domain name form (com.example.app:/callback); never javascript:, data:, vbscript:, file: and the like", spec: "RFC 6749 §3.1.2; RFC 8252 §7.1, §7.3; RFC 9700 §4.1.3" }),
  postLogoutRedirectUris: z.array(nonEmpty).default([]).meta({ description: "Where end session may send the browser back, matched string for string; the same rule as redirectUris", spec: "OIDC RP-Initiated Logout §3" }),
  allowHttpRedirectUris: z.boolean().default(false).meta({ description: "Development only: redirectUris and postLogoutRedirectUris may use plain http on any host (http on a loopback host is always allowed); never in production, where codes and tokens would cross the network in clear text. Dynamic registration never sets it", spec: "RFC 6749 §3.1.2.1" }),
  requirePkce: z.boolean().default(true).meta({ description: "PKCE at the authorize endpoint", spec: "RFC 7636" }),
  allowPlainTextPkce: z.boolean().default(false).meta({ description: "Accept code_challenge_method=plain (S256 otherwise)", spec: "RFC 7636 §4.2" }),
  allowOfflineAccess: z.boolean().default(false).meta({ description: "Refresh tokens through the offline_access scope", spec: "OIDC Core §11" }),
  accessTokenType: z.enum(['jwt', 'reference']).default('jwt').meta({ description: "jwt (RFC 9068) or reference (opaque, stored hashed, checked by introspection)", spec: "RFC 9068; RFC 7662" }),
  accessTokenLifetime: lifetime.default(3600).meta({ description: "Lifetime of access tokens, seconds" }),
  identityTokenLifetime: lifetime.default(300).meta({ description: "Lifetime of identity tokens, seconds", spec: "OIDC Core §2" }),
  authorizationCodeLifetime: lifetime.max(600).optional().meta({ description: "Lifetime of authorization codes, seconds; default 300, or 60 for a fapi2 client (at most 60 there)", spec: "RFC 6749 §4.1.2; FAPI 2.0 SP §5.3.2.1" }),
  refreshTokenUsage: z.enum(['oneTime', 'reuse']).default('oneTime').meta({ description: "oneTime: rotation, and reusing a used token revokes the grant; reuse: the same token again. Public clients must rotate", spec: "RFC 9700 §4.14.2" }),
  refreshTokenExpiration: z.enum(['absolute', 'sliding']).default('absolute').meta({ description: "absolute, or sliding (each use extends the token by slidingRefreshTokenLifetime)" }),
  absoluteRefreshTokenLifetime: lifetime.default(2592000).meta({ description: "The longest a refresh token lives, seconds" }),
  slidingRefreshTokenLifetime: lifetime.default(1296000).meta({ description: "With sliding expiration, how much each use extends the token, seconds, never past the absolute lifetime" }),
  deviceCodeLifetime: lifetime.default(300).meta({ description: "Lifetime of device codes, seconds", spec: "RFC 8628 §3.2" }),
  pollingInterval: lifetime.default(5).meta({ description: "How often a device may poll the token endpoint, seconds", spec: "RFC 8628 §3.5" }),
  requireConsent: z.boolean().default(false).meta({ description: "Show the consent page before issuing", spec: "OIDC Core §3.1.2.4" }),
  identityProviderRestrictions: z.array(nonEmpty).default([]).meta({ description: "Upstream provider names allowed in acr_values=idp:<name>; empty allows all" }),
  enableLocalLogin: z.boolean().default(true).meta({ description: "The login form; false: upstream providers only" }),
  allowAccessTokensViaBrowser: z.boolean().default(false).meta({ description: "Access tokens from the authorization endpoint (implicit and hybrid response types)", spec: "OIDC Core §3.2" }),
  requestUris: z.array(z.url({ protocol: /^https$/ })).default([]).meta({ description: "https URLs this client may pass as request_uri (signed request objects by reference)", spec: "OIDC Core §6.2" }),
  jwks: z.object({ keys: z.array(z.record(z.string(), z.unknown())).meta({ description: 'The JWKs', spec: 'RFC 7517 §5' }) }).nullable().default(null).meta({ description: "The client's public keys as a JWKS ({\"keys\":[…]}), to verify its private_key_jwt assertions and signed request objects; public keys only", spec: "RFC 7517 §5; RFC 7523" }),
  jwksUri: httpsOrLoopback.nullable().default(null).meta({ description: "Or where the client serves its public keys: https (http only on a loopback host); fetched with a 5 s timeout and a 64 KB limit, cached 10 minutes, fetched again for an unknown kid at most once a minute. Not together with jwks", spec: "RFC 7591 §2" }),
  tokenEndpointAuthMethod: z.enum(TOKEN_ENDPOINT_AUTH_METHODS).nullable().optional().meta({ description: "The one method the client must authenticate with at the back-channel endpoints; null: any it has credentials for (fapi2: private_key_jwt)", spec: "RFC 7591 §2; OIDC Core §9" }),
  tokenEndpointAuthSigningAlgorithms: z.array(z.enum(ASSERTION_ALGORITHMS)).min(1).optional().meta({ description: "Algorithms accepted in this client's assertions; default all (fapi2: PS256, ES256, EdDSA); none is never accepted", spec: "RFC 7523 §3" }),
  requirePushedAuthorizationRequests: z.boolean().optional().meta({ description: "This client's authorization requests must come through /connect/par. Default false (fapi2: true)", spec: "RFC 9126 §5" }),
  requireDPoP: z.boolean().optional().meta({ description: "Every token request must carry a DPoP proof, so all its tokens are bound to a key it holds. Default false (fapi2: true)", spec: "RFC 9449 §5" }),
  profile: z.enum(CLIENT_PROFILES).nullable().default(null).meta({ description: "fapi2: the FAPI 2.0 Security Profile is enforced for this client; it implies private_key_jwt, PAR, DPoP and a 60 s code lifetime, and a contradicting setting stops the start", spec: "FAPI 2.0 SP §5.3.2, §5.4" }),
  tokenExchangeSubjectAudiences: z.array(nonEmpty).default([]).meta({ description: "API resource names whose users' access tokens this client may exchange, acting as that API; empty: only tokens issued to this client", spec: "RFC 8693 §2.1" }),
  requireMfa: z.boolean().optional().meta({ description: "A second factor (or a passkey) at every sign-in to this client; absent: the global mfa.required" }),
  allowPasswordGrantForMfaUsers: z.boolean().default(false).meta({ description: "The password grant may sign in users who have a second factor with the password alone; otherwise invalid_grant", spec: "RFC 9700 §2.4" }),
  backChannelLogoutUri: z.string().refine(isLogoutUri, LOGOUT_URI_RULE).nullable().default(null).meta({ description: "Where logout tokens are POSTed: https, or http on a loopback host; no fragment", spec: "OIDC Back-Channel Logout §2.2" }),
  backChannelLogoutSessionRequired: z.boolean().default(true).meta({ description: "The client needs sid in logout tokens (Sigil always sends it)", spec: "OIDC Back-Channel Logout §2.2" }),
  frontChannelLogoutUri: z.string().refine(isLogoutUri, LOGOUT_URI_RULE).nullable().default(null).meta({ description: "Loaded in a hidden iframe of the signed-out page with iss and sid: https, or http on a loopback host; no fragment", spec: "OIDC Front-Channel Logout §2" }),
  frontChannelLogoutSessionRequired: z.boolean().default(true).meta({ description: "The client needs iss and sid on its front-channel URI (Sigil always adds them)", spec: "OIDC Front-Channel Logout §2" }),
  allowedCorsOrigins: z.array(z.url()).default([]).meta({ description: "scheme://host[:port] origins allowed to call discovery, JWKS, token, userinfo and revocation from a browser" }),
  registeredDynamically: z.boolean().default(false).meta({ description: "Set by dynamic registration: whoever registered chose this client's URLs, so its jwksUri, requestUris and backChannelLogoutUri are fetched under the SSRF guard (no private, loopback or link-local addresses unless clientIdMetadataDocuments.allowLoopback)", spec: "RFC 7591 §5" }),
})
  .superRefine((c, ctx) => {
    for (const [path, message] of fapi2Contradictions(c)) ctx.addIssue({ code: 'custom', path: [path], message });
    // The one redirect URI rule of every path a client comes by (src/config/redirect-uris.ts).
    const allowance = { privateUseSchemes: true, httpOnAnyHost: c.allowHttpRedirectUris };
    for (const field of ['redirectUris', 'postLogoutRedirectUris'] as const)
      c[field].forEach((u, j) => {
        const why = redirectUriProblem(u, allowance);
        if (why !== undefined) ctx.addIssue({ code: 'custom', path: [field, j], message: why });
      });
  })
  .transform(withProfileDefaults)
  .superRefine((c, ctx) => {
  const issue = (path: string, message: string) => ctx.addIssue({ code: 'custom', path: [path], message });
  const isPublic = !c.requireClientSecret;
  const method = c.tokenEndpointAuthMethod;
  const digests = c.clientSecrets.some((s) => s.startsWith('sha256:'));
  if (c.jwks !== null && c.jwksUri !== null) issue('jwksUri', 'give either jwks or jwksUri, not both');
  // Private key members (RFC 7518 §6.2.2, §6.3.2, §6.4.1): the provider must never hold the client's signing key.
  if (c.jwks?.keys.some((k) => ['d', 'p', 'q', 'dp', 'dq', 'qi', 'k'].some((m) => m in k)))
    issue('jwks', 'must hold public keys only (a key has private or symmetric members)');
  if (method === 'none' && !isPublic) issue('tokenEndpointAuthMethod', '"none" is for public clients (requireClientSecret false)');
  if (method !== null && method !== 'none' && isPublic)
    issue('tokenEndpointAuthMethod', `a public client (requireClientSecret false) cannot use "${method}"`);
  if ((method === 'client_secret_basic' || method === 'client_secret_post' || method === 'client_secret_jwt') && c.clientSecrets.length === 0)
    issue('clientSecrets', `"${method}" needs a client secret`);
  // RFC 7523 §2.2 with HMAC (OIDC Core §9): the secret itself is the key, a digest cannot sign.
  if (method === 'client_secret_jwt' && digests)
    issue('clientSecrets', 'client_secret_jwt needs clear-text secrets: a "sha256:" secret cannot verify an HS256 assertion');
  if (method === 'private_key_jwt' && c.jwks === null && c.jwksUri === null)
    issue('tokenEndpointAuthMethod', 'private_key_jwt needs the client\'s public keys (jwks or jwksUri)');
  const algs = c.tokenEndpointAuthSigningAlgorithms as readonly string[];
  if (method === 'private_key_jwt' && !algs.some((a) => (ASYMMETRIC_ASSERTION_ALGORITHMS as readonly string[]).includes(a)))
    issue('tokenEndpointAuthSigningAlgorithms', 'private_key_jwt needs an asymmetric algorithm');
  if (method === 'client_secret_jwt' && !algs.some((a) => (SYMMETRIC_ASSERTION_ALGORITHMS as readonly string[]).includes(a)))
    issue('tokenEndpointAuthSigningAlgorithms', 'client_secret_jwt needs an HS algorithm');
});

const jsonValue: z.ZodType<unknown> = z.unknown();

/**
 * The longest username, characters: of the config file's users, the stored ones (`UserAdmin`),
 * and the bound every sign-in door (login page, password grant, user directories) applies before
 * it looks a name up.
 */
export const MAX_USERNAME_LENGTH = 100;
/** The longest subject (`sub`), characters (OIDC Core §2: at most 255 ASCII characters). */
export const MAX_SUBJECT_LENGTH = 255;

const user = z
  .strictObject({
    subjectId: nonEmpty.max(MAX_SUBJECT_LENGTH).meta({ description: "The user's stable identifier (sub); never a client id", spec: "OIDC Core §2; RFC 9068 §5" }),
    username: nonEmpty.max(MAX_USERNAME_LENGTH).meta({ description: "The sign-in name, unique per tenant (case-insensitive)" }),
    password: z.string().optional().meta({ description: "A clear-text password, hashed with argon2id at start and not kept" }),
    passwordHash: z.string().startsWith('$argon2').optional().meta({ description: "An argon2id hash ($argon2id$...) instead of password" }),
    tenant: nonEmpty.optional().meta({ description: "The tenant the user belongs to (acr_values=tenant:<name>)" }),
    isActive: z.boolean().default(true).meta({ description: "An inactive user cannot sign in" }),
    claims: z.record(z.string(), jsonValue).default({}).meta({ description: "User claims by name; a claim given as an array stays an array", spec: "OIDC Core §5.1" }),
  })
  .refine((u) => !(u.password !== undefined && u.passwordHash !== undefined), {
    message: 'give either password or passwordHash, not both',
  });

/** One entry of `identityProviders` (also a stored upstream provider, /admin/v1/identity-providers). */
export const identityProvider = z.strictObject({
  name: nonEmpty.regex(/^[A-Za-z0-9_-]+$/, 'letters, digits, - and _ only').meta({ description: "The name in acr_values=idp:<name> and in the login page's button: letters, digits, - and _" }),
  displayName: z.string().optional().meta({ description: "Shown on the login page" }),
  type: z.literal('oidc').default('oidc').meta({ description: "The provider kind; oidc only" }),
  authority: httpsOrLoopback.meta({ description: "The upstream issuer: https (http only on a loopback host)", spec: "OIDC Discovery §4" }),
  clientId: nonEmpty.meta({ description: "Sigil's client id at the upstream provider" }),
  clientSecret: z.string().optional().meta({ description: "Sigil's client secret at the upstream provider (best given as { \"$env\": ... } or { \"$file\": ... })" }),
  scope: z.string().default('openid profile').meta({ description: "The scopes asked of the upstream provider" }),
  claimMapping: z.record(z.string(), z.string()).optional().meta({ description: "Local claim name → upstream claim name; default maps name, given_name, family_name, email" }),
});

/** An upstream OpenID Connect provider (federation, `acr_values=idp:<name>`). */
export type IdentityProviderConfig = z.output<typeof identityProvider>;

const rateLimits = z
  .strictObject({
    maxFailures: z.number().int().positive().default(20).meta({ description: "Failed checks tolerated per identity and address in one window; then that address gets 429 for that identity" }),
    windowSeconds: lifetime.default(60).meta({ description: "The counting window, seconds" }),
    addressMaxFailures: z.number().int().positive().optional().meta({ description: "Failed checks per address in one window, whatever the identity; then 429. Default 5 × maxFailures" }),
    identitySlowDownAfter: z.number().int().positive().optional().meta({ description: "Failed checks per identity in one window from all addresses before every check for it waits (100 ms, doubling per further failure); never a refusal. Default 5 × maxFailures" }),
    maxDelaySeconds: z.number().int().min(0).max(60).default(5).meta({ description: "The longest such wait, seconds" }),
  })
  .transform((r) => ({
    ...r,
    addressMaxFailures: r.addressMaxFailures ?? 5 * r.maxFailures,
    identitySlowDownAfter: r.identitySlowDownAfter ?? 5 * r.maxFailures,
  }));

/** Proxy names that proxy-addr (Fastify's `trustProxy`) understands as address ranges. */
const PROXY_RANGE_NAMES = new Set(['loopback', 'linklocal', 'uniquelocal']);

/** Whether `s` is an IP address, a CIDR range (`10.0.0.0/8`, `fd00::/8`) or a range name of proxy-addr. */
function isProxyAddress(s: string): boolean {
  if (PROXY_RANGE_NAMES.has(s)) return true;
  const [ip, bits, ...rest] = s.split('/');
  const version = isIP(ip ?? '');
  if (version === 0 || rest.length > 0) return false;
  if (bits === undefined) return true;
  return /^\d{1,3}$/.test(bits) && Number(bits) <= (version === 4 ? 32 : 128);
}

/**
 * `trustProxy`: whom to believe about the caller's address (`X-Forwarded-For`). `false` (nobody),
 * the proxies' addresses or CIDR ranges (a string, comma-separated, or an array), or the number of
 * proxy hops in front of Sigil. `true` is refused: it takes the left-most `X-Forwarded-For`
 * entry, which the caller writes, as the address, so callers would escape every per-address limit.
 * Output: `false`, a hop count, or a list of addresses and ranges (as Fastify's `trustProxy` takes).
 */
const trustProxy = z
  .union([z.boolean(), z.number().int().min(0).max(10), z.string(), z.array(z.string()).min(1)])
  .transform((v, ctx): false | number | string[] => {
    if (v === true) {
      ctx.addIssue({
        code: 'custom',
        message:
          "true is not allowed: the left-most X-Forwarded-For address is written by the caller, so callers could choose their own address and escape every per-address limit; name the proxies' addresses or CIDR ranges, or give the number of proxy hops",
      });
      return z.NEVER;
    }
    if (v === false || typeof v === 'number') return v;
    const list = typeof v === 'string' ? v.split(',').map((p) => p.trim()) : v;
    list.forEach((p, i) => {
      if (!isProxyAddress(p))
        ctx.addIssue({
          code: 'custom',
          ...(Array.isArray(v) ? { path: [i] } : {}),
          message: `"${p.slice(0, 60)}" is not an IP address, a CIDR range (address/bits), or one of loopback, linklocal, uniquelocal`,
        });
    });
    return list;
  });

/**
 * Limits on what callers who have not authenticated can make Sigil store (OWASP API4:2023): each
 * counts stored requests per key in a fixed window of `windowSeconds`, so the live rows per key
 * stay under twice the limit while their lifetime is at most one window.
 */
const pendingLimits = z.strictObject({
  windowSeconds: lifetime.default(600).meta({ description: "The counting window, seconds (the lifetime of a pending interaction)" }),
  interactionsPerBrowser: z.number().int().positive().default(30).meta({ description: "Pending authorization requests (waiting for login or consent) one browser may start per window" }),
  interactionsPerAddress: z.number().int().positive().default(300).meta({ description: "Pending authorization requests one address (an IPv6 /64) may start per window" }),
  deviceAuthorizationsPerAddress: z.number().int().positive().default(30).meta({ description: "Device authorizations one address (an IPv6 /64) may start per window", spec: "RFC 8628 §3.1" }),
  deviceAuthorizationsPerClient: z.number().int().positive().default(1000).meta({ description: "Device authorizations one client may start per window, from all addresses together", spec: "RFC 8628 §3.1" }),
  dpopProofsPerAddress: z.number().int().positive().default(600).meta({ description: "DPoP proofs of public clients one address (an IPv6 /64) may send to the token endpoint per window (each proof's jti is a stored row)", spec: "RFC 9449 §11.1" }),
});

/** Default `pendingLimits`. */
export const PENDING_LIMITS_DEFAULTS = {
  windowSeconds: 600,
  interactionsPerBrowser: 30,
  interactionsPerAddress: 300,
  deviceAuthorizationsPerAddress: 30,
  deviceAuthorizationsPerClient: 1000,
  dpopProofsPerAddress: 600,
};

/** Default `dpop` settings. */
export const DPOP_DEFAULTS = { proofWindowSeconds: 300, requireNonce: false, nonceLifetimeSeconds: 300 };

/**
 * DPoP (RFC 9449) at the token endpoint and userinfo: how far a proof's `iat` may be from the
 * server's clock, and server-provided nonces (§8).
 */
const dpop = z
  .strictObject({
    proofWindowSeconds: z.number().int().min(1).max(3600).default(DPOP_DEFAULTS.proofWindowSeconds).meta({ description: "Seconds a proof's iat may lie before or after now; its jti is kept this long", spec: "RFC 9449 §11.1" }),
    requireNonce: z.boolean().default(DPOP_DEFAULTS.requireNonce).meta({ description: "Token requests must carry a nonce this server issued (use_dpop_nonce, DPoP-Nonce)", spec: "RFC 9449 §8" }),
    nonceLifetimeSeconds: z.number().int().min(2).max(86400).default(DPOP_DEFAULTS.nonceLifetimeSeconds).meta({ description: "Seconds a server nonce is accepted; a fresh one is handed out after half of it", spec: "RFC 9449 §8" }),
  })
  .default(DPOP_DEFAULTS)
  .meta({ description: 'DPoP at the token endpoint and userinfo: the proof window and server nonces', spec: 'RFC 9449' });

/** Grant types a dynamically registered client may be given (never password or token exchange). */
export const DYNAMIC_GRANT_TYPES = ['authorization_code', 'refresh_token', 'client_credentials'] as const;
/** Token endpoint methods a dynamically registered client may use: no client_secret_jwt, its secret is kept as a digest only. */
export const DYNAMIC_AUTH_METHODS = ['client_secret_basic', 'client_secret_post', 'private_key_jwt', 'none'] as const;
/** Default `registration` settings. */
export const REGISTRATION_DEFAULTS = {
  enabled: false,
  open: false,
  allowedGrantTypes: ['authorization_code', 'refresh_token'] as (typeof DYNAMIC_GRANT_TYPES)[number][],
  allowedTokenEndpointAuthMethods: [...DYNAMIC_AUTH_METHODS],
  registrationsPerAccessToken: 10,
  registrationsPerAddress: 20,
  windowSeconds: 3600,
  unusedClientDays: 90,
};

/**
 * Dynamic Client Registration (RFC 7591) and its management (RFC 7592) at /connect/register:
 * off unless `enabled`; without `open` every registration needs an initial access token.
 */
const registration = z
  .strictObject({
    enabled: z.boolean().default(REGISTRATION_DEFAULTS.enabled).meta({ description: "Serve /connect/register and advertise registration_endpoint", spec: "RFC 7591 §3; RFC 8414 §2" }),
    open: z.boolean().default(REGISTRATION_DEFAULTS.open).meta({ description: "Anyone may register a client without an initial access token (still bound by the policies and registrationsPerAddress)", spec: "RFC 7591 §3" }),
    allowedGrantTypes: z.array(z.enum(DYNAMIC_GRANT_TYPES)).min(1).default(REGISTRATION_DEFAULTS.allowedGrantTypes).meta({ description: "Grant types a dynamic client may register: authorization_code, refresh_token, client_credentials (password and token exchange never)", spec: "RFC 7591 §2" }),
    allowedScopes: z.array(nonEmpty).optional().meta({ description: "Scopes a dynamic client may register; default every identity scope (those of the config file and those created through /admin/v1) and offline_access; sigil:* scopes never", spec: "RFC 7591 §2" }),
    allowedTokenEndpointAuthMethods: z.array(z.enum(DYNAMIC_AUTH_METHODS)).min(1).default(REGISTRATION_DEFAULTS.allowedTokenEndpointAuthMethods).meta({ description: "token_endpoint_auth_method values a dynamic client may register", spec: "RFC 7591 §2" }),
    registrationsPerAccessToken: z.number().int().positive().default(REGISTRATION_DEFAULTS.registrationsPerAccessToken).meta({ description: "Registrations one access token with the sigil:register scope may make (tokens of sigil clients initial-token carry their own cap)" }),
    registrationsPerAddress: z.number().int().positive().default(REGISTRATION_DEFAULTS.registrationsPerAddress).meta({ description: "Registrations one address (an IPv6 /64) may make per windowSeconds, with or without an initial access token" }),
    windowSeconds: lifetime.default(REGISTRATION_DEFAULTS.windowSeconds).meta({ description: "The window of registrationsPerAddress, seconds" }),
    unusedClientDays: z.number().int().min(0).default(REGISTRATION_DEFAULTS.unusedClientDays).meta({ description: "A dynamic client neither used nor managed for this many days is removed; 0 keeps them" }),
  })
  .default(REGISTRATION_DEFAULTS)
  .meta({ description: 'Dynamic client registration and management', spec: 'RFC 7591; RFC 7592' });

/** Where the management listener serves `/metrics`; port 0 = any free port. */
export const DEFAULT_METRICS = { host: '127.0.0.1', port: 9464 } as const;

/**
 * `metrics`: the management listener's address and port (loopback by default, never the public
 * listener), or `false` for no metrics at all.
 */
const metrics = z
  .union([
    z.literal(false),
    z.strictObject({
      host: nonEmpty.default(DEFAULT_METRICS.host).meta({ description: "The management listener's address; never one the public can reach" }),
      port: z.number().int().min(0).max(65535).default(DEFAULT_METRICS.port).meta({ description: "The management listener's port; 0 takes any free port (printed at start). --metrics-port and SIGIL_METRICS_PORT override it" }),
    }),
  ])
  .default({ ...DEFAULT_METRICS })
  .meta({ description: 'The management listener serving /metrics (Prometheus text), never the public listener; false turns metrics off' });

/**
 * Why a client id may not equal a user's subject (RFC 9068 §5): the client's own tokens
 * (client_credentials) carry `sub` = `client_id`, and a resource server would take them for the
 * user's. `user` names the user (`users[2]`, `stored user "bob"`).
 */
export function clientSubjectCollision(clientId: string, user: string): string {
  return `clientId "${clientId}" is the subjectId of ${user}: the client's own tokens carry sub = client_id and would name that user (RFC 9068 §5)`;
}

/**
 * Whether `value` may be a resource indicator (RFC 8707 §2): an absolute URI (a scheme and what
 * follows) without a fragment.
 */
export function isResourceIndicator(value: string): boolean {
  return /^[A-Za-z][A-Za-z0-9+.-]*:\S+$/.test(value) && URL.canParse(value) && !value.includes('#');
}

/** A CSS colour as `#rgb` or `#rrggbb`: nothing else, so the value cannot end the declaration it is put in. */
export const CSS_HEX_COLOUR = /^#(?:[0-9a-fA-F]{3}|[0-9a-fA-F]{6})$/;
/** An image of the pages: an https URL (its origin joins the pages' CSP img-src), or a file Sigil reads at start and serves itself. */
const brandImage = nonEmpty.max(2048).refine((v) => !/^[A-Za-z][A-Za-z0-9+.-]*:/.test(v) || (URL.canParse(v) && new URL(v).protocol === 'https:' && !v.includes('#')), 'must be an https URL without fragment, or the path of a file to serve');

/** The look of the pages (README "Look and language"). Paths are relative to the working directory. */
const branding = z.strictObject({
  productName: nonEmpty.max(64).default('Sigil').meta({ description: "Shown on every page (heading and title)" }),
  logoUrl: brandImage.optional().meta({ description: "The logo shown on every page: an https URL (its origin is added to the pages' CSP img-src) or the path of an image file (PNG, JPEG, GIF, WebP, SVG or ICO, at most 512 KiB) that Sigil serves from its own origin" }),
  faviconUrl: brandImage.optional().meta({ description: "The pages' icon: an https URL or the path of an image file, as logoUrl" }),
  primaryColor: z.string().regex(CSS_HEX_COLOUR, 'must be a colour as #rgb or #rrggbb').optional().meta({ description: "The colour of buttons and links (CSS custom property --accent), #rgb or #rrggbb" }),
  customCss: nonEmpty.optional().meta({ description: "The path of a style sheet read at start and served from Sigil's origin after the built-in one (at most 256 KiB; the CSP stays style-src 'self')" }),
  templatesDir: nonEmpty.optional().meta({ description: "A folder of page templates (<name>.eta, e.g. login.eta, layout.eta) replacing the built-in ones; checked at start" }),
});

/** The top-level fields the config's cross-field rules read. */
const CROSS_CHECKED = new Set(['clients', 'registration', 'users', 'identityResources', 'apiScopes', 'apiResources', 'identityProviders', 'signingAlgorithms']);

/** The whole config file. */
export const configSchema = z
  .strictObject({
    $schema: z.string().optional().meta({ description: 'The JSON Schema of this file, for editors (sigil config schema); Sigil ignores it' }),
    issuer: z.url({ protocol: /^https?$/ }).optional().meta({ description: "The issuer URL; every published URL derives from it, never from the request's Host. Its path, if any, is where every route answers (https://example.com/id: /id/connect/token). Default http://localhost:<port>", spec: "OIDC Discovery §3; RFC 8414 §2" }),
    storage: nonEmpty.default('sqlite:./data/sigil.db').meta({ description: "sqlite:<file>, postgres://user@host:port/db[?schema=name&poolSize=10], or memory (tests only)" }),
    port: z.number().int().min(0).max(65535).optional().meta({ description: "Where to listen. Default 5000" }),
    host: z.string().optional().meta({ description: "The address to listen on. Default 127.0.0.1 (this machine only); 0.0.0.0 for every interface (a container). --host and HOST override it" }),
    trustProxy: trustProxy.default(false).meta({ description: "Whose X-Forwarded-For to believe: the proxies' addresses or CIDR ranges (also loopback, linklocal, uniquelocal), or the number of proxies in front of Sigil; true is refused. Affects client addresses only, never the issuer" }),
    logLevel: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info').meta({ description: "pino log level, or silent" }),
    signingAlgorithms: z.array(z.enum(SIGNING_ALGORITHMS)).min(1).default(DEFAULT_SIGNING_ALGORITHMS).meta({ description: "Algorithms Sigil signs with, one key each; the first signs identity and access tokens (fapi2 clients: the first of PS256, ES256, EdDSA listed)", spec: "RFC 7518 §3.1; RFC 8037" }),
    identityResources: z.array(identityResource).default([
      { name: 'openid', userClaims: ['sub'], required: true },
      { name: 'profile', userClaims: ['name', 'given_name', 'family_name'], required: false },
    ]).meta({ description: "Identity scopes and the user claims they release (identity token, userinfo)", spec: "OIDC Core §5.4" }),
    apiScopes: z.array(apiScope).default([]).meta({ description: "API scopes; their user claims go into access tokens" }),
    apiResources: z.array(apiResource).default([]).meta({ description: "APIs: a name is the aud of tokens for its scopes, and the API authenticates at introspection with a secret", spec: "RFC 7662; RFC 8707" }),
    clients: z.array(clientSchema).default([]).meta({ description: "The registered clients (more may be stored with sigil clients add)", spec: "RFC 6749 §2" }),
    users: z.array(user).default([]).meta({ description: "Users of the config file; clear-text passwords are hashed at start" }),
    identityProviders: z.array(identityProvider).default([]).meta({ description: "Upstream OpenID Connect providers (federation, acr_values=idp:<name>)" }),
    userDirectories,
    rateLimits: rateLimits.prefault({}).meta({ description: "Limits on failed credential checks (client secrets, API secrets, passwords, user codes), shared through Redis when SIGIL_REDIS_URL is set" }),
    pendingLimits: pendingLimits.default(PENDING_LIMITS_DEFAULTS).meta({ description: "How many stored requests callers who have not signed in may start per window (OWASP API4:2023)" }),
    dpop,
    metrics,
    mfa: z
      .strictObject({
        required: z.boolean().default(false).meta({ description: "Default of every client's requireMfa: a second factor at every sign-in" }),
        totpIssuer: nonEmpty.max(100).default('Sigil').meta({ description: "The issuer name authenticator apps show next to the account (otpauth URI issuer)" }),
        freshSignInSeconds: lifetime.default(300).meta({ description: "How recent a sign-in must be to change factors on /account, seconds; a sign-in this recent with a second factor or passkey may also change the password without the current one" }),
      })
      .default({ required: false, totpIssuer: 'Sigil', freshSignInSeconds: 300 }).meta({ description: "Multi-factor sign-in" }),
    // Self-service on /account: which profile claims stored users may edit themselves.
    account: z
      .strictObject({
        editableClaims: z.array(z.enum(EDITABLE_CLAIMS)).max(EDITABLE_CLAIMS.length).refine((a) => new Set(a).size === a.length, 'each claim once').default(['name', 'given_name', 'family_name']).meta({ description: `Profile claims stored users may edit on /account/profile, among ${EDITABLE_CLAIMS.join(', ')}; never sub, email, email_verified, role or other claims that apps may trust for access. Empty: no editing`, spec: "OIDC Core §5.1" }),
      })
      .default({ editableClaims: ['name', 'given_name', 'family_name'] }).meta({ description: "The account pages (/account)" }),
    clientAssertionMaxLifetime: z.number().int().positive().max(3600).default(300).meta({ description: "Client assertions whose exp is further ahead than this many seconds are refused, so a jti need be remembered at most this long", spec: "RFC 7523 §3" }),
    pushedAuthorizationRequestLifetime: z.number().int().positive().max(600).default(60).meta({ description: "How long a request_uri from /connect/par stays usable, seconds", spec: "RFC 9126 §2.2" }),
    requirePushedAuthorizationRequests: z.boolean().default(false).meta({ description: "Every authorization request of every client must come through /connect/par", spec: "RFC 9126 §5" }),
    sessionLifetime: lifetime.default(36000).meta({ description: "Lifetime of a browser sign-in session, seconds" }),
    knownBrowserLifetime: lifetime.max(400 * 24 * 3600).default(7776000).meta({ description: "How long a browser that signed a user in with a password stays known for that user (its sigil.known cookie, signed with Sigil's keys), seconds; a known browser keeps its own share of an LDAP directory's wrong passwords (knownBrowserBinds). Each password sign-in renews it" }),
    signingKeys: z
      .strictObject({
        propagationSeconds: z.number().int().min(0).default(1209600).meta({ description: "A new key is published this long before it signs" }),
        retentionSeconds: z.number().int().min(0).default(1209600).meta({ description: "A replaced key stays published this long" }),
        rotationSeconds: lifetime.default(7776000).meta({ description: "Keys rotate after this long" }),
        reloadSeconds: lifetime.default(60).meta({ description: "How often each node re-reads the keys and stored clients from the store" }),
      })
      .default({ propagationSeconds: 1209600, retentionSeconds: 1209600, rotationSeconds: 7776000, reloadSeconds: 60 }).meta({ description: "Signing key lifecycle, seconds: published propagationSeconds before signing, kept retentionSeconds after replacement, rotated every rotationSeconds, re-read every reloadSeconds" }),
    backChannelLogout: z
      .strictObject({
        timeoutSeconds: lifetime.max(60).default(5).meta({ description: "Each POST's timeout, seconds", spec: "OIDC Back-Channel Logout §2.5" }),
        retrySeconds: lifetime.default(600).meta({ description: "How long a logout token is retried before it is given up, seconds" }),
        pollSeconds: lifetime.default(5).meta({ description: "How often each node looks for due deliveries and expired sessions, seconds" }),
      })
      .default({ timeoutSeconds: 5, retrySeconds: 600, pollSeconds: 5 }).meta({ description: "Back-channel logout delivery: each POST's timeout, how long a logout token is retried (backing off from 1 s to 60 s), how often each node looks for due deliveries", spec: "OIDC Back-Channel Logout §2.5" }),
    webauthn: z
      .strictObject({
        enabled: z.boolean().default(false).meta({ description: "Passkeys and security keys: /account/passkeys, the passkey button on the login page, security keys as factors" }),
        rpName: nonEmpty.max(64).default('Sigil').meta({ description: "The name authenticators show next to the credential", spec: "W3C WebAuthn L3 §5.4.2" }),
        challengeLifetime: lifetime.default(300).meta({ description: "How long a registration or sign-in challenge may be answered, seconds" }),
        challengesPerBrowser: z.number().int().positive().default(30).meta({ description: "Challenges one browser may ask for per challengeLifetime (each is a stored row)" }),
        challengesPerAddress: z.number().int().positive().default(300).meta({ description: "Challenges one address (an IPv6 /64) may ask for per challengeLifetime" }),
      })
      .default({ enabled: false, rpName: 'Sigil', challengeLifetime: 300, challengesPerBrowser: 30, challengesPerAddress: 300 }).meta({ description: "Passkeys and security keys; the relying party ID is the issuer's host name", spec: "W3C WebAuthn L3 §5.1.3, §5.1.4" }),
    clientIdMetadataDocuments: z
      .strictObject({
        enabled: z.boolean().default(true).meta({ description: "A client_id that is an https URL names the client's metadata document, fetched (5 s, 64 KB, no redirects, never from private or other special-use addresses) and cached as its HTTP caching headers say (60 s to 24 h); such clients are public or private_key_jwt, use the code flow with PKCE and refresh tokens, and always see the consent page, which names the URL's host", spec: "draft-ietf-oauth-client-id-metadata-document" }),
        allowLoopback: z.boolean().default(false).meta({ description: "Development and tests only: documents, their jwks_uri and the URLs of dynamically registered clients may be on loopback addresses (127.0.0.0/8, ::1; plain http there too); never in production" }),
        fetchesPerAddress: z.number().int().positive().default(60).meta({ description: "Document fetches one address (an IPv6 /64) may cause per pendingLimits.windowSeconds; cached documents do not count" }),
        allowedScopes: z.array(nonEmpty).nullable().default(null).meta({ description: "The scopes such clients may request; null: every identity and API scope except sigil:* ones (never allowed). Names not defined are ignored" }),
      })
      .default({ enabled: true, allowLoopback: false, fetchesPerAddress: 60, allowedScopes: null }).meta({ description: "Client ID Metadata Documents: clients that identify themselves by an https URL instead of registering (MCP clients)", spec: "draft-ietf-oauth-client-id-metadata-document" }),
    // Email through SMTP: password reset, email verification, self-registration.
    email: z
      .strictObject({
        smtpUrl: z.url({ protocol: /^smtps?$/ }).meta({ description: "The SMTP server: smtp://host:port (STARTTLS when the server offers it; add ?requireTLS=true to insist) or smtps://host:port (TLS from the start); user and password in the URL when it asks for them" }),
        from: nonEmpty.max(200).meta({ description: "The From of every message, e.g. \"Acme ID <id@acme.example>\"" }),
        passwordReset: z.boolean().default(true).meta({ description: "\"Forgot password?\" on the login page: a single-use link by mail, valid 15 minutes, for stored users with a verified primary address" }),
        selfRegistration: z.boolean().default(false).meta({ description: "/account/register: anyone may create an account with an email address; the password is chosen on the page the mailed link opens, and the account exists once that page is sent" }),
        requestsPerAddress: z.number().int().positive().default(10).meta({ description: "Reset and registration forms one client address (an IPv6 /64) may send per hour" }),
        mailsPerAccount: z.number().int().positive().default(3).meta({ description: "Messages one account or email address is sent per 15 minutes; more requests get the same answer but no mail" }),
      })
      .optional().meta({ description: "Email through SMTP: password reset, email verification and self-registration. Without it no mail is sent and those pages do not exist" }),
    accessTokenCache: z
      .strictObject({
        maxAgeMilliseconds: z.number().int().min(0).max(60_000).default(1000).meta({ description: "Reuse a token row read less than this long ago; 0 reads the store every time" }),
        maxEntries: z.number().int().min(1).max(1_000_000).default(10_000).meta({ description: "The most rows kept per process" }),
      })
      .default({ maxAgeMilliseconds: 1000, maxEntries: 10_000 }).meta({ description: "Introspection and userinfo reuse a token row read less than maxAgeMilliseconds ago: the bound within which a revocation on another node is seen; 0 reads the store every time" }),
    registration,
    admin: z
      .strictObject({
        auditRetentionSeconds: lifetime.max(10 * 365 * 24 * 3600).default(2592000).meta({ description: "How long the stored audit events (queried at /admin/v1/events) are kept, seconds; older ones are removed by the housekeeping" }),
        userRole: nonEmpty.max(200).default('sigil-admin').meta({ description: "The role (a value of the user's role claim, or a SCIM group's displayName) a user needs for a token acting for them to carry the scopes of Sigil's management API (scim, sigil:admin, sigil:admin:read, sigil:register); a multi-factor sign-in is required too" }),
        console: z.boolean().default(true).meta({ description: "The web console at /admin: users with admin.userRole sign in through Sigil itself (the built-in public client sigil-console, code flow with PKCE, a second factor required). false: no console, and the client sigil-console does not exist" }),
      })
      .default({ auditRetentionSeconds: 2592000, userRole: 'sigil-admin', console: true }).meta({ description: "Sigil's management API (SCIM at /scim/v2, /admin/v1) and web console (/admin): who may manage it" }),
    cleanup: z
      .strictObject({
        intervalSeconds: lifetime.default(60).meta({ description: "How often expired rows are removed, seconds" }),
        batchSize: lifetime.default(1000).meta({ description: "Rows removed per batch" }),
      })
      .default({ intervalSeconds: 60, batchSize: 1000 }).meta({ description: "Removal of expired grants, codes and sessions by one node at a time, every intervalSeconds, in batches of batchSize rows" }),
    // Look and language: branding and extra text catalogues.
    branding: branding.prefault({}).meta({ description: "The look of the pages: product name, logo, icon, colour, extra style sheet, template overrides" }),
    localesDir: nonEmpty.optional().meta({ description: "A folder of page text catalogues (<tag>.json, e.g. it.json) merged over the shipped English, German, French and Spanish ones; a new tag adds a language" }),
  })
  .superRefine((cfg, ctx) => {
    const issue = (path: (string | number)[], message: string) => ctx.addIssue({ code: 'custom', path, message });
    const duplicates = (names: string[]) => names.filter((n, i) => names.indexOf(n) !== i);
    for (const d of duplicates(cfg.clients.map((c) => c.clientId))) issue(['clients'], `duplicate clientId "${d}"`);
    const identity = new Set(cfg.identityResources.map((r) => r.name));
    const api = new Set([...cfg.apiScopes.map((s) => s.name), ...MANAGEMENT_SCOPES]);
    for (const [i, r] of cfg.identityResources.entries())
      if (api.has(r.name)) issue(['identityResources', i, 'name'], `"${r.name}" is also an API scope`);
    for (const d of duplicates(cfg.identityResources.map((r) => r.name)))
      issue(['identityResources'], `duplicate name "${d}"`);
    for (const d of duplicates(cfg.apiScopes.map((r) => r.name))) issue(['apiScopes'], `duplicate name "${d}"`);
    for (const d of duplicates(cfg.apiResources.map((r) => r.name))) issue(['apiResources'], `duplicate name "${d}"`);
    if (identity.has('offline_access') || api.has('offline_access'))
      issue(['apiScopes'], '"offline_access" is built in and cannot be declared');
    for (const [field, names] of [['apiScopes', cfg.apiScopes.map((r) => r.name)], ['apiResources', cfg.apiResources.map((r) => r.name)]] as const)
      for (const n of names)
        if (n === MANAGEMENT_RESOURCE || (MANAGEMENT_SCOPES as readonly string[]).includes(n)) issue([field], `"${n}" is built in (Sigil's management API) and cannot be declared`);
    cfg.apiResources.forEach((r, i) =>
      r.scopes.forEach((s, j) => {
        if (!api.has(s)) issue(['apiResources', i, 'scopes', j], `unknown API scope "${s}"`);
      }),
    );
    const resourceUriOwners = new Map<string, string>();
    cfg.apiResources.forEach((r, i) =>
      r.resourceUris.forEach((u, j) => {
        if (!isResourceIndicator(u)) issue(['apiResources', i, 'resourceUris', j], 'must be an absolute URI without fragment (RFC 8707 §2)');
        const owner = resourceUriOwners.get(u);
        if (owner !== undefined && owner !== r.name) issue(['apiResources', i, 'resourceUris', j], `"${u}" is also a resource URI of "${owner}"`);
        resourceUriOwners.set(u, r.name);
      }),
    );
    const apiResourceNames = new Set(cfg.apiResources.map((r) => r.name));
    cfg.clients.forEach((c, i) => {
      const at = (...rest: (string | number)[]) => ['clients', i, ...rest];
      c.allowedScopes.forEach((s, j) => {
        if (s !== 'offline_access' && !identity.has(s) && !api.has(s))
          issue(at('allowedScopes', j), `unknown scope "${s}"`);
      });
      const grants = new Set(c.allowedGrantTypes);
      const isPublic = !c.requireClientSecret;
      if (isPublic && grants.has('client_credentials'))
        issue(at('allowedGrantTypes'), 'client_credentials needs a confidential client (requireClientSecret true)');
      const hasKeys = c.jwks !== null || c.jwksUri !== null;
      if (!isPublic && c.clientSecrets.length === 0 && !hasKeys && !(grants.size === 1 && grants.has('implicit')))
        issue(at('clientSecrets'), 'a confidential client needs at least one secret');
      // RFC 9700 §4.14.2: refresh tokens of public clients must rotate.
      if (isPublic && c.allowOfflineAccess && c.refreshTokenUsage === 'reuse')
        issue(at('refreshTokenUsage'), 'public clients must use "oneTime" refresh tokens (RFC 9700 §4.14.2)');
      if (grants.has('implicit') && grants.has('authorization_code'))
        issue(at('allowedGrantTypes'), 'list "hybrid" instead of "implicit" with "authorization_code"');
      c.tokenExchangeSubjectAudiences.forEach((a, j) => {
        if (!apiResourceNames.has(a)) issue(at('tokenExchangeSubjectAudiences', j), `unknown API resource "${a}"`);
      });
      c.allowedCorsOrigins.forEach((o, j) => {
        if (!URL.canParse(o) || new URL(o).origin !== o) issue(at('allowedCorsOrigins', j), 'must be scheme://host[:port], no path');
      });
      // FAPI 2.0 SP §5.4.1: its identity tokens (and JWT access tokens) are signed with PS256, ES256 or EdDSA.
      if (c.profile === 'fapi2' && fapi2SigningAlgorithm(cfg.signingAlgorithms) === undefined)
        issue(at('profile'), 'profile "fapi2" needs PS256, ES256 or EdDSA in signingAlgorithms to sign its tokens');
    });
    const seen = new Set<string>();
    cfg.users.forEach((u, i) => {
      const key = `${u.tenant ?? ''}\u0000${u.username.toLowerCase()}`;
      if (seen.has(key)) issue(['users', i, 'username'], `duplicate username "${u.username}"`);
      seen.add(key);
    });
    for (const d of duplicates(cfg.users.map((u) => u.subjectId))) issue(['users'], `duplicate subjectId "${d}"`);
    // RFC 9068 §5: a client's own tokens carry sub = client_id, so no client id may name a user.
    const subjects = new Map(cfg.users.map((u, i) => [u.subjectId, i]));
    cfg.clients.forEach((c, i) => {
      const j = subjects.get(c.clientId);
      if (j !== undefined) issue(['clients', i, 'clientId'], clientSubjectCollision(c.clientId, `users[${j}]`));
    });
    cfg.registration.allowedScopes?.forEach((s, j) => {
      const at = ['registration', 'allowedScopes', j];
      if (isManagementScope(s)) issue(at, `"${s}" is a scope of Sigil's management API and never given to a dynamic client`);
      else if (s !== 'offline_access' && !identity.has(s) && !api.has(s)) issue(at, `unknown scope "${s}"`);
    });
    for (const d of duplicates(cfg.identityProviders.map((p) => p.name)))
      issue(['identityProviders'], `duplicate name "${d}"`);
  }, {
    // Run even when other fields have type errors (a wrong port), so that one check reports every
    // problem; skipped only when a field these rules read has one (zod's aborting issues, as by
    // default: `continue` not true).
    when: (payload) => payload.issues.every((i) => i.continue === true || !CROSS_CHECKED.has(String(i.path?.[0]))),
  });

/**
 * The algorithm Sigil signs a `fapi2` client's tokens with: the first of `signingAlgorithms` that
 * FAPI 2.0 allows (§5.4.1: PS256, ES256, EdDSA), or undefined when there is none.
 */
export function fapi2SigningAlgorithm(signingAlgorithms: readonly SigningAlgorithm[]): SigningAlgorithm | undefined {
  return signingAlgorithms.find((a) => (FAPI2_ALGORITHMS as readonly string[]).includes(a));
}

/** The config file as written (before defaults). */
export type ConfigInput = z.input<typeof configSchema>;
/** The validated config with every default filled in. */
export type Config = z.output<typeof configSchema>;
/** A registered client, defaults filled in. */
export type ClientConfig = Config['clients'][number];
/** A user from the config file. */
export type UserConfig = Config['users'][number];
/** An identity resource: an identity scope and the user claims it releases. */
export type IdentityResource = Config['identityResources'][number];
/** An API scope and the user claims it puts into access tokens. */
export type ApiScope = Config['apiScopes'][number];
/** An API resource: the `aud` of access tokens for its scopes, and an introspection caller. */
export type ApiResource = Config['apiResources'][number];
