/**
 * The audit log: every audit event of the event bus is stored, in
 * batches written off the request path, and queried by the management API by time, name, client
 * or subject, newest first, a page at a time with an opaque cursor. Events older than the
 * retention period are removed by each node's housekeeping.
 */
import type { Logger } from 'pino';
import type { EventBus, SigilEvent } from '../events/events.js';
import type { AuditEventStore, StoredAuditEvent } from '../stores/audit-events.js';
import { auditIdAt } from '../stores/audit-events.js';
import { newId } from '../crypto/handles.js';
import { AdminError } from './errors.js';

/** The most events held for the next batch; beyond it the oldest are dropped and counted in the log. */
export const MAX_PENDING_EVENTS = 10_000;
/** The count at the end of an event id takes six base-36 digits. */
const ID_COUNT_RANGE = 36 ** 6;
/** The largest page of a query. */
export const MAX_PAGE_SIZE = 200;
/** Events removed per housekeeping round. */
const PRUNE_BATCH = 10_000;

/** A query of the audit log. */
export interface AuditQuery {
  /** Milliseconds since the epoch; inclusive. */
  from?: number;
  /** Milliseconds since the epoch; exclusive. */
  to?: number;
  name?: string;
  clientId?: string;
  subjectId?: string;
  /** The `next` of the previous page. */
  cursor?: string;
  /** 1 to MAX_PAGE_SIZE. */
  limit: number;
}

/** Who made a management change: the client of the token, and the user it acts for, if any. */
export interface ChangeActor {
  clientId: string;
  sub?: string;
}

/**
 * Emits the `admin_changed` audit event of one management change, the one
 * shape /admin/v1 and the console share.
 * @param endpoint where the change was made (`/admin/v1`, `/admin`)
 * @param action e.g. `client.create`, `key.rotate`, `user.claims`
 * @param changes the changed fields and their new values; never a secret (name it instead)
 */
export function emitAdminChange(
  events: EventBus,
  endpoint: string,
  actor: ChangeActor,
  action: string,
  target: { type: string; id: string },
  changes: Record<string, unknown> = {},
): void {
  events.emit({
    name: 'admin_changed',
    endpoint,
    clientId: actor.clientId,
    ...(actor.sub ? { subjectId: actor.sub } : {}),
    action,
    target,
    changes,
  });
}

/** Stores the bus's events and answers queries over them. */
export class AuditLog {
  /** The rows of the events recorded since the last flush, oldest first. */
  private pending: StoredAuditEvent[] = [];
  private dropped = 0;
  /**
   * An event's id is its time, this log's 16 random characters, then a count of the events it has
   * recorded: unique across nodes and restarts, in order within one log, and without a random
   * draw per event.
   */
  private readonly idPrefix = newId().slice(0, 16);
  private recorded = 0;
  /** The last event's time string and its value: events of one millisecond share it. */
  private lastIso = '';
  private lastTime = 0;

  /** @param retentionSeconds how long events are kept */
  constructor(
    private readonly store: AuditEventStore,
    private readonly retentionSeconds: number,
    private readonly log: Logger,
  ) {}

  /**
   * The bus subscriber: queues the event's row for the next `flush`. The row is made now: only its
   * flat strings wait for the flush, not the event object with its arrays, and an event that cannot
   * be serialised fails here, in the bus's guard, alone, instead of failing every later flush.
   */
  readonly record = (event: SigilEvent): void => {
    if (this.pending.length >= MAX_PENDING_EVENTS) {
      this.pending.shift();
      this.dropped += 1;
    }
    if (event.time !== this.lastIso) {
      this.lastIso = event.time;
      this.lastTime = Date.parse(event.time);
    }
    this.recorded = (this.recorded + 1) % ID_COUNT_RANGE;
    this.pending.push({
      id: `${auditIdAt(this.lastTime)}${this.idPrefix}${this.recorded.toString(36).padStart(6, '0')}`,
      time: this.lastTime,
      name: event.name,
      clientId: event.clientId ?? null,
      subjectId: event.subjectId ?? null,
      event: JSON.stringify(event),
    });
  };

  /**
   * Writes the queued events, all or none. Storing is idempotent (a row whose id is stored is
   * skipped), so a batch whose commit succeeded but was reported as failed is not stored twice.
   * @throws the store's error; the events are then queued again for the next flush.
   */
  async flush(): Promise<void> {
    if (this.dropped > 0) {
      this.log.warn({ dropped: this.dropped }, 'audit events dropped: the store could not keep up');
      this.dropped = 0;
    }
    const batch = this.pending;
    if (batch.length === 0) return;
    this.pending = [];
    try {
      await this.store.append(batch);
    } catch (err) {
      // Kept for the next flush, oldest first, within the same bound as the queue (the oldest go
      // first when it overflows, counted as dropped).
      const kept = [...batch, ...this.pending];
      this.dropped += Math.max(0, kept.length - MAX_PENDING_EVENTS);
      this.pending = kept.slice(-MAX_PENDING_EVENTS);
      throw err;
    }
  }

  /** Removes events older than the retention period (a batch per call). */
  async prune(now = Date.now()): Promise<number> {
    return this.store.deleteOlderThan(now - this.retentionSeconds * 1000, PRUNE_BATCH);
  }

  /**
   * One page of events, newest first, and the cursor of the next page (undefined on the last).
   * @throws AdminError `invalid` (field `cursor`) for a cursor this log did not give.
   */
  async query(q: AuditQuery): Promise<{ events: SigilEvent[]; next?: string }> {
    let before: string | undefined;
    if (q.cursor !== undefined) {
      before = Buffer.from(q.cursor, 'base64url').toString('utf8');
      if (!/^[0-9a-f]{12}[\w-]{22}$/.test(before))
        throw new AdminError('invalid', 'cursor: not a cursor of this log', 'cursor', [
          { path: 'cursor', message: 'not a cursor of this log' },
        ]);
    }
    const rows = await this.store.query(
      { from: q.from, to: q.to, name: q.name, clientId: q.clientId, subjectId: q.subjectId, before },
      q.limit + 1,
    );
    const page = rows.slice(0, q.limit);
    const last = page.at(-1);
    return {
      events: page.map((r) => JSON.parse(r.event) as SigilEvent),
      ...(rows.length > q.limit && last ? { next: Buffer.from(last.id).toString('base64url') } : {}),
    };
  }
}
