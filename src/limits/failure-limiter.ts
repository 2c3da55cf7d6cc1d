/**
 * Slows down credential guessing (RFC 6749 §2.3.1, §10.10; RFC 8628 §5.1) without letting anyone
 * lock a credential's owner out (OWASP ASVS 5.0 V6.3.1, v4 2.2.1). Failed checks are counted in
 * fixed windows of `windowSeconds`:
 * - per address (`addressMaxFailures`) and per identity and address (`maxFailures`): reaching the
 *   limit refuses further checks from that address with 429 and `Retry-After` until the window
 *   ends, even with the right credential;
 * - per identity, from every address (`identitySlowDownAfter`): past that, each check for the
 *   identity waits a growing delay capped at `maxDelaySeconds`, and is never refused. Identities
 *   whose secrets are all long (client and API secrets, see `secretsAreLong` in clients/registry.ts)
 *   have no identity-wide counter at all;
 * - per capped budget from every address (`claimCapped`: an LDAP account's wrong passwords, each a
 *   bind the directory counts towards its own lockout): refused, the right credential too, once
 *   the budget is spent, until its window passes without a failure: the one pause others can
 *   cause, accepted in place of the directory's lockout, which would be longer and reach further.
 * Counters live in this process, in the cluster primary for the workers of `sigil start --workers`
 * (`PrimaryFailureCounters`), or in Redis when `SIGIL_REDIS_URL` is set so that the limits hold
 * across nodes.
 */
import { createRequire } from 'node:module';
import type { ChainableCommander, Redis } from 'ioredis';
import { OAuthError } from '../protocol/errors.js';
import { sha256 } from '../crypto/handles.js';

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
  /** Forgets the windows of `keys`. */
  reset(keys: readonly string[]): Promise<void>;
  /**
   * Counts one failure against `key` unless its live window already holds `max` failures, in one
   * atomic step (of concurrent claims, at most `max` are ever counted, and a refused claim counts
   * nothing). A counted claim ends the window of `key` `windowMs` from `now`, and moves the end of
   * each live window of `alongside` there too (their counts stay), so that budgets spent on one
   * account lapse together.
   * @returns undefined when counted, else the full window of `key` (nothing changed).
   */
  claim(
    key: string,
    max: number,
    alongside: readonly string[],
    windowMs: number,
    now: number,
  ): Promise<FailureWindow | undefined>;
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

  async reset(keys: readonly string[]): Promise<void> {
    for (const key of keys) this.windows.delete(key);
  }

  async claim(
    key: string,
    max: number,
    alongside: readonly string[],
    windowMs: number,
    now: number,
  ): Promise<FailureWindow | undefined> {
    if (this.windows.size > 100_000) for (const [k, o] of this.windows) if (o.resetAt <= now) this.windows.delete(k);
    const w = this.windows.get(key);
    const live = w && w.resetAt > now ? w : undefined;
    if (live && live.failures >= max) return { ...live };
    this.windows.set(key, { failures: (live?.failures ?? 0) + 1, resetAt: now + windowMs });
    for (const other of alongside) {
      const o = this.windows.get(other);
      if (o && o.resetAt > now) o.resetAt = now + windowMs;
    }
    return undefined;
  }

  async close(): Promise<void> {}
}

/** Counters in Redis: `SET … PX … NX` opens a window on its first failure, `INCR` counts. */
export class RedisFailureCounters implements FailureCounterStore {
  private readonly redis: Redis;

  /** @param url a `redis://` URL */
  constructor(url: string) {
    // Loaded here, not at start: a node without Redis never pays for the module in start time.
    const { Redis: Client } = createRequire(import.meta.url)('ioredis') as typeof import('ioredis');
    this.redis = new Client(url, { maxRetriesPerRequest: 2, enableOfflineQueue: true, lazyConnect: false });
    // A lost connection reaches the callers as failed commands (503, logged with the request);
    // without a listener ioredis would print every reconnect failure as an unhandled error.
    this.redis.on('error', () => {});
  }

  async read(keys: readonly string[], now: number): Promise<Map<string, FailureWindow>> {
    const pipeline = this.redis.pipeline();
    for (const key of keys) pipeline.get(prefix(key)).pttl(prefix(key));
    const results = await answered(pipeline);
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
    // SET … PX … NX opens the window (with its expiry) only where none is live, and INCR keeps
    // that expiry: Redis 2.6.12 and later (PEXPIRE's NX flag would need Redis 7).
    for (const key of keys) pipeline.set(prefix(key), 0, 'PX', windowMs, 'NX').incr(prefix(key));
    await answered(pipeline);
  }

  async reset(keys: readonly string[]): Promise<void> {
    if (keys.length === 0) return;
    await answered(this.redis.pipeline().del(...keys.map(prefix)));
  }

  async claim(
    key: string,
    max: number,
    alongside: readonly string[],
    windowMs: number,
    now: number,
  ): Promise<FailureWindow | undefined> {
    let answer: unknown;
    try {
      // One script: Redis runs it as one command, so no other client's claim comes between the
      // read and the count (EVAL, Redis 2.6 and later).
      answer = await this.redis.eval(
        CLAIM_SCRIPT,
        1 + alongside.length,
        prefix(key),
        ...alongside.map(prefix),
        max,
        windowMs,
      );
    } catch (err) {
      throw countersUnavailable(`failure counters: Redis did not answer (${(err as Error).message})`);
    }
    if (!Array.isArray(answer) || answer.length < 2) return undefined;
    return { failures: Number(answer[0]), resetAt: now + Math.max(0, Number(answer[1])) };
  }

  async close(): Promise<void> {
    await this.redis.quit();
  }
}

/**
 * `claim` in Redis: KEYS[1] the budget, the other keys slide along; ARGV[1] the max, ARGV[2] the
 * window (milliseconds). Answers `{count, pttl}` when the budget is full, else an empty array.
 * (A missing key's GET is `false` in Lua; PEXPIRE on a missing key does nothing.)
 */
const CLAIM_SCRIPT = `
local count = tonumber(redis.call('GET', KEYS[1]) or '0')
if count >= tonumber(ARGV[1]) then return {count, redis.call('PTTL', KEYS[1])} end
redis.call('INCR', KEYS[1])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
for i = 2, #KEYS do redis.call('PEXPIRE', KEYS[i], ARGV[2]) end
return {}
`;

/**
 * The answers of a Redis pipeline, or, when Redis cannot be reached or a command failed, a 503
 * `temporarily_unavailable` with `Retry-After: 1` (RFC 9110 §15.6.4): a credential is never
 * checked, and a failure never goes uncounted, without the shared limits (fail closed). The reason
 * stays in the error's message, which the server's log records; the caller sees a generic text.
 */
async function answered(pipeline: ChainableCommander): Promise<[Error | null, unknown][]> {
  let results: [Error | null, unknown][] | null;
  try {
    results = await pipeline.exec();
  } catch (err) {
    throw countersUnavailable(`failure counters: Redis did not answer (${(err as Error).message})`);
  }
  const failed = results?.find(([err]) => err !== null)?.[0];
  if (!results || failed)
    throw countersUnavailable(`failure counters: Redis did not answer (${failed?.message ?? 'no reply'})`);
  return results;
}

/**
 * The error of a counter store that cannot answer (Redis, or the primary of `--workers`): 503
 * `temporarily_unavailable` with `Retry-After: 1` and a generic description; `reason` becomes the
 * error's message, for the log.
 */
export function countersUnavailable(reason: string): OAuthError {
  const err = new OAuthError(
    'temporarily_unavailable',
    'the failure limits cannot be checked right now, retry later',
    503,
    { 'retry-after': '1' },
  );
  err.message = reason;
  return err;
}

function prefix(key: string): string {
  return `sigil:failures:${key}`;
}

/** The limits of config `rateLimits` (counts per window, seconds). */
export interface FailureLimits {
  /** Failures per identity and address per window before that pair is refused (429). */
  maxFailures: number;
  /** Window length, seconds. */
  windowSeconds: number;
  /** Failures per address per window, whatever the identity, before the address is refused (429). */
  addressMaxFailures: number;
  /** Failures per identity per window, from all addresses, before checks for it are delayed. */
  identitySlowDownAfter: number;
  /** The longest delay of one check, seconds. */
  maxDelaySeconds: number;
}

/** One credential check, as the limiter sees it. */
export interface CredentialAttempt {
  /** The caller's address (`request.ip`). */
  address: string;
  /**
   * What is being guessed at: `client:<id>`, `api:<name>`, `user:<tenant>:<username>`, or
   * `user-code` for the device page (RFC 8628 §5.1: user codes are limited per address).
   */
  identity: string;
  /**
   * Count failures against the identity from every address too (a slow-down only). False for
   * identities whose secrets are too long to guess online, and for user codes.
   */
  identityWide: boolean;
  /** Further keys limited like the identity and address pair (the device page's browser). */
  extraKeys?: readonly string[];
}

/**
 * The limiter's view of a password check (login page and password grant): the user is the
 * identity, counted from every address too (passwords are guessable). Unknown usernames count
 * the same way, so the limits tell nothing about which users exist.
 */
export function userAttempt(address: string, tenant: string | null, username: string): CredentialAttempt {
  return { address, identity: `user:${tenant ?? ''}:${username.toLowerCase()}`, identityWide: true };
}

/** The first identity-wide delay, milliseconds; it doubles with every further failure. */
export const FIRST_DELAY_MS = 100;

/**
 * The delay before a check for an identity with `failures` failures in the window (milliseconds):
 * none below `limits.identitySlowDownAfter`, then 100 ms doubling per further failure, capped at
 * `limits.maxDelaySeconds`.
 */
export function slowDownDelay(failures: number, limits: FailureLimits): number {
  const excess = failures - limits.identitySlowDownAfter;
  if (excess < 0) return 0;
  return Math.min(limits.maxDelaySeconds * 1000, FIRST_DELAY_MS * 2 ** Math.min(excess, 30));
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * The limits that refuse requests (429), as metrics name them: the failure limits of this module
 * (`failed_attempts`) and the request quotas of `request-quota.ts`, one per kind of stored thing.
 */
export type LimitName =
  | 'failed_attempts'
  | 'interaction_quota'
  | 'device_quota'
  | 'backchannel_quota'
  | 'passkey_challenge_quota'
  | 'dpop_proof_quota'
  | 'client_metadata_quota'
  | 'registration_quota'
  | 'email_quota';

/** Failure counters with limits (config `rateLimits`). */
export class FailureLimiter {
  /**
   * Told of every request a limit refused, by the limit's name: the failure limits here, the
   * quotas through `chargeQuota`. Set by the metrics (`sigil_limiter_refusals_total`); none by default.
   */
  onRefused: (limit: LimitName) => void = () => {};

  /**
   * @param limits the config's `rateLimits`
   * @param counters where the counters live (this process, or Redis)
   * @param wait how a delay is waited (replaced in tests that watch the delays)
   */
  constructor(
    readonly limits: FailureLimits,
    readonly counters: FailureCounterStore = new MemoryFailureCounters(),
    private readonly wait: (ms: number) => Promise<void> = sleep,
  ) {}

  /**
   * Before a credential check: refuses it while the address or the identity and address pair is
   * blocked, else waits the identity-wide slow-down delay (if any).
   * @returns the delay waited, milliseconds.
   * @throws OAuthError 429 `temporarily_unavailable` with `Retry-After` (seconds).
   */
  async before(attempt: CredentialAttempt, now = Date.now()): Promise<number> {
    const keys = keysOf(attempt);
    const windows = await this.counters.read(keys.all, now);
    const blocked = (key: string, max: number) => {
      const w = windows.get(key);
      if (!w || w.failures < max) return;
      this.onRefused('failed_attempts');
      throw tooManyFailures(w, now);
    };
    blocked(keys.address, this.limits.addressMaxFailures);
    for (const key of keys.blocking) blocked(key, this.limits.maxFailures);
    const delay = keys.identity ? slowDownDelay(windows.get(keys.identity)?.failures ?? 0, this.limits) : 0;
    if (delay > 0) await this.wait(delay);
    return delay;
  }

  /**
   * `before`, with its refusal returned rather than thrown, for callers that answer it with a page
   * of their own (the sign-in steps).
   * @returns undefined when the check may go on (after the slow-down delay, if any), else the
   *   refusal: OAuthError 429 `temporarily_unavailable` with `Retry-After` (seconds).
   * @throws whatever else `before` throws (a counter store that fails).
   */
  async refusal(attempt: CredentialAttempt): Promise<OAuthError | undefined> {
    try {
      await this.before(attempt);
      return undefined;
    } catch (err) {
      if (err instanceof OAuthError && err.status === 429) return err;
      throw err;
    }
  }

  /** After a failed credential check: counts it against the address, the pair and the identity. */
  async failed(attempt: CredentialAttempt, now = Date.now()): Promise<void> {
    await this.counters.increment(keysOf(attempt).all, this.limits.windowSeconds * 1000, now);
  }

  /**
   * Spends one failure of a capped budget before a check whose every wrong answer costs something
   * beyond Sigil (an LDAP bind, which the directory counts towards its own lockout): the first of
   * `budgets` that is not spent is charged, atomically (`FailureCounterStore.claim`), and the
   * windows of all the others slide along with it, so that they lapse together, `windowSeconds`
   * after the last failure of any. A budget is spent once `max` failures are counted; unlike the
   * limits of `before`, that refuses the right credential too, from any address. The check is
   * charged before it runs, so concurrent checks can never pass the budgets together; a right
   * credential afterwards clears them (`capSucceeded`).
   * @param budgets what may be charged, in order of preference; keys unique among the caps (e.g.
   *   `ldap:<directory>:subject:<subject>`); a budget with `max` 0 or less is never charged, but
   *   its window slides along with the others'
   * @throws OAuthError 429 `temporarily_unavailable` with `Retry-After` (seconds until the first of
   *   the spent budgets lapses), as `before` answers, when every budget is spent.
   */
  async claimCapped(
    budgets: readonly { key: string; max: number }[],
    windowSeconds: number,
    now = Date.now(),
  ): Promise<void> {
    const keys = budgets.map((b) => `cap:${b.key}`);
    let soonest: FailureWindow | undefined;
    for (const [i, budget] of budgets.entries()) {
      if (budget.max <= 0) continue;
      const full = await this.counters.claim(
        keys[i]!,
        budget.max,
        keys.filter((_, j) => j !== i),
        windowSeconds * 1000,
        now,
      );
      if (!full) return;
      if (!soonest || full.resetAt < soonest.resetAt) soonest = full;
    }
    this.onRefused('failed_attempts');
    throw tooManyFailures(soonest ?? { failures: 0, resetAt: now + windowSeconds * 1000 }, now);
  }

  /** Forgets the failures of capped budgets (`claimCapped`), after their right credential. */
  async capSucceeded(keys: readonly string[]): Promise<void> {
    await this.counters.reset(keys.map((k) => `cap:${k}`));
  }
}

/**
 * The limiter's refusal while `window` is full: 429 `temporarily_unavailable` with `Retry-After`,
 * the seconds until the window ends (at least 1; RFC 6585 §4).
 */
function tooManyFailures(window: FailureWindow, now: number): OAuthError {
  const retryAfter = Math.max(1, Math.ceil((window.resetAt - now) / 1000));
  return new OAuthError('temporarily_unavailable', 'too many failed attempts, retry later', 429, {
    'retry-after': String(retryAfter),
  });
}

/**
 * The counter keys of an attempt. An identity longer than 200 characters (a client id is whatever
 * the caller sends) is keyed by its SHA-256, so keys stay small in memory and in Redis.
 */
function keysOf(attempt: CredentialAttempt): {
  address: string;
  blocking: string[];
  identity: string | undefined;
  all: string[];
} {
  const id =
    attempt.identity.length > 200 ? `sha256:${sha256(attempt.identity).toString('base64url')}` : attempt.identity;
  const address = `address:${attempt.address}`;
  const blocking = [`pair:${id}@${attempt.address}`, ...(attempt.extraKeys ?? [])];
  const identity = attempt.identityWide ? `identity:${id}` : undefined;
  return { address, blocking, identity, all: [address, ...blocking, ...(identity ? [identity] : [])] };
}
