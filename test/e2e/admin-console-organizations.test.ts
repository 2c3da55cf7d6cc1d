/**
 * The console's organization pages in a real Chromium: the admin signs in to the console
 * (enrolling an authenticator app on the way), creates an organization through the list page's
 * form (a refused name first, marked on its field), sees its settings page, adds a member by
 * username with roles on its members page, changes their roles in the member's row, and opens its
 * invitations page, which says that mail is off here. Each page is axe-clean (WCAG 2.x A and AA)
 * with the basics, uncached and unframeable; the changes reached the organization service. Sigil
 * runs in this process, listening on a free port. Screenshots go to test-results/screenshots.
 */
import type { Browser, Page, Response } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testConfig, startSigil, type TestSigil } from '../helpers.js';
import { audit } from './accessibility.js';
import { enrollTotpAfterPassword, launchChromium, newPage, screenshot } from './browser-fixture.js';
import { freePort } from './ports.js';

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
      identityProviders: [
        {
          name: 'partner-sso',
          displayName: 'Partner SSO',
          authority: 'https://sso.partner.example',
          clientId: 'sigil',
        },
      ],
      organizations: [{ name: 'acme', displayName: 'Acme Corporation', domains: ['acme.example'] }],
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

/** Signs alice in to the console through the identity-first login page and the authenticator enrolment. */
async function signIn(page: Page): Promise<void> {
  await page.goto(`${url}/admin/organizations`);
  await page.waitForURL(/\/account\/login\?interaction=/);
  await page.locator('input[name=username]').fill('alice');
  // An organization lists domains: the login page asks for the username first (identity-first).
  await page.locator('button[name=button][value=next]').click();
  await page.locator('input[name=password]').fill('alice');
  await page.locator('button[name=button][value=login]').click();
  await enrollTotpAfterPassword(page);
}

describe('the console organization pages in Chromium', () => {
  it('lists the organizations under their own navigation entry', async () => {
    await signIn(admin);
    await admin.waitForURL(/\/admin\/users$/);
    await admin
      .getByRole('navigation', { name: 'Console sections' })
      .getByRole('link', { name: 'Organizations' })
      .click();
    await admin.waitForURL(/\/admin\/organizations$/);
    const response = await admin.reload();
    await check(admin, response, 'organizations');
    expect(await admin.getByRole('link', { name: 'Organizations' }).first().getAttribute('aria-current')).toBe('page');
    expect(await admin.locator('table').textContent()).toContain('Acme Corporation');
  });

  it('refuses a bad name on its field, then creates an organization', async () => {
    await admin.getByLabel('Name', { exact: true }).fill('Globex Inc');
    await admin.getByLabel('Display name').fill('Globex');
    await admin.getByLabel('Email domains').fill('globex.example');
    await admin.getByLabel('Partner SSO').check();
    await admin.getByLabel('By email domain').check();
    const [refused] = await Promise.all([
      admin.waitForResponse((r) => r.request().method() === 'POST'),
      admin.getByRole('button', { name: 'Create', exact: true }).click(),
    ]);
    expect(refused.status()).toBe(400);
    await admin.locator('#org-name-error').waitFor();
    expect(await admin.locator('#org-name').getAttribute('aria-invalid')).toBe('true');
    expect(await admin.locator('#org-name').getAttribute('aria-describedby')).toContain('org-name-error');
    // What was typed stays.
    expect(await admin.getByLabel('Display name').inputValue()).toBe('Globex');
    expect(await admin.getByLabel('Partner SSO').isChecked()).toBe(true);
    expect(await audit(admin)).toEqual([]);

    await admin.getByLabel('Name', { exact: true }).fill('globex');
    await admin.getByRole('button', { name: 'Create', exact: true }).click();
    await admin.getByText('The organization has been created.').waitFor();
    expect(admin.url()).toBe(`${url}/admin/organizations/globex?done=consoleOrganizationCreated`);
    await check(admin, null, 'organization');
    expect(await admin.getByLabel('Partner SSO').isChecked()).toBe(true);
    expect(await admin.getByLabel('By email domain').isChecked()).toBe(true);
    expect(await sigil.context.management.organizations.get('globex')).toMatchObject({
      displayName: 'Globex',
      domains: ['globex.example'],
      identityProviders: ['partner-sso'],
      membership: 'domain',
      source: 'store',
    });
  });

  it('adds a member by username with roles, then changes their roles in their row', async () => {
    await admin.getByRole('navigation', { name: 'Organization pages' }).getByRole('link', { name: 'Members' }).click();
    await admin.getByRole('heading', { name: 'Members of Globex' }).waitFor();
    await check(admin, null, 'organization-members');
    expect(await admin.getByLabel('Username or subject').inputValue()).toBe('');
    expect(await admin.getByLabel('Roles', { exact: true }).inputValue()).toBe('');
    await admin.getByLabel('Username or subject').fill('bob');
    await admin.getByLabel('Roles', { exact: true }).fill('billing viewer');
    await admin.getByRole('button', { name: 'Add a member' }).click();
    await admin.getByText('The member has been added.').waitFor();
    const row = admin.locator('table tbody tr').first();
    expect(await row.textContent()).toContain('bob');
    expect(await admin.getByRole('textbox', { name: 'Roles of bob' }).inputValue()).toBe('billing viewer');
    await check(admin, null, 'organization-members');

    await admin.getByRole('textbox', { name: 'Roles of bob' }).fill('viewer');
    await admin.getByRole('button', { name: 'Save the roles of bob' }).click();
    await admin.getByText("The member's roles have been saved.").waitFor();
    expect(await admin.getByRole('textbox', { name: 'Roles of bob' }).inputValue()).toBe('viewer');
    expect((await sigil.context.management.organizations.members('globex', { limit: 10 })).members).toEqual([
      { subject: '2', roles: ['viewer'] },
    ]);
  });

  it('shows the invitations page, which says that mail is off on this server', async () => {
    const response = await admin.goto(`${url}/admin/organizations/globex/invitations`);
    await admin.getByRole('heading', { name: 'Invitations to Globex' }).waitFor();
    expect(await admin.locator('main').textContent()).toContain('Mail is not configured on this server');
    await check(admin, response, 'organization-invitations');
  });
});
