/**
 * Email through real SMTP: Sigil sends over TCP to an `smtp-server` on loopback, the
 * test reads the message and Chromium follows its link. Password reset (the whole flow, no
 * enumeration, single use, the 15-minute expiry, sessions and refresh tokens ended), email
 * verification and the email claims, self-registration.
 */
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import type { Browser, Page } from 'playwright-core';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createSigil, type Sigil } from '../../src/index.js';
import type { SigilEvent } from '../../src/events/events.js';
import { UserAdmin } from '../../src/admin/users.js';
import { nowSeconds } from '../../src/crypto/handles.js';
import { Browser as InjectBrowser, input } from '../authorize-helpers.js';
import { form, basic, tempDir, testConfig } from '../helpers.js';
import { linkIn, SmtpReceiver } from '../smtp-receiver.js';
import { audit } from './accessibility.js';
import { launchChromium } from './browser-fixture.js';
import { freePort } from './ports.js';

const run = promisify(execFile);
const CLI = resolve(import.meta.dirname, '../../dist/cli/main.js');
const ERIN = { username: 'erin', email: 'Erin@Example.org', password: 'harbour-violet-19' };
const NEW_PASSWORD = 'lantern-orchard-74';
/**
 * An application whose sign-in the user leaves for "Forgot password?" and comes back to; its
 * redirect URI is a path of Sigil's own origin (answered 404: only the URL matters here).
 */
const app = (issuer: string) => ({
  clientId: 'app',
  requireClientSecret: false,
  allowedGrantTypes: ['authorization_code'],
  redirectUris: [`${issuer}/app/cb`],
  allowedScopes: ['openid'],
  requireConsent: false,
});

let smtp: SmtpReceiver;
let sigil: Sigil;
let base = '';
let chromium: Browser;
let page: Page;
const events: SigilEvent[] = [];
const { dir, cleanup } = tempDir();

beforeAll(async () => {
  smtp = await new SmtpReceiver().start();
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  sigil = await createSigil(
    testConfig({
      clients: [...(testConfig().clients ?? []), app(`http://127.0.0.1:${port}`)],
      issuer: base,
      storage: `sqlite:${join(dir, 'sigil.db')}`,
      branding: { productName: 'Acme ID' },
      email: {
        smtpUrl: smtp.url,
        from: 'Acme ID <id@acme.example>',
        selfRegistration: true,
        requestsPerAddress: 100,
        mailsPerAccount: 10,
      },
    }),
    { logger: pino({ level: 'silent' }) },
  );
  await sigil.app.listen({ port, host: '127.0.0.1' });
  sigil.subscribe((e) => void events.push(e));
  await new UserAdmin(sigil.context.store, sigil.context.config).create({
    username: ERIN.username,
    password: ERIN.password,
    email: ERIN.email,
    emailVerified: true,
  });
  chromium = await launchChromium();
  page = await (await chromium.newContext()).newPage();
}, 60_000);

afterAll(async () => {
  await chromium?.close();
  await sigil?.close();
  await smtp?.close();
  cleanup();
});

const token = (params: Record<string, string>) =>
  fetch(`${base}/connect/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: basic('ropc', 'ropc-secret') },
    body: form(params),
  });
const passwordGrant = (password: string) =>
  token({ grant_type: 'password', username: ERIN.username, password, scope: 'openid email offline_access' });

/** Clicks what submits a form or follows a link, and waits for the next page. */
async function go(selector: string): Promise<void> {
  await Promise.all([page.waitForNavigation(), page.click(selector)]);
}

/** The visible text of the first element matching `selector`. */
function text(selector: string): Promise<string> {
  return page.locator(selector).first().innerText();
}

/** Asks for a reset link for `identifier` on the page of its own browser. */
async function forgotIn(p: Page, identifier: string): Promise<void> {
  await p.goto(`${base}/account/forgot`);
  await p.fill('#identifier', identifier);
  await Promise.all([p.waitForNavigation(), p.click('button[type=submit]')]);
}

/** Submits the "forgot password" form in Chromium; returns the answer's status and visible text. */
async function forgot(identifier: string): Promise<{ status: number; text: string }> {
  await page.goto(`${base}/account/forgot`);
  await page.fill('#identifier', identifier);
  const [response] = await Promise.all([page.waitForNavigation(), page.click('button[type=submit]')]);
  return { status: response?.status() ?? 0, text: await text('main') };
}

describe('password reset by mail', () => {
  it('login page → "Forgot password?" → mail (text + HTML, branded) → link in Chromium → new password; every session and refresh token ends', async () => {
    // A session in the browser and a refresh token of a client, both from the old password.
    await page.goto(`${base}/account/login`);
    await page.fill('#username', ERIN.username);
    await page.fill('#password', ERIN.password);
    await go('button[value=login]');
    expect(await text('h1')).toBe('Signed in');
    const before = await passwordGrant(ERIN.password);
    expect(before.status).toBe(200);
    const { refresh_token: refreshToken } = (await before.json()) as { refresh_token: string };
    const subjectId = (await sigil.context.store.users.findUserByUsername(ERIN.username, null))?.subjectId ?? '';
    expect(await sigil.context.store.logout.liveSessions(subjectId, nowSeconds())).toHaveLength(1);

    await page.goto(`${base}/account/login`);
    await go('text=Forgot password?');
    expect(page.url()).toBe(`${base}/account/forgot`);
    expect(await audit(page)).toEqual([]);
    await page.fill('#identifier', 'erin@example.ORG');
    await go('button[type=submit]');
    expect(await text('h1')).toBe('Check your email');
    expect(await audit(page)).toEqual([]);

    const mail = await smtp.waitFor(1);
    expect(mail.to.map((a) => a.toLowerCase())).toEqual([ERIN.email.toLowerCase()]);
    expect(mail.from).toBe('Acme ID <id@acme.example>');
    expect(mail.subject).toBe('Reset your Acme ID password');
    expect(mail.text).toContain('Someone asked to reset the password of the account erin.');
    const link = linkIn(mail, '/account/reset');
    expect(link.startsWith(`${base}/account/reset?token=`)).toBe(true);
    // The HTML part carries the same link, escaped (& in attributes would be &amp;).
    expect(mail.html).toContain(`<a href="${link}">`);
    expect(mail.html).toContain('<p style="font-weight: bold">Acme ID</p>');
    // The store keeps the link's hash only.
    const handle = new URL(link).searchParams.get('token') ?? '';
    expect(
      JSON.stringify(await sigil.context.store.records.emailLinks.findLive(handle, 'reset', nowSeconds())),
    ).not.toContain(handle);

    await page.goto(link);
    expect(await text('h1')).toBe('Choose a new password');
    expect(await audit(page)).toEqual([]);
    // The policy is stated, tied to the field; the password is asked twice.
    expect(await page.getAttribute('#password', 'aria-describedby')).toBe('password-hint');
    expect(await text('#password-hint')).toContain('At least 8 characters');
    // "Show password": a toggle button the page script reveals; the field shows its text while pressed.
    const toggle = page.locator('button[aria-controls=password]');
    await page.fill('#password', 'password1');
    expect(await toggle.getAttribute('aria-pressed')).toBe('false');
    await toggle.click();
    expect(await page.getAttribute('#password', 'type')).toBe('text');
    expect(await toggle.getAttribute('aria-pressed')).toBe('true');
    await toggle.click();
    expect(await page.getAttribute('#password', 'type')).toBe('password');
    // Two different entries change nothing; the link stays usable.
    await page.fill('#confirm_password', 'password2');
    await go('button[type=submit]');
    expect(await text('[role=alert]')).toContain('The two new passwords are not the same.');
    // A weak password is refused with the policy's reason; the link stays usable.
    await page.fill('#password', 'password1');
    await page.fill('#confirm_password', 'password1');
    await go('button[type=submit]');
    expect(await text('[role=alert]')).toContain('This password is common or has appeared in data breaches.');
    await page.fill('#password', NEW_PASSWORD);
    await page.fill('#confirm_password', NEW_PASSWORD);
    await go('button[type=submit]');
    expect(await text('h1')).toBe('Password changed');
    expect(await text('main')).toContain('Your password was changed and you were signed out everywhere.');

    // The client's refresh token fails, the session is gone, the old password no longer works.
    const refreshed = await token({ grant_type: 'refresh_token', refresh_token: refreshToken });
    expect(refreshed.status).toBe(400);
    expect(await refreshed.json()).toMatchObject({ error: 'invalid_grant' });
    expect(await sigil.context.store.logout.liveSessions(subjectId, nowSeconds())).toEqual([]);
    expect((await passwordGrant(ERIN.password)).status).toBe(400);
    expect((await passwordGrant(NEW_PASSWORD)).status).toBe(200);
    expect(events.filter((e) => e.name === 'password_reset')).toEqual([
      expect.objectContaining({ endpoint: 'reset', subjectId, remoteAddress: '127.0.0.1' }),
    ]);

    // Single use: the same link again is refused.
    const again = await page.goto(link);
    expect(again?.status()).toBe(400);
    expect(await text('main')).toContain('This link does not work any more');
  });

  it('answers the same page and status for a known and an unknown address, and mails only the known one', async () => {
    const sent = smtp.mails.length;
    const unknown = await forgot('nobody@example.org');
    const unknownName = await forgot('no-such-user');
    const known = await forgot(ERIN.username);
    expect(unknown).toEqual(known);
    expect(unknownName).toEqual(known);
    expect(known.status).toBe(200);
    const mail = await smtp.waitFor(sent + 1);
    expect(mail.to.map((a) => a.toLowerCase())).toEqual([ERIN.email.toLowerCase()]);
    await new Promise((r) => setTimeout(r, 300));
    expect(smtp.mails).toHaveLength(sent + 1);
  });

  it('a link is dead after 15 minutes', async () => {
    const sent = smtp.mails.length;
    await forgot(ERIN.email);
    const link = linkIn(await smtp.waitFor(sent + 1), '/account/reset');
    vi.useFakeTimers({ toFake: ['Date'], now: Date.now() + 15 * 60_000 + 1000 });
    try {
      const response = await page.goto(link);
      expect(response?.status()).toBe(400);
      expect(await text('main')).toContain('This link does not work any more');
    } finally {
      vi.useRealTimers();
    }
    // Before the deadline the same link shows the form.
    expect((await page.goto(link))?.status()).toBe(200);
  });

  it("started from an application's sign-in, the reset leads back into it: the application gets its code", async () => {
    const context = await chromium.newContext();
    const browser = await context.newPage();
    const authorize = (state: string) =>
      `${base}/connect/authorize?${new URLSearchParams({
        client_id: 'app',
        redirect_uri: `${base}/app/cb`,
        response_type: 'code',
        scope: 'openid',
        state,
        code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
        code_challenge_method: 'S256',
      })}`;
    try {
      await browser.goto(authorize('st-42'));
      const interaction = new URL(browser.url()).searchParams.get('interaction') ?? '';
      expect(interaction).not.toBe('');
      await Promise.all([browser.waitForNavigation(), browser.click('text=Forgot password?')]);
      expect(new URL(browser.url()).searchParams.get('interaction')).toBe(interaction);
      const sent = smtp.mails.length;
      await browser.fill('#identifier', ERIN.username);
      await Promise.all([browser.waitForNavigation(), browser.click('button[type=submit]')]);
      const link = linkIn(await smtp.waitFor(sent + 1), '/account/reset');
      expect(new URL(link).searchParams.get('interaction')).toBe(interaction);
      await browser.goto(link);
      const password = 'meadow-compass-31';
      await browser.fill('#password', password);
      await browser.fill('#confirm_password', password);
      await Promise.all([browser.waitForNavigation(), browser.click('button[type=submit]')]);
      expect(await browser.locator('h1').innerText()).toBe('Password changed');
      await Promise.all([browser.waitForNavigation(), browser.click('text=Sign in and go back to the application')]);
      expect(new URL(browser.url()).searchParams.get('interaction')).toBe(interaction);
      await browser.fill('#username', ERIN.username);
      await browser.fill('#password', password);
      await Promise.all([browser.waitForURL(`${base}/app/cb?**`), browser.click('button[value=login]')]);
      const back = new URL(browser.url());
      expect(back.searchParams.get('state')).toBe('st-42');
      expect(back.searchParams.get('code')).toBeTruthy();

      // A pending sign-in answers only the browser that started it: the same id in a link opened
      // in another browser leads to the plain sign-in page.
      await browser.goto(authorize('st-43'));
      const pending = new URL(browser.url()).searchParams.get('interaction') ?? '';
      const other = await chromium.newContext();
      try {
        const elsewhere = await other.newPage();
        await forgotIn(elsewhere, ERIN.username);
        const plain = linkIn(await smtp.waitFor(sent + 2), '/account/reset');
        await elsewhere.goto(`${plain}&interaction=${pending}`);
        await elsewhere.fill('#password', NEW_PASSWORD);
        await elsewhere.fill('#confirm_password', NEW_PASSWORD);
        await Promise.all([elsewhere.waitForNavigation(), elsewhere.click('button[type=submit]')]);
        expect(await elsewhere.locator('h1').innerText()).toBe('Password changed');
        expect(await elsewhere.locator('main a').last().getAttribute('href')).toBe('/account/login');
      } finally {
        await other.close();
      }
    } finally {
      await context.close();
    }
  });

  it('refuses a form without its CSRF token and never sends for it', async () => {
    const sent = smtp.mails.length;
    const res = await fetch(`${base}/account/forgot`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: form({ identifier: ERIN.email }),
    });
    expect(res.status).toBe(403);
    await new Promise((r) => setTimeout(r, 300));
    expect(smtp.mails).toHaveLength(sent);
  });
});

describe('email verification', () => {
  it('an unverified address is the email claim with email_verified false until its link is confirmed in Chromium', async () => {
    const users = new UserAdmin(sigil.context.store, sigil.context.config);
    await users.create({ username: 'frank', password: 'copper-meadow-88', email: 'frank@example.org' });
    const claims = async () => {
      const res = await token({
        grant_type: 'password',
        username: 'frank',
        password: 'copper-meadow-88',
        scope: 'openid email',
      });
      const { access_token: at } = (await res.json()) as { access_token: string };
      return (await (
        await fetch(`${base}/connect/userinfo`, { headers: { authorization: `Bearer ${at}` } })
      ).json()) as Record<string, unknown>;
    };
    expect(await claims()).toMatchObject({ email: 'frank@example.org', email_verified: false });
    // An unverified address gets no reset link.
    const sent = smtp.mails.length;
    await forgot('frank@example.org');
    const subjectId = (await sigil.context.store.users.findUserByUsername('frank', null))?.subjectId ?? '';
    await sigil.context.email?.requestVerification(subjectId, 'de');
    const mail = await smtp.waitFor(sent + 1);
    expect(mail.to).toEqual(['frank@example.org']);
    expect(mail.subject).toBe('Bestätigen Sie Ihre E-Mail-Adresse für Acme ID');
    const link = linkIn(mail, '/account/verify');
    // Opening the link confirms nothing (mail scanners fetch links); the button does.
    await page.goto(link);
    expect(await claims()).toMatchObject({ email_verified: false });
    expect(await text('main')).toContain('Confirm that frank@example.org is your address.');
    expect(await audit(page)).toEqual([]);
    await go('button[type=submit]');
    expect(await text('main')).toContain('Your email address is confirmed.');
    expect(await claims()).toMatchObject({ email: 'frank@example.org', email_verified: true });
    expect((await page.goto(link))?.status()).toBe(400);
  });
});

describe('sigil users add --email (the CLI)', () => {
  it('stores the address unverified and mails a verification link through the configured SMTP server', async () => {
    const configFile = join(dir, 'cli.json');
    writeFileSync(
      configFile,
      JSON.stringify(
        testConfig({
          issuer: base,
          branding: { productName: 'Acme ID' },
          email: { smtpUrl: smtp.url, from: 'Acme ID <id@acme.example>' },
        }),
      ),
    );
    const sent = smtp.mails.length;
    const { stdout } = await run(process.execPath, [
      CLI,
      'users',
      'add',
      'ivan',
      '--password',
      'velvet-canyon-31',
      '--email',
      'ivan@example.org',
      '--config',
      configFile,
      '--storage',
      `sqlite:${join(dir, 'sigil.db')}`,
    ]);
    expect(stdout).toContain('a verification link was sent to the address');
    const mail = await smtp.waitFor(sent + 1);
    expect(mail.subject).toBe('Confirm your email address for Acme ID');
    expect(mail.text).toContain('the address of the account ivan:');
    expect(linkIn(mail, '/account/verify').startsWith(`${base}/account/verify?token=`)).toBe(true);
    const subjectId = (await sigil.context.store.users.findUserByUsername('ivan', null))?.subjectId ?? '';
    expect(await sigil.context.store.emails.primary(subjectId)).toMatchObject({
      value: 'ivan@example.org',
      verified: false,
    });
    // An address that is not one is refused with exit code 2.
    await expect(
      run(process.execPath, [
        CLI,
        'users',
        'set-email',
        'ivan',
        'not-an-address',
        '--config',
        configFile,
        '--storage',
        `sqlite:${join(dir, 'sigil.db')}`,
      ]),
    ).rejects.toMatchObject({
      code: 2,
      stderr: expect.stringContaining('--email: "not-an-address" is not an email address'),
    });
  });
});

describe('self-registration', () => {
  it('is off by default: the pages are unknown (404) and the login page does not offer it', async () => {
    const off = await createSigil(testConfig({ email: { smtpUrl: smtp.url, from: 'id@acme.example' } }), {
      logger: pino({ level: 'silent' }),
    });
    try {
      expect((await off.app.inject({ method: 'GET', url: '/account/register' })).statusCode).toBe(404);
      expect(
        (
          await off.app.inject({
            method: 'POST',
            url: '/account/register',
            payload: 'email=a@b.c',
            headers: { 'content-type': 'application/x-www-form-urlencoded' },
          })
        ).statusCode,
      ).toBe(404);
      const login = (await off.app.inject({ method: 'GET', url: '/account/login' })).body;
      expect(login).toContain('Forgot password?');
      expect(login).not.toContain('/account/register');
    } finally {
      await off.close();
    }
  });

  it('register → mail → confirm in Chromium → sign in; the account cannot sign in before', async () => {
    const sent = smtp.mails.length;
    await page.goto(`${base}/account/login`);
    await go('text=Create an account');
    expect(await audit(page)).toEqual([]);
    // The address only: the password is chosen from the mailed link (no account pre-hijacking).
    expect(await page.locator('#password').count()).toBe(0);
    await page.fill('#email', 'grace@example.net');
    await go('button[type=submit]');
    expect(await text('h1')).toBe('Check your email');
    const mail = await smtp.waitFor(sent + 1);
    expect(mail.subject).toBe('Finish creating your Acme ID account');
    // Not yet an account: no sign-in.
    expect(
      (
        await token({
          grant_type: 'password',
          username: 'grace@example.net',
          password: 'quiet-lantern-52',
          scope: 'openid',
        })
      ).status,
    ).toBe(400);
    await page.goto(linkIn(mail, '/account/register/confirm'));
    expect(await audit(page)).toEqual([]);
    await page.fill('#password', 'password');
    await go('button[type=submit]');
    expect(await text('[role=alert]')).toContain('common');
    await page.fill('#password', 'quiet-lantern-52');
    await go('button[type=submit]');
    expect(await text('main')).toContain('Your account is ready.');
    const grace = await sigil.context.store.users.findUserByUsername('grace@example.net', null);
    expect(events.filter((e) => e.name === 'user_registered')).toEqual([
      expect.objectContaining({ endpoint: 'register', subjectId: grace?.subjectId }),
    ]);
    await go('main a[href="/account/login"]');
    await page.fill('#username', 'grace@example.net');
    await page.fill('#password', 'quiet-lantern-52');
    await go('button[value=login]');
    expect(await text('h1')).toBe('Signed in');
  });

  it('an address already registered gets the same answer, and its owner a note instead of a link', async () => {
    const sent = smtp.mails.length;
    const b = new InjectBrowser(sigil);
    const register = async (address: string) => {
      const formPage = await b.get('/account/register');
      const res = await b.post('/account/register', { csrf_token: input(formPage.body, 'csrf_token'), email: address });
      return { status: res.status, body: res.body.replace(/name="csrf_token" value="[^"]*"/, '') };
    };
    const taken = await register('GRACE@example.net');
    const free = await register('heidi@example.net');
    expect(taken).toEqual(free);
    await smtp.waitFor(sent + 2);
    const byRecipient = Object.fromEntries(smtp.mails.slice(sent).map((m) => [m.to[0], m]));
    expect(byRecipient['GRACE@example.net']?.subject).toBe(
      'Someone tried to create a Acme ID account with your address',
    );
    expect(byRecipient['GRACE@example.net']?.text).not.toContain('/account/register/confirm');
    expect(byRecipient['heidi@example.net']?.subject).toBe('Finish creating your Acme ID account');
  });
});
