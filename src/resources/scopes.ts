/**
 * Scope parsing and validation, shared by every grant and endpoint (RFC 6749 §3.3).
 */
import {
  MANAGEMENT_RESOURCE,
  MANAGEMENT_SCOPES,
  ORGANIZATION_ADMIN_SCOPE,
  type ApiResource,
  type ApiScope,
  type ClientConfig,
  type Config,
  type IdentityResource,
} from '../config/schema.js';
import { detailValidator } from '../config/schema/authorization-details.js';
import { invalidScope } from '../protocol/errors.js';
import type { ValidateFunction } from 'ajv';

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

/** Where a resource is defined: the config file, the store (`/admin/v1`), or built into Sigil. */
export type ResourceSource = 'config' | 'store' | 'built-in';

/** The resources managed at run time (`admin/resources.ts`), as `Resources.setStored` takes them. */
export interface StoredResourceLists {
  identityResources: readonly IdentityResource[];
  apiScopes: readonly ApiScope[];
  apiResources: readonly ApiResource[];
}

/** One consistent state of the resources, replaced as a whole. */
interface ResourceIndex {
  identity: Map<string, IdentityResource>;
  apiScopes: Map<string, ApiScope>;
  apiResources: ApiResource[];
  byResourceUri: Map<string, ApiResource>;
  /** The validators of the authorization details types (RFC 9396 §2), by type; the first declaration wins. */
  detailTypes: Map<string, ValidateFunction>;
  /** Names of the stored items, per map (`identity`, `apiScopes`, `apiResources`). */
  stored: { identity: Set<string>; apiScopes: Set<string>; apiResources: Set<string> };
}

/**
 * The identity and API resources, indexed: the config file's, the built-in management API's, and
 * those managed at run time through /admin/v1 (`setStored`, on every node within about a second of
 * a change). One object lives as long as the server: everything holding it (token service, grants,
 * endpoints) reads the current state at each call. Read a map once per decision: a reload between
 * two reads may replace it.
 */
export class Resources {
  private index: ResourceIndex;
  /** Grows whenever the stored resources change; lets derived data (discovery) be cached. */
  version = 0;

  /** The role a user needs for management scopes in tokens acting for them (`admin.userRole`). */
  readonly managementRole: string;

  /**
   * Indexes the config's resources, with the built-in management API (`MANAGEMENT_RESOURCE` and
   * its scopes) added after the configured ones.
   */
  constructor(
    private readonly cfg: Pick<Config, 'identityResources' | 'apiScopes' | 'apiResources'> & {
      admin?: Pick<Config['admin'], 'userRole'>;
    },
  ) {
    this.managementRole = cfg.admin?.userRole ?? 'sigil-admin';
    this.index = this.build({ identityResources: [], apiScopes: [], apiResources: [] });
  }

  /** Identity scopes by name (OIDC Core §5.4): config file's first, then stored ones. */
  get identity(): ReadonlyMap<string, IdentityResource> {
    return this.index.identity;
  }

  /** API scopes by name: config file's, the built-in management scopes, then stored ones. */
  get apiScopes(): ReadonlyMap<string, ApiScope> {
    return this.index.apiScopes;
  }

  /** API resources (`aud` values): config file's, the built-in `MANAGEMENT_RESOURCE`, then stored ones. */
  get apiResources(): readonly ApiResource[] {
    return this.index.apiResources;
  }

  /** API resources by each of their `resourceUris` (RFC 8707 resource indicators). */
  get byResourceUri(): ReadonlyMap<string, ApiResource> {
    return this.index.byResourceUri;
  }

  /** The compiled JSON Schema of each authorization details type the API resources declare (RFC 9396 §2). */
  get authorizationDetailsTypes(): ReadonlyMap<string, ValidateFunction> {
    return this.index.detailTypes;
  }

  /**
   * Where an identity resource, API scope or API resource of that name is defined, or undefined
   * when there is none (the admin console tells config-file items from stored ones by it).
   */
  sourceOf(map: 'identity' | 'apiScopes' | 'apiResources', name: string): ResourceSource | undefined {
    const { index } = this;
    const known = map === 'apiResources' ? index.apiResources.some((r) => r.name === name) : index[map].has(name);
    if (!known) return undefined;
    if (index.stored[map].has(name)) return 'store';
    if (
      name === MANAGEMENT_RESOURCE ||
      (map === 'apiScopes' && (MANAGEMENT_SCOPES as readonly string[]).includes(name))
    )
      return 'built-in';
    return 'config';
  }

  /**
   * Replaces the stored resources (checked by the caller together with the config's; a name the
   * config file or the built-in API defines keeps its definition there). Takes effect at once for
   * every later call; `version` grows when anything changed.
   */
  setStored(stored: StoredResourceLists): void {
    const next = this.build(stored);
    const same =
      JSON.stringify([...next.identity, ...next.apiScopes, ...next.apiResources]) ===
      JSON.stringify([...this.index.identity, ...this.index.apiScopes, ...this.index.apiResources]);
    this.index = next;
    if (!same) this.version += 1;
  }

  private build(stored: StoredResourceLists): ResourceIndex {
    const { cfg } = this;
    const builtInScopes = MANAGEMENT_SCOPES.map((name): ApiScope => ({ name, userClaims: [] }));
    const builtIn: ApiResource = {
      name: MANAGEMENT_RESOURCE,
      scopes: [...MANAGEMENT_SCOPES],
      secrets: [],
      userClaims: [],
      resourceUris: [],
      authorizationDetailsTypes: [],
    };
    const fresh = <T extends { name: string }>(taken: readonly T[], more: readonly T[]) =>
      more.filter((m) => !taken.some((t) => t.name === m.name));
    const identity = fresh(cfg.identityResources, stored.identityResources);
    const scopes = fresh([...cfg.apiScopes, ...builtInScopes], stored.apiScopes);
    const apis = fresh([...cfg.apiResources, builtIn], stored.apiResources);
    const apiResources = [...cfg.apiResources, builtIn, ...apis];
    return {
      identity: new Map([...cfg.identityResources, ...identity].map((r) => [r.name, r])),
      apiScopes: new Map([...cfg.apiScopes, ...builtInScopes, ...scopes].map((s) => [s.name, s])),
      apiResources,
      byResourceUri: new Map(apiResources.flatMap((r) => (r.resourceUris ?? []).map((u) => [u, r] as const))),
      detailTypes: detailTypesOf(apiResources),
      stored: {
        identity: new Set(identity.map((r) => r.name)),
        apiScopes: new Set(scopes.map((s) => s.name)),
        apiResources: new Set(apis.map((r) => r.name)),
      },
    };
  }

  /** Every scope name the server knows now, `offline_access` included (discovery `scopes_supported`). */
  allScopeNames(): string[] {
    return [...this.index.identity.keys(), ...this.index.apiScopes.keys(), OFFLINE_ACCESS];
  }

  /** The API resources (`aud` values) that own any of `scopes`: the config's in config order, then stored ones. */
  audiences(scopes: readonly string[]): string[] {
    return this.index.apiResources.filter((r) => r.scopes.some((s) => scopes.includes(s))).map((r) => r.name);
  }

  /** User claim names that the granted identity scopes release (ID token, userinfo). */
  identityClaimNames(scopes: readonly string[]): Set<string> {
    const out = new Set<string>();
    const { identity } = this.index;
    for (const s of scopes) for (const c of identity.get(s)?.userClaims ?? []) out.add(c);
    return out;
  }

  /** User claim names that the granted API scopes and their API resources put into access tokens. */
  accessTokenClaimNames(scopes: readonly string[]): Set<string> {
    const out = new Set<string>();
    const { apiScopes, apiResources } = this.index;
    for (const s of scopes) for (const c of apiScopes.get(s)?.userClaims ?? []) out.add(c);
    for (const r of apiResources)
      if (r.scopes.some((s) => scopes.includes(s))) for (const c of r.userClaims) out.add(c);
    return out;
  }
}

/**
 * The validators of the authorization details types `apis` declare, by type, in declaration
 * order; the first declaration of a type wins (the config refuses a second, a stored API's is
 * ignored).
 */
function detailTypesOf(apis: readonly ApiResource[]): Map<string, ValidateFunction> {
  const out = new Map<string, ValidateFunction>();
  for (const api of apis)
    for (const t of api.authorizationDetailsTypes ?? [])
      if (!out.has(t.type)) out.set(t.type, detailValidator(t.schema));
  return out;
}

/**
 * The scopes a token acting for a user may carry of `scopes`. A management scope
 * (`MANAGEMENT_SCOPES`) needs a sign-in with more than one factor (`amr` has `mfa`, RFC 8176 §2;
 * a passkey sign-in says so too), and besides:
 * - `sigil:org:admin` (`ORGANIZATION_ADMIN_SCOPE`): that the user is an admin of some organization
 *   (`administersOrganization`, a membership holding the role `admin`); which ones, and whether
 *   still, is checked at each request;
 * - the others: that the user holds `role` (their `role` claim, a string or an array of strings,
 *   names it).
 * A scope the user may not have is dropped silently, as scope narrowing does (RFC 6749 §3.3: the
 * server may grant fewer scopes than asked and says which in `scope`): no error tells the user's
 * roles to whoever sent the request. The granted `scope` does tell the client, which only a client
 * the deployment lists the scope for can ask (never a dynamically registered one): that the user
 * holds `role`, or is an admin of at least one organization (not of which one), as the `role` and
 * `org_roles` claims would tell it too.
 */
export function scopesForUser(
  scopes: readonly string[],
  user: { claims: Record<string, unknown>; amr: readonly string[] },
  role: string,
  administersOrganization = false,
): string[] {
  const management: readonly string[] = MANAGEMENT_SCOPES;
  const mfa = user.amr.includes('mfa');
  const roles = user.claims.role;
  const holds = roles === role || (Array.isArray(roles) && roles.includes(role));
  return scopes.filter((s) => {
    if (!management.includes(s)) return true;
    if (!mfa) return false;
    return s === ORGANIZATION_ADMIN_SCOPE ? administersOrganization : holds;
  });
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
