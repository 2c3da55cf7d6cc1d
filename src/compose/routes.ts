/**
 * Sigil's route table: every endpoint and group of pages, bound to the services it uses, with
 * the paths that answer cross-origin requests and the discovery fields that name its endpoints.
 * A new endpoint or page is one entry here; CORS and discovery follow from it.
 */
import { invitationPages } from '../ui/invitations.js';
import { CONSOLE_PATH } from '../config/console-client.js';
import { adminApiEndpoints } from '../endpoints/admin-api.js';
import { AUTHORIZE_PATH, authorizeEndpoint } from '../endpoints/authorize.js';
import { CIBA_PATH, cibaEndpoint } from '../endpoints/ciba.js';
import { DEVICE_AUTHORIZATION_PATH, deviceAuthorizationEndpoint } from '../endpoints/device-authorization.js';
import {
  DISCOVERY_PATH,
  discoveryEndpoints,
  JWKS_PATH,
  METADATA_PATH,
  pathInsertedMetadataEndpoint,
} from '../endpoints/discovery.js';
import { END_SESSION_PATH, endSessionEndpoint } from '../endpoints/end-session.js';
import { healthEndpoints } from '../endpoints/health.js';
import { INTROSPECTION_PATH, introspectionEndpoint } from '../endpoints/introspection.js';
import { PAR_PATH, pushedAuthorizationEndpoint } from '../endpoints/par.js';
import { callerWithScope, checkAccessToken } from '../endpoints/protected-resource.js';
import { CONFIGURATION_PATH, REGISTRATION_PATH, registrationEndpoint } from '../endpoints/registration.js';
import { REVOCATION_PATH, revocationEndpoint } from '../endpoints/revocation.js';
import { samlEndpoints } from '../endpoints/saml.js';
import { scimEndpoints } from '../endpoints/scim.js';
import { TOKEN_PATH, tokenEndpoint } from '../endpoints/token.js';
import { USERINFO_PATH, userinfoEndpoint } from '../endpoints/userinfo.js';
import type { GrantRegistry } from '../grants/registry.js';
import type { RouteRegistration, RouteTable } from '../http/routes.js';
import type { Services } from '../services.js';
import { accountPages } from '../ui/account.js';
import { backchannelRequestPages } from '../ui/backchannel-requests.js';
import { accountMfaPages } from '../ui/account-mfa.js';
import { accountSelfServicePages } from '../ui/account-self-service.js';
import { adminConsole } from '../ui/admin/console.js';
import { consentPage } from '../ui/consent.js';
import { organizationPickerPage } from '../ui/organization-picker.js';
import { devicePages } from '../ui/device.js';
import { emailPages } from '../ui/email-pages.js';
import { federationRoutes } from '../ui/federation.js';
import { pageScripts } from '../ui/page-scripts.js';
import { passkeyPages } from '../ui/passkeys.js';

/** The JSON APIs of clients and resource servers, and the management APIs. */
function apiRoutes(s: Services, grantTypes: GrantRegistry): RouteRegistration[] {
  return [
    {
      kind: 'api',
      cors: [TOKEN_PATH],
      metadata: { token_endpoint: TOKEN_PATH },
      register: (app) => tokenEndpoint(app, s, grantTypes),
    },
    {
      kind: 'api',
      metadata: { pushed_authorization_request_endpoint: PAR_PATH },
      register: (app) => pushedAuthorizationEndpoint(app, s),
    },
    {
      kind: 'api',
      cors: [USERINFO_PATH],
      metadata: { userinfo_endpoint: USERINFO_PATH },
      register: (app) => userinfoEndpoint(app, s),
    },
    {
      kind: 'api',
      metadata: { introspection_endpoint: INTROSPECTION_PATH },
      register: (app) => introspectionEndpoint(app, s),
    },
    {
      kind: 'api',
      cors: [REVOCATION_PATH],
      metadata: { revocation_endpoint: REVOCATION_PATH },
      register: (app) => revocationEndpoint(app, s),
    },
    {
      kind: 'api',
      metadata: { device_authorization_endpoint: DEVICE_AUTHORIZATION_PATH },
      register: (app) => deviceAuthorizationEndpoint(app, s),
    },
    {
      kind: 'api',
      metadata: { backchannel_authentication_endpoint: CIBA_PATH },
      register: (app) => cibaEndpoint(app, s),
    },
    // RFC 7591 §3, RFC 8414 §2: advertised only where registration is served.
    // Any origin: a browser client registers before anyone could list its origin (bearer tokens only).
    {
      kind: 'api',
      anyOriginCors: s.config.registration.enabled ? [REGISTRATION_PATH, CONFIGURATION_PATH] : [],
      metadata: s.config.registration.enabled ? { registration_endpoint: REGISTRATION_PATH } : {},
      register: (app) => registrationEndpoint(app, s),
    },
    { kind: 'api', register: (app) => scimEndpoints(app, s) }, // SCIM 2.0 at /scim/v2 and per organization (RFC 7644)
    { kind: 'api', register: (app) => adminApiEndpoints(app, s) },
  ];
}

/** The browser endpoints and the pages. */
function pageRoutes(s: Services): RouteRegistration[] {
  return [
    {
      kind: 'page',
      metadata: { authorization_endpoint: AUTHORIZE_PATH },
      register: (app) => authorizeEndpoint(app, s),
    },
    {
      kind: 'page',
      metadata: { end_session_endpoint: END_SESSION_PATH },
      register: (app) => endSessionEndpoint(app, s),
    },
    // The SAML 2.0 identity provider (/saml/*), registered only with saml.enabled.
    { kind: 'page', register: (app) => samlEndpoints(app, s) },
    { kind: 'page', register: (app) => pageScripts(app) }, // "Show password"
    { kind: 'page', register: (app) => accountPages(app, s) },
    { kind: 'page', register: (app) => accountMfaPages(app, s) },
    { kind: 'page', register: (app) => accountSelfServicePages(app, s) },
    { kind: 'page', register: (app) => passkeyPages(app, s) }, // passkeys and security keys (WebAuthn)
    { kind: 'page', register: (app) => emailPages(app, s) }, // password reset, address verification, self-registration
    { kind: 'page', register: (app) => consentPage(app, s) },
    { kind: 'page', register: (app) => invitationPages(app, s) }, // accepting an invitation to an organization
    { kind: 'page', register: (app) => backchannelRequestPages(app, s) }, // answering CIBA requests
    { kind: 'page', register: (app) => organizationPickerPage(app, s) }, // after sign-in, under organizationUsage require
    { kind: 'page', register: (app) => devicePages(app, s) },
    { kind: 'page', register: (app) => federationRoutes(app, s) },
    // The web console at /admin: its token is checked as the management API's are.
    {
      kind: 'page',
      register: (app) =>
        adminConsole(app, s, {
          check: async (request, token, scopes) =>
            callerWithScope(await checkAccessToken(s, request, token, 'Bearer', CONSOLE_PATH), scopes),
        }),
    },
    { kind: 'page', register: (app) => healthEndpoints(app, s) },
  ];
}

/** Builds the route table over `services`; `grantTypes` is the token endpoint's registry. */
export function routeTable(services: Services, grantTypes: GrantRegistry): RouteTable {
  const s = services;
  const endpoints = [...apiRoutes(s, grantTypes), ...pageRoutes(s)];
  const fields = Object.assign({}, ...endpoints.map((e) => e.metadata ?? {})) as Record<string, string>;
  const names = grantTypes.names();
  const discovery: RouteRegistration = {
    kind: 'page',
    cors: [DISCOVERY_PATH, JWKS_PATH, METADATA_PATH],
    register: (app) => discoveryEndpoints(app, s, names, fields),
  };
  const atRoot: RouteRegistration[] = [
    { kind: 'page', register: (app) => healthEndpoints(app, s) },
    { kind: 'page', register: (app) => pathInsertedMetadataEndpoint(app, s, names, fields) },
  ];
  return { routes: [discovery, ...endpoints], atRoot };
}
