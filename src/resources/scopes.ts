/**
 * Scope parsing and validation, shared by every grant and endpoint (RFC 6749 §3.3).
 */
import { MANAGEMENT_RESOURCE, MANAGEMENT_SCOPES, type ApiResource, type ApiScope, type ClientConfig, type Config, type IdentityResource } from '../config/schema.js';
import { invalidScope } from '../protocol/errors.js';

/** The built-in scope that asks for a refresh token (OIDC Core §11). */
export const OFFLINE_ACCESS = 'offline_access';
/** Longest `scope` parameter accepted, in characters. */
export const MAX_SCOPE_LENGTH = 1024;
const SCOPE_TOKEN = /^[\x21\x23-\x5B\x5D-\x7E]+$/;

/** What kind of principal a token is for: decides which scopes it can carry. */
export type ScopeAudience =
  /** No user (client_credentials): API scopes only. */
  | 'client'
  /** A user: identity scopes, API scopes and `offline_access`. */
  | 'user';

/** The identity and API resources of the config, indexed. */
export class Resources {
  readonly identity: Map<string, IdentityResource>;
  readonly apiScopes: Map<string, ApiScope>;
  readonly apiResources: ApiResource[];
  /** API resources by each of their `resourceUris` (RFC 8707 resource indicators). */
  readonly byResourceUri: Map<string, ApiResource>;

  /** The role a user needs for management scopes in tokens acting for them (`admin.userRole`). */
  readonly managementRole: string;

  /**
   * Indexes the config's resources, with the built-in management API (`MANAGEMENT_RESOURCE` and
   * its scopes) added after the configured ones.
   */
  constructor(cfg: Pick<Config, 'identityResources' | 'apiScopes' | 'apiResources'> & { admin?: Pick<Config['admin'], 'userRole'> }) {
    this.identity = new Map(cfg.identityResources.map((r) => [r.name, r]));
    const builtIn = MANAGEMENT_SCOPES.map((name): ApiScope => ({ name, userClaims: [] }));
    this.apiScopes = new Map([...cfg.apiScopes, ...builtIn].map((s) => [s.name, s]));
    this.apiResources = [
      ...cfg.apiResources,
      { name: MANAGEMENT_RESOURCE, scopes: [...MANAGEMENT_SCOPES], secrets: [], userClaims: [], resourceUris: [] },
    ];
    this.managementRole = cfg.admin?.userRole ?? 'sigil-admin';
    this.byResourceUri = new Map(cfg.apiResources.flatMap((r) => (r.resourceUris ?? []).map((u) => [u, r] as const)));
  }

  /** Every scope name the server knows, `offline_access` included (discovery `scopes_supported`). */
  allScopeNames(): string[] {
    return [...this.identity.keys(), ...this.apiScopes.keys(), OFFLINE_ACCESS];
  }

  /** The API resources (`aud` values) that own any of `scopes`, in config order. */
  audiences(scopes: readonly string[]): string[] {
    return this.apiResources.filter((r) => r.scopes.some((s) => scopes.includes(s))).map((r) => r.name);
  }

  /** User claim names that the granted identity scopes release (ID token, userinfo). */
  identityClaimNames(scopes: readonly string[]): Set<string> {
    const out = new Set<string>();
    for (const s of scopes) for (const c of this.identity.get(s)?.userClaims ?? []) out.add(c);
    return out;
  }

  /** User claim names that the granted API scopes and their API resources put into access tokens. */
  accessTokenClaimNames(scopes: readonly string[]): Set<string> {
    const out = new Set<string>();
    for (const s of scopes) for (const c of this.apiScopes.get(s)?.userClaims ?? []) out.add(c);
    for (const r of this.apiResources)
      if (r.scopes.some((s) => scopes.includes(s))) for (const c of r.userClaims) out.add(c);
    return out;
  }
}

/**
 * The scopes a token acting for a user may carry of `scopes`: the management scopes
 * (`MANAGEMENT_SCOPES`) only when the user holds `role` (their `role` claim, a string or an array
 * of strings, names it) and signed in with more than one factor (`amr` has `mfa`, RFC 8176 §2;
 * a passkey sign-in says so too). Otherwise they are dropped silently, as scope narrowing does
 * (RFC 6749 §3.3: the server may grant fewer scopes than asked and says which in `scope`), so
 * that the answer tells nothing about the user's roles.
 */
export function scopesForUser(scopes: readonly string[], user: { claims: Record<string, unknown>; amr: readonly string[] }, role: string): string[] {
  const roles = user.claims.role;
  const holds = roles === role || (Array.isArray(roles) && roles.includes(role));
  if (holds && user.amr.includes('mfa')) return [...scopes];
  return scopes.filter((s) => !(MANAGEMENT_SCOPES as readonly string[]).includes(s));
}

/**
 * Splits a `scope` parameter into its scope tokens, removing duplicates and keeping order.
 * @throws OAuthError `invalid_scope` when it is too long or a token has characters outside
 *   RFC 6749 §3.3's `scope-token`.
 */
export function parseScope(value: string): string[] {
  if (value.length > MAX_SCOPE_LENGTH) throw invalidScope('scope is too long');
  const tokens = value.split(' ').filter((t) => t.length > 0);
  for (const t of tokens) if (!SCOPE_TOKEN.test(t)) throw invalidScope('scope contains invalid characters');
  if (tokens.length === 0) throw invalidScope('scope is empty');
  return [...new Set(tokens)];
}

/** The scopes a client may be granted for `audience`, in its `allowedScopes` order. */
export function allowedScopes(client: ClientConfig, resources: Resources, audience: ScopeAudience): string[] {
  const out = client.allowedScopes.filter((s) =>
    audience === 'client' ? resources.apiScopes.has(s) : s !== OFFLINE_ACCESS || client.allowOfflineAccess,
  );
  if (audience === 'user' && client.allowOfflineAccess && !out.includes(OFFLINE_ACCESS)) out.push(OFFLINE_ACCESS);
  return out;
}

/**
 * Validates the requested scopes of a token request (RFC 6749 §3.3, §4.4.2, §4.3.2).
 * Omitted: every scope the client may have for `audience` (seed §2.1). Present: each must be
 * known and allowed for the client; identity scopes and `offline_access` only with a user;
 * `offline_access` only with `allowOfflineAccess`.
 * @returns the granted scopes.
 * @throws OAuthError `invalid_scope`.
 */
export function validateScopes(
  requested: string | undefined,
  client: ClientConfig,
  resources: Resources,
  audience: ScopeAudience,
): string[] {
  const allowed = allowedScopes(client, resources, audience);
  if (requested === undefined) {
    if (allowed.length === 0) throw invalidScope('the client has no scopes it may request');
    return allowed;
  }
  const scopes = parseScope(requested);
  for (const s of scopes) {
    const known = s === OFFLINE_ACCESS || resources.identity.has(s) || resources.apiScopes.has(s);
    if (!known) throw invalidScope(`unknown scope "${s}"`);
    if (!allowed.includes(s)) {
      if (audience === 'client' && (s === OFFLINE_ACCESS || resources.identity.has(s)))
        throw invalidScope(`scope "${s}" needs a user`);
      throw invalidScope(`scope "${s}" is not allowed for this client`);
    }
  }
  return scopes;
}

/**
 * Validates a narrower `scope` on refresh (RFC 6749 §6): each must be among `original`.
 * @returns the requested scopes, or `original` when none were requested.
 * @throws OAuthError `invalid_scope` for a scope beyond the original grant.
 */
export function narrowScopes(requested: string | undefined, original: readonly string[]): string[] {
  if (requested === undefined) return [...original];
  const scopes = parseScope(requested);
  for (const s of scopes) if (!original.includes(s)) throw invalidScope(`scope "${s}" exceeds the original grant`);
  return scopes;
}
