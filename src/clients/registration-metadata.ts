/**
 * Client metadata of Dynamic Client Registration (RFC 7591 §2; OpenID Connect Dynamic Client
 * Registration 1.0 §2) checked against the registration policy (config `registration`) and turned
 * into Sigil's client model (the config file's client fields). Pure: the one fetch a registration
 * needs (`sector_identifier_uri`, OIDC Core §8.1) is left to the caller, which gets its URL here.
 *
 * Rules beyond the RFC, each a refusal with `invalid_redirect_uri` or `invalid_client_metadata`
 * (RFC 7591 §3.2.2):
 * - redirect URIs (RFC 8252; OIDC DCR §2 `application_type`): the one rule of every client
 *   (src/config/redirect-uris.ts): absolute, no fragment, no user info, no `*`; https, or http on
 *   a loopback host (127.0.0.0/8, [::1], localhost; RFC 8252 §7.3, §8.3), whatever the
 *   `application_type`; a `native` client's also a private-use scheme in reverse-DNS form (a `.`
 *   in the scheme, RFC 8252 §7.1); never `javascript:`, `data:`, `file:` and the like. OIDC DCR
 *   §2 keeps `web` clients off localhost only for the implicit grant, which dynamic clients never
 *   get; MCP clients register loopback redirects without naming an `application_type` (default
 *   `web`), and refusing them would break their sign-in;
 * - grant types, scopes and authentication methods only from the policy's lists; `scim` and
 *   `sigil:*` scopes, password and token exchange never (the config cannot list them); with
 *   `client_credentials`, only the scopes the administrator listed; the registered `scope` is
 *   exactly the one asked, never widened;
 * - only `response_types` `code` (with `authorization_code`): implicit and hybrid are not
 *   offered to dynamic clients (RFC 9700 §2.1.2);
 * - what Sigil cannot honour is refused rather than silently ignored: `subject_type` pairwise,
 *   `default_max_age`, signed or encrypted userinfo, encrypted identity tokens, an
 *   `id_token_signed_response_alg` other than the one Sigil signs with, `request_object_signing_alg`
 *   and the encryption members, software statements (`unapproved_software_statement`);
 * - CIBA (OpenID CIBA Core 1.0 §4): `backchannel_token_delivery_mode` `poll` or `ping` (not
 *   `push`), required with the CIBA grant and only with it, which needs a confidential client;
 *   `backchannel_client_notification_endpoint` for ping only, and required then, under the rule
 *   the ping's SSRF guard applies; no signed requests, no user code;
 * - every string, list and URI is bounded; members Sigil does not know are ignored (RFC 7591 §2),
 *   `client_name#<tag>` (language tags, §2.2) among them: the untagged name is the one shown.
 */
import { isIP } from 'node:net';
import { LOOPBACK } from '../config/hosts.js';
import { redirectUriProblem } from '../config/redirect-uris.js';
import { ASYMMETRIC_ASSERTION_ALGORITHMS, CIBA_GRANT } from '../config/schema.js';
import { OAuthError } from '../protocol/errors.js';
import { isFetchableAddress } from '../http/outbound.js';

/** What a registration may ask for (config `registration`, resolved against the scopes known). */
export interface RegistrationPolicy {
  allowedGrantTypes: readonly string[];
  /**
   * Scopes a dynamic client may have (never `scim` or `sigil:*`; `unvetted-scopes.ts`), granted
   * through the user's consent; `offline_access` only with `refresh_token`.
   */
  allowedScopes: readonly string[];
  /** Scopes a client registering `client_credentials` may have: no consent protects them. */
  clientCredentialsScopes: readonly string[];
  /** The scopes registered when the metadata names none (RFC 7591 §2 `scope`). */
  defaultScopes: readonly string[];
  allowedAuthMethods: readonly string[];
  /** The algorithm Sigil signs a dynamic client's identity tokens with. */
  idTokenAlg: string;
  /** Accept http on a loopback host for fetched and called URIs (an http loopback issuer: development). */
  loopbackHttp: boolean;
  /**
   * The CIBA ping's SSRF guard lets loopback addresses (and plain http to them) pass (config
   * `clientIdMetadataDocuments.allowLoopback`): a notification endpoint is checked by the same rule.
   */
  notificationLoopback: boolean;
}

/** A checked registration: the metadata as registered and the client settings it makes. */
export interface CheckedMetadata {
  /** The registered metadata, RFC 7591 names, defaults filled in; returned by registration and read. */
  metadata: Record<string, unknown>;
  /** The client's settings in the config file's names, without `clientId` and `clientSecrets`. */
  client: Record<string, unknown>;
  /** Fetch it and check every redirect URI is listed (OIDC Core §8.1). */
  sectorIdentifierUri?: string;
  /** The client authenticates with a secret (Sigil generates it). */
  needsSecret: boolean;
}

/** Most characters of a URI in the metadata. */
export const MAX_URI_LENGTH = 2048;
/** Most entries of a URI list (redirect, post-logout, request URIs) and of `contacts`. */
export const MAX_LIST_LENGTH = 20;
/** Most characters of a name or version string. */
const MAX_TEXT_LENGTH = 200;
/** Most keys in an inline `jwks`. */
const MAX_KEYS = 10;

/** Members whose values Sigil cannot honour: any value is refused. */
const UNSUPPORTED = [
  'default_max_age',
  'userinfo_signed_response_alg',
  'userinfo_encrypted_response_alg',
  'userinfo_encrypted_response_enc',
  'id_token_encrypted_response_alg',
  'id_token_encrypted_response_enc',
  'request_object_signing_alg',
  'request_object_encryption_alg',
  'request_object_encryption_enc',
  'authorization_encrypted_response_alg',
  'authorization_encrypted_response_enc',
  'tls_client_certificate_bound_access_tokens',
  // CIBA §7.1.1: signed authentication requests are not supported (discovery names no algorithm).
  'backchannel_authentication_request_signing_alg',
];

const metadataError = (description: string) => new OAuthError('invalid_client_metadata', description);
const redirectError = (description: string) => new OAuthError('invalid_redirect_uri', description);

/**
 * Checks a registration request's metadata (RFC 7591 §2, §3.1; OIDC DCR §2) against `policy`.
 * @param body the parsed JSON body
 * @throws OAuthError 400 `invalid_redirect_uri`, `invalid_client_metadata` or
 *   `unapproved_software_statement` (RFC 7591 §3.2.2)
 */
export function checkMetadata(body: unknown, policy: RegistrationPolicy): CheckedMetadata {
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    throw metadataError('the body must be a JSON object');
  const m = body as Record<string, unknown>;
  if ('software_statement' in m)
    throw new OAuthError('unapproved_software_statement', 'software statements are not accepted');
  for (const name of UNSUPPORTED)
    if (m[name] !== undefined && m[name] !== null) throw metadataError(`${name} is not supported`);

  const applicationType = optionalEnum(m, 'application_type', ['web', 'native']) ?? 'web';
  const grantTypes = stringList(m, 'grant_types', 10) ?? ['authorization_code'];
  for (const g of grantTypes)
    if (!policy.allowedGrantTypes.includes(g)) throw metadataError(`grant type "${g.slice(0, 60)}" is not allowed`);
  const grants = new Set(grantTypes);
  if (grants.size === 1 && grants.has('refresh_token')) throw metadataError('refresh_token needs another grant type');
  const responseTypes = stringList(m, 'response_types', 5) ?? (grants.has('authorization_code') ? ['code'] : []);
  for (const r of responseTypes)
    if (r !== 'code') throw metadataError(`response type "${r.slice(0, 60)}" is not supported (code only)`);
  // RFC 7591 §2.1: grant types and response types must agree.
  if (responseTypes.includes('code') !== grants.has('authorization_code'))
    throw metadataError('response_types "code" and grant_types "authorization_code" go together');

  const method = optionalEnum(m, 'token_endpoint_auth_method', policy.allowedAuthMethods) ?? 'client_secret_basic';
  if (!policy.allowedAuthMethods.includes(method))
    throw metadataError(`token_endpoint_auth_method "${method}" is not allowed`);
  if (method === 'none' && grants.has('client_credentials'))
    throw metadataError('client_credentials needs a confidential client');

  const redirectUris = uriList(m, 'redirect_uris', redirectError, (u) => checkRedirectUri(u, applicationType)) ?? [];
  if (grants.has('authorization_code') && redirectUris.length === 0)
    throw redirectError('redirect_uris are required for authorization_code');
  const postLogoutRedirectUris =
    uriList(m, 'post_logout_redirect_uris', metadataError, (u) => checkRedirectUri(u, applicationType)) ?? [];

  /** Why a URI Sigil fetches, posts to or shows is refused: https only (loopback http in development). */
  const fetched = (name: string, value: string) => {
    const url = new URL(value);
    if (
      !(url.protocol === 'https:' || (policy.loopbackHttp && url.protocol === 'http:' && LOOPBACK.test(url.hostname)))
    )
      return `${name} must be an https URL`;
    return url.hash !== '' || url.username !== '' || url.password !== ''
      ? `${name} must have no fragment or user info`
      : undefined;
  };
  const jwksUri = optionalUri(m, 'jwks_uri', fetched);
  const jwks = optionalJwks(m);
  if (jwks !== undefined && jwksUri !== undefined) throw metadataError('give either jwks or jwks_uri, not both');
  if (method === 'private_key_jwt' && jwks === undefined && jwksUri === undefined)
    throw metadataError('private_key_jwt needs jwks or jwks_uri');
  const signingAlg = optionalEnum(m, 'token_endpoint_auth_signing_alg', ASYMMETRIC_ASSERTION_ALGORITHMS);
  if (signingAlg !== undefined && method !== 'private_key_jwt')
    throw metadataError('token_endpoint_auth_signing_alg is for private_key_jwt');

  const scopeText = optionalString(m, 'scope', 1000);
  const requested = scopeText === undefined ? policy.defaultScopes : scopeText.split(' ').filter((s) => s !== '');
  // A client_credentials token has no user to consent: only what the administrator listed.
  const permitted = grants.has('client_credentials') ? policy.clientCredentialsScopes : policy.allowedScopes;
  for (const s of requested)
    if (!permitted.includes(s))
      throw metadataError(
        `scope "${s.slice(0, 60)}" is not allowed${grants.has('client_credentials') ? ' with client_credentials' : ''}`,
      );
  if (requested.includes('offline_access') && !grants.has('refresh_token'))
    throw metadataError('offline_access needs the refresh_token grant type');
  // Exactly what was asked (RFC 7591 §2): refresh tokens come with the refresh_token grant type
  // (`allowOfflineAccess`), not by widening the registered scope.
  const scopes = [...new Set(requested)];

  const subjectType = optionalEnum(m, 'subject_type', ['public', 'pairwise']) ?? 'public';
  if (subjectType === 'pairwise') throw metadataError('subject_type "pairwise" is not supported (public only)');
  const idTokenAlg = optionalString(m, 'id_token_signed_response_alg', 20) ?? policy.idTokenAlg;
  if (idTokenAlg !== policy.idTokenAlg)
    throw metadataError(`id_token_signed_response_alg must be ${policy.idTokenAlg}`);
  const sectorIdentifierUri = optionalUri(m, 'sector_identifier_uri', fetched);
  const requestUris = uriList(m, 'request_uris', metadataError, (u) =>
    new URL(u).protocol === 'https:' ? undefined : 'request_uris must be https URLs',
  );
  const backchannel = optionalUri(m, 'backchannel_logout_uri', fetched);
  const frontchannel = optionalUri(m, 'frontchannel_logout_uri', fetched);
  const contacts = stringList(m, 'contacts', MAX_LIST_LENGTH, 254);
  const ciba = cibaMetadata(m, grants.has(CIBA_GRANT), method === 'none', policy.notificationLoopback);

  const metadata: Record<string, unknown> = {
    redirect_uris: redirectUris,
    token_endpoint_auth_method: method,
    grant_types: [...grants],
    response_types: responseTypes,
    application_type: applicationType,
    subject_type: subjectType,
    id_token_signed_response_alg: idTokenAlg,
    scope: scopes.join(' '),
  };
  const copy = (name: string, value: unknown) => {
    if (value !== undefined) metadata[name] = value;
  };
  copy('client_name', optionalString(m, 'client_name', MAX_TEXT_LENGTH));
  // Shown to users (the consent page may load the logo): https, as the other URIs.
  for (const name of ['client_uri', 'logo_uri', 'policy_uri', 'tos_uri']) copy(name, optionalUri(m, name, fetched));
  copy('contacts', contacts);
  copy('software_id', optionalString(m, 'software_id', MAX_TEXT_LENGTH));
  copy('software_version', optionalString(m, 'software_version', MAX_TEXT_LENGTH));
  copy('jwks_uri', jwksUri);
  copy('jwks', jwks);
  copy('token_endpoint_auth_signing_alg', signingAlg);
  copy('sector_identifier_uri', sectorIdentifierUri);
  if (postLogoutRedirectUris.length > 0) copy('post_logout_redirect_uris', postLogoutRedirectUris);
  copy('request_uris', requestUris);
  copy('backchannel_logout_uri', backchannel);
  copy('backchannel_logout_session_required', optionalBoolean(m, 'backchannel_logout_session_required'));
  copy('frontchannel_logout_uri', frontchannel);
  copy('frontchannel_logout_session_required', optionalBoolean(m, 'frontchannel_logout_session_required'));
  // OIDC DCR §2: Sigil puts auth_time into every identity token, so true is always honoured.
  copy('require_auth_time', optionalBoolean(m, 'require_auth_time'));
  copy('dpop_bound_access_tokens', optionalBoolean(m, 'dpop_bound_access_tokens'));
  Object.assign(metadata, ciba.metadata);

  const client: Record<string, unknown> = {
    ...(metadata.client_name !== undefined ? { clientName: metadata.client_name } : {}),
    // Shown on the consent page; the client schema's rule for them (https, no fragment) holds, as `fetched`
    // is stricter.
    ...(metadata.logo_uri !== undefined ? { logoUri: metadata.logo_uri } : {}),
    ...(metadata.client_uri !== undefined ? { clientUri: metadata.client_uri } : {}),
    ...(metadata.policy_uri !== undefined ? { policyUri: metadata.policy_uri } : {}),
    ...(metadata.tos_uri !== undefined ? { tosUri: metadata.tos_uri } : {}),
    requireClientSecret: method !== 'none',
    tokenEndpointAuthMethod: method,
    allowedGrantTypes: [...grants].filter((g) => g !== 'refresh_token'),
    allowOfflineAccess: grants.has('refresh_token'),
    allowedScopes: scopes,
    redirectUris,
    postLogoutRedirectUris,
    // A browser-based client (an MCP client in a web page) calls the token endpoint from the
    // origin it is redirected to: the origins of its web redirect URIs, as Keycloak's "+" web
    // origin. CORS never carries credentials (app.ts), so this lets its page read answers its
    // requests earned by themselves, nothing more.
    allowedCorsOrigins: webOrigins(redirectUris),
    // A client anyone may have registered is never trusted with a silent grant (as Keycloak's
    // anonymous registration policy): the user always sees who asks.
    requireConsent: true,
    requirePkce: true,
    jwks: jwks ?? null,
    jwksUri: jwksUri ?? null,
    ...(signingAlg !== undefined ? { tokenEndpointAuthSigningAlgorithms: [signingAlg] } : {}),
    requestUris: requestUris ?? [],
    backChannelLogoutUri: backchannel ?? null,
    backChannelLogoutSessionRequired: optionalBoolean(m, 'backchannel_logout_session_required') ?? true,
    frontChannelLogoutUri: frontchannel ?? null,
    frontChannelLogoutSessionRequired: optionalBoolean(m, 'frontchannel_logout_session_required') ?? true,
    requireDPoP: optionalBoolean(m, 'dpop_bound_access_tokens') ?? false,
    ...ciba.client,
    // Its URLs are the registrant's choice (with open registration, anyone's): fetched under the SSRF guard.
    registeredDynamically: true,
  };
  return {
    metadata,
    client,
    needsSecret: method !== 'none' && method !== 'private_key_jwt',
    ...(sectorIdentifierUri ? { sectorIdentifierUri } : {}),
  };
}

/** The origins (RFC 6454) of the http and https URIs among `uris`, each once, in order. */
function webOrigins(uris: readonly string[]): string[] {
  const origins = uris.map((u) => new URL(u)).filter((u) => u.protocol === 'https:' || u.protocol === 'http:');
  return [...new Set(origins.map((u) => u.origin))];
}

/**
 * The CIBA members (OpenID CIBA Core 1.0 §4): as registered (RFC 7591 names) and as client
 * settings; both empty for a client without the CIBA grant, which may not name them.
 * @param ciba the grant types include the CIBA grant
 * @param isPublic the client has no credentials (`token_endpoint_auth_method` `none`)
 * @param loopback the ping's SSRF guard lets loopback pass (`RegistrationPolicy.notificationLoopback`)
 * @throws OAuthError `invalid_client_metadata`
 */
function cibaMetadata(
  m: Record<string, unknown>,
  ciba: boolean,
  isPublic: boolean,
  loopback: boolean,
): { metadata: Record<string, unknown>; client: Record<string, unknown> } {
  const mode = optionalEnum(m, 'backchannel_token_delivery_mode', ['poll', 'ping', 'push']);
  const endpoint = optionalUri(m, 'backchannel_client_notification_endpoint', (name, value) =>
    notificationEndpointProblem(name, value, loopback),
  );
  const userCode = optionalBoolean(m, 'backchannel_user_code_parameter');
  if (!ciba) {
    if (mode !== undefined || endpoint !== undefined || userCode !== undefined)
      throw metadataError(`the backchannel_* members need the grant type ${CIBA_GRANT}`);
    return { metadata: {}, client: {} };
  }
  if (isPublic) throw metadataError('the CIBA grant needs a confidential client');
  if (mode === undefined) throw metadataError('backchannel_token_delivery_mode is required with the CIBA grant');
  if (mode === 'push') throw metadataError('backchannel_token_delivery_mode "push" is not supported (poll or ping)');
  if (mode === 'ping' && endpoint === undefined)
    throw metadataError('the ping mode needs backchannel_client_notification_endpoint');
  if (mode === 'poll' && endpoint !== undefined)
    throw metadataError('backchannel_client_notification_endpoint is for the ping mode only');
  if (userCode === true) throw metadataError('backchannel_user_code_parameter is not supported (false only)');
  return {
    metadata: {
      backchannel_token_delivery_mode: mode,
      ...(endpoint !== undefined ? { backchannel_client_notification_endpoint: endpoint } : {}),
      ...(userCode !== undefined ? { backchannel_user_code_parameter: userCode } : {}),
    },
    client: { backchannelTokenDeliveryMode: mode, backchannelClientNotificationEndpoint: endpoint ?? null },
  };
}

/**
 * Why a CIBA notification endpoint is refused, by the rule the ping's SSRF guard applies
 * (http/outbound.ts): https, or http to a loopback host only where the guard lets loopback pass;
 * an address for a host must be an ordinary public one (`isFetchableAddress`), and `localhost`
 * counts as loopback. A host name is resolved and checked again at each ping.
 */
function notificationEndpointProblem(name: string, value: string, loopback: boolean): string | undefined {
  const url = new URL(value);
  if (url.username !== '' || url.password !== '') return `${name} must have no user info`;
  const host = url.hostname.replace(/^\[|\]$/g, '');
  const loopbackHost = LOOPBACK.test(url.hostname) || host.endsWith('.localhost');
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && loopback && loopbackHost))
    return `${name} must be an https URL`;
  if (loopbackHost && !loopback) return `${name} must not point at a loopback host`;
  if (isIP(host) !== 0 && !isFetchableAddress(host, loopback))
    return `${name} must not point at a private, loopback or other special-use address`;
  return undefined;
}

/**
 * Why a redirect URI is refused for a client of `applicationType` (RFC 8252 §7, §8.3; OIDC DCR §2;
 * RFC 6749 §3.1.2), or undefined when it is acceptable: the one rule of every client
 * (`redirectUriProblem`), private-use schemes for `native` clients only, plain http never beyond
 * a loopback host (a registrant cannot mark its client for development).
 */
export function checkRedirectUri(uri: string, applicationType: 'web' | 'native'): string | undefined {
  return redirectUriProblem(uri, { privateUseSchemes: applicationType === 'native', httpOnAnyHost: false });
}

function optionalString(m: Record<string, unknown>, name: string, max: number): string | undefined {
  const v = m[name];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'string' || v.length > max)
    throw metadataError(`${name} must be a string of at most ${max} characters`);
  return v;
}

function optionalBoolean(m: Record<string, unknown>, name: string): boolean | undefined {
  const v = m[name];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'boolean') throw metadataError(`${name} must be true or false`);
  return v;
}

function optionalEnum<T extends string>(m: Record<string, unknown>, name: string, values: readonly T[]): T | undefined {
  const v = optionalString(m, name, 100);
  if (v === undefined) return undefined;
  if (!values.includes(v as T)) throw metadataError(`${name} "${v.slice(0, 60)}" is not supported`);
  return v as T;
}

function stringList(
  m: Record<string, unknown>,
  name: string,
  maxItems: number,
  maxLength = MAX_TEXT_LENGTH,
): string[] | undefined {
  const v = m[name];
  if (v === undefined || v === null) return undefined;
  if (
    !Array.isArray(v) ||
    v.length > maxItems ||
    !v.every((s) => typeof s === 'string' && s.length > 0 && s.length <= maxLength)
  )
    throw metadataError(`${name} must be a list of at most ${maxItems} strings`);
  return [...new Set(v as string[])];
}

function uriList(
  m: Record<string, unknown>,
  name: string,
  error: (description: string) => OAuthError,
  rule: (uri: string) => string | undefined,
): string[] | undefined {
  const v = m[name];
  if (v === undefined || v === null) return undefined;
  if (
    !Array.isArray(v) ||
    v.length > MAX_LIST_LENGTH ||
    !v.every((s) => typeof s === 'string' && s.length <= MAX_URI_LENGTH)
  )
    throw error(`${name} must be a list of at most ${MAX_LIST_LENGTH} URIs of at most ${MAX_URI_LENGTH} characters`);
  for (const uri of v as string[]) {
    const why = URL.canParse(uri) ? rule(uri) : 'must be an absolute URI';
    if (why) throw error(`${name}: ${why}`);
  }
  return [...new Set(v as string[])];
}

function optionalUri(
  m: Record<string, unknown>,
  name: string,
  rule: (name: string, uri: string) => string | undefined,
): string | undefined {
  const v = optionalString(m, name, MAX_URI_LENGTH);
  if (v === undefined) return undefined;
  if (!URL.canParse(v) || v.includes('#')) throw metadataError(`${name} must be an absolute URI without fragment`);
  const why = rule(name, v);
  if (why) throw metadataError(why);
  return v;
}

function optionalJwks(m: Record<string, unknown>): { keys: Record<string, unknown>[] } | undefined {
  const v = m.jwks;
  if (v === undefined || v === null) return undefined;
  const keys = (v as { keys?: unknown }).keys;
  if (typeof v !== 'object' || !Array.isArray(keys) || keys.length === 0 || keys.length > MAX_KEYS)
    throw metadataError(`jwks must be a JWK Set of 1 to ${MAX_KEYS} keys`);
  for (const k of keys) {
    if (typeof k !== 'object' || k === null || Array.isArray(k) || typeof (k as { kty?: unknown }).kty !== 'string')
      throw metadataError('jwks: every key must be a JWK with kty');
    // RFC 7518 §6: private and symmetric members; the provider never holds a client's private key.
    if (['d', 'p', 'q', 'dp', 'dq', 'qi', 'k'].some((p) => p in k))
      throw metadataError('jwks must hold public keys only');
  }
  return { keys: keys as Record<string, unknown>[] };
}
