/**
 * Slows down credential guessing (RFC 6749 §2.3.1, §10.10; RFC 8628 §5.1): failed checks are
 * counted per key (client, username, address) in a fixed window; once a key reaches the limit,
 * every check for it is refused with 429 and `Retry-After` until the window ends, even with the
 * right credentials. Counters live in this process; issue 6 moves them to Redis for several nodes.
 */
import { OAuthError } from '../errors.js';

interface Window {
  failures: number;
  resetAt: number;
}

/** Failure counters with a limit (config `rateLimits`). */
export class FailureLimiter {
  private readonly windows = new Map<string, Window>();

  /**
   * @param maxFailures failures tolerated per key per window
   * @param windowSeconds window length in seconds
   */
  constructor(
    private readonly maxFailures: number,
    private readonly windowSeconds: number,
  ) {}

  /**
   * Refuses the attempt when any key is blocked.
   * @throws OAuthError 429 `temporarily_unavailable` with `Retry-After` (seconds).
   */
  check(keys: readonly string[], now = Date.now()): void {
    for (const key of keys) {
      const w = this.windows.get(key);
      if (w && w.resetAt > now && w.failures >= this.maxFailures) {
        const retryAfter = Math.max(1, Math.ceil((w.resetAt - now) / 1000));
        throw new OAuthError('temporarily_unavailable', 'too many failed attempts, retry later', 429, {
          'retry-after': String(retryAfter),
        });
      }
    }
  }

  /** Counts one failure against each key. */
  fail(keys: readonly string[], now = Date.now()): void {
    if (this.windows.size > 100_000) this.sweep(now);
    for (const key of keys) {
      const w = this.windows.get(key);
      if (!w || w.resetAt <= now) this.windows.set(key, { failures: 1, resetAt: now + this.windowSeconds * 1000 });
      else w.failures += 1;
    }
  }

  private sweep(now: number): void {
    for (const [key, w] of this.windows) if (w.resetAt <= now) this.windows.delete(key);
  }
}
