/**
 * One organization's invitations in the console, through the invitations service as
 * `/admin/v1/organizations/{name}/invitations` uses it (`OrganizationInvitations`): the pending
 * ones (never their links' tokens), an address invited with roles (the single-use link mailed in
 * the admin's page language, which is the best guess of the invitee's the console has), one
 * revoked. The service audits each (`organization.invitation_create`, `_revoke`) with the console
 * client and the admin's subject. Without config `email` the page says so, and an invitation is
 * refused with the service's 409 on the page; an SMTP server that does not take the mail gives a
 * 503 page (nothing kept). Served for one organization behind an `OrganizationAccess`.
 */
import { CONSOLE_PATH } from '../../config/console-client.js';
import { single } from '../../http/fields.js';
import { OAuthError } from '../../protocol/errors.js';
import type { Params } from '../../protocol/params.js';
import { language } from '../language.js';
import { type OrganizationPage, type OrganizationPageKit, rolesOf, wellFormed } from './organization-access.js';
import { shownTime } from './console-page.js';

/** The longest invitation id (as /admin/v1 bounds it). */
const MAX_INVITATION_ID = 64;

/** A form field, trimmed. */
const field = (form: Params, name: string) => (single(form, name) ?? '').trim();

/** Registers `<route>/invitations` and its changes: invite, `revoke`. */
export function organizationInvitationPages(kit: OrganizationPageKit): void {
  const { admin, access } = kit;
  const { ctx } = admin;
  const invitationsPath = (name: string) => `${access.path(name)}/invitations`;

  const invitationsPage: OrganizationPage = async (request, reply, name, _caller, shown = {}) => {
    let pending;
    try {
      pending = await ctx.invitations.pending(name);
    } catch (err) {
      if (!admin.refused(request, err)) throw err;
      reply.callNotFound();
      return reply;
    }
    const invitations = pending.map((v) => ({ ...v, expires: shownTime(v.expiresAt) }));
    const data = { invitations, mail: ctx.config.email !== undefined };
    return kit.render(request, reply, name, 'invitations', data, shown);
  };

  kit.page('/invitations', invitationsPage);

  kit.change({
    path: '/invitations',
    page: invitationsPage,
    act: async (w, name, request) => {
      const invite = { email: field(w.form, 'email'), roles: rolesOf(field(w.form, 'roles')) };
      await ctx.invitations.invite(name, invite, w.caller, CONSOLE_PATH, language(request));
      return 'consoleInvitationSent';
    },
    typed: (form) => ({ email: field(form, 'email'), roles: field(form, 'roles') }),
    // The SMTP server did not take the mail: the service revoked the invitation, a retry may work.
    // Or the organization sent its invitations of the day.
    refusal: (request, err) => {
      if (!(err instanceof OAuthError)) return undefined;
      if (err.status === 503) return { error: admin.text(request, 'consoleInvitationNotSent'), status: 503 };
      if (err.status === 429) return { error: admin.text(request, 'consoleInvitationQuota'), status: 429 };
      return undefined;
    },
    done: invitationsPath,
  });

  kit.change({
    path: '/invitations/revoke',
    page: invitationsPage,
    act: async (w, name) => {
      const id = wellFormed(single(w.form, 'id') ?? '', MAX_INVITATION_ID, 'invitation');
      await ctx.invitations.revoke(name, id, w.caller, CONSOLE_PATH);
      return 'consoleInvitationRevoked';
    },
    done: invitationsPath,
  });
}
