/**
 * Stored audit events (the management API queries them), one row per event in
 * `audit_events` (migration `0012_admin`). Part of the one SQL store; reached as
 * `store.audit`. Rows are written in batches off the request path and removed after the
 * retention period (`admin.auditRetentionSeconds`).
 *
 * An event's id starts with its time in milliseconds as 12 hex digits, then 22 characters that make
 * it unique (`AuditLog` writes a random part per log and a count): ids sort by time, so one index
 * per filter (the primary key, and name, client or subject with the id; the client and subject
 * indexes hold only rows that have one, 0026_audit_partial_indexes) serves the time range, the
 * order and the cursor.
 */
import { CompiledQuery, type Kysely } from 'kysely';
import type { Database } from './tables.js';

/**
 * The row counts of the insert statements a batch is cut into, largest first. A batch of any size
 * then uses only these few statements, each prepared once (SQLite's statement cache, PostgreSQL's
 * unnamed statement of the same text), and none comes near SQLite's 32,766 or PostgreSQL's 65,535
 * parameters: one statement for a whole second of events failed past 5,461 events.
 */
const CHUNK_ROWS = [200, 20, 1] as const;
/** The columns of a row, in the order of the statements' values. */
const COLUMNS = ['id', 'time', 'name', 'client_id', 'subject_id', 'event'] as const;

/** One stored event. */
export interface StoredAuditEvent {
  /** Time-ordered id (see above); the cursor of a page. */
  id: string;
  /** Milliseconds since the epoch. */
  time: number;
  name: string;
  clientId: string | null;
  subjectId: string | null;
  /** The whole event as logged, JSON. */
  event: string;
}

/** What a query selects: all given conditions hold. */
export interface AuditEventFilter {
  /** From this time (milliseconds since the epoch), inclusive. */
  from?: number;
  /** Until this time (milliseconds since the epoch), exclusive. */
  to?: number;
  name?: string;
  clientId?: string;
  subjectId?: string;
  /** Only events older than the one with this id (the previous page's last). */
  before?: string;
}

/** The stored audit events. */
export interface AuditEventStore {
  /** Stores a batch of events, all or none (one transaction); an event whose id is stored is skipped. */
  append(events: readonly StoredAuditEvent[]): Promise<void>;
  /** Up to `limit` events matching `filter`, newest first. */
  query(filter: AuditEventFilter, limit: number): Promise<StoredAuditEvent[]>;
  /** Removes up to `limit` events older than `before` (milliseconds since the epoch); returns how many. */
  deleteOlderThan(before: number, limit: number): Promise<number>;
}

/** The id bound of a time: every id of an event at `ms` or later is at least this. */
export function auditIdAt(ms: number): string {
  return Math.max(0, Math.floor(ms)).toString(16).padStart(12, '0');
}

/** `AuditEventStore` over the SQL store's database. */
export class SqlAuditEvents implements AuditEventStore {
  /** The insert statement of each chunk size, compiled once by Kysely (the dialect's placeholders). */
  private readonly inserts = new Map<number, string>();

  constructor(private readonly db: Kysely<Database>) {}

  async append(events: readonly StoredAuditEvent[]): Promise<void> {
    if (events.length === 0) return;
    // Parameters are passed to a statement compiled once rather than built into a query per batch:
    // with the batch built into one query of thousands of value nodes (and a random id drawn per
    // event), storing an event took 8.5 µs of CPU in a loop of 5,000, against about 4 µs now.
    const write = async (db: Kysely<Database>) => {
      let at = 0;
      while (at < events.length) {
        const rows = CHUNK_ROWS.find((n) => n <= events.length - at) ?? 1;
        const parameters: unknown[] = [];
        for (const e of events.slice(at, at + rows))
          parameters.push(e.id, e.time, e.name, e.clientId, e.subjectId, e.event);
        await db.executeQuery(CompiledQuery.raw(this.insertOf(rows), parameters));
        at += rows;
      }
    };
    await (events.length > 1 ? this.db.transaction().execute(write) : write(this.db));
  }

  /** The SQL text that inserts `rows` rows. */
  private insertOf(rows: number): string {
    let text = this.inserts.get(rows);
    if (text === undefined) {
      const row = Object.fromEntries(COLUMNS.map((c) => [c, ''])) as Record<(typeof COLUMNS)[number], string>;
      text = this.db
        .insertInto('audit_events')
        .values(Array.from({ length: rows }, () => ({ ...row, time: 0 })))
        .onConflict((oc) => oc.column('id').doNothing())
        .compile().sql;
      this.inserts.set(rows, text);
    }
    return text;
  }

  async query(filter: AuditEventFilter, limit: number): Promise<StoredAuditEvent[]> {
    let q = this.db.selectFrom('audit_events').selectAll();
    if (filter.from !== undefined) q = q.where('id', '>=', auditIdAt(filter.from));
    if (filter.to !== undefined) q = q.where('id', '<', auditIdAt(filter.to));
    if (filter.before !== undefined) q = q.where('id', '<', filter.before);
    if (filter.name !== undefined) q = q.where('name', '=', filter.name);
    if (filter.clientId !== undefined) q = q.where('client_id', '=', filter.clientId);
    if (filter.subjectId !== undefined) q = q.where('subject_id', '=', filter.subjectId);
    const rows = await q.orderBy('id', 'desc').limit(limit).execute();
    return rows.map((r) => ({
      id: r.id,
      time: Number(r.time),
      name: r.name,
      clientId: r.client_id,
      subjectId: r.subject_id,
      event: r.event,
    }));
  }

  async deleteOlderThan(before: number, limit: number): Promise<number> {
    const batch = this.db.selectFrom('audit_events').select('id').where('id', '<', auditIdAt(before)).limit(limit);
    const result = await this.db.deleteFrom('audit_events').where('id', 'in', batch).executeTakeFirst();
    return Number(result.numDeletedRows);
  }
}
