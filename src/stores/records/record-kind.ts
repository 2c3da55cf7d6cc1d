/**
 * The typed door to the grant table: one `RecordKind<T>` per record kind (its `GrantType` and the
 * shape of its `data`), the one place that builds grant rows (`newGrantRecord`) and narrows their
 * `data` from JSON to `T`. Each repository of this folder holds one or two of these and owns its
 * key derivation; nothing outside `records/` reads or writes `GrantStore`.
 *
 * Narrowing is by the row's `type`: a row is handed out as a `T` only when it is of this kind, so
 * a handle of one kind presented as another (a session handle as an authorization code, say) is
 * never read as the wrong shape. Rows are written only through the kind's own repository, so the
 * type tag vouches for the shape.
 *
 * Times are Unix seconds.
 */
import { newGrantRecord, type GrantRecord, type GrantStore, type GrantType, type NewGrant } from '../grant-store.js';

/** The fields of a new record of one kind (its `type` is the kind's). */
export type NewRecord<T> = Omit<NewGrant<T>, 'type'>;

/** The records of one kind in the grant table, with their data typed as `T`. */
export class RecordKind<T extends object> {
  constructor(
    private readonly grants: GrantStore,
    readonly type: GrantType,
  ) {}

  /** Stores a new live record; rejects, storing nothing, when a record is stored under its key. */
  put(record: NewRecord<T>): Promise<void> {
    return this.grants.put(this.row(record));
  }

  /**
   * Stores a new live record unless one is stored under its key, atomically: of concurrent callers
   * with one key exactly one gets true.
   */
  putOnce(record: NewRecord<T>): Promise<boolean> {
    return this.grants.putOnce(this.row(record));
  }

  /** Stores a new live record, replacing whatever is stored under its key. */
  save(record: NewRecord<T>): Promise<void> {
    return this.grants.save(this.row(record));
  }

  /** Stores `record` as it is (another record's copy under a new key, say); rejects when its key is taken. */
  putCopy(record: GrantRecord<T>): Promise<void> {
    return this.grants.put(record as unknown as GrantRecord);
  }

  /**
   * The record under `key` when it is of this kind, whatever its state (consumed, revoked, expired); else
   * undefined.
   */
  async find(key: string): Promise<GrantRecord<T> | undefined> {
    return this.narrow(await this.grants.get(key));
  }

  /**
   * As `find`, possibly answered from the store's short-lived memory of recent reads
   * (`GrantStore.getRecent`: access-token lookups only). The record returned must not be modified.
   */
  async findRecent(key: string): Promise<GrantRecord<T> | undefined> {
    return this.narrow(await this.grants.getRecent(key));
  }

  /** The record under `key` when it is of this kind and live at `now`: neither consumed, revoked nor expired. */
  async findLive(key: string, now: number): Promise<GrantRecord<T> | undefined> {
    const row = await this.find(key);
    return row && row.consumedAt === null && row.revokedAt === null && row.expiresAt > now ? row : undefined;
  }

  /**
   * Marks the record under `key` consumed, atomically: of concurrent callers exactly one gets true,
   * and only while the record is neither consumed, revoked nor expired at `now` (single use).
   */
  consume(key: string, now: number): Promise<boolean> {
    return this.grants.consume(key, now);
  }

  /** Sets new data and expiry on the live record under `key`; false when there is none. */
  update(key: string, data: T, expiresAt: number): Promise<boolean> {
    return this.grants.update(key, dataOf(data), expiresAt);
  }

  /**
   * Compare-and-set of the data: replaces it with `data` only while the stored data is still
   * `expected` (as `find` read it) and the record is neither consumed nor revoked. False when
   * another writer changed it first. With `expiresAt` (Unix seconds) it also sets the expiry.
   */
  replaceData(key: string, expected: T, data: T, expiresAt?: number): Promise<boolean> {
    return this.grants.replaceData(key, dataOf(expected), dataOf(data), expiresAt);
  }

  /**
   * The live records of this kind of one user, newest first, at most `limit` (along the
   * `grants_subject` index, `GrantStore.listLive`).
   */
  async liveOf(subjectId: string, now: number, limit: number): Promise<GrantRecord<T>[]> {
    return (await this.grants.listLive(subjectId, this.type, now, limit)).flatMap((row) => this.narrow(row) ?? []);
  }

  /** Revokes the record under `record.key`; stores `record` revoked when no row is stored under its key yet. */
  revoke(record: NewRecord<T>, now: number): Promise<void> {
    return this.grants.revoke(this.row(record), now);
  }

  private row(record: NewRecord<T>): GrantRecord {
    return newGrantRecord({ ...record, type: this.type });
  }

  private narrow(row: GrantRecord | undefined): GrantRecord<T> | undefined {
    return row?.type === this.type ? (row as unknown as GrantRecord<T>) : undefined;
  }
}

/** Record data as the store takes it: a JSON object. */
function dataOf<T extends object>(data: T): Record<string, unknown> {
  return data as unknown as Record<string, unknown>;
}
