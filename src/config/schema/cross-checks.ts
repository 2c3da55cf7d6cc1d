/**
 * The rules of the config that span fields: names unique, scopes and API resources that exist,
 * clients that match their grants, client ids that name no user, organizations' domains with one
 * owner and providers that exist.
 */
import type * as z from 'zod';
import type { clientSchema } from './client.js';
import { fapi2SigningAlgorithm } from './fapi2.js';
import type { OrganizationConfig } from './organizations.js';
import { isManagementScope, MANAGEMENT_RESOURCE, MANAGEMENT_SCOPES } from './management.js';
import type { SigningAlgorithm } from './protocol.js';
import type { registration } from './registration.js';
import { type apiResource, type apiScope, type identityResource, isResourceIndicator } from './resources.js';
import type { user } from './users.js';
import { type identityProvider, identityProviderIssues } from './identity-providers.js';

/**
 * Why a client id may not equal a user's subject (RFC 9068 §5): the client's own tokens
 * (client_credentials) carry `sub` = `client_id`, and a resource server would take them for the
 * user's. `user` names the user (`users[2]`, `stored user "bob"`).
 */
export function clientSubjectCollision(clientId: string, user: string): string {
  return `clientId "${clientId}" is the subjectId of ${user}: the client's own tokens carry sub = client_id and would name that user (RFC 9068 §5)`;
}

/** The top-level fields the config's cross-field rules read. */
export const CROSS_CHECKED = new Set([
  'clients',
  'registration',
  'users',
  'identityResources',
  'apiScopes',
  'apiResources',
  'identityProviders',
  'signingAlgorithms',
  'organizations',
]);

/** The parsed fields of `CROSS_CHECKED`: what `crossCheck` reads. */
interface CrossChecked {
  clients: z.output<typeof clientSchema>[];
  registration: z.output<typeof registration>;
  users: z.output<typeof user>[];
  identityResources: z.output<typeof identityResource>[];
  apiScopes: z.output<typeof apiScope>[];
  apiResources: z.output<typeof apiResource>[];
  identityProviders: z.output<typeof identityProvider>[];
  signingAlgorithms: SigningAlgorithm[];
  organizations: OrganizationConfig[];
}

/** Adds an issue, at its field's path, for every cross-field rule the parsed config breaks. */
export function crossCheck(cfg: CrossChecked, ctx: z.RefinementCtx): void {
  const issue = (path: (string | number)[], message: string) => ctx.addIssue({ code: 'custom', path, message });
  const duplicates = (names: string[]) => names.filter((n, i) => names.indexOf(n) !== i);
  for (const d of duplicates(cfg.clients.map((c) => c.clientId))) issue(['clients'], `duplicate clientId "${d}"`);
  const identity = new Set(cfg.identityResources.map((r) => r.name));
  const api = new Set([...cfg.apiScopes.map((s) => s.name), ...MANAGEMENT_SCOPES]);
  for (const [i, r] of cfg.identityResources.entries())
    if (api.has(r.name)) issue(['identityResources', i, 'name'], `"${r.name}" is also an API scope`);
  for (const d of duplicates(cfg.identityResources.map((r) => r.name)))
    issue(['identityResources'], `duplicate name "${d}"`);
  for (const d of duplicates(cfg.apiScopes.map((r) => r.name))) issue(['apiScopes'], `duplicate name "${d}"`);
  for (const d of duplicates(cfg.apiResources.map((r) => r.name))) issue(['apiResources'], `duplicate name "${d}"`);
  if (identity.has('offline_access') || api.has('offline_access'))
    issue(['apiScopes'], '"offline_access" is built in and cannot be declared');
  for (const [field, names] of [
    ['apiScopes', cfg.apiScopes.map((r) => r.name)],
    ['apiResources', cfg.apiResources.map((r) => r.name)],
  ] as const)
    for (const n of names)
      if (n === MANAGEMENT_RESOURCE || (MANAGEMENT_SCOPES as readonly string[]).includes(n))
        issue([field], `"${n}" is built in (Sigil's management API) and cannot be declared`);
  for (const [i, r] of cfg.apiResources.entries())
    for (const [j, s] of r.scopes.entries())
      if (!api.has(s)) issue(['apiResources', i, 'scopes', j], `unknown API scope "${s}"`);
  const resourceUriOwners = new Map<string, string>();
  for (const [i, r] of cfg.apiResources.entries())
    for (const [j, u] of r.resourceUris.entries()) {
      if (!isResourceIndicator(u))
        issue(['apiResources', i, 'resourceUris', j], 'must be an absolute URI without fragment (RFC 8707 §2)');
      const owner = resourceUriOwners.get(u);
      if (owner !== undefined && owner !== r.name)
        issue(['apiResources', i, 'resourceUris', j], `"${u}" is also a resource URI of "${owner}"`);
      resourceUriOwners.set(u, r.name);
    }
  const detailTypeOwners = new Map<string, string>();
  for (const [i, r] of cfg.apiResources.entries())
    for (const [j, t] of r.authorizationDetailsTypes.entries()) {
      const owner = detailTypeOwners.get(t.type);
      if (owner !== undefined)
        issue(['apiResources', i, 'authorizationDetailsTypes', j, 'type'], `"${t.type}" is also a type of "${owner}"`);
      detailTypeOwners.set(t.type, r.name);
    }
  const apiResourceNames = new Set(cfg.apiResources.map((r) => r.name));
  cfg.clients.forEach((c, i) => {
    const at = (...rest: (string | number)[]) => ['clients', i, ...rest];
    c.allowedScopes.forEach((s, j) => {
      if (s !== 'offline_access' && !identity.has(s) && !api.has(s))
        issue(at('allowedScopes', j), `unknown scope "${s}"`);
    });
    const grants = new Set(c.allowedGrantTypes);
    const isPublic = !c.requireClientSecret;
    if (isPublic && grants.has('client_credentials'))
      issue(at('allowedGrantTypes'), 'client_credentials needs a confidential client (requireClientSecret true)');
    const hasKeys = c.jwks !== null || c.jwksUri !== null;
    if (!isPublic && c.clientSecrets.length === 0 && !hasKeys && !(grants.size === 1 && grants.has('implicit')))
      issue(at('clientSecrets'), 'a confidential client needs at least one secret');
    // RFC 9700 §4.14.2: refresh tokens of public clients must rotate.
    if (isPublic && c.allowOfflineAccess && c.refreshTokenUsage === 'reuse')
      issue(at('refreshTokenUsage'), 'public clients must use "oneTime" refresh tokens (RFC 9700 §4.14.2)');
    if (grants.has('implicit') && grants.has('authorization_code'))
      issue(at('allowedGrantTypes'), 'list "hybrid" instead of "implicit" with "authorization_code"');
    c.authorizationDetailsTypes.forEach((t, j) => {
      if (!detailTypeOwners.has(t))
        issue(at('authorizationDetailsTypes', j), `no API resource declares the type "${t}"`);
    });
    c.tokenExchangeSubjectAudiences.forEach((a, j) => {
      if (!apiResourceNames.has(a)) issue(at('tokenExchangeSubjectAudiences', j), `unknown API resource "${a}"`);
    });
    c.allowedCorsOrigins.forEach((o, j) => {
      if (!URL.canParse(o) || new URL(o).origin !== o)
        issue(at('allowedCorsOrigins', j), 'must be scheme://host[:port], no path');
    });
    // FAPI 2.0 SP §5.4.1: its identity tokens (and JWT access tokens) are signed with PS256, ES256 or EdDSA.
    if (c.profile === 'fapi2' && fapi2SigningAlgorithm(cfg.signingAlgorithms) === undefined)
      issue(at('profile'), 'profile "fapi2" needs PS256, ES256 or EdDSA in signingAlgorithms to sign its tokens');
  });
  const seen = new Set<string>();
  cfg.users.forEach((u, i) => {
    const key = `${u.tenant ?? ''}\u0000${u.username.toLowerCase()}`;
    if (seen.has(key)) issue(['users', i, 'username'], `duplicate username "${u.username}"`);
    seen.add(key);
  });
  for (const d of duplicates(cfg.users.map((u) => u.subjectId))) issue(['users'], `duplicate subjectId "${d}"`);
  // RFC 9068 §5: a client's own tokens carry sub = client_id, so no client id may name a user.
  const subjects = new Map(cfg.users.map((u, i) => [u.subjectId, i]));
  cfg.clients.forEach((c, i) => {
    const j = subjects.get(c.clientId);
    if (j !== undefined) issue(['clients', i, 'clientId'], clientSubjectCollision(c.clientId, `users[${j}]`));
  });
  cfg.registration.allowedScopes?.forEach((s, j) => {
    const at = ['registration', 'allowedScopes', j];
    if (isManagementScope(s))
      issue(at, `"${s}" is a scope of Sigil's management API and never given to a dynamic client`);
    else if (s !== 'offline_access' && !identity.has(s) && !api.has(s)) issue(at, `unknown scope "${s}"`);
  });
  for (const d of duplicates(cfg.identityProviders.map((p) => p.name)))
    issue(['identityProviders'], `duplicate name "${d}"`);
  cfg.identityProviders.forEach((p, i) => {
    for (const { field, message } of identityProviderIssues(p)) issue(['identityProviders', i, field], message);
  });
  checkOrganizations(cfg, issue);
  cfg.clients.forEach((c, i) => {
    if (c.organization === null) return;
    c.allowedScopes.forEach((s, j) => {
      if ((DEPLOYMENT_SCOPES as readonly string[]).includes(s))
        issue(
          ['clients', i, 'allowedScopes', j],
          `"${s}" reaches every organization; a client of organization "${c.organization}" manages that organization only`,
        );
    });
  });
}

/** The management scopes that reach the whole deployment: never a client bound to an organization's. */
const DEPLOYMENT_SCOPES = ['sigil:admin', 'sigil:admin:read', 'sigil:register'] as const;

/**
 * The clients and SAML service providers whose `organization` names no organization known:
 * neither one of the config file's nor one of `others` (the stored organizations in force, when a
 * stored client is checked). The config file is checked before the store is read, so a
 * config-file client or SP names a config-file organization, as a config-file organization names a
 * config-file provider; a stored client may name a stored one. Checked after the schema (it needs
 * `others`, which the schema cannot see).
 * @returns each problem's path (`clients` or `samlServiceProviders`, index, `organization`) and message.
 */
export function unknownOrganizations(
  cfg: Pick<CrossChecked, 'clients' | 'organizations'> & { samlServiceProviders?: { organization: string | null }[] },
  others: readonly string[],
): { path: (string | number)[]; message: string }[] {
  const known = new Set([...cfg.organizations.map((o) => o.name), ...others]);
  const unknown = (section: string, items: readonly { organization: string | null }[]) =>
    items.flatMap((item, i) =>
      item.organization === null || known.has(item.organization)
        ? []
        : [
            {
              path: [section, i, 'organization'],
              message: `unknown organization "${item.organization}"${others.length === 0 ? ' (a config-file entry names an organization of the config file)' : ''}`,
            },
          ],
    );
  return [...unknown('clients', cfg.clients), ...unknown('samlServiceProviders', cfg.samlServiceProviders ?? [])];
}

/**
 * Organizations: names unique, each domain of one organization at most (the message names both),
 * providers among the config file's `identityProviders` (the config is checked before the store
 * is read, so a config-file organization cannot lean on a stored provider).
 */
function checkOrganizations(
  cfg: Pick<CrossChecked, 'organizations' | 'identityProviders'>,
  issue: (path: (string | number)[], message: string) => void,
): void {
  const names = new Map<string, number>();
  const owners = new Map<string, string>();
  const providers = new Set(cfg.identityProviders.map((p) => p.name));
  cfg.organizations.forEach((o, i) => {
    if (names.has(o.name)) issue(['organizations', i, 'name'], `duplicate name "${o.name}"`);
    names.set(o.name, i);
    o.domains.forEach((d, j) => {
      const owner = owners.get(d);
      if (owner !== undefined && owner !== o.name)
        issue(
          ['organizations', i, 'domains', j],
          `"${d}" is a domain of organization "${owner}" and of "${o.name}": a domain belongs to one organization at most`,
        );
      owners.set(d, o.name);
    });
    o.identityProviders.forEach((p, j) => {
      if (!providers.has(p)) issue(['organizations', i, 'identityProviders', j], `unknown identity provider "${p}"`);
    });
  });
}
