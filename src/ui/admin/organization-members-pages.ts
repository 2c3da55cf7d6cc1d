/**
 * One organization's members in the console, over the services `/admin/v1` uses
 * (`admin-api-organizations.ts`): a page of members at a time by subject, with their username and
 * name where the user admin knows the subject (a directory's users show their subject only);
 * a member added by username or subject with roles (someone already a member keeps their roles
 * and gains the given ones, as an accepted invitation does: `AuditedChanges.addOrganizationMember`),
 * a member's roles replaced (`updateOrganizationMember`: never someone who is no member), removed.
 * Every change is audited `admin_changed` with the console client and the admin's subject. Served
 * for one organization behind an `OrganizationAccess` (`organization-access.ts`); for an
 * organization's own admin, as /admin/v1 serves them, without the add form (they invite) and
 * without changes of their own membership.
 */
import { AdminError, invalidField } from '../../admin/errors.js';
import { refuseOwnMembership } from '../../admin/organization-members.js';
import { MAX_SUBJECT_LENGTH } from '../../config/schema.js';
import { queryString, single } from '../../http/fields.js';
import type { Params } from '../../protocol/params.js';
import type { ConsoleCaller } from './console-session.js';
import { type OrganizationPage, type OrganizationPageKit, rolesOf, wellFormed } from './organization-access.js';

/** Members listed per page. */
const PAGE_SIZE = 50;

/** A form field, trimmed. */
const field = (form: Params, name: string) => (single(form, name) ?? '').trim();

/** Registers `<route>/members` and its changes: add, `roles`, `remove`. */
export function organizationMemberPages(kit: OrganizationPageKit): void {
  const { admin, access } = kit;
  const { organizations, users } = admin.ctx.management;
  const membersPath = (name: string) => `${access.path(name)}/members`;

  /**
   * The username and name of a member, when the user admin knows the subject. An organization's
   * own admin sees them too, as Auth0's and Keycloak's organization admin views show members'
   * names and addresses: a subject alone does not tell them whom they give a role or remove. It
   * is asked only for the subjects of this organization's page of members, so they learn nothing
   * of a user who is no member of an organization they administer.
   */
  const userOf = async (subject: string) => {
    try {
      const user = await users.get(subject);
      const claims = user.claims as Record<string, unknown>;
      return { username: user.username, name: typeof claims.name === 'string' ? claims.name : '' };
    } catch (err) {
      if (err instanceof AdminError) return { username: '', name: '' };
      throw err;
    }
  };

  const membersPage: OrganizationPage = async (request, reply, name, caller, shown = {}) => {
    const cursor = request.method === 'GET' ? queryString(request, 'cursor') : undefined;
    let listed;
    try {
      listed = await organizations.members(name, { ...(cursor ? { cursor } : {}), limit: PAGE_SIZE });
    } catch (err) {
      const refusal = admin.refused(request, err);
      if (!refusal) throw err;
      if (refusal.status === 404) {
        reply.callNotFound();
        return reply;
      }
      // A cursor no page gave: the first page, and why.
      listed = await organizations.members(name, { limit: PAGE_SIZE });
      shown = { ...shown, error: refusal.message, status: refusal.status };
    }
    const members = await Promise.all(
      listed.members.map(async (m) => {
        const user = await userOf(m.subject);
        // An organization's own admin leaves their own membership alone: their row offers no change.
        const own = access.organizationAdmin && m.subject === caller.sub;
        return { ...m, ...user, label: user.username || m.subject, own };
      }),
    );
    return kit.render(request, reply, name, 'members', { members, next: listed.next }, shown);
  };

  kit.page('/members', membersPage);

  // A full admin adds a member by username or subject; an organization's own admin invites instead.
  if (!access.organizationAdmin)
    kit.change({
      path: '/members',
      page: membersPage,
      act: async (w, name) => {
        const user = field(w.form, 'user');
        const roles = rolesOf(field(w.form, 'roles'));
        if (user === '') throw invalidField('user', 'enter a username or a subject');
        if (user.length > MAX_SUBJECT_LENGTH) throw invalidField('user', `at most ${MAX_SUBJECT_LENGTH} characters`);
        // A username first, as `sigil users remove` reads a name; anything else is taken as the subject.
        const subject = (await users.subjectOfUsername(user)) ?? user;
        const { added } = await admin.changes(w.caller).addOrganizationMember(name, subject, roles);
        return added ? 'consoleMemberAdded' : 'consoleMemberRolesMerged';
      },
      typed: (form) => ({ user: field(form, 'user'), roles: field(form, 'roles') }),
      done: membersPath,
    });

  /** The member a row's form names; for an organization's own admin, never themselves. */
  const memberOf = (w: { caller: ConsoleCaller; form: Params }) => {
    const subject = wellFormed(single(w.form, 'subject') ?? '', MAX_SUBJECT_LENGTH, 'member');
    if (access.organizationAdmin) refuseOwnMembership(w.caller.sub, subject);
    return subject;
  };

  kit.change({
    path: '/members/roles',
    page: membersPage,
    act: async (w, name) => {
      // A member's roles only: a row of a page read before the member left adds nobody back.
      await admin.changes(w.caller).updateOrganizationMember(name, memberOf(w), rolesOf(field(w.form, 'roles')));
      return 'consoleMemberRolesSaved';
    },
    done: membersPath,
  });

  kit.change({
    path: '/members/remove',
    page: membersPage,
    act: async (w, name) => {
      await admin.changes(w.caller).removeOrganizationMember(name, memberOf(w));
      return 'consoleMemberRemoved';
    },
    done: membersPath,
  });
}
