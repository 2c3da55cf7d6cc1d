/**
 * The console's client pages, through `ctx.management.clients` as `/admin/v1/clients` and
 * audited as there (`AuditedChanges`): the list (`/admin/clients`), creation
 * (`/admin/clients/new`; a confidential client's generated secret shown on the next page only),
 * and one client's page (`/admin/clients/{id}`) with every setting of a stored client
 * (`client-settings.ts`) saved as a merge patch guarded by the version the form was read at, so two
 * admins cannot overwrite each other unknowingly (a stale form is refused and the page shows the
 * current values), secret rotation (the replaced secret keeps working for
 * `DEFAULT_SECRET_GRACE_SECONDS`), and deletion after a confirmation page
 * (`/admin/clients/{id}/delete`). A refused setting is marked on its field. Config-file clients,
 * the console's own among them, are shown read-only.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { DEFAULT_SECRET_GRACE_SECONDS } from '../../admin/clients.js';
import { AdminError } from '../../admin/errors.js';
import { single } from '../../http/fields.js';
import type { Params } from '../../protocol/params.js';
import { format } from '../../page-kit/i18n.js';
import { language } from '../language.js';
import {
  CLIENT_SETTINGS,
  type ClientSetting,
  CREATION_SETTINGS,
  type FormValue,
  patchOf,
  settingFields,
  shownValue,
  typedValue,
} from './client-settings.js';
import type { Console, Refusal } from './console-page.js';

/** The longest client id a URL of these pages may name (the schema's limit). */
const MAX_CLIENT_ID = 100;

/** The form values of `settings` as sent. */
function typedValues(settings: readonly ClientSetting[], form: Params): Record<string, FormValue> {
  return Object.fromEntries(settings.map((s) => [s.name, typedValue(s, form)]));
}

/** The refusal of settings whose JSON does not parse, each named as the service names a field. */
function unreadableJson(fields: readonly string[]): AdminError {
  const problems = fields.map((path) => ({ path, message: 'is not valid JSON' }));
  return new AdminError('invalid', `${fields.join(', ')}: not valid JSON`, fields[0], problems);
}

/** What a client's page shows besides the client: a confirmation, a secret, a refusal and what was typed. */
interface PageExtra {
  notice?: string;
  secret?: string;
  refusal?: Refusal;
  typed?: Record<string, FormValue>;
  /** The page's status when it is not refused: 201 for a client just created. */
  status?: number;
}

/** Registers `/admin/clients`, `/admin/clients/new` and the pages of one client. */
export function clientPages(admin: Console): void {
  const { ctx, app } = admin;
  const clients = ctx.management.clients;
  const clientPath = (id: string) => `/admin/clients/${encodeURIComponent(id)}`;
  const refusalText = (request: FastifyRequest, refusal: Refusal | undefined) =>
    refusal ? { error: format(admin.text(request, 'consoleChangeRefused'), { message: refusal.message }) } : {};
  const fields = (
    request: FastifyRequest,
    settings: readonly ClientSetting[],
    values: Record<string, FormValue>,
    refusal: Refusal | undefined,
  ) => settingFields(settings, values, refusal?.fields ?? {}, (key) => admin.text(request, key), language(request));

  /** The client id of the URL, or undefined after the 404 page. */
  const clientId = (request: FastifyRequest, reply: FastifyReply): string | undefined => {
    const { clientId: id } = request.params as { clientId: string };
    if (id.length > MAX_CLIENT_ID) {
      reply.callNotFound();
      return undefined;
    }
    return id;
  };

  const newPage = (
    request: FastifyRequest,
    reply: FastifyReply,
    typed: Record<string, FormValue>,
    isPublic: boolean,
    refusal?: Refusal,
  ) =>
    admin.render(
      request,
      reply,
      'console-client-new',
      'clients',
      {
        fields: fields(request, CREATION_SETTINGS, typed, refusal),
        public: isPublic,
        ...refusalText(request, refusal),
      },
      refusal?.status ?? 200,
    );

  const clientPage = async (request: FastifyRequest, reply: FastifyReply, id: string, extra: PageExtra = {}) => {
    let view;
    try {
      view = await clients.get(id);
    } catch (err) {
      if (!admin.refused(request, err)) throw err;
      return reply.callNotFound();
    }
    const { client } = view;
    const shown = Object.fromEntries(CLIENT_SETTINGS.map((s) => [s.name, shownValue(s, client[s.name])]));
    // Read-only clients list the settings they have, as the config file has them.
    const settings = Object.entries(client)
      .filter(([key]) => key !== 'clientId')
      .map(([key, value]) => ({ key, value: typeof value === 'string' ? value : JSON.stringify(value) }));
    return admin.render(
      request,
      reply,
      'console-client',
      'clients',
      {
        client,
        source: view.source,
        etag: view.etag,
        settings,
        fields: fields(request, CLIENT_SETTINGS, { ...shown, ...extra.typed }, extra.refusal),
        notice: extra.notice,
        secret: extra.secret,
        ...refusalText(request, extra.refusal),
      },
      extra.refusal?.status ?? extra.status ?? 200,
    );
  };

  app.get('/admin/clients', async (request, reply) =>
    (await admin.reader(request, reply))
      ? admin.render(request, reply, 'console-clients', 'clients', { clients: await clients.list() })
      : reply,
  );

  app.get('/admin/clients/new', async (request, reply) =>
    (await admin.reader(request, reply)) ? newPage(request, reply, {}, false) : reply,
  );

  app.post('/admin/clients/new', async (request, reply) => {
    const w = await admin.writer(request, reply);
    if (!w) return reply;
    const isPublic = single(w.form, 'public') === 'yes';
    const typed = typedValues(CREATION_SETTINGS, w.form);
    try {
      const { patch } = patchOf({}, typed, CREATION_SETTINGS);
      const { view, secret } = await admin.changes(w.caller).createClient({
        clientId: '',
        ...patch,
        ...(isPublic ? { requireClientSecret: false, tokenEndpointAuthMethod: 'none' } : {}),
      });
      const id = String(view.client.clientId);
      // A confidential client's secret is shown on this answer only (no-store); a public one's page is a redirect.
      if (!secret) return admin.done(reply, clientPath(id), 'consoleClientCreated');
      return clientPage(request, reply, id, {
        notice: admin.text(request, 'consoleClientCreated'),
        secret,
        status: 201,
      });
    } catch (err) {
      const refusal = admin.refused(request, err);
      if (!refusal) throw err;
      return newPage(request, reply, typed, isPublic, refusal);
    }
  });

  app.get('/admin/clients/:clientId', async (request, reply) => {
    if (!(await admin.reader(request, reply))) return reply;
    const id = clientId(request, reply);
    return id === undefined ? reply : clientPage(request, reply, id);
  });

  app.post('/admin/clients/:clientId', async (request, reply) => {
    const w = await admin.writer(request, reply);
    if (!w) return reply;
    const id = clientId(request, reply);
    if (id === undefined) return reply;
    const typed = typedValues(CLIENT_SETTINGS, w.form);
    try {
      // The patch is taken against the version the form was read at, which the service then checks.
      const read = await clients.get(id);
      const { patch, unreadable } = patchOf(read.client, typed);
      if (unreadable.length > 0) throw unreadableJson(unreadable);
      await admin.changes(w.caller).updateClient(id, patch, single(w.form, 'etag') ?? '');
    } catch (err) {
      const refusal = admin.refused(request, err);
      if (!refusal) throw err;
      // A stale form shows the current values; a refused one what was typed, to correct it.
      return clientPage(request, reply, id, { refusal, ...(refusal.status === 412 ? {} : { typed }) });
    }
    return admin.done(reply, clientPath(id), 'consoleClientSaved');
  });

  app.post('/admin/clients/:clientId/secret', async (request, reply) => {
    const w = await admin.writer(request, reply);
    if (!w) return reply;
    const id = clientId(request, reply);
    if (id === undefined) return reply;
    let secret: string;
    try {
      secret = (
        await admin.changes(w.caller).rotateClientSecret(id, DEFAULT_SECRET_GRACE_SECONDS, single(w.form, 'etag') ?? '')
      ).secret;
    } catch (err) {
      const refusal = admin.refused(request, err);
      if (!refusal) throw err;
      return clientPage(request, reply, id, { refusal });
    }
    return clientPage(request, reply, id, { notice: admin.text(request, 'consoleSecretRotated'), secret });
  });

  app.get('/admin/clients/:clientId/delete', async (request, reply) => {
    if (!(await admin.reader(request, reply))) return reply;
    const id = clientId(request, reply);
    if (id === undefined) return reply;
    let view;
    try {
      view = await clients.get(id);
    } catch (err) {
      if (!admin.refused(request, err)) throw err;
      return reply.callNotFound();
    }
    if (view.source !== 'store') return clientPage(request, reply, id);
    return admin.render(request, reply, 'console-client-delete', 'clients', { client: view.client, etag: view.etag });
  });

  app.post('/admin/clients/:clientId/delete', async (request, reply) => {
    const w = await admin.writer(request, reply);
    if (!w) return reply;
    const id = clientId(request, reply);
    if (id === undefined) return reply;
    try {
      await admin.changes(w.caller).deleteClient(id, single(w.form, 'etag') ?? '');
    } catch (err) {
      const refusal = admin.refused(request, err);
      if (!refusal) throw err;
      return clientPage(request, reply, id, { refusal });
    }
    return admin.done(reply, '/admin/clients', 'consoleClientDeleted');
  });
}
