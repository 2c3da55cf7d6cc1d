/**
 * The admin services (`src/admin/`) over a real SQLite store: what `sigil clients`,
 * `sigil users`, `sigil keys` and `sigil users sessions revoke` do, without the command line.
 * Config-file items are read-only and win over stored ones; a client id is never a user's subject
 * (RFC 9068 §5), whichever side is added second; secrets and passwords are stored hashed only.
 */
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { verify } from '@node-rs/argon2';
import Database from 'better-sqlite3';
import { pino } from 'pino';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { AdminError } from '../../src/admin/errors.js';
import { ClientAdmin } from '../../src/admin/clients.js';
import { KeyAdmin } from '../../src/admin/keys.js';
import { AuditLog } from '../../src/admin/audit.js';
import { SessionAdmin } from '../../src/admin/sessions.js';
import { UserAdmin } from '../../src/admin/users.js';
import { type ResolvedConfig, resolveConfig } from '../../src/config/loader.js';
import type { ConfigInput } from '../../src/config/schema.js';
import { EventBus, type SigilEvent } from '../../src/events/events.js';
import { openStore } from '../../src/stores/sql.js';
import { newGrantRecord, type Store } from '../../src/stores/types.js';
import { secretDigest } from '../../src/crypto/handles.js';
import { ClientRegistry } from '../../src/clients/registry.js';
import { tempDir, testConfig } from '../helpers.js';

const silent = pino({ level: 'silent' });

/** A client-credentials client of `clientId` with one secret. */
const m2m = (clientId: string, secret = `${clientId}-secret`) => ({
  clientId,
  clientSecrets: [secret],
  allowedGrantTypes: ['client_credentials'],
  allowedScopes: ['api1'],
});

/** The AdminError `promise` rejects with (fails the test when it resolves or throws something else). */
async function refusal(promise: Promise<unknown>): Promise<AdminError> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(AdminError);
  return err as AdminError;
}

describe('admin services over SQLite', () => {
  const { dir, cleanup } = tempDir();
  let n = 0;
  let file: string;
  let store: Store;
  let raw: ConfigInput;
  let cfg: ResolvedConfig;
  let clients: ClientAdmin;
  let users: UserAdmin;

  beforeEach(async () => {
    file = join(dir, `admin-${++n}.db`);
    raw = testConfig({ storage: `sqlite:${file}` });
    cfg = resolveConfig(raw);
    store = await openStore(cfg.storage);
    clients = new ClientAdmin(store, { config: cfg, raw, log: silent });
    users = new UserAdmin(store, cfg);
  });
  afterEach(async () => {
    await store.close();
  });
  afterAll(() => cleanup());

  describe('clients', () => {
    it('adds a client with its secrets stored as SHA-256 digests only, lists it after the config ones, and removes it', async () => {
      expect(await clients.create(m2m('svc', 'svc-clear-secret'))).toEqual({
        clientId: 'svc',
        shadowedByConfig: false,
      });
      const stored = await store.clients.listClients();
      expect(JSON.stringify(stored)).not.toContain('svc-clear-secret');
      expect(stored).toEqual([
        { ...m2m('svc'), clientSecrets: [`sha256:${secretDigest('svc-clear-secret').toString('base64')}`] },
      ]);
      const listed = await clients.list();
      expect(listed.slice(0, cfg.clients.length).every((c) => c.source === 'config')).toBe(true);
      expect(listed.at(-1)).toEqual({ clientId: 'svc', source: 'store', allowedGrantTypes: ['client_credentials'] });
      await clients.delete('svc');
      expect(await store.clients.listClients()).toEqual([]);
      expect(await refusal(clients.delete('svc'))).toMatchObject({
        code: 'not_found',
        message: 'no stored client "svc"',
      });
    });

    it('refuses input that is not a valid client, naming the field path, and stores nothing', async () => {
      for (const bad of ['{"clientId":"x"}', ['x'], null])
        expect(await refusal(clients.create(bad))).toMatchObject({
          code: 'invalid',
          message: 'client must be a JSON object',
        });
      const unknownScope = await refusal(clients.create({ ...m2m('x'), allowedScopes: ['nope'] }));
      expect(unknownScope.code).toBe('invalid');
      expect(unknownScope.message).toMatch(
        /^invalid configuration:\n {2}clients\[\d+\]\.allowedScopes\[0\]: unknown scope "nope"$/,
      );
      const overlong = await refusal(clients.create(m2m('x'.repeat(300))));
      expect(overlong).toMatchObject({ code: 'invalid', message: expect.stringMatching(/clients\[\d+\]\.clientId: /) });
      // $env/$file belong to the operator's config file: a stored client is data and may not read
      // the server's environment or files (nor probe which files exist).
      for (const reference of [{ $file: '/etc/hostname' }, { $env: 'PATH' }])
        expect(await refusal(clients.create({ ...m2m('x'), clientSecrets: [reference] }))).toMatchObject({
          code: 'invalid',
          message: 'a stored client cannot take values from $env or $file',
        });
      expect(await store.clients.listClients()).toEqual([]);
    });

    it('config-file clients are read-only: removing one is refused, a stored one of the same id is saved but the config one wins', async () => {
      expect(await refusal(clients.delete('m2m'))).toMatchObject({ code: 'read_only' });
      expect(await clients.create(m2m('m2m', 'stolen'))).toEqual({ clientId: 'm2m', shadowedByConfig: true });
      const registry = new ClientRegistry(cfg.clients);
      await clients.reload(registry);
      expect(registry.get('m2m')?.clientSecrets).toEqual(['m2m-secret']);
      // The stored one is removable; the config one stays.
      await clients.delete('m2m');
      expect(await refusal(clients.delete('m2m'))).toMatchObject({ code: 'read_only' });
    });

    it('reload picks up a stored client and drops a removed one; a stored client named like a user subject is skipped', async () => {
      const registry = new ClientRegistry(cfg.clients);
      const version = registry.version;
      await clients.reload(registry);
      expect(registry.get('svc')).toBeUndefined();
      await clients.create(m2m('svc'));
      await clients.reload(registry);
      expect(registry.get('svc')).toMatchObject({ clientId: 'svc', allowedGrantTypes: ['client_credentials'] });
      expect(registry.version).toBeGreaterThan(version);
      // Written around the service (an older version, a restore): a client id that is a subject.
      await store.clients.saveClient('u-9', m2m('u-9'));
      await clients.reload(registry, async (id) => id === 'u-9');
      expect(registry.get('u-9')).toBeUndefined();
      await clients.delete('svc');
      await clients.reload(registry);
      expect(registry.get('svc')).toBeUndefined();
    });

    it('reload warns of a stored client that a config-file client shadows', async () => {
      const lines: string[] = [];
      const log = pino(
        { level: 'warn' },
        new Writable({ write: (chunk, _enc, done) => done(void lines.push(String(chunk))) }),
      );
      const admin = new ClientAdmin(store, { config: cfg, raw, log });
      await admin.create(m2m('m2m', 'other'));
      await admin.reload(new ClientRegistry(cfg.clients));
      expect(lines.join('')).toContain('"clientId":"m2m"');
      expect(lines.join('')).toContain('the config file wins');
    });
  });

  describe('a client id is never a user subject (RFC 9068 §5)', () => {
    it('refuses a client whose id is a config or stored user subject', async () => {
      const configUser = await refusal(clients.create(m2m('1')));
      expect(configUser).toMatchObject({ code: 'invalid', message: expect.stringContaining('clients[') });
      expect(configUser.message).toContain('clientId "1" is the subjectId of users[0]');
      await users.create({ username: 'yuri', subjectId: 'y-1' });
      expect(await refusal(clients.create(m2m('y-1')))).toMatchObject({
        code: 'invalid',
        field: 'clientId',
        message: expect.stringMatching(/^clientId "y-1" is the subjectId of stored user "yuri": .*RFC 9068 §5/),
      });
      expect(await store.clients.listClients()).toEqual([]);
    });

    it('refuses a user whose subject is a config or stored client id', async () => {
      expect(await refusal(users.create({ username: 'mallory', subjectId: 'm2m' }))).toMatchObject({
        code: 'invalid',
        field: 'subjectId',
        message: expect.stringMatching(/^clientId "m2m" is the subjectId of user "mallory"/),
      });
      await clients.create(m2m('svc-7'));
      expect(await refusal(users.create({ username: 'trudy', subjectId: 'svc-7' }))).toMatchObject({
        code: 'invalid',
        field: 'subjectId',
      });
      expect(await store.users.listUsers()).toEqual([]);
    });
  });

  describe('users', () => {
    it('adds a user with an argon2id password hash and JSON claims, lists it after the config users, and removes it by name or subject', async () => {
      const added = await users.create({
        username: 'zoe',
        subjectId: 'z-1',
        password: 'zoe-pass',
        claims: { name: 'Zoe', role: ['a'] },
      });
      expect(added).toEqual({ subjectId: 'z-1' });
      const stored = await store.users.findUserBySubject('z-1');
      expect(stored).toMatchObject({
        username: 'zoe',
        tenant: null,
        claims: { name: 'Zoe', role: ['a'] },
        isActive: true,
      });
      expect(stored?.passwordHash).toMatch(/^\$argon2id\$/);
      expect(JSON.stringify(stored)).not.toContain('zoe-pass');
      expect(await verify(stored?.passwordHash ?? '', 'zoe-pass')).toBe(true);
      const listed = await users.list();
      expect(listed.map((u) => `${u.username}:${u.source}`)).toEqual([
        'alice:config',
        'bob:config',
        'carol:config',
        'dave:config',
        'zoe:store',
      ]);
      expect(listed.find((u) => u.username === 'dave')?.isActive).toBe(false);
      expect(listed.find((u) => u.username === 'carol')?.tenant).toBe('acme');
      const events = new EventBus(silent);
      const seen: SigilEvent[] = [];
      events.subscribe((e) => void seen.push(e));
      const audit = { events, endpoint: 'test', clientId: 'cli' };
      expect((await users.deleteNamed('zoe', null, audit)).subjectId).toBe('z-1');
      await users.create({ username: 'zed', subjectId: 'z-2' });
      expect((await users.deleteNamed('z-2', null, audit)).username).toBe('zed');
      expect(await store.users.listUsers()).toEqual([]);
      // Each removal is audited, naming the actor and the user removed.
      expect(seen.map((e) => [e.name, e.clientId, e.action, e.target])).toEqual([
        ['admin_changed', 'cli', 'user.remove', { type: 'user', id: 'z-1' }],
        ['admin_changed', 'cli', 'user.remove', { type: 'user', id: 'z-2' }],
      ]);
    });

    it('gives a new user a random subject and no password unless told', async () => {
      const { subjectId } = await users.create({ username: 'nia' });
      expect(subjectId).toMatch(/^[A-Za-z0-9_-]{16,}$/);
      expect(await store.users.findUserBySubject(subjectId)).toMatchObject({
        username: 'nia',
        passwordHash: null,
        claims: {},
      });
    });

    it('refuses an overlong username, claims that are not a JSON object and a taken username, and stores nothing', async () => {
      expect(await refusal(users.create({ username: 'u'.repeat(101) }))).toMatchObject({
        code: 'invalid',
        field: 'username',
        message: 'the username is longer than 100 characters',
      });
      for (const claims of [[1], null, 'nope', 7])
        expect(await refusal(users.create({ username: 'kim', claims }))).toMatchObject({
          code: 'invalid',
          field: 'claims',
        });
      expect(await store.users.listUsers()).toEqual([]);
      await users.create({ username: 'kim', subjectId: 'k-1' });
      expect(await refusal(users.create({ username: 'KIM', subjectId: 'k-2' }))).toMatchObject({
        code: 'conflict',
        message: 'a stored user "KIM" exists already',
      });
      expect((await store.users.listUsers()).map((u) => u.subjectId)).toEqual(['k-1']);
    });

    it('a stored user named like a config user is saved, and the result says the config user wins', async () => {
      expect(await users.create({ username: 'Alice', subjectId: 'a-2' })).toEqual({
        subjectId: 'a-2',
        shadowedBy: { username: 'alice', subjectId: '1' },
      });
      expect(await users.create({ username: 'ann', subjectId: '2' })).toEqual({
        subjectId: '2',
        shadowedBy: { username: 'bob', subjectId: '2' },
      });
    });

    it("sets a stored user's password (argon2id); config users are read-only", async () => {
      await users.create({ username: 'zoe', subjectId: 'z-1', password: 'harbour-violet-19' });
      await users.setPassword('zoe', null, 'new-pass');
      const hash = (await store.users.findUserBySubject('z-1'))?.passwordHash ?? '';
      expect(hash).toMatch(/^\$argon2id\$/);
      expect(await verify(hash, 'new-pass')).toBe(true);
      expect(await refusal(users.setPassword('zoe', null, undefined))).toMatchObject({
        code: 'invalid',
        field: 'password',
      });
      expect(await refusal(users.setPassword('alice', null, 'x'))).toMatchObject({ code: 'read_only' });
      expect(await refusal(users.setPassword('nobody', null, 'x'))).toMatchObject({
        code: 'not_found',
        message: 'no stored user "nobody"',
      });
      // The user is looked up before the password is required.
      expect(await refusal(users.setPassword('nobody', null, undefined))).toMatchObject({ code: 'not_found' });
    });

    it('applies the password policy on add and setPassword: invalid, field password, nothing stored or changed', async () => {
      expect(await refusal(users.create({ username: 'zoe', password: 'password' }))).toMatchObject({
        code: 'invalid',
        field: 'password',
        message: 'the password is a common or breached password',
      });
      expect(await refusal(users.create({ username: 'zoe', password: 'Sigil-2026-zoe' }))).toMatchObject({
        code: 'invalid',
        field: 'password',
        message: expect.stringContaining('the password contains the product name'),
      });
      expect(await store.users.listUsers()).toEqual([]);
      await users.create({ username: 'zoe', subjectId: 'z-1', password: 'harbour-violet-19' });
      const before = (await store.users.findUserBySubject('z-1'))?.passwordHash;
      expect(await refusal(users.setPassword('zoe', null, 'seven77'))).toMatchObject({
        code: 'invalid',
        field: 'password',
        message: 'the password is shorter than 8 characters',
      });
      expect((await store.users.findUserBySubject('z-1'))?.passwordHash).toBe(before);
    });

    it('refuses to remove a config user (by name or subject) and an unknown one', async () => {
      expect(
        await refusal(users.deleteNamed('alice', null, { events: new EventBus(silent), endpoint: 'test' })),
      ).toMatchObject({ code: 'read_only' });
      expect(
        await refusal(users.deleteNamed('2', null, { events: new EventBus(silent), endpoint: 'test' })),
      ).toMatchObject({
        code: 'read_only',
      });
      expect(
        await refusal(users.deleteNamed('nobody', null, { events: new EventBus(silent), endpoint: 'test' })),
      ).toMatchObject({ code: 'not_found', message: 'no stored user "nobody"' });
    });

    it("lists and resets a user's second factors, with an mfa_removed audit event per kind", async () => {
      await users.create({ username: 'zoe', subjectId: 'z-1' });
      const factor = { subjectId: 'z-1', label: '', data: {}, counter: 0, createdAt: 1_700_000_000, lastUsedAt: null };
      await store.factors.addFactor({ ...factor, id: 'f-1', kind: 'totp' });
      await store.factors.addFactor({ ...factor, id: 'f-2', kind: 'recovery_code' });
      await store.factors.addFactor({ ...factor, id: 'f-3', kind: 'recovery_code' });
      const listed = await users.secondFactors('zoe', null);
      expect(listed.subjectId).toBe('z-1');
      expect(listed.factors.map((f) => f.id).sort()).toEqual(['f-1', 'f-2', 'f-3']);
      const events = new EventBus(silent);
      const seen: SigilEvent[] = [];
      events.subscribe((e) => void seen.push(e));
      expect(await users.resetSecondFactors('zoe', null, { events, endpoint: 'test' })).toEqual({
        subjectId: 'z-1',
        removed: 3,
      });
      expect(seen.map((e) => [e.name, e.endpoint, e.subjectId, e.factor]).sort()).toEqual([
        ['mfa_removed', 'test', 'z-1', 'recovery_code'],
        ['mfa_removed', 'test', 'z-1', 'totp'],
      ]);
      expect((await users.secondFactors('zoe', null)).factors).toEqual([]);
      // A config user has second factors too.
      expect((await users.secondFactors('alice', null)).subjectId).toBe('1');
      expect(await refusal(users.secondFactors('nobody', null))).toMatchObject({
        code: 'not_found',
        message: 'no user "nobody"',
      });
    });
  });

  describe('audit log', () => {
    it('keeps the events of a failed flush for the next one, in order', async () => {
      const log = new AuditLog(store.audit, 3600, silent);
      const events = new EventBus(silent);
      events.subscribe(log.record);
      const change = (id: string) =>
        events.emit({
          name: 'admin_changed',
          endpoint: 'test',
          clientId: 'cli',
          action: 'client.update',
          target: { type: 'client', id },
          changes: {},
        });
      change('one');
      // The database refuses the write (its table is gone for a moment): the flush fails.
      const other = new Database(file);
      other.exec('alter table audit_events rename to audit_events_away');
      await expect(log.flush()).rejects.toThrow();
      change('two');
      other.exec('alter table audit_events_away rename to audit_events');
      other.close();
      await log.flush();
      const { events: stored } = await log.query({ limit: 10 });
      expect(stored.map((e) => e.target?.id)).toEqual(['two', 'one']);
    });
  });

  describe('audit log, an event that cannot be serialised', () => {
    it('is left out alone: the events around it are stored', async () => {
      const log = new AuditLog(store.audit, 3600, silent);
      const events = new EventBus(silent);
      events.subscribe(log.record);
      const change = (id: string, extra: Record<string, unknown> = {}) =>
        events.emit({
          name: 'admin_changed',
          endpoint: 'test',
          clientId: 'cli-serialise',
          action: 'client.update',
          target: { type: 'client', id },
          changes: extra,
        });
      change('before');
      // JSON has no BigInt: JSON.stringify throws on it.
      change('broken', { size: 1n });
      change('after');
      await log.flush();
      const { events: stored } = await log.query({ clientId: 'cli-serialise', limit: 10 });
      expect(stored.map((e) => e.target?.id)).toEqual(['after', 'before']);
    });
  });

  describe('keys', () => {
    it('rotates (all algorithms or one), lists with status, retires; an unknown algorithm or key is refused', async () => {
      const keys = new KeyAdmin(store.keys, cfg);
      const now = 2_000_000_000;
      expect((await keys.rotate(undefined, now)).map((k) => k.alg)).toEqual(['RS256', 'ES256']);
      const [es] = await keys.rotate('ES256', now);
      expect(es?.alg).toBe('ES256');
      expect(await refusal(keys.rotate('HS256', now))).toMatchObject({
        code: 'invalid',
        field: 'alg',
        message: 'HS256 is not one of signingAlgorithms (or saml-rsa with saml enabled)',
      });
      expect((await keys.list(now)).map((k) => k.status)).toEqual(['pending', 'pending', 'pending']);
      const later = now + cfg.signingKeys.propagationSeconds;
      await keys.retire(es?.kid ?? '', later);
      expect((await keys.list(later)).find((k) => k.kid === es?.kid)?.status).toBe('retired');
      expect(await refusal(keys.retire(es?.kid ?? '', later))).toMatchObject({
        code: 'not_found',
        message: `no live key ${es?.kid}`,
      });
    });
  });

  describe('sessions', () => {
    it('ends every live session of a user and queues the back-channel logout of a stored client that took part', async () => {
      await users.create({ username: 'zoe', subjectId: 'z-1' });
      await clients.create({
        ...m2m('rp'),
        allowedGrantTypes: ['authorization_code'],
        redirectUris: ['https://rp.example/cb'],
        backChannelLogoutUri: 'https://rp.example/logout',
      });
      const now = Math.floor(Date.now() / 1000);
      for (const sid of ['s-1', 's-2'])
        await store.grants.put(
          newGrantRecord({
            key: `k-${sid}`,
            type: 'session',
            clientId: '',
            subjectId: 'z-1',
            familyId: sid,
            sessionId: sid,
            data: { sid },
            createdAt: now,
            expiresAt: now + 600,
          }),
        );
      await store.logout.addParticipant({ sid: 's-1', clientId: 'rp', subjectId: 'z-1' }, now + 600);
      const sessions = new SessionAdmin(store, cfg, silent);
      expect(await sessions.revokeAll('zoe', null)).toEqual({ subjectId: 'z-1', ended: 2 });
      expect(await store.logout.liveSessions('z-1', now)).toEqual([]);
      // Claimed at the current second: the deliveries are due from the second they were queued in.
      const claimAt = Math.floor(Date.now() / 1000);
      const queued = await store.logout.claimDeliveries('test', claimAt, claimAt + 60, 10);
      expect(queued).toMatchObject([
        { clientId: 'rp', uri: 'https://rp.example/logout', subjectId: 'z-1', sid: 's-1' },
      ]);
      expect(await sessions.revokeAll('zoe', null)).toEqual({ subjectId: 'z-1', ended: 0 });
      expect(await refusal(sessions.revokeAll('nobody', null))).toMatchObject({
        code: 'not_found',
        message: 'no user "nobody"',
      });
    });

    it('queues no back-channel logout for a client re-created with the id of a removed one that took part', async () => {
      await users.create({ username: 'zoe', subjectId: 'z-1' });
      const rp = {
        ...m2m('rp'),
        allowedGrantTypes: ['authorization_code'],
        redirectUris: ['https://rp.example/cb'],
        backChannelLogoutUri: 'https://rp.example/logout',
      };
      await clients.create(rp);
      const now = Math.floor(Date.now() / 1000);
      await store.grants.put(
        newGrantRecord({
          key: 'k-s-1',
          type: 'session',
          clientId: '',
          subjectId: 'z-1',
          familyId: 's-1',
          sessionId: 's-1',
          data: { sid: 's-1' },
          createdAt: now,
          expiresAt: now + 600,
        }),
      );
      await store.logout.addParticipant({ sid: 's-1', clientId: 'rp', subjectId: 'z-1' }, now + 600);
      await clients.delete('rp');
      await clients.create({ ...rp, backChannelLogoutUri: 'https://new-owner.example/logout' });
      expect(await new SessionAdmin(store, cfg, silent).revokeAll('zoe', null)).toEqual({ subjectId: 'z-1', ended: 1 });
      const claimAt = Math.floor(Date.now() / 1000);
      expect(await store.logout.claimDeliveries('test', claimAt, claimAt + 60, 10)).toEqual([]);
    });
  });
});
