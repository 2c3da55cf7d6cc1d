/**
 * Authorization responses and the pages around them (RFC 9207): `state` and `iss` on every
 * response in every mode, the form_post page, and the headers of every page a browser sees.
 */
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestSigil } from '../helpers.js';
import {
  authorizeUrl,
  Browser,
  CB,
  codeParams,
  expectClientError,
  input,
  isConsentPage,
  isLoginPage,
  ISSUER,
  pkce,
  readResponse,
  type Step,
  startAuthorizeSigil,
} from '../authorize-helpers.js';

let sigil: TestSigil;
let signedIn: Browser;
const { challenge } = pkce();
const STATE = 'a b+c%&=\u{1F511} \u00e4\u00df\u4e2d #?/';

beforeAll(async () => {
  sigil = await startAuthorizeSigil();
  signedIn = new Browser(sigil);
  await signedIn.signIn('alice');
});
afterAll(async () => sigil.close());

const web = (extra: Record<string, string> = {}) => codeParams(challenge, extra);
const hybrid = (extra: Record<string, string> = {}) => ({
  client_id: 'hybrid',
  redirect_uri: CB,
  response_type: 'code id_token',
  scope: 'openid api1',
  state: STATE,
  nonce: 'n',
  code_challenge: challenge,
  code_challenge_method: 'S256',
  ...extra,
});

/** Opens the consent page for a request (forcing it with prompt=consent) and presses `button`. */
async function viaConsent(params: Record<string, string>, button: 'yes' | 'no'): Promise<Step> {
  const b = new Browser(sigil);
  await b.signIn('alice');
  const page = await b.follow(await b.get(authorizeUrl({ ...params, prompt: 'consent' })));
  expect(isConsentPage(page), page.body).toBe(true);
  return b.consent(page, button);
}

describe('state is echoed exactly', () => {
  it('on success in query, fragment and form_post, and on an error', async () => {
    for (const extra of [{}, { response_mode: 'fragment' }, { response_mode: 'form_post' }] as Record<
      string,
      string
    >[]) {
      const r = readResponse(await signedIn.get(authorizeUrl(web({ state: STATE, ...extra }))));
      expect(r.params.get('state')).toBe(STATE);
      expect(r.params.get('code')).toBeTruthy();
    }
    expect(readResponse(await signedIn.get(authorizeUrl(hybrid()))).params.get('state')).toBe(STATE);
    expectClientError(await signedIn.get(authorizeUrl(web({ state: STATE, scope: 'openid admin' }))), 'invalid_scope', {
      state: STATE,
    });
    expectClientError(
      await signedIn.get(authorizeUrl(web({ state: STATE, scope: 'openid admin', response_mode: 'form_post' }))),
      'invalid_scope',
      { state: STATE },
    );
  });

  it('a long state survives the login and consent pages', async () => {
    const long = STATE.repeat(40);
    const b = new Browser(sigil);
    const r = readResponse(await b.authorize({ ...web({ state: long }), client_id: 'consent' }, { user: 'bob' }));
    expect(r.params.get('state')).toBe(long);
  });
});

describe('iss in every authorization response (RFC 9207)', () => {
  it('success and access_denied, in query, fragment and form_post', async () => {
    const seen: string[] = [];
    for (const [params, mode] of [
      [web({ state: 's' }), 'query'],
      [hybrid({ state: 's' }), 'fragment'],
      [web({ state: 's', response_mode: 'form_post' }), 'form_post'],
      [hybrid({ state: 's', response_mode: 'form_post' }), 'form_post'],
    ] as const) {
      const ok = readResponse(await viaConsent(params, 'yes'));
      expect(ok.mode).toBe(mode);
      expect(ok.params.get('iss')).toBe(ISSUER);
      expect(ok.params.get('code')).toBeTruthy();
      expect(ok.params.getAll('iss')).toHaveLength(1);
      const denied = expectClientError(await viaConsent(params, 'no'), 'access_denied', { state: 's', mode });
      expect(denied.params.get('iss')).toBe(ISSUER);
      seen.push(mode);
    }
    expect(seen).toEqual(['query', 'fragment', 'form_post', 'form_post']);
  });

  it('on login_required and on validation errors', async () => {
    const anon = new Browser(sigil);
    expectClientError(await anon.get(authorizeUrl(web({ prompt: 'none' }))), 'login_required', { mode: 'query' });
    expectClientError(await anon.get(authorizeUrl(hybrid({ prompt: 'none' }))), 'login_required', { mode: 'fragment' });
    expectClientError(
      await anon.get(authorizeUrl(web({ prompt: 'none', response_mode: 'form_post' }))),
      'login_required',
      { mode: 'form_post' },
    );
  });

  it('cancel on the login page → access_denied to the client', async () => {
    const b = new Browser(sigil);
    const page = await b.follow(await b.get(authorizeUrl(web({ state: STATE }))));
    expect(isLoginPage(page)).toBe(true);
    const cancelled = await b.post('/account/login', {
      csrf_token: input(page.body, 'csrf_token'),
      interaction: input(page.body, 'interaction'),
      button: 'cancel',
    });
    expectClientError(cancelled, 'access_denied', { state: STATE, mode: 'query', target: CB });
    expect(b.cookies.has('sigil.session')).toBe(false);
  });
});

describe('form_post', () => {
  it('is an auto-posting HTML form with hidden inputs, no-store, no-referrer and a CSP without unsafe-inline', async () => {
    const xss = '"><script>alert(1)</script>\'<img src=x onerror=alert(2)>';
    const step = await signedIn.get(authorizeUrl(web({ response_mode: 'form_post', state: xss })));
    expect(step.status).toBe(200);
    expect(String(step.headers['content-type'])).toMatch(/^text\/html/);
    expect(String(step.headers['cache-control'])).toContain('no-store');
    expect(step.headers['referrer-policy']).toBe('no-referrer');
    expect(step.headers.location).toBeUndefined();
    expect(step.body.match(/<form /g)).toHaveLength(1);
    expect(step.body).toContain(`<form method="post" action="${CB}">`);
    const r = readResponse(step);
    expect([...r.params.keys()].sort()).toEqual(['code', 'iss', 'state']);
    expect(r.params.get('state')).toBe(xss);
    expect(r.params.get('iss')).toBe(ISSUER);
    // The payload is escaped, never markup.
    expect(step.body).not.toContain('<script>alert(1)</script>');
    expect(step.body).not.toContain('<img src=x');
    expect(step.body).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
    // Exactly one inline script, allowed by its hash only.
    const csp = String(step.headers['content-security-policy']);
    expect(csp).not.toContain('unsafe-inline');
    expect(csp).not.toContain('unsafe-eval');
    expect(csp).toContain("frame-ancestors 'none'");
    const scripts = [...step.body.matchAll(/<script>([\s\S]*?)<\/script>/g)].map((m) => m[1] ?? '');
    expect(scripts).toHaveLength(1);
    const hash = createHash('sha256')
      .update(scripts[0] ?? '')
      .digest('base64');
    expect(csp).toContain(`'sha256-${hash}'`);
    expect(csp).toMatch(/form-action https:\/\/rp\.example(;|$)/);
    expect(step.headers['x-frame-options']).toBe('DENY');
  });

  it('carries the tokens of a hybrid response and nothing else', async () => {
    const r = readResponse(
      await signedIn.get(authorizeUrl(hybrid({ response_type: 'code id_token token', response_mode: 'form_post' }))),
    );
    expect([...r.params.keys()].sort()).toEqual([
      'access_token',
      'code',
      'expires_in',
      'id_token',
      'iss',
      'scope',
      'state',
      'token_type',
    ]);
  });
});

describe('headers of every page', () => {
  function expectPageHeaders(step: Step, what: string) {
    expect(String(step.headers['content-type']), what).toMatch(/^text\/html/);
    const csp = String(step.headers['content-security-policy']);
    expect(csp, what).toContain("frame-ancestors 'none'");
    expect(csp, what).not.toContain('unsafe-inline');
    expect(step.headers['x-frame-options'], what).toBe('DENY');
    // No referrer to other origins. Pages may say `same-origin`: under `no-referrer` browsers send
    // `Origin: null` with the page's own form POSTs, which the CSRF origin check refuses.
    expect(['no-referrer', 'same-origin'], what).toContain(step.headers['referrer-policy']);
    expect(String(step.headers['cache-control']), what).toContain('no-store');
    expect(step.headers['x-content-type-options'], what).toBe('nosniff');
    expect(step.headers['x-powered-by'], what).toBeUndefined();
    expect(step.headers['access-control-allow-origin'], what).toBeUndefined();
    // Every referenced resource is same-origin.
    for (const m of step.body.matchAll(/<(?:script|img|link)[^>]*(?:src|href)="([^"]*)"/g))
      expect(m[1], what).toMatch(/^\/(?!\/)/);
  }

  it('login, consent, logout, signed-out, error and expired pages', async () => {
    const b = new Browser(sigil);
    const login = await b.follow(await b.get(authorizeUrl({ ...web(), client_id: 'consent' })));
    expect(isLoginPage(login)).toBe(true);
    expectPageHeaders(login, 'login');
    expectPageHeaders(await b.get('/account/login'), 'bare login');
    const consent = await b.follow(await b.submitLogin(login, 'alice', 'alice'));
    expect(isConsentPage(consent)).toBe(true);
    expectPageHeaders(consent, 'consent');
    const logout = await b.get('/account/logout');
    expect(logout.body).toContain('name="button" value="logout"');
    expectPageHeaders(logout, 'logout');
    const signedOut = await b.post('/account/logout', {
      csrf_token: input(logout.body, 'csrf_token'),
      button: 'logout',
    });
    expect(signedOut.status).toBe(200);
    expectPageHeaders(signedOut, 'signed out');
    expectPageHeaders(await b.get(authorizeUrl(web({ client_id: 'nope' }))), 'error page');
    expectPageHeaders(await b.get('/account/login?interaction=unknown'), 'expired');
    expectPageHeaders(await b.get('/connect/authorize/resume?interaction=unknown'), 'expired resume');
  });

  it('the authorization endpoint has no CORS', async () => {
    const res = await sigil.app.inject({
      method: 'GET',
      url: authorizeUrl(web()),
      headers: { origin: 'https://spa.example' },
    });
    expect(res.headers['access-control-allow-origin']).toBeUndefined();
    const pre = await sigil.app.inject({
      method: 'OPTIONS',
      url: '/connect/authorize',
      headers: { origin: 'https://spa.example', 'access-control-request-method': 'GET' },
    });
    expect(pre.headers['access-control-allow-origin']).toBeUndefined();
  });

  it('redirects to the client are 303 and no-store', async () => {
    const step = await signedIn.get(authorizeUrl(web()));
    expect(step.status).toBe(303);
    expect(String(step.headers['cache-control'])).toContain('no-store');
    expect(step.headers['referrer-policy']).toBe('no-referrer');
  });
});

describe('redirects after the login and consent POSTs are 303', () => {
  it('login POST and consent POST answer 303, never 307/308', async () => {
    const b = new Browser(sigil);
    const login = await b.follow(await b.get(authorizeUrl({ ...web(), client_id: 'consent' })));
    const afterLogin = await b.submitLogin(login, 'alice', 'alice');
    expect(afterLogin.status).toBe(303);
    expect(afterLogin.location).toMatch(/^\/connect\/authorize\/resume\?interaction=/);
    const consent = await b.follow(afterLogin);
    const afterConsent = await b.post('/consent', {
      csrf_token: input(consent.body, 'csrf_token'),
      interaction: input(consent.body, 'interaction'),
      button: 'yes',
    });
    expect(afterConsent.status).toBe(303);
    const final = await b.follow(afterConsent);
    expect(final.status).toBe(303);
    expect(final.location?.startsWith(`${CB}?code=`)).toBe(true);
  });
});

describe('codes are unguessable', () => {
  it('50 codes are distinct, at least 128 bits of base64url, without a shared prefix', async () => {
    const codes: string[] = [];
    for (let i = 0; i < 50; i++)
      codes.push(readResponse(await signedIn.get(authorizeUrl(web()))).params.get('code') ?? '');
    expect(new Set(codes).size).toBe(50);
    for (const c of codes) {
      expect(c).toMatch(/^[A-Za-z0-9_-]{22,}$/);
    }
    const prefix = (a: string, b: string) => {
      let i = 0;
      while (i < a.length && a[i] === b[i]) i++;
      return i;
    };
    let longest = 0;
    for (let i = 1; i < codes.length; i++) longest = Math.max(longest, prefix(codes[0] ?? '', codes[i] ?? ''));
    expect(longest).toBeLessThan(6);
  });
});

describe('no open redirects', () => {
  const targets = [
    'https://attacker.example',
    '//attacker.example',
    '/\\attacker.example',
    '/%5Cattacker.example',
    'https:attacker.example',
    '/%09/attacker.example',
    '\\/\\/attacker.example',
  ];
  it('return-URL style parameters never produce a Location leaving the server', async () => {
    const b = new Browser(sigil);
    await b.signIn('alice');
    for (const t of targets) {
      const enc = encodeURIComponent(t);
      for (const url of [
        `/account/login?ReturnUrl=${enc}`,
        `/account/login?returnUrl=${enc}&interaction=${enc}`,
        `/consent?returnUrl=${enc}`,
        `/consent?interaction=${enc}`,
        `/account/logout?returnUrl=${enc}&post_logout_redirect_uri=${enc}`,
        `/connect/authorize/resume?interaction=${enc}`,
        `/connect/endsession?post_logout_redirect_uri=${enc}`,
        `/connect/authorize?client_id=web&redirect_uri=${enc}&response_type=code&scope=openid`,
      ]) {
        const step = await b.get(url);
        expect(step.status, url).toBeLessThan(500);
        if (step.location !== undefined) expect(step.location, url).toMatch(/^\/(?![/\\])/);
        expect(step.body, url).not.toMatch(/http-equiv="?refresh|location\s*=|attacker\.example"/i);
      }
      const posted = await b.post(`/account/login?ReturnUrl=${enc}`, {
        username: 'alice',
        password: 'alice',
        button: 'login',
        returnUrl: t,
      });
      if (posted.location !== undefined) expect(posted.location).toMatch(/^\/(?![/\\])/);
    }
  });
});
