/**
 * The store contract, one suite run against every backend: `memory`, a SQLite file,
 * and PostgreSQL in a schema of its own per run (dropped afterwards), so runs cannot collide.
 * Where the backend is shared (SQLite file, PostgreSQL), races also run across two store instances
 * on the same database, as two Sigil nodes would.
 *
 * Times are explicit Unix seconds; every test uses keys, families, lease names and time ranges of
 * its own, so the tests of one backend can share its store.
 */
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { auditIdAt } from '../../src/stores/audit-events.js';
import { openStore } from '../../src/stores/sql.js';
import type {
  GrantRecord,
  LogoutDelivery,
  SessionParticipant,
  Store,
  StoredFactor,
  StoredKey,
  StoredUser,
} from '../../src/stores/types.js';
import { dropSchema, POSTGRES_URL, tempDir, uniqueSchema } from '../helpers.js';

interface Backend {
  name: string;
  /** The storage URL to open (a fresh database or schema). */
  url: () => string;
  /** Whether a second store on the same URL sees the same data (false for `memory`). */
  shared: boolean;
  cleanup: () => Promise<void>;
}

const sqliteDir = tempDir();
const pgSchema = uniqueSchema('sigil_test');

const backends: Backend[] = [
  { name: 'memory', url: () => 'memory', shared: false, cleanup: async () => {} },
  {
    name: 'SQLite file',
    url: () => `sqlite:${join(sqliteDir.dir, 'store.db')}`,
    shared: true,
    cleanup: async () => sqliteDir.cleanup(),
  },
  {
    name: 'PostgreSQL',
    url: () => `${POSTGRES_URL}?schema=${pgSchema}&poolSize=20`,
    shared: true,
    cleanup: () => dropSchema(pgSchema),
  },
];

const NOW = 2_000_000_000;
let counter = 0;

/** A fresh unique key (as a handle hash would be: 43 base64url characters). */
function key(): string {
  return randomBytes(32).toString('base64url');
}

/** A record with every field set; `over` replaces fields. */
function record(over: Partial<GrantRecord> = {}): GrantRecord {
  counter++;
  return {
    key: key(),
    type: 'refresh_token',
    clientId: 'client-a',
    subjectId: `user-${counter}`,
    familyId: randomBytes(16).toString('base64url'),
    sessionId: 'sid-1',
    data: {
      scopes: ['openid', 'api1'],
      subject: { subjectId: `user-${counter}`, authTime: NOW - 10, amr: ['pwd'] },
      n: 1.5,
      nested: { a: [1, 'b', null, true] },
    },
    createdAt: NOW,
    expiresAt: NOW + 3600,
    consumedAt: null,
    revokedAt: null,
    ...over,
  };
}

function storedKey(kid: string, createdAt: number, over: Partial<StoredKey> = {}): StoredKey {
  return {
    kid,
    alg: 'ES256',
    privateKey: JSON.stringify({ kty: 'EC', crv: 'P-256', d: 'secret', x: 'x', y: 'y' }),
    publicJwk: { kty: 'EC', crv: 'P-256', x: 'x', y: 'y' },
    createdAt,
    activatesAt: createdAt + 10,
    retiredAt: null,
    ...over,
  };
}

afterAll(async () => {
  for (const b of backends) await b.cleanup();
});

describe.each(backends)('store contract on $name', (backend) => {
  let store: Store;
  /** A second store on the same database (another node), or the same store for `memory`. */
  let other: Store;

  beforeAll(async () => {
    store = await openStore(backend.url());
    other = backend.shared ? await openStore(backend.url()) : store;
  });
  afterAll(async () => {
    if (other !== store) await other.close();
    await store.close();
  });

  it('answers ping', async () => {
    await expect(store.ping()).resolves.toBeUndefined();
  });

  // Only where a second store can open the same database (not `memory`).
  if (backend.shared)
    it('opening the same database again runs no migration twice and keeps the data', async () => {
      const r = record();
      await store.grants.put(r);
      const again = await openStore(backend.url());
      try {
        expect(await again.grants.get(r.key)).toEqual(r);
      } finally {
        await again.close();
      }
    });

  if (backend.name === 'PostgreSQL')
    it('a second schema in the same database is a store of its own (its migrations run, its rows are apart)', async () => {
      // Regression: the migrator found its tables in any schema of the database and then failed
      // with 'relation "kysely_migration_lock" does not exist' in a new schema.
      const second = uniqueSchema('sigil_test');
      try {
        const apart = await openStore(`${POSTGRES_URL}?schema=${second}`);
        try {
          const r = record();
          await apart.grants.put(r);
          expect(await apart.grants.get(r.key)).toEqual(r);
          expect(await store.grants.get(r.key)).toBeUndefined();
          expect(await apart.keys.listKeys()).toEqual([]);
        } finally {
          await apart.close();
        }
        const again = await openStore(`${POSTGRES_URL}?schema=${second}`);
        await again.close();
      } finally {
        await dropSchema(second);
      }
    });

  describe('GrantStore', () => {
    it('put then get returns the record as stored, JSON data and nulls included', async () => {
      const r = record();
      await store.grants.put(r);
      expect(await store.grants.get(r.key)).toEqual(r);
      const bare = record({ type: 'reference_token', subjectId: null, sessionId: null, data: {} });
      await store.grants.put(bare);
      expect(await store.grants.get(bare.key)).toEqual(bare);
      // Another node reads the same row.
      expect(await other.grants.get(r.key)).toEqual(r);
    });

    it('get of an unknown key is undefined', async () => {
      expect(await store.grants.get(key())).toBeUndefined();
    });

    it('put of an existing key fails and leaves the row alone', async () => {
      const r = record();
      await store.grants.put(r);
      await expect(store.grants.put({ ...r, clientId: 'intruder' })).rejects.toThrow();
      expect((await store.grants.get(r.key))?.clientId).toBe('client-a');
    });

    it('300 concurrent puts (committed in groups), one of them a duplicate key: each put settles after its own row is readable, only the duplicate fails', async () => {
      const taken = record();
      await store.grants.put(taken);
      const fresh = Array.from({ length: 300 }, () => record());
      const outcomes = await Promise.allSettled([
        ...fresh.slice(0, 150).map((r) => store.grants.put(r).then(() => other.grants.get(r.key))),
        store.grants.put({ ...taken, clientId: 'intruder' }),
        ...fresh.slice(150).map((r) => store.grants.put(r).then(() => other.grants.get(r.key))),
      ]);
      expect(outcomes.filter((o) => o.status === 'rejected')).toHaveLength(1);
      expect(outcomes[150]?.status).toBe('rejected');
      for (const [i, r] of fresh.entries()) {
        const outcome = outcomes[i < 150 ? i : i + 1];
        expect(outcome?.status === 'fulfilled' ? (outcome.value as GrantRecord | undefined)?.key : undefined).toBe(
          r.key,
        );
      }
      expect((await store.grants.get(taken.key))?.clientId).toBe('client-a');
    });

    it('consume succeeds once, records the time, then refuses', async () => {
      const r = record({ type: 'authorization_code' });
      await store.grants.put(r);
      expect(await store.grants.consume(r.key, NOW + 5)).toBe(true);
      expect(await store.grants.consume(r.key, NOW + 6)).toBe(false);
      expect(await other.grants.consume(r.key, NOW + 6)).toBe(false);
      expect(await store.grants.get(r.key)).toEqual({ ...r, consumedAt: NOW + 5 });
    });

    it('consume refuses unknown, revoked and expired records (expired at exactly expiresAt)', async () => {
      expect(await store.grants.consume(key(), NOW)).toBe(false);
      const revoked = record({ revokedAt: NOW - 1 });
      const expired = record({ expiresAt: NOW });
      const live = record({ expiresAt: NOW + 1 });
      for (const r of [revoked, expired, live]) await store.grants.put(r);
      expect(await store.grants.consume(revoked.key, NOW)).toBe(false);
      expect(await store.grants.consume(expired.key, NOW)).toBe(false);
      expect(await store.grants.consume(live.key, NOW)).toBe(true);
      expect((await store.grants.get(revoked.key))?.consumedAt).toBeNull();
      expect((await store.grants.get(expired.key))?.consumedAt).toBeNull();
    });

    it('50 concurrent consumes of one record: exactly one wins', async () => {
      const r = record({ type: 'authorization_code' });
      await store.grants.put(r);
      const results = await Promise.all(
        Array.from({ length: 50 }, (_, i) => (i % 2 === 0 ? store : other).grants.consume(r.key, NOW + 1)),
      );
      expect(results.filter(Boolean)).toHaveLength(1);
      expect((await store.grants.get(r.key))?.consumedAt).toBe(NOW + 1);
    });

    it('concurrent consumes of 20 records, 10 callers each: exactly one winner per record', async () => {
      const records = Array.from({ length: 20 }, () => record({ type: 'device_code' }));
      for (const r of records) await store.grants.put(r);
      const attempts = records.flatMap((r) =>
        Array.from({ length: 10 }, (_, i) => ({ key: r.key, s: i % 2 === 0 ? store : other })),
      );
      const results = await Promise.all(
        attempts.map(async (a) => ({ key: a.key, won: await a.s.grants.consume(a.key, NOW) })),
      );
      for (const r of records) expect(results.filter((x) => x.key === r.key && x.won)).toHaveLength(1);
    });

    it('replaceData is compare-and-set: of 20 writers from one read exactly one wins, on either node; never on a consumed record', async () => {
      const r = record({ type: 'device_code' });
      await store.grants.put(r);
      const read = (await other.grants.get(r.key))!.data;
      const results = await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          (i % 2 === 0 ? store : other).grants.replaceData(r.key, read, { ...read, writer: i }),
        ),
      );
      expect(results.filter(Boolean)).toHaveLength(1);
      const winner = results.indexOf(true);
      expect((await store.grants.get(r.key))?.data).toEqual({ ...read, writer: winner });
      // A stale read loses; a fresh one wins; nothing is written once the record is consumed.
      expect(await store.grants.replaceData(r.key, read, { ...read, writer: 'stale' })).toBe(false);
      const fresh = (await store.grants.get(r.key))!.data;
      expect(await other.grants.replaceData(r.key, fresh, { ...fresh, writer: 'fresh' })).toBe(true);
      expect(await store.grants.consume(r.key, NOW)).toBe(true);
      const last = (await store.grants.get(r.key))!.data;
      expect(await store.grants.replaceData(r.key, last, { ...last, writer: 'late' })).toBe(false);
      expect(await store.grants.replaceData(key(), last, last)).toBe(false);
    });

    it('putOnce stores a key once: of 20 racing writers on either node exactly one wins, later ones lose', async () => {
      const r = record({ type: 'replay' });
      const results = await Promise.all(
        Array.from({ length: 20 }, (_, i) => (i % 2 === 0 ? store : other).grants.putOnce(r)),
      );
      expect(results.filter(Boolean)).toHaveLength(1);
      expect(await other.grants.putOnce(r)).toBe(false);
      expect(await store.grants.get(r.key)).toEqual(r);
      expect(await store.grants.putOnce(record({ type: 'replay' }))).toBe(true);
    });

    it('put and putOnce in one group: a duplicate put fails alone, each putOnce gets its own outcome, nothing else is lost', async () => {
      const existing = record();
      await store.grants.put(existing);
      const fresh = Array.from({ length: 40 }, () => record());
      const once = Array.from({ length: 40 }, () => record({ type: 'replay' }));
      const seenOnce = record({ type: 'replay' });
      expect(await store.grants.putOnce(seenOnce)).toBe(true);
      // All handed over in one turn of the event loop, so they share a group commit.
      const outcomes = await Promise.allSettled([
        store.grants.put(existing),
        ...fresh.map((r) => store.grants.put(r)),
        ...once.map((r) => store.grants.putOnce(r)),
        ...once.map((r) => store.grants.putOnce(r)),
        store.grants.putOnce(seenOnce),
      ]);
      expect(outcomes[0]?.status).toBe('rejected');
      expect(outcomes.slice(1, 41).every((o) => o.status === 'fulfilled')).toBe(true);
      const onceResults = outcomes.slice(41).map((o) => (o.status === 'fulfilled' ? o.value : 'rejected'));
      expect(onceResults.slice(0, 40)).toEqual(Array(40).fill(true));
      expect(onceResults.slice(40, 80)).toEqual(Array(40).fill(false));
      expect(onceResults[80]).toBe(false);
      for (const r of [...fresh, ...once, existing]) expect(await other.grants.get(r.key)).toEqual(r);
    });

    it('update replaces data and expiry of a live record; false for unknown or revoked ones', async () => {
      const r = record();
      await store.grants.put(r);
      expect(await store.grants.update(r.key, { sliding: true }, NOW + 99)).toBe(true);
      expect(await store.grants.get(r.key)).toEqual({ ...r, data: { sliding: true }, expiresAt: NOW + 99 });
      expect(await store.grants.update(key(), {}, NOW + 99)).toBe(false);
      const revoked = record({ revokedAt: NOW });
      await store.grants.put(revoked);
      expect(await store.grants.update(revoked.key, { x: 1 }, NOW + 99)).toBe(false);
      expect(await store.grants.get(revoked.key)).toEqual(revoked);
    });

    it('save inserts a new record and replaces every field of an existing one', async () => {
      const r = record({ type: 'consent', data: { scopes: ['openid'] } });
      await store.grants.save(r);
      expect(await store.grants.get(r.key)).toEqual(r);
      const replaced: GrantRecord = {
        ...r,
        clientId: 'client-b',
        subjectId: 'someone',
        familyId: 'family-2',
        sessionId: null,
        data: { scopes: ['openid', 'profile'] },
        createdAt: NOW + 10,
        expiresAt: NOW + 7200,
        consumedAt: NOW + 11,
        revokedAt: NOW + 12,
      };
      await store.grants.save(replaced);
      expect(await store.grants.get(r.key)).toEqual(replaced);
    });

    it('revoke marks an existing record, keeps its data, and keeps the first revocation time', async () => {
      const r = record();
      await store.grants.put(r);
      await store.grants.revoke({ ...r, data: { other: true } }, NOW + 3);
      expect(await store.grants.get(r.key)).toEqual({ ...r, revokedAt: NOW + 3 });
      await store.grants.revoke(r, NOW + 9);
      expect((await store.grants.get(r.key))?.revokedAt).toBe(NOW + 3);
    });

    it('revoke of a key with no row inserts the record in revoked state', async () => {
      const mark = record({ type: 'access_token', data: {} });
      await store.grants.revoke(mark, NOW + 4);
      expect(await store.grants.get(mark.key)).toEqual({ ...mark, revokedAt: NOW + 4 });
    });

    it('revokeFamily revokes the live records of one family only and counts them', async () => {
      const familyId = `fam-${key()}`;
      const members = [
        record({ familyId, type: 'refresh_token' }),
        record({ familyId, type: 'access_token', data: {} }),
        record({ familyId, type: 'reference_token', consumedAt: NOW }),
      ];
      const earlier = record({ familyId, revokedAt: NOW - 50 });
      const outsider = record();
      for (const r of [...members, earlier, outsider]) await store.grants.put(r);
      expect(await store.grants.revokeFamily(familyId, NOW + 7)).toBe(3);
      for (const m of members) expect((await store.grants.get(m.key))?.revokedAt).toBe(NOW + 7);
      expect((await store.grants.get(earlier.key))?.revokedAt).toBe(NOW - 50);
      expect((await store.grants.get(outsider.key))?.revokedAt).toBeNull();
      expect(await other.grants.revokeFamily(familyId, NOW + 8)).toBe(0);
      expect(await store.grants.revokeFamily(`fam-${key()}`, NOW)).toBe(0);
    });

    it('revokeSubject revokes the live records of the given kinds of one subject, in every family', async () => {
      const subjectId = `sub-${key()}`;
      const mine = [
        record({ subjectId, type: 'refresh_token' }),
        record({ subjectId, type: 'reference_token', data: {} }),
      ];
      const otherKind = record({ subjectId, type: 'consent', data: {} });
      const someoneElse = record({ subjectId: `sub-${key()}`, type: 'refresh_token' });
      for (const r of [...mine, otherKind, someoneElse]) await store.grants.put(r);
      expect(await store.grants.revokeSubject(subjectId, ['refresh_token', 'reference_token'], NOW + 3)).toBe(2);
      for (const r of mine) expect((await other.grants.get(r.key))?.revokedAt).toBe(NOW + 3);
      expect((await store.grants.get(otherKind.key))?.revokedAt).toBeNull();
      expect((await store.grants.get(someoneElse.key))?.revokedAt).toBeNull();
      expect(await store.grants.revokeSubject(subjectId, ['refresh_token', 'reference_token'], NOW + 4)).toBe(0);
    });

    it('revokeClient revokes the live records of the given kinds of one client, of every user; keepSessionId spares a session in revokeSubject', async () => {
      const clientId = `client-${key()}`;
      const mine = [
        record({ clientId }),
        record({ clientId, type: 'consent', data: {} }),
        record({ clientId, subjectId: null, type: 'reference_token', data: {} }),
      ];
      const otherKind = record({ clientId, type: 'session', data: {} });
      const expired = record({ clientId, expiresAt: NOW - 1 });
      const otherClient = record({ clientId: `${clientId}-b` });
      for (const r of [...mine, otherKind, expired, otherClient]) await store.grants.put(r);
      expect(await store.grants.revokeClient(clientId, ['refresh_token', 'reference_token', 'consent'], NOW + 3)).toBe(
        3,
      );
      for (const r of mine) expect((await other.grants.get(r.key))?.revokedAt).toBe(NOW + 3);
      for (const r of [otherKind, expired, otherClient]) expect((await store.grants.get(r.key))?.revokedAt).toBeNull();
      expect(await store.grants.revokeClient(clientId, ['refresh_token', 'reference_token', 'consent'], NOW + 4)).toBe(
        0,
      );

      const subjectId = `sub-${key()}`;
      const kept = record({ subjectId, sessionId: 'keep' });
      const ended = [record({ subjectId, sessionId: 'other' }), record({ subjectId, sessionId: null })];
      for (const r of [kept, ...ended]) await store.grants.put(r);
      expect(await store.grants.revokeSubject(subjectId, ['refresh_token'], NOW + 5, 'keep')).toBe(2);
      expect((await store.grants.get(kept.key))?.revokedAt).toBeNull();
    });

    it('a revoked family cannot be consumed any more, from either node', async () => {
      const familyId = `fam-${key()}`;
      const r = record({ familyId });
      await store.grants.put(r);
      expect(await other.grants.revokeFamily(familyId, NOW)).toBe(1);
      expect(await store.grants.consume(r.key, NOW)).toBe(false);
    });
  });

  describe('UserEmailStore', () => {
    it('keeps one primary address per user, found by value ignoring case, and marks it verified', async () => {
      const subjectId = `em-${key()}`;
      expect(await store.emails.primary(subjectId)).toBeUndefined();
      await store.emails.setPrimary(subjectId, 'Old@Example.org', true);
      await store.emails.setPrimary(subjectId, 'New@Example.org', false);
      expect(await other.emails.primary(subjectId)).toEqual({
        subjectId,
        value: 'New@Example.org',
        isPrimary: true,
        verified: false,
      });
      expect(await store.emails.findByValue('old@EXAMPLE.org')).toEqual([
        { subjectId, value: 'Old@Example.org', isPrimary: false, verified: true },
      ]);
      expect(await store.emails.markVerified(subjectId, 'new@example.org')).toBe(true);
      expect((await store.emails.primary(subjectId))?.verified).toBe(true);
      expect(await store.emails.markVerified(subjectId, 'none@example.org')).toBe(false);
      // Setting an address the user has again makes it primary, without a second row.
      await store.emails.setPrimary(subjectId, 'OLD@example.org', false);
      expect(await store.emails.findByValue('old@example.org')).toEqual([
        { subjectId, value: 'OLD@example.org', isPrimary: true, verified: false },
      ]);
    });

    it('reads a user with their primary address and groups in one lookup, by subject or username', async () => {
      const subjectId = `pf-${key()}`;
      const username = `Pf-${subjectId.slice(3, 15)}`;
      const user = {
        subjectId,
        username,
        tenant: null,
        passwordHash: null,
        claims: { role: 'own' },
        isActive: true,
        passwordChangeRequired: false,
      };
      await store.users.addUser(user);
      expect(await other.users.findProfile({ subjectId })).toEqual({ ...user, groups: [] });
      await store.emails.setPrimary(subjectId, 'Other@Example.org', true);
      await store.emails.setPrimary(subjectId, 'Primary@Example.org', false);
      for (const [id, displayName] of [
        [`g-${key()}`, 'zeta'],
        [`g-${key()}`, 'Alpha'],
        [`g-${key()}`, 'beta'],
      ] as const)
        await store.directory.addGroup(id, { displayName, externalId: null, members: [subjectId] }, NOW);
      const profile = {
        ...user,
        primaryEmail: { value: 'Primary@Example.org', verified: false },
        groups: ['Alpha', 'beta', 'zeta'],
      };
      expect(await other.users.findProfile({ subjectId })).toEqual(profile);
      expect(await other.users.findProfile({ username: username.toUpperCase(), tenant: null })).toEqual(profile);
      expect(await other.users.findProfile({ username, tenant: 'elsewhere' })).toBeUndefined();
      expect(await other.users.findProfile({ subjectId: `${subjectId}-none` })).toBeUndefined();
      // Without a tenant, a username two tenants hold names nobody.
      await store.users.addUser({ ...user, subjectId: `${subjectId}-2`, tenant: 'second' });
      expect(await other.users.findProfile({ username, tenant: null })).toBeUndefined();
      expect((await other.users.findProfile({ username, tenant: 'second' }))?.subjectId).toBe(`${subjectId}-2`);
    });

    it('removing a user removes their addresses', async () => {
      const subjectId = `em-${key()}`;
      await store.users.addUser({
        subjectId,
        username: `u-${subjectId}`,
        tenant: null,
        passwordHash: null,
        claims: {},
        isActive: true,
      });
      await store.emails.setPrimary(subjectId, `${subjectId}@example.org`, true);
      expect(await store.users.removeUser(subjectId)).toBe(true);
      expect(await store.emails.findByValue(`${subjectId}@example.org`)).toEqual([]);
    });
  });

  describe('KeyStore', () => {
    it('starts empty, lists keys oldest first (kid breaks ties), with the public JWK as an object', async () => {
      expect(await store.keys.listKeys()).toEqual([]);
      const c = storedKey('kid-c', 300);
      const a = storedKey('kid-a', 100, { alg: 'RS256', publicJwk: { kty: 'RSA', n: 'n', e: 'AQAB' } });
      const b2 = storedKey('kid-b2', 200);
      const b1 = storedKey('kid-b1', 200, { retiredAt: 250 });
      for (const k of [c, a, b2, b1]) await store.keys.addKey(k);
      expect(await store.keys.listKeys()).toEqual([a, b1, b2, c]);
      expect(await other.keys.listKeys()).toEqual([a, b1, b2, c]);
    });

    it('refuses a second key with the same kid', async () => {
      await expect(store.keys.addKey(storedKey('kid-a', 999))).rejects.toThrow();
      expect((await store.keys.listKeys()).filter((k) => k.kid === 'kid-a')).toHaveLength(1);
    });

    it('retireKey retires a live key once; false for retired or unknown keys', async () => {
      expect(await store.keys.retireKey('kid-c', 400)).toBe(true);
      expect(await other.keys.retireKey('kid-c', 401)).toBe(false);
      expect(await store.keys.retireKey('kid-b1', 401)).toBe(false);
      expect(await store.keys.retireKey('no-such-kid', 401)).toBe(false);
      const keys = await store.keys.listKeys();
      expect(keys.find((k) => k.kid === 'kid-c')?.retiredAt).toBe(400);
      expect(keys.find((k) => k.kid === 'kid-b1')?.retiredAt).toBe(250);
      expect(keys.find((k) => k.kid === 'kid-a')?.retiredAt).toBeNull();
    });
  });

  describe('UserStore', () => {
    const alice: StoredUser = {
      subjectId: 'u-alice',
      username: 'Alice',
      tenant: null,
      passwordHash: '$argon2id$v=19$m=19456,t=2,p=1$c2FsdHNhbHQ$aGFzaA',
      claims: { name: 'Alice', role: ['admin', 'dev'], email_verified: true },
      isActive: true,
      passwordChangeRequired: false,
    };
    const acmeAlice: StoredUser = {
      ...alice,
      subjectId: 'u-acme-alice',
      tenant: 'acme',
      claims: { name: 'Alice of Acme' },
    };
    const inactive: StoredUser = {
      subjectId: 'u-dave',
      username: 'dave',
      tenant: null,
      passwordHash: null,
      claims: {},
      isActive: false,
      passwordChangeRequired: false,
    };
    const carol: StoredUser = {
      subjectId: 'u-carol',
      username: 'Carol',
      tenant: 'acme',
      passwordHash: null,
      claims: { name: 'Carol' },
      isActive: true,
      passwordChangeRequired: false,
    };

    beforeAll(async () => {
      for (const u of [alice, acmeAlice, inactive, carol]) await store.users.addUser(u);
    });

    it('finds a user by username, case-insensitively, within the tenant', async () => {
      expect(await store.users.findUserByUsername('ALICE', 'acme')).toEqual(acmeAlice);
      expect(await other.users.findUserByUsername('aLiCe', 'acme')).toEqual(acmeAlice);
      expect(await store.users.findUserByUsername('carol', 'acme')).toEqual(carol);
      expect(await store.users.findUserByUsername('alice', 'other')).toBeUndefined();
      expect(await store.users.findUserByUsername('dave', 'acme')).toBeUndefined();
      expect(await store.users.findUserByUsername('nobody', 'acme')).toBeUndefined();
    });

    it('without a tenant, finds the one user of that name in any tenant, and none when the name is ambiguous', async () => {
      expect(await store.users.findUserByUsername('DAVE', null)).toEqual(inactive);
      expect(await store.users.findUserByUsername('carol', null)).toEqual(carol);
      // "Alice" exists without a tenant and in acme.
      expect(await store.users.findUserByUsername('alice', null)).toBeUndefined();
      expect(await store.users.findUserByUsername('nobody', null)).toBeUndefined();
    });

    it('finds a user by subject, inactive users and null hashes included', async () => {
      expect(await store.users.findUserBySubject('u-acme-alice')).toEqual(acmeAlice);
      expect(await store.users.findUserBySubject('u-dave')).toEqual(inactive);
      expect(await store.users.findUserBySubject('u-none')).toBeUndefined();
    });

    it('refuses a second user with the same username (any case) in one tenant, or the same subject', async () => {
      await expect(store.users.addUser({ ...carol, subjectId: 'u-carol-2', username: 'CAROL' })).rejects.toThrow();
      await expect(store.users.addUser({ ...alice, username: 'alice-2' })).rejects.toThrow();
      expect(await store.users.findUserBySubject('u-carol-2')).toBeUndefined();
      expect(await store.users.findUserByUsername('alice-2', null)).toBeUndefined();
    });
  });

  describe('FactorStore', () => {
    const factor = (subjectId: string, kind: string, over: Partial<StoredFactor> = {}): StoredFactor => ({
      id: randomBytes(16).toString('base64url'),
      subjectId,
      kind,
      label: '',
      data: { secret: 'sealed', n: [1, 'x'] },
      counter: 0,
      createdAt: NOW,
      lastUsedAt: null,
      ...over,
    });

    it('lists, by kind, what was added; removes one of the user or all of some kinds', async () => {
      const totp = factor('f-user-1', 'totp', { counter: 59_000_000 });
      const codes = [
        factor('f-user-1', 'recovery_code', { createdAt: NOW + 1 }),
        factor('f-user-1', 'recovery_code', { createdAt: NOW + 2 }),
      ];
      for (const f of [totp, ...codes, factor('f-user-2', 'totp')]) await store.factors.addFactor(f);
      expect(await other.factors.listFactors('f-user-1')).toEqual([totp, ...codes]);
      expect(await store.factors.listFactors('f-user-1', ['totp'])).toEqual([totp]);
      expect(await store.factors.listFactors('f-user-1', [])).toEqual([]);
      // Another user's factor is not removable through this user.
      const [theirs] = await store.factors.listFactors('f-user-2');
      expect(await store.factors.removeFactor('f-user-1', theirs!.id)).toBe(false);
      expect(await store.factors.removeFactors('f-user-1', ['recovery_code'])).toBe(2);
      expect(await store.factors.removeFactor('f-user-1', totp.id)).toBe(true);
      expect(await store.factors.listFactors('f-user-1')).toEqual([]);
      expect(await store.factors.listFactors('f-user-2')).toHaveLength(1);
    });

    it('advances a counter only upwards: of concurrent advances to one value exactly one wins', async () => {
      const f = factor('f-user-3', 'totp', { counter: 10 });
      await store.factors.addFactor(f);
      const results = await Promise.all(
        Array.from({ length: 8 }, (_, i) => (i % 2 ? other : store).factors.advanceFactorCounter(f.id, 12, NOW + 5)),
      );
      expect(results.filter(Boolean)).toHaveLength(1);
      expect(await store.factors.advanceFactorCounter(f.id, 11, NOW + 6)).toBe(false);
      expect(await store.factors.advanceFactorCounter(f.id, 13, NOW + 7)).toBe(true);
      expect(await store.factors.listFactors('f-user-3')).toEqual([{ ...f, counter: 13, lastUsedAt: NOW + 7 }]);
    });

    it('replaces the factors of one kind at once, leaving other kinds', async () => {
      const keep = factor('f-user-4', 'totp');
      await store.factors.addFactor(keep);
      await store.factors.replaceFactors('f-user-4', 'recovery_code', [factor('f-user-4', 'recovery_code')]);
      const fresh = [
        factor('f-user-4', 'recovery_code', { createdAt: NOW + 1 }),
        factor('f-user-4', 'recovery_code', { createdAt: NOW + 2 }),
      ];
      await store.factors.replaceFactors('f-user-4', 'recovery_code', fresh);
      expect(await store.factors.listFactors('f-user-4')).toEqual([keep, ...fresh]);
    });
  });

  describe('LogoutStore', () => {
    /** A delivery for each participant of a session (as LogoutService plans them). */
    const plan =
      (tag: string) =>
      (ps: SessionParticipant[]): LogoutDelivery[] =>
        ps.map((p, i) => ({
          id: `${tag}-${i}`,
          clientId: p.clientId,
          uri: 'https://rp.example/bc',
          subjectId: p.subjectId,
          sid: p.sid,
          attempts: 0,
          giveUpAt: NOW + 600,
        }));

    it('endSession raced by 10 callers on two nodes: one gets the participants, the session row is revoked, deliveries are queued once', async () => {
      const sid = `sid-${key().slice(0, 20)}`;
      const session = record({ type: 'session', familyId: sid, sessionId: sid });
      await store.grants.put(session);
      for (const clientId of ['a', 'b', 'a'])
        await store.logout.addParticipant({ sid, clientId, subjectId: 'u1' }, NOW + 100);
      // Two SQLite stores in one process cannot race transactions: better-sqlite3 waits for a
      // lock synchronously, blocking the very thread that holds it. Separate processes (nodes, the
      // command line) wait for each other; here the SQLite racers share one connection.
      const node = (i: number) => (i % 2 === 0 || backend.name !== 'PostgreSQL' ? store : other);
      const results = await Promise.all(
        Array.from({ length: 10 }, (_, i) => node(i).logout.endSession(sid, NOW, plan(`${sid}-${i}`))),
      );
      const winners = results.filter((r) => r.length > 0);
      expect(winners).toHaveLength(1);
      expect(winners[0]!.map((p) => p.clientId).sort()).toEqual(['a', 'b']);
      expect((await store.grants.get(session.key))?.revokedAt).toBe(NOW);
      const ids = Array.from({ length: 10 }, (_, i) => [`${sid}-${i}-0`, `${sid}-${i}-1`]).flat();
      expect(await store.logout.claimDeliveries('n1', NOW, NOW + 10, 50, ids)).toHaveLength(2);
    });

    it('claimDeliveries raced on two nodes: each delivery goes to one holder; after the lease it is claimable again; only the holder retries or finishes it', async () => {
      const sid = `sid-${key().slice(0, 20)}`;
      for (const clientId of ['a', 'b', 'c', 'd', 'e'])
        await store.logout.addParticipant({ sid, clientId, subjectId: 'u2' }, NOW + 100);
      await store.logout.endSession(sid, NOW, plan(sid));
      const ids = [0, 1, 2, 3, 4].map((i) => `${sid}-${i}`);
      const claims = await Promise.all(
        Array.from({ length: 10 }, (_, i) =>
          (i % 2 === 0 ? store : other).logout.claimDeliveries(`h${i}`, NOW, NOW + 10, 5, ids),
        ),
      );
      expect(
        claims
          .flat()
          .map((d) => d.id)
          .sort(),
      ).toEqual(ids);
      const holderOf = (id: string) => `h${claims.findIndex((c) => c.some((d) => d.id === id))}`;
      // Leased until NOW + 10: nobody else gets them before.
      expect(await other.logout.claimDeliveries('late', NOW + 9, NOW + 20, 5, ids)).toEqual([]);
      // A stranger cannot release or finish them.
      await other.logout.retryDelivery(ids[0]!, 'stranger', NOW, 'x');
      await other.logout.finishDelivery(ids[1]!, 'stranger');
      expect(await other.logout.claimDeliveries('late', NOW + 9, NOW + 20, 5, ids)).toEqual([]);
      // The holder releases one for a retry at NOW + 5 and finishes another.
      await store.logout.retryDelivery(ids[0]!, holderOf(ids[0]!), NOW + 5, 'HTTP 503');
      await store.logout.finishDelivery(ids[1]!, holderOf(ids[1]!));
      const retried = await other.logout.claimDeliveries('late', NOW + 5, NOW + 20, 5, ids);
      expect(retried).toMatchObject([{ id: ids[0], attempts: 1 }]);
      // The lease of the others ran out (a dead node): claimable again, the finished one never.
      const taken = await other.logout.claimDeliveries('later', NOW + 11, NOW + 30, 5, ids);
      expect(taken.map((d) => d.id).sort()).toEqual(ids.slice(2));
    });
  });

  describe('Maintenance', () => {
    it('acquireLease: one holder at a time, renewable by its holder, taken over only after it ends', async () => {
      const lease = `lease-${key().slice(0, 20)}`;
      const t = 5_000;
      expect(await store.maintenance.acquireLease(lease, 'node-a', t, t + 60)).toBe(true);
      expect(await other.maintenance.acquireLease(lease, 'node-b', t + 1, t + 61)).toBe(false);
      // The holder renews.
      expect(await store.maintenance.acquireLease(lease, 'node-a', t + 30, t + 90)).toBe(true);
      // Still held at its last second.
      expect(await other.maintenance.acquireLease(lease, 'node-b', t + 90, t + 150)).toBe(false);
      // Expired: another holder takes it, and the former holder is refused.
      expect(await other.maintenance.acquireLease(lease, 'node-b', t + 91, t + 151)).toBe(true);
      expect(await store.maintenance.acquireLease(lease, 'node-a', t + 92, t + 152)).toBe(false);
      // Leases are independent by name.
      expect(await store.maintenance.acquireLease(`${lease}-2`, 'node-a', t + 92, t + 152)).toBe(true);
    });

    it('acquireLease raced by 10 holders on two nodes: exactly one gets it', async () => {
      const lease = `race-${key().slice(0, 20)}`;
      const results = await Promise.all(
        Array.from({ length: 10 }, (_, i) =>
          (i % 2 === 0 ? store : other).maintenance.acquireLease(lease, `holder-${i}`, 100, 200),
        ),
      );
      expect(results.filter(Boolean)).toHaveLength(1);
      // After it ends, again exactly one of the racers gets it.
      const again = await Promise.all(
        Array.from({ length: 10 }, (_, i) =>
          (i % 2 === 0 ? store : other).maintenance.acquireLease(lease, `late-${i}`, 201, 300),
        ),
      );
      expect(again.filter(Boolean)).toHaveLength(1);
    });

    it('deleteExpired deletes only rows that expired before the cut-off, at most `limit` per call', async () => {
      // A time range no other test uses: every other row expires far later.
      const T = 1_000_000;
      const expired = Array.from({ length: 25 }, (_, i) =>
        record({
          expiresAt: T - 1 - i,
          createdAt: T - 3600,
          ...(i % 5 === 0 ? { consumedAt: T - 100 } : {}),
          ...(i % 7 === 0 ? { revokedAt: T - 50 } : {}),
        }),
      );
      const atCutoff = Array.from({ length: 3 }, () => record({ expiresAt: T, createdAt: T - 3600 }));
      const later = Array.from({ length: 4 }, (_, i) => record({ expiresAt: T + 1 + i, createdAt: T - 3600 }));
      for (const r of [...expired, ...atCutoff, ...later]) await store.grants.put(r);

      expect(await store.maintenance.deleteExpired(T, 10)).toBe(10);
      expect(await other.maintenance.deleteExpired(T, 10)).toBe(10);
      expect(await store.maintenance.deleteExpired(T, 10)).toBe(5);
      expect(await store.maintenance.deleteExpired(T, 10)).toBe(0);
      for (const r of expired) expect(await store.grants.get(r.key)).toBeUndefined();
      for (const r of [...atCutoff, ...later]) expect(await store.grants.get(r.key)).toEqual(r);
      // Nothing of the other tests (expiring around NOW) was touched.
      expect(await store.maintenance.deleteExpired(T + 3, 100)).toBe(5);
      for (const r of later.slice(2)) expect(await store.grants.get(r.key)).toEqual(r);
    });
  });

  it('keeps WebAuthn credentials: one row per credential ID, listed per user, counter by compare-and-set, removed by the owner only', async () => {
    const subjectId = `webauthn-${backend.name}`;
    const credential = {
      id: key(),
      subjectId,
      kind: 'passkey' as const,
      publicKey: key(),
      counter: 0,
      transports: ['internal'],
      name: 'Laptop',
      backedUp: true,
      createdAt: NOW,
      lastUsedAt: null,
    };
    expect(await store.webauthn.add(credential)).toBe(true);
    expect(await other.webauthn.add({ ...credential, subjectId: 'someone-else' })).toBe(false);
    expect(await other.webauthn.get(credential.id)).toEqual(credential);
    expect(await store.webauthn.list(subjectId)).toEqual([credential]);
    // Two uses that read counter 0: exactly one records its new value.
    const results = await Promise.all([
      store.webauthn.recordUse(credential.id, 0, 5, NOW + 1),
      other.webauthn.recordUse(credential.id, 0, 6, NOW + 2),
    ]);
    expect(results.filter(Boolean)).toHaveLength(1);
    const used = await store.webauthn.get(credential.id);
    expect([5, 6]).toContain(used?.counter);
    expect(used?.lastUsedAt).toBe(used?.counter === 5 ? NOW + 1 : NOW + 2);
    expect(await store.webauthn.remove('someone-else', credential.id)).toBe(false);
    expect(await other.webauthn.remove(subjectId, credential.id)).toBe(true);
    expect(await store.webauthn.get(credential.id)).toBeUndefined();
    expect(await store.webauthn.list(subjectId)).toEqual([]);
    // Removing the user removes their credentials.
    await store.users.addUser({
      subjectId,
      username: subjectId,
      tenant: null,
      passwordHash: null,
      claims: {},
      isActive: true,
    });
    await store.webauthn.add({ ...credential, id: key() });
    expect(await store.users.removeUser(subjectId)).toBe(true);
    expect(await store.webauthn.list(subjectId)).toEqual([]);
  });
  it('stores a batch of audit events of any size whole and once, or nothing of a batch that fails', async () => {
    // More events than one statement could carry on SQLite (32,766 parameters, six per event).
    const name = `bulk_${key().slice(0, 8)}`;
    const time = 1_900_000_000_000;
    const events = Array.from({ length: 6_007 }, (_, i) => ({
      id: `${auditIdAt(time + i)}${key().slice(0, 22)}`,
      time: time + i,
      name,
      clientId: i % 2 === 0 ? 'client-a' : null,
      subjectId: i % 3 === 0 ? `user-${i}` : null,
      event: JSON.stringify({ name, n: i }),
    }));
    await store.audit.append(events);
    const stored = await store.audit.query({ name }, 10_000);
    expect(stored).toHaveLength(events.length);
    expect(stored[0]).toEqual(events.at(-1));
    expect(stored.at(-1)).toEqual(events[0]);
    expect(await store.audit.query({ name, subjectId: 'user-3' }, 10)).toEqual([events[3]]);
    expect(await store.audit.query({ name, clientId: 'client-a' }, 10_000)).toHaveLength(3_004);

    // The same batch again (a retry after a commit reported as failed) stores nothing twice.
    await store.audit.append(events.slice(0, 300));
    expect(await store.audit.query({ name }, 10_000)).toHaveLength(events.length);

    // A row the table refuses past the first chunks: the whole batch is refused, nothing of it kept.
    const failing = `bulk_${key().slice(0, 8)}`;
    const batch = events
      .slice(0, 450)
      .map((e) => ({ ...e, id: `${e.id.slice(0, 12)}${key().slice(0, 22)}`, name: failing }));
    batch.push({ ...(batch[0] as (typeof batch)[number]), id: key().slice(0, 34), event: null as unknown as string });
    await expect(store.audit.append(batch)).rejects.toThrow();
    expect(await store.audit.query({ name: failing }, 10)).toEqual([]);
  });
});
