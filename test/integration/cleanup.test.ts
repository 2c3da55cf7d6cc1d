/**
 * Clean-up keeps pace with issuance: with many expired rows in a SQLite file, one
 * run removes them all in small batches, yielding between batches, so that token requests are
 * answered while it runs (it never holds the event loop for the whole run).
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cleanUpExpired } from '../../src/stores/housekeeping.js';
import { newGrantRecord } from '../../src/stores/types.js';
import { nowSeconds } from '../../src/crypto/handles.js';
import { clientTokens, introspect, startSigil, type TestSigil } from '../helpers.js';

const EXPIRED = 40_000;
const BATCH = 500;
let sigil: TestSigil;
beforeAll(async () => {
  sigil = await startSigil();
});
afterAll(async () => sigil.close());

describe('clean-up of many expired rows', () => {
  it(`removes ${EXPIRED} expired rows in one run while token requests keep being answered; live rows stay`, async () => {
    const now = nowSeconds();
    const row = (expiresAt: number) =>
      newGrantRecord({
        key: randomBytes(32).toString('base64url'),
        type: 'reference_token',
        clientId: 'm2m-ref',
        data: { claims: {} },
        createdAt: now - 120,
        expiresAt,
      });
    for (let i = 0; i < EXPIRED; i += 5_000)
      await Promise.all(Array.from({ length: 5_000 }, () => sigil.context.store.grants.put(row(now - 60))));
    const live = await clientTokens(sigil, 'api1', ['m2m-ref', 'm2m-secret']);

    let done = false;
    const run = cleanUpExpired(
      sigil.context.store.maintenance,
      'test-node',
      { keyReloadSeconds: 60, cleanupIntervalSeconds: 300, batchSize: BATCH },
      now,
    ).finally(() => {
      done = true;
    });
    const answered: string[] = [];
    while (!done) answered.push((await clientTokens(sigil, 'api1', ['m2m-ref', 'm2m-secret'])).access_token);

    expect(await run).toBe(EXPIRED);
    // Requests got their turn between batches: more than one was answered during the run.
    expect(answered.length).toBeGreaterThan(1);
    for (const token of [live.access_token, ...answered])
      expect((await introspect(sigil, token)).json()).toMatchObject({ active: true });
    expect(await sigil.context.store.maintenance.deleteExpired(now, BATCH)).toBe(0);
  }, 60_000);
});
