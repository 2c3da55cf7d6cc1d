/**
 * The webhooks in force on a node (DESIGN §6b "Webhooks and hooks"): the config file's, read-only,
 * and the stored ones (`admin/webhooks.ts` re-reads them when the store's `webhooks` change counter
 * moves), each enabled unless a 410 answer or an admin disabled it. It says which webhooks get an
 * event (`subscribers`, the outbox's routing at each write) and where and with which secrets a
 * delivery goes (`get`).
 */
import type { ResolvedConfig } from '../config/loader.js';
import type { WebhookConfig } from '../config/schema.js';
import type { DisabledWebhook } from '../stores/sql-webhooks.js';
import type { Store } from '../stores/types.js';

/** A signing secret that still signs until `expiresAt` (Unix seconds), after a rotation. */
export interface RetiringWebhookSecret {
  secret: string;
  expiresAt: number;
}

/** A webhook's signing secrets: the current one, and the replaced ones during their grace period. */
export interface WebhookSecrets {
  current: string;
  retiring: RetiringWebhookSecret[];
}

/** A webhook in force. */
export interface WebhookInForce {
  name: string;
  url: string;
  /** Event names, or `["*"]`. */
  events: readonly string[];
  source: 'config' | 'store';
  /** Its secrets; a stored webhook's are opened when it is read (they are sealed in the store). */
  secrets: WebhookSecrets;
  /** Set when the webhook is disabled: deliveries are neither written nor sent. */
  disabled?: DisabledWebhook;
}

/** The webhooks of the config file and the store, and which are disabled. */
export class WebhookRegistry {
  private stored: WebhookInForce[] = [];
  private disabledByName = new Map<string, DisabledWebhook>();
  private byName = new Map<string, WebhookInForce>();

  constructor(private readonly configured: readonly WebhookConfig[]) {
    this.index();
  }

  /** Puts the stored webhooks in force (a config-file one of the same name wins). */
  setStored(webhooks: WebhookInForce[]): void {
    this.stored = webhooks;
    this.index();
  }

  /** Puts the set of disabled webhooks in force. */
  setDisabled(disabled: Map<string, DisabledWebhook>): void {
    this.disabledByName = disabled;
    this.index();
  }

  /** Every webhook in force: the config file's, then the stored ones by name. */
  all(): WebhookInForce[] {
    return [...this.byName.values()];
  }

  /** A webhook in force, or undefined. */
  get(name: string): WebhookInForce | undefined {
    return this.byName.get(name);
  }

  /** Whether the config file defines `name`. */
  isConfigured(name: string): boolean {
    return this.configured.some((w) => w.name === name);
  }

  /** The enabled webhooks that receive events of `type` (the outbox's routing). */
  readonly subscribers = (type: string): string[] =>
    this.all()
      .filter((w) => !w.disabled && (w.events.includes('*') || w.events.includes(type)))
      .map((w) => w.name);

  /** The names of the enabled webhooks: those a node delivers to. */
  enabled(): string[] {
    return this.all()
      .filter((w) => !w.disabled)
      .map((w) => w.name);
  }

  private index(): void {
    const byName = new Map<string, WebhookInForce>();
    for (const w of this.configured)
      byName.set(w.name, {
        name: w.name,
        url: w.url,
        events: w.events,
        source: 'config',
        secrets: { current: w.secret, retiring: [] },
      });
    for (const w of this.stored) if (!byName.has(w.name)) byName.set(w.name, w);
    for (const [name, w] of byName) {
      const disabled = this.disabledByName.get(name);
      byName.set(name, disabled ? { ...w, disabled } : { ...w, disabled: undefined });
    }
    this.byName = byName;
  }
}

/**
 * Routes the events a one-off process writes (`sigil users`, `sigil clients`) to the webhooks in
 * force, for the running nodes to deliver: the config file's and the stored ones, less the
 * disabled. It sends nothing, so the stored secrets stay sealed (no data key needed).
 */
export async function routeToStoredWebhooks(
  store: Pick<Store, 'webhooks' | 'webhookOutbox'>,
  cfg: Pick<ResolvedConfig, 'webhooks' | 'webhookDelivery'>,
): Promise<void> {
  const registry = new WebhookRegistry(cfg.webhooks);
  const unsigned = { current: '', retiring: [] };
  registry.setStored((await store.webhooks.list()).map((w) => ({ ...w, source: 'store' as const, secrets: unsigned })));
  registry.setDisabled(await store.webhooks.disabled());
  store.webhookOutbox.configure(registry.subscribers, cfg.webhookDelivery.retrySeconds);
}
