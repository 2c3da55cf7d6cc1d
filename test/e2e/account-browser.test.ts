/**
 * Self-service on /account in a real Chromium: the password changed (the old one then
 * refused, the new one accepted, a weak one refused on the page), sessions listed with their
 * device and one ended (that browser is signed out), a connected app revoked (its refresh token
 * then fails with invalid_grant), profile claims edited and seen at userinfo, and a config user's
 * read-only account. Sigil runs in this process (`createSigil`, listening on a free port), so that
 * the stored user can be added to its store first. Screenshots under test-results/screenshots/,
 * the accessibility basics (`audit`) and axe-core (no serious or critical violation) on each new page.
 */
import { createHash, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { hash } from '@node-rs/argon2';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { basic, startSigil, type TestSigil } from '../helpers.js';
import { audit } from './accessibility.js';
import {
  browserConfig,
  CallbackServer,
  callbackResponse,
  CONSENT,
  launchChromium,
  newPage,
  screenshot,
  submitLogin,
} from './browser-fixture.js';
import { freePort } from './ports.js';

const ERIN = { username: 'erin', password: 'violet kettle harbour' } as const;
const NEW_PASSWORD = 'granite otter lantern 42';
const FIREFOX_ON_WINDOWS = 'Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:128.0) Gecko/20100101 Firefox/128.0';

let browser: Browser;
let sigil: TestSigil;
let cb: CallbackServer;
let url: string;

beforeAll(async () => {
  cb = await new CallbackServer().start();
  const port = await freePort();
  url = `http://127.0.0.1:${port}`;
  [browser, sigil] = await Promise.all([launchChromium(), startSigil({ ...browserConfig(cb.url), issuer: url })]);
  await sigil.context.store.users.addUser({
    subjectId: 's-erin',
    username: ERIN.username,
    tenant: null,
    passwordHash: await hash(ERIN.password),
    claims: { name: 'Erin Example' },
    isActive: true,
  });
  await sigil.app.listen({ host: '127.0.0.1', port });
});
afterAll(async () => {
  await Promise.allSettled([browser?.close(), sigil?.close(), cb?.close()]);
});

/**
 * axe-core's rules engine, evaluated in the page through the DevTools protocol (the page's CSP allows no
 * inline script).
 */
const AXE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

/** Screenshot, the accessibility basics, and axe-core with no serious or critical violation (WCAG 2.1 AA rules). */
async function check(page: Page, name: string): Promise<void> {
  await page.locator('h1').waitFor();
  await screenshot(page, name);
  expect(await audit(page), name).toEqual([]);
  await page.evaluate(AXE);
  const violations = await page.evaluate(async () => {
    const result = await (
      window as unknown as {
        axe: { run: (o: object) => Promise<{ violations: { id: string; impact: string | null }[] }> };
      }
    ).axe.run({
      runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'] },
    });
    return result.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => v.id);
  });
  expect(violations, name).toEqual([]);
}

/** Signs in on the bare login page. */
async function signIn(page: Page, username: string, password: string): Promise<void> {
  await page.goto(`${url}/account/login`);
  await submitLogin(page, username, password);
  await page.getByRole('heading', { name: 'Signed in' }).waitFor();
}

/** A token request with client_secret_basic. */
async function token(
  params: Record<string, string>,
  client: readonly [string, string],
): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${url}/connect/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: basic(client[0], client[1]) },
    body: new URLSearchParams(params),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

describe('password', () => {
  it('refuses a weak password on the page, changes it with the current one; then the old is refused and the new accepted', async () => {
    const { context, page } = await newPage(browser);
    await signIn(page, ERIN.username, ERIN.password);
    await page.goto(`${url}/account`);
    await page.getByRole('link', { name: 'Change your password' }).click();
    await page.waitForURL(/\/account\/password$/);
    await check(page, 'account-password-desktop');
    await page.getByLabel('Current password').fill(ERIN.password);
    await page.getByLabel('New password', { exact: true }).fill('password1');
    await page.getByLabel('New password again').fill('password1');
    await page.getByRole('button', { name: 'Change password' }).click();
    await expect.poll(() => page.getByRole('alert').textContent()).toContain('common or has appeared in data breaches');
    await check(page, 'account-password-weak-desktop');
    await page.getByLabel('Current password').fill(ERIN.password);
    await page.getByLabel('New password', { exact: true }).fill(NEW_PASSWORD);
    await page.getByLabel('New password again').fill(NEW_PASSWORD);
    await page.getByRole('button', { name: 'Change password' }).click();
    await expect.poll(() => page.getByRole('status').textContent()).toContain('Your password has been changed.');
    await context.close();

    const fresh = await newPage(browser);
    await fresh.page.goto(`${url}/account/login`);
    await submitLogin(fresh.page, ERIN.username, ERIN.password);
    await expect
      .poll(() => fresh.page.getByRole('alert').textContent())
      .toContain('The username or password is incorrect.');
    await submitLogin(fresh.page, ERIN.username, NEW_PASSWORD);
    await fresh.page.getByRole('heading', { name: 'Signed in' }).waitFor();
    await fresh.context.close();
  });

  it('shows a config-file user why the password and profile cannot change here', async () => {
    const { context, page } = await newPage(browser);
    await signIn(page, 'alice', 'alice');
    await page.goto(`${url}/account/password`);
    await check(page, 'account-password-read-only-desktop');
    expect(await page.locator('#read-only').textContent()).toContain("set in the server's configuration file");
    expect(await page.locator('input[type=password]').count()).toBe(0);
    await page.goto(`${url}/account/profile`);
    expect(await page.getByLabel('Full name').getAttribute('readonly')).not.toBeNull();
    expect(await page.getByRole('button', { name: 'Save' }).count()).toBe(0);
    await context.close();
  });
});

describe('sessions', () => {
  it('lists the sessions with their device; ending the other one signs that browser out', async () => {
    const here = await newPage(browser);
    const there = await newPage(browser, { userAgent: FIREFOX_ON_WINDOWS });
    await signIn(there.page, 'bob', 'bob');
    await signIn(here.page, 'bob', 'bob');
    await here.page.goto(`${url}/account`);
    await here.page.getByRole('link', { name: 'Your sessions' }).click();
    await here.page.waitForURL(/\/account\/sessions$/);
    await check(here.page, 'account-sessions-desktop');
    const items = await here.page.locator('ul.factors li').allTextContents();
    expect(items.join('|')).toContain('Firefox on Windows');
    expect(items.join('|')).toMatch(/Chrome on Linux \(this browser\)|Headless Chrome on Linux \(this browser\)/);
    await here.page.getByRole('button', { name: /^End session: Firefox on Windows/ }).click();
    await expect.poll(() => here.page.getByRole('status').textContent()).toContain('The session has been ended.');
    expect(await here.page.getByRole('button', { name: /^End session/ }).count()).toBe(0);

    await there.page.goto(`${url}/account`);
    await there.page.waitForURL(/\/account\/login/);
    await here.page.goto(`${url}/account`);
    await here.page.getByRole('heading', { name: 'Your account', exact: true }).waitFor();
    await Promise.all([here.context.close(), there.context.close()]);
  });
});

describe('connected apps', () => {
  it('lists the app the user consented to; revoking it makes its refresh token fail with invalid_grant', async () => {
    const { context, page } = await newPage(browser);
    const verifier = randomBytes(32).toString('base64url');
    const params = {
      client_id: CONSENT.id,
      redirect_uri: `${cb.url}/cb`,
      response_type: 'code',
      scope: 'openid profile offline_access',
      state: 'apps',
      prompt: 'consent',
      code_challenge: createHash('sha256').update(verifier).digest('base64url'),
      code_challenge_method: 'S256',
    };
    const since = cb.hits.length;
    await page.goto(`${url}/connect/authorize?${new URLSearchParams(params)}`);
    await submitLogin(page, 'alice', 'alice');
    await page.waitForURL(/\/consent\?interaction=/);
    await page.getByLabel('Remember my decision').check();
    await page.locator('button[name=button][value=yes]').click();
    const { params: response } = await callbackResponse(page, cb, since);
    const issued = await token(
      {
        grant_type: 'authorization_code',
        code: response.code ?? '',
        redirect_uri: `${cb.url}/cb`,
        code_verifier: verifier,
      },
      [CONSENT.id, CONSENT.secret],
    );
    expect(issued.status, JSON.stringify(issued.body)).toBe(200);
    const refreshToken = String(issued.body.refresh_token);

    await page.goto(`${url}/account/apps`);
    await check(page, 'account-apps-desktop');
    expect(await page.locator('main').textContent()).toContain('Consent <Example> & Co');
    await page.getByRole('button', { name: 'Revoke access: Consent <Example> & Co' }).click();
    await expect.poll(() => page.getByRole('status').textContent()).toContain("The app's access has been revoked.");
    expect(await page.locator('main').textContent()).toContain('No app can access your account.');

    const refused = await token({ grant_type: 'refresh_token', refresh_token: refreshToken }, [
      CONSENT.id,
      CONSENT.secret,
    ]);
    expect(refused.status).toBe(400);
    expect(refused.body.error).toBe('invalid_grant');
    // The consent went with it: the client asks again.
    const { prompt: _prompt, ...again } = params;
    await page.goto(`${url}/connect/authorize?${new URLSearchParams(again)}`);
    await page.waitForURL(/\/consent\?interaction=/);
    await context.close();
  });
});

describe('profile', () => {
  it('edits the allowed claims, shows a refused value, and userinfo returns the new ones', async () => {
    const { context, page } = await newPage(browser);
    await signIn(page, ERIN.username, NEW_PASSWORD);
    await page.goto(`${url}/account`);
    await page.getByRole('link', { name: 'Your profile' }).click();
    await page.waitForURL(/\/account\/profile$/);
    await check(page, 'account-profile-desktop');
    expect(await page.getByLabel('Full name').inputValue()).toBe('Erin Example');
    await page.getByLabel('Full name').fill('Erin E. Example');
    // A right-to-left override would make the name read otherwise in apps.
    await page.getByLabel('Given name').fill('Erin\u202e');
    await page.getByRole('button', { name: 'Save' }).click();
    await page.getByRole('alert').waitFor();
    await check(page, 'account-profile-invalid-desktop');
    expect(await page.getByLabel('Given name').getAttribute('aria-invalid')).toBe('true');
    await page.getByLabel('Given name').fill('Erin');
    await page.getByLabel('Family name').fill('Example');
    await page.getByRole('button', { name: 'Save' }).click();
    await expect.poll(() => page.getByRole('status').textContent()).toContain('Your profile has been saved.');
    await context.close();

    const tokens = await token(
      { grant_type: 'password', username: ERIN.username, password: NEW_PASSWORD, scope: 'openid profile' },
      ['ropc', 'ropc-secret'],
    );
    const info = await fetch(`${url}/connect/userinfo`, {
      headers: { authorization: `Bearer ${String(tokens.body.access_token)}` },
    });
    expect(await info.json()).toMatchObject({
      sub: 's-erin',
      name: 'Erin E. Example',
      given_name: 'Erin',
      family_name: 'Example',
    });
  });
});
