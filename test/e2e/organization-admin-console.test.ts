/**
 * An organization admin's console in a real Chromium: alice, a member of `acme` holding the
 * organization role `admin` and no admin role of Sigil's, signs in to the console (enrolling an
 * authenticator app on the way, as the console client requires a second factor), lands on the
 * list of the organizations she administers, which shows `acme` only and a navigation of that
 * one section, changes bob's roles on its members page, and invites an address on its invitations
 * page; the real SMTP receiver gets the invitation. The full console's pages answer her 403. Each
 * page is axe-clean (WCAG 2.x A and AA) with the basics, uncached and unframeable. Sigil runs in
 * this process, listening on a free port. Screenshots go to test-results/screenshots.
 */
import type { Browser, Page, Response } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSigil, testConfig, type TestSigil } from '../helpers.js';
import { SmtpReceiver } from '../smtp-receiver.js';
import { audit } from './accessibility.js';
import { launchChromium, newPage, screenshot, signInEnrollingTotp } from './browser-fixture.js';
import { freePort } from './ports.js';

let browser: Browser;
let sigil: TestSigil;
let smtp: SmtpReceiver;
let url: string;
let page: Page;

beforeAll(async () => {
  const port = await freePort();
  url = `http://127.0.0.1:${port}`;
  smtp = await new SmtpReceiver().start();
  [browser, sigil] = await Promise.all([
    launchChromium(),
    startSigil({
      ...testConfig(),
      issuer: url,
      email: { smtpUrl: smtp.url, from: 'id@sigil.example' },
      organizations: [
        { name: 'acme', displayName: 'Acme Corporation' },
        { name: 'globex', displayName: 'Globex' },
      ],
    }),
  ]);
  const organizations = sigil.context.management.organizations;
  await organizations.putMember('acme', '1', ['admin']);
  await organizations.putMember('acme', '2', ['viewer']);
  await organizations.putMember('globex', '3', ['admin']);
  await sigil.app.listen({ host: '127.0.0.1', port });
  page = (await newPage(browser, { viewport: { width: 1000, height: 700 } })).page;
  page.setDefaultTimeout(10_000);
}, 60_000);
afterAll(async () => {
  await Promise.allSettled([browser?.close(), sigil?.close(), smtp?.close()]);
});

/** A console page's checks: uncached, unframeable, axe-clean with the basics; its screenshot. */
async function check(response: Response | null, name: string): Promise<void> {
  await page.locator('h1').waitFor();
  if (response) {
    expect(response.headers()['cache-control'], name).toContain('no-store');
    expect(response.headers()['content-security-policy'], name).toContain("frame-ancestors 'none'");
  }
  expect(await audit(page), name).toEqual([]);
  await screenshot(page, `console-${name}`);
}

describe("an organization admin's console in Chromium", () => {
  it('signs her in with a second factor to the list of the organizations she administers', async () => {
    await page.goto(`${url}/admin`);
    await signInEnrollingTotp(page);
    await page.waitForURL(/\/admin\/my-organizations$/);
    const response = await page.reload();
    await check(response, 'my-organizations');
    const nav = page.getByRole('navigation', { name: 'Console sections' }).getByRole('link');
    expect(await nav.allTextContents()).toEqual(['Your organizations']);
    const listed = (await page.locator('table').textContent()) ?? '';
    expect(listed).toContain('Acme Corporation');
    expect(listed).not.toContain('Globex');
  });

  it("changes a member's roles on her organization's members page", async () => {
    await page.getByRole('link', { name: 'Members of Acme Corporation' }).click();
    await page.getByRole('heading', { name: 'Members of Acme Corporation' }).waitFor();
    await check(null, 'my-organization-members');
    expect(await page.getByRole('button', { name: 'Add a member' }).count()).toBe(0);
    expect(await page.locator('table').textContent()).toContain('Bob');
    await page.getByRole('textbox', { name: 'Roles of bob' }).fill('viewer billing');
    await page.getByRole('button', { name: 'Save the roles of bob' }).click();
    await page.getByText("The member's roles have been saved.").waitFor();
    expect(await page.getByRole('textbox', { name: 'Roles of bob' }).inputValue()).toBe('viewer billing');
    await check(null, 'my-organization-members-saved');
    expect((await sigil.context.management.organizations.members('acme', { limit: 10 })).members).toEqual([
      { subject: '1', roles: ['admin'] },
      { subject: '2', roles: ['viewer', 'billing'] },
    ]);
  });

  it('invites an address, and the mail arrives', async () => {
    await page
      .getByRole('navigation', { name: 'Organization pages' })
      .getByRole('link', { name: 'Invitations' })
      .click();
    await page.getByRole('heading', { name: 'Invitations to Acme Corporation' }).waitFor();
    await check(null, 'my-organization-invitations');
    await page.getByLabel('Email address').fill('vera@example.net');
    await page.getByLabel('Roles', { exact: true }).fill('viewer');
    await page.getByRole('button', { name: 'Send the invitation' }).click();
    await page.getByText('The invitation has been sent.').waitFor();
    const mail = await smtp.waitFor(1);
    expect(mail.to).toEqual(['vera@example.net']);
    expect(mail.subject).toContain('Acme Corporation');
    expect(await page.locator('table').textContent()).toContain('vera@example.net');
    await check(null, 'my-organization-invitations-sent');
  });

  it("answers 403 for the full console's pages and for another organization's", async () => {
    for (const path of [
      '/admin/users',
      '/admin/organizations/acme/members',
      '/admin/my-organizations/globex/members',
    ]) {
      const response = await page.goto(`${url}${path}`);
      expect(response?.status(), path).toBe(403);
      expect(await page.locator('main').textContent(), path).not.toContain('Globex');
    }
    await check(null, 'my-organizations-refused');
    await page.getByRole('link', { name: 'Back to the console' }).click();
    await page.waitForURL(/\/admin\/my-organizations$/);
  });
});
