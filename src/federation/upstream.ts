/**
 * Upstream identity providers, as a relying party built on `openid-client`: discovery of the
 * upstream issuer, authorization code with PKCE, `state` and `nonce`, identity token validation;
 * the presets' particulars are in their modules (oauth2.ts for GitHub and plain OAuth 2.0,
 * apple.ts, microsoft.ts; their defaults in presets.ts). An external user is linked to a stable
 * local subject by the full pair (provider, upstream `sub`) (OIDC Core §2, §5.7), never by a cut
 * or case-folded name; their mapped claims are refreshed at every sign-in.
 */
import * as oidc from 'openid-client';
import type { IdentityProviderConfig } from '../config/schema.js';
import { APPLE_FIRST_SIGN_IN_CLAIMS, AppleClientSecrets, appleFormPost, appleUserName } from './apple.js';
import { microsoftCodeGrant } from './microsoft.js';
import { oauth2Configuration, oauth2Finish } from './oauth2.js';
import { authorityOf, emailVerified, GITHUB_CLAIM_MAPPINGS, isOpenIdProvider, scopeOf } from './presets.js';

/** Local claim → upstream claim used when a provider has no `claimMapping`. */
export const DEFAULT_CLAIM_MAPPING: Record<string, string> = {
  name: 'name',
  given_name: 'given_name',
  family_name: 'family_name',
  email: 'email',
  email_verified: 'email_verified',
};

/** What starting a sign-in at the upstream provider needs to remember until the callback. */
export interface UpstreamRequest {
  url: string;
  state: string;
  nonce: string;
  codeVerifier: string;
}

/**
 * The upstream providers by name: the config file's, then those managed at run time through
 * /admin/v1 (`setStored`; a name the config file uses keeps its definition there). One object
 * lives as long as the server; every call reads the current providers.
 */
export class UpstreamProviders {
  private providers: Map<string, IdentityProviderConfig>;
  private stored = new Set<string>();
  private readonly configs = new Map<string, Promise<oidc.Configuration>>();
  private readonly appleSecrets = new AppleClientSecrets();
  /** Grows whenever the stored providers change; lets derived data (discovery) be cached. */
  version = 0;

  constructor(
    private readonly configured: readonly IdentityProviderConfig[],
    private readonly issuer: string,
  ) {
    this.providers = new Map(configured.map((p) => [p.name, p]));
  }

  /**
   * Replaces the stored providers (checked by the caller). A provider whose settings changed or
   * that is gone is discovered anew at its next use; a sign-in under way at it fails at the
   * callback when it is gone.
   */
  setStored(stored: readonly IdentityProviderConfig[]): void {
    const fresh = stored.filter((p) => !this.configured.some((c) => c.name === p.name));
    const next = new Map([...this.configured, ...fresh].map((p) => [p.name, p]));
    let changed = next.size !== this.providers.size;
    for (const [name, before] of this.providers) {
      if (JSON.stringify(next.get(name)) === JSON.stringify(before)) continue;
      this.configs.delete(name);
      changed = true;
    }
    this.providers = next;
    this.stored = new Set(fresh.map((p) => p.name));
    if (changed) this.version += 1;
  }

  /** Where the provider named `name` is defined, or undefined when there is none. */
  sourceOf(name: string): 'config' | 'store' | undefined {
    if (!this.providers.has(name)) return undefined;
    return this.stored.has(name) ? 'store' : 'config';
  }

  /** The provider named `name`, or undefined. */
  get(name: string): IdentityProviderConfig | undefined {
    return this.providers.get(name);
  }

  /** Every provider: the config file's in config order, then stored ones. */
  all(): IdentityProviderConfig[] {
    return [...this.providers.values()];
  }

  /** The providers a client may use (`identityProviderRestrictions`, empty = all). */
  allowedFor(restrictions: readonly string[]): IdentityProviderConfig[] {
    return this.all().filter((p) => restrictions.length === 0 || restrictions.includes(p.name));
  }

  /** Sigil's callback URL for a provider. */
  callbackUrl(name: string): string {
    return `${this.issuer}/federation/${name}/callback`;
  }

  /**
   * Builds the upstream authorization request (code flow, PKCE S256, state; a nonce for OpenID
   * providers; `response_mode=form_post` for Apple when the name or email is asked).
   * @throws Error when the upstream provider cannot be discovered.
   */
  async start(provider: IdentityProviderConfig): Promise<UpstreamRequest> {
    const openId = isOpenIdProvider(provider);
    const config = openId ? await this.configuration(provider) : oauth2Configuration(provider);
    const codeVerifier = oidc.randomPKCECodeVerifier();
    const state = oidc.randomState();
    const nonce = openId ? oidc.randomNonce() : '';
    const scope = scopeOf(provider);
    const url = oidc.buildAuthorizationUrl(config, {
      redirect_uri: this.callbackUrl(provider.name),
      ...(scope ? { scope } : {}),
      response_type: 'code',
      code_challenge: await oidc.calculatePKCECodeChallenge(codeVerifier),
      code_challenge_method: 'S256',
      state,
      ...(openId ? { nonce } : {}),
      ...(provider.type === 'apple' && appleFormPost(scope) ? { response_mode: 'form_post' } : {}),
    });
    return { url: url.href, state, nonce, codeVerifier };
  }

  /**
   * Completes the sign-in at the callback: redeems the code and returns the upstream user's
   * claims. OpenID providers: the identity token is validated (signature, issuer, audience, nonce;
   * Microsoft's issuer per tenant) and its claims merged with userinfo's (Apple has no userinfo:
   * the name of its first sign-in's `user` field is added). GitHub and `oauth2`: the userinfo
   * answer's mapped fields (oauth2.ts).
   * @param posted the fields of a form_post callback beyond code and state (Apple's `user`)
   * @throws Error (openid-client's or ours) for an error response, a state mismatch or a bad token.
   */
  async finish(
    provider: IdentityProviderConfig,
    callbackUrl: URL,
    pending: Omit<UpstreamRequest, 'url'>,
    posted: { user?: string } = {},
  ): Promise<Record<string, unknown>> {
    if (!isOpenIdProvider(provider)) return oauth2Finish(provider, callbackUrl, pending);
    const discovered = await this.configuration(provider);
    if (provider.type === 'microsoft')
      return microsoftCodeGrant(provider, {
        metadata: discovered.serverMetadata(),
        callbackUrl,
        redirectUri: this.callbackUrl(provider.name),
        state: pending.state,
        nonce: pending.nonce,
        codeVerifier: pending.codeVerifier,
        insecure: authorityOf(provider).startsWith('http:'),
      });
    const config = provider.type === 'apple' ? await this.appleConfiguration(provider, discovered) : discovered;
    const tokens = await oidc.authorizationCodeGrant(config, callbackUrl, {
      pkceCodeVerifier: pending.codeVerifier,
      expectedState: pending.state,
      expectedNonce: pending.nonce,
      idTokenExpected: true,
    });
    const claims = tokens.claims();
    if (!claims || typeof claims.sub !== 'string') throw new Error('the upstream identity token has no subject');
    if (provider.type === 'apple') return { ...claims, ...appleUserName(posted.user) };
    // Profile claims often come only from userinfo (OIDC Core §5.4); its `sub` must match (§5.3.2).
    if (!config.serverMetadata().userinfo_endpoint) return claims as Record<string, unknown>;
    const userinfo = await oidc.fetchUserInfo(config, tokens.access_token, claims.sub);
    return { ...userinfo, ...claims };
  }

  /** The discovered Apple configuration with a client secret signed for this exchange (or cached, `AppleClientSecrets`). */
  private async appleConfiguration(
    provider: IdentityProviderConfig,
    discovered: oidc.Configuration,
  ): Promise<oidc.Configuration> {
    const secret = await this.appleSecrets.secret(provider);
    const config = new oidc.Configuration(
      discovered.serverMetadata(),
      provider.clientId,
      undefined,
      oidc.ClientSecretPost(secret),
    );
    if (authorityOf(provider).startsWith('http:')) oidc.allowInsecureRequests(config);
    config.timeout = discovered.timeout;
    return config;
  }

  private configuration(provider: IdentityProviderConfig): Promise<oidc.Configuration> {
    let config = this.configs.get(provider.name);
    if (!config) {
      const authority = new URL(authorityOf(provider));
      const auth = provider.clientSecret ? oidc.ClientSecretBasic(provider.clientSecret) : oidc.None();
      // Plain http is allowed for loopback authorities only (checked by the config schema).
      const options =
        authority.protocol === 'http:' ? { execute: [oidc.allowInsecureRequests], timeout: 10 } : { timeout: 10 };
      // Microsoft's multi-tenant documents name a {tenantid} template as issuer: discovered at the
      // document's own URL, which skips openid-client's issuer comparison; microsoft.ts checks
      // each token's issuer against its tenant instead.
      const at =
        provider.type === 'microsoft'
          ? new URL(`${authority.href.replace(/\/$/, '')}/.well-known/openid-configuration`)
          : authority;
      config = oidc.discovery(at, provider.clientId, undefined, auth, options);
      config.catch(() => this.configs.delete(provider.name));
      this.configs.set(provider.name, config);
    }
    return config;
  }
}

/** Longest upstream `sub` accepted: OIDC Core §2 allows at most 255 ASCII characters. */
export const MAX_UPSTREAM_SUBJECT = 255;

/**
 * The upstream `sub` of verified claims when it is usable as a link: a string of 1 to 255
 * characters (OIDC Core §2). Undefined otherwise; the caller ends on the error page.
 */
export function upstreamSubject(claims: Record<string, unknown>): string | undefined {
  const sub = claims.sub;
  return typeof sub === 'string' && sub.length > 0 && sub.length <= MAX_UPSTREAM_SUBJECT ? sub : undefined;
}

/**
 * The local claims of an upstream user, written to the linked local user at every sign-in
 * (`UserAdmin.linkUpstream`). `oidc`: each claim of the provider's `claimMapping` (default
 * `DEFAULT_CLAIM_MAPPING`) that the upstream sent, under its local name. Google, Microsoft and
 * Apple: `DEFAULT_CLAIM_MAPPING`. GitHub and `oauth2`: the claims their `claimMappings` made
 * (oauth2.ts) but `sub`. For every preset `email_verified` is true only where the provider vouches
 * for the address (`emailVerified`), so an unverified address never links to an existing user.
 */
export function mappedClaims(
  provider: IdentityProviderConfig,
  upstream: Record<string, unknown>,
): Record<string, unknown> {
  const claims: Record<string, unknown> = {};
  const mapping = !isOpenIdProvider(provider)
    ? Object.fromEntries(Object.keys(upstream).map((k) => [k, k]))
    : (provider.claimMapping ?? DEFAULT_CLAIM_MAPPING);
  for (const [local, remote] of Object.entries(mapping))
    if (local !== 'sub' && upstream[remote] !== undefined) claims[local] = upstream[remote];
  if (provider.type !== 'oidc') {
    delete claims.email_verified;
    if (typeof claims.email === 'string') claims.email_verified = emailVerified(provider, upstream);
  }
  return claims;
}

/**
 * The local claims a provider owns on its linked users: those its mapping can write (`mappedClaims`),
 * which follow the upstream (one it stops sending is removed), but Apple's name, sent on the first
 * sign-in only and kept after it. Every other claim of the user stays as it is.
 */
export function ownedClaims(provider: IdentityProviderConfig): string[] {
  const mapping =
    provider.type === 'oidc'
      ? (provider.claimMapping ?? DEFAULT_CLAIM_MAPPING)
      : isOpenIdProvider(provider)
        ? DEFAULT_CLAIM_MAPPING
        : { ...(provider.type === 'github' ? GITHUB_CLAIM_MAPPINGS : {}), ...provider.claimMappings };
  // A preset writes email_verified as it reads the provider (`emailVerified`), with the email.
  const owned = new Set([...Object.keys(mapping), ...(provider.type === 'oidc' ? [] : ['email', 'email_verified'])]);
  owned.delete('sub');
  if (provider.type === 'apple') for (const c of APPLE_FIRST_SIGN_IN_CLAIMS) owned.delete(c);
  return [...owned];
}
