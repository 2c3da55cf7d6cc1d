import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStore } from '../../src/stores/sql.js';
import type { Store } from '../../src/stores/types.js';
import { ReplayCache } from '../../src/limits/replay-cache.js';

describe('ReplayCache over the store', () => {
  let store: Store;
  beforeAll(async () => {
    store = await openStore('memory');
  });
  afterAll(async () => store.close());

  it('accepts a jti once per kind and issuer, and refuses every reuse, concurrent ones included', async () => {
    const cache = new ReplayCache(store.grants);
    const now = 1_800_000_000;
    const uses = await Promise.all(
      Array.from({ length: 10 }, () => cache.firstUse('client_assertion', 'c1', 'j1', now + 60, now)),
    );
    expect(uses.filter(Boolean)).toHaveLength(1);
    expect(await cache.firstUse('client_assertion', 'c1', 'j1', now + 60, now)).toBe(false);
    // The same jti from another client, or as a DPoP proof, is another identifier.
    expect(await cache.firstUse('client_assertion', 'c2', 'j1', now + 60, now)).toBe(true);
    expect(await cache.firstUse('dpop_proof', 'c1', 'j1', now + 60, now)).toBe(true);
  });
});
