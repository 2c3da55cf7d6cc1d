/**
 * Quotas on requests that make Sigil store something before anyone has authenticated (pending
 * authorization requests, device authorizations): OWASP API4:2023, unrestricted resource
 * consumption. Each key (an address, a browser, a client) may take `limit` requests per fixed
 * window; the counters are the failure limiter's (`FailureCounterStore`: this process's memory, the
 * cluster primary's for `sigil start --workers`, or Redis when several nodes share the limits).
 */
import { isIPv4 } from 'node:net';
import { OAuthError } from '../protocol/errors.js';
import type { FailureCounterStore, FailureLimiter, LimitName } from './failure-limiter.js';

/** One key and how many requests it may make per window. */
export interface QuotaEntry {
  key: string;
  limit: number;
}

/**
 * Counts one request against every entry, unless an entry's quota is already used up: then it
 * is refused and counts against none (so a caller past its own quota cannot use up a shared one,
 * such as a client's). After counting, the counts are read again: when concurrent requests took
 * the last places together, the ones beyond the limit are refused as well.
 * @param windowSeconds the fixed window, in seconds (it starts at a key's first request)
 * @param nowMs Unix milliseconds
 * @throws OAuthError 429 `temporarily_unavailable` with `Retry-After` (seconds until the
 *   exhausted key's window ends).
 */
export async function takeQuota(
  counters: FailureCounterStore,
  entries: readonly QuotaEntry[],
  windowSeconds: number,
  nowMs = Date.now(),
): Promise<void> {
  const keys = entries.map((e) => `quota:${e.key}`);
  const refuseBeyond = async (slack: number) => {
    const windows = await counters.read(keys, nowMs);
    let retryAfter = 0;
    entries.forEach((entry, i) => {
      const w = windows.get(keys[i] as string);
      if (w && w.failures + slack > entry.limit)
        retryAfter = Math.max(retryAfter, Math.max(1, Math.ceil((w.resetAt - nowMs) / 1000)));
    });
    if (retryAfter > 0)
      throw new OAuthError('temporarily_unavailable', 'too many pending requests from this caller, retry later', 429, {
        'retry-after': String(retryAfter),
      });
  };
  await refuseBeyond(1);
  await counters.increment(keys, windowSeconds * 1000, nowMs);
  await refuseBeyond(0);
}

/**
 * `takeQuota` on the limiter's counters, telling the limiter (`onRefused`) when `limit` refuses
 * the request.
 * @throws OAuthError 429 `temporarily_unavailable` with `Retry-After`, as `takeQuota`.
 */
export async function chargeQuota(
  limiter: FailureLimiter,
  limit: Exclude<LimitName, 'failed_attempts'>,
  entries: readonly QuotaEntry[],
  windowSeconds: number,
): Promise<void> {
  try {
    await takeQuota(limiter.counters, entries, windowSeconds);
  } catch (err) {
    // Only a refusal (429) counts; a counter store that cannot answer (503) refuses nobody's quota.
    if (err instanceof OAuthError && err.status === 429) limiter.onRefused(limit);
    throw err;
  }
}

/**
 * The part of a caller's address that a quota counts: an IPv4 address as is (also when IPv4-mapped
 * in IPv6), an IPv6 address by its /64 prefix, since one subscriber usually holds a whole /64
 * (RFC 6177) and could otherwise rotate through 2^64 addresses.
 * @param ip the request's address (`request.ip`)
 */
export function addressQuotaKey(ip: string): string {
  const bare = ip.split('%')[0] ?? ip;
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(bare);
  if (mapped?.[1]) return mapped[1];
  if (isIPv4(bare) || !bare.includes(':')) return bare;
  const [head = '', tail] = bare.toLowerCase().split('::');
  const groups = (text: string) =>
    text === '' ? [] : text.split(':').flatMap((g) => (g.includes('.') ? ['0', '0'] : [g]));
  const front = groups(head);
  const full =
    tail === undefined
      ? front
      : [...front, ...Array<string>(Math.max(0, 8 - front.length - groups(tail).length)).fill('0'), ...groups(tail)];
  return `${full
    .slice(0, 4)
    .map((g) => g.replace(/^0+(?=.)/, ''))
    .join(':')}::/64`;
}
