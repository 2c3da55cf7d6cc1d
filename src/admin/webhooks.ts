/**
 * Webhook administration (DESIGN §6b "Webhooks and hooks"): the one door to the stored webhooks,
 * the delivery log, retries and pings, for /admin/v1/webhooks.
 *
 * - A stored webhook takes `name`, `url` and `events` as the config file's entries do; its secret
 *   is generated here (`whsec_`, 256 bits), shown once, and stored sealed under the data key
 *   (`SIGIL_DATA_KEY`) when one is set, as upstream providers' client secrets are: unlike a
 *   client's secret it must be recoverable, to sign. A rotation keeps the replaced secret signing
 *   beside the new one for a grace period (Standard Webhooks allows several signatures).
 * - A config-file webhook is read-only, but for `enabled` (its state, not its settings).
 * - A webhook whose receiver answered 410 Gone is disabled (`disableGone`): its pending deliveries
 *   fail and no event is written for it until an admin enables it again.
 * - Every change is in force on this node when the call returns (`reload`), on the others within
 *   about a second (the store's `webhooks` change counter, polled by `compose/changes.ts`).
 * - No answer holds a secret but the one that generates it.
 */
import { isIP } from 'node:net';
import type { Logger } from 'pino';
import * as z from 'zod';
import { MAX_WEBHOOK_NAME, WEBHOOK_NAME, webhookEvents, webhookName, webhookUrl } from '../config/schema.js';
import { nowSeconds } from '../crypto/handles.js';
import { isFetchableAddress } from '../http/outbound.js';
import { openJson, sealJson } from '../keys/keys.js';
import { applyMergePatch } from '../protocol/merge-patch.js';
import type { StoredWebhook } from '../stores/sql-webhooks.js';
import type { Store } from '../stores/types.js';
import type { DeliveryLogEntry, DeliveryStatus } from '../stores/webhook-outbox.js';
import type { WebhookInForce, WebhookRegistry, WebhookSecrets } from '../webhooks/registry.js';
import { newWebhookSecret } from '../webhooks/signing.js';
import { AdminError, etagOf, ifMatchHolds, invalidField, isJsonObject, parseOrRefuse } from './errors.js';

/** A webhook as the management API shows it (never its secret), with its ETag. */
export interface WebhookView {
  name: string;
  url: string;
  events: string[];
  source: 'config' | 'store';
  enabled: boolean;
  /** Why and since when (Unix seconds) it is disabled. */
  disabled?: { at: number; reason: string };
  /** When the replaced secrets of a rotation stop signing (Unix seconds). */
  retiringSecretsExpireAt: number[];
  etag: string;
}

/** The longest grace period of a replaced secret, seconds (30 days). */
export const MAX_WEBHOOK_GRACE_SECONDS = 30 * 24 * 3600;

/** A stored webhook's body (its secret is Sigil's to generate). */
const storedBody = z.strictObject({ name: webhookName, url: webhookUrl, events: webhookEvents });

/** What a change may set: the settings, and `enabled`. */
const patchResult = z.strictObject({ url: webhookUrl, events: webhookEvents, enabled: z.boolean() });

/** What `WebhookAdmin` works with. */
export interface WebhookAdminOptions {
  /** The webhooks in force on this node, which `reload` fills. */
  registry: WebhookRegistry;
  /** The data key (`SIGIL_DATA_KEY`): stored secrets are sealed under it when given. */
  dataKey?: Uint8Array;
  log: Pick<Logger, 'error' | 'warn'>;
  /** Tries deliveries at once on this node (a ping); absent where no deliverer runs. */
  deliverNow?: (ids: string[]) => Promise<void>;
}

/** Lists, creates, changes and deletes webhooks; their delivery log, retries and pings. */
export class WebhookAdmin {
  private reloading: Promise<void> = Promise.resolve();

  constructor(
    private readonly store: Pick<Store, 'webhooks' | 'webhookOutbox'>,
    private readonly options: WebhookAdminOptions,
  ) {}

  /** Every webhook: the config file's, then the stored ones by name. */
  async list(): Promise<WebhookView[]> {
    const disabled = await this.store.webhooks.disabled();
    const configured = this.options.registry.all().filter((w) => w.source === 'config');
    const stored = await this.store.webhooks.list();
    return [
      ...configured.map((w) => configView(w, disabled.get(w.name))),
      ...(await Promise.all(stored.map(async (w) => storedView(w, await this.secretsOf(w), disabled.get(w.name))))),
    ];
  }

  /** One webhook. @throws AdminError `not_found`. */
  async get(name: string): Promise<WebhookView> {
    const disabled = (await this.store.webhooks.disabled()).get(name);
    const configured = this.configured(name);
    if (configured) return configView(configured, disabled);
    const stored = await this.stored(name);
    return storedView(stored, await this.secretsOf(stored), disabled);
  }

  /**
   * Creates a stored webhook with a new secret.
   * @returns it, and its secret: shown this once.
   * @throws AdminError `invalid` (with `problems`: a `secret` is refused, Sigil generates it; a URL
   *   whose host is a special-use address), `conflict` for a name taken.
   */
  async create(body: unknown): Promise<{ view: WebhookView; secret: string }> {
    if (isJsonObject(body) && 'secret' in body)
      throw invalidField('secret', 'Sigil generates the secret; it is shown once in the response');
    const settings = parseOrRefuse(storedBody, body);
    refuseSpecialUse(settings.url);
    if (this.configured(settings.name)) throw exists(settings.name);
    const secret = newWebhookSecret();
    const secrets = await this.seal({ current: secret, retiring: [] });
    if (!(await this.store.webhooks.add({ ...settings, secrets }))) throw exists(settings.name);
    await this.reload();
    return { view: await this.get(settings.name), secret };
  }

  /**
   * Changes a webhook by a JSON Merge Patch (RFC 7396) of `url`, `events` and `enabled`, if it is
   * at the version `ifMatch` names. A config-file webhook takes `enabled` only.
   * @returns the new version and the names of what changed.
   * @throws AdminError `read_only`, `not_found`, `precondition_failed`, `invalid`.
   */
  async update(
    name: string,
    patch: unknown,
    ifMatch: string,
  ): Promise<{ view: WebhookView; changed: ('url' | 'events' | 'enabled')[] }> {
    const before = await this.get(name);
    if (!ifMatchHolds(ifMatch, before.etag)) throw changedMeanwhile(name);
    if (!isJsonObject(patch)) throw invalidField('', 'a merge patch of a webhook must be a JSON object');
    if ('name' in patch) throw invalidField('name', 'a name cannot change');
    if (before.source === 'config' && Object.keys(patch).some((k) => k !== 'enabled')) throw readOnly(name);
    const next = parseOrRefuse(
      patchResult,
      applyMergePatch({ url: before.url, events: before.events, enabled: before.enabled }, patch),
    );
    const changed = (['url', 'events', 'enabled'] as const).filter(
      (f) => JSON.stringify(next[f]) !== JSON.stringify(before[f]),
    );
    if (changed.includes('url')) refuseSpecialUse(next.url);
    if (changed.includes('url') || changed.includes('events')) {
      const stored = await this.stored(name);
      if (!(await this.store.webhooks.update(name, stored.version, { ...next, secrets: stored.secrets })))
        throw changedMeanwhile(name);
    }
    if (changed.includes('enabled')) await this.setEnabled(name, next.enabled, 'disabled by an admin');
    await this.reload();
    return { view: await this.get(name), changed };
  }

  /** Deletes a stored webhook with its delivery log. @throws AdminError `read_only`, `not_found`, `precondition_failed`. */
  async delete(name: string, ifMatch: string | undefined): Promise<void> {
    if (this.configured(name)) throw readOnly(name);
    const stored = await this.stored(name);
    if (
      !ifMatchHolds(ifMatch, (await this.get(name)).etag) ||
      !(await this.store.webhooks.remove(name, stored.version))
    )
      throw changedMeanwhile(name);
    await this.reload();
  }

  /**
   * Replaces a stored webhook's secret; the replaced ones sign beside it for `graceSeconds` more.
   * @returns the new version and the new secret, shown this once.
   * @throws AdminError `read_only`, `not_found`, `precondition_failed`, `invalid` (`graceSeconds`).
   */
  async rotateSecret(
    name: string,
    graceSeconds: number,
    ifMatch: string | undefined,
    now = nowSeconds(),
  ): Promise<{ view: WebhookView; secret: string }> {
    if (!Number.isInteger(graceSeconds) || graceSeconds < 0 || graceSeconds > MAX_WEBHOOK_GRACE_SECONDS)
      throw invalidField('graceSeconds', `must be a whole number of seconds from 0 to ${MAX_WEBHOOK_GRACE_SECONDS}`);
    if (this.configured(name)) throw readOnly(name);
    const stored = await this.stored(name);
    if (!ifMatchHolds(ifMatch, (await this.get(name)).etag)) throw changedMeanwhile(name);
    const old = await this.secretsOf(stored);
    const secret = newWebhookSecret();
    const retiring = [
      ...old.retiring.filter((r) => r.expiresAt > now),
      ...(graceSeconds > 0 ? [{ secret: old.current, expiresAt: now + graceSeconds }] : []),
    ];
    const secrets = await this.seal({ current: secret, retiring });
    if (!(await this.store.webhooks.update(name, stored.version, { ...stored, secrets }))) throw changedMeanwhile(name);
    await this.reload();
    return { view: await this.get(name), secret };
  }

  /**
   * A page of a webhook's deliveries, newest first.
   * @throws AdminError `not_found`, `invalid` (field `cursor`).
   */
  async deliveries(
    name: string,
    page: { cursor?: string; limit: number; status?: DeliveryStatus },
  ): Promise<{ deliveries: DeliveryLogEntry[]; next?: string }> {
    await this.get(name);
    const before = page.cursor === undefined ? undefined : seqOfCursor(page.cursor);
    const { entries, last } = await this.store.webhookOutbox.log(name, {
      ...(before === undefined ? {} : { before }),
      limit: page.limit,
      ...(page.status ? { status: page.status } : {}),
    });
    const more = entries.length === page.limit && last !== undefined;
    return { deliveries: entries, ...(more ? { next: Buffer.from(String(last)).toString('base64url') } : {}) };
  }

  /**
   * Sends a delivered or failed delivery again (due now, retried for `retrySeconds` more).
   * @throws AdminError `not_found`, `conflict` when it is pending already.
   */
  async retry(name: string, id: string): Promise<DeliveryLogEntry> {
    await this.get(name);
    const outcome = await this.store.webhookOutbox.requeue(name, id);
    if (outcome === 'not_found') throw new AdminError('not_found', `no delivery "${id}" of webhook "${name}"`);
    if (outcome === 'pending') throw new AdminError('conflict', `delivery "${id}" is pending: it is being tried`);
    return (await this.store.webhookOutbox.entry(name, id)) as DeliveryLogEntry;
  }

  /**
   * Sends a `webhook.ping` event to the webhook now (and retries it as any delivery).
   * @returns the delivery after its first attempt (or pending, when another node took it).
   * @throws AdminError `not_found`, `conflict` for a disabled webhook.
   */
  async ping(name: string): Promise<DeliveryLogEntry> {
    const view = await this.get(name);
    if (!view.enabled) throw new AdminError('conflict', `webhook "${name}" is disabled: enable it first`, 'enabled');
    // This node may not know a webhook created on another a moment ago: reload before sending.
    if (!this.options.registry.get(name)) await this.reload();
    const id = await this.store.webhookOutbox.ping(name);
    await this.options.deliverNow?.([id]);
    return (await this.store.webhookOutbox.entry(name, id)) as DeliveryLogEntry;
  }

  /**
   * Disables a webhook whose receiver answered 410 Gone (the deliverer's call), on every node; its
   * pending deliveries fail with `reason`.
   */
  async disableGone(name: string, reason: string): Promise<void> {
    await this.setEnabled(name, false, reason);
    await this.reload();
  }

  /** Re-reads the stored webhooks and the disabled ones into the registry in force. */
  reload(): Promise<void> {
    const run = this.reloading.then(() => this.load());
    this.reloading = run.catch(() => {});
    return run;
  }

  private async load(): Promise<void> {
    const inForce: WebhookInForce[] = [];
    for (const w of await this.store.webhooks.list())
      try {
        inForce.push({ name: w.name, url: w.url, events: w.events, source: 'store', secrets: await this.secretsOf(w) });
      } catch (err) {
        this.options.log.error(
          { webhook: w.name, err: (err as Error).message },
          'stored webhook ignored: its secret cannot be opened',
        );
      }
    this.options.registry.setStored(inForce);
    this.options.registry.setDisabled(await this.store.webhooks.disabled());
  }

  private async setEnabled(name: string, enabled: boolean, reason: string): Promise<void> {
    await this.store.webhooks.setEnabled(name, enabled, reason);
    if (!enabled) await this.store.webhookOutbox.failPending(name, `webhook disabled: ${reason}`);
  }

  private seal(secrets: WebhookSecrets): Promise<string> {
    return sealJson(JSON.stringify(secrets), this.options.dataKey);
  }

  private async secretsOf(w: StoredWebhook): Promise<WebhookSecrets> {
    return JSON.parse(await openJson(w.secrets, this.options.dataKey, 'webhook secrets')) as WebhookSecrets;
  }

  private configured(name: string): WebhookInForce | undefined {
    const w = this.options.registry.get(name);
    return w?.source === 'config' ? w : undefined;
  }

  /** @throws AdminError `not_found`. */
  private async stored(name: string): Promise<StoredWebhook> {
    // A name no webhook can have (a NUL, which PostgreSQL refuses, among them) asks the store nothing.
    const named = name.length <= MAX_WEBHOOK_NAME && WEBHOOK_NAME.test(name);
    const stored = named ? await this.store.webhooks.get(name) : undefined;
    if (!stored) throw new AdminError('not_found', `no webhook "${name}"`);
    return stored;
  }
}

function configView(w: WebhookInForce, disabled: { disabledAt: number; reason: string } | undefined): WebhookView {
  const body = { name: w.name, url: w.url, events: [...w.events], source: 'config' as const };
  return {
    ...body,
    ...enabledOf(disabled),
    retiringSecretsExpireAt: [],
    etag: etagOf(JSON.stringify({ ...body, disabled: disabled?.disabledAt ?? null })),
  };
}

function storedView(
  w: StoredWebhook,
  secrets: WebhookSecrets,
  disabled: { disabledAt: number; reason: string } | undefined,
): WebhookView {
  const now = nowSeconds();
  return {
    name: w.name,
    url: w.url,
    events: w.events,
    source: 'store',
    ...enabledOf(disabled),
    retiringSecretsExpireAt: secrets.retiring.filter((r) => r.expiresAt > now).map((r) => r.expiresAt),
    // Created-at: an ETag of a deleted webhook never matches a later one of that name.
    etag: etagOf(`${w.name}.${w.createdAt}.${w.version}.${disabled?.disabledAt ?? 'on'}`),
  };
}

function enabledOf(
  disabled: { disabledAt: number; reason: string } | undefined,
): Pick<WebhookView, 'enabled' | 'disabled'> {
  return disabled
    ? { enabled: false, disabled: { at: disabled.disabledAt, reason: disabled.reason } }
    : { enabled: true };
}

/**
 * Refuses a URL whose host is an address no delivery may reach (private, link-local, cloud
 * metadata, ...): said at once rather than at every attempt. A host name is checked at each
 * delivery, where it is resolved.
 * @throws AdminError `invalid` (field `url`).
 */
function refuseSpecialUse(url: string): void {
  const host = new URL(url).hostname.replace(/^\[|\]$/g, '');
  if (isIP(host) !== 0 && !isFetchableAddress(host, true))
    throw invalidField(
      'url',
      'the host is a private, link-local or other special-use address, which Sigil never calls',
    );
}

/** The sequence number a cursor of `deliveries` names. @throws AdminError `invalid` (field `cursor`). */
function seqOfCursor(cursor: string): number {
  const text = Buffer.from(cursor, 'base64url').toString('utf8');
  if (!/^[1-9][0-9]{0,15}$/.test(text) || Buffer.from(text).toString('base64url') !== cursor)
    throw new AdminError('invalid', 'cursor: not the next of a page', 'cursor');
  return Number(text);
}

function exists(name: string): AdminError {
  return new AdminError('conflict', `webhook "${name}" exists already`, 'name');
}

function readOnly(name: string): AdminError {
  return new AdminError(
    'read_only',
    `webhook "${name}" is defined in the config file, which is read-only (but for "enabled")`,
  );
}

function changedMeanwhile(name: string): AdminError {
  return new AdminError('precondition_failed', `webhook "${name}" is not at the version If-Match names`);
}
