/**
 * Periodic jobs of a node: re-reading what other nodes and the command line change in the store
 * (signing keys, clients), so nothing needs a restart; and removing
 * expired grant rows in batches, by one node at a time (a lease in the store), so tables do not
 * grow without bound. Consumed and revoked rows stay until they expire: reuse detection needs them.
 */
import type { Logger } from 'pino';
import { newId, nowSeconds } from '../tokens/handles.js';
import type { Maintenance } from './types.js';

/** Settings of the jobs, in seconds. */
export interface HousekeepingOptions {
  keyReloadSeconds: number;
  cleanupIntervalSeconds: number;
  batchSize: number;
}

/** Most batches one clean-up run deletes before yielding until the next run. */
const MAX_BATCHES = 50;

/**
 * Deletes expired grant rows if this node holds the clean-up lease.
 * @returns how many rows were deleted (0 when another node holds the lease).
 */
export async function cleanUpExpired(maintenance: Maintenance, holder: string, options: HousekeepingOptions, now = nowSeconds()): Promise<number> {
  if (!(await maintenance.acquireLease('cleanup', holder, now, now + 2 * options.cleanupIntervalSeconds))) return 0;
  let total = 0;
  for (let i = 0; i < MAX_BATCHES; i++) {
    const deleted = await maintenance.deleteExpired(now, options.batchSize);
    total += deleted;
    if (deleted < options.batchSize) break;
  }
  return total;
}

/** Starts the timers; `stop` clears them. Timers do not keep the process alive. */
export function startHousekeeping(
  reloaders: ReadonlyArray<() => Promise<void>>,
  maintenance: Maintenance,
  log: Logger,
  options: HousekeepingOptions,
): { stop(): void } {
  const holder = newId();
  const reload = setInterval(() => {
    for (const reloader of reloaders) reloader().catch((err: unknown) => log.error({ err }, 'reloading from the store failed'));
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
      clearInterval(reload);
      clearInterval(cleanup);
    },
  };
}
