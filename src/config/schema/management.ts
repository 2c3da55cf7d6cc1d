/** Sigil's management API: its API resource and scopes, and who may use it (`admin`). */
import * as z from 'zod';
import { lifetime, nonEmpty } from './field-kinds.js';

/**
 * Sigil's own API: the built-in API resource `sigil` (the `aud` of its tokens) and its
 * scopes. `scim`: SCIM 2.0 users and groups at /scim/v2 (RFC 7644); `sigil:admin`: everything
 * under /admin/v1; `sigil:admin:read`: its GET requests; `sigil:register`: initial access tokens
 * for Dynamic Client Registration (RFC 7591 §3); `sigil:org:admin`: the members and invitations of
 * the organizations whose admin the token's user is (`ORGANIZATION_ADMIN_SCOPE`). Clients list them
 * in `allowedScopes` like any API scope; a token acting for a user carries them only after MFA,
 * and only for an `admin.userRole` user, but for `sigil:org:admin`, which needs an organization
 * membership with the role `admin` instead (`scopesForUser` in resources/scopes.ts).
 */
export const MANAGEMENT_RESOURCE = 'sigil';
/** The scopes of `MANAGEMENT_RESOURCE`. */
export const MANAGEMENT_SCOPES = [
  'scim',
  'sigil:admin',
  'sigil:admin:read',
  'sigil:register',
  'sigil:org:admin',
] as const;

/**
 * The scope of delegated organization administration (DESIGN §6b "Organization admins"): with it,
 * a token acting for a user who signed in with MFA may manage the members and invitations of each
 * organization in which that user is a member holding `ORGANIZATION_ADMIN_ROLE`, checked at each
 * request (`OrganizationAdmin.requireOrganizationAdmin`), and nothing else. A client's own token
 * (no user) never acts as an organization admin.
 */
export const ORGANIZATION_ADMIN_SCOPE = 'sigil:org:admin' satisfies (typeof MANAGEMENT_SCOPES)[number];

/** The organization role (a member's role, not a user's `role` claim) that makes a member an admin of that organization. */
export const ORGANIZATION_ADMIN_ROLE = 'admin';

/**
 * Whether a scope belongs to Sigil's management API (`MANAGEMENT_SCOPES`, or any `sigil:` name): never a
 * dynamic client's.
 */
export function isManagementScope(scope: string): boolean {
  return scope.startsWith('sigil:') || (MANAGEMENT_SCOPES as readonly string[]).includes(scope);
}

/** `admin`: the management API and web console, and how long their audit events are kept. */
export const admin = z
  .strictObject({
    auditRetentionSeconds: lifetime
      .max(10 * 365 * 24 * 3600)
      .default(2592000)
      .meta({
        description:
          'How long the stored audit events (queried at /admin/v1/events) are kept, seconds; older ones are removed by the housekeeping',
      }),
    userRole: nonEmpty.max(200).default('sigil-admin').meta({
      description:
        "The role (a value of the user's role claim, or a SCIM group's displayName) a user needs for a token acting for them to carry the scopes of Sigil's management API (scim, sigil:admin, sigil:admin:read, sigil:register); a multi-factor sign-in is required too. sigil:org:admin needs no such role: a multi-factor sign-in and the role admin in an organization's membership",
    }),
    console: z.boolean().default(true).meta({
      description:
        'The web console at /admin: users with admin.userRole sign in through Sigil itself (the built-in public client sigil-console, code flow with PKCE, a second factor required), and the members holding the role admin in an organization get a console of the members and invitations of the organizations they administer. false: no console, and the client sigil-console does not exist',
    }),
  })
  .default({ auditRetentionSeconds: 2592000, userRole: 'sigil-admin', console: true })
  .meta({
    description: "Sigil's management API (SCIM at /scim/v2, /admin/v1) and web console (/admin): who may manage it",
  });
