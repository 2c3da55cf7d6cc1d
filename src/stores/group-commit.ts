/**
 * Group commit for durable writes: rows handed to `add` while a commit is in flight, or
 * in the same turn of the event loop, are committed together in the next transaction. Each caller's
 * promise settles only after the transaction holding its own row has committed, so a response sent
 * after `await add(row)` never names a row that a crash could lose.
 */

/** Most rows in one transaction (SQLite's bound-parameter limit allows ~2,900 rows of 11 columns). */
const MAX_BATCH = 256;

interface Waiter<T, R> {
  item: T;
  resolve: (result: R) => void;
  reject: (err: unknown) => void;
}

/**
 * Queues items and commits them in batches with `commit(items)`, one transaction per call.
 * When a batch fails as a whole (one bad row, e.g. a duplicate key), each of its items is retried
 * on its own, so every caller gets the outcome of its own row and a failed row changes nothing.
 * `R` is what a caller learns of its own row once committed (e.g. whether it was inserted).
 */
export class GroupCommit<T, R = void> {
  private queue: Waiter<T, R>[] = [];
  private running = false;

  /**
   * `commit` stores all of `items` in one transaction, or none of them and throws; it returns one
   * result per item, in the order of `items`. `timed`, if given, is told how long each successful
   * transaction took, in seconds (metrics: `sigil_store_commit_duration_seconds`).
   */
  constructor(
    private readonly commit: (items: T[]) => Promise<R[]>,
    private readonly timed?: (seconds: number) => void,
  ) {}

  /** Resolves with its row's result once `item` is committed; rejects with the commit's error when its row failed. */
  add(item: T): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      this.queue.push({ item, resolve, reject });
      if (!this.running) {
        this.running = true;
        // One turn of the event loop: requests parsed in the same I/O phase join this batch.
        setImmediate(() => void this.drain());
      }
    });
  }

  private async drain(): Promise<void> {
    try {
      while (this.queue.length > 0) {
        const batch = this.queue.length <= MAX_BATCH ? this.queue : this.queue.slice(0, MAX_BATCH);
        this.queue = this.queue.length <= MAX_BATCH ? [] : this.queue.slice(MAX_BATCH);
        await this.commitBatch(batch);
      }
    } finally {
      this.running = false;
    }
  }

  private async commitBatch(batch: Waiter<T, R>[]): Promise<void> {
    let results: R[];
    const start = performance.now();
    try {
      results = await this.commit(batch.map((w) => w.item));
      this.timed?.((performance.now() - start) / 1000);
    } catch (err) {
      if (batch.length === 1) {
        batch[0]?.reject(err);
        return;
      }
      for (const waiter of batch) await this.commitBatch([waiter]);
      return;
    }
    for (const [i, waiter] of batch.entries()) waiter.resolve(results[i] as R);
  }
}
