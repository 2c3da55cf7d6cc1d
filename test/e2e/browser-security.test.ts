/**
 * The pages under attack, in a real Chromium: script payloads in state, login_hint, ui_locales,
 * usernames and error-producing parameters never run (no dialog ever opens) and come back as the
 * same text, escaped; the login and consent pages refuse to be framed by another site; the
 * form_post page carries exactly what was sent.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import {
  authorizeUrl,
  type BrowserFixture,
  callbackResponse,
  CONSENT,
  newPage,
  startBrowserFixture,
  submitLogin,
  WEB,
} from './browser-fixture.js';

let f: BrowserFixture;
beforeAll(async () => {
  f = await startBrowserFixture();
});
afterAll(async () => f?.close());

/** Payloads that would open a dialog if they reached the page unescaped. */
const PAYLOADS = [
  `"><script>alert('xss-script')</script>`,
  `'><img src=x onerror="alert('xss-img')">`,
  `</title><svg onload=alert('xss-svg')>`,
  `javascript:alert('xss-js')`,
];

const params = (extra: Record<string, string>) => ({
  client_id: WEB.id,
  redirect_uri: `${f.cb.url}/cb`,
  response_type: 'code',
  scope: 'openid profile',
  nonce: 'n',
  code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
  code_challenge_method: 'S256',
  ...extra,
});

/** Elements that only an injection could have added to Sigil's pages. */
async function injected(page: Page): Promise<number> {
  return page.evaluate(() => document.querySelectorAll('img, svg, iframe, object, embed, script:not([src])').length);
}

describe('no script payload ever runs', () => {
  it.each(PAYLOADS)('login_hint and ui_locales %s: pre-filled and kept as text', async (payload) => {
    const { context, page, dialogs } = await newPage(f.browser);
    await page.goto(authorizeUrl(f.sigil, params({ login_hint: payload, ui_locales: payload, state: payload })));
    await page.waitForURL(/\/account\/login\?interaction=/);
    expect(await page.locator('input[name=username]').inputValue()).toBe(payload);
    expect(await page.locator('input[name=ui_locales]').inputValue()).toBe(payload);
    expect(await page.getAttribute('html', 'lang')).toBe('en');
    expect(await injected(page)).toBe(0);
    // A failed attempt re-renders the typed username.
    await submitLogin(page, payload, 'wrong');
    await page.getByRole('alert').waitFor();
    expect(await page.locator('input[name=username]').inputValue()).toBe(payload);
    expect(await injected(page)).toBe(0);
    expect(dialogs).toEqual([]);
    await context.close();
  });

  it.each(PAYLOADS)('state %s travels through form_post unchanged and inert', async (payload) => {
    const { context, page, dialogs } = await newPage(f.browser);
    await page.goto(`${f.sigil.url}/account/login`);
    await submitLogin(page, 'alice');
    await page.getByRole('heading', { name: 'Signed in' }).waitFor();
    const since = f.cb.hits.length;
    await page.goto(authorizeUrl(f.sigil, params({ state: payload, response_mode: 'form_post' })));
    const { mode, params: res } = await callbackResponse(page, f.cb, since);
    expect(mode).toBe('form_post');
    expect(res.state).toBe(payload);
    expect(res.code).toEqual(expect.any(String));
    expect(dialogs).toEqual([]);
    await context.close();
  });

  it('the form_post page (scripts off) holds the payloads as input values only', async () => {
    const { context, page, dialogs } = await newPage(f.browser, { javaScriptEnabled: false });
    const payload = PAYLOADS.join(' ');
    // An invalid prompt value is echoed in error_description: both reach the page as values.
    await page.goto(
      authorizeUrl(f.sigil, params({ state: payload, prompt: PAYLOADS[1]!, response_mode: 'form_post' })),
    );
    expect(page.url().startsWith(f.sigil.url)).toBe(true);
    expect(await page.locator('input[name=state]').inputValue()).toBe(payload);
    expect(await page.locator('input[name=error]').inputValue()).toBe('invalid_request');
    // The description quotes the first word of the bad value (its `"` replaced: RFC 6749 §5.2 charset).
    expect(await page.locator('input[name=error_description]').inputValue()).toContain(`'><img`);
    expect(await page.evaluate(() => document.querySelectorAll('img, svg').length)).toBe(0);
    expect(await page.evaluate(() => document.querySelectorAll('script').length)).toBe(1);
    expect(await page.getAttribute('form', 'action')).toBe(`${f.cb.url}/cb`);
    expect(dialogs).toEqual([]);
    await context.close();
  });

  it('error-producing parameters: the error page names the error and reflects none of them', async () => {
    const { context, page, dialogs } = await newPage(f.browser);
    const payload = PAYLOADS.join(' ');
    const cases: Record<string, string>[] = [
      { client_id: payload, redirect_uri: payload, response_type: payload, scope: payload, state: payload },
      params({ redirect_uri: payload, state: payload, error: payload, error_description: payload }),
      params({ response_mode: payload, state: payload }),
    ];
    for (const query of cases) {
      const response = await page.goto(authorizeUrl(f.sigil, query));
      expect(response?.status()).toBe(400);
      await page.getByRole('heading', { name: 'Something went wrong' }).waitFor();
      const text = (await page.textContent('body')) ?? '';
      for (const p of PAYLOADS) expect(text).not.toContain(p);
      expect(await page.content()).not.toContain('alert(');
      expect(await injected(page)).toBe(0);
    }
    for (const path of [
      `/account/login?interaction=${encodeURIComponent(payload)}`,
      `/consent?interaction=${encodeURIComponent(payload)}`,
    ]) {
      await page.goto(`${f.sigil.url}${path}`);
      expect(await page.content()).not.toContain('alert(');
      expect(await injected(page)).toBe(0);
    }
    // An error at the redirect URI (fragment) with the payload as state: the provider's part ends at the redirect.
    const since = f.cb.hits.length;
    await page.goto(
      authorizeUrl(f.sigil, { ...params({ state: payload, prompt: payload }), response_type: 'code id_token' }),
    );
    const { params: res } = await callbackResponse(page, f.cb, since);
    expect(res).toMatchObject({ error: 'invalid_request', state: payload });
    expect(dialogs).toEqual([]);
    await context.close();
  });

  it('end session never redirects to a javascript: or unregistered post_logout_redirect_uri', async () => {
    const { context, page, dialogs } = await newPage(f.browser);
    for (const target of ["javascript:alert('xss-logout')", `${f.cb.url}/elsewhere`]) {
      await page.goto(
        `${f.sigil.url}/connect/endsession?${new URLSearchParams({ post_logout_redirect_uri: target, state: PAYLOADS[0]! })}`,
      );
      expect(page.url().startsWith(f.sigil.url)).toBe(true);
      expect(await injected(page)).toBe(0);
    }
    expect(dialogs).toEqual([]);
    await context.close();
  });
});

describe('framing', () => {
  it('another site cannot frame the login or consent page', async () => {
    const { context, page } = await newPage(f.browser);
    const blocked: string[] = [];
    page.on('console', (m) => {
      if (/frame-ancestors|X-Frame-Options/i.test(m.text())) blocked.push(m.text());
    });
    // A real interaction, so the framed pages would have something to show.
    await page.goto(authorizeUrl(f.sigil, { ...params({ state: 's' }), client_id: CONSENT.id }));
    await page.waitForURL(/\/account\/login\?interaction=/);
    const loginUrl = page.url();
    f.cb.pages.set(
      '/frame',
      `<!doctype html><html lang="en"><head><title>framing</title></head><body>
<iframe id="login" src="${loginUrl}" width="600" height="400"></iframe>
<iframe id="consent" src="${f.sigil.url}/consent?interaction=x" width="600" height="400"></iframe>
</body></html>`,
    );
    await page.goto(`${f.cb.url}/frame`);
    await page.waitForLoadState('load');
    await expect.poll(() => blocked.length, { timeout: 5000 }).toBeGreaterThanOrEqual(2);
    const children = page.frames().filter((fr) => fr !== page.mainFrame());
    expect(children).toHaveLength(2);
    for (const child of children) {
      expect(child.url().startsWith(f.sigil.url)).toBe(false);
      const inputs = await child.evaluate(() => document.querySelectorAll('input, button').length).catch(() => 0);
      expect(inputs).toBe(0);
    }
    await context.close();
  });
});
