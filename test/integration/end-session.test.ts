/**
 * End session, `/connect/endsession` (OpenID Connect RP-Initiated Logout 1.0 §2, §3): a genuine
 * id_token_hint for the signed-in user signs out at once and goes to a post_logout_redirect_uri
 * registered exactly for the hint's client (with state). A post_logout_redirect_uri that is not
 * registered, or that comes without a way to tell the client, and a client_id that is not the
 * hint's, end on an error page naming the problem, the session kept. Anything else asks for
 * confirmation on the logout page first.
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
async function session(
  user = 'alice',
  client = 'web',
  redirectUri = 'https://rp.example/cb',
): Promise<{ b: Browser; hint: string }> {
  const b = new Browser(sigil);
  await b.signIn(user);
  const r = readResponse(
    await b.get(
      authorizeUrl(
        codeParams(challenge, {
          client_id: client,
          redirect_uri: redirectUri,
          scope: client === 'spa' ? 'openid' : 'openid profile',
        }),
      ),
    ),
  );
  const res = await redeem(sigil, r.params.get('code')!, {
    client,
    verifier,
    redirectUri,
    ...(client === 'spa' ? { secret: null } : {}),
  });
  expect(res.statusCode, res.body).toBe(200);
  return { b, hint: res.json().id_token };
}

function endSession(b: Browser, params: Record<string, string>, method: 'GET' | 'POST' = 'GET'): Promise<Step> {
  return method === 'GET'
    ? b.get(`/connect/endsession?${new URLSearchParams(params)}`)
    : b.post('/connect/endsession', params);
}

/** Whether the browser's session still yields a code with prompt=none. */
async function signedIn(b: Browser): Promise<boolean> {
  const step = await b.get(authorizeUrl(codeParams(challenge, { prompt: 'none' })));
  const r = readResponse(step);
  if (r.params.get('code')) return true;
  expect(r.params.get('error')).toBe('login_required');
  return false;
}

/**
 * Asserts the browser is on the confirmation page (not signed out, no redirect toward the client).
 * `uri`: a URI the page must not name.
 */
function expectConfirmation(page: Step, uri?: string): Step {
  expect(page.status).toBe(200);
  expect(page.location).toBeUndefined();
  expect(String(page.headers['content-type'])).toMatch(/^text\/html/);
  expect(page.body).toContain('name="button" value="logout"');
  expect(page.body).toContain('name="csrf_token"');
  if (uri) expect(page.body).not.toContain(uri);
  expect(page.body).not.toMatch(/http-equiv|<script/i);
  return page;
}

/** Asserts an end-session request ended on the error page with `problem` and nothing toward the client. */
function expectLogoutError(page: Step, problem: RegExp, ...absent: string[]): void {
  expect(page.status).toBe(400);
  expect(page.location).toBeUndefined();
  expect(String(page.headers['content-type'])).toMatch(/^text\/html/);
  expect(page.body).toContain('invalid_request');
  expect(page.body).toMatch(problem);
  for (const text of absent) expect(page.body).not.toContain(text);
  expect(page.body).not.toMatch(/http-equiv|<script|name="button"/i);
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

describe('HTTP methods', () => {
  it('GET and POST without a hint show the confirmation; PUT and DELETE are 405', async () => {
    const { b } = await session();
    for (const method of ['GET', 'POST'] as const) expectConfirmation(await endSession(b, {}, method));
    for (const method of ['PUT', 'DELETE'] as const) {
      const res = await sigil.app.inject({ method, url: '/connect/endsession' });
      expect(res.statusCode).toBe(405);
    }
  });
});

describe('with a genuine hint for the signed-in user', () => {
  it('signs out at once and redirects to the registered URI with state (GET and POST)', async () => {
    for (const method of ['GET', 'POST'] as const) {
      const { b, hint } = await session();
      const cookie = b.cookies.get('sigil.session')!;
      const step = await endSession(b, { id_token_hint: hint, post_logout_redirect_uri: BYE, state: 's' }, method);
      expect(step.status).toBe(303);
      expect(step.location).toBe(`${BYE}?state=s`);
      expect(String(step.headers['cache-control'])).toContain('no-store');
      expect(await signedIn(b)).toBe(false);
      // The old cookie does not restore the session.
      const replay = new Browser(sigil);
      replay.cookies.set('sigil.session', cookie);
      expect(await signedIn(replay)).toBe(false);
    }
  });

  it('state is returned unchanged, and only on that redirect', async () => {
    const state = 'a b+c%&=\u{1F511}';
    const { b, hint } = await session();
    const step = await endSession(b, { id_token_hint: hint, post_logout_redirect_uri: BYE, state });
    expect(new URL(step.location!).searchParams.get('state')).toBe(state);
    const noState = await session();
    expect((await endSession(noState.b, { id_token_hint: noState.hint, post_logout_redirect_uri: BYE })).location).toBe(
      BYE,
    );
  });

  it('a registered non-ASCII URI is redirected to percent-encoded', async () => {
    const { b, hint } = await session();
    const step = await endSession(b, {
      id_token_hint: hint,
      post_logout_redirect_uri: 'https://rp.example/\u043f\u043e\u043a\u0430',
      state: 's',
    });
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

  it('a URI not registered exactly is never redirected to: error page naming it, session kept', async () => {
    const { b, hint } = await session();
    for (const uri of [
      'https://rp.example/bye/',
      'https://rp.example/bye?x=1',
      `${BYE}?foo=bar`,
      'https://RP.example/bye',
      'https://attacker.example/bye',
      'https://rp.example/cb',
    ]) {
      const page = await endSession(b, { id_token_hint: hint, post_logout_redirect_uri: uri, state: 'secret-state' });
      expectLogoutError(
        page,
        /post_logout_redirect_uri is not registered for the client/,
        uri,
        'attacker',
        'secret-state',
      );
      expect(await signedIn(b)).toBe(true);
    }
  });

  it("a URI registered for another client than the hint's is not used: error page", async () => {
    const { b, hint } = await session('alice', 'spa', 'https://spa.example/cb');
    expectLogoutError(
      await endSession(b, { id_token_hint: hint, post_logout_redirect_uri: BYE, state: 's' }),
      /not registered for the client/,
      BYE,
    );
    expect(await signedIn(b)).toBe(true);
  });

  it("client_id equal to the hint's audience is accepted (§2)", async () => {
    const { b, hint } = await session();
    const step = await endSession(b, {
      id_token_hint: hint,
      client_id: 'web',
      post_logout_redirect_uri: BYE,
      state: 's',
    });
    expect(step.location).toBe(`${BYE}?state=s`);
    expect(await signedIn(b)).toBe(false);
  });

  it('an expired but genuine hint is accepted', async () => {
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

describe('without a trustworthy hint the user is asked, a wrong request is refused', () => {
  it('post_logout_redirect_uri without a hint or client_id → error page: the client is unknown', async () => {
    const { b } = await session();
    expectLogoutError(
      await endSession(b, { post_logout_redirect_uri: BYE, state: 's' }),
      /needs a valid id_token_hint or client_id/,
      BYE,
    );
    expect(await signedIn(b)).toBe(true);
  });

  it('client_id without a hint and a registered URI → confirmation, then the redirect with state', async () => {
    const { b } = await session();
    const page = expectConfirmation(
      await endSession(b, { client_id: 'web', post_logout_redirect_uri: BYE, state: 's' }),
    );
    expect(await signedIn(b)).toBe(true);
    const done = await b.post('/account/logout', {
      csrf_token: input(page.body, 'csrf_token'),
      client_id: input(page.body, 'client_id'),
      post_logout_redirect_uri: input(page.body, 'post_logout_redirect_uri'),
      state: input(page.body, 'state'),
      button: 'logout',
    });
    expect(done.status).toBe(303);
    expect(done.location).toBe(`${BYE}?state=s`);
    expect(await signedIn(b)).toBe(false);
  });

  it('a confirmation whose carried URI was altered is refused and changes nothing', async () => {
    const { b } = await session();
    const page = expectConfirmation(await endSession(b, { client_id: 'web', post_logout_redirect_uri: BYE }));
    const done = await b.post('/account/logout', {
      csrf_token: input(page.body, 'csrf_token'),
      client_id: 'web',
      post_logout_redirect_uri: 'https://attacker.example/',
      button: 'logout',
    });
    expectLogoutError(done, /not registered/, 'attacker');
    expect(await signedIn(b)).toBe(true);
  });

  it("client_id that is not the hint's audience, or unknown → error page; the session survives", async () => {
    const { b, hint } = await session();
    expectLogoutError(
      await endSession(b, { id_token_hint: hint, client_id: 'other', post_logout_redirect_uri: BYE, state: 's' }),
      /not the client the id_token_hint was issued to/,
      BYE,
    );
    expectLogoutError(
      await endSession(b, { client_id: 'no-such-client' }),
      /names no registered client/,
      'no-such-client',
    );
    expect(await signedIn(b)).toBe(true);
  });

  it('a hint with a bad signature, a foreign issuer or a modified payload counts as none: with a URI an error page, without one the confirmation', async () => {
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
      expectLogoutError(
        await endSession(b, { id_token_hint: bad, post_logout_redirect_uri: BYE, state: 's' }),
        /needs a valid id_token_hint or client_id/,
        BYE,
      );
      expectConfirmation(await endSession(b, { id_token_hint: bad }));
      expect(await signedIn(b)).toBe(true);
    }
  });

  it("a genuine hint for another user than the signed-in one → confirmation, that user's session kept", async () => {
    const alice = await session('alice');
    const bob = await session('bob');
    expectConfirmation(await endSession(bob.b, { id_token_hint: alice.hint, post_logout_redirect_uri: BYE }));
    expect(await signedIn(bob.b)).toBe(true);
  });

  it('a GET alone never ends the session; the confirm POST needs the CSRF token', async () => {
    const { b } = await session();
    const page = expectConfirmation(await endSession(b, {}));
    expect(await signedIn(b)).toBe(true);
    expect((await b.get('/account/logout')).status).toBe(200);
    expect(await signedIn(b)).toBe(true);
    const noCsrf = await b.post('/account/logout', { button: 'logout' });
    expect(noCsrf.status).toBe(403);
    expect(await signedIn(b)).toBe(true);
    const crossSite = await b.post(
      '/account/logout',
      { csrf_token: input(page.body, 'csrf_token'), button: 'logout' },
      { origin: 'https://attacker.example' },
    );
    expect(crossSite.status).toBe(403);
    expect(await signedIn(b)).toBe(true);
    await confirm(b, page);
    // After logout prompt=none → login_required.
    expectClientError(await b.get(authorizeUrl(codeParams(challenge, { prompt: 'none' }))), 'login_required', {
      state: 'st',
    });
  });

  it('logging out while not signed in ends on the signed-out page, no error', async () => {
    const b = new Browser(sigil);
    const page = await endSession(b, { state: 's' });
    expect(page.status).toBe(200);
    expect(String(page.headers['content-type'])).toMatch(/^text\/html/);
    expect(page.body).toContain('You are now signed out.');
    expect(page.body).not.toContain('state');
  });

  it('a malformed end-session query is an error page, not a 5xx', async () => {
    const b = new Browser(sigil);
    const res = await b.get('/connect/endsession?id_token_hint=%E0%A4%A');
    expect(res.status).toBe(400);
    expect(String(res.headers['content-type'])).toMatch(/^text\/html/);
  });
});
