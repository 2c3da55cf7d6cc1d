/**
 * WAL checkpoints of a SQLite store, run by a worker thread with a connection of its own instead
 * of inside the commits of the event loop (issue 13). SQLite lets a checkpoint copy committed
 * pages back into the database file while writers go on appending to the WAL; run inline, by the
 * commit that crosses `wal_autocheckpoint`, the same copy stalls every request of the process for
 * its duration (tens of milliseconds for thousands of scattered index pages).
 *
 * The worker runs a `PASSIVE` checkpoint every `CHECKPOINT_INTERVAL_MS`: it never waits for
 * readers or writers, so several processes on one file (`--workers`) each run one harmlessly.
 * Until the worker has opened the database, and again if it ever fails, the event loop's own
 * connection checkpoints inline every `INLINE_CHECKPOINT_PAGES` pages, so the WAL stays bounded
 * either way.
 */
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import type SQLite from 'better-sqlite3';

/** How often the worker checkpoints, in milliseconds. */
export const CHECKPOINT_INTERVAL_MS = 200;

/**
 * Pages after which the event loop's connection checkpoints inline while no worker does: 4,000
 * (16 MB of 4 KB pages) instead of SQLite's 1,000, because grant keys are random and fewer, larger
 * checkpoints write each scattered index page back once for many commits.
 */
export const INLINE_CHECKPOINT_PAGES = 4000;

// The worker's code, as CommonJS source (an eval worker): the same text runs from `dist/` and from
// the TypeScript sources under test, and it needs nothing but the driver, passed by absolute path.
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
const db = new Database(workerData.path);
db.pragma('busy_timeout = 1000');
parentPort.postMessage('ready');
setInterval(() => db.pragma('wal_checkpoint(PASSIVE)'), workerData.intervalMs);
`;

/** A running checkpoint worker for one SQLite file. */
export class SqliteCheckpointer {
  private constructor(private readonly worker: Worker) {}

  /**
   * Starts the worker for the database at `path`, opened by `connection` (the event loop's), and
   * hands checkpoints over to it once it is ready. A worker that fails gives them back (with a
   * process warning naming the error).
   */
  static start(connection: SQLite.Database, path: string): SqliteCheckpointer {
    connection.pragma(`wal_autocheckpoint = ${INLINE_CHECKPOINT_PAGES}`);
    const driver = createRequire(import.meta.url).resolve('better-sqlite3');
    const worker = new Worker(WORKER_SOURCE, { eval: true, workerData: { driver, path, intervalMs: CHECKPOINT_INTERVAL_MS } });
    worker.unref();
    const inline = (why: string) => {
      if (!connection.open) return;
      connection.pragma(`wal_autocheckpoint = ${INLINE_CHECKPOINT_PAGES}`);
      process.emitWarning(`SQLite checkpoints run inline again: ${why}`);
    };
    worker.once('message', () => {
      if (connection.open) connection.pragma('wal_autocheckpoint = 0');
    });
    worker.once('error', (err) => inline(err.message));
    worker.once('exit', (code) => {
      if (code !== 0 && code !== 1) inline(`the checkpoint worker exited with code ${code}`);
    });
    return new SqliteCheckpointer(worker);
  }

  /** Stops the worker (before the store's own connection closes). */
  async stop(): Promise<void> {
    this.worker.removeAllListeners();
    await this.worker.terminate();
  }
}
