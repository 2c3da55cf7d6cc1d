/**
 * Discovery (OpenID Connect Discovery 1.0 §3, RFC 8414 §2) at `/.well-known/openid-configuration`,
 * the same document as OAuth 2.0 Authorization Server Metadata at
 * `/.well-known/oauth-authorization-server` (RFC 8414 §3), and the JWKS (RFC 7517) at
 * `/.well-known/openid-configuration/jwks`. Every URL derives from the configured issuer, never
 * from the request (RFC 9700 §4.13); only what is implemented is advertised.
 */
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { Services } from '../services.js';
import { ASSERTION_ALGORITHMS } from '../config/schema.js';
import { methodNotAllowed } from '../http/request.js';
import { attainableAcrs } from '../users/acr.js';
import { RESPONSE_TYPES } from '../validation/authorize-request.js';
import { OFFLINE_ACCESS } from '../resources/scopes.js';
import { DPOP_ALGORITHMS } from '../validation/dpop.js';
import { ID_JAG_TOKEN_TYPE } from '../grants/id-jag-exchange.js';
import { ORGANIZATION_CLAIMS } from '../tokens/organization-claims.js';
import { REQUEST_OBJECT_ASYMMETRIC, REQUEST_OBJECT_SYMMETRIC } from '../validation/request-object.js';

/** The services this module uses. */
export type DiscoveryEndpointServices = Pick<
  Services,
  'basePath' | 'clients' | 'config' | 'issuer' | 'keys' | 'resources' | 'upstream'
>;

/** The methods of confidential clients (RFC 6749 §2.3.1; OIDC Core §9). */
const CLIENT_AUTH_METHODS = [
  'client_secret_basic',
  'client_secret_post',
  'client_secret_jwt',
  'private_key_jwt',
] as const;

/** Seconds that clients may cache discovery and the JWKS. */
const MAX_AGE = 300;

/**
 * Builds the discovery document of a Sigil instance (OpenID Connect Discovery 1.0 §3, RFC 8414 §2).
 * @param grantTypes every grant type the token endpoint handles; the document lists those some client may use
 * @param endpoints the route table's endpoint fields (`token_endpoint` → `/connect/token`), paths below the issuer's
 */
export function discoveryDocument(
  ctx: DiscoveryEndpointServices,
  grantTypes: readonly string[],
  endpoints: Readonly<Record<string, string>>,
): Record<string, unknown> {
  const base = ctx.issuer;
  const clients = ctx.clients.all();
  // Clients of metadata documents (draft-ietf-oauth-client-id-metadata-document) use the code flow and refresh tokens.
  const documents = ctx.config.clientIdMetadataDocuments.enabled;
  const usedGrantTypes = grantTypes.filter(
    (g) =>
      (documents && (g === 'authorization_code' || g === 'refresh_token')) ||
      clients.some((c) => (g === 'refresh_token' ? c.allowOfflineAccess : c.allowedGrantTypes.includes(g))),
  );
  // `acr` is a claim a client may ask for (acr_values, the claims parameter) and receive.
  const claims = new Set<string>(['sub', 'acr']);
  for (const r of ctx.resources.identity.values()) for (const c of r.userClaims) claims.add(c);
  for (const s of ctx.resources.apiScopes.values()) for (const c of s.userClaims) claims.add(c);
  for (const r of ctx.resources.apiResources) for (const c of r.userClaims) claims.add(c);
  // The organization claims, once some client may sign in to an organization (organizationUsage).
  if (clients.some((c) => c.organizationUsage !== 'none')) for (const c of ORGANIZATION_CLAIMS) claims.add(c);
  // The classes some client can achieve (users/acr.ts): password and MFA when a client allows
  // local login, federated when an upstream provider is configured for one.
  const acrs = attainableAcrs(
    clients.some((c) => c.enableLocalLogin),
    clients.some((c) => ctx.upstream.allowedFor(c.identityProviderRestrictions).length > 0) ? 1 : 0,
  );
  const scopes = ctx.resources
    .allScopeNames()
    .filter((s) => s !== OFFLINE_ACCESS || documents || clients.some((c) => c.allowOfflineAccess));
  return {
    issuer: base,
    jwks_uri: `${base}${JWKS_PATH}`,
    // The endpoints of the route table (authorization, token, userinfo, ... registration when served).
    ...Object.fromEntries(Object.entries(endpoints).map(([field, path]) => [field, `${base}${path}`])),
    scopes_supported: scopes,
    claims_supported: [...claims],
    grant_types_supported: usedGrantTypes,
    response_types_supported: [...RESPONSE_TYPES],
    response_modes_supported: ['query', 'fragment', 'form_post'],
    prompt_values_supported: ['none', 'login', 'consent', 'select_account'],
    token_endpoint_auth_methods_supported: [...CLIENT_AUTH_METHODS, 'none'],
    token_endpoint_auth_signing_alg_values_supported: [...ASSERTION_ALGORITHMS],
    introspection_endpoint_auth_methods_supported: [...CLIENT_AUTH_METHODS],
    introspection_endpoint_auth_signing_alg_values_supported: [...ASSERTION_ALGORITHMS],
    revocation_endpoint_auth_methods_supported: [...CLIENT_AUTH_METHODS, 'none'],
    revocation_endpoint_auth_signing_alg_values_supported: [...ASSERTION_ALGORITHMS],
    require_pushed_authorization_requests: ctx.config.requirePushedAuthorizationRequests,
    id_token_signing_alg_values_supported: ctx.keys.algorithms,
    code_challenge_methods_supported: clients.some((c) => c.allowPlainTextPkce) ? ['S256', 'plain'] : ['S256'],
    subject_types_supported: ['public'],
    claims_parameter_supported: true,
    ...(acrs.length > 0 ? { acr_values_supported: acrs } : {}),
    request_parameter_supported: true,
    request_uri_parameter_supported: clients.some((c) => c.requestUris.length > 0),
    require_request_uri_registration: true,
    request_object_signing_alg_values_supported: [...REQUEST_OBJECT_ASYMMETRIC, ...REQUEST_OBJECT_SYMMETRIC],
    authorization_response_iss_parameter_supported: true,
    // OIDC Back-Channel Logout 1.0 §2.1 and Front-Channel Logout 1.0 §3: logout tokens and iframe URIs carry `sid`.
    backchannel_logout_supported: true,
    backchannel_logout_session_supported: true,
    frontchannel_logout_supported: true,
    frontchannel_logout_session_supported: true,
    // OpenID CIBA Core 1.0 §4: no push mode, no user_code; no signed requests, so no
    // backchannel_authentication_request_signing_alg_values_supported.
    backchannel_token_delivery_modes_supported: ['poll', 'ping'],
    backchannel_user_code_parameter_supported: false,
    dpop_signing_alg_values_supported: [...DPOP_ALGORITHMS],
    // RFC 9396 §10, once some API resource declares a type.
    ...(ctx.resources.authorizationDetailsTypes.size > 0
      ? { authorization_details_types_supported: [...ctx.resources.authorizationDetailsTypes.keys()] }
      : {}),
    // draft-ietf-oauth-identity-assertion-authz-grant §"Authorization Server (IdP) Metadata", once
    // some client may ask for an ID-JAG.
    ...(clients.some((c) => c.idJagAudiences.length > 0)
      ? { identity_chaining_requested_token_types_supported: [ID_JAG_TOKEN_TYPE] }
      : {}),
    // draft-ietf-oauth-client-id-metadata-document §6 (also in the RFC 8414 document built here).
    client_id_metadata_document_supported: documents,
  };
}

/** OpenID Connect Discovery 1.0 §4. */
export const DISCOVERY_PATH = '/.well-known/openid-configuration';
/** RFC 8414 §3, below the issuer's path. */
export const METADATA_PATH = '/.well-known/oauth-authorization-server';
/** The JWKS (RFC 7517 §5), the document's `jwks_uri`. */
export const JWKS_PATH = '/.well-known/openid-configuration/jwks';

/**
 * The discovery document's handler: the document depends on the clients (grant types, PKCE
 * methods), the resources (scopes, claims) and the upstream providers (acr values), so it is
 * rebuilt when one of them changes. OpenID discovery and RFC 8414 metadata are one document from
 * one builder (RFC 8414 §2 is the superset OIDC Discovery §3 registers into), so they can never
 * disagree.
 */
function documentHandler(
  ctx: DiscoveryEndpointServices,
  grantTypes: readonly string[],
  endpoints: Readonly<Record<string, string>>,
): (request: unknown, reply: FastifyReply) => Promise<FastifyReply> {
  let cached = { version: '', document: '' };
  return async (_request, reply) => {
    const version = `${ctx.clients.version}.${ctx.resources.version}.${ctx.upstream.version}`;
    if (cached.version !== version)
      cached = { version, document: JSON.stringify(discoveryDocument(ctx, grantTypes, endpoints)) };
    return reply
      .header('cache-control', `public, max-age=${MAX_AGE}`)
      .type('application/json; charset=utf-8')
      .send(cached.document);
  };
}

/**
 * Registers discovery (OIDC Discovery §4: `<issuer>/.well-known/openid-configuration`), the
 * RFC 8414 metadata below the issuer's path too (`<issuer>/.well-known/oauth-authorization-server`,
 * where clients that treat the issuer as a base URL look) and the JWKS (GET; other methods 405).
 * For an issuer with a path, RFC 8414 §3.1's own location is at the host's root: see
 * `pathInsertedMetadataEndpoint`.
 */
export function discoveryEndpoints(
  app: FastifyInstance,
  ctx: DiscoveryEndpointServices,
  grantTypes: readonly string[],
  endpoints: Readonly<Record<string, string>>,
): void {
  const document = documentHandler(ctx, grantTypes, endpoints);
  for (const url of [DISCOVERY_PATH, METADATA_PATH]) app.get(url, document);
  app.get(JWKS_PATH, async (_request, reply) =>
    reply
      .header('cache-control', `public, max-age=${MAX_AGE}`)
      .type('application/json; charset=utf-8')
      .send(ctx.keys.jwks()),
  );
  for (const url of [DISCOVERY_PATH, METADATA_PATH, JWKS_PATH])
    app.route({ method: ['POST', 'PUT', 'DELETE', 'PATCH'], url, handler: methodNotAllowed('GET') });
}

/**
 * Registers, on an app at the host's root, the RFC 8414 metadata of an issuer with a path at the
 * location §3.1 gives it: the well-known segment between the host and the issuer's path, so a
 * client of issuer `https://h/tenant` asks `https://h/.well-known/oauth-authorization-server/tenant`.
 * The standalone server does (its listener is Sigil's alone); a host app mounting `sigilPlugin`
 * under a path routes that URL itself (docs/library.md, "Sigil inside your app").
 */
export function pathInsertedMetadataEndpoint(
  app: FastifyInstance,
  ctx: DiscoveryEndpointServices,
  grantTypes: readonly string[],
  endpoints: Readonly<Record<string, string>>,
): void {
  const url = `${METADATA_PATH}${ctx.basePath}`;
  app.get(url, documentHandler(ctx, grantTypes, endpoints));
  app.route({ method: ['POST', 'PUT', 'DELETE', 'PATCH'], url, handler: methodNotAllowed('GET') });
}
