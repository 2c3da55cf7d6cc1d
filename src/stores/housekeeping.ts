/**
 * Periodic jobs of a node: re-reading what other nodes and the command line change in the store
 * (signing keys, clients), so nothing needs a restart; and removing
 * expired grant rows in batches, by one node at a time (a lease in the store), so tables do not
 * grow without bound. Consumed and revoked rows stay until they expire: reuse detection needs them.
 */
import type { Logger } from 'pino';
import { newId, nowSeconds } from '../crypto/handles.js';
import type { Maintenance } from './types.js';

/** Settings of the jobs, in seconds. */
export interface HousekeepingOptions {
  keyReloadSeconds: number;
  cleanupIntervalSeconds: number;
  batchSize: number;
}

/**
 * Deletes expired grant rows if this node holds the clean-up lease: batch after batch until no
 * expired row is left, so one run keeps pace with however many rows expired since the last (a
 * fixed number of batches per run, as before, fell behind any creation rate above
 * 50 batches per interval). Between batches it yields to other work; it stops early only when
 * one interval has passed (the lease lasts two), and the next run goes on.
 * @param now Unix seconds: rows with `expiresAt` before it are deleted
 * @returns how many rows were deleted (0 when another node holds the lease).
 */
export async function cleanUpExpired(
  maintenance: Maintenance,
  holder: string,
  options: HousekeepingOptions,
  now = nowSeconds(),
): Promise<number> {
  if (!(await maintenance.acquireLease('cleanup', holder, now, now + 2 * options.cleanupIntervalSeconds))) return 0;
  const deadline = Date.now() + options.cleanupIntervalSeconds * 1000;
  let total = 0;
  for (;;) {
    const deleted = await maintenance.deleteExpired(now, options.batchSize);
    total += deleted;
    if (deleted < options.batchSize || Date.now() >= deadline) break;
    await new Promise((resolve) => setImmediate(resolve));
  }
  return total;
}

/**
 * How often `pollChanges` runs, milliseconds: the management API's changes are
 * in force on every node within this plus the time to re-read them.
 */
export const CHANGE_POLL_MILLISECONDS = 1000;

/**
 * Starts the timers; `stop` clears them. Timers do not keep the process alive. `pollChanges` runs every
 * CHANGE_POLL_MILLISECONDS, one call at a time.
 */
export function startHousekeeping(
  reloaders: ReadonlyArray<() => Promise<void>>,
  maintenance: Maintenance,
  log: Logger,
  options: HousekeepingOptions,
  pollChanges?: () => Promise<void>,
): { stop(): void } {
  const holder = newId();
  let polling = false;
  const poll = setInterval(() => {
    if (!pollChanges || polling) return;
    polling = true;
    pollChanges()
      .catch((err: unknown) => log.error({ err }, 'polling the store for changes failed'))
      .finally(() => (polling = false));
  }, CHANGE_POLL_MILLISECONDS);
  poll.unref();
  const reload = setInterval(() => {
    for (const reloader of reloaders)
      reloader().catch((err: unknown) => log.error({ err }, 'reloading from the store failed'));
  }, options.keyReloadSeconds * 1000);
  const cleanup = setInterval(() => {
    cleanUpExpired(maintenance, holder, options)
      .then((n) => {
        if (n > 0) log.info({ deleted: n }, 'expired grants removed');
      })
      .catch((err: unknown) => log.error({ err }, 'clean-up failed'));
  }, options.cleanupIntervalSeconds * 1000);
  reload.unref();
  cleanup.unref();
  return {
    stop() {
      clearInterval(poll);
      clearInterval(reload);
      clearInterval(cleanup);
    },
  };
}
