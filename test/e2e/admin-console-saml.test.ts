/**
 * The console's SAML service provider pages in a real Chromium: the admin signs in to the console
 * (enrolling an authenticator app on the way), opens the SAML section from the navigation, sends
 * the registration form with an ACS URL that is not http(s) (refused on its field, what was typed
 * kept), then registers an SP by pasting its metadata, sees its page, changes its settings there
 * (an unknown organization refused on its field, then every setting saved; a form read before
 * another admin's change refused with the current settings shown), and deletes it. Each page is
 * axe-clean (WCAG 2.x A and AA) with the basics, uncached and unframeable, and nothing scrolls
 * sideways at 390 px. Sigil runs in this
 * process, listening on a free port. Screenshots go to test-results/screenshots.
 */
import type { Browser, Page, Response } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSigil, testConfig, type TestSigil } from '../helpers.js';
import { spMetadata } from '../saml-helpers.js';
import { audit } from './accessibility.js';
import { launchChromium, newPage, screenshot, signInEnrollingTotp } from './browser-fixture.js';
import { freePort } from './ports.js';

const SP = 'https://pasted.example/sp';
const ACS = 'https://pasted.example/acs';

let browser: Browser;
let sigil: TestSigil;
let url: string;
let admin: Page;

beforeAll(async () => {
  const port = await freePort();
  url = `http://127.0.0.1:${port}`;
  const base = testConfig();
  [browser, sigil] = await Promise.all([
    launchChromium(),
    startSigil({
      issuer: url,
      users: (base.users ?? []).map((u) =>
        u.username === 'alice' ? { ...u, claims: { ...u.claims, role: ['admin', 'sigil-admin'] } } : u,
      ),
      saml: { enabled: true },
      organizations: [{ name: 'acme', displayName: 'Acme' }],
    }),
  ]);
  await sigil.app.listen({ host: '127.0.0.1', port });
  admin = (await newPage(browser, { viewport: { width: 1000, height: 700 } })).page;
  admin.setDefaultTimeout(10_000);
}, 60_000);
afterAll(async () => {
  await Promise.allSettled([browser?.close(), sigil?.close()]);
});

/** A console page's checks: uncached, unframeable, axe-clean with the basics; its screenshot. */
async function check(page: Page, response: Response | null, name: string): Promise<void> {
  await page.locator('h1').waitFor();
  if (response) {
    expect(response.headers()['cache-control'], name).toContain('no-store');
    expect(response.headers()['content-security-policy'], name).toContain("frame-ancestors 'none'");
  }
  expect(await audit(page), name).toEqual([]);
  await screenshot(page, `console-${name}`);
}

describe('the console SAML pages in Chromium', () => {
  it('opens the SAML section from the navigation', async () => {
    await admin.goto(`${url}/admin`);
    await signInEnrollingTotp(admin);
    await admin.waitForURL(/\/admin\/users$/);
    await admin.getByRole('navigation', { name: 'Console sections' }).getByRole('link', { name: 'SAML' }).click();
    await admin.waitForURL(/\/admin\/saml-service-providers$/);
    const response = await admin.reload();
    await check(admin, response, 'saml-service-providers');
    expect(await admin.getByRole('link', { name: 'SAML' }).first().getAttribute('aria-current')).toBe('page');
  });

  it('refuses an ACS URL that is not http(s) on its field, then registers an SP from pasted metadata', async () => {
    await admin.getByLabel('Entity ID').fill(SP);
    await admin.getByLabel('Assertion consumer service URLs').fill('javascript:alert(1)');
    await admin.getByLabel('Display name').fill('Pasted App');
    const [refused] = await Promise.all([
      admin.waitForResponse((r) => r.request().method() === 'POST'),
      admin.getByRole('button', { name: 'Register a service provider' }).click(),
    ]);
    expect(refused.status()).toBe(400);
    await admin.locator('#sp-acs-urls-error').waitFor();
    expect(await admin.locator('#sp-acs-urls').getAttribute('aria-invalid')).toBe('true');
    expect(await admin.locator('#sp-acs-urls').getAttribute('aria-describedby')).toContain('sp-acs-urls-error');
    expect(await admin.getByLabel('Display name').inputValue()).toBe('Pasted App');
    expect(await audit(admin)).toEqual([]);

    await admin.getByLabel('Entity ID').fill('');
    await admin.getByLabel('Assertion consumer service URLs').fill('');
    await admin.getByLabel('Metadata XML').fill(spMetadata(SP, [ACS]));
    await admin.getByRole('button', { name: 'Register a service provider' }).click();
    await admin.getByText('The service provider has been registered').waitFor();
    expect(admin.url()).toBe(`${url}/admin/saml-service-providers/${encodeURIComponent(SP)}?done=consoleSamlCreated`);
    await check(admin, null, 'saml-service-provider');
    expect(await admin.locator('dl').textContent()).toContain(ACS);
    expect(sigil.context.saml.serviceProviders.get(SP)?.displayName).toBe('Pasted App');
    // Nothing scrolls sideways on a phone, the list with a long metadata form included.
    await admin.setViewportSize({ width: 390, height: 844 });
    expect(await audit(admin), 'phone: one SP').toEqual([]);
    await admin.goto(`${url}/admin/saml-service-providers`);
    expect(await audit(admin), 'phone: the list').toEqual([]);
    await admin.goBack();
    await admin.setViewportSize({ width: 1000, height: 700 });
  });

  it('changes every setting of the stored SP on its page; a refused field is marked on the field', async () => {
    await admin.getByLabel('Organization').fill('nope');
    const [refused] = await Promise.all([
      admin.waitForResponse((r) => r.request().method() === 'POST'),
      admin.getByRole('button', { name: 'Save the settings' }).click(),
    ]);
    expect(refused.status()).toBe(400);
    await admin.locator('#sp-organization-error').waitFor();
    expect(await admin.locator('#sp-organization').getAttribute('aria-invalid')).toBe('true');
    expect(await admin.locator('#sp-organization').getAttribute('aria-describedby')).toContain('sp-organization-error');
    expect(await admin.locator('#sp-organization-error').textContent()).toContain('unknown organization');
    expect(await audit(admin)).toEqual([]);
    expect(sigil.context.saml.serviceProviders.get(SP)?.organization).toBeNull();

    await admin.getByLabel('Organization').fill('acme');
    await admin.getByLabel('Display name').fill('Renamed App');
    await admin.getByLabel('Attributes').fill('mail = email\ndisplayName = name');
    await admin.getByLabel('NameID format').selectOption('emailAddress');
    await admin.getByLabel("Ask for the user's consent").check();
    await admin.getByLabel('Sign the Response').uncheck();
    await admin.getByRole('button', { name: 'Save the settings' }).click();
    await admin.getByText("The service provider's settings have been saved").waitFor();
    expect(admin.url()).toBe(`${url}/admin/saml-service-providers/${encodeURIComponent(SP)}?done=consoleSamlSaved`);
    await check(admin, null, 'saml-service-provider-saved');
    expect(sigil.context.saml.serviceProviders.get(SP)).toMatchObject({
      displayName: 'Renamed App',
      attributes: { mail: 'email', displayName: 'name' },
      nameIdFormat: 'emailAddress',
      organization: 'acme',
      requireConsent: true,
      signResponse: false,
      acsUrls: [ACS],
    });
    // The form shows what is in force now; an attribute left out is removed.
    expect(await admin.getByLabel('Display name').inputValue()).toBe('Renamed App');
    await admin.getByLabel('Attributes').fill('mail = email');
    await admin.getByRole('button', { name: 'Save the settings' }).click();
    await admin.getByText("The service provider's settings have been saved").waitFor();
    expect(sigil.context.saml.serviceProviders.get(SP)?.attributes).toEqual({ mail: 'email' });
  });

  it('refuses a form read before another change, showing the settings now in force', async () => {
    // Another admin changes the SP after this page was read.
    await sigil.context.management.samlServiceProviders.update(SP, { displayName: 'Changed Elsewhere' }, '*');
    await admin.getByLabel('Display name').fill('Mine');
    const [stale] = await Promise.all([
      admin.waitForResponse((r) => r.request().method() === 'POST'),
      admin.getByRole('button', { name: 'Save the settings' }).click(),
    ]);
    expect(stale.status()).toBe(412);
    await admin.getByRole('alert').waitFor();
    expect(await admin.getByRole('alert').textContent()).toContain('Someone changed this service provider');
    expect(await admin.getByLabel('Display name').inputValue()).toBe('Changed Elsewhere');
    expect(sigil.context.saml.serviceProviders.get(SP)?.displayName).toBe('Changed Elsewhere');
    await check(admin, null, 'saml-service-provider-stale');
    // Sent again from the page now shown, it is saved.
    await admin.getByLabel('Display name').fill('Mine');
    await admin.getByRole('button', { name: 'Save the settings' }).click();
    await admin.getByText("The service provider's settings have been saved").waitFor();
    expect(sigil.context.saml.serviceProviders.get(SP)?.displayName).toBe('Mine');
  });

  it('deletes the stored SP', async () => {
    await admin.getByRole('button', { name: 'Delete service provider' }).click();
    await admin.getByText('The service provider has been deleted.').waitFor();
    await check(admin, null, 'saml-service-providers-after-delete');
    expect(sigil.context.saml.serviceProviders.get(SP)).toBeUndefined();
  });
});
