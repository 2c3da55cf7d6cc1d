/**
 * Upstream OpenID Connect providers (DESIGN §2 `federation/`), as a relying party built on
 * `openid-client`: discovery of the upstream issuer, authorization code with PKCE, `state` and
 * `nonce`, identity token validation. An external user is linked to a stable local subject kept
 * in the user store under the username `<provider>:<upstream sub>`; their mapped claims are
 * refreshed at every sign-in.
 */
import * as oidc from 'openid-client';
import type { IdentityProviderConfig } from '../config/schema.js';
import type { UserStore } from '../stores/types.js';
import { newId } from '../tokens/handles.js';
import type { User } from '../users/users.js';

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

/** The upstream providers of the config, by name. */
export class UpstreamProviders {
  private readonly providers: Map<string, IdentityProviderConfig>;
  private readonly configs = new Map<string, Promise<oidc.Configuration>>();

  constructor(
    providers: readonly IdentityProviderConfig[],
    private readonly issuer: string,
  ) {
    this.providers = new Map(providers.map((p) => [p.name, p]));
  }

  /** The provider named `name`, or undefined. */
  get(name: string): IdentityProviderConfig | undefined {
    return this.providers.get(name);
  }

  /** Every provider, in config order. */
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
  async finish(provider: IdentityProviderConfig, callbackUrl: URL, pending: Omit<UpstreamRequest, 'url'>): Promise<Record<string, unknown>> {
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
      const options = authority.protocol === 'http:' ? { execute: [oidc.allowInsecureRequests], timeout: 10 } : { timeout: 10 };
      config = oidc.discovery(authority, provider.clientId, undefined, auth, options);
      config.catch(() => this.configs.delete(provider.name));
      this.configs.set(provider.name, config);
    }
    return config;
  }
}

/**
 * Finds or creates the local user linked to an upstream identity, with the mapped claims.
 * The subject stays the same across sign-ins (the link is the user's username).
 */
export async function linkExternalUser(
  users: UserStore,
  provider: IdentityProviderConfig,
  upstream: Record<string, unknown>,
  tenant: string | null,
): Promise<User> {
  const mapping = provider.claimMapping ?? DEFAULT_CLAIM_MAPPING;
  const claims: Record<string, unknown> = {};
  for (const [local, remote] of Object.entries(mapping)) if (upstream[remote] !== undefined) claims[local] = upstream[remote];
  const username = `${provider.name}:${String(upstream.sub)}`.slice(0, 100);
  const existing = await users.findUserByUsername(username, null);
  if (existing) {
    await users.updateClaims(existing.subjectId, claims);
    return { subjectId: existing.subjectId, username, tenant: existing.tenant, isActive: existing.isActive, claims };
  }
  const subjectId = newId();
  await users.addUser({ subjectId, username, tenant, passwordHash: null, claims, isActive: true });
  return { subjectId, username, tenant, isActive: true, claims };
}
