/**
 * A temporary password over HTTP, for a user with an authenticator app: the sign-in with it waits
 * for a new password, and nothing else finishes it: not the one-time code form (a valid code
 * signs nobody in), not the authenticator enrolment, not a second browser; the new password is
 * checked (policy, both fields alike) before it is stored. Once replaced, the second step follows
 * and then the session; the flag is gone. A control: the same user with their own password goes
 * straight to the second step.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Browser, input } from '../authorize-helpers.js';
import { startSigil, type TestSigil } from '../helpers.js';
import { enrollTotp, isMfaPage, submitCode, totpCode } from '../mfa-helpers.js';

const OWN = 'granite-orchard-whistle-90';
const TEMPORARY = 'copper-lantern-harbour-71';
const CHOSEN = 'violet-meadow-compass-38';

let sigil: TestSigil;
let subject: string;
let secret: string;

beforeAll(async () => {
  sigil = await startSigil();
  ({ subjectId: subject } = await sigil.context.management.users.create({ username: 'frank', password: OWN }));
  const b = new Browser(sigil);
  await b.signIn('frank', OWN);
  ({ secret } = await enrollTotp(b));
});
afterAll(async () => {
  await sigil?.close();
});

/** Posts the password on the login page of a fresh browser, not following. */
async function passwordStep(b: Browser, password: string) {
  const page = await b.get('/account/login');
  return b.submitLogin(page, 'frank', password);
}

describe('a temporary password for a user with a second factor', () => {
  it('control: the own password leads to the second step', async () => {
    const step = await passwordStep(new Browser(sigil), OWN);
    expect(step.status).toBe(303);
    expect(step.location).toBe('/account/mfa');
  });

  it('waits for a new password, which neither the code form nor the enrolment can skip', async () => {
    await sigil.context.management.users.update(subject, { password: TEMPORARY, passwordChangeRequired: true });
    const live = async () => (await sigil.context.store.records.sessions.liveOf(subject, Date.now() / 1000)).length;
    const before = await live();
    const b = new Browser(sigil);
    const step = await passwordStep(b, TEMPORARY);
    expect(step.status).toBe(303);
    expect(step.location).toBe('/account/password/required');
    // No session exists for it, not even one whose cookie was never sent.
    expect(await live()).toBe(before);

    // The code form has no sign-in to finish: a valid code signs nobody in.
    const mfa = await b.get('/account/mfa');
    expect(isMfaPage(mfa)).toBe(false);
    const forced = await b.get('/account/password/required');
    const code = await b.post('/account/mfa', {
      csrf_token: input(forced.body, 'csrf_token'),
      code: totpCode(secret),
      button: 'verify',
    });
    expect(code.status).not.toBe(303);
    expect(b.cookies.has('sigil.session')).toBe(false);
    // Nor may this sign-in add an authenticator.
    expect((await b.get('/account/totp')).body).not.toContain('totp-secret');
    // Another browser has nothing waiting.
    expect((await new Browser(sigil).get('/account/password/required')).status).toBe(400);

    // The page still waits: weak and mismatched passwords are refused, nothing stored.
    let page = await b.get('/account/password/required');
    expect(page.status).toBe(200);
    for (const [password, confirm] of [
      ['password', 'password'],
      [CHOSEN, `${CHOSEN}!`],
    ]) {
      const refused = await b.post('/account/password/required', {
        csrf_token: input(page.body, 'csrf_token'),
        new_password: password ?? '',
        confirm_password: confirm ?? '',
        button: 'change',
      });
      expect(refused.status).toBe(400);
      expect(refused.body).toContain('aria-describedby="password-hint password-error"');
      page = refused;
    }
    expect((await sigil.context.management.users.get(subject)).passwordChangeRequired).toBe(true);

    const changed = await b.post('/account/password/required', {
      csrf_token: input(page.body, 'csrf_token'),
      new_password: CHOSEN,
      confirm_password: CHOSEN,
      button: 'change',
    });
    // Then the second step, and only then the session.
    expect(changed.status).toBe(303);
    expect(changed.location).toBe('/account/mfa');
    expect(b.cookies.has('sigil.session')).toBe(false);
    const second = await b.get('/account/mfa');
    expect(isMfaPage(second)).toBe(true);
    const done = await submitCode(b, second, totpCode(secret, 1));
    expect(done.status, done.body).toBe(200);
    expect(b.cookies.has('sigil.session')).toBe(true);
    expect((await sigil.context.management.users.get(subject)).passwordChangeRequired).toBe(false);
    // The page is spent: nothing waits any more.
    expect((await b.get('/account/password/required')).status).toBe(400);
    // The temporary password no longer signs in; the new one goes to the second step.
    expect((await passwordStep(new Browser(sigil), TEMPORARY)).status).toBe(200);
    expect((await passwordStep(new Browser(sigil), CHOSEN)).location).toBe('/account/mfa');
  });
});
