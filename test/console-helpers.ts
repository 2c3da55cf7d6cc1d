/**
 * Driving the web console (/admin) over `app.inject` without a browser: an administrator's
 * sign-in through the console's own code flow, with the second factor its scopes need.
 */
import { expect } from 'vitest';
import { Browser, input, isLoginPage, type Step } from './authorize-helpers.js';
import type { SigilEvent } from '../src/events/events.js';
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

/** The console admin of the console tests: a config-file user with the admin role. */
export const CONSOLE_ROOT = { subjectId: 'adm-1', username: 'root', password: 'root', claims: { role: 'sigil-admin' } };

/** Posts a form of repeated fields (checkboxes) as the browser does. */
export function postFields(b: Browser, url: string, fields: [string, string][]): Promise<Step> {
  return b.send('POST', url, new URLSearchParams(fields).toString());
}

/** The `admin_changed` events of `action` the console made as `CONSOLE_ROOT`. */
export function consoleChanges(events: SigilEvent[], action: string): SigilEvent[] {
  return events.filter(
    (e) =>
      e.name === 'admin_changed' &&
      e.action === action &&
      e.clientId === 'sigil-console' &&
      e.subjectId === CONSOLE_ROOT.subjectId &&
      e.endpoint === '/admin',
  );
}

/** A page of the console as `b`, which must answer 200 and show no value it lacks ("undefined"). */
export async function consolePage(b: Browser, url: string): Promise<Step> {
  const res = await b.get(url);
  expect(res.status, res.body).toBe(200);
  expect(res.body).not.toContain('undefined');
  return res;
}

/** Posts `fields` as `b` with the CSRF token of the console page at `from`. */
export async function consoleSubmit(b: Browser, from: string, url: string, fields: [string, string][]): Promise<Step> {
  return postFields(b, url, [['csrf_token', input((await consolePage(b, from)).body, 'csrf_token')], ...fields]);
}
