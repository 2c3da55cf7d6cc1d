/**
 * Sigil as the identity provider of a real SAML service provider: Apache httpd with
 * mod_auth_mellon (Debian's packages, installed by .ci/run), driven in Debian's Chromium. The SP
 * signs its AuthnRequests (HTTP-Redirect) and wants signed assertions; Sigil answers with the
 * HTTP-POST binding. SP-initiated: the protected page sends the browser to Sigil's login page,
 * and after the password the page shows the attributes mellon took from the assertion.
 * IdP-initiated: /saml/initiate signs in at Sigil, then posts an unsolicited Response to mellon's ACS.
 */
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startProcess, testConfig, type ServerProcess } from '../helpers.js';
import { launchChromium, newPage, submitLogin } from './browser-fixture.js';
import { type MellonSp, prepareMellon } from './mellon-sp.js';
import { freePort } from './ports.js';
import type { Browser } from 'playwright-core';

let sp: MellonSp;
let sigil: ServerProcess;
let browser: Browser;

beforeAll(async () => {
  sp = await prepareMellon();
  browser = await launchChromium();
  sigil = await startProcess(
    testConfig({
      saml: { enabled: true },
      samlServiceProviders: [
        {
          entityId: sp.entityId,
          metadataXml: sp.metadataXml,
          nameIdFormat: 'persistent',
          attributes: { mail: 'email', displayName: 'name', role: 'role' },
        },
      ],
    }),
    await freePort(),
  );
  const metadata = await fetch(`${sigil.url}/saml/metadata`);
  expect(metadata.status).toBe(200);
  await sp.start(await metadata.text());
}, 60_000);

afterAll(async () => {
  await Promise.allSettled([browser?.close(), sigil?.stop(), sp?.stop()]);
});

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
});
