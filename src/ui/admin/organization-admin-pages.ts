/**
 * The console of an organization's own admins (DESIGN §6b "Organization admins"): a user whose
 * console token carries `sigil:org:admin` without `sigil:admin` manages the members and invitations
 * of the organizations they administer, and nothing else of the console. Their home page lists
 * those organizations (memberships holding the role `admin`, organizations in force, at most
 * MAX_LISTED); each one's member and invitation pages are `organization-members-pages.ts`'s and
 * `organization-invitations-pages.ts`'s, served at `/admin/my-organizations/{name}` behind
 * `organizationAdminAccess`, whose guard asks `OrganizationAdmin.requireOrganizationAdmin` at every
 * request, so a role taken away counts from the next request on, and answers the same 403 page
 * for an organization they do not administer whether it exists or not. The pages hold them to
 * /admin/v1's rules: no member added by username or subject, never their own membership changed.
 * Their changes are audited as the full console's (`AuditedChanges`, the invitations service),
 * naming the console client and their subject.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { AdminError } from '../../admin/errors.js';
import type { Console, SignedIn } from './console-page.js';
import { ORGANIZATION_ADMIN_HOME } from './console-session.js';
import { type OrganizationAccess, organizationPageKit } from './organization-access.js';
import { organizationInvitationPages } from './organization-invitations-pages.js';
import { organizationMemberPages } from './organization-members-pages.js';

/** The most organizations an organization admin's home page lists. */
export const MAX_LISTED = 100;

/**
 * The access of an organization's own admins: any console session (its role may be either; a
 * full admin who also holds the organization role is held to the same rules here), then
 * `requireOrganizationAdmin(name, sub)`, read now; otherwise the 403 page, before anything of the
 * organization is read.
 */
export function organizationAdminAccess(admin: Console): OrganizationAccess {
  const { organizations } = admin.ctx.management;
  /** Whether the signed-in user administers `name` now; else false after the 403 page. */
  const administers = async (request: FastifyRequest, reply: FastifyReply, name: string, signedIn: SignedIn) => {
    try {
      await organizations.requireOrganizationAdmin(name, signedIn.caller.sub);
      return true;
    } catch (err) {
      if (!(err instanceof AdminError)) throw err;
      admin.forbidden(request, reply, signedIn.role);
      return false;
    }
  };
  return {
    route: `${ORGANIZATION_ADMIN_HOME}/:name`,
    path: (name) => `${ORGANIZATION_ADMIN_HOME}/${encodeURIComponent(name)}`,
    home: ORGANIZATION_ADMIN_HOME,
    section: 'my-organizations',
    settingsPage: false,
    organizationAdmin: true,
    reader: async (request, reply, name) => {
      const signedIn = await admin.sessionReader(request, reply);
      return signedIn && (await administers(request, reply, name, signedIn)) ? signedIn.caller : undefined;
    },
    writer: async (request, reply, name) => {
      const signedIn = await admin.sessionWriter(request, reply);
      return signedIn && (await administers(request, reply, name, signedIn))
        ? { caller: signedIn.caller, form: signedIn.form }
        : undefined;
    },
  };
}

/** Registers the organization admin's home page and the pages of each organization they administer. */
export function organizationAdminPages(admin: Console): void {
  const { organizations } = admin.ctx.management;
  const access = organizationAdminAccess(admin);
  admin.app.get(ORGANIZATION_ADMIN_HOME, async (request, reply) => {
    const signedIn = await admin.sessionReader(request, reply);
    if (!signedIn) return reply;
    const listed = await organizations.administeredBy(signedIn.caller.sub, MAX_LISTED);
    const shown = listed.organizations.map(({ name, displayName }) => ({ name, displayName, at: access.path(name) }));
    const data = { organizations: shown, more: listed.more, max: MAX_LISTED };
    return admin.render(request, reply, 'console-my-organizations', 'my-organizations', data);
  });
  const kit = organizationPageKit(admin, access);
  organizationMemberPages(kit);
  organizationInvitationPages(kit);
}
