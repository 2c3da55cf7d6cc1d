/**
 * Event webhooks (DESIGN §6b "Webhooks and hooks"): an entry of the config's `webhooks`, whose
 * fields a stored webhook (/admin/v1/webhooks) shares but for its secret, which Sigil generates;
 * and `webhookDelivery`, how every node delivers from the outbox.
 */
import * as z from 'zod';
import { PING_EVENT, WEBHOOK_EVENT_TYPES } from '../../events/webhook-events.js';
import { httpsOrLoopback, lifetime } from './field-kinds.js';

/** The longest webhook name, characters. */
export const MAX_WEBHOOK_NAME = 63;
/** The most webhooks of the config file (stored ones are not counted). */
export const MAX_CONFIG_WEBHOOKS = 100;
/** The longest webhook URL, characters. */
export const MAX_WEBHOOK_URL = 2000;
/** A webhook name: lower-case letters, digits, `-` and `_`, starting with a letter or digit (it appears in paths). */
export const WEBHOOK_NAME = /^[a-z0-9][a-z0-9_-]*$/;
/**
 * A Standard Webhooks secret: `whsec_` and the base64 of 24 to 64 random bytes (the specification's
 * bounds); Sigil generates 32.
 */
export const WEBHOOK_SECRET = /^whsec_[A-Za-z0-9+/]+={0,2}$/;

/** Whether `value` is a Standard Webhooks secret of 24 to 64 bytes (`WEBHOOK_SECRET`). */
export function isWebhookSecret(value: string): boolean {
  if (!WEBHOOK_SECRET.test(value)) return false;
  const bytes = Buffer.from(value.slice('whsec_'.length), 'base64').length;
  return bytes >= 24 && bytes <= 64;
}

/** The webhook's name, as in paths (`/admin/v1/webhooks/{name}`). */
export const webhookName = z
  .string()
  .min(1)
  .max(MAX_WEBHOOK_NAME)
  .regex(WEBHOOK_NAME, 'lower-case letters, digits, - and _ only, starting with a letter or digit')
  .meta({
    description: `The webhook's name, in paths and the delivery log: 1 to ${MAX_WEBHOOK_NAME} lower-case letters, digits, - and _; unique`,
  });

/** Where deliveries are POSTed. */
export const webhookUrl = httpsOrLoopback
  .refine((u) => u.length <= MAX_WEBHOOK_URL, 'too long')
  .meta({
    description:
      'Where deliveries are POSTed: https, or plain http on a loopback host; never a private, link-local or other special-use address (checked at each delivery)',
  });

/** The events a webhook receives: names of the catalogue, or `["*"]` for all. */
export const webhookEvents = z
  .array(z.enum([...WEBHOOK_EVENT_TYPES, '*']))
  .min(1)
  .max(WEBHOOK_EVENT_TYPES.length)
  .superRefine((events, ctx) => {
    if (events.includes('*') && events.length > 1)
      ctx.addIssue({ code: 'custom', message: '"*" stands alone: it subscribes to every event' });
    events.forEach((e, i) => {
      if (events.indexOf(e) !== i) ctx.addIssue({ code: 'custom', path: [i], message: `"${e}" is listed twice` });
    });
  })
  .meta({
    description: `The events delivered: any of ${WEBHOOK_EVENT_TYPES.join(', ')}; or ["*"] for all (${PING_EVENT} comes only when asked)`,
  });

/** One entry of `webhooks`. */
export const webhook = z.strictObject({
  name: webhookName,
  url: webhookUrl,
  events: webhookEvents,
  secret: z.string().refine(isWebhookSecret, 'must be whsec_ and the base64 of 24 to 64 random bytes').meta({
    description:
      'The Standard Webhooks signing secret: whsec_ and the base64 of 24 to 64 random bytes (usually { "$env": ... } or { "$file": ... })',
    spec: 'Standard Webhooks §Signature scheme',
  }),
});

/** A webhook of the config file, defaults filled in. */
export type WebhookConfig = z.output<typeof webhook>;

/** `webhookDelivery`'s defaults. */
export const WEBHOOK_DELIVERY_DEFAULTS = {
  timeoutSeconds: 10,
  retrySeconds: 86400,
  firstRetrySeconds: 5,
  maxRetrySeconds: 3600,
  pollSeconds: 1,
};

/** `webhookDelivery`: how each node delivers from the outbox. */
export const webhookDelivery = z
  .strictObject({
    timeoutSeconds: lifetime
      .max(60)
      .default(WEBHOOK_DELIVERY_DEFAULTS.timeoutSeconds)
      .meta({ description: "Each POST's timeout (connecting, sending, the answer's status), seconds" }),
    retrySeconds: lifetime
      .default(WEBHOOK_DELIVERY_DEFAULTS.retrySeconds)
      .meta({ description: 'How long a delivery is retried before it is given up (failed), seconds' }),
    firstRetrySeconds: lifetime
      .default(WEBHOOK_DELIVERY_DEFAULTS.firstRetrySeconds)
      .meta({ description: 'The wait before the first retry, seconds; doubled after each failure, with jitter' }),
    maxRetrySeconds: lifetime
      .default(WEBHOOK_DELIVERY_DEFAULTS.maxRetrySeconds)
      .meta({ description: 'The longest wait between two attempts, seconds' }),
    pollSeconds: lifetime
      .max(60)
      .default(WEBHOOK_DELIVERY_DEFAULTS.pollSeconds)
      .meta({ description: 'How often each node looks for due deliveries, seconds' }),
  })
  .default(WEBHOOK_DELIVERY_DEFAULTS)
  .meta({
    description:
      'Webhook delivery from the outbox: at least once, in order per subject, retried with exponential back-off and jitter (firstRetrySeconds doubling up to maxRetrySeconds) for retrySeconds; a 2xx ends it, 410 disables the webhook',
  });
