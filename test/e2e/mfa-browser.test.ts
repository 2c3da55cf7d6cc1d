/**
 * Multi-factor sign-in in a real Chromium: an authenticator app enrolled from /account
 * by reading the key off the page (codes computed here with otpauth), sign-in with password and
 * TOTP, a recovery code used once, keyboard-only use of the new pages, German texts. Screenshots
 * of each page under test-results/screenshots/, and the accessibility basics (`audit`) on each.
 */
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { totpCode } from '../mfa-helpers.js';
import {
  authorizeUrl,
  type BrowserFixture,
  callbackResponse,
  CONSENT,
  newPage,
  screenshot,
  signInDirectly,
  startBrowserFixture,
  submitLogin,
  VIEWPORTS,
} from './browser-fixture.js';
import { audit, focused } from './accessibility.js';

let f: BrowserFixture;
/** Alice's authenticator key and recovery codes, as read from the pages by the first test. */
let secret = '';
let recovery: string[] = [];

beforeAll(async () => {
  f = await startBrowserFixture();
});
afterAll(async () => f?.close());

const consentRequest = () =>
  authorizeUrl(f.sigil, {
    client_id: CONSENT.id,
    redirect_uri: `${f.cb.url}/cb`,
    response_type: 'code',
    scope: 'openid profile',
    state: 'mfa',
    code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
    code_challenge_method: 'S256',
  });

/** Screenshot and accessibility basics of the page the browser shows; phone buttons at least 44px high. */
async function check(page: Page, name: string, phone = false): Promise<void> {
  await page.locator('h1').waitFor();
  await screenshot(page, name);
  expect(await audit(page), name).toEqual([]);
  if (phone)
    for (const height of await page
      .locator('button, a.button')
      .evaluateAll((els) => els.map((e) => e.getBoundingClientRect().height)))
      expect(height, `${name}: target height`).toBeGreaterThanOrEqual(44);
}

/** Starts the consent client's request and signs in with alice's password; ends on the second-factor page. */
async function toSecondStep(page: Page): Promise<void> {
  await page.goto(consentRequest());
  await page.waitForURL(/\/account\/login\?interaction=/);
  await submitLogin(page, 'alice');
  await page.waitForURL(/\/account\/mfa/);
}

describe('authenticator app', () => {
  it('enrolls from /account by reading the key from the page, shows ten recovery codes once, lists the factor', async () => {
    const { context, page } = await newPage(f.browser, VIEWPORTS.desktop);
    await signInDirectly(page, f.sigil, 'alice');
    await page.goto(`${f.sigil.url}/account`);
    await check(page, 'mfa-account-empty-desktop');
    await page.getByRole('link', { name: 'Add an authenticator app' }).click();
    await page.waitForURL(/\/account\/totp/);
    await check(page, 'mfa-totp-enroll-desktop');
    expect(await page.getByRole('img', { name: 'QR code to add Sigil to your authenticator app' }).count()).toBe(1);
    secret = ((await page.locator('#totp-secret').textContent()) ?? '').replace(/\s+/g, '');
    expect(secret).toMatch(/^[A-Z2-7]{32}$/);
    await page.getByLabel('Verification code').fill('123 45');
    await page.getByRole('button', { name: 'Activate' }).click();
    await page.getByRole('alert').waitFor();
    await check(page, 'mfa-totp-enroll-error-desktop');
    await page.getByLabel('Verification code').fill(totpCode(secret));
    await page.getByRole('button', { name: 'Activate' }).click();
    await page.getByRole('heading', { name: 'Your recovery codes' }).waitFor();
    await check(page, 'mfa-recovery-codes-desktop');
    recovery = await page.locator('ul.codes code').allTextContents();
    expect(recovery).toHaveLength(10);
    await page.getByRole('link', { name: 'Continue' }).click();
    await page.waitForURL(/\/account$/);
    await check(page, 'mfa-account-desktop');
    expect(await page.locator('ul.factors li').count()).toBe(1);
    await expect(page.getByText('10 of 10 recovery codes left.').count()).resolves.toBe(1);
    await context.close();
  });

  it('signs in with password and a TOTP code computed from the key, then consents', async () => {
    const { context, page } = await newPage(f.browser, VIEWPORTS.phone);
    await toSecondStep(page);
    await check(page, 'mfa-verify-phone', true);
    await page.getByLabel('Verification code').fill(totpCode(secret, 1));
    await page.locator('button[name=button][value=verify]').click();
    await page.waitForURL(/\/consent\?interaction=/);
    const since = f.cb.hits.length;
    await page.locator('button[name=button][value=yes]').click();
    const response = await callbackResponse(page, f.cb, since);
    expect(response.params.code).toBeTruthy();
    expect(response.params.state).toBe('mfa');
    await context.close();
  });

  it('accepts a recovery code once; its second use is refused with an alert', async () => {
    const code = recovery[0] as string;
    const first = await newPage(f.browser, VIEWPORTS.desktop);
    await toSecondStep(first.page);
    await first.page.getByLabel('Verification code').fill(code);
    await first.page.locator('button[name=button][value=verify]').click();
    await first.page.waitForURL(/\/consent\?interaction=/);
    await first.context.close();

    const second = await newPage(f.browser, VIEWPORTS.desktop);
    await toSecondStep(second.page);
    await second.page.getByLabel('Verification code').fill(code);
    await second.page.locator('button[name=button][value=verify]').click();
    await second.page.getByRole('alert').waitFor();
    expect(await second.page.getByRole('alert').textContent()).toContain('not valid');
    expect(second.page.url()).toMatch(/\/account\/mfa$/);
    await check(second.page, 'mfa-verify-error-desktop');
    await second.context.close();
  });
});

describe('keyboard only', () => {
  it('the second step and /account work with the keyboard alone, focus visible throughout', async () => {
    const { context, page } = await newPage(f.browser, VIEWPORTS.desktop);
    await toSecondStep(page);
    await page.waitForFunction(() => document.activeElement?.getAttribute('name') === 'code', undefined, {
      timeout: 5000,
    });
    const order: string[] = [(await focused(page)).id];
    for (let i = 0; i < 2; i++) {
      await page.keyboard.press('Tab');
      const now = await focused(page);
      expect(now.ring, `focus ring on ${now.id}`).toBe(true);
      order.push(now.id);
    }
    expect(order).toEqual(['input[code]', 'button[button=verify]', 'button[button=cancel]']);
    await page.locator('input[name=code]').focus();
    await page.keyboard.type(recovery[1] as string);
    await page.keyboard.press('Enter');
    await page.waitForURL(/\/consent\?interaction=/);

    // /account: the remove button, the add link, the new-codes button and sign-out, in that order.
    await page.goto(`${f.sigil.url}/account`);
    await page.locator('h1').waitFor();
    const accountOrder: string[] = [];
    for (let i = 0; i < 4; i++) {
      await page.keyboard.press('Tab');
      const now = await focused(page);
      expect(now.ring, `focus ring on ${now.id}`).toBe(true);
      accountOrder.push(now.id);
    }
    expect(accountOrder).toEqual(['button[button=remove]', 'a[]', 'button[button=regenerate]', 'a[]']);
    // New recovery codes from the keyboard: focus the button, Enter.
    await page.keyboard.press('Shift+Tab');
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'Your recovery codes' }).waitFor();
    const fresh = await page.locator('ul.codes code').allTextContents();
    expect(fresh).toHaveLength(10);
    expect(fresh).not.toContain(recovery[2]);
    recovery = fresh;
    await context.close();
  });
});

describe('German', () => {
  it('the second step, /account, enrollment and recovery codes read German in the dark scheme and keep their contrast', async () => {
    const { context, page } = await newPage(f.browser, { ...VIEWPORTS.phone, colorScheme: 'dark', locale: 'de-DE' });
    await toSecondStep(page);
    expect(await page.getAttribute('html', 'lang')).toBe('de');
    await page.getByRole('heading', { name: 'Bestätigung in zwei Schritten' }).waitFor();
    expect(await page.getByLabel('Bestätigungscode').count()).toBe(1);
    await check(page, 'mfa-verify-dark-de-phone', true);
    await page.getByLabel('Bestätigungscode').fill(recovery[3] as string);
    await page.getByRole('button', { name: 'Bestätigen' }).click();
    await page.waitForURL(/\/consent\?interaction=/);
    await page.goto(`${f.sigil.url}/account`);
    await page.getByRole('heading', { name: 'Ihr Konto' }).waitFor();
    await check(page, 'mfa-account-dark-de-phone', true);
    await page.getByRole('link', { name: 'Authenticator-App hinzufügen' }).click();
    await page.getByRole('heading', { name: 'Authenticator-App einrichten' }).waitFor();
    await check(page, 'mfa-totp-enroll-dark-de-phone', true);
    await page.goto(`${f.sigil.url}/account`);
    await page.getByRole('button', { name: 'Neue Wiederherstellungscodes erstellen' }).click();
    await page.getByRole('heading', { name: 'Ihre Wiederherstellungscodes' }).waitFor();
    await check(page, 'mfa-recovery-codes-dark-de-phone', true);
    await context.close();
  });
});
