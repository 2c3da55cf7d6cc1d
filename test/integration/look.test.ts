/**
 * The look and language through a running Sigil: a broken template override or a
 * missing file stops createSigil with a clear ConfigError (never a 500 later), the theme is served
 * cacheable with its ETag, an https logo's origin joins img-src, a deployment's catalogue adds a
 * language, and a failed page request is an HTML page for a browser and JSON for an API client.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/config/loader.js';
import { startSigil, type TestSigil, tempDir } from '../helpers.js';

const { dir, cleanup } = tempDir();
let sigil: TestSigil;
const HTML = { accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8' };

beforeAll(async () => {
  mkdirSync(join(dir, 'locales'));
  writeFileSync(join(dir, 'locales', 'it.json'), JSON.stringify({ signInTitle: 'Accedi', username: 'Nome utente' }));
  writeFileSync(join(dir, 'theme.css'), '.brand { letter-spacing: .1em; }');
  sigil = await startSigil({
    branding: {
      productName: 'Acme <ID>',
      logoUrl: 'https://cdn.acme.example/logo.png',
      primaryColor: '#0b5fff',
      customCss: join(dir, 'theme.css'),
    },
    localesDir: join(dir, 'locales'),
  });
});
afterAll(async () => {
  await sigil?.close();
  cleanup();
});

describe('start', () => {
  const templates = (files: Record<string, string>) => {
    const d = join(dir, `templates-${Object.keys(files).join('-')}-${Math.random().toString(36).slice(2)}`);
    mkdirSync(d);
    for (const [name, body] of Object.entries(files)) writeFileSync(join(d, name), body);
    return d;
  };
  const refusal = async (branding: Record<string, string>): Promise<string> => {
    const err = await startSigil({ branding: { productName: 'X', ...branding } }).then(
      async (s) => {
        await s.close();
        return undefined;
      },
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(ConfigError);
    return (err as ConfigError).message;
  };

  it('refuses a template without the CSRF field, also for pages other modules register (account), and a misnamed one', async () => {
    const noCsrf =
      '<% layout(\'@layout\', { title: "x" }) %><h1>x</h1><form method="post" action="/account/recovery"><button>Go</button></form>';
    expect(await refusal({ templatesDir: templates({ 'account.eta': noCsrf }) })).toContain(
      "branding.templatesDir: account.eta: a POST form without <%~ include('@csrf', it) %>",
    );
    expect(await refusal({ templatesDir: templates({ 'logni.eta': '<p>x</p>' }) })).toContain(
      'branding.templatesDir: logni.eta: there is no page template "logni"',
    );
    expect(await refusal({ templatesDir: templates({ 'message.eta': '<% if (x { %>' }) })).toMatch(
      /branding\.templatesDir: message\.eta: /,
    );
    expect(await refusal({ customCss: join(dir, 'missing.css') })).toContain(
      `branding.customCss: cannot read ${join(dir, 'missing.css')} (ENOENT)`,
    );
  });
});

describe('pages', () => {
  it("carry the product name escaped, the theme from Sigil's origin, and the https logo's origin in img-src only", async () => {
    const page = await sigil.app.inject({ method: 'GET', url: '/account/login', headers: HTML });
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('<title>Sign in · Acme &lt;ID&gt;</title>');
    expect(page.body).toContain('<img src="https://cdn.acme.example/logo.png" alt="">Acme &lt;ID&gt;</p>');
    const csp = String(page.headers['content-security-policy']);
    expect(csp).toContain("img-src 'self' data: https://cdn.acme.example;");
    expect(csp).toMatch(/(^|;)style-src 'self'(;|$)/);
    expect(csp).not.toContain('unsafe-inline');
    const theme = /<link rel="stylesheet" href="(\/assets\/theme-[\w-]{22}\.css)">/.exec(page.body)?.[1] as string;
    const css = await sigil.app.inject({ method: 'GET', url: theme });
    expect(css.statusCode).toBe(200);
    expect(css.headers['content-type']).toBe('text/css; charset=utf-8');
    expect(css.headers['cache-control']).toBe('public, max-age=31536000, immutable');
    expect(css.body).toContain('--accent: #0b5fff;');
    expect(css.body).toContain('.brand { letter-spacing: .1em; }');
    const again = await sigil.app.inject({
      method: 'GET',
      url: theme,
      headers: { 'if-none-match': String(css.headers.etag) },
    });
    expect(again.statusCode).toBe(304);
    expect(again.body).toBe('');
  });

  it('speak a language a deployment adds, with English for the texts it leaves out', async () => {
    const page = await sigil.app.inject({ method: 'GET', url: '/account/login?ui_locales=it-IT', headers: HTML });
    expect(page.body).toContain('<html lang="it">');
    expect(page.body).toContain('<h1>Accedi</h1>');
    expect(page.body).toContain('Nome utente');
    expect(page.body).toContain('Password');
    const byHeader = await sigil.app.inject({
      method: 'GET',
      url: '/account/login',
      headers: { ...HTML, 'accept-language': 'it;q=0.9, fr;q=0.8' },
    });
    expect(byHeader.body).toContain('<html lang="it">');
  });
});

describe('errors', () => {
  it('a failed page request is an HTML page with an error id for a browser, JSON for an API client; never a stack trace', async () => {
    const big = 'x='.padEnd(70 * 1024, 'y');
    const form = { 'content-type': 'application/x-www-form-urlencoded' };
    const page = await sigil.app.inject({
      method: 'POST',
      url: '/account/login',
      headers: { ...HTML, ...form },
      payload: big,
    });
    expect(page.statusCode).toBe(413);
    expect(page.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(page.headers['content-security-policy']).toContain("frame-ancestors 'none'");
    expect(page.body).toContain('The application sent a request that cannot be accepted.');
    expect(page.body).toMatch(/Error id: <code>[0-9a-f-]{36}<\/code>/);
    const api = await sigil.app.inject({
      method: 'POST',
      url: '/account/login',
      headers: { accept: 'application/json', ...form },
      payload: big,
    });
    expect(api.statusCode).toBe(413);
    expect(api.json()).toEqual({ error: 'invalid_request', error_description: 'the request body is too large' });
    for (const res of [page, api]) expect(res.body).not.toMatch(/at \w+ \(|node:internal|\.ts:\d+/);
  });

  it('an unknown path: an HTML 404 for a browser, JSON for an API client, whatever the method', async () => {
    const page = await sigil.app.inject({ method: 'GET', url: '/nope/<script>', headers: HTML });
    expect(page.statusCode).toBe(404);
    expect(page.body).toContain('<h1>Page not found</h1>');
    expect(page.body).toContain('<a href="/account">Your account</a>');
    expect(page.body).not.toContain('<script>');
    for (const [method, accept] of [
      ['GET', 'application/json'],
      ['GET', '*/*'],
      ['POST', 'application/json'],
      ['DELETE', undefined],
    ] as const) {
      const res = await sigil.app.inject({ method, url: '/nope', headers: accept ? { accept } : {} });
      expect(res.statusCode).toBe(404);
      expect(res.json()).toEqual({ error: 'invalid_request', error_description: 'no such endpoint' });
    }
  });
});
