/**
 * The webhook outbox (migration `0021_webhooks`, DESIGN §6b "Webhooks and hooks"): one row of
 * `webhook_deliveries` per webhook and event, written by `append` in the transaction of the change
 * the event tells of (or, for events that follow no transaction of the store, right after their
 * outcome), so that no committed change goes untold and no rolled-back one is told.
 *
 * - Which webhooks get an event is decided at the write, by `route` (the webhooks in force on the
 *   writing node, `WebhookRegistry`): a webhook created on another node is known here within the
 *   change poll's second.
 * - Every node's deliverer (`webhooks/delivery.ts`) claims due deliveries with a lease, a
 *   conditional update of each row (as the back-channel logout outbox does), so that on several
 *   nodes, or several `--workers` on one SQLite file, each is sent by one of them at a time; a
 *   node that dies mid-send holds it until the lease ends, then another (or the same after its
 *   restart) sends it again: at least once.
 * - Order per subject: a delivery is due only when no delivery of the same webhook and
 *   `order_key` with a smaller `seq` is still pending (retried, or leased). `seq` is taken at the
 *   insert, which comes last in its transaction: the changes of one user or client lock its row
 *   first, so the later of two concurrent ones takes its `seq` after the earlier committed. Two
 *   events of one subject that lock nothing in common (a sign-in's, written after its outcome, and
 *   a change of the user) may on PostgreSQL commit in the other order than their `seq` within
 *   milliseconds, and then be delivered in their commit order.
 * - Rows that ended (delivered, failed) stay for the delivery log until `prune`.
 */
import { type Kysely, type SqlBool, sql } from 'kysely';
import { newId, nowSeconds } from '../crypto/handles.js';
import { PING_EVENT, type WebhookEvent } from '../events/webhook-events.js';
import type { Database } from './tables.js';

/** A delivery's state: being tried, ended by a 2xx, or given up (or its webhook disabled). */
export type DeliveryStatus = 'pending' | 'delivered' | 'failed';

/** A delivery claimed for an attempt. */
export interface ClaimedDelivery {
  seq: number;
  /** The message id (`webhook-id`). */
  id: string;
  webhook: string;
  type: string;
  /** The body as sent, `{ "type", "timestamp", "data" }`. */
  payload: string;
  /** Attempts made before this one. */
  attempts: number;
  /** Unix seconds: no attempt after this. */
  giveUpAt: number;
}

/** One delivery as the delivery log shows it (times in Unix seconds). */
export interface DeliveryLogEntry {
  id: string;
  type: string;
  status: DeliveryStatus;
  attempts: number;
  lastStatusCode: number | null;
  lastAttemptAt: number | null;
  createdAt: number;
  /** For a pending delivery: when it is tried next. */
  nextAttemptAt?: number;
  /** Why the last attempt failed, when it did (`HTTP 503`, `no complete answer within 10 s`). */
  lastError?: string;
}

/** The webhooks that receive an event of `type`: the names of the enabled webhooks subscribed to it. */
export type WebhookRouting = (type: string) => readonly string[];

/** How `retry` and `requeue` treat a delivery that is not (or no longer) pending. */
export type RequeueOutcome = 'requeued' | 'pending' | 'not_found';

/** The longest `last_error`, characters. */
const MAX_ERROR = 500;
/**
 * The longest body, characters: past it an event's `data` keeps its plain members (ids, names)
 * and says `"truncated": true` (a user's claims can be long; a receiver reads them over the API).
 */
export const MAX_PAYLOAD = 256 * 1024;

/** The outbox over the SQL store's database (both dialects). */
export class SqlWebhookOutbox {
  private route: WebhookRouting = () => [];
  private retrySeconds = 86400;

  constructor(private readonly db: Kysely<Database>) {}

  /**
   * Sets which webhooks get each event (the registry of the node) and how long a delivery is
   * tried (config `webhookDelivery.retrySeconds`). Until then, `append` writes nothing: the
   * command line, which runs no deliverer, leaves the events to no one.
   */
  configure(route: WebhookRouting, retrySeconds: number): void {
    this.route = route;
    this.retrySeconds = retrySeconds;
  }

  /**
   * Writes the deliveries of `events` with `db`: the transaction of the change they tell of, or
   * the database itself for an event written after its outcome (`record`). One row per event and
   * webhook subscribed; nothing when none is.
   */
  async append(db: Kysely<Database>, events: readonly WebhookEvent[] | undefined, now = nowSeconds()): Promise<void> {
    if (!events || events.length === 0) return;
    const timestamp = new Date(now * 1000).toISOString();
    const rows = events.flatMap((e) => {
      const payload = bounded(JSON.stringify({ type: e.type, timestamp, data: e.data }), e, timestamp);
      return this.route(e.type).map((webhook) => this.row(webhook, e.type, e.orderKey, payload, now));
    });
    for (let i = 0; i < rows.length; i += 200)
      await db
        .insertInto('webhook_deliveries')
        .values(rows.slice(i, i + 200))
        .execute();
  }

  /** `append` outside a transaction: for the events that follow no transaction of the store (a sign-in's outcome). */
  record(events: readonly WebhookEvent[]): Promise<void> {
    return this.append(this.db, events);
  }

  /**
   * Queues a test event (`webhook.ping`, data `{ "webhook": name }`) for one webhook, whatever it
   * subscribes to, in an order of its own. @returns its id.
   */
  async ping(webhook: string, now = nowSeconds()): Promise<string> {
    const payload = JSON.stringify({
      type: PING_EVENT,
      timestamp: new Date(now * 1000).toISOString(),
      data: { webhook },
    });
    const row = this.row(webhook, PING_EVENT, `ping:${newId()}`, payload, now);
    await this.db.insertInto('webhook_deliveries').values(row).execute();
    return row.id;
  }

  private row(webhook: string, type: string, orderKey: string, payload: string, now: number) {
    return {
      id: `msg_${newId()}`,
      webhook,
      type,
      order_key: orderKey,
      payload,
      status: 'pending',
      attempts: 0,
      created_at: now,
      next_attempt_at: now,
      give_up_at: now + this.retrySeconds,
      lease_holder: null,
      lease_until: 0,
      last_status_code: null,
      last_attempt_at: null,
      last_error: null,
    };
  }

  /**
   * Claims up to `limit` due deliveries of `webhooks` (those this node may send: known and
   * enabled), each the earliest pending one of its webhook and order key, until `leaseUntil`.
   * @param ids only these (a ping sent at once)
   */
  async claim(
    holder: string,
    now: number,
    leaseUntil: number,
    limit: number,
    webhooks: readonly string[],
    ids?: readonly string[],
  ): Promise<ClaimedDelivery[]> {
    if (webhooks.length === 0 || ids?.length === 0) return [];
    const due = await this.due(now, limit, webhooks, ids);
    if (due.length === 0) return [];
    // One statement for the whole batch: a round trip per delivery made PostgreSQL drain a backlog
    // at the pace of its round trips. The conditions are evaluated again on each row as it is
    // updated, so of two nodes that read the same due rows each row goes to one of them.
    const taken = await this.db
      .updateTable('webhook_deliveries')
      .set({ lease_holder: holder, lease_until: leaseUntil })
      .where(
        'seq',
        'in',
        due.map((row) => row.seq),
      )
      .where('status', '=', 'pending')
      .where('lease_until', '<=', now)
      .returning(['seq', 'id', 'webhook', 'type', 'payload', 'attempts', 'give_up_at'])
      .execute();
    return taken
      .map((row) => ({
        seq: Number(row.seq),
        id: row.id,
        webhook: row.webhook,
        type: row.type,
        payload: row.payload,
        attempts: Number(row.attempts),
        giveUpAt: Number(row.give_up_at),
      }))
      .sort((a, b) => a.seq - b.seq);
  }

  /** Up to `limit` due, unleased deliveries of `webhooks` that no earlier pending one of their subject holds back. */
  private due(now: number, limit: number, webhooks: readonly string[], ids?: readonly string[]) {
    let due = this.db
      .selectFrom('webhook_deliveries as d')
      .select('d.seq')
      // A literal, not a parameter: the partial index `webhook_deliveries_due` then applies.
      .where(sql<SqlBool>`d.status = 'pending'`)
      .where('d.next_attempt_at', '<=', now)
      .where('d.lease_until', '<=', now)
      .where('d.webhook', 'in', webhooks)
      // The earliest pending delivery of its webhook and order key. A correlated scalar subquery,
      // not NOT EXISTS: PostgreSQL evaluates it per row with both keys as index conditions, whatever
      // its statistics say; with the statistics of a young table (taken while it was empty) it
      // planned the anti-join with the webhook alone as index condition, scanning every pending
      // row per candidate (a backlog drained at about 80 events a second).
      .where('d.seq', '=', ({ selectFrom }) =>
        selectFrom('webhook_deliveries as e')
          .select(({ fn }) => fn.min('e.seq').as('first'))
          .whereRef('e.webhook', '=', 'd.webhook')
          .whereRef('e.order_key', '=', 'd.order_key')
          .where(sql<SqlBool>`e.status = 'pending'`),
      );
    if (ids) due = due.where('d.id', 'in', ids);
    return due.orderBy('d.seq').limit(limit).execute();
  }

  /**
   * Records the outcome of an attempt of a delivery `holder` claimed: `delivered`, `failed`
   * (given up), or `pending` again at `nextAttemptAt`.
   */
  async settle(
    seq: number,
    holder: string,
    outcome: { status: DeliveryStatus; statusCode: number | null; error?: string; nextAttemptAt?: number },
    now = nowSeconds(),
  ): Promise<void> {
    await this.db
      .updateTable('webhook_deliveries')
      .set((eb) => ({
        status: outcome.status,
        attempts: eb('attempts', '+', 1),
        last_status_code: outcome.statusCode,
        last_attempt_at: now,
        last_error: outcome.error === undefined ? null : outcome.error.slice(0, MAX_ERROR),
        lease_holder: null,
        lease_until: 0,
        ...(outcome.nextAttemptAt === undefined ? {} : { next_attempt_at: outcome.nextAttemptAt }),
      }))
      .where('seq', '=', seq)
      .where('lease_holder', '=', holder)
      .execute();
  }

  /** Gives up every pending delivery of a webhook just disabled (`reason` as their last error). @returns how many. */
  async failPending(webhook: string, reason: string): Promise<number> {
    const result = await this.db
      .updateTable('webhook_deliveries')
      .set({ status: 'failed', last_error: reason.slice(0, MAX_ERROR) })
      .where('webhook', '=', webhook)
      .where('status', '=', 'pending')
      .executeTakeFirst();
    return Number(result.numUpdatedRows);
  }

  /**
   * Makes a delivered or failed delivery pending again, due now, tried for `retrySeconds` more
   * (an admin's retry); it keeps its place in its subject's order.
   */
  async requeue(webhook: string, id: string, now = nowSeconds()): Promise<RequeueOutcome> {
    const result = await this.db
      .updateTable('webhook_deliveries')
      .set({ status: 'pending', next_attempt_at: now, give_up_at: now + this.retrySeconds, lease_until: 0 })
      .where('webhook', '=', webhook)
      .where('id', '=', id)
      .where('status', '<>', 'pending')
      .executeTakeFirst();
    if (result.numUpdatedRows === 1n) return 'requeued';
    return (await this.entry(webhook, id)) ? 'pending' : 'not_found';
  }

  /** One delivery of a webhook, or undefined. */
  async entry(webhook: string, id: string): Promise<DeliveryLogEntry | undefined> {
    const row = await this.db
      .selectFrom('webhook_deliveries')
      .selectAll()
      .where('webhook', '=', webhook)
      .where('id', '=', id)
      .executeTakeFirst();
    return row === undefined ? undefined : logEntry(row);
  }

  /**
   * A webhook's deliveries, newest first: up to `limit` before the delivery of sequence `before`
   * (the previous page's last), of one `status` when given.
   * @returns the entries and the sequence number of the last (the next page's `before`).
   */
  async log(
    webhook: string,
    page: { before?: number; limit: number; status?: DeliveryStatus },
  ): Promise<{ entries: DeliveryLogEntry[]; last?: number }> {
    let query = this.db.selectFrom('webhook_deliveries').selectAll().where('webhook', '=', webhook);
    if (page.before !== undefined) query = query.where('seq', '<', page.before);
    if (page.status !== undefined) query = query.where('status', '=', page.status);
    const rows = await query.orderBy('seq', 'desc').limit(page.limit).execute();
    const last = rows.at(-1);
    return { entries: rows.map(logEntry), ...(last ? { last: Number(last.seq) } : {}) };
  }

  /** Per webhook: its pending deliveries and the creation time of the oldest (Unix seconds). */
  async pending(): Promise<{ webhook: string; count: number; oldestCreatedAt: number }[]> {
    const rows = await this.db
      .selectFrom('webhook_deliveries')
      .select((eb) => ['webhook', eb.fn.countAll<number | string>().as('n'), eb.fn.min('created_at').as('oldest')])
      .where(sql<SqlBool>`status = 'pending'`)
      .groupBy('webhook')
      .execute();
    return rows.map((r) => ({ webhook: r.webhook, count: Number(r.n), oldestCreatedAt: Number(r.oldest) }));
  }

  /**
   * Gives up pending deliveries past their give-up time that no node claims (their webhook is no
   * longer configured anywhere), and removes ended deliveries created before `before` (the audit
   * retention). @returns how many rows changed.
   */
  async prune(before: number, now = nowSeconds()): Promise<number> {
    const expired = await this.db
      .updateTable('webhook_deliveries')
      .set({ status: 'failed', last_error: 'given up: no node delivers to this webhook' })
      .where(sql<SqlBool>`status = 'pending'`)
      .where('give_up_at', '<', now)
      .where('lease_until', '<=', now)
      .executeTakeFirst();
    const removed = await this.db
      .deleteFrom('webhook_deliveries')
      .where('created_at', '<', before)
      .where('status', '<>', 'pending')
      .executeTakeFirst();
    return Number(expired.numUpdatedRows) + Number(removed.numDeletedRows);
  }
}

/** `payload`, or when longer than MAX_PAYLOAD the event's plain `data` members marked truncated. */
function bounded(payload: string, event: WebhookEvent, timestamp: string): string {
  if (payload.length <= MAX_PAYLOAD) return payload;
  const plain = Object.entries(event.data).filter(([, v]) => v === null || typeof v !== 'object');
  const data = { ...Object.fromEntries(plain.filter(([, v]) => String(v).length <= 1000)), truncated: true };
  return JSON.stringify({ type: event.type, timestamp, data });
}

function logEntry(row: {
  id: string;
  type: string;
  status: string;
  attempts: number;
  last_status_code: number | null;
  last_attempt_at: number | null;
  created_at: number;
  next_attempt_at: number;
  last_error: string | null;
}): DeliveryLogEntry {
  const status = row.status as DeliveryStatus;
  return {
    id: row.id,
    type: row.type,
    status,
    attempts: Number(row.attempts),
    lastStatusCode: row.last_status_code === null ? null : Number(row.last_status_code),
    lastAttemptAt: row.last_attempt_at === null ? null : Number(row.last_attempt_at),
    createdAt: Number(row.created_at),
    ...(status === 'pending' ? { nextAttemptAt: Number(row.next_attempt_at) } : {}),
    ...(row.last_error === null ? {} : { lastError: row.last_error }),
  };
}
