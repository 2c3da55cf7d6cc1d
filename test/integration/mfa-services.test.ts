/**
 * The MFA services behind the pages (src/mfa/enrollment.ts, src/mfa/second-step.ts) over a real
 * SQLite store: an authenticator app is stored only after a right code of its secret, the first
 * factor brings ten single-use recovery codes, codes are spent once and checked under the failure
 * limits, and only a pending sign-in whose own decision was `enroll` may add a factor.
 */
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ClientRegistry } from '../../src/clients/registry.js';
import { resolveConfig } from '../../src/config/loader.js';
import { EventBus, type SigilEvent } from '../../src/events/events.js';
import { FailureLimiter, MemoryFailureCounters } from '../../src/limits/failure-limiter.js';
import { FactorEnrollment } from '../../src/mfa/enrollment.js';
import { MfaService } from '../../src/mfa/factors.js';
import { RECOVERY_KIND } from '../../src/mfa/recovery.js';
import { SecondStepService } from '../../src/mfa/second-step.js';
import { openStore } from '../../src/stores/sql.js';
import type { Store } from '../../src/stores/types.js';
import { UserService } from '../../src/users/users.js';
import { tempDir, testConfig } from '../helpers.js';
import { totpCode } from '../mfa-helpers.js';

/** A request's origin as the pages pass it (address, user agent, request id). */
import { nowSeconds } from '../../src/crypto/handles.js';

const at = (remoteAddress: string) => ({
  remoteAddress,
  userAgent: 'mfa-services-test',
  requestId: `req-${remoteAddress}`,
});

const cfg = resolveConfig(testConfig());
const dir = tempDir();
let store: Store;
let mfa: MfaService;
let enrollment: FactorEnrollment;
let secondStep: SecondStepService;
let limiter: FailureLimiter;
const events: SigilEvent[] = [];
const MAX_FAILURES = 3;

/** Builds the services over `mfa` (another config of MFA, same store). */
function services(over: MfaService) {
  const bus = new EventBus(pino({ level: 'silent' }));
  bus.subscribe((e) => void events.push(e));
  return {
    enrollment: new FactorEnrollment(over, users, limiter, bus),
    secondStep: new SecondStepService(over, users, new ClientRegistry(cfg.clients), limiter, bus),
  };
}
let users: UserService;

beforeAll(async () => {
  store = await openStore(`sqlite:${join(dir.dir, 'mfa.db')}`);
  users = await UserService.create(cfg.users, store.users);
  const limits = {
    maxFailures: MAX_FAILURES,
    windowSeconds: 60,
    addressMaxFailures: 1000,
    identitySlowDownAfter: 1000,
    maxDelaySeconds: 1,
  };
  limiter = new FailureLimiter(limits, new MemoryFailureCounters(), async () => {});
  mfa = new MfaService(store.factors, store.records, cfg.mfa, undefined);
  ({ enrollment, secondStep } = services(mfa));
});
afterAll(async () => {
  await store.close();
  dir.cleanup();
});

/** Events of one user, by name and factor. */
const eventsOf = (subjectId: string) =>
  events.filter((e) => e.subjectId === subjectId).map((e) => `${e.name}:${e.factor ?? ''}`);

/** Enrolls an authenticator app for the user from browser `b`; returns the secret and the recovery codes. */
async function enrolled(
  subjectId: string,
  browser = 'b',
): Promise<{ secret: string; recoveryCodes: string[] | undefined }> {
  const { secret } = await enrollment.begin(browser, subjectId);
  const done = await enrollment.confirm(browser, subjectId, totpCode(secret), at('192.0.2.1'));
  if (done.outcome !== 'enrolled') throw new Error(`not enrolled: ${done.outcome}`);
  return { secret, recoveryCodes: done.recoveryCodes };
}

describe('FactorEnrollment', () => {
  it('keeps one sealed secret per browser and user while the enrollment waits, labelled with the username', async () => {
    const setup = await enrollment.begin('b1', '1');
    expect(setup.secret).toMatch(/^[A-Z2-7]{32}$/);
    expect(setup.qr).toMatch(/^data:image\/png;base64,/);
    expect((await enrollment.begin('b1', '1')).secret).toBe(setup.secret);
    expect((await enrollment.begin('b2', '1')).secret).not.toBe(setup.secret);
    // The secret is sealed in the pending record, not kept as given.
    expect(JSON.stringify(await mfa.enrollment('b1', '1'))).not.toContain(`"${setup.secret}"`);
  });

  it('stores nothing for a wrong code, counting it as a failure, and refuses at the limit', async () => {
    const subjectId = 'u-wrong';
    const { secret } = await enrollment.begin('b', subjectId);
    const wrong = String((Number(totpCode(secret)) + 1) % 1_000_000).padStart(6, '0');
    for (const code of [wrong, 'abcdef', '']) {
      const answer = await enrollment.confirm('b', subjectId, code, at('192.0.2.2'));
      expect(answer).toMatchObject({ outcome: 'invalid', setup: { secret } });
    }
    expect(await mfa.listFactors(subjectId)).toEqual([]);
    expect(eventsOf(subjectId)).toEqual(['mfa_failed:totp', 'mfa_failed:totp', 'mfa_failed:totp']);
    // Over the limit even the right code is not checked: nothing is stored.
    const refused = await enrollment.confirm('b', subjectId, totpCode(secret), at('192.0.2.2'));
    expect(refused).toMatchObject({ outcome: 'refused', setup: { secret } });
    expect(refused.outcome === 'refused' && refused.refusal.status).toBe(429);
    expect(refused.outcome === 'refused' && Number(refused.refusal.headers['retry-after'])).toBeGreaterThan(0);
    expect(await mfa.listFactors(subjectId)).toEqual([]);
  });

  it('stores the factor for a right code, with ten recovery codes for the first one, once', async () => {
    const subjectId = 'u-first';
    const { secret } = await enrollment.begin('b', subjectId);
    const done = await enrollment.confirm('b', subjectId, totpCode(secret), at('192.0.2.3'));
    expect(done.outcome).toBe('enrolled');
    const codes = done.outcome === 'enrolled' ? (done.recoveryCodes ?? []) : [];
    expect(codes).toHaveLength(10);
    expect(new Set(codes).size).toBe(10);
    const factors = await mfa.listFactors(subjectId);
    expect(factors.filter((f) => f.kind === 'totp')).toHaveLength(1);
    expect(factors.filter((f) => f.kind === RECOVERY_KIND && f.counter === 0)).toHaveLength(10);
    // Only hashes are kept.
    expect(JSON.stringify(factors)).not.toContain(codes[0]?.replace('-', ''));
    expect(eventsOf(subjectId)).toEqual(['mfa_enrolled:totp', `mfa_enrolled:${RECOVERY_KIND}`]);
    // The enrollment is over: the same code again finds none.
    expect(await enrollment.confirm('b', subjectId, totpCode(secret), at('192.0.2.3'))).toEqual({ outcome: 'expired' });
    // A second app while unused recovery codes remain makes no new ones.
    expect((await enrolled(subjectId, 'other')).recoveryCodes).toBeUndefined();
    expect((await mfa.listFactors(subjectId)).filter((f) => f.kind === RECOVERY_KIND)).toHaveLength(10);
  });

  it("counts only factors used at Sigil toward changing them: an upstream provider's amr proves nothing held here", async () => {
    const subjectId = 'u-upstream';
    await enrolled(subjectId);
    const recent = { subjectId, authTime: nowSeconds() - 10 };
    expect(await mfa.mayChangeFactors({ ...recent, idp: 'local', amr: ['pwd', 'otp', 'mfa'] })).toBe(true);
    expect(await mfa.mayChangeFactors({ ...recent, idp: 'local', amr: ['pwd'] })).toBe(false);
    // An upstream sign-in asserting a one-time code or a hardware key: not a use of this user's app.
    expect(await mfa.mayChangeFactors({ ...recent, idp: 'corp', amr: ['otp', 'mfa'] })).toBe(false);
    expect(await mfa.mayChangeFactors({ ...recent, idp: 'corp', amr: ['hwk', 'mfa'] })).toBe(false);
    // A user with nothing may still enroll after any recent sign-in, an upstream one too.
    expect(
      await mfa.mayChangeFactors({
        subjectId: 'u-nothing-at-all',
        authTime: nowSeconds() - 10,
        idp: 'corp',
        amr: ['pwd'],
      }),
    ).toBe(true);
  });

  it('lets a pending sign-in enroll only when its decision was enroll and the user still holds nothing', async () => {
    const pending = { subjectId: 'u-pending', tenant: null, amr: ['pwd'], idp: 'local' };
    expect(await enrollment.pendingMayEnroll(pending)).toBe(false);
    expect(await enrollment.pendingMayEnroll({ ...pending, enroll: true })).toBe(true);
    await enrolled('u-pending');
    expect(await enrollment.pendingMayEnroll({ ...pending, enroll: true })).toBe(false);
  });

  it('renews recovery codes only for a user with a second factor, and removes them with the last one', async () => {
    expect(await enrollment.renewRecoveryCodes('u-nothing', at('192.0.2.1'))).toBeUndefined();
    const subjectId = 'u-remove';
    const first = await enrolled(subjectId);
    const renewed = await enrollment.renewRecoveryCodes(subjectId, at('192.0.2.1'));
    expect(renewed).toHaveLength(10);
    expect(renewed).not.toContain(first.recoveryCodes?.[0]);
    const totp = (await mfa.listFactors(subjectId)).find((f) => f.kind === 'totp');
    const recovery = (await mfa.listFactors(subjectId)).find((f) => f.kind === RECOVERY_KIND);
    // Recovery codes go as a set, never one by one; another user's factor is not this user's.
    expect(await enrollment.removeFactor(subjectId, recovery?.id ?? '', at('192.0.2.1'))).toBe(false);
    expect(await enrollment.removeFactor('u-first', totp?.id ?? '', at('192.0.2.1'))).toBe(false);
    expect(await enrollment.removeFactor(subjectId, totp?.id ?? '', at('192.0.2.1'))).toBe(true);
    expect(await mfa.listFactors(subjectId)).toEqual([]);
    expect(eventsOf(subjectId).slice(-2)).toEqual(['mfa_removed:totp', `mfa_removed:${RECOVERY_KIND}`]);
  });
});

describe('SecondStepService', () => {
  it('accepts a recovery code once, and a code of the app once', async () => {
    const subjectId = 'u-codes';
    const { secret, recoveryCodes } = await enrolled(subjectId);
    const code = recoveryCodes?.[0] ?? '';
    const from = { origin: at('192.0.2.4'), clientId: 'c1' };
    expect(await secondStep.verifyCode(subjectId, code.toUpperCase(), from)).toEqual({
      outcome: 'verified',
      kind: RECOVERY_KIND,
    });
    expect(await secondStep.verifyCode(subjectId, code, from)).toEqual({ outcome: 'invalid' });
    // The enrollment spent the current step; the next one is within the window, once.
    expect(await secondStep.verifyCode(subjectId, totpCode(secret, 1), from)).toEqual({
      outcome: 'verified',
      kind: 'totp',
    });
    expect(await secondStep.verifyCode(subjectId, totpCode(secret, 1), from)).toEqual({ outcome: 'invalid' });
    expect(
      events
        .filter((e) => e.subjectId === subjectId && e.endpoint === 'mfa')
        .map((e) => [e.name, e.factor, e.clientId]),
    ).toEqual([
      ['mfa_succeeded', RECOVERY_KIND, 'c1'],
      ['mfa_failed', undefined, 'c1'],
      ['mfa_succeeded', 'totp', 'c1'],
      ['mfa_failed', undefined, 'c1'],
    ]);
    // Successes and failures carry the request's origin for the audit line (address, user agent, request id).
    for (const e of events.filter((e) => e.subjectId === subjectId && e.endpoint === 'mfa'))
      expect(e).toMatchObject({
        remoteAddress: '192.0.2.4',
        userAgent: 'mfa-services-test',
        requestId: 'req-192.0.2.4',
      });
  });

  it('stops checking codes at the failure limit, per user and address', async () => {
    const subjectId = 'u-limit';
    const { secret } = await enrolled(subjectId);
    const from = { origin: at('192.0.2.5') };
    for (let i = 0; i < MAX_FAILURES; i++)
      expect(await secondStep.verifyCode(subjectId, '000000x', from)).toEqual({ outcome: 'invalid' });
    const refused = await secondStep.verifyCode(subjectId, totpCode(secret, 1), from);
    expect(refused.outcome).toBe('refused');
    // The code was not spent: from another address it still signs in.
    expect(await secondStep.verifyCode(subjectId, totpCode(secret, 1), { origin: at('192.0.2.6') })).toEqual({
      outcome: 'verified',
      kind: 'totp',
    });
  });

  it('decides the step after the password and marks only an enroll decision on the pending sign-in', async () => {
    const first = (subjectId: string) => ({ subjectId, tenant: null, amr: ['pwd'], idp: 'local' });
    expect(await secondStep.afterFirstFactor('b-none', first('u-none'), undefined)).toBe('none');
    expect(await mfa.pending('b-none')).toBeUndefined();

    const required = services(
      new MfaService(store.factors, store.records, { ...cfg.mfa, required: true }, undefined),
    ).secondStep;
    expect(await required.afterFirstFactor('b-enroll', first('u-none'), undefined)).toBe('enroll');
    expect(await mfa.pending('b-enroll')).toMatchObject({ subjectId: 'u-none', enroll: true });

    await enrolled('u-verify');
    expect(await secondStep.afterFirstFactor('b-verify', first('u-verify'), undefined)).toBe('verify');
    expect(await mfa.pending('b-verify')).not.toHaveProperty('enroll');
    expect(await secondStep.offersCode('u-verify')).toBe(true);
    expect(await secondStep.offersCode('u-none')).toBe(false);
  });

  it('finishes a pending sign-in once, with the amr of the factor used', async () => {
    const pending = { subjectId: '1', tenant: null, amr: ['pwd'], idp: 'local' };
    await mfa.savePending('b-finish', pending);
    const [first, second] = await Promise.all([
      secondStep.finishPending('b-finish', pending, RECOVERY_KIND),
      secondStep.finishPending('b-finish', pending, RECOVERY_KIND),
    ]);
    expect([first, second].filter((f) => f !== undefined)).toEqual([
      { user: expect.objectContaining({ subjectId: '1' }), amr: ['pwd', 'otp', 'mfa'] },
    ]);
    expect(await mfa.pending('b-finish')).toBeUndefined();
    // A user who is gone or inactive does not sign in.
    for (const subjectId of ['nobody', '4']) {
      await mfa.savePending('b-gone', { ...pending, subjectId });
      expect(await secondStep.finishPending('b-gone', { ...pending, subjectId }, 'totp')).toBeUndefined();
    }
  });

  it('is for the pending sign-in first, else a session that can step up', async () => {
    const session = { sid: 's', subjectId: 'u-verify', authTime: 0, amr: ['pwd'], idp: 'local', tenant: null };
    expect(await secondStep.who('b-verify', async () => undefined)).toMatchObject({
      pending: { subjectId: 'u-verify' },
    });
    expect(await secondStep.who('b-empty', async () => session)).toEqual({ session });
    expect(await secondStep.who('b-empty', async () => ({ ...session, subjectId: 'u-none' }))).toBeUndefined();
    expect(await secondStep.who('b-empty', async () => undefined)).toBeUndefined();
  });
});
