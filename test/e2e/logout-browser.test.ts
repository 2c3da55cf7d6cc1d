/**
 * Logout in a real Chromium against the built `sigil start` process: the two RP-Initiated Logout
 * conformance modules (an unregistered post_logout_redirect_uri, and a registered one with a
 * query added: no redirect, an error page naming the problem, a screenshot each), and
 * Front-Channel Logout 1.0 (the signed-out page loads each client's iframe with iss and sid
 * before the redirect, its CSP allowing exactly those frames).
 */
import { decodeJwt } from 'jose';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ConfigInput } from '../../src/index.js';
import {
  authorizeUrl,
  type BrowserFixture,
  browserConfig,
  callbackResponse,
  newPage,
  screenshot,
  signInDirectly,
  startBrowserFixture,
  WEB,
} from './browser-fixture.js';

let f: BrowserFixture;
const FC_APP = 'fc-app';

/**
 * The callback server under the name `localhost`: logout URIs must be https, or http on a loopback host.
 */
const loopback = (cb: string) => cb.replace(/^http:\/\/[^:/]+/, 'http://localhost');

/** The browser fixture with front-channel logout URIs for `web` and one more implicit client. */
function logoutConfig(cb: string): ConfigInput {
  const base = browserConfig(cb);
  const clients = (base.clients ?? []).map((c) =>
    c.clientId === WEB.id ? { ...c, frontChannelLogoutUri: `${loopback(cb)}/fc` } : c,
  );
  clients.push({
    clientId: FC_APP,
    clientSecrets: ['fc-secret'],
    allowedGrantTypes: ['implicit'],
    allowedScopes: ['openid'],
    redirectUris: [`${cb}/cb`],
    // http://rp.test, the browser fixture's relying party: plain http off loopback (development).
    allowHttpRedirectUris: true,
    frontChannelLogoutUri: `${loopback(cb)}/fc2?app=2`,
  });
  return { ...base, clients };
}

beforeAll(async () => {
  f = await startBrowserFixture(logoutConfig);
});
afterAll(async () => f?.close());

/** An identity token for `clientId` from the browser's session (response_type=id_token). */
async function idToken(
  page: Page,
  clientId: string,
  extra: Record<string, string> = {},
): Promise<Record<string, string>> {
  const since = f.cb.hits.length;
  await page.goto(
    authorizeUrl(f.sigil, {
      client_id: clientId,
      redirect_uri: `${f.cb.url}/cb`,
      response_type: 'id_token',
      scope: 'openid',
      nonce: 'n',
      state: 's',
      ...extra,
    }),
  );
  return (await callbackResponse(page, f.cb, since)).params;
}

const endSessionUrl = (params: Record<string, string>) =>
  `${f.sigil.url}/connect/endsession?${new URLSearchParams(params)}`;

describe('RP-initiated logout with a post_logout_redirect_uri that is not registered', () => {
  const cases: [string, () => string][] = [
    ['oidcc-rp-initiated-logout-bad-post-logout-redirect-uri', () => `${f.cb.url}/not-registered`],
    ['oidcc-rp-initiated-logout-query-added-to-post-logout-redirect-uri', () => `${f.cb.url}/signed-out?foo=bar`],
  ];
  it.each(cases)('%s: no redirect, an error page naming the problem, the session kept', async (name, uri) => {
    const { context, page } = await newPage(f.browser);
    await signInDirectly(page, f.sigil);
    const hint = (await idToken(page, WEB.id)).id_token!;
    const since = f.cb.hits.length;
    await page.goto(endSessionUrl({ id_token_hint: hint, post_logout_redirect_uri: uri(), state: 'bye' }));
    expect(page.url().startsWith(`${f.sigil.url}/connect/endsession`)).toBe(true);
    await page.getByText('post_logout_redirect_uri is not registered for the client').waitFor();
    await screenshot(page, name);
    expect(f.cb.hits.slice(since)).toEqual([]);
    // Nothing changed: the session still answers prompt=none.
    expect((await idToken(page, WEB.id, { prompt: 'none' })).id_token).toBeTruthy();
    await context.close();
  });
});

describe('front-channel logout', () => {
  it("the signed-out page loads every session client's iframe with iss and sid, then redirects", async () => {
    const { context, page } = await newPage(f.browser);
    await signInDirectly(page, f.sigil);
    const hint = (await idToken(page, WEB.id)).id_token!;
    await idToken(page, FC_APP);
    const sid = decodeJwt(hint).sid;
    expect(sid).toBeTruthy();
    const policies: string[] = [];
    page.on('response', (r) => {
      if (r.url().startsWith(`${f.sigil.url}/connect/endsession`))
        policies.push(r.headers()['content-security-policy'] ?? '');
    });
    const since = f.cb.hits.length;
    await page.goto(
      endSessionUrl({ id_token_hint: hint, post_logout_redirect_uri: `${f.cb.url}/signed-out`, state: 'bye' }),
    );
    await page.waitForURL(`${f.cb.url}/signed-out?state=bye`);
    const hits = f.cb.hits.slice(since);
    const paths = hits.map((h) => h.path);
    expect(paths.slice(0, 2).sort()).toEqual(['/fc', '/fc2']);
    expect(paths[2]).toBe('/signed-out');
    expect(hits.find((h) => h.path === '/fc')!.params).toEqual({ iss: f.sigil.url, sid });
    expect(hits.find((h) => h.path === '/fc2')!.params).toEqual({ app: '2', iss: f.sigil.url, sid });
    const frameSrc = /frame-src ([^;]*)/
      .exec(policies[0] ?? '')?.[1]
      ?.split(' ')
      .sort();
    expect(frameSrc).toEqual([`${loopback(f.cb.url)}/fc`, `${loopback(f.cb.url)}/fc2`]);
    // Signed out.
    expect((await idToken(page, WEB.id, { prompt: 'none' })).error).toBe('login_required');
    await context.close();
  });
});
