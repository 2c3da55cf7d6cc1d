/**
 * End to end in a real Chromium against the built `sigil start` process: sign-in through the
 * pages, every response type in every response mode it allows, prompt/max_age/login_hint/
 * ui_locales, consent, request objects, sign-out, and the error paths. The relying party side is
 * openid-client (which validates what it receives) or a plain callback server on 127.0.0.1.
 */
import { createHash } from 'node:crypto';
import { createRemoteJWKSet, decodeJwt, jwtVerify, SignJWT } from 'jose';
import * as oidc from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  authorizeUrl,
  type BrowserFixture,
  callbackResponse,
  CONSENT,
  newPage,
  signInDirectly,
  startBrowserFixture,
  submitLogin,
  WEB,
} from './browser-fixture.js';

let f: BrowserFixture;
let web: oidc.Configuration;
let jwks: ReturnType<typeof createRemoteJWKSet>;

beforeAll(async () => {
  f = await startBrowserFixture();
  web = await oidc.discovery(new URL(f.sigil.url), WEB.id, WEB.secret, oidc.ClientSecretBasic(WEB.secret), {
    execute: [oidc.allowInsecureRequests],
  });
  jwks = createRemoteJWKSet(new URL(`${f.sigil.url}/.well-known/openid-configuration/jwks`));
});
afterAll(async () => f?.close());

const redirectUri = () => `${f.cb.url}/cb`;
const S256 = (verifier: string) => createHash('sha256').update(verifier).digest('base64url');
const VERIFIER = 'v'.repeat(43);

/** Authorization request parameters of the `web` client (PKCE whenever a code is returned). */
function webParams(responseType: string, extra: Record<string, string> = {}): Record<string, string> {
  const scope =
    responseType === 'token' ? 'api1' : responseType === 'id_token' ? 'openid profile' : 'openid profile api1';
  return {
    client_id: WEB.id,
    redirect_uri: redirectUri(),
    response_type: responseType,
    scope,
    state: `st-${Math.random().toString(36).slice(2)}`,
    nonce: `n-${Math.random().toString(36).slice(2)}`,
    ...(responseType.includes('code') ? { code_challenge: S256(VERIFIER), code_challenge_method: 'S256' } : {}),
    ...extra,
  };
}

/** Sends the browser to /connect/authorize and returns what reached the callback. */
async function authorizeAndCollect(page: import('playwright-core').Page, params: Record<string, string>) {
  const since = f.cb.hits.length;
  await page.goto(authorizeUrl(f.sigil, params));
  return callbackResponse(page, f.cb, since);
}

/** Verifies an identity token's signature and standard claims. */
async function verifyIdToken(token: string, nonce: string, audience = WEB.id) {
  const { payload, protectedHeader } = await jwtVerify(token, jwks, { issuer: f.sigil.url, audience });
  expect(payload.nonce).toBe(nonce);
  return { payload, protectedHeader };
}

describe('authorization code flow with PKCE through openid-client', () => {
  it('signs in on the login page, redeems the code, validates the identity token, reads userinfo; replay and bad verifiers fail', async () => {
    const { context, page } = await newPage(f.browser);
    const codeVerifier = oidc.randomPKCECodeVerifier();
    const state = oidc.randomState();
    const nonce = oidc.randomNonce();
    const url = oidc.buildAuthorizationUrl(web, {
      redirect_uri: redirectUri(),
      response_type: 'code',
      scope: 'openid profile email api1 offline_access',
      code_challenge: await oidc.calculatePKCECodeChallenge(codeVerifier),
      code_challenge_method: 'S256',
      state,
      nonce,
    });
    const since = f.cb.hits.length;
    await page.goto(url.href);
    await page.waitForURL(/\/account\/login\?interaction=/);
    expect(await page.textContent('main')).toContain('Example Web App');
    await submitLogin(page, 'alice');
    const response = await callbackResponse(page, f.cb, since);
    expect(response.mode).toBe('query');
    expect(response.params.iss).toBe(f.sigil.url);
    const current = new URL(page.url());

    // openid-client checks state and iss, redeems the code with the verifier, validates the ID token.
    const tokens = await oidc.authorizationCodeGrant(web, current, {
      pkceCodeVerifier: codeVerifier,
      expectedState: state,
      expectedNonce: nonce,
    });
    const claims = tokens.claims()!;
    expect(claims).toMatchObject({ iss: f.sigil.url, sub: '1', aud: WEB.id, nonce });
    expect(typeof claims.auth_time).toBe('number');
    expect(tokens.refresh_token).toEqual(expect.any(String));
    expect(tokens.scope?.split(' ').sort()).toEqual(['api1', 'email', 'offline_access', 'openid', 'profile']);
    const info = await oidc.fetchUserInfo(web, tokens.access_token, claims.sub);
    expect(info).toMatchObject({ sub: '1', name: 'Alice Smith', email: 'alice@example.com', email_verified: true });

    // Replaying the code: invalid_grant.
    const replay = await oidc
      .authorizationCodeGrant(web, current, { pkceCodeVerifier: codeVerifier, expectedState: state })
      .then(
        () => undefined,
        (err: unknown) => err,
      );
    expect(replay).toBeInstanceOf(oidc.ResponseBodyError);
    expect((replay as oidc.ResponseBodyError).error).toBe('invalid_grant');

    // A wrong verifier, then no verifier at all, on fresh codes (the session skips the login page).
    for (const pkceCodeVerifier of ['w'.repeat(43), undefined]) {
      const again = oidc.buildAuthorizationUrl(web, {
        redirect_uri: redirectUri(),
        response_type: 'code',
        scope: 'openid',
        state,
        nonce,
        code_challenge: await oidc.calculatePKCECodeChallenge(codeVerifier),
        code_challenge_method: 'S256',
      });
      const before = f.cb.hits.length;
      await page.goto(again.href);
      await callbackResponse(page, f.cb, before);
      const err = await oidc
        .authorizationCodeGrant(web, new URL(page.url()), {
          expectedState: state,
          ...(pkceCodeVerifier ? { pkceCodeVerifier } : {}),
        })
        .then(
          () => undefined,
          (e: unknown) => e,
        );
      expect(err).toBeInstanceOf(oidc.ResponseBodyError);
      expect((err as oidc.ResponseBodyError).error).toBe('invalid_grant');
    }
    await context.close();
  });
});

describe('every response type in every response mode it allows', () => {
  const CASES: [string, string[]][] = [
    ['code', ['query', 'fragment', 'form_post']],
    ['id_token', ['fragment', 'form_post']],
    ['id_token token', ['fragment', 'form_post']],
    ['token', ['fragment', 'form_post']],
    ['code id_token', ['fragment', 'form_post']],
    ['code token', ['fragment', 'form_post']],
    ['code id_token token', ['fragment', 'form_post']],
  ];

  it.each(CASES)('response_type=%s in %j, and its default mode', async (responseType, modes) => {
    const { context, page } = await newPage(f.browser);
    await signInDirectly(page, f.sigil);
    const parts = responseType.split(' ');
    for (const mode of [...modes, 'default']) {
      const params = webParams(responseType, mode === 'default' ? {} : { response_mode: mode });
      const { mode: got, params: res } = await authorizeAndCollect(page, params);
      expect(got).toBe(mode === 'default' ? (responseType === 'code' ? 'query' : 'fragment') : mode);
      expect(res.error).toBeUndefined();
      expect(res.state).toBe(params.state);
      expect(res.iss).toBe(f.sigil.url);
      expect(res.code !== undefined).toBe(parts.includes('code'));
      expect(res.id_token !== undefined).toBe(parts.includes('id_token'));
      expect(res.access_token !== undefined).toBe(parts.includes('token'));
      if (res.access_token) {
        expect(res.token_type).toBe('Bearer');
        const { payload, protectedHeader } = await jwtVerify(res.access_token, jwks, {
          issuer: f.sigil.url,
          typ: 'at+jwt',
        });
        expect(protectedHeader.typ).toBe('at+jwt');
        expect(payload).toMatchObject({ sub: '1', client_id: WEB.id });
      }
      if (res.id_token) {
        const { payload } = await verifyIdToken(res.id_token, params.nonce!);
        expect(payload.sub).toBe('1');
        expect(payload.c_hash !== undefined).toBe(parts.includes('code'));
        expect(payload.at_hash !== undefined).toBe(parts.includes('token'));
        // With no access token, the profile claims travel in the identity token (OIDC Core §5.4).
        if (responseType === 'id_token') expect(payload.name).toBe('Alice Smith');
      }
      if (res.code) {
        const token = await fetch(`${f.sigil.url}/connect/token`, {
          method: 'POST',
          headers: {
            'content-type': 'application/x-www-form-urlencoded',
            authorization: `Basic ${Buffer.from(`${WEB.id}:${WEB.secret}`).toString('base64')}`,
          },
          body: new URLSearchParams({
            grant_type: 'authorization_code',
            code: res.code,
            redirect_uri: redirectUri(),
            code_verifier: VERIFIER,
          }),
        });
        expect(token.status).toBe(200);
        const body = (await token.json()) as { id_token?: string };
        expect(typeof body.id_token).toBe('string');
        expect(decodeJwt(body.id_token!).nonce).toBe(params.nonce);
      }
    }
    await context.close();
  });

  it('refuses response_mode=query for a response type carrying tokens, at the redirect URI in the fragment', async () => {
    const { context, page } = await newPage(f.browser);
    const params = webParams('id_token token', { response_mode: 'query' });
    const { mode, params: res } = await authorizeAndCollect(page, params);
    expect(mode).toBe('fragment');
    expect(res).toMatchObject({ error: 'invalid_request', state: params.state, iss: f.sigil.url });
    expect(res.access_token).toBeUndefined();
    await context.close();
  });
});

describe('prompt, max_age, login_hint, ui_locales', () => {
  it('prompt=none without a session answers login_required; with a session it issues a code', async () => {
    const { context, page } = await newPage(f.browser);
    const params = webParams('code', { prompt: 'none' });
    const first = await authorizeAndCollect(page, params);
    expect(first.params).toMatchObject({ error: 'login_required', state: params.state, iss: f.sigil.url });
    expect(first.params.code).toBeUndefined();
    await signInDirectly(page, f.sigil);
    const second = await authorizeAndCollect(page, webParams('code', { prompt: 'none' }));
    expect(second.params.error).toBeUndefined();
    expect(second.params.code).toEqual(expect.any(String));
    await context.close();
  });

  it('prompt=login shows the login page despite a session, and the new sign-in is fresh', async () => {
    const { context, page } = await newPage(f.browser);
    await signInDirectly(page, f.sigil);
    const before = Math.floor(Date.now() / 1000);
    const params = webParams('id_token', { prompt: 'login' });
    const since = f.cb.hits.length;
    await page.goto(authorizeUrl(f.sigil, params));
    await page.waitForURL(/\/account\/login\?interaction=/);
    await submitLogin(page, 'alice');
    const { params: res } = await callbackResponse(page, f.cb, since);
    const { payload } = await verifyIdToken(res.id_token!, params.nonce!);
    expect(payload.auth_time).toBeGreaterThanOrEqual(before);
    await context.close();
  });

  it('max_age: a recent sign-in is enough; an older one than max_age asks again', async () => {
    const { context, page } = await newPage(f.browser);
    await signInDirectly(page, f.sigil);
    const recent = await authorizeAndCollect(page, webParams('id_token', { max_age: '600' }));
    expect(recent.params.id_token).toEqual(expect.any(String));
    const firstAuth = decodeJwt(recent.params.id_token!).auth_time as number;

    await new Promise((r) => setTimeout(r, 1100));
    const params = webParams('id_token', { max_age: '0' });
    const since = f.cb.hits.length;
    await page.goto(authorizeUrl(f.sigil, params));
    await page.waitForURL(/\/account\/login\?interaction=/);
    await submitLogin(page, 'alice');
    const { params: res } = await callbackResponse(page, f.cb, since);
    const { payload } = await verifyIdToken(res.id_token!, params.nonce!);
    expect(payload.auth_time).toBeGreaterThan(firstAuth);
    await context.close();
  });

  it('login_hint pre-fills the username', async () => {
    const { context, page } = await newPage(f.browser);
    const params = webParams('id_token', { login_hint: 'bob' });
    const since = f.cb.hits.length;
    await page.goto(authorizeUrl(f.sigil, params));
    await page.waitForURL(/\/account\/login\?interaction=/);
    expect(await page.locator('input[name=username]').inputValue()).toBe('bob');
    await page.locator('input[name=password]').fill('bob');
    await page.locator('button[name=button][value=login]').click();
    const { params: res } = await callbackResponse(page, f.cb, since);
    expect((await verifyIdToken(res.id_token!, params.nonce!)).payload.sub).toBe('2');
    await context.close();
  });

  it('ui_locales=de shows the pages in German, also after a failed attempt', async () => {
    const { context, page } = await newPage(f.browser);
    await page.goto(authorizeUrl(f.sigil, webParams('code', { ui_locales: 'de-CH de en' })));
    await page.waitForURL(/\/account\/login\?interaction=/);
    expect(await page.getAttribute('html', 'lang')).toBe('de');
    await expect(page.getByRole('heading', { name: 'Anmelden' }).isVisible()).resolves.toBe(true);
    expect(await page.textContent('label[for=username]')).toBe('Benutzername');
    expect(await page.textContent('button[value=login]')).toBe('Anmelden');
    await submitLogin(page, 'alice', 'wrong');
    await page.getByRole('alert').waitFor();
    expect(await page.getAttribute('html', 'lang')).toBe('de');
    expect(await page.getByRole('alert').textContent()).toBe('Benutzername oder Passwort ist falsch.');
    await context.close();
  });
});

describe('consent', () => {
  const consentParams = (extra: Record<string, string> = {}) => ({
    client_id: CONSENT.id,
    redirect_uri: redirectUri(),
    response_type: 'code',
    scope: 'openid profile email api1 offline_access',
    state: `st-${Math.random().toString(36).slice(2)}`,
    code_challenge: S256(VERIFIER),
    code_challenge_method: 'S256',
    ...extra,
  });

  it('"no" answers access_denied at the redirect URI', async () => {
    const { context, page } = await newPage(f.browser);
    const params = consentParams();
    const since = f.cb.hits.length;
    await page.goto(authorizeUrl(f.sigil, params));
    await submitLogin(page, 'alice');
    await page.waitForURL(/\/consent\?interaction=/);
    await page.locator('button[name=button][value=no]').click();
    const { params: res } = await callbackResponse(page, f.cb, since);
    expect(res).toMatchObject({ error: 'access_denied', state: params.state, iss: f.sigil.url });
    expect(res.code).toBeUndefined();
    await context.close();
  });

  it('"yes" lists the scopes, issues the code, and a remembered consent skips the page next time', async () => {
    const { context, page } = await newPage(f.browser);
    const params = consentParams();
    const since = f.cb.hits.length;
    await page.goto(authorizeUrl(f.sigil, params));
    await submitLogin(page, 'alice');
    await page.waitForURL(/\/consent\?interaction=/);
    const items = await page.locator('ul.scopes li').allTextContents();
    expect(items).toHaveLength(5);
    expect(items.join('|')).toContain('offline access');
    // The client name is shown escaped, as text.
    expect(await page.textContent('main')).toContain('Consent <Example> & Co');
    await page.getByLabel('Remember my decision').check();
    await page.locator('button[name=button][value=yes]').click();
    const first = await callbackResponse(page, f.cb, since);
    expect(first.params.code).toEqual(expect.any(String));

    const again = await authorizeAndCollect(page, consentParams());
    expect(again.params.code).toEqual(expect.any(String));

    // prompt=consent asks again despite the remembered decision.
    await page.goto(authorizeUrl(f.sigil, consentParams({ prompt: 'consent' })));
    await page.waitForURL(/\/consent\?interaction=/);
    await context.close();
  });
});

describe('request objects', () => {
  it('an HS256 request object signed with the client secret carries the request', async () => {
    const { context, page } = await newPage(f.browser);
    await signInDirectly(page, f.sigil);
    const params = webParams('code id_token');
    const request = await new SignJWT({ ...params })
      .setProtectedHeader({ alg: 'HS256' })
      .setIssuer(WEB.id)
      .setAudience(f.sigil.url)
      .setIssuedAt()
      .setExpirationTime('2m')
      .sign(new TextEncoder().encode(WEB.secret));
    const { mode, params: res } = await authorizeAndCollect(page, {
      client_id: WEB.id,
      response_type: 'code id_token',
      request,
    });
    expect(mode).toBe('fragment');
    expect(res.state).toBe(params.state);
    expect(res.code).toEqual(expect.any(String));
    await verifyIdToken(res.id_token!, params.nonce!);
    await context.close();
  });

  it('a request object with a wrong signature is refused on the error page', async () => {
    const { context, page } = await newPage(f.browser);
    const since = f.cb.hits.length;
    const request = await new SignJWT({ ...webParams('code') })
      .setProtectedHeader({ alg: 'HS256' })
      .setAudience(f.sigil.url)
      .setExpirationTime('2m')
      .sign(new TextEncoder().encode('not-the-secret-not-the-secret-000'));
    const response = await page.goto(authorizeUrl(f.sigil, { client_id: WEB.id, request }));
    expect(response?.status()).toBe(400);
    expect(await page.textContent('main')).toContain('invalid_request_object');
    expect(f.cb.hits.length).toBe(since);
    await context.close();
  });
});

describe('sign-out', () => {
  it('end session with id_token_hint signs out and returns to the registered post_logout_redirect_uri with state', async () => {
    const { context, page } = await newPage(f.browser);
    await signInDirectly(page, f.sigil);
    const params = webParams('id_token');
    const { params: res } = await authorizeAndCollect(page, params);
    const since = f.cb.hits.length;
    await page.goto(
      `${f.sigil.url}/connect/endsession?${new URLSearchParams({ id_token_hint: res.id_token!, post_logout_redirect_uri: `${f.cb.url}/signed-out`, state: 'bye' })}`,
    );
    await page.waitForURL(`${f.cb.url}/signed-out?state=bye`);
    expect(f.cb.hits.slice(since).map((h) => h.path)).toEqual(['/signed-out']);
    const after = await authorizeAndCollect(page, webParams('code', { prompt: 'none' }));
    expect(after.params.error).toBe('login_required');
    await context.close();
  });

  it('an unregistered post_logout_redirect_uri is not followed: an error page names it, the session is kept', async () => {
    const { context, page } = await newPage(f.browser);
    await signInDirectly(page, f.sigil);
    const { params: res } = await authorizeAndCollect(page, webParams('id_token'));
    const since = f.cb.hits.length;
    await page.goto(
      `${f.sigil.url}/connect/endsession?${new URLSearchParams({ id_token_hint: res.id_token!, post_logout_redirect_uri: `${f.cb.url}/elsewhere` })}`,
    );
    expect(page.url().startsWith(f.sigil.url)).toBe(true);
    await page.getByText('post_logout_redirect_uri is not registered for the client').waitFor();
    expect(f.cb.hits.length).toBe(since);
    await context.close();
  });

  it('without id_token_hint the user confirms on the logout page', async () => {
    const { context, page } = await newPage(f.browser);
    await signInDirectly(page, f.sigil);
    await page.goto(`${f.sigil.url}/connect/endsession`);
    await page.locator('button[name=button][value=logout]').click();
    await page.getByRole('heading', { name: 'Signed out' }).waitFor();
    const after = await authorizeAndCollect(page, webParams('code', { prompt: 'none' }));
    expect(after.params.error).toBe('login_required');
    await context.close();
  });
});

describe('error paths', () => {
  it('an unregistered redirect URI shows the error page and the browser is not sent there', async () => {
    const { context, page } = await newPage(f.browser);
    const since = f.cb.hits.length;
    const response = await page.goto(authorizeUrl(f.sigil, webParams('code', { redirect_uri: `${f.cb.url}/evil` })));
    expect(response?.status()).toBe(400);
    expect(page.url().startsWith(`${f.sigil.url}/connect/authorize`)).toBe(true);
    await page.getByRole('heading', { name: 'Something went wrong' }).waitFor();
    expect(await page.textContent('main')).toContain('invalid_request');
    expect(await page.locator('a[href*="evil"], form[action*="evil"]').count()).toBe(0);
    await page.waitForTimeout(200);
    expect(f.cb.hits.length).toBe(since);
    await context.close();
  });

  it('an unknown client shows the error page', async () => {
    const { context, page } = await newPage(f.browser);
    const since = f.cb.hits.length;
    const response = await page.goto(authorizeUrl(f.sigil, webParams('code', { client_id: 'nobody' })));
    expect(response?.status()).toBe(400);
    expect(await page.textContent('main')).toContain('unauthorized_client');
    expect(f.cb.hits.length).toBe(since);
    await context.close();
  });

  it('a missing nonce with response_type=id_token is an error at the redirect URI', async () => {
    const { context, page } = await newPage(f.browser);
    const { nonce: _nonce, ...params } = webParams('id_token');
    const { mode, params: res } = await authorizeAndCollect(page, params);
    expect(mode).toBe('fragment');
    expect(res).toMatchObject({ error: 'invalid_request', state: params.state, iss: f.sigil.url });
    expect(res.error_description).toContain('nonce');
    expect(res.id_token).toBeUndefined();
    await context.close();
  });

  it('a missing code_challenge is an error at the redirect URI (PKCE required)', async () => {
    const { context, page } = await newPage(f.browser);
    const { code_challenge: _c, code_challenge_method: _m, ...params } = webParams('code');
    const { params: res } = await authorizeAndCollect(page, params);
    expect(res).toMatchObject({ error: 'invalid_request', state: params.state });
    await context.close();
  });
});
