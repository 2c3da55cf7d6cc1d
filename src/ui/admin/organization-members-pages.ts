/**
 * One organization's members and invitations in the console, over the services /admin/v1 uses
 * (`admin-api-organizations.ts`): members a page at a time by subject (with their username and
 * name where the user admin knows them), added by username or subject with roles (an existing
 * member keeps theirs and gains the given ones, as an accepted invitation does), their roles
 * replaced, removed; pending invitations listed, sent by mail (`OrganizationInvitations.invite`)
 * and revoked. Every change goes through `AuditedChanges` or the invitations service, audited
 * `admin_changed` with the console client and the admin's subject.
 *
 * The pages serve one organization at a time behind an `OrganizationAccess`: where they live and
 * who may use them for which organization. The full console serves them for every organization
 * (`consoleAdminAccess`); a console of an organization's own admins can serve the same pages for
 * theirs with a guard of its own, which must answer before anything is read for an organization
 * its caller may not manage.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { AdminError, invalidField } from '../../admin/errors.js';
import { CONSOLE_PATH } from '../../config/console-client.js';
import { MAX_SUBJECT_LENGTH } from '../../config/schema.js';
import { MAX_ORGANIZATION_NAME, ORGANIZATION_NAME } from '../../config/schema/organizations.js';
import { queryString, single } from '../../http/fields.js';
import { format } from '../../page-kit/i18n.js';
import { OAuthError } from '../../protocol/errors.js';
import type { Params } from '../../protocol/params.js';
import { language } from '../language.js';
import type { Console, Notice, Section } from './console-page.js';
import type { ConsoleCaller } from './console-session.js';
import { MAX_ROLES_TEXT } from './organization-templates.js';

/** Members listed per page. */
const PAGE_SIZE = 50;
/** The longest invitation id (as /admin/v1 bounds it). */
const MAX_INVITATION_ID = 64;
/** Where the full console serves an organization's pages, below the issuer's path. */
export const ORGANIZATIONS_PATH = '/admin/organizations';

/** Where one organization's member and invitation pages are served, and who may use them. */
export interface OrganizationAccess {
  /** The route of an organization's pages below the issuer's path, naming it `:name`. */
  route: string;
  /** The path of organization `name`'s pages below the issuer's path (`route`, the name encoded). */
  path(name: string): string;
  /** The console section its navigation marks. */
  section: Section;
  /** Whether `path(name)` itself is the organization's settings page, to link to. */
  settingsPage: boolean;
  /**
   * The caller of a GET of organization `name`'s pages, or undefined after answering (sign-in,
   * "not allowed", or a 404 for an organization the caller may not manage, which so never learns
   * whether it exists). `name` is well formed (`ORGANIZATION_NAME`) but may name no organization.
   */
  reader(request: FastifyRequest, reply: FastifyReply, name: string): Promise<ConsoleCaller | undefined>;
  /** The caller and form of a POST for organization `name`: the CSRF token checked first, then as `reader`. */
  writer(
    request: FastifyRequest,
    reply: FastifyReply,
    name: string,
  ): Promise<{ caller: ConsoleCaller; form: Params } | undefined>;
}

/** The access of the full console's admins (the admin role, `sigil:admin`): every organization. */
export function consoleAdminAccess(admin: Console): OrganizationAccess {
  return {
    route: `${ORGANIZATIONS_PATH}/:name`,
    path: (name) => `${ORGANIZATIONS_PATH}/${encodeURIComponent(name)}`,
    section: 'organizations',
    settingsPage: true,
    reader: (request, reply) => admin.reader(request, reply),
    writer: (request, reply) => admin.writer(request, reply),
  };
}

/**
 * The organization name of a request's path, when it can be one (an organization's name always
 * matches `ORGANIZATION_NAME`); else undefined after the 404 page, before any guard or store
 * reads it.
 */
export function organizationName(request: FastifyRequest, reply: FastifyReply): string | undefined {
  const { name } = request.params as { name?: string };
  if (name !== undefined && name.length <= MAX_ORGANIZATION_NAME && ORGANIZATION_NAME.test(name)) return name;
  reply.callNotFound();
  return undefined;
}

/**
 * A form's roles: space-separated names, which `parseRoles` then checks (count, length, repeats).
 * @throws AdminError `invalid` (field `roles`) for a field longer than any valid one.
 */
export function rolesOf(text: string): string[] {
  if (text.length > MAX_ROLES_TEXT) throw invalidField('roles', `at most ${MAX_ROLES_TEXT} characters`);
  return text.split(/\s+/).filter((role) => role !== '');
}

/**
 * A subject from a form, when it can be one; else the refusal `not_found` naming no stored value
 * (PostgreSQL refuses a NUL, so nothing malformed reaches the store).
 */
function wellFormed(value: string, max: number, what: string): string {
  if (value.length === 0 || value.length > max || /[\u0000-\u001f\u007f]/.test(value))
    throw new AdminError('not_found', `no such ${what}`);
  return value;
}

/** What a page shows besides the organization's own: the form as typed, refusals, notice. */
interface Shown {
  form?: Record<string, string>;
  errors?: Record<string, string>;
  error?: string;
  notice?: string;
  status?: number;
}

/** Registers the members and invitations pages of one organization at `access.route`. */
export function organizationMemberPages(admin: Console, access: OrganizationAccess): void {
  const { ctx, app } = admin;
  const { organizations, users } = ctx.management;
  const membersPath = (name: string) => `${access.path(name)}/members`;
  const invitationsPath = (name: string) => `${access.path(name)}/invitations`;

  /** The page of `page`, or the 404 page when the organization is gone. */
  const render = async (
    request: FastifyRequest,
    reply: FastifyReply,
    name: string,
    page: 'members' | 'invitations',
    data: Record<string, unknown>,
    shown: Shown,
  ) => {
    let displayName: string;
    try {
      displayName = (await organizations.get(name)).displayName;
    } catch (err) {
      if (!admin.refused(request, err)) throw err;
      reply.callNotFound();
      return reply;
    }
    const values = { at: access.path(name), settingsPage: access.settingsPage, page, name, displayName };
    const { status = 200, form = {}, errors = {}, ...rest } = shown;
    const template = `console-organization-${page}`;
    return admin.render(
      request,
      reply,
      template,
      access.section,
      { ...values, ...data, form, errors, ...rest },
      status,
    );
  };

  /**
   * A refused change as the page shows it, with the typed `form` and its refused fields when given;
   * undefined for any other error (rethrown).
   */
  const refusedShown = (request: FastifyRequest, err: unknown, form?: Record<string, string>): Shown | undefined => {
    const refusal = admin.refused(request, err);
    if (!refusal) return undefined;
    const error = format(admin.text(request, 'consoleChangeRefused'), { message: refusal.message });
    if (!form) return { error, status: refusal.status };
    const errors = { ...refusal.fields };
    // No such user: the refusal is about what was typed in the user field.
    if (err instanceof AdminError && err.detail?.item.kind === 'user') errors.user = refusal.message;
    return { form, errors, error, status: refusal.status };
  };

  /** The username and name of a member, when the user admin knows the subject (not a directory's). */
  const userOf = async (subject: string) => {
    try {
      const user = await users.get(subject);
      const claims = user.claims as Record<string, unknown>;
      const name = typeof claims.name === 'string' ? claims.name : '';
      return { username: user.username, name };
    } catch (err) {
      if (err instanceof AdminError) return { username: '', name: '' };
      throw err;
    }
  };

  const membersPage = async (request: FastifyRequest, reply: FastifyReply, name: string, shown: Shown = {}) => {
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
        return { ...m, ...user, label: user.username || m.subject };
      }),
    );
    return render(request, reply, name, 'members', { members, next: listed.next }, shown);
  };

  const invitationsPage = async (request: FastifyRequest, reply: FastifyReply, name: string, shown: Shown = {}) => {
    let pending;
    try {
      pending = await ctx.invitations.pending(name);
    } catch (err) {
      if (!admin.refused(request, err)) throw err;
      reply.callNotFound();
      return reply;
    }
    const invitations = pending.map((v) => ({
      ...v,
      expires: new Date(v.expiresAt * 1000)
        .toISOString()
        .replace('T', ' ')
        .replace(/\.\d+Z$/, ' UTC'),
    }));
    return render(request, reply, name, 'invitations', { invitations, mail: ctx.config.email !== undefined }, shown);
  };

  /**
   * Registers a POST of one organization's pages: the name, the guard, the change (`act`, which
   * names its confirmation), then the page `done` names; a refusal re-renders `page` with it, and
   * with the typed form (`typed`) and each refused field marked when the form is the page's own
   * (not one of a list's rows).
   */
  const change = (spec: {
    path: string;
    page: (request: FastifyRequest, reply: FastifyReply, name: string, shown?: Shown) => Promise<FastifyReply>;
    act: (w: { caller: ConsoleCaller; form: Params }, name: string, request: FastifyRequest) => Promise<Notice>;
    typed?: (form: Params) => Record<string, string>;
    done: (name: string) => string;
  }) =>
    app.post(`${access.route}${spec.path}`, async (request, reply) => {
      const name = organizationName(request, reply);
      if (name === undefined) return reply;
      const w = await access.writer(request, reply, name);
      if (!w) return reply;
      let notice: Notice;
      try {
        notice = await spec.act(w, name, request);
      } catch (err) {
        const shown = refusedShown(request, err, spec.typed?.(w.form)) ?? notSent(request, err);
        if (!shown) throw err;
        return spec.page(request, reply, name, shown);
      }
      return admin.done(reply, spec.done(name), notice);
    });

  /** The refusal of an invitation whose mail the SMTP server did not take (nothing was kept). */
  const notSent = (request: FastifyRequest, err: unknown): Shown | undefined =>
    err instanceof OAuthError && err.status === 503
      ? { error: admin.text(request, 'consoleInvitationNotSent'), status: 503 }
      : undefined;

  const field = (form: Params, name: string) => (single(form, name) ?? '').trim();

  for (const [path, page] of [
    ['/members', membersPage],
    ['/invitations', invitationsPage],
  ] as const)
    app.get(`${access.route}${path}`, async (request, reply) => {
      const name = organizationName(request, reply);
      if (name === undefined) return reply;
      return (await access.reader(request, reply, name)) ? page(request, reply, name) : reply;
    });

  change({
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

  change({
    path: '/members/roles',
    page: membersPage,
    act: async (w, name) => {
      const subject = wellFormed(single(w.form, 'subject') ?? '', MAX_SUBJECT_LENGTH, 'member');
      await admin.changes(w.caller).putOrganizationMember(name, subject, rolesOf(field(w.form, 'roles')));
      return 'consoleMemberRolesSaved';
    },
    done: membersPath,
  });

  change({
    path: '/members/remove',
    page: membersPage,
    act: async (w, name) => {
      const subject = wellFormed(single(w.form, 'subject') ?? '', MAX_SUBJECT_LENGTH, 'member');
      await admin.changes(w.caller).removeOrganizationMember(name, subject);
      return 'consoleMemberRemoved';
    },
    done: membersPath,
  });

  change({
    path: '/invitations',
    page: invitationsPage,
    act: async (w, name, request) => {
      const invite = { email: field(w.form, 'email'), roles: rolesOf(field(w.form, 'roles')) };
      await ctx.invitations.invite(name, invite, w.caller, CONSOLE_PATH, language(request));
      return 'consoleInvitationSent';
    },
    typed: (form) => ({ email: field(form, 'email'), roles: field(form, 'roles') }),
    done: invitationsPath,
  });

  change({
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
