/**
 * The postLogin hook in a real Chromium against the real `sigil start` process: a loopback
 * receiver (verifying each call's Standard Webhooks signature) denies a sign-in, which reaches the
 * client as access_denied with the hook's description and leaves no session; an allowed sign-in
 * goes on to consent; a denied sign-in at the account pages shows the description.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CONFIG_SECRET } from '../webhook-helpers.js';
import { startReceiver, type Receiver } from '../webhook-receiver.js';
import {
  authorizeUrl,
  type BrowserFixture,
  browserConfig,
  callbackResponse,
  CONSENT,
  newPage,
  startBrowserFixture,
  submitLogin,
} from './browser-fixture.js';

let receiver: Receiver;
let f: BrowserFixture;

beforeAll(async () => {
  receiver = await startReceiver([CONFIG_SECRET]);
  f = await startBrowserFixture((cb) => ({
    ...browserConfig(cb),
    hooks: { postLogin: { url: `${receiver.url}/post-login`, secret: CONFIG_SECRET, onFailure: 'deny' } },
  }));
});
afterAll(async () => {
  await f?.close();
  await receiver?.close();
});

const consentRequest = () =>
  authorizeUrl(f.sigil, {
    client_id: CONSENT.id,
    redirect_uri: `${f.cb.url}/cb`,
    response_type: 'code',
    scope: 'openid profile',
    state: 'hooked',
    code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
    code_challenge_method: 'S256',
  });

/** The verified body of the receiver's last call. */
function lastEvent(): Record<string, unknown> {
  const last = receiver.received.at(-1);
  expect(last?.verified, 'the call verifies with the hook secret').toBeDefined();
  return last?.verified as unknown as Record<string, unknown>;
}

describe('postLogin', () => {
  it('a denial reaches the client as access_denied with the description, and no session is left', async () => {
    const { context, page } = await newPage(f.browser);
    try {
      receiver.replies = [{ json: { deny: { error: 'access_denied', description: 'bob is on leave' } } }];
      const since = f.cb.hits.length;
      await page.goto(consentRequest());
      await page.waitForURL(/\/account\/login\?interaction=/);
      await submitLogin(page, 'bob');
      const response = await callbackResponse(page, f.cb, since);
      expect(response.params).toMatchObject({
        error: 'access_denied',
        error_description: 'bob is on leave',
        state: 'hooked',
      });
      expect(response.params.code).toBeUndefined();
      expect(lastEvent()).toMatchObject({
        subject: '2',
        client: { clientId: CONSENT.id, clientName: 'Consent <Example> & Co' },
        amr: ['pwd'],
        ip: '127.0.0.1',
      });
      // No session: the account page asks to sign in.
      await page.goto(`${f.sigil.url}/account`);
      await page.waitForURL(/\/account\/login/);
      expect((await context.cookies()).some((c) => c.name === 'sigil.session')).toBe(false);
    } finally {
      await context.close();
    }
  });

  it('an allowed sign-in goes on to consent', async () => {
    const { context, page } = await newPage(f.browser);
    try {
      receiver.replies = [{ json: {} }];
      await page.goto(consentRequest());
      await page.waitForURL(/\/account\/login\?interaction=/);
      await submitLogin(page, 'alice');
      await page.locator('button[name=button][value=yes]').waitFor();
      expect(lastEvent()).toMatchObject({ subject: '1', amr: ['pwd'] });
    } finally {
      await context.close();
    }
  });

  it('a denied sign-in at the account pages shows the description', async () => {
    const { context, page } = await newPage(f.browser);
    try {
      receiver.replies = [{ json: { deny: { description: 'accounts are frozen' } } }];
      await page.goto(`${f.sigil.url}/account/login`);
      await submitLogin(page, 'alice');
      await page.getByText('accounts are frozen').waitFor();
      expect(lastEvent()).toMatchObject({ subject: '1', client: null });
      expect((await context.cookies()).some((c) => c.name === 'sigil.session')).toBe(false);
    } finally {
      await context.close();
    }
  });
});
