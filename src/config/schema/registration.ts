/**
 * Clients that are not in the config: Dynamic Client Registration (RFC 7591, RFC 7592) and
 * Client ID Metadata Documents.
 */
import * as z from 'zod';
import { lifetime, nonEmpty } from './field-kinds.js';
import { CIBA_GRANT } from './protocol.js';

/** Grant types a dynamically registered client may be given (never password or token exchange). */
export const DYNAMIC_GRANT_TYPES = ['authorization_code', 'refresh_token', 'client_credentials', CIBA_GRANT] as const;
/**
 * Token endpoint methods a dynamically registered client may use: no client_secret_jwt, its secret is kept as
 * a digest only.
 */
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
export const registration = z
  .strictObject({
    enabled: z.boolean().default(REGISTRATION_DEFAULTS.enabled).meta({
      description: 'Serve /connect/register and advertise registration_endpoint',
      spec: 'RFC 7591 §3; RFC 8414 §2',
    }),
    open: z.boolean().default(REGISTRATION_DEFAULTS.open).meta({
      description:
        'Anyone may register a client without an initial access token (still bound by the policies and registrationsPerAddress)',
      spec: 'RFC 7591 §3',
    }),
    allowedGrantTypes: z
      .array(z.enum(DYNAMIC_GRANT_TYPES))
      .min(1)
      .default(REGISTRATION_DEFAULTS.allowedGrantTypes)
      .meta({
        description:
          'Grant types a dynamic client may register: authorization_code, refresh_token, client_credentials, urn:openid:params:grant-type:ciba (password and token exchange never)',
        spec: 'RFC 7591 §2',
      }),
    allowedScopes: z.array(nonEmpty).optional().meta({
      description:
        "Scopes a dynamic client may register, granted only through the user's consent. Default: every identity and API scope (those of the config file and those created through /admin/v1) and offline_access, as for Client ID Metadata Documents; scim and sigil:* never. A client registering client_credentials may register only the scopes listed here (without a list: identity scopes and offline_access, so its own tokens carry no API scope)",
      spec: 'RFC 7591 §2',
    }),
    allowedTokenEndpointAuthMethods: z
      .array(z.enum(DYNAMIC_AUTH_METHODS))
      .min(1)
      .default(REGISTRATION_DEFAULTS.allowedTokenEndpointAuthMethods)
      .meta({ description: 'token_endpoint_auth_method values a dynamic client may register', spec: 'RFC 7591 §2' }),
    registrationsPerAccessToken: z
      .number()
      .int()
      .positive()
      .default(REGISTRATION_DEFAULTS.registrationsPerAccessToken)
      .meta({
        description:
          'Registrations one access token with the sigil:register scope may make (tokens of sigil clients initial-token carry their own cap)',
      }),
    registrationsPerAddress: z.number().int().positive().default(REGISTRATION_DEFAULTS.registrationsPerAddress).meta({
      description:
        'Registrations one address (an IPv6 /64) may make per windowSeconds, with or without an initial access token',
    }),
    windowSeconds: lifetime
      .default(REGISTRATION_DEFAULTS.windowSeconds)
      .meta({ description: 'The window of registrationsPerAddress, seconds' }),
    unusedClientDays: z
      .number()
      .int()
      .min(0)
      .default(REGISTRATION_DEFAULTS.unusedClientDays)
      .meta({ description: 'A dynamic client neither used nor managed for this many days is removed; 0 keeps them' }),
  })
  .default(REGISTRATION_DEFAULTS)
  .meta({ description: 'Dynamic client registration and management', spec: 'RFC 7591; RFC 7592' });

/** `clientIdMetadataDocuments`: clients identified by an https URL that names their metadata document. */
export const clientIdMetadataDocuments = z
  .strictObject({
    enabled: z.boolean().default(true).meta({
      description:
        "A client_id that is an https URL names the client's metadata document, fetched (5 s, 64 KB, no redirects, never from private or other special-use addresses) and cached as its HTTP caching headers say (60 s to 24 h); such clients are public or private_key_jwt, use the code flow with PKCE and refresh tokens, and always see the consent page, which names the URL's host",
      spec: 'draft-ietf-oauth-client-id-metadata-document',
    }),
    allowLoopback: z.boolean().default(false).meta({
      description:
        'Development and tests only: documents, their jwks_uri and the URLs of dynamically registered clients may be on loopback addresses (127.0.0.0/8, ::1; plain http there too); never in production',
    }),
    fetchesPerAddress: z.number().int().positive().default(60).meta({
      description:
        'Document fetches one address (an IPv6 /64) may cause per pendingLimits.windowSeconds; cached documents do not count',
    }),
    allowedScopes: z.array(nonEmpty).nullable().default(null).meta({
      description:
        "The scopes such clients may request, granted only through the user's consent; null: every identity and API scope except scim and sigil:* ones (never allowed), as for dynamically registered clients. Names not defined are ignored",
    }),
  })
  .default({ enabled: true, allowLoopback: false, fetchesPerAddress: 60, allowedScopes: null })
  .meta({
    description:
      'Client ID Metadata Documents: clients that identify themselves by an https URL instead of registering (MCP clients)',
    spec: 'draft-ietf-oauth-client-id-metadata-document',
  });
