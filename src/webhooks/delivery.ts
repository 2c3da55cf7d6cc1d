/**
 * Webhook delivery from the outbox (DESIGN §6b "Webhooks and hooks"), one deliverer per node (and
 * per `--workers` process): it polls for due deliveries of the enabled webhooks, claims each with a
 * lease (`SqlWebhookOutbox.claim`: one node sends it at a time, the earliest pending of its
 * subject only), and POSTs the body signed as Standard Webhooks says, under the SSRF guard
 * (`http/outbound.ts`: https, or plain http to loopback; never a private, link-local or other
 * special-use address) and a timeout, never following a redirect and never reading the answer's
 * body. A 2xx ends the delivery; 410 Gone disables the webhook (its pending deliveries fail, a
 * warning says so); anything else, or no answer, is retried with exponential back-off and jitter
 * until the delivery's give-up time (`webhookDelivery.retrySeconds`, 24 hours by default). A
 * node killed mid-send leaves a lease that runs out; the delivery is then sent again: at least once.
 */
import type { Logger } from 'pino';
import { newId, nowSeconds } from '../crypto/handles.js';
import { guardedPost } from '../http/outbound.js';
import type { ClaimedDelivery, SqlWebhookOutbox } from '../stores/webhook-outbox.js';
import type { DeliveryOutcome } from '../telemetry/webhook-metrics.js';
import type { WebhookRegistry } from './registry.js';
import { signatureHeaders } from './signing.js';
import { type Polling, startPolling } from '../events/polling.js';

/** Delivery settings, seconds (config `webhookDelivery`). */
export interface WebhookDeliveryOptions {
  timeoutSeconds: number;
  firstRetrySeconds: number;
  maxRetrySeconds: number;
  pollSeconds: number;
}

/** What the deliverer tells others: a webhook to disable (a 410). */
export interface DeliveryHooks {
  /** Disables the webhook for good (`WebhookAdmin.disableGone`), on every node. */
  disable(webhook: string, reason: string): Promise<void>;
}

/** Deliveries claimed per batch. */
const BATCH = 20;

/**
 * The wait before attempt `attempts + 1`, seconds: `first` doubled after each failure, at most
 * `max`, then taken at random between its half and its whole ("equal jitter"), so that the
 * retries of many deliveries that failed together spread out; at least 1.
 * @param random a number in [0, 1) (tests pass their own)
 */
export function retryDelaySeconds(attempts: number, first: number, max: number, random = Math.random()): number {
  const full = Math.min(max, first * 2 ** Math.max(0, attempts - 1));
  return Math.max(1, Math.ceil(full / 2 + (full / 2) * random));
}

/** Sends the outbox's deliveries; one per node. */
export class WebhookDeliverer {
  private readonly holder = newId();
  private polling: Polling | undefined;
  /** Told each attempt's outcome (the webhook metrics). */
  onOutcome: (webhook: string, outcome: DeliveryOutcome) => void = () => {};

  constructor(
    private readonly outbox: SqlWebhookOutbox,
    private readonly registry: WebhookRegistry,
    private readonly options: WebhookDeliveryOptions,
    private readonly log: Logger,
    private readonly hooks: DeliveryHooks,
  ) {}

  /** Starts polling every `pollSeconds` (`startPolling`: one poll at a time, the process not kept alive). */
  start(): void {
    this.polling = startPolling(
      () => this.poll(),
      this.options.pollSeconds,
      (err) => this.log.error({ err }, 'webhook delivery failed'),
    );
  }

  /** Stops polling and waits for a poll under way. */
  async stop(): Promise<void> {
    await this.polling?.stop();
  }

  /**
   * One poll: batch after batch until none is due. A delivery settled in one batch lets the next
   * of its subject be claimed in the next batch, at once rather than a poll later.
   */
  private async poll(): Promise<void> {
    for (;;) if ((await this.sendDue()) === 0) break;
  }

  /**
   * Tries the given deliveries now, if this node can claim them (a ping), waiting at most for their
   * requests' timeout; what fails stays queued for its retries.
   */
  async deliverNow(ids: string[]): Promise<void> {
    const now = nowSeconds();
    const claimed = await this.outbox.claim(
      this.holder,
      now,
      now + this.leaseSeconds(),
      ids.length,
      this.registry.enabled(),
      ids,
    );
    await Promise.all(claimed.map((d) => this.attempt(d)));
  }

  /** Claims and sends one batch; returns how many were claimed. */
  private async sendDue(): Promise<number> {
    const now = nowSeconds();
    const claimed = await this.outbox.claim(
      this.holder,
      now,
      now + this.leaseSeconds(),
      BATCH,
      this.registry.enabled(),
    );
    await Promise.all(claimed.map((d) => this.attempt(d)));
    return claimed.length;
  }

  /** A lease outlives the request (its timeout) with margin for signing and the store. */
  private leaseSeconds(): number {
    return 2 * this.options.timeoutSeconds + 5;
  }

  /** One attempt of a claimed delivery, its outcome recorded. Never throws for a receiver's failure. */
  private async attempt(delivery: ClaimedDelivery): Promise<void> {
    const answer = await this.post(delivery);
    if (answer.status !== undefined && answer.status >= 200 && answer.status < 300) {
      await this.outbox.settle(delivery.seq, this.holder, { status: 'delivered', statusCode: answer.status });
      this.onOutcome(delivery.webhook, 'delivered');
      return;
    }
    if (answer.status === 410) return this.gone(delivery);
    await this.failed(delivery, answer.status ?? null, answer.error ?? `HTTP ${answer.status}`);
  }

  /** A 410 Gone: the delivery fails and the webhook is disabled, with a warning. */
  private async gone(delivery: ClaimedDelivery): Promise<void> {
    const { webhook } = delivery;
    await this.outbox.settle(delivery.seq, this.holder, { status: 'failed', statusCode: 410, error: 'HTTP 410' });
    this.onOutcome(webhook, 'failed');
    await this.hooks.disable(webhook, 'the receiver answered 410 Gone');
    this.log.warn(
      { webhook, delivery: delivery.id },
      'webhook disabled: its receiver answered 410 Gone; its pending deliveries are given up (enable it again with PATCH /admin/v1/webhooks/{name} {"enabled": true})',
    );
  }

  /** Any other answer, or none: retried after the back-off, or given up past the delivery's give-up time. */
  private async failed(delivery: ClaimedDelivery, statusCode: number | null, error: string): Promise<void> {
    const { webhook } = delivery;
    // After the answer: a timeout's wait does not count as back-off.
    const next =
      nowSeconds() +
      retryDelaySeconds(delivery.attempts + 1, this.options.firstRetrySeconds, this.options.maxRetrySeconds);
    if (next > delivery.giveUpAt) {
      await this.outbox.settle(delivery.seq, this.holder, { status: 'failed', statusCode, error });
      this.onOutcome(webhook, 'failed');
      this.log.warn(
        { webhook, delivery: delivery.id, attempts: delivery.attempts + 1, error },
        'webhook delivery given up',
      );
      return;
    }
    await this.outbox.settle(delivery.seq, this.holder, { status: 'pending', statusCode, error, nextAttemptAt: next });
    this.onOutcome(webhook, 'retried');
    this.log.info(
      { webhook, delivery: delivery.id, attempts: delivery.attempts + 1, retryAt: next, error },
      'webhook delivery failed; will retry',
    );
  }

  /** POSTs the delivery, signed; its answer's status, or why there was none. */
  private async post(delivery: ClaimedDelivery): Promise<{ status?: number; error?: string }> {
    const webhook = this.registry.get(delivery.webhook);
    if (!webhook) return { error: 'the webhook is no longer in force on this node' };
    try {
      const headers = signatureHeaders(delivery.id, delivery.payload, webhook.secrets, new Date());
      const status = await guardedPost(
        new URL(webhook.url),
        delivery.payload,
        { 'content-type': 'application/json', ...headers },
        // Plain http and loopback addresses are allowed for webhooks (DESIGN §6b); private,
        // link-local and other special-use ones never.
        { timeoutMs: this.options.timeoutSeconds * 1000, maxBytes: 0, allowLoopback: true },
      );
      return { status };
    } catch (err) {
      return { error: err instanceof Error ? err.message : String(err) };
    }
  }
}
