/**
 * Upstream OpenID Connect providers, as a relying party built on
 * `openid-client`: discovery of the upstream issuer, authorization code with PKCE, `state` and
 * `nonce`, identity token validation. An external user is linked to a stable local subject by
 * the full pair (provider, upstream `sub`) (OIDC Core §2, §5.7), never by a cut or case-folded
 * name; their mapped claims are refreshed at every sign-in.
 */
import * as oidc from 'openid-client';
import type { IdentityProviderConfig } from '../config/schema.js';

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
   * Builds the upstream authorization request (code flow, PKCE S256, state, nonce).
   * @throws Error when the upstream provider cannot be discovered.
   */
  async start(provider: IdentityProviderConfig): Promise<UpstreamRequest> {
    const config = await this.configuration(provider);
    const codeVerifier = oidc.randomPKCECodeVerifier();
    const state = oidc.randomState();
    const nonce = oidc.randomNonce();
    const url = oidc.buildAuthorizationUrl(config, {
      redirect_uri: this.callbackUrl(provider.name),
      scope: provider.scope,
      response_type: 'code',
      code_challenge: await oidc.calculatePKCECodeChallenge(codeVerifier),
      code_challenge_method: 'S256',
      state,
      nonce,
    });
    return { url: url.href, state, nonce, codeVerifier };
  }

  /**
   * Completes the sign-in at the callback: redeems the code, validates the identity token
   * (signature, issuer, audience, nonce) and returns its claims merged with userinfo's.
   * @throws Error (openid-client's) for an error response, a state mismatch or a bad token.
   */
  async finish(
    provider: IdentityProviderConfig,
    callbackUrl: URL,
    pending: Omit<UpstreamRequest, 'url'>,
  ): Promise<Record<string, unknown>> {
    const config = await this.configuration(provider);
    const tokens = await oidc.authorizationCodeGrant(config, callbackUrl, {
      pkceCodeVerifier: pending.codeVerifier,
      expectedState: pending.state,
      expectedNonce: pending.nonce,
      idTokenExpected: true,
    });
    const claims = tokens.claims();
    if (!claims || typeof claims.sub !== 'string') throw new Error('the upstream identity token has no subject');
    // Profile claims often come only from userinfo (OIDC Core §5.4); its `sub` must match (§5.3.2).
    if (!config.serverMetadata().userinfo_endpoint) return claims as Record<string, unknown>;
    const userinfo = await oidc.fetchUserInfo(config, tokens.access_token, claims.sub);
    return { ...userinfo, ...claims };
  }

  private configuration(provider: IdentityProviderConfig): Promise<oidc.Configuration> {
    let config = this.configs.get(provider.name);
    if (!config) {
      const authority = new URL(provider.authority);
      const auth = provider.clientSecret ? oidc.ClientSecretBasic(provider.clientSecret) : oidc.None();
      // Plain http is allowed for loopback authorities only (checked by the config schema).
      const options =
        authority.protocol === 'http:' ? { execute: [oidc.allowInsecureRequests], timeout: 10 } : { timeout: 10 };
      config = oidc.discovery(authority, provider.clientId, undefined, auth, options);
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
 * The local claims of an upstream user: each claim of the provider's `claimMapping` (default
 * `DEFAULT_CLAIM_MAPPING`) that the upstream sent, under its local name. Written to the linked
 * local user at every sign-in (`UserAdmin.linkUpstream`).
 */
export function mappedClaims(
  provider: IdentityProviderConfig,
  upstream: Record<string, unknown>,
): Record<string, unknown> {
  const claims: Record<string, unknown> = {};
  for (const [local, remote] of Object.entries(provider.claimMapping ?? DEFAULT_CLAIM_MAPPING))
    if (upstream[remote] !== undefined) claims[local] = upstream[remote];
  return claims;
}
