/**
 * A temporary password in a real Chromium, on SQLite and on PostgreSQL: on a stored user's console
 * page the admin sets one (a weak one is refused on the field, `aria-invalid` and its message by
 * `aria-describedby`; the policy applies); the admin API's read of the user says
 * `passwordChangeRequired`, and the audit event names the change without the password. The user
 * then signs in to an application with it, is made to choose a new password (refused while it
 * is weak or the two differ) before any code is issued, and then reaches the application with a
 * code that redeems; the flag is gone, the old password no longer works, and the password grant
 * refused the temporary one meanwhile. Every page is axe-clean and none scrolls sideways at 390 px.
 */
import { createHash, randomBytes } from 'node:crypto';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SigilEvent } from '../../src/events/events.js';
import { dropSchema, POSTGRES_URL, startSigil, testConfig, type TestSigil, uniqueSchema } from '../helpers.js';
import { audit } from './accessibility.js';
import { CallbackServer, launchChromium, newPage, screenshot, signInEnrollingTotp } from './browser-fixture.js';
import { freePort } from './ports.js';

const TEMPORARY = 'copper-lantern-harbour-71';
const CHOSEN = 'violet-meadow-compass-38';
const APP = { id: 'temp-app', secret: 'temp-app-secret-0123456789abcdef' };

describe.each(['sqlite', 'postgres'] as const)('a temporary password on %s', (dialect) => {
  const schema = uniqueSchema('temppw');
  let browser: Browser;
  let sigil: TestSigil;
  let cb: CallbackServer;
  let url: string;
  let admin: Page;
  let subject: string;
  const events: SigilEvent[] = [];

  beforeAll(async () => {
    const port = await freePort();
    url = `http://127.0.0.1:${port}`;
    cb = await new CallbackServer().start();
    const base = testConfig();
    [browser, sigil] = await Promise.all([
      launchChromium(),
      startSigil({
        issuer: url,
        ...(dialect === 'postgres' ? { storage: `${POSTGRES_URL}?schema=${schema}` } : {}),
        users: (base.users ?? []).map((u) =>
          u.username === 'alice' ? { ...u, claims: { ...u.claims, role: ['admin', 'sigil-admin'] } } : u,
        ),
        clients: [
          ...(base.clients ?? []),
          {
            clientId: APP.id,
            clientName: 'Temporary App',
            clientSecrets: [APP.secret],
            allowedGrantTypes: ['authorization_code', 'password'],
            allowedScopes: ['openid', 'profile'],
            redirectUris: [`${cb.url}/cb`],
            allowHttpRedirectUris: true,
          },
          {
            clientId: 'reader',
            clientSecrets: ['reader-secret'],
            allowedGrantTypes: ['client_credentials'],
            allowedScopes: ['sigil:admin:read'],
          },
        ],
      }),
    ]);
    sigil.subscribe((e) => void events.push(e));
    await sigil.app.listen({ host: '127.0.0.1', port });
    ({ subjectId: subject } = await sigil.context.management.users.create({
      username: 'erin',
      password: 'granite-orchard-whistle-90',
    }));
    admin = (await newPage(browser, { viewport: { width: 1000, height: 700 } })).page;
    admin.setDefaultTimeout(10_000);
    await admin.goto(`${url}/admin`);
    await signInEnrollingTotp(admin);
    await admin.waitForURL(/\/admin\/users$/);
  }, 60_000);
  afterAll(async () => {
    await Promise.allSettled([browser?.close(), sigil?.close(), cb?.close()]);
    if (dialect === 'postgres') await dropSchema(schema);
  });

  /** The password grant's answer for erin with `password`. */
  const passwordGrant = (password: string) =>
    fetch(`${url}/connect/token`, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        authorization: `Basic ${Buffer.from(`${APP.id}:${APP.secret}`).toString('base64')}`,
      },
      body: new URLSearchParams({ grant_type: 'password', username: 'erin', password, scope: 'openid' }),
    });

  /** The admin API's read of erin: `passwordChangeRequired`. */
  const apiRead = async (): Promise<boolean> => {
    const token = await fetch(`${url}/connect/token`, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        authorization: `Basic ${Buffer.from('reader:reader-secret').toString('base64')}`,
      },
      body: new URLSearchParams({ grant_type: 'client_credentials', scope: 'sigil:admin:read' }),
    }).then((r) => r.json() as Promise<{ access_token: string }>);
    const read = await fetch(`${url}/admin/v1/users/${encodeURIComponent(subject)}`, {
      headers: { authorization: `Bearer ${token.access_token}` },
    });
    expect(read.status).toBe(200);
    return ((await read.json()) as { passwordChangeRequired: boolean }).passwordChangeRequired;
  };

  it('sets a temporary password on the user page, a weak one refused on its field', async () => {
    const page = await admin.goto(`${url}/admin/users/${encodeURIComponent(subject)}`);
    await page?.finished();
    expect(await audit(admin)).toEqual([]);
    const field = admin.getByRole('textbox', { name: 'Temporary password' });
    await field.fill('erin');
    await admin.getByRole('button', { name: 'Set the temporary password' }).click();
    await admin.locator('#f-password-error').waitFor();
    expect(await admin.locator('#f-password').getAttribute('aria-invalid')).toBe('true');
    expect(await admin.locator('#f-password').getAttribute('aria-describedby')).toContain('f-password-error');
    expect(await audit(admin)).toEqual([]);
    expect(await apiRead()).toBe(false);

    await field.fill(TEMPORARY);
    await admin.getByRole('button', { name: 'Set the temporary password' }).click();
    await admin.getByText('The temporary password has been set').waitFor();
    expect(await admin.locator('main dl').textContent()).toContain('Must change the password at the next sign-in');
    await screenshot(admin, `console-user-temporary-password-${dialect}`);
    // Nothing scrolls sideways on a phone.
    await admin.setViewportSize({ width: 390, height: 844 });
    expect(
      await admin.evaluate(() => document.documentElement.scrollWidth <= document.documentElement.clientWidth),
    ).toBe(true);
    expect(await audit(admin)).toEqual([]);
    await admin.setViewportSize({ width: 1000, height: 700 });
    expect(await apiRead()).toBe(true);
    const set = events.find((e) => e.name === 'admin_changed' && e.action === 'user.password');
    expect(set).toMatchObject({
      target: { id: subject },
      changes: { password: '(set)', passwordChangeRequired: true },
    });
    expect(JSON.stringify(events)).not.toContain(TEMPORARY);
    // No token for the temporary password before it is replaced.
    const refused = await passwordGrant(TEMPORARY);
    expect(refused.status).toBe(400);
    expect(((await refused.json()) as { error: string }).error).toBe('invalid_grant');
  });

  it('makes the user choose a new password at sign-in before any code is issued, then reaches the application', async () => {
    const { page, context } = await newPage(browser, { viewport: { width: 390, height: 844 } });
    try {
      page.setDefaultTimeout(10_000);
      const verifier = randomBytes(32).toString('base64url');
      const challenge = createHash('sha256').update(verifier).digest('base64url');
      await page.goto(
        `${url}/connect/authorize?${new URLSearchParams({
          response_type: 'code',
          client_id: APP.id,
          redirect_uri: `${cb.url}/cb`,
          scope: 'openid profile',
          state: 'st',
          code_challenge: challenge,
          code_challenge_method: 'S256',
        })}`,
      );
      await page.locator('input[name=username]').fill('erin');
      await page.locator('input[name=password]').fill(TEMPORARY);
      await page.locator('button[name=button][value=login]').click();
      await page.waitForURL(`${url}/account/password/required`);
      expect(await page.locator('main').textContent()).toContain('Your administrator set a temporary password');
      expect(await audit(page)).toEqual([]);
      expect(
        await page.evaluate(() => document.documentElement.scrollWidth <= document.documentElement.clientWidth),
      ).toBe(true);
      await screenshot(page, `password-change-required-${dialect}`);
      // Nothing was issued, and no session exists yet.
      expect(cb.hits.filter((h) => h.path === '/cb')).toEqual([]);
      expect((await context.cookies()).map((c) => c.name)).not.toContain('sigil.session');

      await page.locator('#new_password').fill('password');
      await page.locator('#confirm_password').fill('password');
      await page.locator('button[name=button][value=change]').click();
      await page.locator('#password-error').waitFor();
      expect(await audit(page)).toEqual([]);
      await page.locator('#new_password').fill(CHOSEN);
      await page.locator('#confirm_password').fill(`${CHOSEN}x`);
      await page.locator('button[name=button][value=change]').click();
      await page.getByText('The two new passwords are not the same').waitFor();
      expect(cb.hits.filter((h) => h.path === '/cb')).toEqual([]);

      await page.locator('#new_password').fill(CHOSEN);
      await page.locator('#confirm_password').fill(CHOSEN);
      await page.locator('button[name=button][value=change]').click();
      await page.waitForURL((u) => u.href.startsWith(`${cb.url}/cb`));
      const params = Object.fromEntries(new URL(page.url()).searchParams);
      expect(params.state).toBe('st');
      const token = await fetch(`${url}/connect/token`, {
        method: 'POST',
        headers: {
          'content-type': 'application/x-www-form-urlencoded',
          authorization: `Basic ${Buffer.from(`${APP.id}:${APP.secret}`).toString('base64')}`,
        },
        body: new URLSearchParams({
          grant_type: 'authorization_code',
          code: params.code ?? '',
          redirect_uri: `${cb.url}/cb`,
          code_verifier: verifier,
        }),
      });
      expect(token.status).toBe(200);
    } finally {
      await context.close();
    }
    expect(await apiRead()).toBe(false);
    expect((await passwordGrant(TEMPORARY)).status).toBe(400);
    expect((await passwordGrant(CHOSEN)).status).toBe(200);
    expect(JSON.stringify(events)).not.toContain(CHOSEN);
  });

  it('sends a browser without a sign-in waiting for a new password to the expired page', async () => {
    const { page, context } = await newPage(browser);
    try {
      const response = await page.goto(`${url}/account/password/required`);
      expect(response?.status()).toBe(400);
      await expect(page.locator('form[action$="/account/password/required"]').count()).resolves.toBe(0);
    } finally {
      await context.close();
    }
  });
});
