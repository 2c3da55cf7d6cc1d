/**
 * Sigil as the identity provider of a real SAML service provider: Apache httpd with
 * mod_auth_mellon (Debian's packages, installed by .ci/run), driven in Debian's Chromium. The SP
 * signs its AuthnRequests (HTTP-Redirect) and wants signed assertions; Sigil answers with the
 * HTTP-POST binding. SP-initiated: the protected page sends the browser to Sigil's login page,
 * and after the password the page shows the attributes mellon took from the assertion.
 * A second mellon SP registered with `encryptAssertion` gets an EncryptedAssertion, which mellon
 * (lasso, xmlsec1) decrypts with its MellonSPPrivateKeyFile.
 * IdP-initiated: /saml/initiate signs in at Sigil, then posts an unsolicited Response to mellon's ACS.
 * Single logout (SAML Profiles §4.4), with an OpenID client in the same Sigil session: mellon's
 * logout URL sends Sigil a LogoutRequest, which ends the Sigil session (the client gets its
 * back-channel logout token) and answers mellon; a logout at Sigil sends mellon a LogoutRequest
 * through the browser, after which mellon's protected page asks to sign in again; an administrator
 * ending the Sigil session through /admin/v1 (no browser) sends mellon a signed LogoutRequest over
 * SOAP, after which the protected page asks to sign in again too.
 */
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pkce } from '../authorize-helpers.js';
import { startProcess, testConfig, type ServerProcess } from '../helpers.js';
import { LogoutReceiver } from '../logout-receiver.js';
import { CallbackServer, launchChromium, newPage, submitLogin } from './browser-fixture.js';
import { type MellonSp, prepareMellon } from './mellon-sp.js';
import { freePort } from './ports.js';
import type { Browser } from 'playwright-core';

let sp: MellonSp;
/** A second mellon SP, registered with `encryptAssertion`: it decrypts with its MellonSPPrivateKeyFile. */
let encSp: MellonSp;
let sigil: ServerProcess;
let browser: Browser;
let receiver: LogoutReceiver;
let rp: CallbackServer;

beforeAll(async () => {
  sp = await prepareMellon();
  encSp = await prepareMellon();
  browser = await launchChromium();
  receiver = await LogoutReceiver.start();
  rp = await new CallbackServer().start();
  const base = testConfig();
  sigil = await startProcess(
    testConfig({
      // An OpenID client that takes back-channel logout, beside mellon in one Sigil session.
      clients: [
        ...(base.clients ?? []),
        {
          clientId: 'bc',
          clientSecrets: ['bc-secret'],
          allowedGrantTypes: ['authorization_code'],
          allowedScopes: ['openid'],
          redirectUris: [`${rp.url}/cb`],
          allowHttpRedirectUris: true,
          backChannelLogoutUri: `${receiver.url}/bc`,
        },
        {
          clientId: 'automation',
          clientSecrets: ['automation-secret'],
          allowedGrantTypes: ['client_credentials'],
          allowedScopes: ['sigil:admin'],
        },
      ],
      // A user of the SOAP logout test alone: mellon finds the session to end by its NameID.
      users: [...(base.users ?? []), { subjectId: '5', username: 'erin', password: 'erin', claims: { name: 'Erin' } }],
      // mellon's SOAP endpoint is plain http on loopback.
      clientIdMetadataDocuments: { allowLoopback: true },
      backChannelLogout: { pollSeconds: 1, timeoutSeconds: 2, retrySeconds: 60 },
      saml: { enabled: true },
      samlServiceProviders: [
        {
          entityId: sp.entityId,
          metadataXml: sp.metadataXml,
          nameIdFormat: 'persistent',
          attributes: { mail: 'email', displayName: 'name', role: 'role' },
        },
        {
          entityId: encSp.entityId,
          metadataXml: encSp.metadataXml,
          attributes: { mail: 'email' },
          encryptAssertion: true,
        },
      ],
    }),
    await freePort(),
  );
  const metadata = await fetch(`${sigil.url}/saml/metadata`);
  expect(metadata.status).toBe(200);
  const idpMetadata = await metadata.text();
  await Promise.all([sp.start(idpMetadata), encSp.start(idpMetadata)]);
}, 60_000);

afterAll(async () => {
  await Promise.allSettled([
    browser?.close(),
    sigil?.stop(),
    sp?.stop(),
    encSp?.stop(),
    receiver?.close(),
    rp?.close(),
  ]);
});

/** An access token of the `automation` client for /admin/v1. */
async function adminToken(): Promise<string> {
  const res = await fetch(`${sigil.url}/connect/token`, {
    method: 'POST',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      authorization: `Basic ${Buffer.from('automation:automation-secret').toString('base64')}`,
    },
    body: new URLSearchParams({ grant_type: 'client_credentials', scope: 'sigil:admin' }).toString(),
  });
  expect(res.status).toBe(200);
  return ((await res.json()) as { access_token: string }).access_token;
}

/** Signs in at mellon's protected page through Sigil as `user`; the page shows mellon's variables. */
async function signInAtMellon(page: Page, user: string): Promise<void> {
  await page.goto(sp.protectedUrl);
  await page.waitForURL((url) => url.href.startsWith(`${sigil.url}/account/login`));
  await submitLogin(page, user);
  await page.waitForURL(sp.protectedUrl, { timeout: 15_000 }).catch(() => {
    throw new Error(`not back at the SP: ${page.url()}\n${sp.errorLog()}`);
  });
  expect((await mellonVariables(page)).MELLON_NAME_ID, sp.errorLog()).toBeTruthy();
}

/** The OpenID client `bc` joins the browser's Sigil session: an authorization code, no page shown. */
async function oidcJoins(page: Page): Promise<void> {
  const params = new URLSearchParams({
    client_id: 'bc',
    response_type: 'code',
    scope: 'openid',
    redirect_uri: `${rp.url}/cb`,
    code_challenge: pkce().challenge,
    code_challenge_method: 'S256',
    state: 'st',
  });
  await page.goto(`${sigil.url}/connect/authorize?${params}`);
  await page.waitForURL((url) => url.href.startsWith(`${rp.url}/cb`));
  expect(rp.hits.at(-1)?.params.code).toBeTruthy();
}

/** Whether mellon's protected page shows its variables (a session at mellon) rather than Sigil's login page. */
async function mellonSessionAlive(page: Page): Promise<boolean> {
  await page.goto(sp.protectedUrl);
  await page.waitForURL(
    (url) => url.href.startsWith(sp.protectedUrl) || url.href.startsWith(`${sigil.url}/account/login`),
  );
  return page.url().startsWith(sp.protectedUrl);
}

/** The MELLON_ variables the protected page printed. */
async function mellonVariables(page: Page): Promise<Record<string, string>> {
  const text = (await page.locator('body').innerText()).trim();
  return Object.fromEntries(
    text
      .split('\n')
      .filter((line) => line.startsWith('MELLON_'))
      .map((line) => [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)]),
  );
}

describe('mod_auth_mellon as the service provider', () => {
  it("SP-initiated: the protected page, Sigil's login, then the attributes at the SP", async () => {
    const { context, page } = await newPage(browser);
    try {
      await page.goto(sp.protectedUrl);
      await page.waitForURL((url) => url.href.startsWith(`${sigil.url}/account/login`));
      await submitLogin(page, 'alice');
      await page.waitForURL(sp.protectedUrl, { timeout: 15_000 }).catch(() => {
        throw new Error(`not back at the SP: ${page.url()}\n${sp.errorLog()}`);
      });
      const vars = await mellonVariables(page);
      expect(vars, sp.errorLog()).toMatchObject({
        MELLON_mail: 'alice@example.com',
        MELLON_displayName: 'Alice Smith',
        MELLON_role: 'admin',
      });
      expect(vars.MELLON_NAME_ID).toMatch(/^[\w-]{43}$/);
    } finally {
      await context.close();
    }
  });

  it('an encrypted assertion: the posted Response has no plaintext Assertion, and mellon decrypts it', async () => {
    const { context, page } = await newPage(browser);
    try {
      const posted: string[] = [];
      page.on('request', (request) => {
        if (request.url() === `${encSp.origin}/mellon/postResponse`) posted.push(request.postData() ?? '');
      });
      await page.goto(encSp.protectedUrl);
      await page.waitForURL((url) => url.href.startsWith(`${sigil.url}/account/login`));
      await submitLogin(page, 'alice');
      await page.waitForURL(encSp.protectedUrl, { timeout: 15_000 }).catch(() => {
        throw new Error(`not back at the SP: ${page.url()}\n${encSp.errorLog()}`);
      });
      expect(await mellonVariables(page), encSp.errorLog()).toMatchObject({ MELLON_mail: 'alice@example.com' });
      expect(posted).toHaveLength(1);
      const response = Buffer.from(new URLSearchParams(posted[0]).get('SAMLResponse') ?? '', 'base64').toString('utf8');
      expect(response).toContain('<saml:EncryptedAssertion>');
      expect(response).not.toContain('<saml:Assertion');
      expect(response).not.toContain('alice@example.com');
    } finally {
      await context.close();
    }
  });

  it('IdP-initiated: /saml/initiate signs in at Sigil and posts straight to the SP, no AuthnRequest', async () => {
    const { context, page } = await newPage(browser);
    try {
      await page.goto(
        `${sigil.url}/saml/initiate?sp=${encodeURIComponent(sp.entityId)}&RelayState=${encodeURIComponent(sp.protectedUrl)}`,
      );
      await page.waitForURL((url) => url.href.startsWith(`${sigil.url}/account/login`));
      await submitLogin(page, 'bob');
      await page.waitForURL(sp.protectedUrl, { timeout: 15_000 }).catch(() => {
        throw new Error(`not back at the SP: ${page.url()}\n${sp.errorLog()}`);
      });
      const vars = await mellonVariables(page);
      expect(vars, sp.errorLog()).toMatchObject({ MELLON_displayName: 'Bob', MELLON_role: 'user' });
      expect(vars.MELLON_role_1).toBe('dev');
    } finally {
      await context.close();
    }
  });

  it("single logout from mellon's logout URL ends the Sigil session; the OpenID client gets its logout token", async () => {
    const { context, page } = await newPage(browser);
    try {
      await signInAtMellon(page, 'alice');
      await oidcJoins(page);
      receiver.received.length = 0;
      // mellon's logout endpoint: a signed LogoutRequest (HTTP-Redirect) to Sigil, then back to ReturnTo.
      await page.goto(`${sp.origin}/mellon/logout?ReturnTo=${encodeURIComponent(`${sp.origin}/protected/echo`)}`);
      // ReturnTo is protected: with both sessions gone, mellon sends the browser to Sigil's login page.
      await page
        .waitForURL((url) => url.href.startsWith(`${sigil.url}/account/login`), { timeout: 15_000 })
        .catch(async () => {
          throw new Error(`not at Sigil's login page: ${page.url()}\n${await page.content()}\n${sp.errorLog()}`);
        });
      await receiver.waitFor(() => receiver.delivered.length, 1);
      expect(receiver.delivered.map((r) => [r.path, r.aud])).toEqual([['/bc', 'bc']]);
      const account = await page.goto(`${sigil.url}/account`);
      expect(page.url()).toContain('/account/login');
      expect(account?.status()).toBe(200);
    } finally {
      await context.close();
    }
  });

  it("a logout at Sigil sends mellon a LogoutRequest: mellon's protected page asks to sign in again", async () => {
    const { context, page } = await newPage(browser);
    try {
      // A user with no other session at mellon: mellon finds the session a LogoutRequest ends by its
      // NameID alone, and with two of one user's sessions it may pick the other and refuse.
      await signInAtMellon(page, 'carol');
      await oidcJoins(page);
      receiver.received.length = 0;
      await page.goto(`${sigil.url}/account/logout`);
      await page.locator('form[action="/account/logout"] button').first().click();
      // Through mellon's logout endpoint and back (its LogoutResponse) to Sigil's signed-out page.
      await page
        .waitForURL((url) => url.href.startsWith(`${sigil.url}/saml/slo`), { timeout: 15_000 })
        .catch(async () => {
          throw new Error(`mellon did not answer: ${page.url()}\n${await page.content()}\n${sp.errorLog()}`);
        });
      expect(await page.locator('body').innerText()).not.toMatch(/went wrong/i);
      await receiver.waitFor(() => receiver.delivered.length, 1);
      expect(await mellonSessionAlive(page), sp.errorLog()).toBe(false);
    } finally {
      await context.close();
    }
  });

  it('an administrator ends the Sigil session: mellon gets a LogoutRequest over SOAP and its page asks to sign in again', async () => {
    const { context, page } = await newPage(browser);
    try {
      await signInAtMellon(page, 'erin');
      expect(await mellonSessionAlive(page)).toBe(true);
      // No browser involved: the session ends at /admin/v1, and its SOAP LogoutRequest goes out before the answer.
      const ended = await fetch(`${sigil.url}/admin/v1/users/5/sessions`, {
        method: 'DELETE',
        headers: { authorization: `Bearer ${await adminToken()}` },
      });
      expect(ended.status).toBe(200);
      expect(await ended.json()).toEqual({ ended: 1 });
      expect(await mellonSessionAlive(page), sp.errorLog()).toBe(false);
      expect(page.url()).toContain(`${sigil.url}/account/login`);
    } finally {
      await context.close();
    }
  });
});
