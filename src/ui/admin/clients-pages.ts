/**
 * The console's client pages, through `ctx.management.clients` as `/admin/v1/clients`: the list,
 * creation (a confidential client's generated secret shown on the next page only), and one
 * client's redirect URIs, grant types and scopes (a merge patch guarded by the version the form
 * was read at, so two admins cannot overwrite each other unknowingly) and secret rotation (the
 * replaced secret keeps working for `DEFAULT_SECRET_GRACE_SECONDS`). Config-file clients, the
 * console's own among them, are shown read-only.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { DEFAULT_SECRET_GRACE_SECONDS } from '../../admin/clients.js';
import { single } from '../../http/fields.js';
import type { Params } from '../../protocol/params.js';
import type { Console } from './console-page.js';

/** The grant types offered as checkboxes (a client's own others are kept and shown too). */
const GRANT_TYPES = [
  'authorization_code',
  'refresh_token',
  'client_credentials',
  'urn:ietf:params:oauth:grant-type:device_code',
];
/** The most redirect URIs and scopes a form may list. */
const MAX_ITEMS = 50;

/** A form's lines (redirect URIs) or space-separated words (scopes), bounded. */
function items(value: string | undefined, separator: RegExp): string[] {
  return (value ?? '')
    .split(separator)
    .map((s) => s.trim())
    .filter((s) => s.length > 0)
    .slice(0, MAX_ITEMS);
}

/** The client settings a console form edits. */
function editedSettings(form: Params): {
  allowedGrantTypes: string[];
  redirectUris: string[];
  allowedScopes: string[];
} {
  return {
    allowedGrantTypes: form.getAll('grant').slice(0, MAX_ITEMS),
    redirectUris: items(single(form, 'redirect_uris'), /\r?\n/),
    allowedScopes: items(single(form, 'scopes'), /\s+/),
  };
}

/** Registers `/admin/clients` and the pages of one client. */
export function clientPages(admin: Console): void {
  const { ctx, app } = admin;
  const clients = ctx.management.clients;
  const clientId = (request: FastifyRequest) => (request.params as { clientId: string }).clientId;
  const clientPath = (id: string) => `/admin/clients/${encodeURIComponent(id)}`;

  const listPage = async (
    request: FastifyRequest,
    reply: FastifyReply,
    form: Record<string, unknown>,
    error?: string,
    status = 200,
  ) =>
    admin.render(
      request,
      reply,
      'console-clients',
      'clients',
      { clients: await clients.list(), grantTypes: GRANT_TYPES, form, error },
      status,
    );

  const clientPage = async (
    request: FastifyRequest,
    reply: FastifyReply,
    id: string,
    extra: { notice?: string; error?: string; secret?: string } = {},
    status = 200,
  ) => {
    let view;
    try {
      view = await clients.get(id);
    } catch (err) {
      if (!admin.refused(request, err)) throw err;
      return reply.callNotFound();
    }
    const c = view.client as { allowedGrantTypes?: string[]; redirectUris?: string[]; allowedScopes?: string[] };
    const grants = c.allowedGrantTypes ?? [];
    const form = {
      grants,
      redirect_uris: (c.redirectUris ?? []).join('\n'),
      scopes: (c.allowedScopes ?? []).join(' '),
    };
    const grantTypes = [...GRANT_TYPES, ...grants.filter((g) => !GRANT_TYPES.includes(g))];
    return admin.render(
      request,
      reply,
      'console-client',
      'clients',
      { client: view.client, source: view.source, etag: view.etag, form, grantTypes, ...extra },
      status,
    );
  };

  app.get('/admin/clients', async (request, reply) =>
    (await admin.reader(request, reply)) ? listPage(request, reply, {}) : reply,
  );

  app.post('/admin/clients', async (request, reply) => {
    const w = await admin.writer(request, reply);
    if (!w) return reply;
    const isPublic = single(w.form, 'public') === 'yes';
    const settings = editedSettings(w.form);
    const id = single(w.form, 'client_id')?.trim() ?? '';
    const name = single(w.form, 'client_name')?.trim() ?? '';
    try {
      const { view, secret } = await admin.changes(w.caller).createClient({
        clientId: id,
        ...(name ? { clientName: name } : {}),
        ...settings,
        ...(isPublic ? { requireClientSecret: false, tokenEndpointAuthMethod: 'none' } : {}),
      });
      // A confidential client's secret is shown on this answer only (no-store); a public one's page is a redirect.
      if (!secret) return admin.done(reply, clientPath(String(view.client.clientId)), 'consoleClientCreated');
      return clientPage(
        request,
        reply,
        String(view.client.clientId),
        { notice: admin.text(request, 'consoleClientCreated'), secret },
        201,
      );
    } catch (err) {
      const refusal = admin.refused(request, err);
      if (!refusal) throw err;
      const form = {
        client_id: id,
        client_name: name,
        public: isPublic,
        grants: settings.allowedGrantTypes,
        redirect_uris: settings.redirectUris.join('\n'),
        scopes: settings.allowedScopes.join(' '),
      };
      return listPage(request, reply, form, refusal.message, refusal.status);
    }
  });

  app.get('/admin/clients/:clientId', async (request, reply) =>
    (await admin.reader(request, reply)) ? clientPage(request, reply, clientId(request)) : reply,
  );

  app.post('/admin/clients/:clientId', async (request, reply) => {
    const w = await admin.writer(request, reply);
    if (!w) return reply;
    const id = clientId(request);
    try {
      await admin.changes(w.caller).updateClient(id, editedSettings(w.form), single(w.form, 'etag') ?? '');
    } catch (err) {
      const refusal = admin.refused(request, err);
      if (!refusal) throw err;
      return clientPage(request, reply, id, { error: refusal.message }, refusal.status);
    }
    return admin.done(reply, clientPath(id), 'consoleClientSaved');
  });

  app.post('/admin/clients/:clientId/secret', async (request, reply) => {
    const w = await admin.writer(request, reply);
    if (!w) return reply;
    const id = clientId(request);
    let secret: string;
    try {
      secret = (
        await admin.changes(w.caller).rotateClientSecret(id, DEFAULT_SECRET_GRACE_SECONDS, single(w.form, 'etag') ?? '')
      ).secret;
    } catch (err) {
      const refusal = admin.refused(request, err);
      if (!refusal) throw err;
      return clientPage(request, reply, id, { error: refusal.message }, refusal.status);
    }
    return clientPage(request, reply, id, { notice: admin.text(request, 'consoleSecretRotated'), secret });
  });
}
