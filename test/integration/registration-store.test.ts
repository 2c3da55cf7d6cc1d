/**
 * The registration records and initial access tokens of dynamic client registration
 * (stores/client-registrations.ts, migration 0013_dynamic_clients) on SQLite and PostgreSQL: a
 * registration stores the client and its record together and takes one use of its initial
 * access token atomically (concurrent registrations never exceed the cap), an update is
 * conditional on the current token, last use is recorded only when older than asked, unused
 * clients go with their settings.
 */
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStore } from '../../src/stores/sql.js';
import type { Store } from '../../src/stores/types.js';
import { dropSchema, POSTGRES_URL, tempDir, uniqueSchema } from '../helpers.js';

const sqliteDir = tempDir();
const pgSchema = uniqueSchema('sigil_dcr');
const backends = [
  {
    name: 'SQLite file',
    url: () => `sqlite:${join(sqliteDir.dir, 'store.db')}`,
    cleanup: async () => sqliteDir.cleanup(),
  },
  {
    name: 'PostgreSQL',
    url: () => `${POSTGRES_URL}?schema=${pgSchema}&poolSize=10`,
    cleanup: () => dropSchema(pgSchema),
  },
];
const NOW = 2_000_000_000;
const hash = () => randomBytes(32).toString('base64url');
const registration = (clientId: string, tokenHash = hash()) => ({
  clientId,
  tokenHash,
  metadata: { redirect_uris: ['https://rp.example/cb'] },
  issuedAt: NOW,
  lastUsedAt: NOW,
});
const config = (clientId: string) => ({ clientId, allowedGrantTypes: ['authorization_code'] });

describe.each(backends)('registration store on $name', (backend) => {
  let store: Store;
  beforeAll(async () => {
    store = await openStore(backend.url());
  });
  afterAll(async () => {
    await store.close();
    await backend.cleanup();
  });

  it('registers a client with its record, reads them back with numbers as numbers', async () => {
    const r = registration(`c-${hash().slice(0, 8)}`);
    expect(await store.registrations.register(config(r.clientId), r, undefined, NOW)).toBe(true);
    expect(await store.registrations.find(r.clientId)).toEqual(r);
    expect((await store.clients.listClients()).some((c) => c.clientId === r.clientId)).toBe(true);
    expect(await store.registrations.ids()).toContain(r.clientId);
  });

  it("takes an initial access token's registrations atomically: concurrent requests never pass its cap, an expired token none", async () => {
    const token = hash();
    await store.registrations.addInitialToken({
      tokenHash: token,
      kind: 'minted',
      maxRegistrations: 3,
      registrations: 0,
      expiresAt: NOW + 60,
    });
    const ids = Array.from({ length: 10 }, (_, i) => `cap-${i}-${hash().slice(0, 6)}`);
    const results = await Promise.all(
      ids.map((id) => store.registrations.register(config(id), registration(id), token, NOW)),
    );
    expect(results.filter(Boolean)).toHaveLength(3);
    expect((await store.registrations.findInitialToken(token))?.registrations).toBe(3);
    // The refused ones stored nothing.
    const stored = new Set((await store.clients.listClients()).map((c) => c.clientId));
    expect(ids.filter((id) => stored.has(id))).toHaveLength(3);
    const expired = hash();
    await store.registrations.addInitialToken({
      tokenHash: expired,
      kind: 'minted',
      maxRegistrations: 3,
      registrations: 0,
      expiresAt: NOW,
    });
    expect(await store.registrations.register(config('late'), registration('late'), expired, NOW)).toBe(false);
  });

  it('updates only with the current token hash: of two updates with one token, one wins', async () => {
    const first = hash();
    const r = registration(`u-${hash().slice(0, 8)}`, first);
    await store.registrations.register(config(r.clientId), r, undefined, NOW);
    const outcomes = await Promise.all([
      store.registrations.update(
        r.clientId,
        first,
        { ...config(r.clientId), clientName: 'A' },
        { client_name: 'A' },
        hash(),
        NOW + 1,
      ),
      store.registrations.update(
        r.clientId,
        first,
        { ...config(r.clientId), clientName: 'B' },
        { client_name: 'B' },
        hash(),
        NOW + 1,
      ),
    ]);
    expect(outcomes.filter(Boolean)).toHaveLength(1);
    const winner = outcomes[0] ? 'A' : 'B';
    expect((await store.registrations.find(r.clientId))?.metadata).toEqual({ client_name: winner });
    expect((await store.clients.listClients()).find((c) => c.clientId === r.clientId)?.clientName).toBe(winner);
  });

  it('records use only when older than asked, and removes unused clients with their settings', async () => {
    const r = registration(`t-${hash().slice(0, 8)}`);
    await store.registrations.register(config(r.clientId), r, undefined, NOW);
    await store.registrations.touch(r.clientId, NOW + 100, NOW - 86_400);
    expect((await store.registrations.find(r.clientId))?.lastUsedAt).toBe(NOW);
    await store.registrations.touch(r.clientId, NOW + 90_000, NOW + 90_000 - 86_400);
    expect((await store.registrations.find(r.clientId))?.lastUsedAt).toBe(NOW + 90_000);
    expect(await store.registrations.removeUnused(NOW + 90_000, NOW, 1000)).not.toContain(r.clientId);
    expect(await store.registrations.removeUnused(NOW + 90_001, NOW, 1000)).toContain(r.clientId);
    expect(await store.registrations.find(r.clientId)).toBeUndefined();
    expect((await store.clients.listClients()).some((c) => c.clientId === r.clientId)).toBe(false);
    expect(await store.registrations.remove(r.clientId)).toBe(false);
  });
});
