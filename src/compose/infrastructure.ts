/**
 * Builds the infrastructure group: the log, tracing and metrics, the store (migrated), the failure
 * counters, the signing keys, the event bus and the replay cache.
 */
import { pino } from 'pino';
import type { ResolvedConfig } from '../config/loader.js';
import { ConfigError, issuerPath } from '../config/loader.js';
import { EventBus, type EventObservers } from '../events/events.js';
import { RequestMetrics } from '../http/metrics.js';
import { DomainMetrics } from '../telemetry/metrics.js';
import { startTracing, type Tracing } from '../telemetry/tracing.js';
import type { GrantStore } from '../stores/grant-store.js';
import type { LogoutStore } from '../stores/types.js';
import { openStore } from '../stores/sql.js';
import { KeyRing } from '../keys/keys.js';
import { clientsNamingStoredUsers } from '../clients/stored-clients.js';
import { FailureLimiter, MemoryFailureCounters, RedisFailureCounters } from '../limits/failure-limiter.js';
import { PrimaryFailureCounters } from '../limits/primary-counters.js';
import { ReplayCache } from '../limits/replay-cache.js';
import type { Infrastructure } from '../services.js';
import { withHashedPasswords } from '../users/users.js';
import type { SigilOptions } from './options.js';

/** The store calls that get a span of their own when tracing is on: every grant-table and logout-store call. */
const TRACED_GRANT_CALLS = [
  'put',
  'putOnce',
  'get',
  'getRecent',
  'consume',
  'update',
  'replaceData',
  'save',
  'revoke',
  'revokeFamily',
] as const satisfies readonly (keyof GrantStore)[];
const TRACED_LOGOUT_CALLS = [
  'addParticipant',
  'endSession',
  'liveSessions',
  'expiredSessions',
  'claimDeliveries',
  'finishDelivery',
  'retryDelivery',
] as const satisfies readonly (keyof LogoutStore)[];

/** The infrastructure group and what the composition root keeps of its making. */
export interface BuiltInfrastructure {
  infrastructure: Infrastructure;
  /** Request and domain metrics, served by the management app. */
  metrics: RequestMetrics;
  domainMetrics: DomainMetrics;
  tracing: Tracing | undefined;
  /**
   * Settles when the signing keys are loaded (generated on a first start): await it before
   * anything signs or the keys' periodic reload starts. Rejects as `KeyRing.load` throws.
   */
  keysReady: Promise<void>;
  /** Writes the log lines still buffered (at close, and at exit). */
  flushLog(): void;
  /** Closes the store and the counters, and flushes the log. */
  close(): Promise<void>;
}

/**
 * The log: lines are buffered and written to stdout 4 KB at a time (one system call for some
 * fifteen audit events under load, instead of one each), and at least once a second when traffic
 * is low. The writes are synchronous, as pino's are by default: an asynchronous write is a job on
 * libuv's thread pool, and under load those jobs cost more CPU per token than the write itself
 * (measured in docs/performance.md). pino flushes only an asynchronous destination at
 * exit, so Sigil writes what is still buffered when it closes and, should it die of an error, when
 * the process exits. A SIGKILL may lose up to the last second.
 */
function openLog(
  cfg: ResolvedConfig,
  options: SigilOptions,
): Pick<BuiltInfrastructure, 'flushLog'> & { log: Infrastructure['log'] } {
  const destination = options.logger
    ? undefined
    : pino.destination({ dest: 1, sync: true, minLength: 4096, periodicFlush: 1000 });
  const log = options.logger ?? pino({ level: cfg.logLevel }, destination);
  const flushLog = () => {
    process.off('exit', flushLog);
    // After EPIPE (stdout's reader gone) pino has made this a no-op.
    destination?.flushSync();
  };
  if (destination) process.on('exit', flushLog);
  return { log, flushLog };
}

/**
 * Opens what every other group stands on. `resolved` is the resolved config with the config users'
 * clear-text passwords: they are hashed (`withHashedPasswords`, argon2id on libuv's pool) while the
 * store opens, and `infrastructure.config` holds only the hashes.
 * @throws ConfigError when a config client's id is a stored user's subject (RFC 9068 §5); Error
 *   when the store cannot be opened, a password cannot be hashed or the keys cannot be loaded (the
 *   store and counters are closed again first)
 */
export async function buildInfrastructure(
  resolved: ResolvedConfig,
  options: SigilOptions,
): Promise<BuiltInfrastructure> {
  const hashedUsers = withHashedPasswords(resolved.users);
  // Awaited below once the store is open; a store that fails to open leaves it unobserved.
  hashedUsers.catch(() => {});
  const { log, flushLog } = openLog(resolved, options);
  // Before the store: pg is loaded with a PostgreSQL store, and its instrumentation must be there first.
  const tracing = await startTracing();
  const metrics = new RequestMetrics();
  const domainMetrics = new DomainMetrics(metrics.registry);
  const store = await openStore(resolved.storage, resolved.accessTokenCache, domainMetrics.timedCommit);
  tracing?.traceMethods(store.grants, 'store.grants', TRACED_GRANT_CALLS);
  tracing?.traceMethods(store.logout, 'store.logout', TRACED_LOGOUT_CALLS);
  const counters = options.redisUrl
    ? new RedisFailureCounters(options.redisUrl)
    : options.countersInPrimary
      ? new PrimaryFailureCounters()
      : new MemoryFailureCounters();
  const limiter = new FailureLimiter(resolved.rateLimits, counters);
  limiter.onRefused = domainMetrics.refused;
  let keysReady: Promise<void> = Promise.resolve();
  const close = async () => {
    // Keys being generated are stored before the store closes.
    await keysReady.catch(() => {});
    await store.close();
    await limiter.counters.close();
    flushLog();
  };
  try {
    const collisions = await clientsNamingStoredUsers(resolved.clients, store.users);
    if (collisions.length > 0) throw new ConfigError(collisions);
    // Loaded while the other groups are built (see `startServices`).
    const { ring: keys, ready } = KeyRing.open(
      store.keys,
      resolved.signingAlgorithms,
      { ...resolved.signingKeys, ...(options.dataKey ? { dataKey: options.dataKey } : {}) },
      { saml: resolved.saml.enabled },
    );
    keysReady = ready;
    // Awaited by the caller; until then a failure is not an unhandled rejection.
    ready.catch(() => {});
    // No clear-text password is kept past this point: every service sees the config users' hashes.
    const cfg: ResolvedConfig = { ...resolved, users: await hashedUsers };
    domainMetrics.watch({
      outbox: () => store.logout.outbox(),
      liveInteractions: (now) => store.maintenance.liveInteractions(now),
      signingSince: () => keys.signingSince(),
    });
    const observers: EventObservers = tracing
      ? {
          count: (event) => {
            domainMetrics.count(event);
            tracing.annotate(event);
          },
          traceId: () => tracing.traceId(),
        }
      : { count: domainMetrics.count };
    const infrastructure: Infrastructure = {
      config: cfg,
      issuer: cfg.issuer,
      basePath: issuerPath(cfg.issuer),
      store,
      keys,
      events: new EventBus(log, observers),
      limiter,
      replay: new ReplayCache(store.grants),
      log,
    };
    return { infrastructure, metrics, domainMetrics, tracing, keysReady, flushLog, close };
  } catch (err) {
    await close();
    throw err;
  }
}
