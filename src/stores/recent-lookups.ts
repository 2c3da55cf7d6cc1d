/**
 * What `GrantStore.getRecent` answers from memory: access-token rows (`reference_token`,
 * `access_token`) this process read less than a bound ago. Changes made through this process drop
 * what they may reach at once; changes made by others are seen once the bound has passed.
 */
import type { GrantRecord } from './grant-store.js';

/** How much `GrantStore.getRecent` may answer from memory. */
export interface LookupCacheOptions {
  /** Longest time a row read is reused, in milliseconds; 0 reads the store every time. */
  maxAgeMilliseconds: number;
  /** Most rows kept (the oldest read is dropped first). */
  maxEntries: number;
}

/** The access-token rows recently read, bounded in age and number (`LookupCacheOptions`). */
export class RecentLookups {
  /** Access-token rows recently read, with the `performance.now()` of the read's start. */
  private readonly recent = new Map<string, { row: GrantRecord; at: number }>();
  /** Counts the changes made through this store, so that a read overtaken by one is not kept. */
  private generation = 0;

  constructor(private readonly options: LookupCacheOptions) {}

  /** The row under `key`: remembered when read recently enough, else by `read` (and remembered). */
  async lookup(key: string, read: (key: string) => Promise<GrantRecord | undefined>): Promise<GrantRecord | undefined> {
    const { maxAgeMilliseconds, maxEntries } = this.options;
    if (maxAgeMilliseconds <= 0) return read(key);
    // The age counts from before the read: a row is never reused later than the bound after the
    // moment the store was asked, whatever the read's own duration.
    const started = performance.now();
    const hit = this.recent.get(key);
    if (hit && started - hit.at < maxAgeMilliseconds) return hit.row;
    const generation = this.generation;
    const row = await read(key);
    this.recent.delete(key);
    // A change made here while the read was under way may not be in `row`: use it, keep it not.
    if (row && generation === this.generation && (row.type === 'reference_token' || row.type === 'access_token')) {
      if (this.recent.size >= maxEntries) {
        const oldest = this.recent.keys().next();
        if (!oldest.done) this.recent.delete(oldest.value);
      }
      this.recent.set(key, { row, at: started });
    }
    return row;
  }

  /** Drops everything remembered. */
  forgetAll(): void {
    this.generation++;
    this.recent.clear();
  }

  /** Drops what is remembered of `key`, or of every row of `familyId`. */
  forget(key: string | undefined, familyId?: string): void {
    this.generation++;
    if (this.recent.size === 0) return;
    if (key !== undefined) this.recent.delete(key);
    if (familyId !== undefined)
      for (const [k, { row }] of this.recent) if (row.familyId === familyId) this.recent.delete(k);
  }
}
