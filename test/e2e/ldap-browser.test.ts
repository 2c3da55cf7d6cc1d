/**
 * A directory user signs in on the real login page in Chromium: `sigil start` with an
 * LDAP directory (a real slapd, test/ldap-server.ts), the consent client's code flow, the code
 * redeemed for tokens whose subject is the user's entryUUID; then, with slapd stopped, the page says
 * sign-in is unavailable.
 */
import { createHash, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeJwt } from 'jose';
import { basic, form } from '../helpers.js';
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
import { type Slapd, startSlapd } from '../ldap-server.mjs';

const VERIFIER = randomBytes(32).toString('base64url');
let slapd: Slapd;
let f: BrowserFixture;

beforeAll(async () => {
  slapd = await startSlapd();
  // No config users: alice is the directory's.
  f = await startBrowserFixture((cb) => ({
    ...browserConfig(cb),
    users: [],
    userDirectories: [slapd.directoryConfig()] as never,
  }));
});
afterAll(async () => {
  await f?.close();
  await slapd?.close();
});

describe('LDAP directory in the browser', () => {
  it('signs a directory user in on the login page; with the directory down, the page says sign-in is unavailable', async () => {
    const { context, page } = await newPage(f.browser);
    const since = f.cb.hits.length;
    await page.goto(
      authorizeUrl(f.sigil, {
        client_id: CONSENT.id,
        redirect_uri: `${f.cb.url}/cb`,
        response_type: 'code',
        scope: 'openid profile',
        state: 'ldap',
        code_challenge: createHash('sha256').update(VERIFIER).digest('base64url'),
        code_challenge_method: 'S256',
      }),
    );
    await page.waitForURL(/\/account\/login\?interaction=/);
    await submitLogin(page, 'alice', 'alice-pw');
    await page.getByRole('button', { name: 'Allow' }).click();
    const { params } = await callbackResponse(page, f.cb, since);
    expect(params.state).toBe('ldap');
    const res = await fetch(`${f.sigil.url}/connect/token`, {
      method: 'POST',
      headers: {
        authorization: basic(CONSENT.id, CONSENT.secret),
        'content-type': 'application/x-www-form-urlencoded',
      },
      body: form({
        grant_type: 'authorization_code',
        code: params.code!,
        redirect_uri: `${f.cb.url}/cb`,
        code_verifier: VERIFIER,
      }),
    });
    const body = (await res.json()) as { id_token: string };
    expect(res.status, JSON.stringify(body)).toBe(200);
    const id = decodeJwt(body.id_token);
    expect(id.sub).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-/);

    await slapd.stop();
    const other = await newPage(f.browser);
    await other.page.goto(`${f.sigil.url}/account/login`);
    await submitLogin(other.page, 'bob', 'bob-pw');
    await expect(other.page.getByRole('alert').textContent()).resolves.toBe(
      'Sign-in is unavailable at the moment. Please try again later.',
    );
    await Promise.all([context.close(), other.context.close()]);
  });
});
