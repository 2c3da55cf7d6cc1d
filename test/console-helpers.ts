/**
 * Driving the web console (/admin) over `app.inject` without a browser: an administrator's
 * sign-in through the console's own code flow, with the second factor its scopes need.
 */
import { expect } from 'vitest';
import { Browser, isLoginPage } from './authorize-helpers.js';
import type { TestSigil } from './helpers.js';
import { enrollTotp, isMfaPage, submitCode, totpCode } from './mfa-helpers.js';

/**
 * A browser signed in to the console as `username` (a user whose role is `admin.userRole`, with the
 * password `password`): enrols TOTP in a first browser, then signs in through /admin with it. The
 * console's first page must hold `landing` (by default the users page's search field; an
 * organization admin's console begins elsewhere).
 */
export async function consoleBrowser(
  sigil: TestSigil,
  username: string,
  password = username,
  landing = 'name="username"',
): Promise<Browser> {
  const enrol = new Browser(sigil);
  await enrol.signIn(username, password);
  const { secret } = await enrollTotp(enrol);
  const admin = new Browser(sigil);
  let step = await admin.get('/admin/users');
  for (let i = 0; i < 10 && step.status === 303 && step.location; i++) step = await admin.get(step.location);
  expect(isLoginPage(step), step.body).toBe(true);
  step = await admin.follow(await admin.submitLogin(step, username, password));
  expect(isMfaPage(step), step.body).toBe(true);
  step = await submitCode(admin, step, totpCode(secret, 1));
  for (let i = 0; i < 10 && step.status === 303 && step.location; i++) step = await admin.get(step.location);
  expect(step.status, step.body).toBe(200);
  expect(step.body).toContain(landing);
  return admin;
}
