/**
 * Fixtures of the Chromium suite: Debian's Chromium through playwright-core, the real `sigil start`
 * process with browser clients, and a relying party's callback server on 127.0.0.1 that records
 * what the browser brings it (query, form_post body; fragments are read from the page URL).
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import * as oidc from 'openid-client';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import type { ConfigInput } from '../../src/index.js';
import { type ServerProcess, startProcess, testConfig } from '../helpers.js';
import { totpCode } from '../mfa-helpers.js';
import { freePort } from './ports.js';

/** Host name of the callback server as the browser sees it (mapped to 127.0.0.1). */
export const RP_HOST = 'rp.test';

/** Launches Debian's Chromium (never a downloaded browser). */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
    args: [
      '--no-sandbox',
      '--disable-background-networking',
      '--disable-gpu',
      '--no-first-run',
      '--disable-component-update',
      '--disable-sync',
      // The relying party's host name: another site than Sigil's 127.0.0.1, and no loopback
      // redirect URI (those count as native apps, whose consent is never remembered).
      `--host-resolver-rules=MAP ${RP_HOST} 127.0.0.1`,
    ],
  });
}

/** What arrived at the callback server. */
export interface Hit {
  method: string;
  path: string;
  params: Record<string, string>;
}

/** A relying party's redirect endpoints on 127.0.0.1, seen by the browser as `http://rp.test:<port>`. */
export class CallbackServer {
  readonly hits: Hit[] = [];
  private server!: Server;
  url = '';
  /** Extra pages by path (HTML, or SVG for a path ending in .svg), e.g. a page framing Sigil. */
  readonly pages = new Map<string, string>();

  async start(): Promise<this> {
    this.server = createServer((req, res) => void this.handle(req, res));
    await new Promise<void>((ok) => this.server.listen(0, '127.0.0.1', ok));
    this.url = `http://${RP_HOST}:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  private async handle(req: IncomingMessage, res: import('node:http').ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', this.url);
    if (url.pathname === '/favicon.ico') {
      res.writeHead(404);
      res.end();
      return;
    }
    const extra = this.pages.get(url.pathname);
    if (extra !== undefined) {
      res.writeHead(200, {
        'content-type': url.pathname.endsWith('.svg') ? 'image/svg+xml' : 'text/html; charset=utf-8',
      });
      res.end(extra);
      return;
    }
    let body = '';
    for await (const chunk of req) body += String(chunk);
    const params = Object.fromEntries(url.searchParams);
    if (req.method === 'POST') Object.assign(params, Object.fromEntries(new URLSearchParams(body)));
    this.hits.push({ method: req.method ?? 'GET', path: url.pathname, params });
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' });
    res.end(
      '<!doctype html><html lang="en"><head><title>Relying party</title></head><body><h1>Relying party callback</h1></body></html>',
    );
  }

  close(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((ok) => this.server.close(() => ok()));
  }
}

/** Secrets of the browser clients. */
export const WEB = { id: 'web', secret: 'web-secret-0123456789abcdef0123456789' } as const;
export const CONSENT = { id: 'consent-web', secret: 'consent-secret' } as const;

/** The fixture config plus the browser clients, redirecting to `cb`. */
export function browserConfig(cb: string): ConfigInput {
  const base = testConfig();
  return {
    ...base,
    clients: [
      ...(base.clients ?? []),
      {
        clientId: WEB.id,
        clientName: 'Example Web App',
        clientSecrets: [WEB.secret],
        allowedGrantTypes: ['hybrid', 'implicit'],
        allowedScopes: ['openid', 'profile', 'email', 'api1', 'offline_access'],
        allowOfflineAccess: true,
        allowAccessTokensViaBrowser: true,
        redirectUris: [`${cb}/cb`],
        postLogoutRedirectUris: [`${cb}/signed-out`],
        // The relying party is http://rp.test: a site of its own for the browser, which the
        // redirect URI rule allows over plain http only to a client marked for development.
        allowHttpRedirectUris: true,
      },
      {
        clientId: CONSENT.id,
        clientName: 'Consent <Example> & Co',
        clientSecrets: [CONSENT.secret],
        allowedGrantTypes: ['authorization_code'],
        allowedScopes: ['openid', 'profile', 'email', 'api1', 'offline_access'],
        allowOfflineAccess: true,
        requireConsent: true,
        redirectUris: [`${cb}/cb`],
        postLogoutRedirectUris: [`${cb}/signed-out`],
        // The relying party is http://rp.test: a site of its own for the browser, which the
        // redirect URI rule allows over plain http only to a client marked for development.
        allowHttpRedirectUris: true,
      },
    ],
  };
}

/** Chromium, a Sigil process and a callback server for one test file. */
export interface BrowserFixture {
  browser: Browser;
  sigil: ServerProcess;
  cb: CallbackServer;
  close: () => Promise<void>;
}

/**
 * Starts the fixture (Chromium and the processes start in parallel).
 * @param issuerHost the issuer's host name (see `startProcess`)
 */
export async function startBrowserFixture(
  config: (cb: string) => ConfigInput = browserConfig,
  issuerHost?: string,
): Promise<BrowserFixture> {
  const cb = await new CallbackServer().start();
  const [browser, sigil] = await Promise.all([
    launchChromium(),
    freePort().then((port) => startProcess(config(cb.url), port, issuerHost === undefined ? {} : { issuerHost })),
  ]);
  return {
    browser,
    sigil,
    cb,
    close: async () => {
      await Promise.allSettled([browser.close(), sigil.stop(), cb.close()]);
    },
  };
}

/** A fresh, isolated browser context (own cookies) with a page that records dialogs. */
export async function newPage(
  browser: Browser,
  options: Parameters<Browser['newContext']>[0] = {},
): Promise<{ context: BrowserContext; page: Page; dialogs: string[] }> {
  const context = await browser.newContext(options);
  const page = await context.newPage();
  const dialogs: string[] = [];
  page.on('dialog', (d) => {
    dialogs.push(d.message());
    void d.dismiss();
  });
  return { context, page, dialogs };
}

/** Fills and submits the login page the browser is on. */
export async function submitLogin(page: Page, username = 'alice', password = username): Promise<void> {
  await page.locator('input[name=username]').fill(username);
  await page.locator('input[name=password]').fill(password);
  await page.locator('button[name=button][value=login]').click();
}

/**
 * From the login page the browser is on (sent there by the console), signs `username` in and
 * enrolls an authenticator app on the way, as the console's second factor asks the first time;
 * ends where the recovery codes page's "continue" leads (the console).
 */
export async function signInEnrollingTotp(page: Page, username = 'alice', password = username): Promise<void> {
  await page.waitForURL(/\/account\/login\?interaction=/);
  await submitLogin(page, username, password);
  await enrollTotpAfterPassword(page);
}

/**
 * After a right password, on the way to the authenticator app's enrolment the console asks for
 * the first time: enrolls it with a code from its secret and continues past the recovery codes.
 */
export async function enrollTotpAfterPassword(page: Page): Promise<void> {
  await page.waitForURL(/\/account\/totp/);
  const secret = ((await page.locator('#totp-secret').textContent()) ?? '').replace(/\s+/g, '');
  await page.locator('input[name=code]').fill(totpCode(secret));
  await page.keyboard.press('Enter');
  await page.getByRole('heading', { name: 'Your recovery codes' }).waitFor();
  await page.locator('a.button.primary').click();
}

/** Signs in at `/account/login` without a pending request (starts a session in the context). */
export async function signInDirectly(page: Page, sigil: ServerProcess, username = 'alice'): Promise<void> {
  await page.goto(`${sigil.url}/account/login`);
  await submitLogin(page, username);
  await page.getByRole('heading', { name: 'Signed in' }).waitFor();
}

/** The `/connect/authorize` URL for parameters. */
export function authorizeUrl(sigil: ServerProcess, params: Record<string, string>): string {
  return `${sigil.url}/connect/authorize?${new URLSearchParams(params)}`;
}

/**
 * Waits until the browser reaches the callback server's `/cb` and returns the authorization
 * response it carried: query, fragment, or the posted form (form_post).
 * @param since the number of hits before the request, to pick a posted form
 */
export async function callbackResponse(
  page: Page,
  cb: CallbackServer,
  since: number,
  path = '/cb',
): Promise<{ mode: 'query' | 'fragment' | 'form_post'; params: Record<string, string> }> {
  await page.waitForURL((u) => u.href.startsWith(`${cb.url}${path}`), { timeout: 10_000 });
  const url = new URL(page.url());
  const hit = cb.hits.slice(since).find((h) => h.path === path);
  if (hit?.method === 'POST') return { mode: 'form_post', params: hit.params };
  if (url.hash.length > 1)
    return { mode: 'fragment', params: Object.fromEntries(new URLSearchParams(url.hash.slice(1))) };
  return { mode: 'query', params: Object.fromEntries(url.searchParams) };
}

/**
 * A pushed code flow by openid-client v6 (RFC 9126, PKCE S256, state and nonce): pushes the
 * request (with a DPoP proof of `dpop` when given, RFC 9449 §10.1), signs `username` in on `page`
 * and redeems the code (with the same DPoP key).
 * @returns the authorization URL used (`client_id` and `request_uri`), the callback's
 *   authorization response, and the token response
 */
export async function pushedCodeFlow(
  f: BrowserFixture,
  page: Page,
  rp: oidc.Configuration,
  opts: { scope: string; dpop?: oidc.DPoPHandle; username?: string },
): Promise<{
  url: URL;
  response: Awaited<ReturnType<typeof callbackResponse>>;
  tokens: Awaited<ReturnType<typeof oidc.authorizationCodeGrant>>;
}> {
  const codeVerifier = oidc.randomPKCECodeVerifier();
  const state = oidc.randomState();
  const nonce = oidc.randomNonce();
  const dpop = opts.dpop ? { DPoP: opts.dpop } : {};
  const url = await oidc.buildAuthorizationUrlWithPAR(
    rp,
    {
      redirect_uri: `${f.cb.url}/cb`,
      response_type: 'code',
      scope: opts.scope,
      code_challenge: await oidc.calculatePKCECodeChallenge(codeVerifier),
      code_challenge_method: 'S256',
      state,
      nonce,
    },
    dpop,
  );
  const since = f.cb.hits.length;
  await page.goto(url.href);
  await page.waitForURL(/\/account\/login\?interaction=/);
  await submitLogin(page, opts.username ?? 'alice');
  const response = await callbackResponse(page, f.cb, since);
  const tokens = await oidc.authorizationCodeGrant(
    rp,
    new URL(page.url()),
    { pkceCodeVerifier: codeVerifier, expectedState: state, expectedNonce: nonce },
    undefined,
    dpop,
  );
  return { url, response, tokens };
}

/** Where screenshots go (`test-results/` is git-ignored). */
export const SCREENSHOTS = resolve(import.meta.dirname, '../../test-results/screenshots');

/** Saves a full-page screenshot as `test-results/screenshots/<name>.png`. */
export async function screenshot(page: Page, name: string): Promise<string> {
  mkdirSync(SCREENSHOTS, { recursive: true });
  const path = join(SCREENSHOTS, `${name}.png`);
  await page.screenshot({ path, fullPage: true });
  return path;
}

/** Desktop and phone viewports for the screenshots. */
export const VIEWPORTS = {
  desktop: { viewport: { width: 1280, height: 800 } },
  phone: { viewport: { width: 390, height: 844 }, deviceScaleFactor: 2, isMobile: true, hasTouch: true },
} as const;
