/**
 * What each type of upstream provider means when its config leaves a field out: the real
 * provider's endpoints (GitHub's OAuth web flow and REST API, Google's, Microsoft's and Apple's
 * OpenID issuers), the scopes asked, and which upstream claim says an email address is verified.
 */
import { type IdentityProviderConfig, withDefaultScope } from '../config/schema.js';

/** GitHub's OAuth web flow and REST API (docs.github.com, "Authorizing OAuth apps", "Users", "Emails"). */
export const GITHUB_ENDPOINTS = {
  authorizationEndpoint: 'https://github.com/login/oauth/authorize',
  tokenEndpoint: 'https://github.com/login/oauth/access_token',
  userinfoEndpoint: 'https://api.github.com/user',
  emailsEndpoint: 'https://api.github.com/user/emails',
} as const;

/** Local claim → field of GitHub's `/user` answer: the numeric `id` is the subject (a login rename keeps it). */
export const GITHUB_CLAIM_MAPPINGS: Record<string, string> = { sub: 'id', name: 'name', preferred_username: 'login' };

const GOOGLE_AUTHORITY = 'https://accounts.google.com';
const APPLE_AUTHORITY = 'https://appleid.apple.com';
const MICROSOFT_LOGIN = 'https://login.microsoftonline.com';

/** Whether the provider speaks OpenID Connect (an identity token, discovery at its authority). */
export function isOpenIdProvider(p: IdentityProviderConfig): boolean {
  return p.type !== 'github' && p.type !== 'oauth2';
}

/** The Microsoft tenant of a `microsoft` provider: `common` unless configured. */
export function microsoftTenant(p: IdentityProviderConfig): string {
  return p.tenant ?? 'common';
}

/**
 * The issuer discovered for an OpenID provider: its `authority`, else the real provider's
 * (`https://login.microsoftonline.com/<tenant>/v2.0` for Microsoft).
 * @throws Error for a type without an authority (github, oauth2), or an oidc entry without one
 *   (the config checks refuse both).
 */
export function authorityOf(p: IdentityProviderConfig): string {
  if (p.authority) return p.authority;
  if (p.type === 'google') return GOOGLE_AUTHORITY;
  if (p.type === 'apple') return APPLE_AUTHORITY;
  if (p.type === 'microsoft') return `${MICROSOFT_LOGIN}/${microsoftTenant(p)}/v2.0`;
  throw new Error(`a provider of type ${p.type} has no authority`);
}

/** The scopes asked of the provider: its `scope`, else its type's default (a stored entry read before `resolveConfig`). */
export function scopeOf(p: IdentityProviderConfig): string {
  return withDefaultScope(p).scope ?? '';
}

/** The endpoints of a plain OAuth 2.0 provider (github, oauth2): configured, else GitHub's. */
export function oauth2Endpoints(p: IdentityProviderConfig): {
  authorizationEndpoint: string;
  tokenEndpoint: string;
  userinfoEndpoint: string;
  emailsEndpoint?: string;
} {
  const github = p.type === 'github' ? GITHUB_ENDPOINTS : undefined;
  const pick = (field: keyof typeof GITHUB_ENDPOINTS): string => {
    const value = p[field] ?? github?.[field];
    if (!value) throw new Error(`a provider of type ${p.type} needs ${field}`);
    return value;
  };
  return {
    authorizationEndpoint: pick('authorizationEndpoint'),
    tokenEndpoint: pick('tokenEndpoint'),
    userinfoEndpoint: pick('userinfoEndpoint'),
    ...(github ? { emailsEndpoint: pick('emailsEndpoint') } : {}),
  };
}

/**
 * Whether the upstream vouches that the claims' `email` is its user's: `email_verified` true
 * (OIDC Core §5.1; Apple sends the string "true"). Microsoft's `email` is whatever the tenant
 * typed in, so it counts only with `xms_edov` true (optional claim "email domain owner verified",
 * Microsoft identity platform, "Optional claims reference"). GitHub's is verified by construction
 * (only a primary verified address is taken, `githubEmail`).
 */
export function emailVerified(p: IdentityProviderConfig, claims: Record<string, unknown>): boolean {
  if (typeof claims.email !== 'string') return false;
  const yes = (v: unknown) => v === true || v === 'true' || v === 1 || v === '1';
  if (p.type === 'microsoft') return yes(claims.xms_edov);
  return yes(claims.email_verified);
}
