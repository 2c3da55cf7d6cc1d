/**
 * Signing key lifecycle (OIDC Core §10.1.1): statuses over time, generation on first
 * load, rotation with the old key kept published for its retention period, private keys encrypted
 * at rest with the data key, and the lease-guarded clean-up of expired grants.
 */
import { randomBytes } from 'node:crypto';
import { CompactSign, compactDecrypt, decodeProtectedHeader, generateKeyPair, jwtVerify, type JWK } from 'jose';
import { afterEach, describe, expect, it } from 'vitest';
import { describeKeys, KeyRing, type KeyPolicy, parseDataKey, rotateKeys } from '../../src/keys/keys.js';
import { cleanUpExpired } from '../../src/stores/housekeeping.js';
import { openStore } from '../../src/stores/sql.js';
import type { GrantRecord, KeyStore, Store, StoredKey } from '../../src/stores/types.js';
import { nowSeconds } from '../../src/crypto/handles.js';

const opened: Store[] = [];
afterEach(async () => {
  for (const s of opened.splice(0)) await s.close();
});

async function memoryStore(): Promise<Store> {
  const store = await openStore('memory');
  opened.push(store);
  return store;
}

const POLICY: KeyPolicy = { propagationSeconds: 100, retentionSeconds: 1000, rotationSeconds: 1_000_000 };

function key(
  kid: string,
  alg: string,
  createdAt: number,
  activatesAt: number,
  retiredAt: number | null = null,
): StoredKey {
  return { kid, alg, privateKey: '{}', publicJwk: { kty: 'EC' }, createdAt, activatesAt, retiredAt };
}

/** kid → status (and publishedUntil) at `now`. */
function statuses(keys: StoredKey[], now: number): Record<string, string> {
  return Object.fromEntries(
    describeKeys(keys, POLICY, now).map((k) => [
      k.kid,
      `${k.status}${k.publishedUntil === null ? '' : `@${k.publishedUntil}`}`,
    ]),
  );
}

describe('describeKeys', () => {
  const first = key('k1', 'ES256', 0, 0);
  const second = key('k2', 'ES256', 500, 600);
  const rsa = key('r1', 'RS256', 0, 0);

  it('pending → active → retired → expired, per algorithm, with explicit times', () => {
    const keys = [first, second, rsa];
    expect(statuses(keys, 0)).toEqual({ k1: 'active', k2: 'pending', r1: 'active' });
    // k2 is published (pending) from its creation until it activates.
    expect(statuses(keys, 599)).toEqual({ k1: 'active', k2: 'pending', r1: 'active' });
    // At activation k2 signs; k1 is retired from that moment, published for the retention period.
    expect(statuses(keys, 600)).toEqual({ k1: 'retired@1600', k2: 'active', r1: 'active' });
    expect(statuses(keys, 1599)).toEqual({ k1: 'retired@1600', k2: 'active', r1: 'active' });
    expect(statuses(keys, 1600)).toEqual({ k1: 'expired@1600', k2: 'active', r1: 'active' });
    expect(statuses(keys, 10_000_000)).toEqual({ k1: 'expired@1600', k2: 'active', r1: 'active' });
  });

  it('a key retired by hand is retired from its retiredAt and expires after the retention period', () => {
    const before = [first, second, key('r1', 'RS256', 0, 0), key('r2', 'RS256', 650, 750)];
    expect(statuses(before, 699)).toEqual({ k1: 'retired@1600', k2: 'active', r1: 'active', r2: 'pending' });
    // `sigil keys retire r1` at 700.
    const after = [first, second, key('r1', 'RS256', 0, 0, 700), key('r2', 'RS256', 650, 750)];
    expect(statuses(after, 700)).toEqual({ k1: 'retired@1600', k2: 'active', r1: 'retired@1700', r2: 'pending' });
    expect(statuses(after, 750)).toEqual({ k1: 'retired@1600', k2: 'active', r1: 'retired@1700', r2: 'active' });
    expect(statuses(after, 1699)).toEqual({ k1: 'expired@1600', k2: 'active', r1: 'retired@1700', r2: 'active' });
    expect(statuses(after, 1700)).toEqual({ k1: 'expired@1600', k2: 'active', r1: 'expired@1700', r2: 'active' });
  });

  it('keys made in the same second to activate in the same second: the greater kid signs, whatever order the store lists them in', () => {
    const a = key('kid-a', 'ES256', 10, 10);
    const b = key('kid-b', 'ES256', 10, 10);
    for (const order of [
      [a, b],
      [b, a],
    ])
      expect(statuses(order, 10)).toEqual({ 'kid-a': 'retired@1010', 'kid-b': 'active' });
    // The creation time still comes before the kid, the activation before both.
    expect(statuses([key('kid-z', 'ES256', 9, 10), b], 10)).toEqual({ 'kid-z': 'retired@1010', 'kid-b': 'active' });
    expect(statuses([key('kid-z', 'ES256', 10, 9), b], 10)).toEqual({ 'kid-z': 'retired@1010', 'kid-b': 'active' });
  });

  it('retiring the only active key leaves none active; a pending key retired by hand never signs', () => {
    // k2 was retired at 250 while pending, k1 at 300 while active.
    const keys = [key('k1', 'ES256', 0, 0, 300), key('k2', 'ES256', 200, 400, 250)];
    expect(statuses(keys, 300)).toEqual({ k1: 'retired@1300', k2: 'retired@1250' });
    expect(statuses(keys, 500)).toEqual({ k1: 'retired@1300', k2: 'retired@1250' });
    expect(statuses(keys, 1300)).toEqual({ k1: 'expired@1300', k2: 'expired@1250' });
  });
});

describe('KeyRing', () => {
  it('load generates one key per algorithm, signing at once, and signs with the first algorithm', async () => {
    const store = await memoryStore();
    const before = nowSeconds();
    const ring = await KeyRing.load(store.keys, ['ES256', 'RS256'], POLICY);
    const stored = await store.keys.listKeys();
    expect(stored.map((k) => k.alg).sort()).toEqual(['ES256', 'RS256']);
    for (const k of stored) {
      expect(k.activatesAt).toBe(k.createdAt);
      expect(k.createdAt).toBeGreaterThanOrEqual(before);
      expect(k.retiredAt).toBeNull();
      expect(k.publicJwk).not.toHaveProperty('d');
    }
    const es = stored.find((k) => k.alg === 'ES256')!;
    const rs = stored.find((k) => k.alg === 'RS256')!;
    expect(ring.defaultAlgorithm).toBe('ES256');
    expect(
      ring
        .jwks()
        .keys.map((k) => [k.kid, k.alg, k.use])
        .sort(),
    ).toEqual(
      [
        [es.kid, 'ES256', 'sig'],
        [rs.kid, 'RS256', 'sig'],
      ].sort(),
    );
    for (const k of ring.jwks().keys) expect(k).not.toHaveProperty('d');

    const token = await ring.sign({ sub: 'x' }, 'JWT');
    expect(decodeProtectedHeader(token)).toEqual({ alg: 'ES256', kid: es.kid, typ: 'JWT' });
    expect((await jwtVerify(token, ring.verificationKeys)).payload.sub).toBe('x');
    const rsaToken = await ring.sign({ sub: 'y' }, 'at+jwt', 'RS256');
    expect(decodeProtectedHeader(rsaToken)).toEqual({ alg: 'RS256', kid: rs.kid, typ: 'at+jwt' });

    // A second node on the same store creates nothing and signs with the same key.
    const again = await KeyRing.load(store.keys, ['ES256', 'RS256'], POLICY);
    expect(await store.keys.listKeys()).toHaveLength(2);
    expect(decodeProtectedHeader(await again.sign({}, 'JWT')).kid).toBe(es.kid);
    expect((await jwtVerify(token, again.verificationKeys)).payload.sub).toBe('x');
  });

  it('load refuses an empty algorithm list', async () => {
    const store = await memoryStore();
    await expect(KeyRing.load(store.keys, [], POLICY)).rejects.toThrow(/signingAlgorithms is empty/);
  });

  it('rotation with propagation 0 switches the signing kid; the old key stays published for the retention period', async () => {
    const store = await memoryStore();
    const policy: KeyPolicy = { propagationSeconds: 0, retentionSeconds: 3600, rotationSeconds: 1_000_000 };
    const ring = await KeyRing.load(store.keys, ['ES256'], policy);
    const node2 = await KeyRing.load(store.keys, ['ES256'], policy);
    const [old] = await store.keys.listKeys();
    const before = await ring.sign({ sub: 'before' }, 'at+jwt');
    expect(decodeProtectedHeader(before).kid).toBe(old!.kid);

    // Rotate one second later, as `sigil keys rotate` does (a rotation in the old key's own second
    // activates a second later: see 'two rotations within one second' below).
    const t = old!.createdAt + 1;
    const [added] = await rotateKeys(store.keys, ['ES256'], policy, t);
    expect(added!.activatesAt).toBe(t);
    await ring.refresh(t);
    await node2.refresh(t);

    const after = await ring.sign({ sub: 'after' }, 'at+jwt');
    expect(decodeProtectedHeader(after).kid).toBe(added!.kid);
    expect(decodeProtectedHeader(await node2.sign({}, 'at+jwt')).kid).toBe(added!.kid);
    expect(
      ring
        .jwks()
        .keys.map((k) => k.kid)
        .sort(),
    ).toEqual([old!.kid, added!.kid].sort());
    expect(node2.jwks()).toEqual(ring.jwks());
    // Tokens signed before the rotation still verify, on both nodes; new ones too.
    expect((await jwtVerify(before, ring.verificationKeys)).payload.sub).toBe('before');
    expect((await jwtVerify(before, node2.verificationKeys)).payload.sub).toBe('before');
    expect((await jwtVerify(after, node2.verificationKeys)).payload.sub).toBe('after');
    expect(describeKeys(await store.keys.listKeys(), policy, t).map((k) => [k.kid, k.status])).toEqual(
      expect.arrayContaining([
        [old!.kid, 'retired'],
        [added!.kid, 'active'],
      ]),
    );

    // Still published at the last second of the retention period, gone after it.
    await ring.refresh(t + 3599);
    expect(ring.jwks().keys.map((k) => k.kid)).toContain(old!.kid);
    await ring.refresh(t + 3600);
    expect(ring.jwks().keys.map((k) => k.kid)).toEqual([added!.kid]);
    await expect(jwtVerify(before, ring.verificationKeys)).rejects.toThrow();
    expect((await jwtVerify(after, ring.verificationKeys)).payload.sub).toBe('after');
  });

  it('two rotations within one second (propagation 0): each successor activates strictly after the key it supersedes, and every node signs with it', async () => {
    const store = await memoryStore();
    const policy: KeyPolicy = { propagationSeconds: 0, retentionSeconds: 3600, rotationSeconds: 1_000_000 };
    const ring = await KeyRing.load(store.keys, ['ES256'], policy);
    const node2 = await KeyRing.load(store.keys, ['ES256'], policy);
    const [first] = await store.keys.listKeys();
    // In the first key's own second: twice.
    const t = first!.createdAt;
    const [second] = await rotateKeys(store.keys, ['ES256'], policy, t);
    const [third] = await rotateKeys(store.keys, ['ES256'], policy, t);
    expect([second!.activatesAt, third!.activatesAt]).toEqual([t + 1, t + 2]);
    for (const [at, signer] of [
      [t, first],
      [t + 1, second],
      [t + 2, third],
    ] as const) {
      await ring.refresh(at);
      await node2.refresh(at);
      expect(decodeProtectedHeader(await ring.sign({}, 'JWT')).kid).toBe(signer!.kid);
      expect(decodeProtectedHeader(await node2.sign({}, 'JWT')).kid).toBe(signer!.kid);
    }
    // With a propagation period, a second rotation within the second activates a second after the
    // first's successor; a rotation without one, after the pending keys: the latest rotation signs last.
    const [p1] = await rotateKeys(store.keys, ['ES256'], POLICY, t + 2);
    const [p2] = await rotateKeys(store.keys, ['ES256'], POLICY, t + 2);
    const [p3] = await rotateKeys(store.keys, ['ES256'], policy, t + 3);
    expect([p1!.activatesAt, p2!.activatesAt, p3!.activatesAt]).toEqual([t + 102, t + 103, t + 104]);
    const active = async (at: number) =>
      describeKeys(await store.keys.listKeys(), POLICY, at).find((k) => k.status === 'active')?.kid;
    expect([await active(t + 101), await active(t + 102), await active(t + 103), await active(t + 104)]).toEqual([
      third!.kid,
      p1!.kid,
      p2!.kid,
      p3!.kid,
    ]);
  });

  it('with a propagation period, a rotated key is published first and signs only once it activates', async () => {
    const store = await memoryStore();
    const ring = await KeyRing.load(store.keys, ['ES256'], POLICY);
    const [old] = await store.keys.listKeys();
    const t = old!.createdAt + 1;
    const [added] = await rotateKeys(store.keys, ['ES256'], POLICY, t);
    expect(added!.activatesAt).toBe(t + 100);
    await ring.refresh(t);
    expect(
      ring
        .jwks()
        .keys.map((k) => k.kid)
        .sort(),
    ).toEqual([old!.kid, added!.kid].sort());
    expect(decodeProtectedHeader(await ring.sign({}, 'JWT')).kid).toBe(old!.kid);
    await ring.refresh(t + 100);
    expect(decodeProtectedHeader(await ring.sign({}, 'JWT')).kid).toBe(added!.kid);
  });

  it('refresh creates a successor for a key older than rotationSeconds, and a key for an algorithm with none active', async () => {
    const store = await memoryStore();
    const policy: KeyPolicy = { propagationSeconds: 100, retentionSeconds: 1000, rotationSeconds: 5000 };
    const ring = await KeyRing.load(store.keys, ['ES256'], policy);
    const [old] = await store.keys.listKeys();
    await ring.refresh(old!.activatesAt + 4999);
    expect(await store.keys.listKeys()).toHaveLength(1);
    await ring.refresh(old!.activatesAt + 5000);
    const keys = await store.keys.listKeys();
    expect(keys).toHaveLength(2);
    expect(keys[1]!.activatesAt).toBe(old!.activatesAt + 5100);
    // One successor only, however often the nodes refresh meanwhile.
    await ring.refresh(old!.activatesAt + 5050);
    expect(await store.keys.listKeys()).toHaveLength(2);

    // Retiring the active key by hand: the next refresh creates one that signs at once.
    const now = old!.activatesAt + 5060;
    expect(await store.keys.retireKey(old!.kid, now)).toBe(true);
    await ring.refresh(now);
    const after = describeKeys(await store.keys.listKeys(), policy, now);
    const active = after.filter((k) => k.status === 'active');
    expect(active).toHaveLength(1);
    expect(active[0]!.activatesAt).toBe(now);
    expect(decodeProtectedHeader(await ring.sign({}, 'JWT')).kid).toBe(active[0]!.kid);
    expect(ring.jwks().keys.map((k) => k.kid)).toContain(old!.kid);
  });

  it('verifies a JWT of a key another node added since its last read; made-up kids arriving together cost one read of the store', async () => {
    const store = await memoryStore();
    let reads = 0;
    const counted: KeyStore = {
      listKeys: () => {
        reads++;
        return store.keys.listKeys();
      },
      addKey: (k) => store.keys.addKey(k),
      retireKey: (kid, now) => store.keys.retireKey(kid, now),
    };
    const policy: KeyPolicy = { propagationSeconds: 0, retentionSeconds: 3600, rotationSeconds: 1_000_000 };
    const ring = await KeyRing.load(counted, ['ES256'], policy);
    const node2 = await KeyRing.load(store.keys, ['ES256'], policy);
    // node2 adds a key that signs at once (as two workers that both find no signing key do), and
    // signs with it before `ring` reads the store again.
    const [old] = await store.keys.listKeys();
    const t = old!.createdAt + 1;
    const [added] = await rotateKeys(store.keys, ['ES256'], policy, t, true);
    await node2.refresh(t);
    const token = await node2.sign({ sub: 'new key' }, 'at+jwt');
    expect(decodeProtectedHeader(token).kid).toBe(added!.kid);
    expect(ring.jwks().keys.map((k) => k.kid)).toEqual([old!.kid]);
    expect((await jwtVerify(token, ring.verificationKeys)).payload.sub).toBe('new key');
    expect(
      ring
        .jwks()
        .keys.map((k) => k.kid)
        .sort(),
    ).toEqual([old!.kid, added!.kid].sort());

    // Forged tokens with made-up kids: refused; those arriving until the next read starts (at the
    // earliest one interval after the last) share it.
    const { privateKey } = await generateKeyPair('ES256');
    const forged = await Promise.all(
      Array.from({ length: 20 }, () =>
        new CompactSign(new TextEncoder().encode('{"sub":"forged"}'))
          .setProtectedHeader({ alg: 'ES256', kid: randomBytes(8).toString('hex') })
          .sign(privateKey),
      ),
    );
    const before = reads;
    const results = await Promise.allSettled(forged.map((jwt) => jwtVerify(jwt, ring.verificationKeys)));
    expect(results.map((r) => (r.status === 'rejected' ? (r.reason as { code?: string }).code : 'verified'))).toEqual(
      Array(20).fill('ERR_JWKS_NO_MATCHING_KEY'),
    );
    expect(reads - before).toBe(1);
  });
});

describe('private keys encrypted with the data key', () => {
  it('are stored as a dir/A256GCM JWE and round-trip with the same data key', async () => {
    const store = await memoryStore();
    const dataKey = new Uint8Array(randomBytes(32));
    const policy = { ...POLICY, dataKey };
    const ring = await KeyRing.load(store.keys, ['ES256', 'RS256'], policy);
    const stored = await store.keys.listKeys();
    for (const k of stored) {
      expect(k.privateKey.split('.')).toHaveLength(5);
      expect(k.privateKey).not.toContain('"d"');
      expect(decodeProtectedHeader(k.privateKey)).toMatchObject({ alg: 'dir', enc: 'A256GCM', kid: k.kid });
      const jwk = JSON.parse(new TextDecoder().decode((await compactDecrypt(k.privateKey, dataKey)).plaintext)) as JWK;
      expect(jwk.d).toBeTruthy();
    }
    const token = await ring.sign({ sub: 'enc' }, 'JWT');
    // Another node with the same data key decrypts the stored keys and signs with the same one.
    const node2 = await KeyRing.load(store.keys, ['ES256', 'RS256'], policy);
    const token2 = await node2.sign({ sub: 'enc2' }, 'JWT');
    expect(decodeProtectedHeader(token2).kid).toBe(decodeProtectedHeader(token).kid);
    expect((await jwtVerify(token2, ring.verificationKeys)).payload.sub).toBe('enc2');
    expect((await jwtVerify(token, node2.verificationKeys)).payload.sub).toBe('enc');
  });

  it('fail to load with a clear error when the data key is missing or wrong', async () => {
    const store = await memoryStore();
    await KeyRing.load(store.keys, ['ES256'], { ...POLICY, dataKey: new Uint8Array(randomBytes(32)) });
    await expect(KeyRing.load(store.keys, ['ES256'], POLICY)).rejects.toThrow(
      'signing keys are encrypted: set SIGIL_DATA_KEY',
    );
    await expect(
      KeyRing.load(store.keys, ['ES256'], { ...POLICY, dataKey: new Uint8Array(randomBytes(32)) }),
    ).rejects.toThrow('signing keys cannot be decrypted: SIGIL_DATA_KEY is not the key they were encrypted with');
    // Nothing was added by the failed loads.
    expect(await store.keys.listKeys()).toHaveLength(1);
  });

  it('clear-text keys stored before a data key was set still load with one', async () => {
    const store = await memoryStore();
    const plain = await KeyRing.load(store.keys, ['ES256'], POLICY);
    const withKey = await KeyRing.load(store.keys, ['ES256'], { ...POLICY, dataKey: new Uint8Array(randomBytes(32)) });
    expect((await jwtVerify(await withKey.sign({ sub: 'p' }, 'JWT'), plain.verificationKeys)).payload.sub).toBe('p');
  });

  it('parseDataKey reads 32 bytes as hex, base64 or base64url, and refuses other lengths', () => {
    const bytes = randomBytes(32);
    expect(Buffer.from(parseDataKey(bytes.toString('hex'))!)).toEqual(bytes);
    expect(Buffer.from(parseDataKey(bytes.toString('base64'))!)).toEqual(bytes);
    expect(Buffer.from(parseDataKey(bytes.toString('base64url'))!)).toEqual(bytes);
    expect(parseDataKey(undefined)).toBeUndefined();
    expect(parseDataKey('')).toBeUndefined();
    expect(() => parseDataKey(randomBytes(16).toString('base64'))).toThrow(
      'SIGIL_DATA_KEY must be 32 bytes, as base64 or hex',
    );
    expect(() => parseDataKey(randomBytes(31).toString('hex'))).toThrow('SIGIL_DATA_KEY must be 32 bytes');
  });
});

describe('clean-up of expired grants', () => {
  const OPTIONS = { keyReloadSeconds: 60, cleanupIntervalSeconds: 300, batchSize: 2 };

  function grant(expiresAt: number): GrantRecord {
    return {
      key: randomBytes(32).toString('base64url'),
      type: 'authorization_code',
      clientId: 'web',
      subjectId: '1',
      familyId: randomBytes(16).toString('base64url'),
      sessionId: null,
      data: {},
      createdAt: expiresAt - 60,
      expiresAt,
      consumedAt: null,
      revokedAt: null,
    };
  }

  it('deletes expired rows in batches only while this node holds the lease; unexpired rows stay', async () => {
    const store = await memoryStore();
    const now = 1_000_000;
    const expired = [1, 2, 3, 4, 5].map((i) => grant(now - i));
    const live = [grant(now), grant(now + 1000)];
    for (const g of [...expired, ...live]) await store.grants.put(g);

    // Another node holds the lease (as if it had just run): this node deletes nothing.
    expect(await store.maintenance.acquireLease('cleanup', 'node-b', now - 10, now + 600)).toBe(true);
    expect(await cleanUpExpired(store.maintenance, 'node-a', OPTIONS, now)).toBe(0);
    for (const g of expired) expect(await store.grants.get(g.key)).toBeDefined();

    // The lease holder deletes every expired row, batch after batch (5 rows, batches of 2).
    expect(await cleanUpExpired(store.maintenance, 'node-b', OPTIONS, now)).toBe(5);
    for (const g of expired) expect(await store.grants.get(g.key)).toBeUndefined();
    for (const g of live) expect(await store.grants.get(g.key)).toEqual(g);

    // Once node-b's lease ran out, node-a takes over (and node-b is then refused).
    const later = now + 601;
    const more = [grant(later - 1), grant(later - 2)];
    for (const g of more) await store.grants.put(g);
    expect(await cleanUpExpired(store.maintenance, 'node-a', OPTIONS, later)).toBe(3);
    expect(await store.grants.get(live[0]!.key)).toBeUndefined();
    expect(await store.grants.get(live[1]!.key)).toEqual(live[1]);
    await store.grants.put(grant(later - 3));
    expect(await cleanUpExpired(store.maintenance, 'node-b', OPTIONS, later + 1)).toBe(0);
    expect(await cleanUpExpired(store.maintenance, 'node-a', OPTIONS, later + 1)).toBe(1);
  });
});
