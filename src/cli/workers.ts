/**
 * `sigil start --workers N|auto`: N processes (node:cluster) accept connections on one
 * port and share the store. The primary prepares the store once (migrations, first signing keys),
 * forks the workers, prints `listening on` when every worker listens, replaces a worker that dies,
 * and on SIGTERM or SIGINT lets every worker drain its requests before it exits itself.
 *
 * Each worker is a whole Sigil: key reloads read the shared store, and a JWT signed with a key a
 * sibling added since the last reload makes the worker re-read the keys (`KeyRing`). The failure
 * counters (`rateLimits`) and request quotas (`pendingLimits`) count for all workers together:
 * without Redis the primary keeps them and the workers ask it over the cluster's IPC channel
 * (`PrimaryFailureCounters`); with Redis (`SIGIL_REDIS_URL`) every worker of every node counts
 * there. One-time identifiers (DPoP proofs', client assertions' `jti`) are rows of the shared
 * store. The access-token lookup cache is per worker, with the same bound as between nodes.
 */
import cluster, { type Worker } from 'node:cluster';
import { availableParallelism } from 'node:os';
import { ConfigError } from '../config/loader.js';
import { MemoryFailureCounters } from '../limits/failure-limiter.js';
import { answerCounterRequest, isCounterRequest } from '../limits/primary-counters.js';

/** Message a worker sends the primary once its listeners are up. */
interface ListeningMessage {
  sigil: 'listening';
  address: string;
  metricsUrl: string | null;
}

/**
 * Parses the `--workers` value: a whole number from 1 to 64, or `auto` (the machine's cores,
 * `os.availableParallelism()`).
 * @throws ConfigError naming `--workers`.
 */
export function parseWorkers(value: string | undefined): number {
  if (value === undefined) return 1;
  if (value === 'auto') return availableParallelism();
  const n = Number(value);
  if (!/^\d+$/.test(value) || n < 1 || n > 64)
    throw new ConfigError(['--workers: must be a whole number from 1 to 64, or "auto"']);
  return n;
}

/** True in a process forked by `runPrimary`. */
export const isWorker = cluster.isWorker;

/** A worker tells the primary that it accepts requests at `address` (metrics at `metricsUrl`). */
export function reportListening(address: string, metricsUrl: string | null): void {
  const message: ListeningMessage = { sigil: 'listening', address, metricsUrl };
  process.send?.(message);
}

/**
 * Runs the primary of `count` workers, each running this same command. `announce` prints
 * the start lines once every worker listens. The primary keeps the workers' failure counters
 * (answering `PrimaryFailureCounters`). Resolves with the exit code: 0 after a signal stopped
 * every worker, 1 when a worker failed to start.
 */
export function runPrimary(
  count: number,
  announce: (address: string, metricsUrl: string | null) => void,
): Promise<number> {
  return new Promise((done) => {
    let stopping = false;
    let started = false;
    const ready = new Set<number>();
    const counters = new MemoryFailureCounters();
    const fork = () => {
      const worker = cluster.fork();
      worker.on('message', (message: Partial<ListeningMessage>) => {
        if (isCounterRequest(message)) {
          void answerCounterRequest(counters, message).then((reply) => {
            // A worker that exited meanwhile no longer needs its answer.
            if (worker.isConnected()) worker.send(reply);
          });
          return;
        }
        if (message?.sigil !== 'listening' || typeof message.address !== 'string') return;
        ready.add(worker.id);
        if (!started && ready.size === count) {
          started = true;
          announce(message.address, message.metricsUrl ?? null);
        }
      });
      return worker;
    };
    const live = (): Worker[] => Object.values(cluster.workers ?? {}).filter((w): w is Worker => w !== undefined);
    const stop = (code: number) => {
      if (stopping) return;
      stopping = true;
      // Each worker closes its listeners and finishes its requests in flight (sigil.close), then exits.
      for (const worker of live()) worker.process.kill('SIGTERM');
      const finish = () => {
        if (live().length === 0) done(code);
      };
      cluster.on('exit', finish);
      finish();
    };
    cluster.on('exit', (worker, exitCode, signal) => {
      ready.delete(worker.id);
      if (stopping) return;
      if (!started) {
        console.error(`sigil: a worker exited during start (${signal ?? `code ${exitCode}`})`);
        stop(1);
        return;
      }
      console.error(`sigil: worker ${worker.process.pid} exited (${signal ?? `code ${exitCode}`}); starting another`);
      fork();
    });
    process.on('SIGINT', () => stop(0));
    process.on('SIGTERM', () => stop(0));
    for (let i = 0; i < count; i++) fork();
  });
}
