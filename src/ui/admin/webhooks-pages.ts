/**
 * The console's webhook pages, through `ctx.management.webhooks` as `/admin/v1/webhooks` (never
 * the store): the list with a create form (the generated signing secret shown on the answer page
 * only, as a client's), and one webhook's page: its settings, its delivery log a page at a time
 * (newest first, the service's opaque cursor), a Retry button per delivered or failed delivery
 * (the service refuses a pending one: it is being tried), a Ping button, enable/disable, and
 * delete and secret rotation (the new secret shown once, the replaced one signing 24 hours more)
 * for a stored webhook (a config-file webhook is read-only but for `enabled`, which the
 * service enforces). Every change goes through `AuditedWebhookChanges`, audited as /admin/v1's,
 * and answers Post/Redirect/Get but for the creation, whose page shows the secret once.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AuditedWebhookChanges } from '../../admin/audited-changes.js';
import { DEFAULT_SECRET_GRACE_SECONDS } from '../../admin/clients.js';
import type { WebhookView } from '../../admin/webhooks.js';
import { MAX_WEBHOOK_NAME, WEBHOOK_NAME } from '../../config/schema/webhooks.js';
import { WEBHOOK_EVENT_TYPES } from '../../events/webhook-events.js';
import { queryString, single } from '../../http/fields.js';
import type { Params } from '../../protocol/params.js';
import type { DeliveryLogEntry } from '../../stores/webhook-outbox.js';
import { type Console, type Notice, shownTime } from './console-page.js';

/** Deliveries per page of the log. */
const PAGE_SIZE = 20;
/** The longest delivery id of a path, characters (as /admin/v1 bounds it). */
const MAX_DELIVERY_ID = 64;
/** The events offered as checkboxes: every one of the catalogue, or `*` for all. */
const EVENT_CHOICES = ['*', ...WEBHOOK_EVENT_TYPES];

/**
 * Whether a path's webhook name and delivery id can name anything: a webhook name as the config
 * and the service take it, an id bounded and without control characters. Anything else is the
 * 404 page before the service is asked (PostgreSQL refuses a NUL in text, which would otherwise
 * surface as a server error).
 */
function plausible(name: string, id: string | undefined): boolean {
  return (
    name.length <= MAX_WEBHOOK_NAME &&
    WEBHOOK_NAME.test(name) &&
    (id === undefined || (id.length <= MAX_DELIVERY_ID && /^[^\u0000-\u001f\u007f]+$/.test(id)))
  );
}

/** A delivery as a row of the log. */
function row(d: DeliveryLogEntry) {
  return {
    id: d.id,
    type: d.type,
    status: d.status,
    attempts: d.attempts,
    lastStatusCode: d.lastStatusCode === null ? '' : String(d.lastStatusCode),
    lastAttemptAt: shownTime(d.lastAttemptAt),
    lastError: d.lastError ?? '',
    retryable: d.status !== 'pending',
  };
}

/** Registers `/admin/webhooks` and the pages of one webhook. */
export function webhookPages(admin: Console): void {
  const { ctx, app } = admin;
  const webhooks = ctx.management.webhooks;
  const params = (request: FastifyRequest) => request.params as { name: string; id?: string };
  const webhookPath = (name: string) => `/admin/webhooks/${encodeURIComponent(name)}`;

  const listPage = async (
    request: FastifyRequest,
    reply: FastifyReply,
    form: { name?: string; url?: string; events?: string[] },
    refusal?: { error: string; fields: Record<string, string> },
    status = 200,
  ) =>
    admin.render(
      request,
      reply,
      'console-webhooks',
      'webhooks',
      { webhooks: await webhooks.list(), eventChoices: EVENT_CHOICES, form, ...refusal },
      status,
    );

  /** One webhook's page with a page of its log; the 404 page for a webhook that does not exist. */
  const webhookPage = async (
    request: FastifyRequest,
    reply: FastifyReply,
    name: string,
    extra: { notice?: string; error?: string; secret?: string } = {},
    status = 200,
  ) => {
    let view: WebhookView;
    if (!plausible(name, undefined)) return reply.callNotFound();
    try {
      view = await webhooks.get(name);
    } catch (err) {
      if (!admin.refused(request, err)) throw err;
      return reply.callNotFound();
    }
    const cursor = request.method === 'GET' ? (queryString(request, 'cursor') ?? '') : '';
    let log: { deliveries: DeliveryLogEntry[]; next?: string } = { deliveries: [] };
    let error = extra.error;
    try {
      log = await webhooks.deliveries(name, {
        limit: PAGE_SIZE,
        // The service refuses a cursor of no page (400) before the store sees it.
        ...(cursor !== '' ? { cursor } : {}),
      });
    } catch (err) {
      const refusal = admin.refused(request, err);
      if (!refusal) throw err;
      [error, status] = [refusal.message, refusal.status];
    }
    const next = log.next && `${ctx.basePath}${webhookPath(name)}?${new URLSearchParams({ cursor: log.next })}`;
    const data = { webhook: view, deliveries: log.deliveries.map(row), next, ...extra, error };
    return admin.render(request, reply, 'console-webhook', 'webhooks', data, status);
  };

  /**
   * A POST changing one webhook: CSRF and session checked (`writer`), then `run`, whose answer is
   * the redirect to its page with its notice (Post/Redirect/Get); a refusal is shown on the page
   * with its status, nothing changed.
   */
  const change = (
    path: string,
    run: (changes: AuditedWebhookChanges, name: string, form: Params, id: string) => Promise<Notice>,
    after: (name: string) => string = webhookPath,
  ) =>
    app.post(path, async (request, reply) => {
      const w = await admin.writer(request, reply);
      if (!w) return reply;
      const { name, id } = params(request);
      if (!plausible(name, id)) return reply.callNotFound();
      let notice: Notice;
      try {
        notice = await run(admin.webhookChanges(w.caller), name, w.form, id ?? '');
      } catch (err) {
        const refusal = admin.refused(request, err);
        if (!refusal) throw err;
        return webhookPage(request, reply, name, { error: refusal.message }, refusal.status);
      }
      return admin.done(reply, after(name), notice);
    });

  app.get('/admin/webhooks', async (request, reply) =>
    (await admin.reader(request, reply)) ? listPage(request, reply, {}) : reply,
  );

  app.post('/admin/webhooks', async (request, reply) => {
    const w = await admin.writer(request, reply);
    if (!w) return reply;
    const form = {
      name: single(w.form, 'name')?.trim() ?? '',
      url: single(w.form, 'url')?.trim() ?? '',
      events: w.form.getAll('events').slice(0, EVENT_CHOICES.length),
    };
    try {
      const { view, secret } = await admin.webhookChanges(w.caller).create(form);
      // The secret is shown on this answer only (no-store): no redirect, which would lose it.
      const notice = admin.text(request, 'consoleWebhookCreated');
      return webhookPage(request, reply, view.name, { notice, secret }, 201);
    } catch (err) {
      const refusal = admin.refused(request, err);
      if (!refusal) throw err;
      return listPage(request, reply, form, { error: refusal.message, fields: refusal.fields }, refusal.status);
    }
  });

  app.get('/admin/webhooks/:name', async (request, reply) =>
    (await admin.reader(request, reply)) ? webhookPage(request, reply, params(request).name) : reply,
  );

  change('/admin/webhooks/:name/ping', async (changes, name) => {
    await changes.ping(name);
    return 'consoleWebhookPinged';
  });
  change('/admin/webhooks/:name/deliveries/:id/retry', async (changes, name, _form, id) => {
    await changes.retry(name, id);
    return 'consoleDeliveryRetried';
  });
  change('/admin/webhooks/:name/enabled', async (changes, name, form) => {
    // The version the page was read at: a change made since (by another admin) is refused.
    const enabled = single(form, 'enabled') === 'true';
    await changes.update(name, { enabled }, single(form, 'etag') ?? '');
    return enabled ? 'consoleWebhookEnabled' : 'consoleWebhookDisabled';
  });
  app.post('/admin/webhooks/:name/secret', async (request, reply) => {
    const w = await admin.writer(request, reply);
    if (!w) return reply;
    const { name } = params(request);
    if (!plausible(name, undefined)) return reply.callNotFound();
    let secret: string;
    try {
      // The replaced secret keeps signing beside the new one (two `v1,` signatures) for the
      // grace period, so receivers can move over without refusing a delivery.
      secret = (
        await admin
          .webhookChanges(w.caller)
          .rotateSecret(name, DEFAULT_SECRET_GRACE_SECONDS, single(w.form, 'etag') ?? '')
      ).secret;
    } catch (err) {
      const refusal = admin.refused(request, err);
      if (!refusal) throw err;
      return webhookPage(request, reply, name, { error: refusal.message }, refusal.status);
    }
    // Shown on this answer only (no-store), as at creation: a redirect would lose it.
    return webhookPage(request, reply, name, { notice: admin.text(request, 'consoleSecretRotated'), secret });
  });
  change(
    '/admin/webhooks/:name/delete',
    async (changes, name, form) => {
      await changes.delete(name, single(form, 'etag') ?? '');
      return 'consoleWebhookDeleted';
    },
    () => '/admin/webhooks',
  );
}
