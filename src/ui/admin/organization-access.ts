/**
 * How the console serves the pages of one organization (its members, its invitations): where they
 * live and who may use them for which organization (`OrganizationAccess`), and the routes they
 * share (`OrganizationPageKit`): the name of the path checked, the guard asked with that name,
 * then the page or the change, a refusal shown on the page, Post/Redirect/Get after a change.
 *
 * The full console serves them for every organization (`consoleAdminAccess`: its admins hold
 * `sigil:admin`). The console of an organization's own admins serves the same pages for theirs
 * with an access of its own (`organization-admin-pages.ts`), whose guard answers (the same
 * refusal for every organization its caller may not manage, so the caller never learns whether
 * it exists) before anything of the organization is read: every route here asks the guard first,
 * with the name of the path.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { AdminError, invalidField } from '../../admin/errors.js';
import { MAX_ORGANIZATION_NAME, ORGANIZATION_NAME } from '../../config/schema/organizations.js';
import { format } from '../../page-kit/i18n.js';
import type { Params } from '../../protocol/params.js';
import type { Console, Notice, Section } from './console-page.js';
import type { ConsoleCaller } from './console-session.js';
import { MAX_ROLES_TEXT } from './organization-templates.js';

/** Where the full console serves the organizations, below the issuer's path. */
export const ORGANIZATIONS_PATH = '/admin/organizations';

/** Where one organization's pages are served, and who may use them. */
export interface OrganizationAccess {
  /** The route of an organization's pages below the issuer's path, naming it `:name`. */
  route: string;
  /** The path of organization `name`'s pages below the issuer's path (`route`, the name encoded). */
  path(name: string): string;
  /** The page listing the organizations of this access (the way back from one's pages), below the issuer's path. */
  home: string;
  /** The console section its navigation marks. */
  section: Section;
  /** Whether `path(name)` itself is the organization's settings page, to link to. */
  settingsPage: boolean;
  /**
   * Whether the caller acts as an organization's own admin (`sigil:org:admin`), under the rules
   * /admin/v1 holds them to: they add no member by username or subject (people join by invitation,
   * with their consent) and leave their own membership alone (`refuseOwnMembership`). False for the
   * full console's admins.
   */
  organizationAdmin: boolean;
  /**
   * The caller of a GET of organization `name`'s pages, or undefined after answering (sign-in,
   * "not allowed", or a refusal for an organization the caller may not manage). `name` is well formed
   * (`ORGANIZATION_NAME`) but may name no organization.
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
    home: ORGANIZATIONS_PATH,
    section: 'organizations',
    settingsPage: true,
    organizationAdmin: false,
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
 * A form's id of a member (`subject`) or an invitation, when it can be one.
 * @throws AdminError `not_found` otherwise, before the store sees it (PostgreSQL refuses a NUL).
 */
export function wellFormed(value: string, max: number, what: string): string {
  if (value.length === 0 || value.length > max || /[\u0000-\u001f\u007f]/.test(value))
    throw new AdminError('not_found', `no such ${what}`);
  return value;
}

/** What a page shows besides the organization's own data: the form as typed, refusals. */
export interface Shown {
  form?: Record<string, string>;
  /** The text of each refused field, by field name. */
  errors?: Record<string, string>;
  error?: string;
  status?: number;
}

/**
 * A page of one organization: renders it for `name` as `caller` sees it (the guard's), with
 * `shown` after a refused change.
 */
export type OrganizationPage = (
  request: FastifyRequest,
  reply: FastifyReply,
  name: string,
  caller: ConsoleCaller,
  shown?: Shown,
) => Promise<FastifyReply>;

/** One change of an organization's pages (see `OrganizationPageKit.change`). */
export interface ChangeSpec {
  /** Below the organization's path (`/members/remove`). */
  path: string;
  /** The page a refusal is shown on. */
  page: OrganizationPage;
  /**
   * Makes the change and names its confirmation.
   * @throws AdminError (and what `Console.refused` knows), shown on `page`; what `refusal` takes
   */
  act(w: { caller: ConsoleCaller; form: Params }, name: string, request: FastifyRequest): Promise<Notice>;
  /** The form as typed, for a form of the page's own (not one of a list's rows): kept, its refused fields marked. */
  typed?: (form: Params) => Record<string, string>;
  /** A refusal of another kind than `Console.refused` knows, if any (the invitation mail's 503), shown with `typed`. */
  refusal?: (request: FastifyRequest, err: unknown) => Shown | undefined;
  /** Where the browser goes after the change (Post/Redirect/Get), by the organization's name. */
  done(name: string): string;
}

/** The routes and rendering the pages of one organization share. */
export interface OrganizationPageKit {
  admin: Console;
  access: OrganizationAccess;
  /** Registers GET `<route><path>`: the name checked, the guard, then `page`. */
  page(path: string, page: OrganizationPage): void;
  /**
   * Registers POST `<route><path>`: the name checked, the guard (CSRF first), the change, then a
   * 303 to its page with its confirmation; a refused change re-renders `page` with the refusal.
   */
  change(spec: ChangeSpec): void;
  /** Sends the template `console-organization-<page>` of `name`, or the 404 page when it is gone. */
  render(
    request: FastifyRequest,
    reply: FastifyReply,
    name: string,
    page: string,
    data: Record<string, unknown>,
    shown?: Shown,
  ): Promise<FastifyReply>;
}

/** The kit of the pages served at `access`. */
export function organizationPageKit(admin: Console, access: OrganizationAccess): OrganizationPageKit {
  const { app } = admin;
  /** A refused change as the page shows it; undefined for any other error. */
  const refused = (request: FastifyRequest, err: unknown, form?: Record<string, string>): Shown | undefined => {
    const refusal = admin.refused(request, err);
    if (!refusal) return undefined;
    const error = format(admin.text(request, 'consoleChangeRefused'), { message: refusal.message });
    if (!form) return { error, status: refusal.status };
    const errors = { ...refusal.fields };
    // No such user: the refusal is about what was typed in the user field.
    if (err instanceof AdminError && err.detail?.item.kind === 'user') errors.user = refusal.message;
    return { form, errors, error, status: refusal.status };
  };
  return {
    admin,
    access,
    page: (path, page) =>
      app.get(`${access.route}${path}`, async (request, reply) => {
        const name = organizationName(request, reply);
        if (name === undefined) return reply;
        const caller = await access.reader(request, reply, name);
        return caller ? page(request, reply, name, caller) : reply;
      }),
    change: (spec) =>
      app.post(`${access.route}${spec.path}`, async (request, reply) => {
        const name = organizationName(request, reply);
        if (name === undefined) return reply;
        const w = await access.writer(request, reply, name);
        if (!w) return reply;
        let notice: Notice;
        try {
          notice = await spec.act(w, name, request);
        } catch (err) {
          const form = spec.typed?.(w.form);
          const other = spec.refusal?.(request, err);
          const shown = refused(request, err, form) ?? (other && { ...other, ...(form ? { form } : {}) });
          if (!shown) throw err;
          return spec.page(request, reply, name, w.caller, shown);
        }
        return admin.done(reply, spec.done(name), notice);
      }),
    render: async (request, reply, name, page, data, shown = {}) => {
      let displayName: string;
      try {
        displayName = (await admin.ctx.management.organizations.get(name)).displayName;
      } catch (err) {
        if (!admin.refused(request, err)) throw err;
        reply.callNotFound();
        return reply;
      }
      const { status = 200, form = {}, errors = {}, ...rest } = shown;
      const values = {
        at: access.path(name),
        home: access.home,
        settingsPage: access.settingsPage,
        addsMembers: !access.organizationAdmin,
        page,
        name,
        displayName,
      };
      const all = { ...values, ...data, form, errors, ...rest };
      return admin.render(request, reply, `console-organization-${page}`, access.section, all, status);
    },
  };
}
