/**
 * The console's organization pages, over `ctx.management.organizations` as
 * `/admin/v1/organizations` (`admin-api-organizations.ts`): the list with each one's source and a
 * create form, and one organization's page: its settings (display name, email domains, identity
 * providers among those in force, membership) as a form for a stored one, saved as a merge patch
 * guarded by the version the form was read at (a stale form is refused and shows the current
 * settings), and its deletion; a config-file organization's settings are shown read-only. Its
 * members and invitations are `organization-members-pages.ts`'s and
 * `organization-invitations-pages.ts`'s, served for every organization (`consoleAdminAccess`).
 * Every change goes through `AuditedChanges`.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { OrganizationView } from '../../admin/organizations.js';
import { MAX_ORGANIZATION_DOMAINS, MAX_ORGANIZATION_PROVIDERS } from '../../config/schema/organizations.js';
import { single } from '../../http/fields.js';
import { format } from '../../page-kit/i18n.js';
import type { Params } from '../../protocol/params.js';
import type { Console, Refusal } from './console-page.js';
import {
  consoleAdminAccess,
  ORGANIZATIONS_PATH,
  organizationName,
  organizationPageKit,
} from './organization-access.js';
import { organizationInvitationPages } from './organization-invitations-pages.js';
import { organizationMemberPages } from './organization-members-pages.js';

/** The settings a console form edits, as an organization's entry names them. */
interface Settings {
  displayName: string;
  domains: readonly string[];
  identityProviders: readonly string[];
  /** Absent when the form sent none: the default (create) or the current one (save). */
  membership?: string;
}

/**
 * A form's settings. Domains may be one per line or separated by spaces or commas (none has
 * either); one item more than allowed is kept, so the entry's checks refuse too many rather than
 * the page dropping some silently.
 */
function settingsOf(form: Params): Settings {
  const membership = single(form, 'membership');
  return {
    displayName: (single(form, 'displayName') ?? '').trim(),
    domains: (single(form, 'domains') ?? '')
      .split(/[\s,]+/)
      .filter((d) => d !== '')
      .slice(0, MAX_ORGANIZATION_DOMAINS + 1),
    identityProviders: form.getAll('identityProviders').slice(0, MAX_ORGANIZATION_PROVIDERS + 1),
    ...(membership === undefined ? {} : { membership }),
  };
}

/** Registers `/admin/organizations`, each organization's page, and its member and invitation pages. */
export function organizationPages(admin: Console): void {
  const { ctx, app } = admin;
  const organizations = ctx.management.organizations;
  const access = consoleAdminAccess(admin);

  /** A settings form's values: the providers in force offered, those the settings name kept. */
  const formOf = (settings: Settings, name = '') => {
    const inForce = ctx.upstream.all().map((p) => ({ name: p.name, label: p.displayName ?? p.name }));
    const named = settings.identityProviders.filter((p) => !inForce.some((f) => f.name === p));
    const providers = [...inForce, ...named.map((p) => ({ name: p, label: p }))].map((p) => ({
      ...p,
      checked: settings.identityProviders.includes(p.name),
    }));
    return {
      name,
      displayName: settings.displayName,
      domains: settings.domains.join('\n'),
      providers,
      membership: settings.membership ?? 'invite',
    };
  };

  /** The page's refusal texts: the whole and each refused field's. */
  const refusalShown = (request: FastifyRequest, refusal?: Refusal) =>
    refusal
      ? {
          error: format(admin.text(request, 'consoleChangeRefused'), { message: refusal.message }),
          errors: refusal.fields,
        }
      : { errors: {} };

  const listPage = async (
    request: FastifyRequest,
    reply: FastifyReply,
    typed?: Settings & { name: string },
    refusal?: Refusal,
  ) => {
    const listed = (await organizations.list()).map(({ etag: _etag, ...o }) => o);
    const form = formOf(typed ?? { displayName: '', domains: [], identityProviders: [] }, typed?.name);
    const data = { organizations: listed, form, ...refusalShown(request, refusal) };
    return admin.render(request, reply, 'console-organizations', 'organizations', data, refusal?.status ?? 200);
  };

  /** An organization's page; its settings form shows `typed` (after a refusal) or the current settings. */
  const organizationPage = async (
    request: FastifyRequest,
    reply: FastifyReply,
    name: string,
    typed?: Settings,
    refusal?: Refusal,
  ) => {
    let view: OrganizationView;
    try {
      view = await organizations.get(name);
    } catch (err) {
      if (!admin.refused(request, err)) throw err;
      reply.callNotFound();
      return reply;
    }
    const { etag, ...organization } = view;
    const data = {
      organization,
      etag,
      at: access.path(name),
      settingsPage: true,
      page: 'settings',
      form: formOf(typed ?? view),
      ...refusalShown(request, refusal),
    };
    return admin.render(request, reply, 'console-organization', 'organizations', data, refusal?.status ?? 200);
  };

  app.get(ORGANIZATIONS_PATH, async (request, reply) =>
    (await admin.reader(request, reply)) ? listPage(request, reply) : reply,
  );

  app.post(ORGANIZATIONS_PATH, async (request, reply) => {
    const w = await admin.writer(request, reply);
    if (!w) return reply;
    const typed = { name: (single(w.form, 'name') ?? '').trim(), ...settingsOf(w.form) };
    try {
      const view = await admin.changes(w.caller).createOrganization(typed);
      return admin.done(reply, access.path(view.name), 'consoleOrganizationCreated');
    } catch (err) {
      const refusal = admin.refused(request, err);
      if (!refusal) throw err;
      return listPage(request, reply, typed, refusal);
    }
  });

  app.get(access.route, async (request, reply) => {
    const name = organizationName(request, reply);
    if (name === undefined) return reply;
    return (await admin.reader(request, reply)) ? organizationPage(request, reply, name) : reply;
  });

  app.post(access.route, async (request, reply) => {
    const name = organizationName(request, reply);
    if (name === undefined) return reply;
    const w = await admin.writer(request, reply);
    if (!w) return reply;
    const typed = settingsOf(w.form);
    try {
      await admin.changes(w.caller).updateOrganization(name, typed, single(w.form, 'etag') ?? '');
    } catch (err) {
      const refusal = admin.refused(request, err);
      if (!refusal) throw err;
      // A stale form: the settings as they are now, so the admin sees what changed meanwhile.
      return organizationPage(request, reply, name, refusal.status === 412 ? undefined : typed, refusal);
    }
    return admin.done(reply, access.path(name), 'consoleOrganizationSaved');
  });

  app.post(`${access.route}/delete`, async (request, reply) => {
    const name = organizationName(request, reply);
    if (name === undefined) return reply;
    const w = await admin.writer(request, reply);
    if (!w) return reply;
    try {
      await admin.changes(w.caller).deleteOrganization(name, single(w.form, 'etag') ?? '');
    } catch (err) {
      const refusal = admin.refused(request, err);
      if (!refusal) throw err;
      return organizationPage(request, reply, name, undefined, refusal);
    }
    return admin.done(reply, ORGANIZATIONS_PATH, 'consoleOrganizationDeleted');
  });

  const kit = organizationPageKit(admin, access);
  organizationMemberPages(kit);
  organizationInvitationPages(kit);
}
