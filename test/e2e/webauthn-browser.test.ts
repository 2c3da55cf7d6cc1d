/**
 * Passkeys and security keys in a real Chromium against `sigil start`, with the
 * DevTools protocol's virtual authenticators: a platform passkey authenticator (ctap2, internal,
 * resident keys, user verification) and a USB security key without resident keys or user
 * verification. Registers a passkey after signing in, signs out, signs in to a client with the
 * passkey alone (through conditional mediation, then through the button in a browser without
 * it); registers a security key and uses it as the step after the password; removes a
 * credential and sees it refused. The issuer is `http://localhost:<port>`: browsers refuse IP
 * addresses as RP ID. Screenshots under test-results/screenshots/webauthn-*.png.
 */
import { createHash } from 'node:crypto';
import { decodeJwt } from 'jose';
import type { BrowserContext, CDPSession, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { basic } from '../helpers.js';
import {
  authorizeUrl,
  browserConfig,
  type BrowserFixture,
  callbackResponse,
  newPage,
  screenshot,
  signInDirectly,
  startBrowserFixture,
  submitLogin,
  WEB,
} from './browser-fixture.js';
import { audit, focused } from './accessibility.js';

let f: BrowserFixture;
beforeAll(async () => {
  f = await startBrowserFixture((cb) => ({ ...browserConfig(cb), webauthn: { enabled: true } }), 'localhost');
});
afterAll(async () => f?.close());

const VERIFIER = 'w'.repeat(43);

/** Adds a virtual authenticator to the page's browser context (DevTools WebAuthn domain). */
async function virtualAuthenticator(
  context: BrowserContext,
  page: Page,
  kind: 'passkey' | 'security-key',
): Promise<{ cdp: CDPSession; authenticatorId: string }> {
  const cdp = await context.newCDPSession(page);
  await cdp.send('WebAuthn.enable', { enableUI: false });
  const options =
    kind === 'passkey'
      ? {
          protocol: 'ctap2',
          transport: 'internal',
          hasResidentKey: true,
          hasUserVerification: true,
          isUserVerified: true,
          automaticPresenceSimulation: true,
        }
      : {
          protocol: 'ctap2',
          transport: 'usb',
          hasResidentKey: false,
          hasUserVerification: false,
          automaticPresenceSimulation: true,
        };
  const { authenticatorId } = await cdp.send('WebAuthn.addVirtualAuthenticator', { options: options as never });
  return { cdp, authenticatorId };
}

/** A code request of the `web` client with PKCE. */
function codeRequest(): string {
  return authorizeUrl(f.sigil, {
    client_id: WEB.id,
    redirect_uri: `${f.cb.url}/cb`,
    response_type: 'code',
    scope: 'openid profile',
    state: 'st',
    nonce: 'nonce-1',
    code_challenge: createHash('sha256').update(VERIFIER).digest('base64url'),
    code_challenge_method: 'S256',
  });
}

/** Redeems a code over the back channel and returns the identity token's claims. */
async function idTokenClaims(code: string): Promise<Record<string, unknown>> {
  // Node resolves `localhost` to ::1 first; the process listens on 127.0.0.1.
  const res = await fetch(`${f.sigil.url.replace('localhost', '127.0.0.1')}/connect/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: basic(WEB.id, WEB.secret) },
    body: new URLSearchParams({
      grant_type: 'authorization_code',
      code,
      redirect_uri: `${f.cb.url}/cb`,
      code_verifier: VERIFIER,
    }),
  });
  expect(res.status).toBe(200);
  return decodeJwt(((await res.json()) as { id_token: string }).id_token);
}

/** Adds a credential on /account/passkeys by keyboard alone: type the name, Tab to the button, Enter. */
async function addCredential(page: Page, kind: 'passkey' | 'security-key', name: string, shot: string): Promise<void> {
  await page.goto(`${f.sigil.url}/account/passkeys`);
  expect(await audit(page), `${shot}-before`).toEqual([]);
  await page.getByLabel('Name (optional)').fill(name);
  await screenshot(page, `${shot}-before`);
  for (let i = 0; i < (kind === 'passkey' ? 1 : 2); i++) await page.keyboard.press('Tab');
  expect(await focused(page)).toEqual({ id: `button[kind=${kind}]`, ring: true });
  await page.keyboard.press('Enter');
  await page.getByRole('status').filter({ hasText: 'Added.' }).waitFor();
  await page.getByText(name).waitFor();
  await screenshot(page, shot);
  expect(await audit(page), shot).toEqual([]);
}

async function signOut(page: Page): Promise<void> {
  await page.goto(`${f.sigil.url}/account/logout`);
  await page.getByRole('button', { name: 'Sign out' }).click();
  await page.getByRole('heading', { name: 'Signed out' }).waitFor();
}

describe('WebAuthn in Chromium', () => {
  it('registers a passkey after signing in, signs in passwordless with it to a client, and refuses it once removed', async () => {
    const { context, page } = await newPage(f.browser);
    const { cdp, authenticatorId } = await virtualAuthenticator(context, page, 'passkey');
    await signInDirectly(page, f.sigil);
    await addCredential(page, 'passkey', 'Laptop passkey', 'webauthn-passkey-added');
    const { credentials } = await cdp.send('WebAuthn.getCredentials', { authenticatorId });
    expect(credentials).toHaveLength(1);
    expect(credentials[0]?.isResidentCredential).toBe(true);
    await signOut(page);

    // Passwordless, through conditional mediation: the login page starts an autofill request,
    // which Chromium's virtual authenticator answers at once (a person picks the passkey in the
    // username field's suggestions), and the page signs in without the password.
    const since = f.cb.hits.length;
    await page.goto(codeRequest());
    const { params } = await callbackResponse(page, f.cb, since);
    expect(params.code).toBeTruthy();
    const claims = await idTokenClaims(params.code as string);
    expect(claims.sub).toBe('1');
    expect(claims.amr).toEqual(['swk', 'user', 'mfa']);

    // The button (a modal request), in a browser without conditional mediation: no autofill
    // request starts, and the button signs in with the passkey.
    await signOut(page);
    await context.addInitScript(() => {
      PublicKeyCredential.isConditionalMediationAvailable = async () => false;
    });
    const before = f.cb.hits.length;
    await page.goto(codeRequest());
    await screenshot(page, 'webauthn-login-page-passkey');
    await page.getByRole('button', { name: 'Sign in with a passkey' }).click();
    const byButton = await callbackResponse(page, f.cb, before);
    expect((await idTokenClaims(byButton.params.code as string)).amr).toEqual(['swk', 'user', 'mfa']);

    // Removal: a fresh sign-in (the passkey again), remove, then the authenticator's credential
    // no longer signs in.
    await signOut(page);
    await page.goto(`${f.sigil.url}/account/login`);
    await page.getByRole('button', { name: 'Sign in with a passkey' }).click();
    await page.getByRole('heading', { name: 'Signed in' }).waitFor();
    await page.goto(`${f.sigil.url}/account/passkeys`);
    await page.getByRole('button', { name: 'Remove Laptop passkey' }).click();
    await page.getByRole('status').filter({ hasText: 'Removed.' }).waitFor();
    await screenshot(page, 'webauthn-removed');
    await signOut(page);
    await page.goto(`${f.sigil.url}/account/login`);
    await page.getByRole('button', { name: 'Sign in with a passkey' }).click();
    await page.getByRole('alert').filter({ hasText: 'That did not work' }).waitFor();
    await screenshot(page, 'webauthn-refused');
    expect(await audit(page)).toEqual([]);
    expect((await context.cookies()).some((c) => c.name === 'sigil.session')).toBe(false);
    await context.close();
  });

  it('registers a security key and asks for it after the password', async () => {
    const { context, page } = await newPage(f.browser);
    await virtualAuthenticator(context, page, 'security-key');
    await signInDirectly(page, f.sigil, 'bob');
    await addCredential(page, 'security-key', 'Blue key', 'webauthn-security-key-added');
    await signOut(page);

    const since = f.cb.hits.length;
    await page.goto(codeRequest());
    await submitLogin(page, 'bob');
    await page.getByRole('heading', { name: 'Use your security key' }).waitFor();
    await screenshot(page, 'webauthn-security-key-step');
    expect(await audit(page)).toEqual([]);
    expect((await context.cookies()).some((c) => c.name === 'sigil.session')).toBe(false);
    // Keyboard: the key's button has the focus; Enter runs the ceremony.
    expect(await focused(page)).toEqual({ id: 'button[button=verify]', ring: true });
    await page.keyboard.press('Enter');
    const { params } = await callbackResponse(page, f.cb, since);
    const claims = await idTokenClaims(params.code as string);
    expect(claims.sub).toBe('2');
    expect(claims.amr).toEqual(['pwd', 'hwk', 'mfa']);
    await context.close();
  });

  it('shows the passkey button on the login page, in English and German', async () => {
    let { context, page } = await newPage(f.browser);
    await page.goto(`${f.sigil.url}/account/login`);
    await page.getByRole('button', { name: 'Sign in with a passkey' }).waitFor();
    expect(await page.getByLabel('Username').getAttribute('autocomplete')).toBe('username webauthn');
    await screenshot(page, 'webauthn-login-page');
    expect(await audit(page)).toEqual([]);
    await context.close();
    ({ context, page } = await newPage(f.browser, { locale: 'de-DE' }));
    await page.goto(`${f.sigil.url}/account/login`);
    await page.getByRole('button', { name: 'Mit einem Passkey anmelden' }).waitFor();
    await screenshot(page, 'webauthn-login-page-de');
    expect(await audit(page)).toEqual([]);
    await context.close();
  });
});
