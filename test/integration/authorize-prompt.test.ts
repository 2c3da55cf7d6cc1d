/**
 * When the user must sign in or consent (OIDC Core §3.1.2.1, §3.1.2.3): prompt none / login /
 * consent / select_account, max_age, id_token_hint, acr_values tenant:<name>.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sleep, type TestSigil } from '../helpers.js';
import {
  authorizeUrl,
  Browser,
  CB,
  codeParams,
  expectClientError,
  input,
  isConsentPage,
  isLoginPage,
  pkce,
  readResponse,
  redeem,
  startAuthorizeSigil,
  verifyIdToken,
} from '../authorize-helpers.js';

let sigil: TestSigil;
const { verifier, challenge } = pkce();

beforeAll(async () => {
  sigil = await startAuthorizeSigil();
});
afterAll(async () => sigil.close());

const web = (extra: Record<string, string> = {}) => codeParams(challenge, extra);

/**
 * Redeems the code of a finished step for `client` and returns the verified identity token claims and the raw
 * token.
 */
async function idTokenOf(step: Awaited<ReturnType<Browser['get']>>, client = 'web', clockTolerance = 0) {
  const code = readResponse(step).params.get('code');
  expect(code, step.location ?? step.body).toBeTruthy();
  const res = await redeem(sigil, code!, { client, verifier });
  expect(res.statusCode, res.body).toBe(200);
  const token = res.json<{ id_token: string; access_token: string }>();
  const claims: Record<string, unknown> = (await verifyIdToken(sigil, token.id_token, client, clockTolerance)).claims;
  return Object.assign({}, claims, { raw: token.id_token, accessToken: token.access_token });
}

async function signedIn(user = 'alice'): Promise<Browser> {
  const b = new Browser(sigil);
  await b.signIn(user);
  return b;
}

describe('prompt=none', () => {
  it('without a session → login_required by redirect, no page', async () => {
    const b = new Browser(sigil);
    const step = await b.get(authorizeUrl(web({ prompt: 'none' })));
    expect(step.status).toBe(303);
    expectClientError(step, 'login_required', { state: 'st', mode: 'query', target: CB });
  });

  it('with a session and nothing to ask → the code, no page', async () => {
    const b = await signedIn();
    const step = await b.get(authorizeUrl(web({ prompt: 'none' })));
    expect(readResponse(step).params.get('code')).toBeTruthy();
  });

  it('with a session but consent needed → consent_required (requireConsent and native clients)', async () => {
    const b = await signedIn();
    expectClientError(await b.get(authorizeUrl(web({ client_id: 'consent', prompt: 'none' }))), 'consent_required', {
      state: 'st',
    });
    const native = {
      ...web({ client_id: 'native', redirect_uri: 'http://127.0.0.1:5555/cb', scope: 'openid api1', prompt: 'none' }),
    };
    expectClientError(await b.get(authorizeUrl(native)), 'consent_required', { target: 'http://127.0.0.1:5555/cb' });
  });

  it('with an inactive or ended session → login_required', async () => {
    const b = await signedIn();
    const logout = await b.get('/account/logout');
    await b.post('/account/logout', { csrf_token: input(logout.body, 'csrf_token'), button: 'logout' });
    expectClientError(await b.get(authorizeUrl(web({ prompt: 'none' }))), 'login_required');
  });
});

describe('prompt=login, select_account, consent', () => {
  it('prompt=login with a live session shows the login form; the new identity token has a newer auth_time and sid', async () => {
    const b = await signedIn();
    const first = await idTokenOf(await b.get(authorizeUrl(web())));
    await sleep(1100); // auth_time has whole seconds
    const page = await b.follow(await b.get(authorizeUrl(web({ prompt: 'login' }))));
    expect(isLoginPage(page)).toBe(true);
    const done = await b.follow(await b.submitLogin(page, 'alice', 'alice'));
    const second = await idTokenOf(done);
    expect(second.sub).toBe(first.sub);
    expect(second.auth_time as number).toBeGreaterThan(first.auth_time as number);
    expect(second.sid).not.toBe(first.sid);
    // Resuming the same interaction again does not loop nor issue a second response.
    const again = await b.get(
      `/connect/authorize/resume?interaction=${encodeURIComponent(input(page.body, 'interaction'))}`,
    );
    expect(again.status).toBe(400);
  });

  it('prompt=login: resuming without signing in shows the login page again', async () => {
    const b = await signedIn();
    const start = await b.get(authorizeUrl(web({ prompt: 'login' })));
    const id = /interaction=([^&]+)/.exec(start.location ?? '')?.[1];
    expect(id).toBeTruthy();
    const resumed = await b.get(`/connect/authorize/resume?interaction=${id}`);
    expect(resumed.status).toBe(303);
    expect(resumed.location).toMatch(/^\/account\/login\?interaction=/);
  });

  it('prompt=select_account shows the login form', async () => {
    const b = await signedIn();
    const page = await b.follow(await b.get(authorizeUrl(web({ prompt: 'select_account' }))));
    expect(isLoginPage(page)).toBe(true);
    const done = await b.follow(await b.submitLogin(page, 'bob', 'bob'));
    expect((await idTokenOf(done)).sub).toBe('2');
  });

  it('prompt=consent shows the consent page even for a client that does not require consent', async () => {
    const b = await signedIn();
    const page = await b.follow(await b.get(authorizeUrl(web({ prompt: 'consent' }))));
    expect(isConsentPage(page)).toBe(true);
    expect(readResponse(await b.consent(page, 'yes')).params.get('code')).toBeTruthy();
  });

  it('re-authentication as another user replaces the session; the old sid yields nothing', async () => {
    const b = await signedIn('alice');
    const aliceCookie = b.cookies.get('sigil.session')!;
    const alice = await idTokenOf(await b.get(authorizeUrl(web())));
    const page = await b.follow(await b.get(authorizeUrl(web({ prompt: 'login' }))));
    const bob = await idTokenOf(await b.follow(await b.submitLogin(page, 'bob', 'bob')));
    expect(bob.sub).toBe('2');
    expect(bob.sid).not.toBe(alice.sid);
    // The old cookie no longer signs anybody in.
    const old = new Browser(sigil);
    old.cookies.set('sigil.session', aliceCookie);
    expectClientError(await old.get(authorizeUrl(web({ prompt: 'none' }))), 'login_required');
  });

  it('cancelling a re-authentication leaves the session as it was', async () => {
    const b = await signedIn('alice');
    const before = await idTokenOf(await b.get(authorizeUrl(web())));
    const page = await b.follow(await b.get(authorizeUrl(web({ prompt: 'login' }))));
    const cancelled = await b.post('/account/login', {
      csrf_token: input(page.body, 'csrf_token'),
      interaction: input(page.body, 'interaction'),
      button: 'cancel',
    });
    expectClientError(cancelled, 'access_denied', { state: 'st' });
    const after = await idTokenOf(await b.get(authorizeUrl(web({ prompt: 'none' }))));
    expect(after.sub).toBe('1');
    expect(after.sid).toBe(before.sid);
    expect(after.auth_time).toBe(before.auth_time);
  });
});

describe('max_age', () => {
  it('max_age=0 right after signing in still asks to sign in again', async () => {
    const b = await signedIn();
    const step = await b.follow(await b.get(authorizeUrl(web({ max_age: '0' }))));
    expect(isLoginPage(step)).toBe(true);
    expectClientError(await b.get(authorizeUrl(web({ max_age: '0', prompt: 'none' }))), 'login_required');
  });

  it('max_age=0 → the login form and a newer auth_time; max_age=10000 → no form; auth_time always present', async () => {
    const b = await signedIn();
    const first = await idTokenOf(await b.get(authorizeUrl(web({ max_age: '10000' }))));
    expect(first.auth_time).toBeTypeOf('number');
    expect(Math.abs((first.auth_time as number) - Date.now() / 1000)).toBeLessThan(30);
    await sleep(1100);
    const page = await b.follow(await b.get(authorizeUrl(web({ max_age: '0' }))));
    expect(isLoginPage(page)).toBe(true);
    const second = await idTokenOf(await b.follow(await b.submitLogin(page, 'alice', 'alice')));
    expect(second.auth_time as number).toBeGreaterThan(first.auth_time as number);
    const third = await idTokenOf(await b.get(authorizeUrl(web({ max_age: '10000' }))));
    expect(third.auth_time).toBe(second.auth_time);
  });

  it('max_age=1 after 2 s → the login form', async () => {
    const b = await signedIn();
    await sleep(2100);
    const page = await b.follow(await b.get(authorizeUrl(web({ max_age: '1' }))));
    expect(isLoginPage(page)).toBe(true);
    const claims = await idTokenOf(await b.follow(await b.submitLogin(page, 'alice', 'alice')));
    expect(Math.abs((claims.auth_time as number) - Date.now() / 1000)).toBeLessThan(30);
  });
});

describe('id_token_hint', () => {
  let aliceHint: string;
  let bobHint: string;
  let aliceAccessToken: string;
  beforeAll(async () => {
    const a = await idTokenOf(await (await signedIn('alice')).get(authorizeUrl(web())));
    aliceHint = a.raw;
    aliceAccessToken = a.accessToken;
    bobHint = (await idTokenOf(await (await signedIn('bob')).get(authorizeUrl(web())))).raw;
  });

  it("another user's hint with prompt=none → login_required, never the signed-in user's code", async () => {
    const b = await signedIn('alice');
    expectClientError(await b.get(authorizeUrl(web({ prompt: 'none', id_token_hint: bobHint }))), 'login_required', {
      state: 'st',
    });
    // Without prompt=none the login page is shown.
    const page = await b.follow(await b.get(authorizeUrl(web({ id_token_hint: bobHint }))));
    expect(isLoginPage(page)).toBe(true);
    // The user's own hint passes.
    expect(
      readResponse(await b.get(authorizeUrl(web({ prompt: 'none', id_token_hint: aliceHint })))).params.get('code'),
    ).toBeTruthy();
  });

  it('a hint with a broken signature, a modified payload or from another issuer → invalid_request', async () => {
    const b = await signedIn('alice');
    const [h, p, s] = aliceHint.split('.') as [string, string, string];
    const flipped = s.slice(0, -4) + (s.slice(-4) === 'AAAA' ? 'BBBB' : 'AAAA');
    const payload = JSON.parse(Buffer.from(p, 'base64url').toString());
    const modified = Buffer.from(JSON.stringify({ ...payload, sub: '2' })).toString('base64url');
    const foreign = Buffer.from(JSON.stringify({ ...payload, iss: 'https://evil.example' })).toString('base64url');
    for (const bad of [
      `${h}.${p}.${flipped}`,
      `${h}.${modified}.${s}`,
      `${h}.${foreign}.${s}`,
      `${Buffer.from('{"alg":"none","typ":"JWT"}').toString('base64url')}.${p}.`,
    ]) {
      expectClientError(await b.get(authorizeUrl(web({ prompt: 'none', id_token_hint: bad }))), 'invalid_request', {
        state: 'st',
      });
    }
  });

  it('an access token presented as id_token_hint is not accepted', async () => {
    const b = await signedIn('alice');
    expectClientError(
      await b.get(authorizeUrl(web({ prompt: 'none', id_token_hint: aliceAccessToken }))),
      'invalid_request',
    );
  });

  it("the user's expired but genuine hint is accepted", async () => {
    const b = await signedIn('alice');
    // Its lifetime is one second (exp whole seconds after iat): checked with leeway, since it may be over already.
    const short = await idTokenOf(await b.get(authorizeUrl(web({ client_id: 'short' }))), 'short', 5);
    await sleep(2100);
    const r = readResponse(await b.get(authorizeUrl(web({ prompt: 'none', id_token_hint: short.raw }))));
    expect(r.params.get('code')).toBeTruthy();
  });
});

describe('acr_values tenant:<name>', () => {
  it('a session outside the tenant needs a login; only the tenant users can sign in', async () => {
    const b = await signedIn('alice');
    expectClientError(await b.get(authorizeUrl(web({ acr_values: 'tenant:acme', prompt: 'none' }))), 'login_required');
    const page = await b.follow(await b.get(authorizeUrl(web({ acr_values: 'tenant:acme' }))));
    expect(isLoginPage(page)).toBe(true);
    expect(page.body).toContain('acme');
    const refused = await b.submitLogin(page, 'alice', 'alice');
    expect(refused.status).toBe(200);
    expect(refused.body).toContain('The username or password is incorrect.');
    const page2 = await b.get(`/account/login?interaction=${encodeURIComponent(input(page.body, 'interaction'))}`);
    const carol = await idTokenOf(await b.follow(await b.submitLogin(page2, 'carol', 'carol')));
    expect(carol.sub).toBe('3');
    expect(
      readResponse(await b.get(authorizeUrl(web({ acr_values: 'tenant:acme', prompt: 'none' })))).params.get('code'),
    ).toBeTruthy();
    expectClientError(await b.get(authorizeUrl(web({ acr_values: 'tenant:other', prompt: 'none' }))), 'login_required');
  });
});
