/**
 * Upstream identity providers (federation): any OpenID provider (`oidc`), the presets `github`,
 * `google`, `microsoft` and `apple`, and a plain OAuth 2.0 server (`oauth2`). One flat entry whose
 * `type` decides which fields it may and must have (`identityProviderIssues`, run with the config's
 * cross-field rules), so that the admin API keeps one object schema for stored providers.
 */
import { createPrivateKey } from 'node:crypto';
import * as z from 'zod';
import { httpsOrLoopback, nonEmpty } from './field-kinds.js';

/** The kinds of upstream provider. */
export const IDENTITY_PROVIDER_TYPES = ['oidc', 'oauth2', 'github', 'google', 'microsoft', 'apple'] as const;
/** One kind of upstream provider. */
export type IdentityProviderType = (typeof IDENTITY_PROVIDER_TYPES)[number];

/** Longest Microsoft tenant: a GUID or a verified domain name. */
const MAX_TENANT_LENGTH = 253;
/** Longest PEM private key accepted (an Apple P-256 key is about 250 characters). */
const MAX_PRIVATE_KEY_LENGTH = 10_000;

const claimNames = z.record(z.string().min(1).max(100), z.string().min(1).max(100));

/** One entry of `identityProviders` (also a stored upstream provider, /admin/v1/identity-providers). */
export const identityProvider = z.strictObject({
  name: nonEmpty.regex(/^[A-Za-z0-9_-]+$/, 'letters, digits, - and _ only').meta({
    description: "The name in acr_values=idp:<name> and in the login page's button: letters, digits, - and _",
  }),
  displayName: z.string().optional().meta({ description: 'Shown on the login page' }),
  type: z.enum(IDENTITY_PROVIDER_TYPES).default('oidc').meta({
    description:
      'The provider kind: oidc (any OpenID provider), github, google, microsoft, apple, or oauth2 (a plain OAuth 2.0 server with a userinfo endpoint)',
  }),
  authority: httpsOrLoopback.optional().meta({
    description:
      'The upstream issuer, discovered at <authority>/.well-known/openid-configuration: https (http only on a loopback host). Required for oidc; google, microsoft and apple default to the real provider (https://accounts.google.com, https://login.microsoftonline.com/<tenant>/v2.0, https://appleid.apple.com)',
    spec: 'OIDC Discovery §4',
  }),
  clientId: nonEmpty.meta({ description: "Sigil's client id at the upstream provider" }),
  clientSecret: z.string().optional().meta({
    description:
      'Sigil\'s client secret at the upstream provider (best given as { "$env": ... } or { "$file": ... }); required for github, google and microsoft; apple takes privateKey instead',
  }),
  scope: z.string().optional().meta({
    description:
      'The scopes asked of the upstream provider; when left out, by type: oidc "openid profile", github "read:user user:email", google and microsoft "openid profile email", apple "openid name email", oauth2 none',
  }),
  claimMapping: claimNames.optional().meta({
    description:
      'oidc only: local claim name → upstream claim name; default maps name, given_name, family_name, email, email_verified',
  }),
  authorizationEndpoint: httpsOrLoopback.optional().meta({
    description: 'github and oauth2: the authorization endpoint (github: https://github.com/login/oauth/authorize)',
    spec: 'RFC 6749 §3.1',
  }),
  tokenEndpoint: httpsOrLoopback.optional().meta({
    description: 'github and oauth2: the token endpoint (github: https://github.com/login/oauth/access_token)',
    spec: 'RFC 6749 §3.2',
  }),
  userinfoEndpoint: httpsOrLoopback.optional().meta({
    description:
      "github and oauth2: where the access token gets the user's JSON (github: https://api.github.com/user, whose numeric id is the subject)",
  }),
  emailsEndpoint: httpsOrLoopback.optional().meta({
    description:
      "github only: the user's email addresses (https://api.github.com/user/emails); only the primary verified one is used",
  }),
  claimMappings: claimNames.optional().meta({
    description:
      'github and oauth2: local claim name → field of the userinfo answer; oauth2 must map sub (the stable user id). github defaults to sub ← id, name ← name, preferred_username ← login',
  }),
  tenant: z
    .string()
    .regex(/^[A-Za-z0-9.-]+$/, 'a tenant id, domain, common, organizations or consumers')
    .max(MAX_TENANT_LENGTH)
    .optional()
    .meta({
      description:
        "microsoft only: common (default), organizations, consumers or a tenant id; for the first three the issuer is checked against the token's tid",
    }),
  teamId: nonEmpty
    .max(100)
    .optional()
    .meta({ description: "apple only: the Apple developer Team ID (the client secret's iss)" }),
  keyId: nonEmpty
    .max(100)
    .optional()
    .meta({ description: "apple only: the Sign in with Apple key's id (the client secret's kid)" }),
  linkVerifiedEmail: z.boolean().default(false).meta({
    description:
      "A first sign-in through this provider may join the one stored user whose verified primary address is the email the provider says is verified (see each type's rule), instead of making a new user. Off by default: the local account's password and second factors are then bypassed by whoever holds that address at the provider, so turn it on only for a provider whose verification you trust (Keycloak likewise asks the user to re-authenticate before linking)",
  }),
  privateKey: z.string().max(MAX_PRIVATE_KEY_LENGTH).optional().meta({
    description:
      'apple only: the Sign in with Apple private key, PKCS #8 PEM (best given as { "$file": "AuthKey_<keyId>.p8" }); Sigil signs the ES256 client secret with it and renews it',
  }),
});

/** An upstream identity provider (federation, `acr_values=idp:<name>`). */
export type IdentityProviderConfig = z.output<typeof identityProvider>;

/** The scopes asked when an entry names none, by type (filled in by `resolveConfig`, `withDefaultScope`). */
export const DEFAULT_SCOPES: Record<IdentityProviderType, string> = {
  oidc: 'openid profile',
  oauth2: '',
  github: 'read:user user:email',
  google: 'openid profile email',
  microsoft: 'openid profile email',
  apple: 'openid name email',
};

/** The entry with its type's default `scope` when it names none. */
export function withDefaultScope(p: IdentityProviderConfig): IdentityProviderConfig {
  return p.scope === undefined ? { ...p, scope: DEFAULT_SCOPES[p.type] } : p;
}

type Field = keyof IdentityProviderConfig;
const COMMON: readonly Field[] = [
  'name',
  'displayName',
  'type',
  'clientId',
  'clientSecret',
  'scope',
  'linkVerifiedEmail',
];

/** The fields each type takes beyond the common ones, and those it needs. */
const FIELDS: Record<IdentityProviderType, { takes: readonly Field[]; needs: readonly Field[] }> = {
  oidc: { takes: ['authority', 'claimMapping'], needs: ['authority'] },
  oauth2: {
    takes: ['authorizationEndpoint', 'tokenEndpoint', 'userinfoEndpoint', 'claimMappings'],
    needs: ['authorizationEndpoint', 'tokenEndpoint', 'userinfoEndpoint', 'claimMappings'],
  },
  github: {
    takes: ['authorizationEndpoint', 'tokenEndpoint', 'userinfoEndpoint', 'emailsEndpoint', 'claimMappings'],
    needs: ['clientSecret'],
  },
  google: { takes: ['authority'], needs: ['clientSecret'] },
  microsoft: { takes: ['authority', 'tenant'], needs: ['clientSecret'] },
  apple: { takes: ['authority', 'teamId', 'keyId', 'privateKey'], needs: ['teamId', 'keyId', 'privateKey'] },
};

/**
 * What is wrong with a provider's fields for its `type`: a field it does not take, one it needs and
 * lacks, an `oauth2` `claimMappings` without `sub`, an Apple `privateKey` that is not PEM.
 * @returns one issue per field, empty when the entry is right.
 */
export function identityProviderIssues(p: IdentityProviderConfig): { field: string; message: string }[] {
  const { takes, needs } = FIELDS[p.type];
  const issues: { field: string; message: string }[] = [];
  for (const [field, value] of Object.entries(p))
    if (value !== undefined && !COMMON.includes(field as Field) && !takes.includes(field as Field))
      issues.push({ field, message: `a provider of type ${p.type} does not take ${field}` });
  if (p.type === 'apple' && p.clientSecret !== undefined)
    issues.push({ field: 'clientSecret', message: 'apple takes privateKey, teamId and keyId instead of clientSecret' });
  for (const field of needs)
    if (p[field] === undefined) issues.push({ field, message: `a provider of type ${p.type} needs ${field}` });
  if (p.type === 'oauth2' && p.claimMappings && p.claimMappings.sub === undefined)
    issues.push({ field: 'claimMappings', message: 'must map sub, the stable user id of the userinfo answer' });
  if (p.privateKey !== undefined && !isP256Key(p.privateKey))
    issues.push({ field: 'privateKey', message: 'must be a PKCS #8 PEM P-256 key (-----BEGIN PRIVATE KEY-----)' });
  return issues;
}

/** Whether `pem` is a PKCS #8 PEM private key on P-256, the curve of Apple's ES256 keys. */
function isP256Key(pem: string): boolean {
  if (!pem.trim().startsWith('-----BEGIN PRIVATE KEY-----')) return false;
  try {
    return createPrivateKey(pem).asymmetricKeyDetails?.namedCurve === 'prime256v1';
  } catch {
    return false;
  }
}
