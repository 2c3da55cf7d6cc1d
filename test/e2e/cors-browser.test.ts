/**
 * A browser-based MCP client, from a page of another origin than Sigil's (http://localhost:<port>
 * against Sigil's http://127.0.0.1:<port>), in Chromium: it registers at /connect/register (a JSON
 * POST, so a real preflight), reads its registration at the client configuration endpoint (a
 * Bearer header: preflight again), runs the code flow with PKCE and redeems the code at the token
 * endpoint from its page, all by fetch under CORS, never in credentials mode. Beside it, the
 * controls: a page of an origin the client did not register cannot read the token endpoint's
 * answer, and `credentials: 'include'` is refused by the browser everywhere.
 */
import { createHash, randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ServerProcess, startProcess, testConfig } from '../helpers.js';
import { launchChromium, newPage, submitLogin } from './browser-fixture.js';
import { freePort } from './ports.js';

/** A static page for the browser to stand on, at `http://localhost:<port>`: any path answers it. */
class PageServer {
  private server!: Server;
  origin = '';
  async start(): Promise<this> {
    this.server = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      res.end('<!doctype html><html lang="en"><title>Agent</title><p>agent</p></html>');
    });
    await new Promise<void>((ok) => this.server.listen(0, '127.0.0.1', ok));
    this.origin = `http://localhost:${(this.server.address() as AddressInfo).port}`;
    return this;
  }
  close(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((ok) => this.server.close(() => ok()));
  }
}

/** What a fetch from the page gave: the status and JSON body, or the browser's refusal. */
type Outcome = { status: number; body: Record<string, unknown> } | { refused: string };

/** Runs fetch in `page` (the page's origin) and reports the outcome. */
function pageFetch(page: Page, url: string, init: RequestInit): Promise<Outcome> {
  return page.evaluate(
    async ([u, i]) => {
      try {
        const res = await fetch(u, i);
        const text = await res.text();
        return { status: res.status, body: text === '' ? {} : (JSON.parse(text) as Record<string, unknown>) };
      } catch (e) {
        return { refused: String(e) };
      }
    },
    [url, init] as const,
  );
}

let sigil: ServerProcess;
let browser: Browser;
const app = new PageServer();
const stranger = new PageServer();

beforeAll(async () => {
  await Promise.all([app.start(), stranger.start()]);
  const port = await freePort();
  [sigil, browser] = await Promise.all([
    startProcess({ ...testConfig(), registration: { enabled: true, open: true } }, port),
    launchChromium(),
  ]);
});

afterAll(async () => {
  await Promise.allSettled([browser?.close(), sigil?.stop(), app.close(), stranger.close()]);
});

describe('a browser-based client of another origin', () => {
  it('registers, reads its registration, signs in and redeems its code from its page', async () => {
    const { context, page } = await newPage(browser);
    await page.goto(`${app.origin}/`);
    const redirectUri = `${app.origin}/callback`;
    const registered = await pageFetch(page, `${sigil.url}/connect/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        client_name: 'Browser agent',
        redirect_uris: [redirectUri],
        token_endpoint_auth_method: 'none',
        grant_types: ['authorization_code'],
        scope: 'openid api1',
      }),
    });
    expect(registered).toMatchObject({ status: 201 });
    const reg = (registered as { body: Record<string, string> }).body;
    const read = await pageFetch(page, reg.registration_client_uri ?? '', {
      headers: { authorization: `Bearer ${reg.registration_access_token}` },
    });
    expect(read).toMatchObject({ status: 200, body: { client_id: reg.client_id } });

    const verifier = randomBytes(32).toString('base64url');
    const challenge = createHash('sha256').update(verifier).digest('base64url');
    const params = new URLSearchParams({
      client_id: reg.client_id ?? '',
      redirect_uri: redirectUri,
      response_type: 'code',
      scope: 'openid api1',
      code_challenge: challenge,
      code_challenge_method: 'S256',
    });
    await page.goto(`${sigil.url}/connect/authorize?${params}`);
    await page.waitForURL(/\/account\/login\?interaction=/);
    await submitLogin(page, 'alice');
    await page.waitForURL(/\/consent\?interaction=/);
    await page.locator('button[name=button][value=yes]').click();
    await page.waitForURL((url) => url.href.startsWith(redirectUri));
    const code = new URL(page.url()).searchParams.get('code') ?? '';
    expect(code).not.toBe('');
    const token = await pageFetch(page, `${sigil.url}/connect/token`, {
      method: 'POST',
      // A header beyond the CORS-safelisted ones: the browser sends a preflight first.
      headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-agent': 'browser' },
      body: new URLSearchParams({
        grant_type: 'authorization_code',
        code,
        redirect_uri: redirectUri,
        client_id: reg.client_id ?? '',
        code_verifier: verifier,
      }).toString(),
    });
    expect(token).toMatchObject({ status: 200, body: { token_type: 'Bearer', scope: 'openid api1' } });
    await context.close();
  }, 60_000);

  it('is refused what it did not earn: the token endpoint from an unregistered origin, and credentials mode', async () => {
    const { context, page } = await newPage(browser);
    await page.goto(`${stranger.origin}/`);
    const token = await pageFetch(page, `${sigil.url}/connect/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'grant_type=authorization_code&code=x&client_id=y',
    });
    expect(token).toHaveProperty('refused');
    // The registration endpoint answers any origin, but never with credentials.
    const body = JSON.stringify({ redirect_uris: [`${stranger.origin}/cb`], token_endpoint_auth_method: 'none' });
    const plain = await pageFetch(page, `${sigil.url}/connect/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body,
    });
    expect(plain).toMatchObject({ status: 201 });
    const withCookies = await pageFetch(page, `${sigil.url}/connect/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body,
      credentials: 'include',
    });
    expect(withCookies).toHaveProperty('refused');
    await context.close();
  }, 30_000);
});

describe('preflights over HTTP', () => {
  const preflight = (path: string, origin: string, method = 'POST') =>
    fetch(`${sigil.url}${path}`, {
      method: 'OPTIONS',
      headers: {
        origin,
        'access-control-request-method': method,
        'access-control-request-headers': 'authorization, content-type',
      },
    });

  it('answers the registration and configuration endpoints for any origin, without credentials', async () => {
    for (const [path, method] of [
      ['/connect/register', 'POST'],
      ['/connect/register/some-client', 'PUT'],
      ['/connect/register/some-client', 'DELETE'],
    ] as const) {
      const res = await preflight(path, 'https://agent.example', method);
      expect(res.status, path).toBe(204);
      expect(res.headers.get('access-control-allow-origin'), path).toBe('*');
      expect(res.headers.get('access-control-allow-methods'), path).toContain(method);
      expect(res.headers.get('access-control-allow-headers')?.toLowerCase(), path).toContain('authorization');
      expect(res.headers.get('access-control-allow-credentials'), path).toBeNull();
    }
  });

  it('answers the token endpoint for a dynamic client’s redirect origin only, without credentials', async () => {
    const registered = await fetch(`${sigil.url}/connect/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        redirect_uris: ['https://spa.agent.example/cb', 'com.example.agent:/cb'],
        token_endpoint_auth_method: 'none',
        application_type: 'native',
      }),
    });
    expect(registered.status).toBe(201);
    const ok = await preflight('/connect/token', 'https://spa.agent.example');
    expect(ok.headers.get('access-control-allow-origin')).toBe('https://spa.agent.example');
    expect(ok.headers.get('access-control-allow-credentials')).toBeNull();
    const other = await preflight('/connect/token', 'https://other.example');
    expect(other.headers.get('access-control-allow-origin')).toBeNull();
  });
});
