/** The schema of one client: its fields, the rules between them, and its profile's defaults. */
import * as z from 'zod';
import { LOOPBACK } from '../hosts.js';
import { redirectUriProblem } from '../redirect-uris.js';
import { CLIENT_PROFILES, fapi2Contradictions, withProfileDefaults } from './fapi2.js';
import { httpsOrLoopback, lifetime, nonEmpty, secret } from './field-kinds.js';
import { idJagAudiences } from './id-jag.js';
import { MAX_ORGANIZATION_NAME, ORGANIZATION_NAME } from './organizations.js';
import {
  ASSERTION_ALGORITHMS,
  ASYMMETRIC_ASSERTION_ALGORITHMS,
  CIBA_GRANT,
  JWT_BEARER_GRANT,
  SYMMETRIC_ASSERTION_ALGORITHMS,
  TOKEN_ENDPOINT_AUTH_METHODS,
} from './protocol.js';

/** An absolute https URL without fragment, or http on a loopback host. */
function isLogoutUri(u: string): boolean {
  if (!URL.canParse(u)) return false;
  const url = new URL(u);
  return url.hash === '' && (url.protocol === 'https:' || (url.protocol === 'http:' && LOOPBACK.test(url.hostname)));
}
const LOGOUT_URI_RULE = 'must be an https URL without fragment (http only for loopback hosts)';
/** A client's page for people (OpenID Connect Dynamic Client Registration 1.0 §2): the same rule as logout URIs. */
const clientPageUri = nonEmpty.max(2048).refine(isLogoutUri, LOGOUT_URI_RULE);

/** One client of the config; also the shape of clients kept in the store (`sigil clients add`). */
export const clientSchema = z
  .strictObject({
    clientId: nonEmpty.max(100).meta({
      description: "The client identifier; at most 100 characters; never a user's subjectId",
      spec: 'RFC 6749 §2.2; RFC 9068 §5',
    }),
    clientName: z.string().optional().meta({ description: 'Shown on the login and consent pages' }),
    logoUri: clientPageUri.optional().meta({
      description: "The client's logo, shown on the consent page (its origin is allowed as an image source there)",
      spec: 'OIDC Dynamic Client Registration §2 logo_uri',
    }),
    clientUri: clientPageUri.optional().meta({
      description: "The client's home page: linked from the consent page and the way back on error pages",
      spec: 'OIDC Dynamic Client Registration §2 client_uri',
    }),
    policyUri: clientPageUri.optional().meta({
      description: "The client's privacy policy, linked from the consent page",
      spec: 'OIDC Dynamic Client Registration §2 policy_uri',
    }),
    tosUri: clientPageUri.optional().meta({
      description: "The client's terms of service, linked from the consent page",
      spec: 'OIDC Dynamic Client Registration §2 tos_uri',
    }),
    enabled: z.boolean().default(true).meta({ description: 'A disabled client is unknown' }),
    clientSecrets: z.array(secret).default([]).meta({
      description: 'Clear text, or sha256:<base64 of the SHA-256 digest>; compared in constant time',
      spec: 'RFC 6749 §2.3.1',
    }),
    requireClientSecret: z
      .boolean()
      .default(true)
      .meta({ description: 'false makes a public client, identified by client_id alone', spec: 'RFC 6749 §2.1' }),
    allowedGrantTypes: z.array(nonEmpty).min(1).meta({
      description:
        "client_credentials, password, authorization_code, refresh_token, implicit, hybrid, the device code, token exchange, JWT bearer and CIBA URNs, or a registered extension grant's name; any other name stops the start",
      spec: 'RFC 6749 §4; RFC 8628; RFC 8693; RFC 7523 §2.1; OpenID CIBA Core 1.0 §10.1',
    }),
    allowedScopes: z.array(nonEmpty).default([]).meta({
      description:
        'Identity and API scope names; scope omitted at the token endpoint means all that the grant can carry',
      spec: 'RFC 6749 §3.3',
    }),
    redirectUris: z.array(nonEmpty).default([]).meta({
      description:
        'Where codes and tokens are sent, matched string for string (a registered loopback IP URI matches any port): absolute, no fragment, no * (no wildcards), no user info, no white space; https, http only on a loopback host (127.0.0.0/8, [::1], localhost; any host with allowHttpRedirectUris), or a private-use scheme in reverse domain name form (com.example.app:/callback); never javascript:, data:, vbscript:, file: and the like',
      spec: 'RFC 6749 §3.1.2; RFC 8252 §7.1, §7.3; RFC 9700 §4.1.3',
    }),
    postLogoutRedirectUris: z.array(nonEmpty).default([]).meta({
      description:
        'Where end session may send the browser back, matched string for string; the same rule as redirectUris',
      spec: 'OIDC RP-Initiated Logout §3',
    }),
    allowHttpRedirectUris: z.boolean().default(false).meta({
      description:
        'Development only: redirectUris and postLogoutRedirectUris may use plain http on any host (http on a loopback host is always allowed); never in production, where codes and tokens would cross the network in clear text. Dynamic registration never sets it',
      spec: 'RFC 6749 §3.1.2.1',
    }),
    requirePkce: z.boolean().default(true).meta({ description: 'PKCE at the authorize endpoint', spec: 'RFC 7636' }),
    allowPlainTextPkce: z
      .boolean()
      .default(false)
      .meta({ description: 'Accept code_challenge_method=plain (S256 otherwise)', spec: 'RFC 7636 §4.2' }),
    allowOfflineAccess: z
      .boolean()
      .default(false)
      .meta({ description: 'Refresh tokens through the offline_access scope', spec: 'OIDC Core §11' }),
    accessTokenType: z.enum(['jwt', 'reference']).default('jwt').meta({
      description: 'jwt (RFC 9068) or reference (opaque, stored hashed, checked by introspection)',
      spec: 'RFC 9068; RFC 7662',
    }),
    accessTokenLifetime: lifetime.default(3600).meta({ description: 'Lifetime of access tokens, seconds' }),
    identityTokenLifetime: lifetime
      .default(300)
      .meta({ description: 'Lifetime of identity tokens, seconds', spec: 'OIDC Core §2' }),
    authorizationCodeLifetime: lifetime.max(600).optional().meta({
      description: 'Lifetime of authorization codes, seconds; default 300, or 60 for a fapi2 client (at most 60 there)',
      spec: 'RFC 6749 §4.1.2; FAPI 2.0 SP §5.3.2.1',
    }),
    refreshTokenUsage: z.enum(['oneTime', 'reuse']).default('oneTime').meta({
      description:
        'oneTime: rotation, and reusing a used token revokes the grant; reuse: the same token again. Public clients must rotate',
      spec: 'RFC 9700 §4.14.2',
    }),
    refreshTokenExpiration: z
      .enum(['absolute', 'sliding'])
      .default('absolute')
      .meta({ description: 'absolute, or sliding (each use extends the token by slidingRefreshTokenLifetime)' }),
    absoluteRefreshTokenLifetime: lifetime
      .default(2592000)
      .meta({ description: 'The longest a refresh token lives, seconds' }),
    slidingRefreshTokenLifetime: lifetime.default(1296000).meta({
      description:
        'With sliding expiration, how much each use extends the token, seconds, never past the absolute lifetime',
    }),
    deviceCodeLifetime: lifetime
      .default(300)
      .meta({ description: 'Lifetime of device codes, seconds', spec: 'RFC 8628 §3.2' }),
    pollingInterval: lifetime
      .default(5)
      .meta({ description: 'How often a device may poll the token endpoint, seconds', spec: 'RFC 8628 §3.5' }),
    requireConsent: z
      .boolean()
      .default(false)
      .meta({ description: 'Show the consent page before issuing', spec: 'OIDC Core §3.1.2.4' }),
    identityProviderRestrictions: z
      .array(nonEmpty)
      .default([])
      .meta({ description: 'Upstream provider names allowed in acr_values=idp:<name>; empty allows all' }),
    enableLocalLogin: z.boolean().default(true).meta({ description: 'The login form; false: upstream providers only' }),
    organizationUsage: z.enum(['none', 'allow', 'require']).default('none').meta({
      description:
        'The authorization request parameter organization=<name>: none (refused, invalid_request), allow (optional), require (absent: the user picks one of their organizations after sign-in)',
    }),
    organization: z
      .string()
      .max(MAX_ORGANIZATION_NAME)
      .regex(ORGANIZATION_NAME, 'must be an organization name (lower-case letters, digits, - and _)')
      .nullable()
      .default(null)
      .meta({
        description:
          "The organization this client belongs to (its name). With the scope scim it provisions that organization's members at /scim/v2/organizations/<name> and nothing else: /scim/v2/Users and /Groups answer it 403, and it may not hold sigil:admin, sigil:admin:read or sigil:register. A config-file client names a config-file organization; a stored client any organization in force when it is written",
        spec: 'RFC 7644',
      }),
    allowAccessTokensViaBrowser: z.boolean().default(false).meta({
      description: 'Access tokens from the authorization endpoint (implicit and hybrid response types)',
      spec: 'OIDC Core §3.2',
    }),
    requestUris: z
      .array(z.url({ protocol: /^https$/ }))
      .default([])
      .meta({
        description: 'https URLs this client may pass as request_uri (signed request objects by reference)',
        spec: 'OIDC Core §6.2',
      }),
    jwks: z
      .object({
        keys: z.array(z.record(z.string(), z.unknown())).meta({ description: 'The JWKs', spec: 'RFC 7517 §5' }),
      })
      .nullable()
      .default(null)
      .meta({
        description:
          'The client\'s public keys as a JWKS ({"keys":[…]}), to verify its private_key_jwt assertions and signed request objects; public keys only',
        spec: 'RFC 7517 §5; RFC 7523',
      }),
    jwksUri: httpsOrLoopback.nullable().default(null).meta({
      description:
        'Or where the client serves its public keys: https (http only on a loopback host); fetched with a 5 s timeout and a 64 KB limit, cached 10 minutes, fetched again for an unknown kid at most once a minute. Not together with jwks',
      spec: 'RFC 7591 §2',
    }),
    tokenEndpointAuthMethod: z.enum(TOKEN_ENDPOINT_AUTH_METHODS).nullable().optional().meta({
      description:
        'The one method the client must authenticate with at the back-channel endpoints; null: any it has credentials for (fapi2: private_key_jwt)',
      spec: 'RFC 7591 §2; OIDC Core §9',
    }),
    tokenEndpointAuthSigningAlgorithms: z.array(z.enum(ASSERTION_ALGORITHMS)).min(1).optional().meta({
      description:
        "Algorithms accepted in this client's assertions; default all (fapi2: PS256, ES256, EdDSA); none is never accepted",
      spec: 'RFC 7523 §3',
    }),
    requirePushedAuthorizationRequests: z.boolean().optional().meta({
      description: "This client's authorization requests must come through /connect/par. Default false (fapi2: true)",
      spec: 'RFC 9126 §5',
    }),
    requireDPoP: z.boolean().optional().meta({
      description:
        'Every token request must carry a DPoP proof, so all its tokens are bound to a key it holds. Default false (fapi2: true)',
      spec: 'RFC 9449 §5',
    }),
    profile: z.enum(CLIENT_PROFILES).nullable().default(null).meta({
      description:
        'fapi2: the FAPI 2.0 Security Profile is enforced for this client; it implies private_key_jwt, PAR, DPoP and a 60 s code lifetime, and a contradicting setting stops the start',
      spec: 'FAPI 2.0 SP §5.3.2, §5.4',
    }),
    tokenExchangeSubjectAudiences: z.array(nonEmpty).default([]).meta({
      description:
        "API resource names whose users' access tokens this client may exchange, acting as that API; empty: only tokens issued to this client",
      spec: 'RFC 8693 §2.1',
    }),
    idJagAudiences,
    authorizationDetailsTypes: z.array(nonEmpty.max(200)).max(50).default([]).meta({
      description:
        'Authorization details types (declared on apiResources) this client may send in authorization_details; any other is invalid_authorization_details',
      spec: 'RFC 9396 §2, §5',
    }),
    requireMfa: z.boolean().optional().meta({
      description: 'A second factor (or a passkey) at every sign-in to this client; absent: the global mfa.required',
    }),
    allowPasswordGrantForMfaUsers: z.boolean().default(false).meta({
      description:
        'The password grant may sign in users who have a second factor with the password alone; otherwise invalid_grant',
      spec: 'RFC 9700 §2.4',
    }),
    backChannelLogoutUri: z.string().refine(isLogoutUri, LOGOUT_URI_RULE).nullable().default(null).meta({
      description: 'Where logout tokens are POSTed: https, or http on a loopback host; no fragment',
      spec: 'OIDC Back-Channel Logout §2.2',
    }),
    backchannelTokenDeliveryMode: z.enum(['poll', 'ping']).default('poll').meta({
      description:
        "How a CIBA client learns of the user's answer: poll (it polls the token endpoint) or ping (Sigil POSTs the auth_req_id to backchannelClientNotificationEndpoint, then it calls the token endpoint)",
      spec: 'OpenID CIBA Core 1.0 §5, §10.2',
    }),
    backchannelClientNotificationEndpoint: z
      .string()
      .max(2048)
      .refine(isLogoutUri, LOGOUT_URI_RULE)
      .nullable()
      .default(null)
      .meta({
        description:
          "Where the ping of a CIBA request is POSTed, with the request's client_notification_token as Bearer: https, or http on a loopback host; no fragment",
        spec: 'OpenID CIBA Core 1.0 §4, §10.2',
      }),
    backChannelLogoutSessionRequired: z.boolean().default(true).meta({
      description: 'The client needs sid in logout tokens (Sigil always sends it)',
      spec: 'OIDC Back-Channel Logout §2.2',
    }),
    frontChannelLogoutUri: z.string().refine(isLogoutUri, LOGOUT_URI_RULE).nullable().default(null).meta({
      description:
        'Loaded in a hidden iframe of the signed-out page with iss and sid: https, or http on a loopback host; no fragment',
      spec: 'OIDC Front-Channel Logout §2',
    }),
    frontChannelLogoutSessionRequired: z.boolean().default(true).meta({
      description: 'The client needs iss and sid on its front-channel URI (Sigil always adds them)',
      spec: 'OIDC Front-Channel Logout §2',
    }),
    allowedCorsOrigins: z.array(z.url()).default([]).meta({
      description:
        'scheme://host[:port] origins allowed to call discovery, JWKS, token, userinfo and revocation from a browser',
    }),
    registeredDynamically: z.boolean().default(false).meta({
      description:
        "Set by dynamic registration: whoever registered chose this client's URLs, so its jwksUri, requestUris and backChannelLogoutUri are fetched under the SSRF guard (no private, loopback or link-local addresses unless clientIdMetadataDocuments.allowLoopback)",
      spec: 'RFC 7591 §5',
    }),
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
    // draft-ietf-oauth-identity-assertion-authz-grant §"Client Authentication": confidential clients only.
    if (isPublic && c.allowedGrantTypes.includes(JWT_BEARER_GRANT))
      issue('allowedGrantTypes', 'the JWT bearer grant needs a confidential client (requireClientSecret true)');
    // OpenID CIBA Core 1.0 §7.1: the backchannel authentication request is made by an authenticated client.
    if (isPublic && c.allowedGrantTypes.includes(CIBA_GRANT))
      issue('allowedGrantTypes', 'the CIBA grant needs a confidential client (requireClientSecret true)');
    if (c.backchannelTokenDeliveryMode === 'ping' && c.backchannelClientNotificationEndpoint === null)
      issue('backchannelClientNotificationEndpoint', 'the ping mode needs a client notification endpoint');
    if (isPublic && c.idJagAudiences.length > 0)
      issue('idJagAudiences', 'ID-JAGs are for confidential clients only (requireClientSecret true)');
    if (method === 'none' && !isPublic)
      issue('tokenEndpointAuthMethod', '"none" is for public clients (requireClientSecret false)');
    if (method !== null && method !== 'none' && isPublic)
      issue('tokenEndpointAuthMethod', `a public client (requireClientSecret false) cannot use "${method}"`);
    if (
      (method === 'client_secret_basic' || method === 'client_secret_post' || method === 'client_secret_jwt') &&
      c.clientSecrets.length === 0
    )
      issue('clientSecrets', `"${method}" needs a client secret`);
    // RFC 7523 §2.2 with HMAC (OIDC Core §9): the secret itself is the key, a digest cannot sign.
    if (method === 'client_secret_jwt' && digests)
      issue(
        'clientSecrets',
        'client_secret_jwt needs clear-text secrets: a "sha256:" secret cannot verify an HS256 assertion',
      );
    if (method === 'private_key_jwt' && c.jwks === null && c.jwksUri === null)
      issue('tokenEndpointAuthMethod', "private_key_jwt needs the client's public keys (jwks or jwksUri)");
    const algs = c.tokenEndpointAuthSigningAlgorithms as readonly string[];
    if (
      method === 'private_key_jwt' &&
      !algs.some((a) => (ASYMMETRIC_ASSERTION_ALGORITHMS as readonly string[]).includes(a))
    )
      issue('tokenEndpointAuthSigningAlgorithms', 'private_key_jwt needs an asymmetric algorithm');
    if (
      method === 'client_secret_jwt' &&
      !algs.some((a) => (SYMMETRIC_ASSERTION_ALGORITHMS as readonly string[]).includes(a))
    )
      issue('tokenEndpointAuthSigningAlgorithms', 'client_secret_jwt needs an HS algorithm');
  });
