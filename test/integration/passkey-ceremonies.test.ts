/**
 * The passkey ceremonies behind the pages (src/mfa/passkey-ceremonies.ts) over a real SQLite store
 * and a software authenticator: the security key step is a `webauthn_pending` record of the typed
 * repository, bound to the browser that started it and used once; a refused assertion counts
 * against the failure limits; registration and removal are recorded.
 */
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveConfig } from '../../src/config/loader.js';
import { hashHandle } from '../../src/crypto/handles.js';
import { EventBus, type SigilEvent } from '../../src/events/events.js';
import { FailureLimiter, MemoryFailureCounters } from '../../src/limits/failure-limiter.js';
import { MfaService } from '../../src/mfa/factors.js';
import { PasskeyCeremonies } from '../../src/mfa/passkey-ceremonies.js';
import { relyingPartyOf, WebAuthnService } from '../../src/mfa/webauthn.js';
import { openStore } from '../../src/stores/sql.js';
import type { Store } from '../../src/stores/types.js';
import { type User, UserService } from '../../src/users/users.js';
import { tempDir, testConfig } from '../helpers.js';
import { SoftAuthenticator } from '../webauthn-authenticator.js';

const ISSUER = 'http://localhost:5999';
const cfg = resolveConfig(testConfig({ issuer: ISSUER, webauthn: { enabled: true } }));
const dir = tempDir();
let store: Store;
let ceremonies: PasskeyCeremonies;
let alice: User;
const events: SigilEvent[] = [];
const MAX_FAILURES = 2;
const key = new SoftAuthenticator(ISSUER, false);
const from = { origin: { remoteAddress: '192.0.2.7', userAgent: 'passkey-test', requestId: 'req-1' } };

/** The ceremonies over the store, with WebAuthn `enabled` or not. */
function ceremoniesOf(users: UserService, enabled: boolean): PasskeyCeremonies {
  const bus = new EventBus(pino({ level: 'silent' }));
  bus.subscribe((e) => void events.push(e));
  const limits = {
    maxFailures: MAX_FAILURES,
    windowSeconds: 60,
    addressMaxFailures: 1000,
    identitySlowDownAfter: 1000,
    maxDelaySeconds: 1,
  };
  const limiter = new FailureLimiter(limits, new MemoryFailureCounters(), async () => {});
  const mfa = new MfaService(store.factors, store.records, cfg.mfa, undefined, store.webauthn);
  const webauthn = new WebAuthnService(store, relyingPartyOf(ISSUER, 'Sigil'), cfg.webauthn.challengeLifetime);
  return new PasskeyCeremonies(webauthn, store.webauthn, store.records.webauthnPending, mfa, users, limiter, bus, {
    ...cfg.webauthn,
    enabled,
  });
}

beforeAll(async () => {
  store = await openStore(`sqlite:${join(dir.dir, 'passkeys.db')}`);
  const users = await UserService.create(cfg.users, store.users);
  alice = (await users.findBySubject('1')) as User;
  ceremonies = ceremoniesOf(users, true);
});
afterAll(async () => {
  await store.close();
  dir.cleanup();
});

/** Starts alice's security key step in browser `browser`; returns its cookie value. */
async function started(browser: string): Promise<string> {
  const step = await ceremonies.startStep(alice, browser, undefined, { returnTo: '/account' });
  if (!step) throw new Error('no step');
  return step.cookie.value;
}

/** An assertion of alice's security key for her pending step. */
async function assertion(cookie: string, browser: string): Promise<unknown> {
  const pending = await ceremonies.step(cookie, () => browser);
  if (!pending) throw new Error('no live step');
  return key.authenticate(await ceremonies.stepOptions(pending, from.origin.remoteAddress));
}

describe('PasskeyCeremonies', () => {
  it('has no security key step for a user without a credential, nor while WebAuthn is off', async () => {
    expect(await ceremonies.startStep(alice, 'b', undefined, {})).toBeUndefined();
    const options = await ceremonies.registrationOptions(alice, 'security-key', 'b', from.origin.remoteAddress);
    expect(
      await ceremonies.register(alice.subjectId, 'security-key', key.register(options), 'b', 'My key', from.origin),
    ).toBe(true);
    expect((await ceremonies.list(alice.subjectId)).map((c) => [c.kind, c.name])).toEqual([['security-key', 'My key']]);
    expect(events.map((e) => `${e.name}:${e.factor}`)).toEqual(['webauthn_registered:security-key']);
    const off = ceremoniesOf(await UserService.create(cfg.users, store.users), false);
    expect(await off.startStep(alice, 'b', undefined, {})).toBeUndefined();
  });

  it('keeps the step in the typed repository, for the browser that started it, for the challenge lifetime', async () => {
    const step = await ceremonies.startStep(alice, 'b1', 'interaction-1', { codeLink: '/account/mfa?use=code' });
    expect(step?.cookie.maxAge).toBe(cfg.webauthn.challengeLifetime);
    const cookie = step?.cookie.value ?? '';
    const row = await store.grants.get(hashHandle(cookie));
    expect(row).toMatchObject({ type: 'webauthn_pending', subjectId: '1', clientId: '', data: step?.pending });
    expect((row?.expiresAt ?? 0) - (row?.createdAt ?? 0)).toBe(cfg.webauthn.challengeLifetime);
    expect(step?.pending).toEqual({
      subjectId: '1',
      username: 'alice',
      tenant: null,
      interaction: 'interaction-1',
      browser: 'b1',
      codeLink: '/account/mfa?use=code',
    });
    expect(await ceremonies.step(cookie, () => 'b1')).toEqual(step?.pending);
    expect(await ceremonies.step(cookie, () => 'b2')).toBeUndefined();
    for (const junk of [undefined, '', 'x'.repeat(101), 'unknown'])
      expect(await ceremonies.step(junk, () => 'b1')).toBeUndefined();
    // A cancelled step is gone.
    await ceremonies.cancelStep(cookie);
    expect(await ceremonies.step(cookie, () => 'b1')).toBeUndefined();
  });

  it('signs in once with the security key: a second completion of the same step is refused', async () => {
    const cookie = await started('b3');
    const pending = await ceremonies.step(cookie, () => 'b3');
    const first = await ceremonies.completeStep(cookie, pending!, await assertion(cookie, 'b3'), from);
    expect(first).toMatchObject({ outcome: 'signed-in', user: { subjectId: '1' }, amr: ['pwd', 'hwk', 'mfa'] });
    expect(await ceremonies.step(cookie, () => 'b3')).toBeUndefined();
    // The same step answered again (a fresh, valid assertion) does not sign in a second time.
    const options = await ceremonies.stepOptions(pending!, from.origin.remoteAddress);
    expect(await ceremonies.completeStep(cookie, pending!, key.authenticate(options), from)).toEqual({
      outcome: 'used',
    });
  });

  it('counts refused assertions against the limits of the user, then refuses before checking', async () => {
    const cookie = await started('b4');
    const pending = await ceremonies.step(cookie, () => 'b4');
    const bent = async () =>
      key.authenticate(await ceremonies.stepOptions(pending!, from.origin.remoteAddress), undefined, {
        origin: 'https://evil.example',
      });
    const before = events.length;
    for (let i = 0; i < MAX_FAILURES; i++)
      expect(await ceremonies.completeStep(cookie, pending!, await bent(), from)).toEqual({ outcome: 'failed' });
    expect(events.slice(before).map((e) => [e.name, e.error])).toEqual([
      ['webauthn_failed', 'verification'],
      ['webauthn_failed', 'verification'],
    ]);
    const refused = await ceremonies.completeStep(cookie, pending!, await assertion(cookie, 'b4'), from);
    expect(refused.outcome).toBe('refused');
    // Nothing was spent: the step is still live.
    expect(await ceremonies.step(cookie, () => 'b4')).toEqual(pending);
  });

  it("removes only the user's own credential, once", async () => {
    const [credential] = await ceremonies.list(alice.subjectId);
    expect(await ceremonies.remove('someone-else', credential?.id ?? '', from.origin)).toBe(false);
    expect(await ceremonies.remove(alice.subjectId, 'x'.repeat(1401), from.origin)).toBe(false);
    expect(await ceremonies.remove(alice.subjectId, credential?.id ?? '', from.origin)).toBe(true);
    expect(await ceremonies.remove(alice.subjectId, credential?.id ?? '', from.origin)).toBe(false);
    expect(events.at(-1)).toMatchObject({ name: 'webauthn_removed', subjectId: '1', factor: 'security-key' });
  });
});
