import { randomInt, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FailureLimiter, RedisFailureCounters } from '../../src/limits/failure-limiter.js';
import { basic, form, startSigil } from '../helpers.js';

// Redis runs at 127.0.0.1:6379 on the development machines and in CI.
const REDIS = 'redis://127.0.0.1:6379';

describe('failure limits shared through Redis', () => {
  it('counts failures of one identity and address across two limiters (two nodes) and blocks both; the identity-wide count only delays', async () => {
    const limits = {
      maxFailures: 3,
      windowSeconds: 60,
      addressMaxFailures: 100,
      identitySlowDownAfter: 3,
      maxDelaySeconds: 5,
    };
    const waited: number[] = [];
    const wait = async (ms: number) => void waited.push(ms);
    const a = new FailureLimiter(limits, new RedisFailureCounters(REDIS), wait);
    const b = new FailureLimiter(limits, new RedisFailureCounters(REDIS), wait);
    const attempt = { address: `test-${randomUUID()}`, identity: `client:${randomUUID()}`, identityWide: true };
    try {
      await a.failed(attempt);
      await b.failed(attempt);
      await a.before(attempt);
      await b.failed(attempt);
      await expect(a.before(attempt)).rejects.toMatchObject({ code: 'temporarily_unavailable', status: 429 });
      const err = await b.before(attempt).catch((e: unknown) => e);
      expect(err).toMatchObject({ status: 429 });
      expect(Number((err as { headers: Record<string, string> }).headers['retry-after'])).toBeGreaterThan(0);
      // From another address the identity is only slowed down (3 failures counted on two nodes).
      expect(await b.before({ ...attempt, address: `test-${randomUUID()}` })).toBe(100);
      expect(waited).toEqual([100]);
    } finally {
      await a.counters.close();
      await b.counters.close();
    }
  });

  it('holds capped budgets (claimCapped) across two nodes: concurrent claims never pass a budget, windows slide together, a success clears them', async () => {
    const limits = {
      maxFailures: 3,
      windowSeconds: 60,
      addressMaxFailures: 100,
      identitySlowDownAfter: 3,
      maxDelaySeconds: 5,
    };
    const a = new FailureLimiter(limits, new RedisFailureCounters(REDIS));
    const b = new FailureLimiter(limits, new RedisFailureCounters(REDIS));
    const others = `ldap:corp:subject:${randomUUID()}`;
    const known = `${others}:known-browsers`;
    const strangers = [
      { key: others, max: 3 },
      { key: known, max: 0 },
    ];
    const familiar = [
      { key: known, max: 1 },
      { key: others, max: 3 },
    ];
    try {
      // Redis keeps the windows (its own expiry, its own clock), so real time passes here. A 30 s
      // window with a 3 s pause: the last failure surely falls inside it, and the window left
      // after it (> 27 s if it slid; at most 27 s if not) tells the two apart.
      const WINDOW = 30;
      const claims = await Promise.allSettled(
        [...Array(8).keys()].map((i) => (i % 2 ? a : b).claimCapped(strangers, WINDOW)),
      );
      expect(claims.filter((c) => c.status === 'fulfilled')).toHaveLength(3);
      expect(claims.filter((c) => c.status === 'rejected').map((c) => (c as PromiseRejectedResult).reason)).toEqual(
        Array(5).fill(expect.objectContaining({ status: 429 })),
      );
      await new Promise((r) => setTimeout(r, 3000));
      // A known browser's share is untouched by the strangers; charging it slides their window too.
      await b.claimCapped(familiar, WINDOW);
      const err = await a.claimCapped(strangers, WINDOW).catch((e: unknown) => e);
      expect(err).toMatchObject({ status: 429 });
      expect(Number((err as { headers: Record<string, string> }).headers['retry-after'])).toBeGreaterThan(WINDOW - 3);
      await expect(a.claimCapped(familiar, WINDOW)).rejects.toMatchObject({ status: 429 });
      await b.capSucceeded([others, known]);
      await a.claimCapped(familiar, WINDOW);
      await a.capSucceeded([others, known]);
    } finally {
      await a.counters.close();
      await b.counters.close();
    }
  });

  it('fails closed when Redis cannot be reached: 503 with Retry-After before a credential is checked, and a failure is never left uncounted', async () => {
    // Port 1 on loopback: nothing listens, every connection is refused.
    const limiter = new FailureLimiter(
      { maxFailures: 3, windowSeconds: 60, addressMaxFailures: 100, identitySlowDownAfter: 3, maxDelaySeconds: 5 },
      new RedisFailureCounters('redis://127.0.0.1:1'),
    );
    const attempt = { address: 'test-down', identity: 'client:down', identityWide: true };
    try {
      const unavailable = { code: 'temporarily_unavailable', status: 503, headers: { 'retry-after': '1' } };
      await expect(limiter.before(attempt)).rejects.toMatchObject(unavailable);
      await expect(limiter.failed(attempt)).rejects.toMatchObject(unavailable);
    } finally {
      await limiter.counters.close().catch(() => {});
    }
  });

  it('a provider whose Redis is down answers 503 temporarily_unavailable at the token endpoint, never a token or a 401 without limits', async () => {
    const sigil = await startSigil(
      {
        clients: [
          {
            clientId: 'down',
            clientSecrets: ['right'],
            allowedGrantTypes: ['client_credentials'],
            allowedScopes: ['api1'],
          },
        ],
      },
      { redisUrl: 'redis://127.0.0.1:1' },
    );
    try {
      for (const secret of ['wrong', 'right']) {
        const res = await sigil.app.inject({
          method: 'POST',
          url: '/connect/token',
          headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: basic('down', secret) },
          payload: form({ grant_type: 'client_credentials', scope: 'api1' }),
        });
        expect(res.statusCode).toBe(503);
        expect(res.headers['retry-after']).toBe('1');
        expect(res.json()).toMatchObject({ error: 'temporarily_unavailable' });
        expect(res.body).not.toContain('Redis');
      }
    } finally {
      await sigil.close();
    }
  });

  describe('two providers on one Redis', () => {
    let nodeA: Awaited<ReturnType<typeof startSigil>>;
    let nodeB: Awaited<ReturnType<typeof startSigil>>;
    const clientId = `m2m-${randomUUID().slice(0, 8)}`;
    // Counters outlive a run in Redis: each run uses its own client and address.
    const address = `10.${randomInt(256)}.${randomInt(256)}.${randomInt(256)}`;
    const overrides = {
      rateLimits: { maxFailures: 4, windowSeconds: 60 },
      clients: [
        { clientId, clientSecrets: ['right'], allowedGrantTypes: ['client_credentials'], allowedScopes: ['api1'] },
      ],
    };
    beforeAll(async () => {
      nodeA = await startSigil(overrides, { redisUrl: REDIS });
      nodeB = await startSigil(overrides, { redisUrl: REDIS });
    });
    afterAll(async () => {
      await nodeA.close();
      await nodeB.close();
    });

    const otherAddress = `10.${randomInt(256)}.${randomInt(256)}.${randomInt(256)}`;
    const attempt = (node: typeof nodeA, secret: string, remoteAddress = address) =>
      node.app.inject({
        method: 'POST',
        url: '/connect/token',
        remoteAddress,
        headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: basic(clientId, secret) },
        payload: form({ grant_type: 'client_credentials' }),
      });

    it('an address blocked for a client by failures on node A is blocked on node B, even with the right secret; another address is not', async () => {
      for (const node of [nodeA, nodeB, nodeA, nodeB]) expect((await attempt(node, 'wrong')).statusCode).toBe(401);
      const blocked = await attempt(nodeB, 'right');
      expect(blocked.statusCode).toBe(429);
      expect(blocked.headers['retry-after']).toBeDefined();
      expect((await attempt(nodeA, 'right', otherAddress)).statusCode).toBe(200);
    });
  });
});
