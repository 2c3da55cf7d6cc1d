/**
 * The config-file contract, as a zod schema. Field names are camelCase, protocol
 * values keep their wire spelling, every lifetime is in seconds. Unknown fields are refused, so a
 * typo stops the start with the field's path instead of being ignored.
 *
 * The sections and the constants they name live in ./schema/; this module assembles them into
 * `configSchema` and is where the rest of Sigil imports them from.
 */
// A namespace import, as zod documents it: a bundler then keeps only the schema kinds used here,
// where `import { z }` keeps all of zod, its forty-odd locales included (dist/cli/main.js).
import * as z from 'zod';
import { userDirectories } from './user-directories.js';
import { account, email, mfa, webauthn } from './schema/account.js';
import { branding } from './schema/branding.js';
import { clientSchema } from './schema/client.js';
import { CROSS_CHECKED, crossCheck } from './schema/cross-checks.js';
import { lifetime, nonEmpty } from './schema/field-kinds.js';
import { trustedIdentityIssuers } from './schema/id-jag.js';
import { dpop, PENDING_LIMITS_DEFAULTS, pendingLimits, rateLimits } from './schema/limits.js';
import { admin } from './schema/management.js';
import { metrics, trustProxy } from './schema/network.js';
import { DEFAULT_SIGNING_ALGORITHMS, SIGNING_ALGORITHMS } from './schema/protocol.js';
import { MAX_CONFIG_ORGANIZATIONS, organization } from './schema/organizations.js';
import { clientIdMetadataDocuments, registration } from './schema/registration.js';
import { saml, samlServiceProvider } from './schema/saml.js';
import { apiResource, apiScope, identityResource } from './schema/resources.js';
import { user } from './schema/users.js';
import { identityProvider } from './schema/identity-providers.js';
import { MAX_CONFIG_WEBHOOKS, webhook, webhookDelivery } from './schema/webhooks.js';
import { hooks } from './schema/hooks.js';

export { EDITABLE_CLAIMS } from './schema/account.js';
export { CSS_HEX_COLOUR } from './schema/branding.js';
export { clientSchema } from './schema/client.js';
export { clientSubjectCollision, unknownOrganizations } from './schema/cross-checks.js';
export {
  CLIENT_PROFILES,
  FAPI2_ALGORITHMS,
  FAPI2_MAX_CODE_LIFETIME,
  fapi2Contradictions,
  fapi2SigningAlgorithm,
} from './schema/fapi2.js';
export { DPOP_DEFAULTS, PENDING_LIMITS_DEFAULTS } from './schema/limits.js';
export { SUBJECT_MAPPINGS, type TrustedIdentityIssuer } from './schema/id-jag.js';
export {
  isManagementScope,
  MANAGEMENT_RESOURCE,
  MANAGEMENT_SCOPES,
  ORGANIZATION_ADMIN_ROLE,
  ORGANIZATION_ADMIN_SCOPE,
} from './schema/management.js';
export { DEFAULT_METRICS } from './schema/network.js';
export {
  ASSERTION_ALGORITHMS,
  ASYMMETRIC_ASSERTION_ALGORITHMS,
  BUILT_IN_GRANT_TYPES,
  CIBA_GRANT,
  DEFAULT_SIGNING_ALGORITHMS,
  JWT_BEARER_GRANT,
  SIGNING_ALGORITHMS,
  type SigningAlgorithm,
  SYMMETRIC_ASSERTION_ALGORITHMS,
  TOKEN_ENDPOINT_AUTH_METHODS,
  type TokenEndpointAuthMethod,
} from './schema/protocol.js';
export {
  MAX_ORGANIZATION_NAME,
  MEMBERSHIP_KINDS,
  normalizeDomain,
  organization,
  ORGANIZATION_NAME,
  type OrganizationConfig,
} from './schema/organizations.js';
export {
  MAX_ENTITY_ID_LENGTH,
  MAX_SP_METADATA_LENGTH,
  SAML_NAME_ID_FORMATS,
  SAML_SIGNATURE_ALGORITHMS,
  type SamlConfig,
  type SamlServiceProviderConfig,
} from './schema/saml.js';
export { DYNAMIC_AUTH_METHODS, DYNAMIC_GRANT_TYPES, REGISTRATION_DEFAULTS } from './schema/registration.js';
export { apiResource, apiScope, identityResource, isResourceIndicator } from './schema/resources.js';
export {
  isWebhookSecret,
  MAX_WEBHOOK_NAME,
  type WebhookConfig,
  webhook,
  webhookEvents,
  webhookName,
  WEBHOOK_NAME,
  webhookUrl,
} from './schema/webhooks.js';
export { HOOK_NAMES, type HookName, type HookReceiverConfig } from './schema/hooks.js';
export { MAX_SUBJECT_LENGTH, MAX_USERNAME_LENGTH } from './schema/users.js';
export {
  identityProvider,
  IDENTITY_PROVIDER_TYPES,
  type IdentityProviderConfig,
  type IdentityProviderType,
  withDefaultScope,
} from './schema/identity-providers.js';

/** The whole config file. */
export const configSchema = z
  .strictObject({
    $schema: z
      .string()
      .optional()
      .meta({ description: 'The JSON Schema of this file, for editors (sigil config schema); Sigil ignores it' }),
    issuer: z
      .url({ protocol: /^https?$/ })
      .optional()
      .meta({
        description:
          "The issuer URL; every published URL derives from it, never from the request's Host. Its path, if any, is where every route answers (https://example.com/id: /id/connect/token). Default http://localhost:<port>",
        spec: 'OIDC Discovery §3; RFC 8414 §2',
      }),
    storage: nonEmpty.default('sqlite:./data/sigil.db').meta({
      description: 'sqlite:<file>, postgres://user@host:port/db[?schema=name&poolSize=10], or memory (tests only)',
    }),
    port: z.number().int().min(0).max(65535).optional().meta({ description: 'Where to listen. Default 5000' }),
    host: z.string().optional().meta({
      description:
        'The address to listen on. Default 127.0.0.1 (this machine only); 0.0.0.0 for every interface (a container). --host and HOST override it',
    }),
    trustProxy: trustProxy.default(false).meta({
      description:
        "Whose X-Forwarded-For to believe: the proxies' addresses or CIDR ranges (also loopback, linklocal, uniquelocal), or the number of proxies in front of Sigil; true is refused. Affects client addresses only, never the issuer",
    }),
    logLevel: z
      .enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'])
      .default('info')
      .meta({ description: 'pino log level, or silent' }),
    signingAlgorithms: z.array(z.enum(SIGNING_ALGORITHMS)).min(1).default(DEFAULT_SIGNING_ALGORITHMS).meta({
      description:
        'Algorithms Sigil signs with, one key each; the first signs identity and access tokens (fapi2 clients: the first of PS256, ES256, EdDSA listed)',
      spec: 'RFC 7518 §3.1; RFC 8037',
    }),
    identityResources: z
      .array(identityResource)
      .default([
        { name: 'openid', userClaims: ['sub'], required: true },
        { name: 'profile', userClaims: ['name', 'given_name', 'family_name'], required: false },
      ])
      .meta({
        description: 'Identity scopes and the user claims they release (identity token, userinfo)',
        spec: 'OIDC Core §5.4',
      }),
    apiScopes: z
      .array(apiScope)
      .default([])
      .meta({ description: 'API scopes; their user claims go into access tokens' }),
    apiResources: z.array(apiResource).default([]).meta({
      description:
        'APIs: a name is the aud of tokens for its scopes, and the API authenticates at introspection with a secret',
      spec: 'RFC 7662; RFC 8707',
    }),
    clients: z
      .array(clientSchema)
      .default([])
      .meta({ description: 'The registered clients (more may be stored with sigil clients add)', spec: 'RFC 6749 §2' }),
    users: z
      .array(user)
      .default([])
      .meta({ description: 'Users of the config file; clear-text passwords are hashed at start' }),
    identityProviders: z.array(identityProvider).default([]).meta({
      description:
        'Upstream identity providers: any OpenID provider, GitHub, Google, Microsoft, Apple or a plain OAuth 2.0 server (federation, acr_values=idp:<name>)',
    }),
    userDirectories,
    trustedIdentityIssuers,
    organizations: z
      .array(organization)
      .max(MAX_CONFIG_ORGANIZATIONS)
      .default([])
      .meta({
        description: `Customer organizations (B2B), read-only through /admin/v1/organizations; their members are managed at run time. At most ${MAX_CONFIG_ORGANIZATIONS}; more may be stored through the API`,
      }),
    saml: saml.meta({
      description: 'The SAML 2.0 identity provider: the same users, sessions and second factors for SAML applications',
      spec: 'SAML Core, Bindings, Profiles, Metadata 2.0',
    }),
    samlServiceProviders: z
      .array(samlServiceProvider)
      .default([])
      .refine(
        (sps) => new Set(sps.map((sp) => sp.entityId)).size === sps.length,
        'two service providers have the same entityId',
      )
      .meta({ description: 'SAML service providers, read-only at run time' }),
    webhooks: z
      .array(webhook)
      .max(MAX_CONFIG_WEBHOOKS)
      .default([])
      .superRefine((hooks, ctx) =>
        hooks.forEach((h, i) => {
          if (hooks.findIndex((o) => o.name === h.name) !== i)
            ctx.addIssue({ code: 'custom', path: [i, 'name'], message: `duplicate webhook name "${h.name}"` });
        }),
      )
      .meta({
        description: `Event webhooks (Standard Webhooks), read-only through /admin/v1/webhooks; more may be stored there. At most ${MAX_CONFIG_WEBHOOKS}`,
      }),
    webhookDelivery,
    hooks,
    rateLimits: rateLimits.prefault({}).meta({
      description:
        'Limits on failed credential checks (client secrets, API secrets, passwords, user codes), shared through Redis when SIGIL_REDIS_URL is set',
    }),
    pendingLimits: pendingLimits.default(PENDING_LIMITS_DEFAULTS).meta({
      description: 'How many stored requests callers who have not signed in may start per window (OWASP API4:2023)',
    }),
    dpop,
    metrics,
    mfa,
    account,
    clientAssertionMaxLifetime: z.number().int().positive().max(3600).default(300).meta({
      description:
        'Client assertions whose exp is further ahead than this many seconds are refused, so a jti need be remembered at most this long',
      spec: 'RFC 7523 §3',
    }),
    pushedAuthorizationRequestLifetime: z
      .number()
      .int()
      .positive()
      .max(600)
      .default(60)
      .meta({ description: 'How long a request_uri from /connect/par stays usable, seconds', spec: 'RFC 9126 §2.2' }),
    requirePushedAuthorizationRequests: z.boolean().default(false).meta({
      description: 'Every authorization request of every client must come through /connect/par',
      spec: 'RFC 9126 §5',
    }),
    sessionLifetime: lifetime.default(36000).meta({ description: 'Lifetime of a browser sign-in session, seconds' }),
    knownBrowserLifetime: lifetime
      .max(400 * 24 * 3600)
      .default(7776000)
      .meta({
        description:
          "How long a browser that signed a user in with a password stays known for that user (its sigil.known cookie, signed with Sigil's keys), seconds; a known browser keeps its own share of an LDAP directory's wrong passwords (knownBrowserBinds). Each password sign-in renews it",
      }),
    signingKeys: z
      .strictObject({
        propagationSeconds: z
          .number()
          .int()
          .min(0)
          .default(1209600)
          .meta({ description: 'A new key is published this long before it signs' }),
        retentionSeconds: z
          .number()
          .int()
          .min(0)
          .default(1209600)
          .meta({ description: 'A replaced key stays published this long' }),
        rotationSeconds: lifetime.default(7776000).meta({ description: 'Keys rotate after this long' }),
        reloadSeconds: lifetime
          .default(60)
          .meta({ description: 'How often each node re-reads the keys and stored clients from the store' }),
      })
      .default({ propagationSeconds: 1209600, retentionSeconds: 1209600, rotationSeconds: 7776000, reloadSeconds: 60 })
      .meta({
        description:
          'Signing key lifecycle, seconds: published propagationSeconds before signing, kept retentionSeconds after replacement, rotated every rotationSeconds, re-read every reloadSeconds',
      }),
    backChannelLogout: z
      .strictObject({
        timeoutSeconds: lifetime
          .max(60)
          .default(5)
          .meta({ description: "Each POST's timeout, seconds", spec: 'OIDC Back-Channel Logout §2.5' }),
        retrySeconds: lifetime
          .default(600)
          .meta({ description: 'How long a logout token is retried before it is given up, seconds' }),
        pollSeconds: lifetime
          .default(5)
          .meta({ description: 'How often each node looks for due deliveries and expired sessions, seconds' }),
      })
      .default({ timeoutSeconds: 5, retrySeconds: 600, pollSeconds: 5 })
      .meta({
        description:
          "Back-channel logout delivery: each POST's timeout, how long a logout token is retried (backing off from 1 s to 60 s), how often each node looks for due deliveries",
        spec: 'OIDC Back-Channel Logout §2.5',
      }),
    webauthn,
    clientIdMetadataDocuments,
    email,
    accessTokenCache: z
      .strictObject({
        maxAgeMilliseconds: z
          .number()
          .int()
          .min(0)
          .max(60_000)
          .default(1000)
          .meta({ description: 'Reuse a token row read less than this long ago; 0 reads the store every time' }),
        maxEntries: z
          .number()
          .int()
          .min(1)
          .max(1_000_000)
          .default(10_000)
          .meta({ description: 'The most rows kept per process' }),
      })
      .default({ maxAgeMilliseconds: 1000, maxEntries: 10_000 })
      .meta({
        description:
          'Introspection and userinfo reuse a token row read less than maxAgeMilliseconds ago: the bound within which a revocation on another node is seen; 0 reads the store every time',
      }),
    registration,
    admin,
    cleanup: z
      .strictObject({
        intervalSeconds: lifetime.default(60).meta({ description: 'How often expired rows are removed, seconds' }),
        batchSize: lifetime.default(1000).meta({ description: 'Rows removed per batch' }),
      })
      .default({ intervalSeconds: 60, batchSize: 1000 })
      .meta({
        description:
          'Removal of expired grants, codes and sessions by one node at a time, every intervalSeconds, in batches of batchSize rows',
      }),
    // Look and language: branding and extra text catalogues.
    branding: branding.prefault({}).meta({
      description: 'The look of the pages: product name, logo, icon, colour, extra style sheet, template overrides',
    }),
    localesDir: nonEmpty.optional().meta({
      description:
        'A folder of page text catalogues (<tag>.json, e.g. it.json) merged over the shipped English, German, French and Spanish ones; a new tag adds a language',
    }),
  })
  .superRefine(crossCheck, {
    // Run even when other fields have type errors (a wrong port), so that one check reports every
    // problem; skipped only when a field these rules read has one (zod's aborting issues, as by
    // default: `continue` not true).
    when: (payload) => payload.issues.every((i) => i.continue === true || !CROSS_CHECKED.has(String(i.path?.[0]))),
  });

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
