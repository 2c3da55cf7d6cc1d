/**
 * The login and consent pages and the browser session: CSRF, origin check, equal answers for
 * unknown users and wrong passwords, rate limits, cookie attributes, fixation, interaction binding,
 * i18n, escaping, consent with remember.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSigil, testConfig, type TestSigil } from '../helpers.js';
import {
  authorizeUrl,
  Browser,
  CB,
  codeParams,
  expectClientError,
  expectErrorPage,
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
const { challenge } = pkce();
const web = (extra: Record<string, string> = {}) => codeParams(challenge, extra);
const consentClient = (extra: Record<string, string> = {}) => codeParams(challenge, { client_id: 'consent', ...extra });

beforeAll(async () => {
  sigil = await startAuthorizeSigil();
});
afterAll(async () => sigil.close());

/** Starts an authorization request in a fresh browser and returns it with its login page. */
async function atLogin(
  params: Record<string, string> = web(),
  remoteAddress?: string,
): Promise<{ b: Browser; page: Step }> {
  const b = new Browser(sigil, remoteAddress);
  const page = await b.follow(await b.get(authorizeUrl(params)));
  expect(isLoginPage(page), page.body).toBe(true);
  return { b, page };
}

describe('login page', () => {
  it('login_hint pre-fills the username, escaped', async () => {
    const plain = await atLogin(web({ login_hint: 'bob' }));
    expect(plain.page.body).toMatch(/name="username" value="bob"/);
    const xss = '"><svg onload=alert(1)>';
    const { page } = await atLogin(web({ login_hint: xss, ui_locales: '"><script>alert(2)</script>' }));
    expect(page.body).toContain('name="username" value="&quot;&gt;&lt;svg onload=alert(1)&gt;"');
    expect(page.body).not.toContain('<svg');
    expect(page.body).not.toContain('<script>alert(2)');
  });

  it('ui_locales=de gives the German page; the first supported tag wins; Accept-Language as fallback', async () => {
    const de = (await atLogin(web({ ui_locales: 'it-CH de-DE en' }))).page;
    expect(de.body).toContain('<html lang="de">');
    expect(de.body).toContain('Anmelden');
    expect(de.body).toContain('Benutzername');
    expect(de.body).toContain('Passwort');
    expect(de.body).not.toContain('Username');
    const en = (await atLogin(web({ ui_locales: 'it' }))).page;
    expect(en.body).toContain('<html lang="en">');
    expect(en.body).toContain('Username');
    const b = new Browser(sigil);
    const byHeader = await b.get('/account/login', { 'accept-language': 'de-CH,de;q=0.9,en;q=0.5' });
    expect(byHeader.body).toContain('<html lang="de">');
    // The German login keeps German after a failed attempt and on the consent page.
    const { b: b2, page } = await atLogin(consentClient({ ui_locales: 'de' }));
    const failed = await b2.submitLogin(page, 'alice', 'wrong');
    expect(failed.body).toContain('<html lang="de">');
    expect(failed.body).toContain('Benutzername oder Passwort ist falsch.');
    const consent = await b2.follow(await b2.submitLogin(failed, 'alice', 'alice'));
    expect(isConsentPage(consent)).toBe(true);
    expect(consent.body).toContain('<html lang="de">');
    expect(consent.body).toContain('Zugriff erlauben?');
    expect(consent.body).toContain('Erlauben');
  });

  it('Accept-Language q-values decide, not the order of the header; ui_locales still comes first', async () => {
    const b = new Browser(sigil);
    for (const [header, lang] of [
      ['de;q=0.1, en;q=0.9', 'en'],
      ['de-DE;q=0.2, en-GB;q=0.8', 'en'],
      ['en;q=0.1, de;q=0.9', 'de'],
      ['en;q=0, *;q=0.5', 'de'],
      ['de;q=0, it', 'en'],
      ['de;q=0, fr', 'fr'],
    ] as const) {
      const page = await b.get('/account/login', { 'accept-language': header });
      expect(page.body, header).toContain(`<html lang="${lang}">`);
    }
    const { b: pending, page } = await atLogin(web({ ui_locales: 'de' }));
    const again = await pending.get(
      `/account/login?interaction=${encodeURIComponent(input(page.body, 'interaction'))}`,
      { 'accept-language': 'de;q=0.1, en;q=0.9' },
    );
    expect(again.status).toBe(200);
    expect(again.body).toContain('<html lang="de">');
  });

  it('the error page follows ui_locales too', async () => {
    const b = new Browser(sigil);
    const page = await b.get(authorizeUrl(web({ client_id: 'nope', ui_locales: 'de' })));
    expectErrorPage(page, 'unauthorized_client');
    expect(page.body).toContain('<html lang="de">');
    // The same request as a form POST (OIDC Core §3.1.2.1) carries ui_locales in the body.
    const posted = await b.post('/connect/authorize', web({ client_id: 'nope', ui_locales: 'de' }), {
      'accept-language': 'en',
    });
    expectErrorPage(posted, 'unauthorized_client');
    expect(posted.body).toContain('<html lang="de">');
  });

  it('the consent form posted without its CSRF token gets the expired-form page in the language of the request', async () => {
    const { b, page } = await atLogin(consentClient({ ui_locales: 'de' }));
    const consent = await b.follow(await b.submitLogin(page, 'alice', 'alice'));
    expect(isConsentPage(consent)).toBe(true);
    const refused = await b.post(
      '/consent',
      { interaction: input(consent.body, 'interaction'), button: 'yes' },
      { 'accept-language': 'en' },
    );
    expect(refused.status).toBe(403);
    expect(refused.body).toContain('<html lang="de">');
  });

  it('a login POST without or with a wrong CSRF token → 403, not signed in', async () => {
    const { b, page } = await atLogin();
    const interaction = input(page.body, 'interaction');
    const missing = await b.post('/account/login', {
      interaction,
      username: 'alice',
      password: 'alice',
      button: 'login',
    });
    expect(missing.status).toBe(403);
    expect(b.cookies.has('sigil.session')).toBe(false);
    const wrong = await b.post('/account/login', {
      csrf_token: 'x'.repeat(40),
      interaction,
      username: 'alice',
      password: 'alice',
      button: 'login',
    });
    expect(wrong.status).toBe(403);
    expect(b.cookies.has('sigil.session')).toBe(false);
    // Another browser's token does not fit this browser's secret.
    const other = await atLogin();
    const foreign = await b.post('/account/login', {
      csrf_token: input(other.page.body, 'csrf_token'),
      interaction,
      username: 'alice',
      password: 'alice',
      button: 'login',
    });
    expect(foreign.status).toBe(403);
    expect(b.cookies.has('sigil.session')).toBe(false);
    // The right token still works afterwards.
    const ok = await b.follow(await b.submitLogin(page, 'alice', 'alice'));
    expect(readResponse(ok).params.get('code')).toBeTruthy();
  });

  it('a login POST from another site (Origin) → 403 even with the right token; same origin is fine', async () => {
    const { b: b2, page: p2 } = await atLogin();
    for (const origin of ['https://attacker.example', 'null', 'http://127.0.0.1:5998', 'http://localhost:5999']) {
      const res = await b2.post(
        '/account/login',
        {
          csrf_token: input(p2.body, 'csrf_token'),
          interaction: input(p2.body, 'interaction'),
          username: 'alice',
          password: 'alice',
          button: 'login',
        },
        { origin },
      );
      expect(res.status, origin).toBe(403);
      expect(b2.cookies.has('sigil.session')).toBe(false);
    }
    const same = await b2.post(
      '/account/login',
      {
        csrf_token: input(p2.body, 'csrf_token'),
        interaction: input(p2.body, 'interaction'),
        username: 'alice',
        password: 'alice',
        button: 'login',
      },
      { origin: ISSUER },
    );
    expect(same.status).toBe(303);
    expect(b2.cookies.has('sigil.session')).toBe(true);
  });

  it('unknown user, wrong password and inactive user get the same page (apart from the CSRF token and the typed username)', async () => {
    const normalize = (s: Step) =>
      s.body.replace(/name="csrf_token" value="[^"]*"/, '').replace(/name="username" value="[^"]*"/, '');
    const { b, page } = await atLogin();
    const wrongPassword = await b.submitLogin(page, 'alice', 'not-her-password');
    const unknown = await b.submitLogin(wrongPassword, 'nobody-here', 'whatever');
    const inactive = await b.submitLogin(unknown, 'dave', 'dave');
    expect(wrongPassword.status).toBe(unknown.status);
    expect(inactive.status).toBe(unknown.status);
    expect(normalize(wrongPassword)).toBe(normalize(unknown));
    expect(normalize(inactive)).toBe(normalize(unknown));
    expect(wrongPassword.body).toContain('The username or password is incorrect.');
    expect(Object.keys(wrongPassword.headers).sort()).toEqual(Object.keys(unknown.headers).sort());
    expect(b.cookies.has('sigil.session')).toBe(false);
  });

  it('credentials in a GET never sign in', async () => {
    const b = new Browser(sigil);
    const res = await b.get('/account/login?username=alice&password=alice&button=login');
    expect(res.status).toBe(200);
    expect(b.cookies.has('sigil.session')).toBe(false);
    expect(res.body).not.toMatch(/name="username" value="alice"/);
    const { b: b2, page } = await atLogin();
    await b2.get(
      `/account/login?interaction=${encodeURIComponent(input(page.body, 'interaction'))}&username=alice&password=alice`,
    );
    expect(b2.cookies.has('sigil.session')).toBe(false);
  });

  it('the session cookie is HttpOnly, SameSite=Lax, Path=/ (not Secure on an http issuer); no session id in URLs', async () => {
    const { b, page } = await atLogin();
    const res = await b.submitLogin(page, 'alice', 'alice');
    const cookie = res.res.cookies.find((c) => c.name === 'sigil.session');
    expect(cookie).toBeDefined();
    expect(cookie?.httpOnly).toBe(true);
    expect(String(cookie?.sameSite).toLowerCase()).toBe('lax');
    expect(cookie?.path).toBe('/');
    expect(cookie?.secure).toBeFalsy();
    expect(res.location).not.toContain(cookie?.value ?? '-');
    const done = await b.follow(res);
    expect(done.location).not.toContain(cookie?.value ?? '-');
  });

  it('on an https issuer the session cookie is Secure', async () => {
    const tls = await startSigil({ issuer: 'https://sigil.example', clients: [] });
    try {
      const b = new Browser(tls);
      const page = await b.get('/account/login');
      const res = await b.submitLogin(page, 'alice', 'alice', {});
      const cookie = res.res.cookies.find((c) => c.name === 'sigil.session');
      expect(cookie?.secure).toBe(true);
      expect(cookie?.httpOnly).toBe(true);
    } finally {
      await tls.close();
    }
  });

  it('the session cookie changes at every sign-in; a planted value is never adopted', async () => {
    const b = new Browser(sigil);
    b.cookies.set('sigil.session', 'attacker-chosen-value');
    await b.signIn('alice');
    const first = b.cookies.get('sigil.session');
    expect(first).not.toBe('attacker-chosen-value');
    await b.signIn('alice');
    expect(b.cookies.get('sigil.session')).not.toBe(first);
    // The previous value is dead.
    const old = new Browser(sigil);
    old.cookies.set('sigil.session', first!);
    expectClientError(await old.get(authorizeUrl(web({ prompt: 'none' }))), 'login_required');
  });

  it('an interaction started in browser A cannot be used from browser B', async () => {
    const { b: a, page } = await atLogin(consentClient());
    const id = input(page.body, 'interaction');
    const bb = new Browser(sigil);
    expect((await bb.get(`/account/login?interaction=${encodeURIComponent(id)}`)).status).toBe(400);
    const bPage = await bb.get('/account/login');
    const posted = await bb.post('/account/login', {
      csrf_token: input(bPage.body, 'csrf_token'),
      interaction: id,
      username: 'bob',
      password: 'bob',
      button: 'login',
    });
    expect(posted.status).toBe(400);
    expect(bb.cookies.has('sigil.session')).toBe(false);
    expect((await bb.get(`/connect/authorize/resume?interaction=${encodeURIComponent(id)}`)).status).toBe(400);
    // A signs in and reaches consent; B (signed in as bob) cannot answer A's consent.
    const consent = await a.follow(await a.submitLogin(page, 'alice', 'alice'));
    expect(isConsentPage(consent)).toBe(true);
    await bb.signIn('bob');
    expect((await bb.get(`/consent?interaction=${encodeURIComponent(id)}`)).status).toBe(400);
    const bConsentCsrf = input((await bb.get('/account/logout')).body, 'csrf_token');
    const answer = await bb.post('/consent', { csrf_token: bConsentCsrf, interaction: id, button: 'yes' });
    expect(answer.status).toBe(400);
    expect(answer.location).toBeUndefined();
    expect((await bb.get(`/connect/authorize/resume?interaction=${encodeURIComponent(id)}`)).status).toBe(400);
    // A still completes its own request, for alice.
    const done = await a.consent(consent, 'yes');
    expect(readResponse(done).params.get('code')).toBeTruthy();
  });

  it('a bare login (no pending request) shows the signed-in page', async () => {
    const b = new Browser(sigil);
    const page = await b.get('/account/login');
    const res = await b.submitLogin(page, 'bob', 'bob');
    expect(res.status).toBe(200);
    expect(res.body).toContain('You are signed in as bob.');
  });
});

describe('a failed CSRF check answers the HTML form-expired page (login, consent, device, logout)', () => {
  /** Asserts the form-expired page: 403 HTML from Sigil's own page, not the plugin's JSON. */
  const expectExpiredForm = (step: Step) => {
    expectErrorPage(step, 'invalid_request', 403);
    expect(step.body).toContain('the form has expired');
  };

  it('a browser without the CSRF cookie, and one with a wrong token, get the page on every form', async () => {
    const { b, page } = await atLogin(consentClient());
    const interaction = input(page.body, 'interaction');
    const cookieless = new Browser(sigil);
    for (const [who, token] of [
      [cookieless, undefined],
      [b, 'x'.repeat(40)],
    ] as const) {
      const fields = (extra: Record<string, string>) => ({ ...(token ? { csrf_token: token } : {}), ...extra });
      expectExpiredForm(
        await who.post(
          '/account/login',
          fields({ interaction, username: 'alice', password: 'alice', button: 'login' }),
        ),
      );
      expectExpiredForm(await who.post('/consent', fields({ interaction, button: 'yes' })));
      expectExpiredForm(await who.post('/device', fields({ userCode: 'BCDF-GHJK', button: 'submit' })));
      expectExpiredForm(await who.post('/account/logout', fields({ button: 'logout' })));
    }
    expect(b.cookies.has('sigil.session')).toBe(false);
    // The same browser then signs in with the right token, and logout still needs one.
    const consent = await b.follow(await b.submitLogin(page, 'alice', 'alice'));
    expect(isConsentPage(consent), consent.body).toBe(true);
    expectExpiredForm(await b.post('/account/logout', { button: 'logout' }));
    expect(b.cookies.has('sigil.session')).toBe(true);
  });
});

describe('rate limit on failed logins (rateLimits.maxFailures 3)', () => {
  let limited: TestSigil;
  beforeAll(async () => {
    limited = await startAuthorizeSigil([], { rateLimits: { maxFailures: 3, windowSeconds: 60 } });
  });
  afterAll(async () => limited.close());

  async function attempt(
    remoteAddress: string,
    username: string,
    password: string,
  ): Promise<{ b: Browser; res: Step }> {
    const b = new Browser(limited, remoteAddress);
    const page = await b.follow(await b.get(authorizeUrl(web())));
    expect(isLoginPage(page)).toBe(true);
    return { b, res: await b.submitLogin(page, username, password) };
  }

  it('after the limit the right password is refused with 429 and Retry-After from that address; another address signs in', async () => {
    for (let i = 0; i < 3; i++) {
      const { res } = await attempt('10.0.0.1', 'alice', 'wrong');
      expect(res.status).toBe(200);
    }
    const { b, res } = await attempt('10.0.0.1', 'alice', 'alice');
    expect(res.status).toBe(429);
    expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
    expect(String(res.headers['content-type'])).toMatch(/^text\/html/);
    expect(res.body).toContain('Too many failed attempts');
    expect(b.cookies.has('sigil.session')).toBe(false);
    // Failures from one address never lock the user out elsewhere.
    const elsewhere = await attempt('10.0.1.1', 'alice', 'alice');
    expect(elsewhere.res.status).toBe(303);
    expect(elsewhere.b.cookies.has('sigil.session')).toBe(true);
  });

  it('an unknown username locks the same way (no enumeration through the lock)', async () => {
    for (let i = 0; i < 3; i++) expect((await attempt('10.1.0.1', 'ghost', 'x')).res.status).toBe(200);
    const { res } = await attempt('10.1.0.1', 'ghost', 'x');
    expect(res.status).toBe(429);
    expect(res.headers['retry-after']).toBeDefined();
  });

  it('one address guessing many usernames is locked too (addressMaxFailures, 5 × maxFailures)', async () => {
    for (let i = 0; i < 15; i++) expect((await attempt('10.2.0.1', `u${i}`, 'x')).res.status).toBe(200);
    const { res } = await attempt('10.2.0.1', 'bob', 'bob');
    expect(res.status).toBe(429);
  });
});

describe('consent page', () => {
  it('shows the client name (escaped), every scope, offline access, remember, yes and no', async () => {
    const { b, page } = await atLogin(consentClient({ scope: 'openid profile email api1 offline_access' }));
    const consent = await b.follow(await b.submitLogin(page, 'alice', 'alice'));
    expect(isConsentPage(consent)).toBe(true);
    expect(consent.body).toContain('Consent &lt;App&gt;');
    expect(consent.body).not.toContain('Consent <App>');
    for (const text of ['Know who you are', 'See your name', 'See your email address', 'Use api1', 'offline access'])
      expect(consent.body).toContain(text);
    expect(consent.body).toContain('name="remember" value="yes"');
    expect(consent.body).toContain('name="button" value="yes"');
    expect(consent.body).toContain('name="button" value="no"');
    expect(consent.body).toContain('name="csrf_token"');
  });

  it("names a standard scope by the config's displayName when given (the operator's words win)", async () => {
    const resources = (testConfig().identityResources ?? []).map((r) =>
      r.name === 'profile' ? { ...r, displayName: 'Your Example Corp profile', description: 'Name and picture' } : r,
    );
    const named = await startAuthorizeSigil([], { identityResources: resources });
    try {
      const b = new Browser(named);
      await b.signIn('alice');
      const consent = await b.follow(await b.get(authorizeUrl(consentClient({ scope: 'openid profile email' }))));
      expect(isConsentPage(consent), consent.body).toBe(true);
      expect(consent.body).toContain('Your Example Corp profile');
      expect(consent.body).toContain('Name and picture');
      expect(consent.body).not.toContain('See your name');
      // Without a configured displayName the built-in text stays.
      expect(consent.body).toContain('See your email address');
    } finally {
      await named.close();
    }
  });

  it('answering no → access_denied to the client, with state and iss', async () => {
    const b = new Browser(sigil);
    const done = await b.authorize(consentClient({ state: 'deny-me' }), { consent: 'no' });
    expectClientError(done, 'access_denied', { state: 'deny-me', mode: 'query', target: CB });
  });

  it('a consent POST without or with a wrong CSRF token → 403 and no code', async () => {
    const { b, page } = await atLogin(consentClient());
    const consent = await b.follow(await b.submitLogin(page, 'alice', 'alice'));
    const interaction = input(consent.body, 'interaction');
    const missing = await b.post('/consent', { interaction, button: 'yes' });
    expect(missing.status).toBe(403);
    expect(missing.location).toBeUndefined();
    const wrong = await b.post('/consent', { csrf_token: 'nope', interaction, button: 'yes' });
    expect(wrong.status).toBe(403);
    const cross = await b.post(
      '/consent',
      { csrf_token: input(consent.body, 'csrf_token'), interaction, button: 'yes' },
      { origin: 'https://attacker.example' },
    );
    expect(cross.status).toBe(403);
    // The page can still be answered properly.
    expect(readResponse(await b.consent(consent, 'yes')).params.get('code')).toBeTruthy();
  });

  it('yes without remember asks again next time; remember skips the page for the same or fewer scopes', async () => {
    const b = new Browser(sigil);
    await b.signIn('bob');
    const first = await b.follow(await b.get(authorizeUrl(consentClient({ scope: 'openid profile api1' }))));
    expect(isConsentPage(first)).toBe(true);
    expect(readResponse(await b.consent(first, 'yes')).params.get('code')).toBeTruthy();
    const second = await b.follow(await b.get(authorizeUrl(consentClient({ scope: 'openid profile api1' }))));
    expect(isConsentPage(second)).toBe(true);
    expect(readResponse(await b.consent(second, 'yes', true)).params.get('code')).toBeTruthy();
    // Remembered: no page, also with prompt=none and with fewer scopes.
    expect(
      readResponse(await b.get(authorizeUrl(consentClient({ scope: 'openid profile api1' })))).params.get('code'),
    ).toBeTruthy();
    expect(
      readResponse(await b.get(authorizeUrl(consentClient({ scope: 'openid api1', prompt: 'none' })))).params.get(
        'code',
      ),
    ).toBeTruthy();
    // More scopes than remembered: asked again (prompt=none → consent_required).
    expectClientError(
      await b.get(authorizeUrl(consentClient({ scope: 'openid profile email api1', prompt: 'none' }))),
      'consent_required',
    );
    // prompt=consent always asks.
    expect(
      isConsentPage(
        await b.follow(await b.get(authorizeUrl(consentClient({ scope: 'openid api1', prompt: 'consent' })))),
      ),
    ).toBe(true);
    // The remembered consent is bob's: alice is asked.
    const alice = new Browser(sigil);
    await alice.signIn('alice');
    expectClientError(
      await alice.get(authorizeUrl(consentClient({ scope: 'openid api1', prompt: 'none' }))),
      'consent_required',
    );
  });

  it('a native client (loopback redirect) is asked every time, even after remember; prompt=none → consent_required', async () => {
    const b = new Browser(sigil);
    await b.signIn('alice');
    const params = codeParams(challenge, {
      client_id: 'native',
      redirect_uri: 'http://127.0.0.1:6000/cb',
      scope: 'openid api1',
    });
    for (let i = 0; i < 2; i++) {
      const page = await b.follow(await b.get(authorizeUrl(params)));
      expect(isConsentPage(page)).toBe(true);
      expect(page.body).not.toContain('name="remember"');
      // A forged remember=yes is ignored.
      const done = await b.consent(page, 'yes', true);
      expect(readResponse(done).params.get('code')).toBeTruthy();
    }
    expectClientError(await b.get(authorizeUrl({ ...params, prompt: 'none' })), 'consent_required', {
      target: 'http://127.0.0.1:6000/cb',
    });
  });

  it('a consent page without a pending request or session is the expired page', async () => {
    const b = new Browser(sigil);
    expect((await b.get('/consent')).status).toBe(400);
    expect((await b.get('/consent?interaction=nope')).status).toBe(400);
  });
});
