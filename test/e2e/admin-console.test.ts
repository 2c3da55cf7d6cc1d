/**
 * The web console at /admin in a real Chromium: the admin signs in through
 * Sigil itself (keyboard only: Tab, typing and Enter), enrolling an authenticator app on the way
 * (the console client requires a second factor; codes computed here with otpauth), then searches,
 * creates, disables and edits users, resets a second factor, ends a session, creates a client and
 * sees its secret once, edits its redirect URIs, creates an API scope and an API resource (secret
 * shown once) whose name becomes the aud of a client_credentials token, is refused deleting a
 * scope still in use, rotates the API resource's secret (old and new both pass introspection during
 * the grace period), creates, edits (its secret write-only) and deletes an upstream provider, creates and
 * deletes a group, rotates the signing
 * keys and finds all of it in the event log with the admin as actor; signing out ends the Sigil
 * session too, so the next visit asks for the password again. A user without the admin role gets the "not allowed"
 * page; a POST without the CSRF token is refused and changes nothing; each page is axe-clean,
 * uncached and unframeable, and reads German for a German browser (a service's refusal too). Each page's screenshot
 * (1000 px wide) is saved as console-<page>.png, for docs/managing.md with CONSOLE_SCREENSHOTS=docs.
 */
import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { Page, Response } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ConfigInput } from '../../src/index.js';
import { totpCode } from '../mfa-helpers.js';
import {
  type BrowserFixture,
  browserConfig,
  newPage,
  SCREENSHOTS,
  startBrowserFixture,
  submitLogin,
} from './browser-fixture.js';
import { audit } from './accessibility.js';

/**
 * Where the page screenshots go: the images of docs/managing.md in docs/images with
 * `CONSOLE_SCREENSHOTS=docs` (run it so when the pages change, and commit them), else
 * test-results/screenshots, so that an ordinary run leaves the work tree as it was.
 */
const IMAGES =
  process.env.CONSOLE_SCREENSHOTS === 'docs' ? resolve(import.meta.dirname, '../../docs/images') : SCREENSHOTS;
/** The admin: alice, given the admin role. */
const ADMIN_SUB = '1';

let f: BrowserFixture;
let admin: Page;
let closeAdmin: () => Promise<void>;

function config(cb: string): ConfigInput {
  const base = browserConfig(cb);
  return {
    ...base,
    users: (base.users ?? []).map((u) =>
      u.username === 'alice' ? { ...u, claims: { ...u.claims, role: ['admin', 'sigil-admin'] } } : u,
    ),
    clients: [
      ...(base.clients ?? []),
      {
        clientId: 'provisioner',
        clientSecrets: ['provisioner-secret'],
        allowedGrantTypes: ['client_credentials'],
        allowedScopes: ['scim', 'sigil:admin'],
      },
    ],
  };
}

beforeAll(async () => {
  f = await startBrowserFixture(config);
  const opened = await newPage(f.browser, { viewport: { width: 1000, height: 700 } });
  admin = opened.page;
  admin.setDefaultTimeout(10_000);
  closeAdmin = () => opened.context.close();
}, 60_000);
afterAll(async () => {
  await closeAdmin?.();
  await f?.close();
});

/** Creates a SCIM group as the `provisioner` client, over HTTP. */
async function createGroup(name: string): Promise<void> {
  const token = await fetch(`${f.sigil.url}/connect/token`, {
    method: 'POST',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      authorization: `Basic ${Buffer.from('provisioner:provisioner-secret').toString('base64')}`,
    },
    body: new URLSearchParams({ grant_type: 'client_credentials', scope: 'scim' }),
  }).then((r) => r.json() as Promise<{ access_token: string }>);
  const created = await fetch(`${f.sigil.url}/scim/v2/Groups`, {
    method: 'POST',
    headers: { 'content-type': 'application/scim+json', authorization: `Bearer ${token.access_token}` },
    body: JSON.stringify({ schemas: ['urn:ietf:params:scim:schemas:core:2.0:Group'], displayName: name }),
  });
  expect(created.status).toBe(201);
}

/** Presses Tab until the element matching `selector` has the focus (keyboard only), at most 40 times. */
async function tabTo(page: Page, selector: string): Promise<void> {
  for (let i = 0; i < 40; i++) {
    if (await page.evaluate((s) => document.activeElement?.matches(s) ?? false, selector)) return;
    await page.keyboard.press('Tab');
  }
  throw new Error(`Tab never reached ${selector}`);
}

/** The console page's checks: the headers every page has, axe-clean, and its screenshot in docs/images. */
async function check(page: Page, response: Response | null, name: string): Promise<void> {
  await page.locator('h1').waitFor();
  if (response) {
    const headers = response.headers();
    expect(headers['cache-control'], name).toContain('no-store');
    expect(headers['content-security-policy'], name).toContain("frame-ancestors 'none'");
  }
  expect(await audit(page), name).toEqual([]);
  mkdirSync(IMAGES, { recursive: true });
  await page.screenshot({ path: join(IMAGES, `console-${name}.png`), fullPage: true });
}

/**
 * Signs a user in at the console through the login page and the authenticator enrolment, by keyboard only.
 * Ends where the console sends them.
 */
async function signInEnrolling(page: Page, username: string): Promise<void> {
  await page.goto(`${f.sigil.url}/admin`);
  await page.waitForURL(/\/account\/login\?interaction=/);
  await tabTo(page, '#username');
  await page.keyboard.type(username);
  await page.keyboard.press('Tab');
  await page.keyboard.type(username);
  await page.keyboard.press('Enter');
  await page.waitForURL(/\/account\/totp/);
  const secret = ((await page.locator('#totp-secret').textContent()) ?? '').replace(/\s+/g, '');
  await tabTo(page, 'input[name=code]');
  await page.keyboard.type(totpCode(secret));
  await page.keyboard.press('Enter');
  await page.getByRole('heading', { name: 'Your recovery codes' }).waitFor();
  await tabTo(page, 'a.button.primary');
  await page.keyboard.press('Enter');
}

describe('the web console', () => {
  it('refuses a user without the admin role with a clear page after their second factor', async () => {
    const { context, page } = await newPage(f.browser);
    await signInEnrolling(page, 'bob');
    await page.getByRole('heading', { name: 'Not allowed' }).waitFor();
    expect(await page.textContent('main')).toContain('sigil-admin');
    expect(await audit(page)).toEqual([]);
    expect((await context.cookies()).some((c) => c.name === 'sigil.console')).toBe(false);
    await context.close();
  });

  it('sends a browser with an unusable console token to sign in again, and ends a failed sign-in on an error page', async () => {
    const { context, page } = await newPage(f.browser);
    const url = new URL(f.sigil.url);
    await context.addCookies([
      {
        name: 'sigil.console',
        value: 'not-a-token',
        domain: url.hostname,
        path: '/admin',
        httpOnly: true,
        sameSite: 'Strict',
      },
    ]);
    await page.goto(`${f.sigil.url}/admin/users`);
    await page.waitForURL(/\/account\/login\?interaction=/);
    expect((await context.cookies()).some((c) => c.name === 'sigil.console')).toBe(false);
    const failed = await page.goto(`${f.sigil.url}/admin/callback?error=access_denied&state=x`);
    expect(failed?.status()).toBe(400);
    await page.getByRole('heading', { name: 'Something went wrong' }).waitFor();
    await context.close();
  });

  it('signs the admin in by keyboard alone, enrolling an authenticator app, into the users page', async () => {
    await signInEnrolling(admin, 'alice');
    await admin.waitForURL(/\/admin\/users$/);
    const cookie = (await admin.context().cookies()).find((c) => c.name === 'sigil.console');
    expect(cookie).toMatchObject({ httpOnly: true, sameSite: 'Strict', path: '/admin' });
    const response = await admin.reload();
    await check(admin, response, 'users');
    await expect(
      admin
        .getByRole('navigation', { name: 'Console sections' })
        .getByRole('link', { name: 'Users' })
        .getAttribute('aria-current'),
    ).resolves.toBe('page');
  });

  it('searches users', async () => {
    await admin.getByLabel('Search users by username').fill('bo');
    await admin.getByRole('button', { name: 'Search', exact: true }).click();
    await admin.waitForURL(/q=bo/);
    const rows = admin.locator('table').first().locator('tbody tr');
    await expect(rows.count()).resolves.toBe(1);
    expect(await rows.first().textContent()).toContain('bob');
    // Quotes, backslashes and control characters are searched for as text, never a server error.
    const odd = await admin.goto(`${f.sigil.url}/admin/users?q=${encodeURIComponent('"\\ or \u0000 x')}`);
    expect(odd?.status()).toBe(200);
    await expect(admin.locator('table').first().locator('tbody tr').textContent()).resolves.toContain('None');
  });

  let erin = '';
  /** The API resource `reports`' first secret, and a token whose aud names it (the API test makes them). */
  let reportsSecret = '';
  let reportsToken = '';
  it('creates a user with the keyboard alone, ends their session, edits their claims and groups and disables them, after which their sign-in fails as a wrong password does', async () => {
    await admin.goto(`${f.sigil.url}/admin/users`);
    await tabTo(admin, '#new-username');
    await admin.keyboard.type('erin');
    await admin.keyboard.press('Tab');
    await admin.keyboard.type('Erin Example');
    await admin.keyboard.press('Tab');
    await admin.keyboard.type('erin@example.com');
    await admin.keyboard.press('Tab');
    await admin.keyboard.type('a long enough passphrase, said she');
    await admin.keyboard.press('Enter');
    await admin.getByText('The user has been created.').waitFor();
    erin = decodeURIComponent(new URL(admin.url()).pathname.split('/').at(-1) ?? '');
    await expect(admin.locator('h1').textContent()).resolves.toBe('erin');

    const other = await newPage(f.browser);
    await other.page.goto(`${f.sigil.url}/account/login`);
    await submitLogin(other.page, 'erin', 'a long enough passphrase, said she');
    await other.page.getByRole('heading', { name: 'Signed in' }).waitFor();

    const response = await admin.goto(`${f.sigil.url}/admin/users/${encodeURIComponent(erin)}`);
    await check(admin, response, 'user');
    await expect(admin.locator('ul.factors li').count()).resolves.toBe(1);
    // The session as people read it: when, and in which browser (Chromium's own User-Agent).
    expect(await admin.locator('ul.factors li span').innerText()).toMatch(
      /^Signed in \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC · (Headless )?Chrome on Linux\n\S+$/,
    );
    await admin.locator('ul.factors li button').click();
    await admin.getByText('The session has been ended.').waitFor();
    await expect(admin.getByText('No live sessions.').count()).resolves.toBe(1);

    await admin.getByLabel('Claims (JSON object)').fill('{"name": "Erin E.", "role": ["staff"]}');
    await admin.locator('form[action$="/claims"] button').click();
    await admin.getByText('The claims have been saved.').waitFor();
    expect(await admin.getByLabel('Claims (JSON object)').inputValue()).toContain('staff');
    await admin.getByLabel('Claims (JSON object)').fill('[1, 2]');
    await admin.locator('form[action$="/claims"] button').click();
    await admin.getByText('The claims must be a JSON object.').waitFor();

    await createGroup('staff');
    await admin.reload();
    await admin.getByLabel('staff').check();
    await admin.locator('form[action$="/groups"] button').click();
    await admin.getByText('The group memberships have been saved.').waitFor();
    expect(await admin.locator('dl').textContent()).toContain('staff');
    await expect(admin.getByLabel('staff').isChecked()).resolves.toBe(true);

    await admin.getByRole('button', { name: 'Disable user' }).click();
    await admin.getByText('The user has been disabled').waitFor();
    await other.page.goto(`${f.sigil.url}/account/login`);
    await submitLogin(other.page, 'erin', 'a long enough passphrase, said she');
    await other.page.getByText('The username or password is incorrect.').waitFor();
    await other.context.close();
  });

  it("removes a user's second factors", async () => {
    await admin.goto(`${f.sigil.url}/admin/users/2`);
    expect(await admin.locator('dl').textContent()).toContain('totp');
    await admin.getByRole('button', { name: 'Remove all second factors' }).click();
    await admin.getByText("The user's second factors have been removed").waitFor();
    expect(await admin.locator('dl').textContent()).not.toContain('totp');
  });

  it('creates a client and shows its secret once, then edits its redirect URIs', async () => {
    const list = await admin.goto(`${f.sigil.url}/admin/clients`);
    await check(admin, list, 'clients');
    expect(await admin.locator('table').textContent()).toContain('sigil-console');
    await admin.getByRole('link', { name: 'New client' }).click();
    await admin.getByLabel('clientId').fill('made-in-console');
    await admin.locator('#f-clientName').fill('Made in the console');
    await admin.getByLabel('authorization_code').check();
    await admin.getByLabel('Redirect URIs').fill('https://app.example/cb');
    await admin.getByLabel('Scopes').fill('openid profile');
    await admin.getByRole('button', { name: 'Create', exact: true }).click();
    await admin.getByText('The client has been created.').waitFor();
    const secret = (await admin.locator('#client-secret').textContent()) ?? '';
    expect(secret.length).toBeGreaterThanOrEqual(32);
    await check(admin, null, 'client');

    await admin.goto(`${f.sigil.url}/admin/clients/made-in-console`);
    await expect(admin.locator('#client-secret').count()).resolves.toBe(0);
    await admin.getByLabel('Redirect URIs').fill('https://app.example/cb\nhttps://app.example/other');
    await admin.getByRole('button', { name: 'Save' }).click();
    await admin.getByText('The client has been saved.').waitFor();
    expect(await admin.getByLabel('Redirect URIs').inputValue()).toBe(
      'https://app.example/cb\nhttps://app.example/other',
    );

    // The console's own client is read-only here, as it is to the admin API.
    await admin.goto(`${f.sigil.url}/admin/clients/sigil-console`);
    await admin.getByText('This client is defined in the config file').waitFor();
  });

  it('lists the resources with their source; a config-file one has no edit form', async () => {
    // One stored through /admin/v1: the console says so, not "config file".
    const token = await fetch(`${f.sigil.url}/connect/token`, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        authorization: `Basic ${Buffer.from('provisioner:provisioner-secret').toString('base64')}`,
      },
      body: new URLSearchParams({ grant_type: 'client_credentials', scope: 'sigil:admin' }),
    }).then((r) => r.json() as Promise<{ access_token: string }>);
    const created = await fetch(`${f.sigil.url}/admin/v1/api-scopes`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token.access_token}` },
      body: JSON.stringify({ name: 'stored-scope' }),
    });
    expect(created.status).toBe(201);
    const response = await admin.goto(`${f.sigil.url}/admin/resources`);
    await check(admin, response, 'resources');
    expect(await admin.locator('main').textContent()).toContain('sigil:admin');
    const row = (name: string) => admin.locator('tr', { has: admin.getByRole('link', { name, exact: true }) });
    expect(await row('stored-scope').textContent()).toContain('Stored');
    expect(await row('api1').first().textContent()).toContain('Config file');
    await admin.getByRole('link', { name: 'api1' }).first().click();
    await admin.getByText('This item is defined in the config file').waitFor();
    await expect(admin.locator('form[action*="/admin/resources/"]').count()).resolves.toBe(0);
    expect(await admin.locator('main dl').textContent()).toContain('Config file');
    expect(await admin.locator('main dl').textContent()).toContain('userClaims');
  });

  it('creates an API scope, an API resource (secret shown once) and a client, whose client_credentials token names the new API as aud', async () => {
    await admin.goto(`${f.sigil.url}/admin/resources`);
    await admin.getByRole('link', { name: 'New API scope' }).click();
    await check(admin, null, 'resource-new');
    await admin.getByLabel('Name', { exact: true }).fill('reports.read');
    await admin.getByLabel('Display name').fill('Read reports');
    await admin.getByRole('button', { name: 'Create', exact: true }).click();
    await admin.getByText('It has been created.').waitFor();

    // A refused field's message is shown next to it, the form keeping what was typed.
    await admin.goto(`${f.sigil.url}/admin/resources/new/api-resources`);
    await admin.getByLabel('Name', { exact: true }).fill('reports');
    await admin.getByLabel('Scopes').fill('no-such-scope');
    await admin.getByRole('button', { name: 'Create', exact: true }).click();
    await admin.locator('#f-scopes-error').waitFor();
    expect(await admin.locator('#f-scopes').getAttribute('aria-invalid')).toBe('true');
    expect(await admin.locator('#f-scopes').getAttribute('aria-describedby')).toContain('f-scopes-error');
    expect(await admin.locator('#form-error').textContent()).toContain('The change was not made:');
    expect(await admin.getByLabel('Name', { exact: true }).inputValue()).toBe('reports');
    expect(await audit(admin)).toEqual([]);

    await admin.getByLabel('Scopes').fill('reports.read');
    await admin.getByRole('button', { name: 'Create', exact: true }).click();
    await admin.getByText('It has been created.').waitFor();
    const secret = (await admin.locator('#resource-secret').textContent()) ?? '';
    expect(secret.length).toBeGreaterThanOrEqual(32);
    reportsSecret = secret;
    await check(admin, null, 'resource');
    await admin.goto(`${f.sigil.url}/admin/resources/api-resources/reports`);
    await expect(admin.locator('#resource-secret').count()).resolves.toBe(0);
    // The API authenticates at introspection with the secret it was shown.
    const introspected = await fetch(`${f.sigil.url}/connect/introspect`, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        authorization: `Basic ${Buffer.from(`reports:${secret}`).toString('base64')}`,
      },
      body: new URLSearchParams({ token: 'not-a-token' }),
    });
    expect(introspected.status).toBe(200);

    await admin.getByLabel('User claims').fill('role');
    await admin.getByRole('button', { name: 'Save' }).click();
    await admin.getByText('It has been saved.').waitFor();
    // Post/Redirect/Get: the saved page is a GET of the item, so a reload repeats no change.
    expect(admin.url()).toBe(`${f.sigil.url}/admin/resources/api-resources/reports?done=consoleResourceSaved`);
    expect(await admin.getByLabel('User claims').inputValue()).toBe('role');

    await admin.goto(`${f.sigil.url}/admin/clients/new`);
    await admin.getByLabel('clientId').fill('reporter');
    await admin.getByLabel('client_credentials').check();
    await admin.getByLabel('Scopes').fill('reports.read');
    await admin.getByRole('button', { name: 'Create', exact: true }).click();
    await admin.getByText('The client has been created.').waitFor();
    const clientSecret = (await admin.locator('#client-secret').textContent()) ?? '';
    const token = await fetch(`${f.sigil.url}/connect/token`, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        authorization: `Basic ${Buffer.from(`reporter:${encodeURIComponent(clientSecret)}`).toString('base64')}`,
      },
      body: new URLSearchParams({ grant_type: 'client_credentials', scope: 'reports.read' }),
    });
    expect(token.status).toBe(200);
    const { access_token } = (await token.json()) as { access_token: string };
    reportsToken = access_token;
    const claims = JSON.parse(Buffer.from(access_token.split('.')[1] ?? '', 'base64url').toString()) as {
      aud: string | string[];
      scope: string;
    };
    expect([claims.aud].flat()).toContain('reports');
    expect(claims.scope).toBe('reports.read');
  });

  it("rotates a stored API resource's secret: the new one is shown once, and both work at introspection during the grace period", async () => {
    expect(reportsSecret).not.toBe('');
    await admin.goto(`${f.sigil.url}/admin/resources/api-resources/reports`);
    await expect(admin.locator('#resource-secret').count()).resolves.toBe(0);
    await admin.getByRole('button', { name: 'Rotate the secret' }).click();
    await admin.getByText('The secret has been rotated.').waitFor();
    const rotated = (await admin.locator('#resource-secret').textContent()) ?? '';
    expect(rotated.length).toBeGreaterThanOrEqual(32);
    expect(rotated).not.toBe(reportsSecret);
    expect(await audit(admin)).toEqual([]);
    // Shown on that answer only: the item's page never shows it again.
    await admin.goto(`${f.sigil.url}/admin/resources/api-resources/reports`);
    await expect(admin.locator('#resource-secret').count()).resolves.toBe(0);
    expect(await admin.content()).not.toContain(rotated);
    const introspect = (secret: string) =>
      fetch(`${f.sigil.url}/connect/introspect`, {
        method: 'POST',
        headers: {
          'content-type': 'application/x-www-form-urlencoded',
          authorization: `Basic ${Buffer.from(`reports:${secret}`).toString('base64')}`,
        },
        body: new URLSearchParams({ token: reportsToken }),
      });
    for (const secret of [reportsSecret, rotated]) {
      const answer = await introspect(secret);
      expect(answer.status).toBe(200);
      const body = (await answer.json()) as { active: boolean; aud?: string | string[] };
      expect(body.active).toBe(true);
      expect([body.aud].flat()).toContain('reports');
    }
    expect((await introspect('not-the-secret')).status).toBe(401);
  });

  it('refuses to delete an API scope an API resource uses, with the reason', async () => {
    await admin.goto(`${f.sigil.url}/admin/resources/api-scopes/reports.read`);
    const [response] = await Promise.all([
      admin.waitForResponse((r) => r.url().endsWith('/delete')),
      admin.getByRole('button', { name: 'Delete' }).click(),
    ]);
    expect(response.status()).toBe(409);
    const message = (await admin.locator('#form-error').textContent()) ?? '';
    expect(message).toContain(
      'The change was not made: API scope "reports.read" is still used by API resource "reports", Client "reporter"; remove it there first.',
    );
    // The item's kind is named in the singular.
    expect(await admin.locator('main dl dd').first().textContent()).toBe('API scope');
    await admin.goto(`${f.sigil.url}/admin/resources`);
    expect(await admin.locator('main').textContent()).toContain('reports.read');
  });

  it('creates an upstream provider, edits it, never showing its client secret back, and deletes it', async () => {
    await admin.goto(`${f.sigil.url}/admin/resources/new/identity-providers`);
    await admin.getByLabel('Name', { exact: true }).fill('partner');
    await admin.getByLabel('Issuer').fill('https://partner.example');
    await admin.getByLabel('Client ID at the provider').fill('sigil-at-partner');
    await admin.getByLabel('Client secret at the provider').fill('upstream-secret-value');
    await admin.getByRole('button', { name: 'Create', exact: true }).click();
    await admin.getByText('It has been created.').waitFor();
    expect(admin.url()).toBe(`${f.sigil.url}/admin/resources/identity-providers/partner?done=consoleResourceCreated`);
    expect(await admin.content()).not.toContain('upstream-secret-value');
    expect(await admin.getByLabel('Client secret at the provider').inputValue()).toBe('');
    expect(await admin.locator('main dl').textContent()).toContain('https://partner.example');

    // An edit with the secret field left empty keeps the secret (the event log names no clientSecret change).
    await admin.getByLabel('Display name').fill('Partner Inc.');
    await admin.getByLabel('Client ID at the provider').fill('sigil-at-partner-2');
    await admin.getByRole('button', { name: 'Save' }).click();
    await admin.getByText('It has been saved.').waitFor();
    expect(await admin.getByLabel('Display name').inputValue()).toBe('Partner Inc.');
    expect(await admin.getByLabel('Client ID at the provider').inputValue()).toBe('sigil-at-partner-2');
    expect(await admin.getByLabel('Client secret at the provider').inputValue()).toBe('');
    // A new secret is taken, and not shown back either.
    await admin.getByLabel('Client secret at the provider').fill('upstream-secret-two');
    await admin.getByRole('button', { name: 'Save' }).click();
    await admin.getByText('It has been saved.').waitFor();
    const page = await admin.content();
    for (const secret of ['upstream-secret-value', 'upstream-secret-two']) expect(page).not.toContain(secret);
    expect(await admin.getByLabel('Client secret at the provider').inputValue()).toBe('');
    expect(await audit(admin)).toEqual([]);

    await admin.getByRole('button', { name: 'Delete' }).click();
    await admin.getByText('It has been deleted.').waitFor();
    expect(admin.url()).toBe(`${f.sigil.url}/admin/resources?done=consoleResourceDeleted`);
    expect(await admin.locator('main').textContent()).not.toContain('partner.example');
  });

  it('creates and deletes a group', async () => {
    await admin.goto(`${f.sigil.url}/admin/users`);
    await admin.getByLabel('Group name').fill('auditors');
    await admin.getByRole('button', { name: 'Create a group' }).click();
    await admin.getByText('The group has been created.').waitFor();
    expect(await admin.locator('table').nth(1).textContent()).toContain('auditors');
    await check(admin, null, 'users');
    await admin.getByRole('button', { name: 'Delete group auditors' }).click();
    await admin.getByText('The group has been deleted').waitFor();
    expect(await admin.locator('table').nth(1).textContent()).not.toContain('auditors');
  });

  it('rotates the signing keys; a POST without the CSRF token is refused and changes nothing', async () => {
    const response = await admin.goto(`${f.sigil.url}/admin/keys`);
    const before = await admin.locator('table tbody tr').count();
    const forged = await admin.request.post(`${f.sigil.url}/admin/keys/rotate`, { form: { button: 'rotate' } });
    expect(forged.status()).toBe(403);
    await admin.reload();
    await expect(admin.locator('table tbody tr').count()).resolves.toBe(before);
    await admin.getByRole('button', { name: 'Rotate the signing keys' }).click();
    await admin.getByText('New signing keys have been added.').waitFor();
    const after = await admin.locator('table tbody tr').count();
    expect(after).toBeGreaterThan(before);
    // Post/Redirect/Get: a reload shows the page again and rotates nothing.
    expect(admin.url()).toBe(`${f.sigil.url}/admin/keys?done=consoleKeysRotated`);
    await admin.reload();
    await admin.getByText('New signing keys have been added.').waitFor();
    await expect(admin.locator('table tbody tr').count()).resolves.toBe(after);
    await check(admin, response, 'keys');
    // The confirmation is a message key: anything else shows no notice, and nothing of the query.
    await admin.goto(`${f.sigil.url}/admin/keys?done=${encodeURIComponent('<b>forged</b>')}`);
    await expect(admin.locator('p.notice').count()).resolves.toBe(0);
    expect(await admin.content()).not.toContain('forged');
  });

  it('filters the event log, which shows the changes with the admin as actor', async () => {
    await admin.goto(`${f.sigil.url}/admin/events`);
    await admin.getByLabel('Event', { exact: true }).fill('admin_changed');
    await admin.getByLabel('client_id').fill('sigil-console');
    await admin.getByRole('button', { name: 'Filter' }).click();
    await admin.waitForURL(/type=admin_changed/);
    // Audit events are stored in a batch each second.
    let rows: string[] = [];
    for (let i = 0; i < 10 && !rows.some((r) => r.includes('key.rotate')); i++) {
      if (i > 0) await admin.waitForTimeout(500).then(() => admin.reload());
      rows = await admin.locator('table tbody tr').allTextContents();
    }
    for (const action of [
      'client.create',
      'client.update',
      'api_scope.create',
      'api_resource.create',
      'api_resource.update',
      'api_resource.rotate_secret',
      'identity_provider.update',
      'identity_provider.delete',
      'key.rotate',
      'user.claims',
      'user.reset_mfa',
      'session.revoke',
    ])
      expect(
        rows.some((r) => r.includes(action)),
        action,
      ).toBe(true);
    const providerUpdates = rows.filter((r) => r.includes('identity_provider.update'));
    expect(providerUpdates).toHaveLength(2);
    expect(providerUpdates.filter((r) => r.includes('clientSecret'))).toHaveLength(1);
    for (const row of rows) expect(row).not.toMatch(/upstream-secret/);
    // Each row names the client and the admin as people read them, not by id alone.
    for (const row of rows) expect(row).toContain('Sigil console sigil-consolealice');
    const links = await admin
      .locator('table tbody tr')
      .first()
      .locator('a')
      .evaluateAll((as) => as.map((a) => a.getAttribute('href')));
    expect(links).toEqual(['/admin/clients/sigil-console', `/admin/users/${ADMIN_SUB}`]);
    await check(admin, null, 'events');
  });

  it('reads German for a German browser', async () => {
    await admin.context().setExtraHTTPHeaders({ 'accept-language': 'de-DE,de;q=0.9' });
    await admin.goto(`${f.sigil.url}/admin/users`);
    await admin.getByRole('heading', { name: 'Benutzer', exact: true }).waitFor();
    expect(await admin.getAttribute('html', 'lang')).toBe('de');
    await expect(admin.getByRole('button', { name: 'Von der Konsole abmelden' }).count()).resolves.toBe(1);
    expect(await audit(admin)).toEqual([]);
    // A service's refusal reads German too, naming the items by their German singular kind.
    await admin.goto(`${f.sigil.url}/admin/resources/api-scopes/reports.read`);
    expect(await admin.locator('main dl dd').first().textContent()).toBe('API-Scope');
    const [response] = await Promise.all([
      admin.waitForResponse((r) => r.url().endsWith('/delete')),
      admin.getByRole('button', { name: 'Löschen' }).click(),
    ]);
    expect(response.status()).toBe(409);
    expect(await admin.locator('#form-error').textContent()).toContain(
      'Die Änderung wurde nicht vorgenommen: API-Scope „reports.read“ wird noch verwendet von API-Ressource „reports“, Client „reporter“; entfernen Sie es zuerst dort.',
    );
    expect(await audit(admin)).toEqual([]);
    await admin.context().setExtraHTTPHeaders({});
  });

  it('signs out of the console and of Sigil: the next visit asks for the password again', async () => {
    await admin.goto(`${f.sigil.url}/admin/users`);
    await admin.getByRole('button', { name: 'Sign out of the console' }).click();
    await admin.getByRole('heading', { name: 'Signed out of the console' }).waitFor();
    expect(await admin.textContent('main')).toContain('Your console session and your sign-in have ended.');
    expect(await audit(admin)).toEqual([]);
    const names = (await admin.context().cookies()).map((c) => c.name);
    expect(names).not.toContain('sigil.console');
    expect(names).not.toContain('sigil.session');
    // The page's link leads back to the console, which asks for a new sign-in.
    await admin.getByRole('link', { name: 'Sign in to the console again' }).click();
    await admin.waitForURL(/\/account\/login\?interaction=/);
    await admin.locator('input[name=password]').waitFor();
  });
});
