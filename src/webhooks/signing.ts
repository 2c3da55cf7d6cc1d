/**
 * Standard Webhooks signing (the `standardwebhooks` package, as receivers verify): each delivery
 * carries `webhook-id` (the message id, the same at every retry), `webhook-timestamp` (the
 * attempt's Unix seconds) and `webhook-signature`: `v1,<base64 HMAC-SHA256>` of
 * `id.timestamp.body`, one per secret in force, separated by spaces, so that during a rotation's
 * grace period a receiver holding either secret accepts it.
 */
import { randomBytes } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import type { WebhookSecrets } from './registry.js';

/** The bytes of a secret Sigil generates (256 bits; the specification asks for 24 to 64). */
const SECRET_BYTES = 32;

/** A new signing secret: `whsec_` and the base64 of 32 random bytes. Shown once, stored sealed. */
export function newWebhookSecret(): string {
  return `whsec_${randomBytes(SECRET_BYTES).toString('base64')}`;
}

/**
 * The headers that sign `payload` as message `id` at `at`: with the current secret and every
 * retiring one not expired at that time.
 */
export function signatureHeaders(
  id: string,
  payload: string,
  secrets: WebhookSecrets,
  at: Date,
): Record<'webhook-id' | 'webhook-timestamp' | 'webhook-signature', string> {
  const seconds = Math.floor(at.getTime() / 1000);
  const inForce = [secrets.current, ...secrets.retiring.filter((r) => r.expiresAt > seconds).map((r) => r.secret)];
  return {
    'webhook-id': id,
    'webhook-timestamp': String(seconds),
    'webhook-signature': inForce.map((secret) => new Webhook(secret).sign(id, at, payload)).join(' '),
  };
}
