/**
 * The pages as a person sees them, in a real Chromium at a desktop and a phone viewport, light
 * and dark: screenshots under test-results/screenshots/ (login, login with an error, consent,
 * logout, signed-out, error), and the accessibility basics checked on each (lang, title, one h1,
 * a main landmark, a label for every input, named buttons, text contrast at least WCAG AA, no
 * sideways scrolling, visible keyboard focus in a sensible order).
 */
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
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

let f: BrowserFixture;
beforeAll(async () => {
  // An upstream provider, so the login page shows its link too (never contacted here).
  f = await startBrowserFixture((cb) => ({
    ...browserConfig(cb),
    identityProviders: [{ name: 'corp', displayName: 'Corp SSO', authority: 'http://127.0.0.1:9', clientId: 'sigil', clientSecret: 's' }],
  }));
});
afterAll(async () => f?.close());

const consentRequest = () =>
  authorizeUrl(f.sigil, {
    client_id: CONSENT.id,
    redirect_uri: `${f.cb.url}/cb`,
    response_type: 'code',
    scope: 'openid profile email api1 offline_access',
    state: 's',
    code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
    code_challenge_method: 'S256',
  });

/**
 * The accessibility basics of the current page; returns the problems found.
 * Contrast: WCAG 2.x ratio of each text element's colour to its effective background, 4.5:1 for
 * body text and 3:1 for large text.
 */
async function audit(page: Page): Promise<string[]> {
  return page.evaluate(() => {
    const problems: string[] = [];
    if (!/^[a-z]{2}/.test(document.documentElement.lang)) problems.push('html has no lang');
    if (document.title.trim() === '') problems.push('no title');
    if (document.querySelectorAll('h1').length !== 1) problems.push(`${document.querySelectorAll('h1').length} h1 elements`);
    if (!document.querySelector('main')) problems.push('no main landmark');
    for (const input of document.querySelectorAll<HTMLInputElement>('input:not([type=hidden]), select, textarea')) {
      const byFor = input.id !== '' && document.querySelector(`label[for="${CSS.escape(input.id)}"]`);
      if (!byFor && !input.closest('label') && !input.getAttribute('aria-label')) problems.push(`input ${input.name} has no label`);
    }
    for (const b of document.querySelectorAll('button')) if ((b.textContent ?? '').trim() === '') problems.push('a button has no text');

    const rgb = (s: string): [number, number, number, number] => {
      const m = /rgba?\(([\d.]+),\s*([\d.]+),\s*([\d.]+)(?:,\s*([\d.]+))?\)/.exec(s);
      return m ? [Number(m[1]), Number(m[2]), Number(m[3]), m[4] === undefined ? 1 : Number(m[4])] : [0, 0, 0, 0];
    };
    const lum = ([r, g, b]: number[]) => {
      const c = [r, g, b].map((v) => {
        const x = (v ?? 0) / 255;
        return x <= 0.03928 ? x / 12.92 : ((x + 0.055) / 1.055) ** 2.4;
      });
      return 0.2126 * c[0]! + 0.7152 * c[1]! + 0.0722 * c[2]!;
    };
    const background = (el: Element | null): [number, number, number, number] => {
      for (let e = el; e; e = e.parentElement) {
        const bg = rgb(getComputedStyle(e).backgroundColor);
        if (bg[3] > 0.5) return bg;
      }
      return [255, 255, 255, 1];
    };
    for (const el of document.querySelectorAll('h1, p, label, button, li, code, a, .alert')) {
      if ((el.textContent ?? '').trim() === '') continue;
      const style = getComputedStyle(el);
      const fg = lum(rgb(style.color));
      const bg = lum(background(el));
      const ratio = (Math.max(fg, bg) + 0.05) / (Math.min(fg, bg) + 0.05);
      const size = parseFloat(style.fontSize);
      const large = size >= 24 || (size >= 18.66 && Number(style.fontWeight) >= 700);
      if (ratio < (large ? 3 : 4.5)) problems.push(`contrast ${ratio.toFixed(2)} of <${el.tagName.toLowerCase()}> "${(el.textContent ?? '').trim().slice(0, 30)}"`);
    }
    if (document.documentElement.scrollWidth > window.innerWidth + 1) problems.push(`scrolls sideways: ${document.documentElement.scrollWidth} > ${window.innerWidth}`);
    return problems;
  });
}

/** The focused element as `tag[name=value]`, and whether its focus ring is visible. */
async function focused(page: Page): Promise<{ id: string; ring: boolean }> {
  return page.evaluate(() => {
    const el = document.activeElement as HTMLInputElement | null;
    if (!el || el === document.body) return { id: 'body', ring: false };
    const style = getComputedStyle(el);
    const ring = (style.outlineStyle !== 'none' && parseFloat(style.outlineWidth) >= 2) || style.boxShadow !== 'none';
    return { id: `${el.tagName.toLowerCase()}[${el.name}${el.value && el.tagName === 'BUTTON' ? `=${el.value}` : ''}]`, ring };
  });
}

for (const [device, options] of Object.entries(VIEWPORTS)) {
  describe(`pages at the ${device} viewport`, () => {
    it('login, login error, consent, logout, signed-out and error pages: screenshots and the basics', async () => {
      const { context, page, dialogs } = await newPage(f.browser, options);
      const check = async (name: string) => {
        await page.locator('h1').waitFor();
        await screenshot(page, `${name}-${device}`);
        expect(await audit(page), name).toEqual([]);
        if (device === 'phone') {
          for (const box of await page.locator('button').evaluateAll((bs) => bs.map((b) => b.getBoundingClientRect().height)))
            expect(box, `${name}: button height`).toBeGreaterThanOrEqual(44);
        }
      };

      await page.goto(consentRequest());
      await page.waitForURL(/\/account\/login\?interaction=/);
      await check('login');
      await submitLogin(page, 'alice', 'not-her-password');
      await page.getByRole('alert').waitFor();
      await check('login-error');
      await submitLogin(page, 'alice');
      await page.waitForURL(/\/consent\?interaction=/);
      await check('consent');
      await page.goto(`${f.sigil.url}/account/logout`);
      await check('logout');
      await page.locator('button[value=logout]').click();
      await page.getByRole('heading', { name: 'Signed out' }).waitFor();
      await check('signed-out');
      await page.goto(authorizeUrl(f.sigil, { client_id: CONSENT.id, redirect_uri: 'https://unregistered.example/cb', response_type: 'code', scope: 'openid' }));
      await page.getByRole('heading', { name: 'Something went wrong' }).waitFor();
      await check('error');
      expect(dialogs).toEqual([]);
      await context.close();
    });
  });
}

describe('dark colour scheme and German', () => {
  it('the login and consent pages keep their contrast in dark mode and read German', async () => {
    const { context, page } = await newPage(f.browser, { ...VIEWPORTS.phone, colorScheme: 'dark', locale: 'de-DE' });
    await page.goto(consentRequest());
    await page.waitForURL(/\/account\/login\?interaction=/);
    expect(await page.getAttribute('html', 'lang')).toBe('de');
    await screenshot(page, 'login-dark-de-phone');
    expect(await audit(page)).toEqual([]);
    await submitLogin(page, 'alice');
    await page.waitForURL(/\/consent\?interaction=/);
    await screenshot(page, 'consent-dark-de-phone');
    expect(await audit(page)).toEqual([]);
    await context.close();
  });
});

describe('keyboard', () => {
  it('focus starts in the username, follows the reading order, and is always visible', async () => {
    const { context, page } = await newPage(f.browser, VIEWPORTS.desktop);
    await page.goto(consentRequest());
    await page.waitForURL(/\/account\/login\?interaction=/);
    // `autofocus` applies once the page has rendered: wait for it (it fails the test if it never does).
    await page.waitForFunction(() => document.activeElement?.getAttribute('name') === 'username', undefined, { timeout: 5000 });
    const order: string[] = [];
    let current = await focused(page);
    order.push(current.id);
    for (let i = 0; i < 3; i++) {
      await page.keyboard.press('Tab');
      current = await focused(page);
      expect(current.ring, `focus ring on ${current.id}`).toBe(true);
      order.push(current.id);
    }
    expect(order).toEqual(['input[username]', 'input[password]', 'button[button=login]', 'button[button=cancel]']);
    await page.locator('input[name=password]').focus();
    await page.keyboard.type('alice');
    await page.locator('input[name=username]').focus();
    await page.keyboard.type('alice');
    await page.keyboard.press('Enter');
    await page.waitForURL(/\/consent\?interaction=/);
    // On consent: the checkbox, then allow, then deny.
    const consentOrder: string[] = [];
    await page.evaluate(() => (document.activeElement as HTMLElement | null)?.blur());
    for (let i = 0; i < 3; i++) {
      await page.keyboard.press('Tab');
      const now = await focused(page);
      expect(now.ring, `focus ring on ${now.id}`).toBe(true);
      consentOrder.push(now.id);
    }
    expect(consentOrder).toEqual(['input[remember]', 'button[button=yes]', 'button[button=no]']);
    await context.close();
  });
});
