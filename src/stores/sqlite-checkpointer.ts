/**
 * WAL checkpoints of a SQLite store, run by a worker thread with a connection of its own instead
 * of inside the commits of the event loop. SQLite lets a checkpoint copy committed
 * pages back into the database file while writers go on appending to the WAL; run inline, by the
 * commit that crosses `wal_autocheckpoint`, the same copy stalls every request of the process for
 * its duration (tens of milliseconds for thousands of scattered index pages).
 *
 * The worker runs a `PASSIVE` checkpoint every `CHECKPOINT_INTERVAL_MS`: it never waits for
 * readers or writers, so several processes on one file (`--workers`) each run one harmlessly.
 * The event loop's own connection keeps checkpointing inline every `INLINE_CHECKPOINT_PAGES`
 * pages as well, and must: SQLite starts the WAL file over only when a writer finds every frame
 * copied back, which under sustained writes never holds after another connection's checkpoint
 * (the first version handed checkpoints over entirely, and 5 minutes of bench load grew the WAL
 * to 20 GB). With the worker ahead, that inline checkpoint finds little left to copy.
 */
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import type SQLite from 'better-sqlite3';

/** How often the worker checkpoints, in milliseconds. */
const CHECKPOINT_INTERVAL_MS = 200;

/**
 * Pages after which the event loop's connection checkpoints inline (the commit that crosses it): 4,000
 * (16 MB of 4 KB pages) instead of SQLite's 1,000, because grant keys are random and fewer, larger
 * checkpoints write each scattered index page back once for many commits.
 */
const INLINE_CHECKPOINT_PAGES = 4000;

// The worker's code, as CommonJS source (an eval worker): the same text runs from `dist/` and from
// the TypeScript sources under test, and it needs nothing but the driver, passed by absolute path.
const WORKER_SOURCE = `
const { workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
const db = new Database(workerData.path);
db.pragma('busy_timeout = 1000');
setInterval(() => db.pragma('wal_checkpoint(PASSIVE)'), workerData.intervalMs);
`;

/** A running checkpoint worker for one SQLite file. */
export class SqliteCheckpointer {
  private constructor(private readonly worker: Worker) {}

  /**
   * Starts the worker for the database at `path`, opened by `connection` (the event loop's), and
   * sets the connection's inline threshold. A worker that fails leaves a process warning.
   */
  static start(connection: SQLite.Database, path: string): SqliteCheckpointer {
    connection.pragma(`wal_autocheckpoint = ${INLINE_CHECKPOINT_PAGES}`);
    const driver = createRequire(import.meta.url).resolve('better-sqlite3');
    const worker = new Worker(WORKER_SOURCE, {
      eval: true,
      workerData: { driver, path, intervalMs: CHECKPOINT_INTERVAL_MS },
    });
    worker.unref();
    // Inline checkpoints go on regardless; a failed worker only costs the head start it gave them.
    worker.once('error', (err) => process.emitWarning(`SQLite checkpoint worker failed: ${err.message}`));
    return new SqliteCheckpointer(worker);
  }

  /** Stops the worker (before the store's own connection closes). */
  async stop(): Promise<void> {
    this.worker.removeAllListeners();
    await this.worker.terminate();
  }
}
