/**
 * WebAuthn over HTTP with a software authenticator: passkey registration and
 * passwordless sign-in to a client, the security key step after the password, and the responses
 * Sigil must refuse (reused and expired challenges, unknown or removed credentials, another
 * origin or RP ID, a counter that does not grow, a passkey without user verification), each one
 * counted by the failure limits and reported as an event. The real browser runs in
 * test/e2e/webauthn-browser.test.ts.
 */
import { decodeJwt } from 'jose';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import type { SigilEvent } from '../../src/events/events.js';
import {
  authorizeUrl,
  Browser,
  codeParams,
  input,
  ISSUER,
  isLoginPage,
  pkce,
  readResponse,
  redeem,
  type Step,
  startAuthorizeSigil,
  unescapeHtml,
  verifyIdToken,
} from '../authorize-helpers.js';
import { introspect, sleep, type TestSigil, tokenRequest } from '../helpers.js';
import { SoftAuthenticator } from '../webauthn-authenticator.js';
import { hash } from '@node-rs/argon2';
import { enrollTotp, isMfaPage, recoveryCodesOnPage, secretOnPage, submitCode, totpCode } from '../mfa-helpers.js';

/** Adds a credential of `kind` on /account/passkeys (the browser is signed in). */
async function register(
  b: Browser,
  auth: SoftAuthenticator,
  kind: 'passkey' | 'security-key',
  name = 'My key',
): Promise<Step> {
  const page = await b.get('/account/passkeys');
  expect(page.status, page.body).toBe(200);
  const csrf = input(page.body, 'csrf_token');
  const options = await b.post('/account/passkeys/options', { csrf_token: csrf, kind });
  expect(options.status, options.body).toBe(200);
  return b.post('/account/passkeys/register', {
    csrf_token: csrf,
    kind,
    name,
    response: JSON.stringify(auth.register(options.res.json())),
  });
}

/** Passkey sign-in options from a login page (already fetched). */
async function passkeyOptions(b: Browser, loginPage: Step) {
  const res = await b.post('/account/passkeys/login/options', { csrf_token: input(loginPage.body, 'csrf_token') });
  expect(res.status, res.body).toBe(200);
  return res.res.json();
}

/** Posts a passkey response from a login page (with its interaction, when there is one). */
function passkeyLogin(b: Browser, loginPage: Step, response: unknown): Promise<Step> {
  const interaction = /name="interaction" value="([^"]*)"/.exec(loginPage.body)?.[1];
  return b.post('/account/passkeys/login', {
    csrf_token: input(loginPage.body, 'csrf_token'),
    ...(interaction ? { interaction } : {}),
    response: JSON.stringify(response),
  });
}

let users = 0;

/**
 * A new user (password = username) whose only credential is a passkey, added from a password
 * session (a user with nothing may enroll from any recent sign-in); the browser is signed out.
 */
async function withPasskey(
  sigil: TestSigil,
): Promise<{ b: Browser; auth: SoftAuthenticator; name: string; subjectId: string }> {
  const name = `pk${++users}`;
  const subjectId = `pk-${users}`;
  await sigil.context.store.users.addUser({
    subjectId,
    username: name,
    tenant: null,
    passwordHash: await hash(name),
    claims: {},
    isActive: true,
  });
  const b = new Browser(sigil);
  await b.signIn(name);
  const auth = new SoftAuthenticator(ISSUER);
  const added = await register(b, auth, 'passkey');
  expect(added.status, added.body).toBe(303);
  b.cookies.delete('sigil.session');
  return { b, auth, name, subjectId };
}

describe('passkeys and security keys over HTTP', () => {
  let sigil: TestSigil;
  let events: SigilEvent[] = [];
  let unsubscribe: () => void;
  beforeAll(async () => {
    sigil = await startAuthorizeSigil([], { webauthn: { enabled: true }, rateLimits: { maxFailures: 50 } });
    unsubscribe = sigil.subscribe((e) => void events.push(e));
  });
  afterAll(async () => {
    unsubscribe();
    await sigil.close();
  });
  afterEach(() => {
    events = [];
  });

  it('registers a passkey, then signs in with it alone and gets a code whose identity token says swk, user, mfa', async () => {
    const { b, auth, subjectId } = await withPasskey(sigil);
    expect(events.find((e) => e.name === 'webauthn_registered')).toMatchObject({ subjectId, factor: 'passkey' });
    const { verifier, challenge } = pkce();
    const login = await b.follow(await b.get(authorizeUrl(codeParams(challenge))));
    expect(isLoginPage(login)).toBe(true);
    expect(login.body).toContain('autocomplete="username webauthn"');
    expect(login.body).toContain('<script src="/assets/webauthn-browser.js"></script>');
    const answered = await passkeyLogin(b, login, auth.authenticate(await passkeyOptions(b, login)));
    const code = readResponse(await b.follow(answered)).params.get('code');
    expect(code).toBeTruthy();
    const tokens = (await redeem(sigil, code as string, { verifier })).json<{
      id_token: string;
      access_token: string;
    }>();
    const { claims } = await verifyIdToken(sigil, tokens.id_token, 'web');
    expect(claims.sub).toBe(subjectId);
    expect(claims.amr).toEqual(['swk', 'user', 'mfa']);
    expect(decodeJwt(tokens.access_token).amr).toEqual(['swk', 'user', 'mfa']);
    const introspected = (await introspect(sigil, tokens.access_token)).json<{ active: boolean; amr: string[] }>();
    expect(introspected).toMatchObject({ active: true, amr: ['swk', 'user', 'mfa'] });
    expect(events.map((e) => e.name)).toEqual(expect.arrayContaining(['webauthn_succeeded', 'user_login_succeeded']));
  });

  it('refuses a reused challenge: the second answer to one set of options signs nobody in', async () => {
    const { b, auth } = await withPasskey(sigil);
    const login = await b.get('/account/login');
    const options = await passkeyOptions(b, login);
    expect((await passkeyLogin(b, login, auth.authenticate(options))).status).toBe(200);
    expect(b.cookies.has('sigil.session')).toBe(true);
    b.cookies.delete('sigil.session');
    const replay = await passkeyLogin(b, login, auth.authenticate(options));
    expect(replay.status).toBe(400);
    expect(replay.body).toContain('That did not work');
    expect(b.cookies.has('sigil.session')).toBe(false);
    expect(events.find((e) => e.name === 'webauthn_failed')).toMatchObject({ error: 'challenge', factor: 'passkey' });
  });

  it('refuses a response from a credential Sigil does not know', async () => {
    const { b } = await withPasskey(sigil);
    const stranger = new SoftAuthenticator(ISSUER);
    stranger.register({ ...(await registrationOptionsFor(sigil)) });
    const login = await b.get('/account/login');
    const res = await passkeyLogin(b, login, stranger.authenticate(await passkeyOptions(b, login)));
    expect(res.status).toBe(400);
    expect(b.cookies.has('sigil.session')).toBe(false);
    expect(events.find((e) => e.name === 'webauthn_failed')).toMatchObject({ error: 'unknown_credential' });
  });

  it('refuses responses made for another origin or another RP ID, and a passkey without user verification', async () => {
    const { b, auth } = await withPasskey(sigil);
    for (const bend of [{ origin: 'https://evil.example' }, { rpId: 'evil.example' }, { flags: 0x01 }]) {
      const login = await b.get('/account/login');
      const res = await passkeyLogin(b, login, auth.authenticate(await passkeyOptions(b, login), undefined, bend));
      expect(res.status, JSON.stringify(bend)).toBe(400);
      expect(b.cookies.has('sigil.session')).toBe(false);
    }
    expect(events.filter((e) => e.name === 'webauthn_failed').map((e) => e.error)).toEqual([
      'verification',
      'verification',
      'verification',
    ]);
  });

  it('refuses a signature counter that does not grow (a cloned authenticator), and records the one that does', async () => {
    const { b, auth } = await withPasskey(sigil);
    let login = await b.get('/account/login');
    expect(
      (await passkeyLogin(b, login, auth.authenticate(await passkeyOptions(b, login), undefined, { counter: 7 })))
        .status,
    ).toBe(200);
    b.cookies.delete('sigil.session');
    login = await b.get('/account/login');
    const res = await passkeyLogin(
      b,
      login,
      auth.authenticate(await passkeyOptions(b, login), undefined, { counter: 7 }),
    );
    expect(res.status).toBe(400);
    expect(b.cookies.has('sigil.session')).toBe(false);
    expect(events.find((e) => e.name === 'webauthn_failed')).toMatchObject({ error: 'counter' });
    // 7 was recorded: 8 passes.
    login = await b.get('/account/login');
    expect(
      (await passkeyLogin(b, login, auth.authenticate(await passkeyOptions(b, login), undefined, { counter: 8 })))
        .status,
    ).toBe(200);
    expect(b.cookies.has('sigil.session')).toBe(true);
  });

  it('asks a user with a security key for it after the password; the session starts only after the key and says pwd, hwk, mfa', async () => {
    const b = new Browser(sigil);
    await b.signIn('bob');
    const key = new SoftAuthenticator(ISSUER, false);
    expect((await register(b, key, 'security-key', 'Blue key')).status).toBe(303);
    const listed = await b.get('/account/passkeys');
    expect(listed.body).toContain('Blue key');
    expect(listed.body).toContain('Security key');
    b.cookies.delete('sigil.session');

    const { verifier, challenge } = pkce();
    const login = await b.follow(await b.get(authorizeUrl(codeParams(challenge))));
    const step = await b.submitLogin(login, 'bob', 'bob');
    expect(step.status).toBe(200);
    expect(step.body).toContain('action="/account/passkeys/second-factor"');
    expect(b.cookies.has('sigil.session')).toBe(false);
    const csrf = input(step.body, 'csrf_token');
    const options = await b.post('/account/passkeys/second-factor/options', { csrf_token: csrf });
    expect(options.status).toBe(200);
    expect(options.res.json().allowCredentials).toHaveLength(1);

    // A wrong answer (another key) is refused and counted; the step stays open for the right key.
    const other = new SoftAuthenticator(ISSUER, false);
    other.register(await registrationOptionsFor(sigil));
    const wrong = await b.post('/account/passkeys/second-factor', {
      csrf_token: csrf,
      response: JSON.stringify(other.authenticate(options.res.json())),
    });
    expect(wrong.status).toBe(400);
    expect(b.cookies.has('sigil.session')).toBe(false);
    expect(events.find((e) => e.name === 'webauthn_failed')).toMatchObject({ subjectId: '2', factor: 'security-key' });

    const again = await b.post('/account/passkeys/second-factor/options', { csrf_token: csrf });
    const done = await b.post('/account/passkeys/second-factor', {
      csrf_token: csrf,
      response: JSON.stringify(key.authenticate(again.res.json())),
    });
    const code = readResponse(await b.follow(done)).params.get('code');
    const tokens = (await redeem(sigil, code as string, { verifier })).json<{ id_token: string }>();
    expect((await verifyIdToken(sigil, tokens.id_token, 'web')).claims.amr).toEqual(['pwd', 'hwk', 'mfa']);
    expect(events.find((e) => e.name === 'webauthn_succeeded')).toMatchObject({
      subjectId: '2',
      factor: 'security-key',
    });

    // The step is single-use: its cookie no longer opens it.
    const replay = await b.post('/account/passkeys/second-factor', {
      csrf_token: csrf,
      response: JSON.stringify(key.authenticate(again.res.json())),
    });
    expect(replay.body).not.toContain('action="/account/passkeys/second-factor"');
  });

  it('cancelling the security key step goes back to the login page and closes the step', async () => {
    const b = new Browser(sigil);
    await b.signIn('carol');
    expect((await register(b, new SoftAuthenticator(ISSUER, false), 'security-key')).status).toBe(303);
    b.cookies.delete('sigil.session');
    const { challenge } = pkce();
    const login = await b.follow(await b.get(authorizeUrl(codeParams(challenge))));
    const step = await b.submitLogin(login, 'carol', 'carol');
    const csrf = input(step.body, 'csrf_token');
    const cancelled = await b.post('/account/passkeys/second-factor', { csrf_token: csrf, button: 'cancel' });
    expect(cancelled.status).toBe(303);
    expect(cancelled.location).toMatch(/^\/account\/login\?interaction=/);
    const back = await b.get(cancelled.location as string);
    expect(isLoginPage(back), back.body).toBe(true);
    expect(b.cookies.has('sigil.session')).toBe(false);
    expect((await b.post('/account/passkeys/second-factor/options', { csrf_token: csrf })).status).toBe(403);
  });

  it('removes a credential: it is no longer listed and no longer signs anyone in', async () => {
    const { b, auth, subjectId } = await withPasskey(sigil);
    // Removing the user's passkey needs a sign-in with a passkey.
    const signIn = await b.get('/account/login');
    expect((await passkeyLogin(b, signIn, auth.authenticate(await passkeyOptions(b, signIn)))).status).toBe(200);
    const page = await b.get('/account/passkeys');
    const id = auth.credentials[0]?.id ?? '';
    expect(page.body).toContain(`value="${id}"`);
    const removed = await b.post('/account/passkeys/remove', { csrf_token: input(page.body, 'csrf_token'), id });
    expect(removed.status).toBe(303);
    expect((await b.get('/account/passkeys')).body).not.toContain(`value="${id}"`);
    expect(events.find((e) => e.name === 'webauthn_removed')).toMatchObject({ subjectId, factor: 'passkey' });
    b.cookies.delete('sigil.session');
    const login = await b.get('/account/login');
    const res = await passkeyLogin(b, login, auth.authenticate(await passkeyOptions(b, login)));
    expect(res.status).toBe(400);
    expect(b.cookies.has('sigil.session')).toBe(false);
  });

  it('lets a session change credentials only within five minutes of its sign-in', async () => {
    const b = new Browser(sigil);
    await b.signIn('alice');
    vi.useFakeTimers({ toFake: ['Date'], now: Date.now() + 301_000 });
    try {
      const page = await b.get('/account/passkeys');
      expect(page.status).toBe(200);
      expect(page.body).toContain('sign in again');
      expect(page.body).not.toContain('action="/account/passkeys/register"');
      const csrf = input((await b.get('/account/login')).body, 'csrf_token');
      const options = await b.post('/account/passkeys/options', { csrf_token: csrf, kind: 'passkey' });
      expect(options.status).toBe(403);
    } finally {
      vi.useRealTimers();
    }
  });

  it('serves the browser bundle and the page script itself, under a CSP without inline scripts', async () => {
    const b = new Browser(sigil);
    const login = await b.get('/account/login');
    const csp = String(login.headers['content-security-policy']);
    expect(csp).toContain("script-src 'self'");
    expect(csp).not.toContain('unsafe-inline');
    expect(login.body).not.toMatch(/<script>/);
    const bundle = await b.get('/assets/webauthn-browser.js');
    expect(bundle.status).toBe(200);
    expect(String(bundle.headers['content-type'])).toMatch(/^text\/javascript/);
    expect(bundle.body).toContain('SimpleWebAuthnBrowser');
    const script = await b.get('/assets/passkeys.js');
    expect(script.body).toContain('startAuthentication');
  });

  it('answers options and changes only with the CSRF token, and only to a signed-in user', async () => {
    const b = new Browser(sigil);
    expect((await b.post('/account/passkeys/login/options', {})).status).toBe(403);
    const anonymous = await b.get('/account/passkeys');
    expect(anonymous.status).toBe(401);
    const login = await b.get('/account/login');
    const options = await b.post('/account/passkeys/options', {
      csrf_token: input(login.body, 'csrf_token'),
      kind: 'passkey',
    });
    expect(options.status).toBe(403);
    expect(options.res.json().error).toBe('login_required');
  });
});

/** Registration options of a throw-away user session (for a credential Sigil will not store). */
async function registrationOptionsFor(sigil: TestSigil) {
  const b = new Browser(sigil);
  await b.signIn('carol');
  const page = await b.get('/account/passkeys');
  const res = await b.post('/account/passkeys/options', {
    csrf_token: input(page.body, 'csrf_token'),
    kind: 'passkey',
  });
  return res.res.json();
}

describe('the security key step in the language of the pending request', () => {
  let sigil: TestSigil;
  beforeAll(async () => {
    sigil = await startAuthorizeSigil([], { webauthn: { enabled: true } });
  });
  afterAll(async () => sigil.close());

  it('is German for ui_locales=de, whatever Accept-Language says, and stays German after a failed key', async () => {
    const b = new Browser(sigil);
    await b.signIn('bob');
    const key = new SoftAuthenticator(ISSUER, false);
    expect((await register(b, key, 'security-key')).status).toBe(303);
    b.cookies.delete('sigil.session');
    const english = { 'accept-language': 'en' };
    const { challenge } = pkce();
    const login = await b.follow(await b.get(authorizeUrl(codeParams(challenge, { ui_locales: 'de' })), english));
    const step = await b.post(
      '/account/login',
      {
        csrf_token: input(login.body, 'csrf_token'),
        interaction: input(login.body, 'interaction'),
        ui_locales: 'de',
        username: 'bob',
        password: 'bob',
        button: 'login',
      },
      english,
    );
    expect(step.body).toContain('action="/account/passkeys/second-factor"');
    expect(step.body).toContain('<html lang="de">');
    const csrf = input(step.body, 'csrf_token');
    const options = await b.post('/account/passkeys/second-factor/options', { csrf_token: csrf });
    const other = new SoftAuthenticator(ISSUER, false);
    other.register(await registrationOptionsFor(sigil));
    const wrong = await b.post(
      '/account/passkeys/second-factor',
      {
        csrf_token: csrf,
        ui_locales: input(step.body, 'ui_locales'),
        response: JSON.stringify(other.authenticate(options.res.json())),
      },
      english,
    );
    expect(wrong.status).toBe(400);
    expect(wrong.body).toContain('<html lang="de">');
  });
});

describe('challenge lifetime and failure limits', () => {
  let sigil: TestSigil;
  beforeAll(async () => {
    sigil = await startAuthorizeSigil([], {
      rateLimits: { maxFailures: 2, addressMaxFailures: 100 },
      webauthn: { enabled: true, challengeLifetime: 2, challengesPerBrowser: 3 },
    });
  });
  afterAll(async () => sigil.close());

  it('refuses an answer after the challenge expired', async () => {
    const { b, auth } = await withPasskey(sigil);
    const login = await b.get('/account/login');
    const options = await passkeyOptions(b, login);
    await sleep(3100);
    const res = await passkeyLogin(b, login, auth.authenticate(options));
    expect(res.status).toBe(400);
    expect(b.cookies.has('sigil.session')).toBe(false);
  });

  it('stops repeated failed passkey sign-ins from one address with 429', async () => {
    const b = new Browser(sigil, '10.9.8.7');
    const stranger = new SoftAuthenticator(ISSUER);
    stranger.register(await registrationOptionsFor(sigil));
    const statuses: number[] = [];
    for (let i = 0; i < 3; i++) {
      const login = await b.get('/account/login');
      statuses.push((await passkeyLogin(b, login, stranger.authenticate(await passkeyOptions(b, login)))).status);
    }
    expect(statuses).toEqual([400, 400, 429]);
  });

  it('limits the challenges one browser may ask for (each is a stored row)', async () => {
    const b = new Browser(sigil);
    const login = await b.get('/account/login');
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++)
      statuses.push(
        (await b.post('/account/passkeys/login/options', { csrf_token: input(login.body, 'csrf_token') })).status,
      );
    expect(statuses).toEqual([200, 200, 200, 429]);
  });
});

/**
 * WebAuthn in MFA core's policy (src/mfa/factors.ts): a security key is a second factor (the
 * password grant refuses its user, acr_values=urn:sigil:acr:mfa is met by it, /account lists and
 * removes it); a passkey is a sign-in of its own, meets urn:sigil:acr:mfa, and serves as the
 * second step where MFA is asked for.
 */
describe('WebAuthn credentials in the MFA policy', () => {
  const ACR_MFA = 'urn:sigil:acr:mfa';
  let sigil: TestSigil;
  let events: SigilEvent[] = [];
  let unsubscribe: () => void;
  beforeAll(async () => {
    sigil = await startAuthorizeSigil(
      [
        {
          clientId: 'ropc',
          clientSecrets: ['ropc-secret'],
          allowedGrantTypes: ['password'],
          allowedScopes: ['openid'],
        },
        {
          clientId: 'legacy-ropc',
          clientSecrets: ['legacy-secret'],
          allowedGrantTypes: ['password'],
          allowedScopes: ['openid'],
          allowPasswordGrantForMfaUsers: true,
        },
      ],
      { webauthn: { enabled: true }, rateLimits: { maxFailures: 50 } },
    );
    unsubscribe = sigil.subscribe((e) => void events.push(e));
  });
  afterAll(async () => {
    unsubscribe();
    await sigil.close();
  });
  afterEach(() => {
    events = [];
  });

  const passwordGrant = (user: string, client: [string, string]) =>
    tokenRequest(sigil, { grant_type: 'password', username: user, password: user, scope: 'openid' }, client);

  /** Answers the security key step page `step` with `auth`; returns the next step. */
  async function answerKeyStep(b: Browser, step: Step, auth: SoftAuthenticator): Promise<Step> {
    expect(step.body, step.body).toContain('action="/account/passkeys/second-factor"');
    const csrf = input(step.body, 'csrf_token');
    const options = await b.post('/account/passkeys/second-factor/options', { csrf_token: csrf });
    expect(options.status, options.body).toBe(200);
    return b.post('/account/passkeys/second-factor', {
      csrf_token: csrf,
      response: JSON.stringify(auth.authenticate(options.res.json())),
    });
  }

  it('counts a security key as a second factor: the password grant refuses its user, acr_values=urn:sigil:acr:mfa is met by it, /account lists and removes it', async () => {
    const b = new Browser(sigil);
    await b.signIn('bob');
    const key = new SoftAuthenticator(ISSUER, false);
    expect((await register(b, key, 'security-key', 'Blue key')).status).toBe(303);
    b.cookies.delete('sigil.session');

    // The password grant: a password alone is not enough for a user with a security key.
    const refused = await passwordGrant('bob', ['ropc', 'ropc-secret']);
    expect(refused.statusCode).toBe(400);
    expect(refused.json()).toMatchObject({
      error: 'invalid_grant',
      error_description: expect.stringContaining('second factor'),
    });
    expect((await passwordGrant('bob', ['legacy-ropc', 'legacy-secret'])).statusCode).toBe(200);

    // acr_values asks for MFA: the password, then the key; the tokens say so.
    const { verifier, challenge } = pkce();
    const login = await b.follow(await b.get(authorizeUrl(codeParams(challenge, { acr_values: ACR_MFA }))));
    const step = await b.submitLogin(login, 'bob', 'bob');
    expect(step.status).toBe(200);
    // Bob has no one-time code: the step offers none.
    expect(step.body).not.toContain('/account/mfa?use=code');
    const code = readResponse(await b.follow(await answerKeyStep(b, step, key))).params.get('code');
    const tokens = (await redeem(sigil, code as string, { verifier })).json<{
      id_token: string;
      access_token: string;
    }>();
    const { claims } = await verifyIdToken(sigil, tokens.id_token, 'web');
    expect(claims.acr).toBe(ACR_MFA);
    expect(claims.amr).toEqual(['pwd', 'hwk', 'mfa']);
    expect((await introspect(sigil, tokens.access_token)).json()).toMatchObject({
      active: true,
      amr: ['pwd', 'hwk', 'mfa'],
    });

    // /account: one factor list with the key, a link to /account/passkeys; removable there.
    const account = await b.get('/account');
    expect(account.status).toBe(200);
    expect(account.body).toContain('Blue key (Security key)');
    expect(account.body).toContain('href="/account/passkeys"');
    const id = key.credentials[0]?.id ?? '';
    const removed = await b.post('/account/factors/remove', {
      csrf_token: input(account.body, 'csrf_token'),
      factor: id,
      button: 'remove',
    });
    expect(removed.status, removed.body).toBe(200);
    expect(removed.body).not.toContain('Blue key');
    expect(events.find((e) => e.name === 'webauthn_removed')).toMatchObject({ subjectId: '2', factor: 'security-key' });
    expect(await sigil.context.store.webauthn.list('2')).toEqual([]);
    expect((await passwordGrant('bob', ['ropc', 'ropc-secret'])).statusCode).toBe(200);
  });

  it('gives urn:sigil:acr:mfa to a passkey sign-in, and uses a passkey as the second step of a password session asked for MFA', async () => {
    const { b, auth, name } = await withPasskey(sigil);
    // A passkey is a sign-in of its own, not a lock on the password.
    expect((await passwordGrant(name, ['ropc', 'ropc-secret'])).statusCode).toBe(200);

    // Passkey sign-in for a request asking for MFA: amr swk user mfa, acr MFA, no step-up.
    const first = pkce();
    const login = await b.follow(await b.get(authorizeUrl(codeParams(first.challenge, { acr_values: ACR_MFA }))));
    expect(isLoginPage(login)).toBe(true);
    const answered = await passkeyLogin(b, login, auth.authenticate(await passkeyOptions(b, login)));
    const code = readResponse(await b.follow(answered)).params.get('code');
    const tokens = (await redeem(sigil, code as string, { verifier: first.verifier })).json<{ id_token: string }>();
    const { claims } = await verifyIdToken(sigil, tokens.id_token, 'web');
    expect(claims.amr).toEqual(['swk', 'user', 'mfa']);
    expect(claims.acr).toBe(ACR_MFA);

    // A password session, then a request for MFA: the passkey as the second step (step-up).
    b.cookies.delete('sigil.session');
    await b.signIn(name);
    const second = pkce();
    const step = await b.follow(await b.get(authorizeUrl(codeParams(second.challenge, { acr_values: ACR_MFA }))));
    expect(step.status).toBe(200);
    const stepped = readResponse(await b.follow(await answerKeyStep(b, step, auth))).params.get('code');
    const upgraded = (await redeem(sigil, stepped as string, { verifier: second.verifier })).json<{
      id_token: string;
    }>();
    const up = await verifyIdToken(sigil, upgraded.id_token, 'web');
    expect(up.claims.amr).toEqual(['pwd', 'swk', 'mfa']);
    expect(up.claims.acr).toBe(ACR_MFA);
  });

  it('offers the one-time code on the security key step to a user who also has an authenticator app', async () => {
    await sigil.context.store.users.addUser({
      subjectId: 'erin-1',
      username: 'erin',
      tenant: null,
      passwordHash: await hash('erin'),
      claims: {},
      isActive: true,
    });
    const b = new Browser(sigil);
    await b.signIn('erin');
    const { secret } = await enrollTotp(b);
    expect((await register(b, new SoftAuthenticator(ISSUER, false), 'security-key')).status).toBe(303);
    b.cookies.delete('sigil.session');

    const { verifier, challenge } = pkce();
    const login = await b.follow(await b.get(authorizeUrl(codeParams(challenge))));
    const step = await b.submitLogin(login, 'erin', 'erin');
    expect(step.body).toContain('action="/account/passkeys/second-factor"');
    const link = /href="(\/account\/mfa\?use=code[^"]*)"/.exec(step.body)?.[1];
    expect(link).toBeDefined();
    const form = await b.get(unescapeHtml(link as string));
    expect(isMfaPage(form), form.body).toBe(true);
    // The enrollment spent the current step: the next one (within the ±1 window).
    const code = readResponse(await b.follow(await submitCode(b, form, totpCode(secret, 1)))).params.get('code');
    const tokens = (await redeem(sigil, code as string, { verifier })).json<{ id_token: string }>();
    expect((await verifyIdToken(sigil, tokens.id_token, 'web')).claims.amr).toEqual(['pwd', 'otp', 'mfa']);
  });
});

/**
 * Any credential locks enrolment: adding or removing a factor needs a sign-in
 * that used the strongest kind the user holds, and a pending sign-in may enrol only when its own
 * decision was "enrol" for a user with nothing. The attack: the password of a user whose only
 * credential is a passkey, at a client with requireMfa, then /account/totp instead of the key.
 */
describe('enrolment for a user with only a passkey', () => {
  let sigil: TestSigil;
  beforeAll(async () => {
    sigil = await startAuthorizeSigil(
      [
        {
          clientId: 'strict',
          clientSecrets: ['strict-secret'],
          allowedGrantTypes: ['authorization_code'],
          allowedScopes: ['openid'],
          redirectUris: ['https://rp.example/cb'],
          requireMfa: true,
        },
      ],
      { webauthn: { enabled: true }, rateLimits: { maxFailures: 50 } },
    );
  });
  afterAll(async () => sigil.close());

  const strictParams = (challenge: string) => ({
    ...codeParams(challenge),
    client_id: 'strict',
    redirect_uri: 'https://rp.example/cb',
    scope: 'openid',
  });

  const factorsOf = async (subjectId: string) => (await sigil.context.mfa.listFactors(subjectId)).map((f) => f.kind);

  it('the password, then /account/totp instead of the passkey step: no enrolment, no factor, no recovery codes, no session, no code', async () => {
    const { name, subjectId } = await withPasskey(sigil);
    const attacker = new Browser(sigil);
    const { challenge } = pkce();
    const login = await attacker.follow(await attacker.get(authorizeUrl(strictParams(challenge))));
    const step = await attacker.submitLogin(login, name, name);
    expect(step.body).toContain('action="/account/passkeys/second-factor"');
    const interaction = /interaction=([^&"]+)/.exec(login.body)?.[1] ?? input(login.body, 'interaction');

    // Skip the key: the enrollment page, and a code from the attacker's own app if it showed a key.
    const enroll = await attacker.get('/account/totp');
    const shown = enroll.body.includes('id="totp-secret"');
    const posted = await attacker.follow(
      await attacker.post('/account/totp', {
        csrf_token: input(shown ? enroll.body : step.body, 'csrf_token'),
        code: shown ? totpCode(secretOnPage(enroll.body)) : '000000',
        button: 'confirm',
        interaction,
      }),
    );
    expect(shown, enroll.body).toBe(false);
    expect(enroll.status).toBe(400);
    expect(recoveryCodesOnPage(posted.body)).toEqual([]);
    expect(await factorsOf(subjectId)).toEqual(['passkey']);
    expect(attacker.cookies.has('sigil.session')).toBe(false);
    const resumed = await attacker.follow(await attacker.get(`/connect/authorize/resume?interaction=${interaction}`));
    expect(resumed.location ?? '').not.toMatch(/code=/);
    // The code form is no way around the key either: the user has no code to type.
    const mfa = await attacker.get('/account/mfa');
    expect((await submitCode(attacker, mfa, '000000')).location ?? '').not.toMatch(/code=/);
    expect(attacker.cookies.has('sigil.session')).toBe(false);
  });

  it('a fresh password-only session adds no authenticator app and no passkey, and removes nothing', async () => {
    const { name, subjectId, auth } = await withPasskey(sigil);
    const b = new Browser(sigil);
    await b.signIn(name);
    const totp = await b.get('/account/totp');
    expect(totp.status).toBe(403);
    expect(totp.body).not.toContain('id="totp-secret"');
    const account = await b.get('/account');
    expect(account.body).toContain('href="/account/login?return=%2Faccount"');
    expect(account.body).not.toContain('action="/account/factors/remove"');
    // The forms are not shown; a token from any page of this browser tries them anyway.
    const csrf = input((await b.get('/account/login')).body, 'csrf_token');
    const confirm = await b.post('/account/totp', { csrf_token: csrf, code: '000000', button: 'confirm' });
    expect(confirm.status).toBe(403);
    const passkeys = await b.get('/account/passkeys');
    expect(passkeys.body).not.toContain('action="/account/passkeys/register"');
    const options = await b.post('/account/passkeys/options', { csrf_token: csrf, kind: 'passkey' });
    expect(options.status).toBe(403);
    expect(options.res.json().error).toBe('login_required');
    const other = new SoftAuthenticator(ISSUER);
    const registered = await b.post('/account/passkeys/register', {
      csrf_token: csrf,
      kind: 'security-key',
      response: JSON.stringify(other.register(await registrationOptionsFor(sigil))),
    });
    expect(registered.status).toBe(403);
    const id = auth.credentials[0]?.id ?? '';
    expect((await b.post('/account/passkeys/remove', { csrf_token: csrf, id })).status).toBe(403);
    expect((await b.post('/account/factors/remove', { csrf_token: csrf, factor: id, button: 'remove' })).status).toBe(
      403,
    );
    expect(await factorsOf(subjectId)).toEqual(['passkey']);
  });

  it('a session signed in with the passkey adds an authenticator app and a security key and removes the passkey; the app alone then does not change the key', async () => {
    const { b, name, subjectId, auth } = await withPasskey(sigil);
    const login = await b.get('/account/login');
    expect((await passkeyLogin(b, login, auth.authenticate(await passkeyOptions(b, login)))).status).toBe(200);
    const { secret } = await enrollTotp(b);
    const key = new SoftAuthenticator(ISSUER, false);
    expect((await register(b, key, 'security-key')).status).toBe(303);
    expect((await factorsOf(subjectId)).sort()).toEqual(
      ['passkey', 'recovery_code', 'security-key', 'totp']
        .flatMap((k) => (k === 'recovery_code' ? Array(10).fill(k) : [k]))
        .sort(),
    );
    const account = await b.get('/account');
    const removed = await b.post('/account/factors/remove', {
      csrf_token: input(account.body, 'csrf_token'),
      factor: auth.credentials[0]?.id ?? '',
      button: 'remove',
    });
    expect(removed.status, removed.body).toBe(200);
    expect(await factorsOf(subjectId)).not.toContain('passkey');

    // Password + app: weaker than the security key the user holds, so no changes.
    const c = new Browser(sigil);
    const { challenge } = pkce();
    const keyStep = await c.follow(
      await c.submitLogin(await c.follow(await c.get(authorizeUrl(codeParams(challenge)))), name, name),
    );
    const link = /href="(\/account\/mfa\?use=code[^"]*)"/.exec(keyStep.body)?.[1] ?? '';
    const form = await c.get(unescapeHtml(link));
    expect(readResponse(await submitCode(c, form, totpCode(secret, 1))).params.has('code')).toBe(true);
    expect((await c.get('/account/totp')).status).toBe(403);
    expect((await c.get('/account')).body).not.toContain('action="/account/factors/remove"');
    expect(
      (
        await c.post('/account/factors/remove', {
          csrf_token: input((await c.get('/account/login')).body, 'csrf_token'),
          factor: key.credentials[0]?.id ?? '',
          button: 'remove',
        })
      ).status,
    ).toBe(403);
    expect(await factorsOf(subjectId)).toContain('security-key');
  });

  it('a user with nothing at a client with requireMfa still enrols an authenticator app after the password, and the request continues', async () => {
    const name = `pk${++users}`;
    await sigil.context.store.users.addUser({
      subjectId: `pk-${users}`,
      username: name,
      tenant: null,
      passwordHash: await hash(name),
      claims: {},
      isActive: true,
    });
    const b = new Browser(sigil);
    const { challenge } = pkce();
    const login = await b.follow(await b.get(authorizeUrl(strictParams(challenge))));
    const enroll = await b.follow(await b.submitLogin(login, name, name));
    expect(enroll.body).toContain('action="/account/totp"');
    const codes = await b.post('/account/totp', {
      csrf_token: input(enroll.body, 'csrf_token'),
      code: totpCode(secretOnPage(enroll.body)),
      button: 'confirm',
      interaction: input(enroll.body, 'interaction'),
    });
    expect(recoveryCodesOnPage(codes.body)).toHaveLength(10);
    const next = /class="button primary" href="([^"]+)"/.exec(codes.body)?.[1] ?? '';
    expect(readResponse(await b.follow(await b.get(unescapeHtml(next)))).params.has('code')).toBe(true);
  });
});
