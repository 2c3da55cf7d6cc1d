/**
 * The web console's HTTP contract without a browser: `/admin` sends a browser
 * without a console session to the authorization endpoint as the built-in public client (code,
 * PKCE S256, state), remembering the sign-in in a cookie sent only to the callback; pages are
 * uncached and unframeable; a POST without the CSRF token is refused before anything else; with
 * `admin.console` false there is no console and no client `sigil-console`. Signing out of the
 * console (a CSRF-protected POST) ends the browser's Sigil session as the end-session endpoint
 * does, with back- and front-channel logout of the session's clients.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  authorizeUrl,
  Browser,
  codeParams,
  idTokensInSession,
  input,
  pkce,
  readResponse,
  startAuthorizeSigil,
  unescapeHtml,
  webLike,
} from '../authorize-helpers.js';
import { testConfig, type TestSigil } from '../helpers.js';
import { consoleBrowser } from '../console-helpers.js';
import { LogoutReceiver } from '../logout-receiver.js';

describe('the console at /admin', () => {
  let sigil: TestSigil;
  beforeAll(async () => {
    sigil = await startAuthorizeSigil();
  });
  afterAll(async () => sigil.close());

  it('sends a browser without a console session to sign in as sigil-console with PKCE S256 and state', async () => {
    const res = await sigil.app.inject({ method: 'GET', url: '/admin/users' });
    expect(res.statusCode).toBe(303);
    expect(res.headers['cache-control']).toContain('no-store');
    const location = new URL(String(res.headers.location), 'http://localhost');
    expect(location.pathname).toBe('/connect/authorize');
    expect(Object.fromEntries(location.searchParams)).toMatchObject({
      response_type: 'code',
      client_id: 'sigil-console',
      redirect_uri: `${sigil.context.issuer}/admin/callback`,
      scope: 'openid sigil:admin scim sigil:org:admin',
      code_challenge_method: 'S256',
    });
    expect(location.searchParams.get('state')).toMatch(/^[\w-]{43}$/);
    expect(location.searchParams.get('code_challenge')).toMatch(/^[\w-]{43}$/);
    const cookie = String(res.headers['set-cookie']);
    expect(cookie).toMatch(/^sigil\.console\.signin=[\w-]{43}\.[\w-]{43};/);
    expect(cookie).toContain('Path=/admin/callback');
    expect(cookie).toContain('HttpOnly');
  });

  it('refuses a POST without the CSRF token with 403, before looking at the session', async () => {
    const res = await sigil.app.inject({
      method: 'POST',
      url: '/admin/keys/rotate',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: 'button=rotate',
    });
    expect(res.statusCode).toBe(403);
    expect(res.headers['content-security-policy']).toContain("frame-ancestors 'none'");
    expect(res.headers['cache-control']).toContain('no-store');
  });

  it('refuses the resource and group changes without the CSRF token with 403, storing nothing', async () => {
    const form = { 'content-type': 'application/x-www-form-urlencoded' };
    for (const url of [
      '/admin/resources/new/api-scopes',
      '/admin/resources/api-scopes/api1',
      '/admin/resources/api-scopes/api1/delete',
      '/admin/resources/api-resources/api1/secret',
      '/admin/groups',
      '/admin/groups/x/delete',
    ]) {
      const res = await sigil.app.inject({
        method: 'POST',
        url,
        headers: form,
        payload: 'name=forged&displayName=forged',
      });
      expect(res.statusCode, url).toBe(403);
    }
    expect((await sigil.context.management.resources.list('api_scope')).map((v) => v.settings.name)).not.toContain(
      'forged',
    );
    expect(((await sigil.context.management.scim.listGroups({})) as { totalResults: number }).totalResults).toBe(0);
  });

  it("ends a callback without this browser's pending sign-in in a new sign-in, and an error answer on an error page", async () => {
    const stray = await sigil.app.inject({ method: 'GET', url: '/admin/callback?code=x&state=y' });
    expect(stray.statusCode).toBe(303);
    expect(String(stray.headers.location)).toContain('/connect/authorize?');
    const refused = await sigil.app.inject({
      method: 'GET',
      url: '/admin/callback?error=access_denied&state=y',
      headers: { accept: 'text/html' },
    });
    expect(refused.statusCode).toBe(400);
    expect(refused.body).toContain('access_denied');
  });
});

describe('admin.console false', () => {
  let sigil: TestSigil;
  beforeAll(async () => {
    sigil = await startAuthorizeSigil([], { admin: { console: false } });
  });
  afterAll(async () => sigil.close());

  it('has no console and no client sigil-console', async () => {
    expect(
      (await sigil.app.inject({ method: 'GET', url: '/admin', headers: { accept: 'text/html' } })).statusCode,
    ).toBe(404);
    const { challenge } = pkce();
    const authorize = await sigil.app.inject({
      method: 'GET',
      url: `/connect/authorize?${new URLSearchParams({ response_type: 'code', client_id: 'sigil-console', redirect_uri: `${sigil.context.issuer}/admin/callback`, scope: 'openid', state: 's', code_challenge: challenge, code_challenge_method: 'S256' })}`,
      headers: { accept: 'text/html' },
    });
    expect(authorize.statusCode).toBe(400);
    expect(authorize.body).toContain('unknown client');
  });
});

describe('the console under an issuer path', () => {
  let sigil: TestSigil;
  beforeAll(async () => {
    sigil = await startAuthorizeSigil([], { issuer: 'http://127.0.0.1:5999/id' });
  });
  afterAll(async () => sigil.close());

  it('redirects, scopes its cookies and names its callback below the path', async () => {
    const res = await sigil.app.inject({ method: 'GET', url: '/id/admin' });
    expect(res.statusCode).toBe(303);
    const location = new URL(String(res.headers.location), 'http://127.0.0.1:5999');
    expect(location.pathname).toBe('/id/connect/authorize');
    expect(location.searchParams.get('redirect_uri')).toBe('http://127.0.0.1:5999/id/admin/callback');
    expect(String(res.headers['set-cookie'])).toContain('Path=/id/admin/callback');
    expect(
      (await sigil.app.inject({ method: 'GET', url: '/admin', headers: { accept: 'text/html' } })).statusCode,
    ).toBe(404);
    const signedOut = await sigil.app.inject({ method: 'GET', url: '/id/admin/signed-out' });
    expect(signedOut.statusCode).toBe(200);
    // The signed-out page leads back to the console (and so to a new sign-in) below the path.
    expect(signedOut.body).toContain('<a href="/id/admin">Sign in to the console again</a>');
  });

  it('ends a sign-out on the signed-out page below the path', async () => {
    const b = new Browser(sigil);
    const csrf = input((await b.get('/id/account/login')).body, 'csrf_token');
    const done = await b.post('/id/admin/logout', { csrf_token: csrf, button: 'logout' });
    expect(done.status).toBe(303);
    expect(done.location).toBe('http://127.0.0.1:5999/id/admin/signed-out');
  });
});

describe('signing out of the console', () => {
  let sigil: TestSigil;
  let receiver: LogoutReceiver;
  beforeAll(async () => {
    receiver = await LogoutReceiver.start();
    sigil = await startAuthorizeSigil(
      [
        webLike('bc', { backChannelLogoutUri: `${receiver.url}/bc` }),
        webLike('fc', { frontChannelLogoutUri: 'https://rp.example/fc' }),
      ],
      {
        backChannelLogout: { pollSeconds: 1, timeoutSeconds: 2, retrySeconds: 60 },
      },
    );
  });
  afterAll(async () => {
    await sigil.close();
    await receiver.close();
  });

  /** Whether the browser's session still yields a code with prompt=none. */
  async function signedIn(b: Browser): Promise<boolean> {
    const r = readResponse(await b.get(authorizeUrl(codeParams(pkce().challenge, { prompt: 'none' }))));
    if (r.params.get('code')) return true;
    expect(r.params.get('error')).toBe('login_required');
    return false;
  }

  it('refuses the sign-out POST without the CSRF token with 403, the Sigil session kept', async () => {
    const b = new Browser(sigil);
    await b.signIn('alice');
    const forged = await b.post('/admin/logout', { button: 'logout' });
    expect(forged.status).toBe(403);
    expect(forged.body).not.toContain('Signed out');
    const wrong = await b.post('/admin/logout', { csrf_token: 'not-a-token', button: 'logout' });
    expect(wrong.status).toBe(403);
    expect(b.cookies.has('sigil.session')).toBe(true);
    expect(await signedIn(b)).toBe(true);
    expect(receiver.received).toEqual([]);
  });

  it("ends the Sigil session with the CSRF token: back-channel logout sent, front-channel frames loaded, then the console's signed-out page", async () => {
    const b = new Browser(sigil);
    const { sid } = await idTokensInSession(sigil, b, ['bc', 'fc']);
    // Any page of this browser's carries a CSRF token for its secret cookie; the logout prompt is one.
    const csrf = input((await b.get('/account/logout')).body, 'csrf_token');
    const done = await b.post('/admin/logout', { csrf_token: csrf, button: 'logout' });
    expect(done.status).toBe(200);
    expect(done.headers['cache-control']).toContain('no-store');
    const cookies = done.res.cookies.map((c) => `${c.name}:${c.path}:${c.value}`);
    expect(cookies).toContain('sigil.console:/admin:');
    expect(cookies).toContain('sigil.session:/:');
    expect(done.body).toContain(`https://rp.example/fc?iss=${encodeURIComponent(sigil.context.issuer)}&amp;sid=${sid}`);
    expect(done.body).toContain(`href="${sigil.context.issuer}/admin/signed-out"`);
    expect(receiver.received.map((r) => [r.path, r.sid])).toEqual([['/bc', sid]]);
    expect(await signedIn(b)).toBe(false);
    const page = await b.get('/admin/signed-out', { 'accept-language': 'de' });
    expect(page.status).toBe(200);
    expect(page.body).toContain('Von der Konsole abgemeldet');
  });

  it("goes straight to the console's signed-out page when no client needs a front-channel frame", async () => {
    const b = new Browser(sigil);
    await b.signIn('alice');
    const csrf = input((await b.get('/account/logout')).body, 'csrf_token');
    const done = await b.post('/admin/logout', { csrf_token: csrf, button: 'logout' });
    expect(done.status).toBe(303);
    expect(done.location).toBe(`${sigil.context.issuer}/admin/signed-out`);
    expect(await signedIn(b)).toBe(false);
  });
});

describe('creating a user in the console', () => {
  let sigil: TestSigil;
  let admin: Browser;
  beforeAll(async () => {
    const base = testConfig();
    sigil = await startAuthorizeSigil([], {
      users: [
        ...base.users!,
        { subjectId: 'adm-1', username: 'root', password: 'root', claims: { role: 'sigil-admin' } },
      ],
    });
    admin = await consoleBrowser(sigil, 'root');
  });
  afterAll(async () => sigil.close());

  it("refuses a password the policy refuses (400, the policy's words on the page), storing nothing", async () => {
    for (const [password, words] of [
      ['password', 'the password is a common or breached password'],
      ['a', 'the password is shorter than 8 characters'],
    ] as const) {
      const page = await admin.get('/admin/users');
      const res = await admin.post('/admin/users', {
        csrf_token: input(page.body, 'csrf_token'),
        username: 'weakling',
        name: 'Weak Ling',
        email: '',
        password,
      });
      expect(res.status, res.body).toBe(400);
      expect(unescapeHtml(res.body)).toContain(words);
      expect(await sigil.context.store.users.findUserByUsername('weakling', null)).toBeUndefined();
    }
    const page = await admin.get('/admin/users');
    const ok = await admin.post('/admin/users', {
      csrf_token: input(page.body, 'csrf_token'),
      username: 'weakling',
      name: 'Weak Ling',
      email: '',
      password: 'violet-harbour-1959',
    });
    expect(ok.status, ok.body).toBe(303);
    expect(await sigil.context.store.users.findUserByUsername('weakling', null)).toBeDefined();
  });
});
