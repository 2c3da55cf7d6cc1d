/**
 * The organization claims of a user's tokens (Sigil's B2B organizations; the names Auth0 uses):
 * `org_id`, the organization's stable id; `org_name`, its name; `org_roles`, the member's roles,
 * only where the scope `roles` is granted. Sigil sets them itself from the grant: no profile
 * service, extension grant or hook can supply or change them (they are among PROTOCOL_CLAIMS).
 */
import type { GrantOrganization } from '../stores/records/grant-data.js';

/** The claims Sigil sets for a grant's organization. */
export const ORGANIZATION_CLAIMS = ['org_id', 'org_name', 'org_roles'] as const;

/** The scope whose grant adds `org_roles`. */
export const ROLES_SCOPE = 'roles';

/** The organization claims of a grant's organization (none without one) for these granted scopes. */
export function organizationClaims(
  organization: GrantOrganization | undefined,
  scopes: readonly string[],
): Record<string, unknown> {
  if (organization === undefined) return {};
  return {
    org_id: organization.id,
    org_name: organization.name,
    ...(scopes.includes(ROLES_SCOPE) ? { org_roles: [...organization.roles] } : {}),
  };
}

/** The organization claims an access token carries, as userinfo repeats them. */
export function organizationClaimsOf(claims: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const name of ORGANIZATION_CLAIMS) if (claims[name] !== undefined) out[name] = claims[name];
  return out;
}
