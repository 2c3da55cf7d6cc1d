/**
 * The look and language of the pages in Chromium: branding from the config (product
 * name, logo, icon, primary colour, custom CSS from Sigil's own origin under a strict CSP), a
 * template override that keeps the CSRF field, the client's metadata and the scopes' names on
 * consent with "not you?", French and Spanish pages, the friendly error page whose error id is in
 * the log, and the 404 page for browsers (JSON for API clients). Every page passes axe-core's
 * WCAG 2.x A/AA rules with no serious or critical violation. Screenshots: test-results/screenshots/.
 */
import { copyFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { audit, axeViolations } from './accessibility.js';
import {
  authorizeUrl,
  browserConfig,
  type BrowserFixture,
  CONSENT,
  newPage,
  screenshot,
  startBrowserFixture,
  submitLogin,
  VIEWPORTS,
} from './browser-fixture.js';
import { tempDir } from '../helpers.js';

/** Where the coordinator's closing note takes a few screenshots from. */
const NOTE_SCREENSHOTS = '/work/helpers/screenshots';

const LOGO = `<svg xmlns="http://www.w3.org/2000/svg" width="32" height="32" viewBox="0 0 32 32"><rect width="32" height="32" rx="8" fill="#0b5fff"/><path d="M8 22 L16 8 L24 22 Z" fill="#fff"/></svg>`;
const CLIENT_LOGO = `<svg xmlns="http://www.w3.org/2000/svg" width="120" height="40" viewBox="0 0 120 40"><rect width="120" height="40" rx="6" fill="#115e59"/><text x="60" y="26" font-size="16" text-anchor="middle" fill="#fff" font-family="sans-serif">Books</text></svg>`;
/** The built-in login page, plus a help line: an override keeps the fields, the CSRF partial and the escaping. */
const LOGIN_OVERRIDE = `<% layout('@layout', { lang: it.lang, title: it.t.signInTitle }) %>
<h1><%= it.t.signInTitle %></h1>
<% if (it.clientName) { %><p><%= it.f(it.t.signInTo, { client: it.clientName }) %></p><% } %>
<% if (it.error) { %><p class="alert" role="alert"><%= it.error %></p><% } %>
<form method="post" action="/account/login">
<%~ include('@csrf', it) %>
<% if (it.interaction) { %><input type="hidden" name="interaction" value="<%= it.interaction %>"><% } %>
<% if (it.uiLocales) { %><input type="hidden" name="ui_locales" value="<%= it.uiLocales %>"><% } %>
<label for="username"><%= it.t.username %></label>
<input type="text" id="username" name="username" value="<%= it.username %>" autocomplete="username" required autofocus>
<label for="password"><%= it.t.password %></label>
<input type="password" id="password" name="password" autocomplete="current-password" required>
<div class="actions">
<button type="submit" name="button" value="login" class="primary"><%= it.t.signIn %></button>
<button type="submit" name="button" value="cancel" formnovalidate><%= it.t.cancel %></button>
</div>
</form>
<p class="help">Need help? Call the Acme service desk on 555 0100.</p>`;

let f: BrowserFixture;
/** The client's home page (never visited: the test reads the links). */
const home = 'https://books.acme.example/';
const { dir, cleanup } = tempDir();
beforeAll(async () => {
  mkdirSync(join(dir, 'templates'));
  writeFileSync(join(dir, 'logo.svg'), LOGO);
  writeFileSync(join(dir, 'theme.css'), 'main { border-top: 4px solid var(--accent); }\n.help { font-size: .9rem; }\n');
  writeFileSync(join(dir, 'templates', 'login.eta'), LOGIN_OVERRIDE);
  f = await startBrowserFixture((cb) => {
    const base = browserConfig(cb);
    const cbPort = new URL(cb).port;
    return {
      ...base,
      logLevel: 'info',
      apiScopes: [
        {
          name: 'api1',
          displayName: 'Read your book list',
          description: 'The titles and authors on your shelves, not your notes',
        },
        { name: 'api2' },
      ],
      branding: {
        productName: 'Acme ID',
        logoUrl: join(dir, 'logo.svg'),
        faviconUrl: join(dir, 'logo.svg'),
        primaryColor: '#0b5fff',
        customCss: join(dir, 'theme.css'),
        templatesDir: join(dir, 'templates'),
      },
      clients: (base.clients ?? []).map((c) =>
        c.clientId === CONSENT.id
          ? {
              ...c,
              clientName: 'Acme Books',
              logoUri: `http://127.0.0.1:${cbPort}/logo.svg`,
              clientUri: home,
              policyUri: 'https://books.acme.example/privacy',
              tosUri: 'https://books.acme.example/terms',
            }
          : c,
      ),
    };
  });
  f.cb.pages.set('/logo.svg', CLIENT_LOGO);
  mkdirSync(NOTE_SCREENSHOTS, { recursive: true });
});
afterAll(async () => {
  await f?.close();
  cleanup();
});

const consentRequest = (extra: Record<string, string> = {}) =>
  authorizeUrl(f.sigil, {
    client_id: CONSENT.id,
    redirect_uri: `${f.cb.url}/cb`,
    response_type: 'code',
    scope: 'openid profile api1',
    state: 's',
    code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
    code_challenge_method: 'S256',
    ...extra,
  });

describe('branding', () => {
  it('every page shows the product name and logo in the brand colour under a strict CSP; the login override keeps its CSRF field', async () => {
    const { context, page } = await newPage(f.browser, VIEWPORTS.desktop);
    const response = await page.goto(consentRequest());
    await page.waitForURL(/\/account\/login\?interaction=/);
    const csp = (await page.context().request.get(page.url())).headers()['content-security-policy'] ?? '';
    expect(response).not.toBeNull();
    expect(csp).toContain("style-src 'self'");
    expect(csp).toMatch(/img-src 'self' data:(;|$)/);
    expect(csp).not.toContain('unsafe-inline');
    expect(await page.title()).toBe('Sign in · Acme ID');
    await expect.poll(() => page.locator('p.brand').textContent()).toBe('Acme ID');
    const logo = page.locator('p.brand img');
    expect(await logo.getAttribute('src')).toMatch(/^\/assets\/logo-[\w-]{22}\.svg$/);
    expect(await logo.evaluate((img: HTMLImageElement) => img.complete && img.naturalWidth > 0)).toBe(true);
    expect(await page.locator('link[rel=icon]').getAttribute('href')).toMatch(/^\/assets\/icon-[\w-]{22}\.svg$/);
    // The primary colour and the custom CSS both arrive, from Sigil's origin, cacheable.
    expect(await page.locator('button.primary').evaluate((b) => getComputedStyle(b).backgroundColor)).toBe(
      'rgb(11, 95, 255)',
    );
    expect(await page.locator('main').evaluate((m) => getComputedStyle(m).borderTopWidth)).toBe('4px');
    // The focus ring takes the brand colour too.
    await page.locator('input[name=username]').focus();
    expect(await page.locator('input[name=username]').evaluate((i) => getComputedStyle(i).outlineColor)).toBe(
      'rgb(11, 95, 255)',
    );
    const theme = (await page.locator('link[rel=stylesheet]').nth(1).getAttribute('href')) as string;
    const themed = await page.context().request.get(`${f.sigil.url}${theme}`);
    expect(themed.headers()['cache-control']).toBe('public, max-age=31536000, immutable');
    expect(themed.headers().etag).toMatch(/^"[\w-]{22}"$/);
    // The override: its own help line, the CSRF field from the partial.
    await expect.poll(() => page.locator('p.help').textContent()).toContain('Acme service desk');
    expect(await page.locator('form input[name=csrf_token]').getAttribute('value')).toMatch(/.{20,}/);
    expect(await audit(page)).toEqual([]);
    copyFileSync(await screenshot(page, 'branded-login-desktop'), join(NOTE_SCREENSHOTS, 'branded-login-override.png'));
    // A failed sign-in: the override shows the error, escaped.
    await submitLogin(page, '<b>alice</b>', 'wrong');
    await page.getByRole('alert').waitFor();
    expect(await page.locator('input[name=username]').inputValue()).toBe('<b>alice</b>');
    await submitLogin(page, 'alice');
    await page.waitForURL(/\/consent\?interaction=/);
    expect(await page.title()).toBe('Allow access? · Acme ID');
    await context.close();
  });
});

describe('consent', () => {
  it("shows the client's logo, name and pages, the scopes' names and descriptions, who is signed in; 'not you?' signs out and restarts the same request", async () => {
    const { context, page } = await newPage(f.browser, VIEWPORTS.desktop);
    await page.goto(consentRequest());
    await page.waitForURL(/\/account\/login\?interaction=/);
    const interaction = new URL(page.url()).searchParams.get('interaction');
    await submitLogin(page, 'alice');
    await page.waitForURL(/\/consent\?interaction=/);
    const csp = (await page.context().request.get(page.url())).headers()['content-security-policy'] ?? '';
    expect(csp).toContain(`img-src 'self' data: http://127.0.0.1:${new URL(f.cb.url).port}`);
    const clientLogo = page.locator('p.client-logo img');
    expect(await clientLogo.getAttribute('alt')).toBe('Acme Books');
    await expect
      .poll(() => clientLogo.evaluate((img: HTMLImageElement) => img.complete && img.naturalWidth > 0))
      .toBe(true);
    const text = (await page.locator('main').innerText()).replace(/\s+/g, ' ');
    expect(text).toContain('Signed in as alice.');
    expect(text).toContain('Acme Books would like to:');
    expect(text).toContain('Read your book list');
    expect(text).toContain('The titles and authors on your shelves, not your notes');
    expect(text).not.toContain('Use api1');
    const links = await page
      .locator('ul.client-links a')
      .evaluateAll((as) => as.map((a) => [a.textContent, (a as HTMLAnchorElement).href]));
    expect(links).toEqual([
      ['Privacy policy', 'https://books.acme.example/privacy'],
      ['Terms of service', 'https://books.acme.example/terms'],
      ['About Acme Books', home],
    ]);
    expect(await audit(page)).toEqual([]);
    copyFileSync(await screenshot(page, 'branded-consent-desktop'), join(NOTE_SCREENSHOTS, 'branded-consent.png'));

    await page.getByRole('button', { name: 'Not you?' }).click();
    await page.waitForURL(/\/account\/login\?interaction=/);
    expect(new URL(page.url()).searchParams.get('interaction')).toBe(interaction);
    // Signed out: the account page asks for a sign-in again.
    await submitLogin(page, 'bob');
    await page.waitForURL(/\/consent\?interaction=/);
    expect((await page.locator('main').innerText()).replace(/\s+/g, ' ')).toContain('Signed in as bob.');
    const since = f.cb.hits.length;
    await page.getByRole('button', { name: 'Allow' }).click();
    await page.waitForURL((u) => u.href.startsWith(`${f.cb.url}/cb`));
    expect(f.cb.hits.slice(since).find((h) => h.path === '/cb')?.params.code).toBeTruthy();
    await context.close();
  });
});

describe('languages', () => {
  it('French by ui_locales, Spanish by Accept-Language, on the login and consent pages', async () => {
    for (const [lang, options, extra, texts] of [
      [
        'fr',
        {},
        { ui_locales: 'fr-CA en' },
        [
          'Connexion',
          "Nom d'utilisateur",
          'Mot de passe',
          'Autoriser l’accès ?'.replace('’', "'"),
          'Connecté en tant que alice.',
          'Autoriser',
        ],
      ],
      [
        'es',
        { locale: 'es-ES' },
        {},
        [
          'Iniciar sesión',
          'Nombre de usuario',
          'Contraseña',
          '¿Permitir el acceso?',
          'Sesión iniciada como alice.',
          'Permitir',
        ],
      ],
    ] as const) {
      const { context, page } = await newPage(f.browser, { ...VIEWPORTS.phone, ...options });
      await page.goto(consentRequest(extra));
      await page.waitForURL(/\/account\/login\?interaction=/);
      expect(await page.getAttribute('html', 'lang')).toBe(lang);
      const login = await page.locator('main').innerText();
      for (const t of texts.slice(0, 3)) expect(login, `${lang}: ${t}`).toContain(t);
      expect(await audit(page)).toEqual([]);
      await screenshot(page, `login-${lang}-phone`);
      await submitLogin(page, 'alice');
      await page.waitForURL(/\/consent\?interaction=/);
      expect(await page.getAttribute('html', 'lang')).toBe(lang);
      const consent = (await page.locator('main').innerText()).replace(/\s+/g, ' ');
      for (const t of texts.slice(3)) expect(consent, `${lang}: ${t}`).toContain(t);
      expect(await audit(page)).toEqual([]);
      await screenshot(page, `consent-${lang}-phone`);
      await context.close();
    }
  });
});

describe('errors', () => {
  it('an error page says what happened, links back to the client, and shows the error id its log line carries', async () => {
    const { context, page } = await newPage(f.browser, VIEWPORTS.desktop);
    const response = await page.goto(consentRequest({ redirect_uri: 'https://unregistered.example/cb' }));
    expect(response?.status()).toBe(400);
    await page.getByRole('heading', { name: 'Something went wrong' }).waitFor();
    const text = await page.locator('main').innerText();
    expect(text).toContain('The application sent a request that cannot be accepted.');
    expect(text).not.toMatch(/at \w+ \(|node:internal|\.ts:\d+/);
    const back = page.getByRole('link', { name: 'Back to Acme Books' });
    expect(await back.getAttribute('href')).toBe(home);
    const errorId = (await page.locator('p.details code').nth(1).textContent()) as string;
    expect(errorId).toMatch(/^[0-9a-f-]{36}$/);
    await expect
      .poll(() =>
        f.sigil
          .output()
          .split('\n')
          .find((line) => line.includes(errorId)),
      )
      .toMatch(/"msg":"error page"/);
    expect(
      f.sigil
        .output()
        .split('\n')
        .find((line) => line.includes(errorId)),
    ).toContain('"error":"invalid_request"');
    expect(await audit(page)).toEqual([]);
    copyFileSync(await screenshot(page, 'friendly-error-desktop'), join(NOTE_SCREENSHOTS, 'friendly-error.png'));
    // In Spanish, with the text of the error code.
    await page.goto(consentRequest({ redirect_uri: 'https://unregistered.example/cb', ui_locales: 'es' }));
    expect(await page.locator('main').innerText()).toContain(
      'La aplicación ha enviado una solicitud que no se puede aceptar.',
    );
    await context.close();
  });

  it('an unknown path is an HTML 404 page for a browser and JSON for an API client', async () => {
    const { context, page } = await newPage(f.browser, VIEWPORTS.phone);
    const response = await page.goto(`${f.sigil.url}/no/such/page?x=<b>`);
    expect(response?.status()).toBe(404);
    expect(response?.headers()['content-type']).toBe('text/html; charset=utf-8');
    expect(response?.headers()['content-security-policy']).toContain("frame-ancestors 'none'");
    await page.getByRole('heading', { name: 'Page not found' }).waitFor();
    expect(await page.title()).toBe('Page not found · Acme ID');
    expect(await audit(page)).toEqual([]);
    await screenshot(page, 'not-found-phone');
    for (const accept of ['application/json', '*/*', undefined]) {
      const api = await fetch(`${f.sigil.url}/no/such/page`, { headers: accept ? { accept } : {} });
      expect(api.status, String(accept)).toBe(404);
      expect(api.headers.get('content-type'), String(accept)).toBe('application/json; charset=utf-8');
      expect(await api.json()).toEqual({ error: 'invalid_request', error_description: 'no such endpoint' });
    }
    await context.close();
  });
});

describe('the other pages', () => {
  it('the device page, its error, the signed-in page and /account pass axe with the branding', async () => {
    const { context, page } = await newPage(f.browser, VIEWPORTS.phone);
    await page.goto(`${f.sigil.url}/device`);
    await page.locator('h1').waitFor();
    expect(await audit(page)).toEqual([]);
    await page.locator('input[name=userCode]').fill('BCDF-GHJK');
    await page.locator('button[value=submit]').click();
    await page.getByRole('alert').waitFor();
    expect(await audit(page)).toEqual([]);
    await page.goto(`${f.sigil.url}/account/login`);
    await submitLogin(page, 'alice');
    await page.getByRole('heading', { name: 'Signed in' }).waitFor();
    expect(await audit(page)).toEqual([]);
    await page.goto(`${f.sigil.url}/account`);
    await page.locator('h1').waitFor();
    expect(await audit(page)).toEqual([]);
    await screenshot(page, 'account-branded-phone');
    await context.close();
  });
});

describe('the axe check itself', () => {
  it('finds the violations of a page without language, with an unnamed button and an unlabelled field', async () => {
    const { context, page } = await newPage(f.browser);
    await page.setContent(
      '<html><head><title>x</title></head><body><input type="text"><button></button></body></html>',
    );
    const found = await axeViolations(page);
    expect(found.some((v) => v.startsWith('axe html-has-lang'))).toBe(true);
    expect(found.some((v) => v.startsWith('axe button-name'))).toBe(true);
    expect(found.some((v) => v.startsWith('axe label'))).toBe(true);
    await context.close();
  });
});
