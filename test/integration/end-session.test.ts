/**
 * End session, `/connect/endsession` (security-checklist §1.13 LO-01..LO-11; OpenID Connect
 * RP-Initiated Logout 1.0; DESIGN §6): a genuine id_token_hint for the signed-in user signs out
 * at once and goes to a post_logout_redirect_uri registered exactly for the hint's client (with
 * state); anything else asks for confirmation on the logout page and never redirects to the URI.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sleep, type TestSigil } from '../helpers.js';
import {
  authorizeUrl,
  Browser,
  BYE,
  codeParams,
  expectClientError,
  input,
  pkce,
  readResponse,
  redeem,
  type Step,
  startAuthorizeSigil,
} from '../authorize-helpers.js';

let sigil: TestSigil;
const { verifier, challenge } = pkce();

beforeAll(async () => {
  sigil = await startAuthorizeSigil();
});
afterAll(async () => sigil.close());

/** A signed-in browser for `user` and an identity token issued to `client` in that session. */
async function session(user = 'alice', client = 'web', redirectUri = 'https://rp.example/cb'): Promise<{ b: Browser; hint: string }> {
  const b = new Browser(sigil);
  await b.signIn(user);
  const r = readResponse(await b.get(authorizeUrl(codeParams(challenge, { client_id: client, redirect_uri: redirectUri, scope: client === 'spa' ? 'openid' : 'openid profile' }))));
  const res = await redeem(sigil, r.params.get('code')!, { client, verifier, redirectUri, ...(client === 'spa' ? { secret: null } : {}) });
  expect(res.statusCode, res.body).toBe(200);
  return { b, hint: res.json().id_token };
}

function endSession(b: Browser, params: Record<string, string>, method: 'GET' | 'POST' = 'GET'): Promise<Step> {
  return method === 'GET' ? b.get(`/connect/endsession?${new URLSearchParams(params)}`) : b.post('/connect/endsession', params);
}

/** Whether the browser's session still yields a code with prompt=none. */
async function signedIn(b: Browser): Promise<boolean> {
  const step = await b.get(authorizeUrl(codeParams(challenge, { prompt: 'none' })));
  const r = readResponse(step);
  if (r.params.get('code')) return true;
  expect(r.params.get('error')).toBe('login_required');
  return false;
}

/** Asserts the browser was sent to the confirmation page (not signed out, nothing toward the client). */
async function expectConfirmation(b: Browser, step: Step, uri?: string): Promise<Step> {
  expect(step.status).toBe(303);
  expect(step.location).toMatch(/^\/account\/logout(\?|$)/);
  const page = await b.follow(step);
  expect(page.status).toBe(200);
  expect(String(page.headers['content-type'])).toMatch(/^text\/html/);
  expect(page.body).toContain('name="button" value="logout"');
  expect(page.body).toContain('name="csrf_token"');
  if (uri) expect(page.body).not.toContain(uri);
  expect(page.body).not.toMatch(/http-equiv|<script/i);
  return page;
}

/** Presses "sign out" on a confirmation page and checks the signed-out page links nowhere. */
async function confirm(b: Browser, page: Step): Promise<Step> {
  const done = await b.post('/account/logout', { csrf_token: input(page.body, 'csrf_token'), button: 'logout' });
  expect(done.status).toBe(200);
  expect(done.location).toBeUndefined();
  expect(done.body).toContain('You are now signed out.');
  expect(done.body).not.toMatch(/href="(?!\/assets\/)|http-equiv|<script/i);
  return done;
}

describe('LO-01 methods', () => {
  it('GET and POST without a hint answer 303 to the logout page; PUT and DELETE are 405', async () => {
    const b = new Browser(sigil);
    for (const method of ['GET', 'POST'] as const) {
      const step = await endSession(b, {}, method);
      expect(step.status).toBe(303);
      expect(step.location).toBe('/account/logout');
    }
    for (const method of ['PUT', 'DELETE'] as const) {
      const res = await sigil.app.inject({ method, url: '/connect/endsession' });
      expect(res.statusCode).toBe(405);
    }
  });
});

describe('with a genuine hint for the signed-in user', () => {
  it('LO-02 signs out at once and redirects to the registered URI with state (GET and POST)', async () => {
    for (const method of ['GET', 'POST'] as const) {
      const { b, hint } = await session();
      const cookie = b.cookies.get('sigil.session')!;
      const step = await endSession(b, { id_token_hint: hint, post_logout_redirect_uri: BYE, state: 's' }, method);
      expect(step.status).toBe(303);
      expect(step.location).toBe(`${BYE}?state=s`);
      expect(String(step.headers['cache-control'])).toContain('no-store');
      expect(await signedIn(b)).toBe(false);
      // LO-10 the old cookie does not restore the session.
      const replay = new Browser(sigil);
      replay.cookies.set('sigil.session', cookie);
      expect(await signedIn(replay)).toBe(false);
    }
  });

  it('LO-08 state is returned unchanged, and only on that redirect', async () => {
    const state = 'a b+c%&=\u{1F511}';
    const { b, hint } = await session();
    const step = await endSession(b, { id_token_hint: hint, post_logout_redirect_uri: BYE, state });
    expect(new URL(step.location!).searchParams.get('state')).toBe(state);
    const noState = await session();
    expect((await endSession(noState.b, { id_token_hint: noState.hint, post_logout_redirect_uri: BYE })).location).toBe(BYE);
  });

  it('a registered non-ASCII URI is redirected to percent-encoded', async () => {
    const { b, hint } = await session();
    const step = await endSession(b, { id_token_hint: hint, post_logout_redirect_uri: 'https://rp.example/\u043f\u043e\u043a\u0430', state: 's' });
    expect(step.status).toBe(303);
    expect(step.location).toBe('https://rp.example/%D0%BF%D0%BE%D0%BA%D0%B0?state=s');
  });

  it('without post_logout_redirect_uri: signed out, the signed-out page', async () => {
    const { b, hint } = await session();
    const page = await b.follow(await endSession(b, { id_token_hint: hint, state: 's', ui_locales: 'de' }));
    expect(page.status).toBe(200);
    expect(page.body).toContain('Sie sind jetzt abgemeldet.');
    expect(page.body).not.toContain('state');
    expect(await signedIn(b)).toBe(false);
  });

  it('LO-03 a URI not registered exactly is never redirected to; the browser ends on an AS page without it or the state', async () => {
    for (const uri of ['https://rp.example/bye/', 'https://rp.example/bye?x=1', 'https://RP.example/bye', 'https://attacker.example/bye', 'https://rp.example/cb']) {
      const { b, hint } = await session();
      const step = await endSession(b, { id_token_hint: hint, post_logout_redirect_uri: uri, state: 'secret-state' });
      if (step.location !== undefined) expect(step.location).toMatch(/^\/(?![/\\])/);
      const page = await b.follow(step);
      expect(page.status).toBe(200);
      expect(String(page.headers['content-type'])).toMatch(/^text\/html/);
      expect(page.body).not.toContain(uri);
      expect(page.body).not.toContain('attacker');
      expect(page.body).not.toContain('secret-state');
      expect(page.body).not.toMatch(/http-equiv|<script/i);
    }
  });

  it("LO-03 a URI registered for another client than the hint's is not used", async () => {
    const { b, hint } = await session('alice', 'spa', 'https://spa.example/cb');
    const step = await endSession(b, { id_token_hint: hint, post_logout_redirect_uri: BYE, state: 's' });
    if (step.location !== undefined) expect(step.location.startsWith('/')).toBe(true);
    const page = await b.follow(step);
    expect(page.body).not.toContain(BYE);
  });

  it('LO-07 an expired but genuine hint is accepted', async () => {
    const { b, hint } = await session('alice', 'short');
    await sleep(2100);
    const step = await endSession(b, { id_token_hint: hint, post_logout_redirect_uri: BYE, state: 's' });
    expect(step.location).toBe(`${BYE}?state=s`);
    expect(await signedIn(b)).toBe(false);
  });

  it('with no session at all, a genuine hint still gets the redirect', async () => {
    const { hint } = await session();
    const fresh = new Browser(sigil);
    const step = await endSession(fresh, { id_token_hint: hint, post_logout_redirect_uri: BYE, state: 's' });
    expect(step.location).toBe(`${BYE}?state=s`);
  });
});

describe('without a trustworthy hint the user is asked', () => {
  it('LO-04 post_logout_redirect_uri without a hint → confirmation page, never the URI', async () => {
    const { b } = await session();
    const page = await expectConfirmation(b, await endSession(b, { post_logout_redirect_uri: BYE, state: 's' }), BYE);
    expect(await signedIn(b)).toBe(true);
    const done = await confirm(b, page);
    expect(done.body).not.toContain(BYE);
    expect(await signedIn(b)).toBe(false);
  });

  it("LO-05 client_id that is not the hint's audience → confirmation; the session survives until confirmed", async () => {
    const { b, hint } = await session();
    const page = await expectConfirmation(b, await endSession(b, { id_token_hint: hint, client_id: 'other', post_logout_redirect_uri: BYE, state: 's' }), BYE);
    expect(await signedIn(b)).toBe(true);
    await confirm(b, page);
    expect(await signedIn(b)).toBe(false);
  });

  it('LO-06 a hint with a bad signature, a foreign issuer or a modified payload → confirmation, session kept', async () => {
    const { b, hint } = await session();
    const [h, p, s] = hint.split('.') as [string, string, string];
    const claims = JSON.parse(Buffer.from(p, 'base64url').toString());
    const enc = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64url');
    for (const bad of [
      `${h}.${p}.${s.slice(0, -4)}${s.endsWith('AAAA') ? 'BBBB' : 'AAAA'}`,
      `${h}.${enc({ ...claims, iss: 'https://evil.example' })}.${s}`,
      `${h}.${enc({ ...claims, sub: '2' })}.${s}`,
      `${enc({ alg: 'none', typ: 'JWT' })}.${p}.`,
      'not-a-token',
    ]) {
      await expectConfirmation(b, await endSession(b, { id_token_hint: bad, post_logout_redirect_uri: BYE, state: 's' }), BYE);
      expect(await signedIn(b)).toBe(true);
    }
  });

  it("a genuine hint for another user than the signed-in one → confirmation, that user's session kept", async () => {
    const alice = await session('alice');
    const bob = await session('bob');
    await expectConfirmation(bob.b, await endSession(bob.b, { id_token_hint: alice.hint, post_logout_redirect_uri: BYE }), BYE);
    expect(await signedIn(bob.b)).toBe(true);
  });

  it('LO-09 a GET alone never ends the session; the confirm POST needs the CSRF token', async () => {
    const { b } = await session();
    const page = await expectConfirmation(b, await endSession(b, {}));
    expect(await signedIn(b)).toBe(true);
    expect((await b.get('/account/logout')).status).toBe(200);
    expect(await signedIn(b)).toBe(true);
    const noCsrf = await b.post('/account/logout', { button: 'logout' });
    expect(noCsrf.status).toBe(403);
    expect(await signedIn(b)).toBe(true);
    const crossSite = await b.post('/account/logout', { csrf_token: input(page.body, 'csrf_token'), button: 'logout' }, { origin: 'https://attacker.example' });
    expect(crossSite.status).toBe(403);
    expect(await signedIn(b)).toBe(true);
    await confirm(b, page);
    // LO-10 after logout prompt=none → login_required.
    expectClientError(await b.get(authorizeUrl(codeParams(challenge, { prompt: 'none' }))), 'login_required', { state: 'st' });
  });

  it('LO-11 logging out while not signed in ends on the signed-out page, no error', async () => {
    const b = new Browser(sigil);
    const step = await endSession(b, { post_logout_redirect_uri: BYE, state: 's' });
    expect(step.status).toBe(303);
    expect(step.location).toMatch(/^\/account\/logout/);
    const page = await b.follow(step);
    expect(page.status).toBe(200);
    expect(String(page.headers['content-type'])).toMatch(/^text\/html/);
    expect(page.body).toContain('You are now signed out.');
    expect(page.body).not.toContain(BYE);
  });

  it('a malformed end-session query is an error page, not a 5xx', async () => {
    const b = new Browser(sigil);
    const res = await b.get('/connect/endsession?id_token_hint=%E0%A4%A');
    expect(res.status).toBe(400);
    expect(String(res.headers['content-type'])).toMatch(/^text\/html/);
  });
});
