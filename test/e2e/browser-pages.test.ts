/**
 * The pages as a person sees them, in a real Chromium at a desktop and a phone viewport, light
 * and dark: screenshots under test-results/screenshots/ (login, login with an error, consent,
 * logout, signed-out, error), and the accessibility basics checked on each (lang, title, one h1,
 * a main landmark, a label for every input, named buttons, text contrast at least WCAG AA, no
 * sideways scrolling, visible keyboard focus in a sensible order).
 */
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
import { audit, focused } from './accessibility.js';

let f: BrowserFixture;
beforeAll(async () => {
  // An upstream provider, so the login page shows its link too (never contacted here).
  f = await startBrowserFixture((cb) => ({
    ...browserConfig(cb),
    identityProviders: [
      { name: 'corp', displayName: 'Corp SSO', authority: 'http://127.0.0.1:9', clientId: 'sigil', clientSecret: 's' },
    ],
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

for (const [device, options] of Object.entries(VIEWPORTS)) {
  describe(`pages at the ${device} viewport`, () => {
    it('login, login error, consent, logout, signed-out and error pages: screenshots and the basics', async () => {
      const { context, page, dialogs } = await newPage(f.browser, options);
      const check = async (name: string) => {
        await page.locator('h1').waitFor();
        await screenshot(page, `${name}-${device}`);
        expect(await audit(page), name).toEqual([]);
        if (device === 'phone') {
          for (const box of await page
            .locator('button')
            .evaluateAll((bs) => bs.map((b) => b.getBoundingClientRect().height)))
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
      await page.goto(
        authorizeUrl(f.sigil, {
          client_id: CONSENT.id,
          redirect_uri: 'https://unregistered.example/cb',
          response_type: 'code',
          scope: 'openid',
        }),
      );
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
    await page.waitForFunction(() => document.activeElement?.getAttribute('name') === 'username', undefined, {
      timeout: 5000,
    });
    const order: string[] = [];
    let current = await focused(page);
    order.push(current.id);
    for (let i = 0; i < 4; i++) {
      await page.keyboard.press('Tab');
      current = await focused(page);
      expect(current.ring, `focus ring on ${current.id}`).toBe(true);
      order.push(current.id);
    }
    // "Show password" (no name: it is never sent) right after the field it belongs to.
    expect(order).toEqual([
      'input[username]',
      'input[password]',
      'button[]',
      'button[button=login]',
      'button[button=cancel]',
    ]);
    await page.locator('input[name=password]').focus();
    await page.keyboard.type('alice');
    await page.locator('input[name=username]').focus();
    await page.keyboard.type('alice');
    await page.keyboard.press('Enter');
    await page.waitForURL(/\/consent\?interaction=/);
    // On consent: "not you?" next to the user's name, the checkbox, then allow, then deny.
    const consentOrder: string[] = [];
    await page.evaluate(() => (document.activeElement as HTMLElement | null)?.blur());
    for (let i = 0; i < 4; i++) {
      await page.keyboard.press('Tab');
      const now = await focused(page);
      expect(now.ring, `focus ring on ${now.id}`).toBe(true);
      consentOrder.push(now.id);
    }
    expect(consentOrder).toEqual([
      'button[button=switch]',
      'input[remember]',
      'button[button=yes]',
      'button[button=no]',
    ]);
    await context.close();
  });
});
