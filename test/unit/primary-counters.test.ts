/**
 * The protocol of the failure counters a `sigil start --workers` worker keeps in the cluster primary
 * (so the limits hold for the whole deployment): requests and answers matched by id, one store for
 * every worker, a primary that does not answer or a closed channel failing the call instead of
 * hanging it. The channel here is
 * node:cluster's as the worker sees it (messages copied as JSON, delivered later); test/e2e/workers.test.ts
 * runs the real one.
 */
import { EventEmitter } from 'node:events';
import { describe, expect, it } from 'vitest';
import { type CredentialAttempt, FailureLimiter, MemoryFailureCounters } from '../../src/limits/failure-limiter.js';
import {
  answerCounterRequest,
  type CounterRequest,
  isCounterRequest,
  type PrimaryChannel,
  PrimaryFailureCounters,
} from '../../src/limits/primary-counters.js';
import { takeQuota } from '../../src/limits/request-quota.js';

const copy = <T>(message: T): T => JSON.parse(JSON.stringify(message)) as T;

/**
 * A worker's end of a channel to a primary that passes each request to `primary` (which may answer
 * with `reply`, in any order); `closed` makes every send fail as on a disconnected channel.
 */
function channelTo(
  primary: (request: unknown, reply: (message: unknown) => void) => void,
  closed = false,
): PrimaryChannel & { listeners(): number } {
  const worker = new EventEmitter();
  return {
    send: (message, _handle, _options, callback) => {
      const sent = copy(message);
      setImmediate(() => {
        if (closed) return callback(new Error('channel closed'));
        primary(sent, (answer) => worker.emit('message', copy(answer)));
        callback(null);
      });
      return !closed;
    },
    on: (event, listener) => worker.on(event, listener),
    off: (event, listener) => worker.off(event, listener),
    listeners: () => worker.listenerCount('message'),
  };
}

/** A primary answering every counter request from one `MemoryFailureCounters`, as `runPrimary` does. */
function primaryOf(store = new MemoryFailureCounters()) {
  return (request: unknown, reply: (message: unknown) => void) => {
    if (isCounterRequest(request)) void answerCounterRequest(store, request).then(reply);
  };
}

const LIMITS = {
  maxFailures: 3,
  windowSeconds: 60,
  addressMaxFailures: 100,
  identitySlowDownAfter: 100,
  maxDelaySeconds: 5,
};

describe('PrimaryFailureCounters', () => {
  it('two workers count against the primary’s one store: the third failure from either refuses on both', async () => {
    const primary = primaryOf();
    const [a, b] = [new PrimaryFailureCounters(channelTo(primary)), new PrimaryFailureCounters(channelTo(primary))];
    const [onA, onB] = [new FailureLimiter(LIMITS, a, async () => {}), new FailureLimiter(LIMITS, b, async () => {})];
    const attempt: CredentialAttempt = { address: '203.0.113.9', identity: 'client:m2m', identityWide: false };
    const now = Date.now();
    await onA.failed(attempt, now);
    await onB.failed(attempt, now);
    await onA.before(attempt, now);
    await onB.failed(attempt, now);
    for (const limiter of [onA, onB])
      await expect(limiter.before(attempt, now + 1000)).rejects.toMatchObject({
        status: 429,
        headers: { 'retry-after': '59' },
      });
    expect(await a.read(['address:203.0.113.9', 'never:counted'], now)).toEqual(
      new Map([['address:203.0.113.9', { failures: 3, resetAt: now + 60_000 }]]),
    );

    // Quotas too: 2 places, taken by two workers at once, refuse the third on either.
    const entries = [{ key: 'address:203.0.113.9', limit: 2 }];
    await Promise.all([takeQuota(a, entries, 60, now), takeQuota(b, entries, 60, now)]);
    for (const worker of [a, b])
      await expect(takeQuota(worker, entries, 60, now)).rejects.toMatchObject({ status: 429 });
    await a.close();
    await b.close();
  });

  it('holds capped budgets (claimCapped) for two workers together: concurrent claims never pass the budget, windows slide together, a success clears them', async () => {
    const primary = primaryOf();
    const [a, b] = [new PrimaryFailureCounters(channelTo(primary)), new PrimaryFailureCounters(channelTo(primary))];
    const [onA, onB] = [new FailureLimiter(LIMITS, a, async () => {}), new FailureLimiter(LIMITS, b, async () => {})];
    const others = 'ldap:corp:subject:x';
    const known = 'ldap:corp:subject:x:known-browsers';
    const strangers = [
      { key: others, max: 3 },
      { key: known, max: 0 },
    ];
    const now = Date.now();
    // Six claims at once from two workers: three are counted, three refused without a count.
    const claims = await Promise.allSettled(
      [...Array(6).keys()].map((i) => (i % 2 ? onA : onB).claimCapped(strangers, 60, now)),
    );
    expect(claims.filter((c) => c.status === 'fulfilled')).toHaveLength(3);
    expect(claims.filter((c) => c.status === 'rejected').map((c) => (c as PromiseRejectedResult).reason)).toEqual(
      Array(3).fill(expect.objectContaining({ status: 429 })),
    );
    expect(await a.read([`cap:${others}`], now)).toEqual(
      new Map([[`cap:${others}`, { failures: 3, resetAt: now + 60_000 }]]),
    );
    // The known browsers' share is still whole; charging it slides the others' window as well.
    await onB.claimCapped(
      [
        { key: known, max: 1 },
        { key: others, max: 3 },
      ],
      60,
      now + 50_000,
    );
    for (const limiter of [onA, onB]) {
      await expect(limiter.claimCapped(strangers, 60, now + 100_000)).rejects.toMatchObject({
        status: 429,
        headers: { 'retry-after': '10' },
      });
      await expect(
        limiter.claimCapped(
          [
            { key: known, max: 1 },
            { key: others, max: 3 },
          ],
          60,
          now + 100_000,
        ),
      ).rejects.toMatchObject({ status: 429 });
    }
    await onA.capSucceeded([others, known]);
    expect(await a.read([`cap:${others}`, `cap:${known}`], now + 50_000)).toEqual(new Map());
    await onA.claimCapped(strangers, 60, now + 100_000);
    await a.close();
    await b.close();
  });

  it('matches answers to requests by id, whatever order the primary answers in', async () => {
    const store = new MemoryFailureCounters();
    const now = Date.now();
    await store.increment(['one'], 60_000, now);
    await store.increment(['two'], 60_000, now);
    await store.increment(['two'], 60_000, now);
    const held: Array<() => void> = [];
    const counters = new PrimaryFailureCounters(
      channelTo((request, reply) => {
        if (isCounterRequest(request)) held.push(() => void answerCounterRequest(store, request).then(reply));
      }),
    );
    const reads = [counters.read(['one'], now), counters.read(['two'], now)];
    await new Promise((resolve) => setImmediate(resolve));
    expect(held).toHaveLength(2);
    for (const answer of held.reverse()) answer();
    const [one, two] = await Promise.all(reads);
    expect(one?.get('one')?.failures).toBe(1);
    expect(two?.get('two')?.failures).toBe(2);
    await counters.close();
  });

  it('ignores messages that are not answers to its pending requests', async () => {
    const seen: CounterRequest[] = [];
    let replyTo: ((message: unknown) => void) | undefined;
    const counters = new PrimaryFailureCounters(
      channelTo((request, reply) => {
        seen.push(request as CounterRequest);
        replyTo = reply;
      }),
      200,
    );
    const read = counters.read(['k'], Date.now());
    await new Promise((resolve) => setImmediate(resolve));
    replyTo?.({ sigil: 'listening', address: 'x' });
    replyTo?.({ sigil: 'counters', id: 999, windows: [['k', { failures: 50, resetAt: 0 }]] });
    replyTo?.({ sigil: 'counters', id: seen[0]?.id, windows: [['k', { failures: 1, resetAt: 5 }]] });
    expect((await read).get('k')).toEqual({ failures: 1, resetAt: 5 });
    await counters.close();
  });

  it('fails a call, instead of waiting for ever, when the primary does not answer in time or the channel is closed', async () => {
    const silent = new PrimaryFailureCounters(
      channelTo(() => {}),
      50,
    );
    const unanswered = silent.increment(['k'], 60_000, Date.now());
    await expect(unanswered).rejects.toThrow('failure counters: the primary process did not answer within 50 ms');
    // The caller sees a standard 503 with Retry-After, never a 500 (the reason stays in the message).
    await expect(unanswered).rejects.toMatchObject({
      code: 'temporarily_unavailable',
      status: 503,
      headers: { 'retry-after': '1' },
    });
    const cut = new PrimaryFailureCounters(channelTo(primaryOf(), true), 10_000);
    await expect(cut.read(['k'], Date.now())).rejects.toThrow(
      'failure counters: cannot reach the primary process (channel closed)',
    );
    await silent.close();
    await cut.close();
  });

  it('close fails the calls still waiting and stops listening', async () => {
    const channel = channelTo(() => {});
    const counters = new PrimaryFailureCounters(channel, 10_000);
    expect(channel.listeners()).toBe(1);
    const read = counters.read(['k'], Date.now());
    await counters.close();
    await expect(read).rejects.toThrow('failure counters: closed');
    expect(channel.listeners()).toBe(0);
  });

  it('refuses a process without an IPC channel', () => {
    expect(() => new PrimaryFailureCounters({ on: () => undefined, off: () => undefined })).toThrow('no IPC channel');
  });
});
