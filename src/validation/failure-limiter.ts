/**
 * Slows down credential guessing (RFC 6749 §2.3.1, §10.10; RFC 8628 §5.1): failed checks are
 * counted per key (client, username, address) in a fixed window; once a key reaches the limit,
 * every check for it is refused with 429 and `Retry-After` until the window ends, even with the
 * right credentials. Counters live in this process, or in Redis when `SIGIL_REDIS_URL` is set so
 * that the limits hold across nodes.
 */
import { Redis } from 'ioredis';
import { OAuthError } from '../errors.js';

/** A counter's state: failures so far and when the window ends (Unix milliseconds). */
export interface FailureWindow {
  failures: number;
  resetAt: number;
}

/** Where the counters live. */
export interface FailureCounterStore {
  /** The live windows of `keys` (absent keys have none). */
  read(keys: readonly string[], now: number): Promise<Map<string, FailureWindow>>;
  /** Counts one failure for each key, opening a window of `windowMs` where none is live. */
  increment(keys: readonly string[], windowMs: number, now: number): Promise<void>;
  close(): Promise<void>;
}

/** Counters in this process's memory. */
export class MemoryFailureCounters implements FailureCounterStore {
  private readonly windows = new Map<string, FailureWindow>();

  async read(keys: readonly string[], now: number): Promise<Map<string, FailureWindow>> {
    const out = new Map<string, FailureWindow>();
    for (const key of keys) {
      const w = this.windows.get(key);
      if (w && w.resetAt > now) out.set(key, w);
    }
    return out;
  }

  async increment(keys: readonly string[], windowMs: number, now: number): Promise<void> {
    if (this.windows.size > 100_000) for (const [k, w] of this.windows) if (w.resetAt <= now) this.windows.delete(k);
    for (const key of keys) {
      const w = this.windows.get(key);
      if (!w || w.resetAt <= now) this.windows.set(key, { failures: 1, resetAt: now + windowMs });
      else w.failures += 1;
    }
  }

  async close(): Promise<void> {}
}

/** Counters in Redis: `INCR` plus `PEXPIRE` on the first failure of a window. */
export class RedisFailureCounters implements FailureCounterStore {
  private readonly redis: Redis;

  /** @param url a `redis://` URL */
  constructor(url: string) {
    this.redis = new Redis(url, { maxRetriesPerRequest: 2, enableOfflineQueue: true, lazyConnect: false });
  }

  async read(keys: readonly string[], now: number): Promise<Map<string, FailureWindow>> {
    const pipeline = this.redis.pipeline();
    for (const key of keys) pipeline.get(prefix(key)).pttl(prefix(key));
    const results = (await pipeline.exec()) ?? [];
    const out = new Map<string, FailureWindow>();
    keys.forEach((key, i) => {
      const count = Number(results[2 * i]?.[1] ?? 0);
      const ttl = Number(results[2 * i + 1]?.[1] ?? -2);
      if (count > 0 && ttl > 0) out.set(key, { failures: count, resetAt: now + ttl });
    });
    return out;
  }

  async increment(keys: readonly string[], windowMs: number): Promise<void> {
    const pipeline = this.redis.pipeline();
    for (const key of keys) pipeline.incr(prefix(key)).pexpire(prefix(key), windowMs, 'NX');
    await pipeline.exec();
  }

  async close(): Promise<void> {
    await this.redis.quit();
  }
}

function prefix(key: string): string {
  return `sigil:failures:${key}`;
}

/** Failure counters with a limit (config `rateLimits`). */
export class FailureLimiter {
  /**
   * @param maxFailures failures tolerated per key per window
   * @param windowSeconds window length in seconds
   */
  constructor(
    private readonly maxFailures: number,
    private readonly windowSeconds: number,
    readonly counters: FailureCounterStore = new MemoryFailureCounters(),
  ) {}

  /**
   * Refuses the attempt when any key is blocked.
   * @throws OAuthError 429 `temporarily_unavailable` with `Retry-After` (seconds).
   */
  async check(keys: readonly string[], now = Date.now()): Promise<void> {
    const windows = await this.counters.read(keys, now);
    for (const w of windows.values()) {
      if (w.failures >= this.maxFailures) {
        const retryAfter = Math.max(1, Math.ceil((w.resetAt - now) / 1000));
        throw new OAuthError('temporarily_unavailable', 'too many failed attempts, retry later', 429, {
          'retry-after': String(retryAfter),
        });
      }
    }
  }

  /** Counts one failure against each key. */
  async fail(keys: readonly string[], now = Date.now()): Promise<void> {
    await this.counters.increment(keys, this.windowSeconds * 1000, now);
  }
}
