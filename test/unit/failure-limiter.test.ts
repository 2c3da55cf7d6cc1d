/**
 * The failure limiter's rules: the address and the (identity, address) pair
 * block, the identity-wide count only delays (100 ms doubling, capped), long-secret identities are
 * not counted identity-wide. Delays are recorded by a stand-in `wait`, not timed.
 */
import { describe, expect, it } from 'vitest';
import {
  type CredentialAttempt,
  FailureLimiter,
  MemoryFailureCounters,
  slowDownDelay,
} from '../../src/limits/failure-limiter.js';
import { secretsAreLong } from '../../src/clients/registry.js';

const LIMITS = {
  maxFailures: 20,
  windowSeconds: 60,
  addressMaxFailures: 100,
  identitySlowDownAfter: 100,
  maxDelaySeconds: 5,
};

describe('slowDownDelay', () => {
  it('is 0 below identitySlowDownAfter, then 100 ms doubling per failure, capped at maxDelaySeconds', () => {
    expect([0, 99].map((n) => slowDownDelay(n, LIMITS))).toEqual([0, 0]);
    expect([100, 101, 102, 105, 106, 107, 10_000].map((n) => slowDownDelay(n, LIMITS))).toEqual([
      100, 200, 400, 3200, 5000, 5000, 5000,
    ]);
  });
});

describe('FailureLimiter', () => {
  it('never refuses a check for the identity-wide count alone: 1,000 failures from 1,000 addresses only delay', async () => {
    const waited: number[] = [];
    const limiter = new FailureLimiter(LIMITS, new MemoryFailureCounters(), async (ms) => void waited.push(ms));
    const at = (i: number): CredentialAttempt => ({
      address: `198.51.${i >> 8}.${i & 255}`,
      identity: 'user::alice',
      identityWide: true,
    });
    const now = Date.now();
    for (let i = 0; i < 1000; i++) {
      await limiter.before(at(i), now);
      await limiter.failed(at(i), now);
    }
    expect(await limiter.before(at(1000), now)).toBe(5000);
    expect(Math.max(...waited)).toBe(5000);
    expect(waited.filter((ms) => ms > 0)).toHaveLength(901);
  });

  it('refuses the pair after maxFailures and the address after addressMaxFailures, with Retry-After', async () => {
    const limiter = new FailureLimiter(LIMITS, new MemoryFailureCounters(), async () => {});
    const now = Date.now();
    const one: CredentialAttempt = { address: '203.0.113.1', identity: 'client:web', identityWide: false };
    for (let i = 0; i < 20; i++) await limiter.failed(one, now);
    await expect(limiter.before(one, now + 1000)).rejects.toMatchObject({
      status: 429,
      headers: { 'retry-after': '59' },
    });
    // Other identities from that address still pass until the address has 100 failures.
    const other = (i: number): CredentialAttempt => ({
      address: '203.0.113.1',
      identity: `client:c${i}`,
      identityWide: false,
    });
    for (let i = 0; i < 80; i++) await limiter.failed(other(i), now);
    await expect(limiter.before(other(99), now)).rejects.toMatchObject({ status: 429 });
    // The window ends: everything passes again.
    expect(await limiter.before(one, now + 60_000)).toBe(0);
  });
});

describe('secretsAreLong', () => {
  it('needs every secret to be 32 characters or more, or a sha256: digest, and at least one secret', () => {
    expect(secretsAreLong(['k'.repeat(32)])).toBe(true);
    expect(secretsAreLong([`sha256:${Buffer.alloc(32).toString('base64')}`, 'x'.repeat(43)])).toBe(true);
    expect(secretsAreLong(['k'.repeat(32), 'short'])).toBe(false);
    expect(secretsAreLong(['k'.repeat(31)])).toBe(false);
    expect(secretsAreLong([])).toBe(false);
  });
});
