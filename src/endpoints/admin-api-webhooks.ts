/**
 * The webhooks of the management API (/admin/v1/webhooks, `admin-api.ts`; DESIGN §6b "Webhooks and
 * hooks"): list, read, create (the secret generated and shown in that answer only), change by a
 * JSON Merge Patch (RFC 7396) with `If-Match` (`url`, `events`, `enabled`; a config-file webhook
 * `enabled` only), delete, rotate the secret with a grace period; and each webhook's delivery log
 * (a page at a time), the retry of a delivery, and a ping. Thin routes over `WebhookAdmin`; every
 * change goes through `AuditedWebhookChanges`, which records its `admin_changed` event without a
 * secret.
 */
import { z } from 'zod';
import { AuditedWebhookChanges } from '../admin/audited-changes.js';
import { MAX_WEBHOOK_GRACE_SECONDS, type WebhookView } from '../admin/webhooks.js';
import { MAX_WEBHOOK_NAME, webhookEvents, webhookName, webhookUrl } from '../config/schema.js';
import {
  ADMIN_API_PATH,
  type AdminApiServices,
  type Answer,
  type ApiCaller,
  ifMatch,
  requiredIfMatch,
  MERGE_PATCH,
  name,
  parsed,
  paging,
  type Route,
} from './admin-api-kit.js';

const webhookParam = name(MAX_WEBHOOK_NAME).meta({ description: "The webhook's name" });
const deliveryParam = name(64).meta({ description: "The delivery's id (its webhook-id)" });

const webhookOut = z.object({
  name: z.string(),
  url: z.string(),
  events: z.array(z.string()),
  source: z
    .enum(['config', 'store'])
    .meta({ description: "config: the config file's, read-only but for enabled; store: managed here" }),
  enabled: z.boolean().meta({ description: 'false once its receiver answered 410 Gone, or an admin disabled it' }),
  disabled: z
    .object({ at: z.number().meta({ description: 'Unix seconds' }), reason: z.string() })
    .optional()
    .meta({ description: 'Why and since when it is disabled' }),
  retiringSecretsExpireAt: z
    .array(z.number().int())
    .meta({ description: 'When the secrets replaced by a rotation stop signing, Unix seconds' }),
});
const webhookAnswer = z.object({
  webhook: webhookOut,
  secret: z
    .string()
    .optional()
    .meta({ description: 'The signing secret (whsec_...): in the answer that generates it only' }),
});
const deliveryOut = z.object({
  id: z.string().meta({ description: 'The message id (webhook-id), the same at every retry' }),
  type: z.string(),
  status: z.enum(['pending', 'delivered', 'failed']),
  attempts: z.number().int(),
  lastStatusCode: z.number().int().nullable().meta({ description: "The last answer's HTTP status; null for none" }),
  lastAttemptAt: z.number().int().nullable().meta({ description: 'Unix seconds' }),
  createdAt: z.number().int().meta({ description: 'Unix seconds' }),
  nextAttemptAt: z
    .number()
    .int()
    .optional()
    .meta({ description: 'A pending delivery: its next attempt, Unix seconds' }),
  lastError: z.string().optional().meta({ description: 'Why the last attempt failed' }),
});
const deliveriesQuery = z.strictObject({
  ...paging('Deliveries'),
  status: z.enum(['pending', 'delivered', 'failed']).optional().meta({ description: 'Only deliveries in this state' }),
});
const createBody = z.strictObject({ name: webhookName, url: webhookUrl, events: webhookEvents });
const rotateBody = z.strictObject({
  graceSeconds: z
    .number()
    .int()
    .min(0)
    .max(MAX_WEBHOOK_GRACE_SECONDS)
    .default(86400)
    .meta({
      description: `How long the replaced secret keeps signing beside the new one, seconds (0 ends it now; default 86400, at most ${MAX_WEBHOOK_GRACE_SECONDS})`,
    }),
});

/** A webhook's answer: the item under `webhook` (and a new secret), its ETag in the header. */
function answer(view: WebhookView, status = 200, secret?: string): Answer {
  const { etag, ...webhook } = view;
  return { status, etag, body: { webhook, ...(secret === undefined ? {} : { secret }) } };
}

/** The audited webhook changes of one caller. */
function changes(ctx: AdminApiServices, caller: ApiCaller): AuditedWebhookChanges {
  return new AuditedWebhookChanges(ctx.management.webhooks, {
    events: ctx.events,
    endpoint: ADMIN_API_PATH,
    actor: caller,
  });
}

/** The routes of /admin/v1/webhooks. */
export const WEBHOOK_ROUTES: Route[] = [
  {
    method: 'GET',
    url: '/webhooks',
    summary: "Every webhook: the config file's (read-only but for enabled) and the stored ones; never a secret",
    response: z.object({ webhooks: z.array(webhookOut) }),
    handle: async (ctx) => ({
      status: 200,
      body: { webhooks: (await ctx.management.webhooks.list()).map(({ etag: _etag, ...w }) => w) },
    }),
  },
  {
    method: 'POST',
    url: '/webhooks',
    summary: 'Create a stored webhook; its signing secret is generated and shown in this response only',
    created: true,
    body: createBody,
    response: webhookAnswer,
    handle: async (ctx, caller, _p, body) => {
      const { view, secret } = await changes(ctx, caller).create(body);
      return answer(view, 201, secret);
    },
  },
  {
    method: 'GET',
    url: '/webhooks/:name',
    summary: 'One webhook, never its secret',
    params: { name: webhookParam },
    response: webhookAnswer,
    handle: async (ctx, _c, p) => answer(await ctx.management.webhooks.get(p.name ?? '')),
  },
  {
    method: 'PATCH',
    url: '/webhooks/:name',
    summary:
      'Change a webhook by a JSON Merge Patch (RFC 7396) of url, events and enabled (a config-file one: enabled only); If-Match is required',
    params: { name: webhookParam },
    body: z.record(z.string(), z.unknown()).meta({ description: 'A JSON Merge Patch of url, events, enabled' }),
    mediaType: MERGE_PATCH,
    response: webhookAnswer,
    handle: async (ctx, caller, p, body, request) => {
      const etag = requiredIfMatch(request);
      return answer(await changes(ctx, caller).update(p.name ?? '', body, etag));
    },
  },
  {
    method: 'DELETE',
    url: '/webhooks/:name',
    summary: 'Delete a stored webhook and its delivery log',
    params: { name: webhookParam },
    handle: async (ctx, caller, p, _b, request) => {
      await changes(ctx, caller).delete(p.name ?? '', ifMatch(request));
      return { status: 204 };
    },
  },
  {
    method: 'POST',
    url: '/webhooks/:name/secret',
    summary:
      "Rotate a stored webhook's secret: the new one is shown in this response only; the replaced one signs beside it for graceSeconds",
    params: { name: webhookParam },
    body: rotateBody,
    response: webhookAnswer,
    handle: async (ctx, caller, p, body, request) => {
      const { graceSeconds } = parsed(rotateBody, body);
      const { view, secret } = await changes(ctx, caller).rotateSecret(p.name ?? '', graceSeconds, ifMatch(request));
      return answer(view, 200, secret);
    },
  },
  {
    method: 'GET',
    url: '/webhooks/:name/deliveries',
    summary: "A webhook's deliveries, newest first, a page at a time",
    params: { name: webhookParam },
    query: deliveriesQuery,
    response: z.object({
      deliveries: z.array(deliveryOut),
      next: z.string().optional().meta({ description: 'The cursor of the next page; absent on the last' }),
    }),
    handle: async (ctx, _c, p, _b, request) => {
      const q = parsed(deliveriesQuery, request.query);
      const page = await ctx.management.webhooks.deliveries(p.name ?? '', {
        limit: q.limit,
        ...(q.cursor === undefined ? {} : { cursor: q.cursor }),
        ...(q.status === undefined ? {} : { status: q.status }),
      });
      return { status: 200, body: page };
    },
  },
  {
    method: 'POST',
    url: '/webhooks/:name/deliveries/:id/retry',
    summary: 'Send a delivered or failed delivery again, now (409 while it is pending)',
    params: { name: webhookParam, id: deliveryParam },
    response: z.object({ delivery: deliveryOut }),
    handle: async (ctx, caller, p) => ({
      status: 200,
      body: { delivery: await changes(ctx, caller).retry(p.name ?? '', p.id ?? '') },
    }),
  },
  {
    method: 'POST',
    url: '/webhooks/:name/ping',
    summary: 'Send a webhook.ping event to the webhook now; answers the delivery after its first attempt',
    params: { name: webhookParam },
    response: z.object({ delivery: deliveryOut }),
    handle: async (ctx, caller, p) => ({
      status: 200,
      body: { delivery: await changes(ctx, caller).ping(p.name ?? '') },
    }),
  },
];
