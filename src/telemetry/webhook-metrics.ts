/**
 * Webhook metrics (DESIGN §6b "Webhooks and hooks"), in the registry of the domain metrics: per
 * webhook, the attempts that delivered, failed and will be retried (counted by the node that made
 * them), and the deliveries pending in the outbox with the age of the oldest (read from the store,
 * for the whole deployment, when Prometheus scrapes). The label is the webhook's name: the config
 * file's and the admins' webhooks, a bounded set. Beside them, the synchronous hooks' calls by hook
 * and outcome, and their durations.
 */
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import { nowSeconds } from '../crypto/handles.js';

/** What an attempt came to: a 2xx, a give-up (or 410), or a retry to come. */
export type DeliveryOutcome = 'delivered' | 'failed' | 'retried';

/** What the pending gauges read at each scrape (`SqlWebhookOutbox.pending`). */
export type PendingSource = () => Promise<{ webhook: string; count: number; oldestCreatedAt: number }[]>;

/** The webhook counters and gauges of one node. */
export class WebhookMetrics {
  private readonly attempts: Counter;
  private readonly hookCalls: Counter;
  private readonly hookDuration: Histogram;

  /** Registers the counters and the gauges, which read `pending` at every scrape. */
  constructor(registry: Registry, pending: PendingSource) {
    const registers = [registry];
    this.attempts = new Counter({
      name: 'sigil_webhook_deliveries_total',
      help: 'Webhook delivery attempts by webhook and outcome: delivered (2xx), failed (given up, or 410), retried',
      labelNames: ['webhook', 'outcome'],
      registers,
    });
    this.hookCalls = new Counter({
      name: 'sigil_hook_calls_total',
      help: 'Synchronous hook calls by hook (preToken, postLogin, preRegistration) and outcome: allowed, denied, failed_denied, failed_continued',
      labelNames: ['hook', 'outcome'],
      registers,
    });
    this.hookDuration = new Histogram({
      name: 'sigil_hook_duration_seconds',
      help: 'Duration of the synchronous hook calls by hook (signing, the call, reading and checking the answer), seconds',
      labelNames: ['hook'],
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers,
    });
    // Both gauges come from one read of the store per scrape (prom-client collects them at once).
    let read: ReturnType<PendingSource> | undefined;
    const once = () => {
      read ??= pending().finally(() => {
        read = undefined;
      });
      return read;
    };
    new Gauge({
      name: 'sigil_webhook_pending',
      help: 'Webhook deliveries pending in the outbox, by webhook',
      labelNames: ['webhook'],
      registers,
      async collect() {
        this.reset();
        for (const p of await once()) this.labels(p.webhook).set(p.count);
      },
    });
    new Gauge({
      name: 'sigil_webhook_oldest_pending_age_seconds',
      help: 'Age of the oldest pending webhook delivery, by webhook, seconds',
      labelNames: ['webhook'],
      registers,
      async collect() {
        this.reset();
        const now = nowSeconds();
        for (const p of await once()) this.labels(p.webhook).set(Math.max(0, now - p.oldestCreatedAt));
      },
    });
  }

  /** Counts one attempt's outcome. */
  readonly count = (webhook: string, outcome: DeliveryOutcome): void => {
    this.attempts.inc({ webhook, outcome });
  };

  /**
   * Counts one synchronous hook call's outcome and records its duration, seconds
   * (`SyncHooks.onOutcome`); both labels are fixed sets.
   */
  readonly hookCalled = (hook: string, outcome: string, seconds: number): void => {
    this.hookCalls.inc({ hook, outcome });
    this.hookDuration.observe({ hook }, seconds);
  };
}
