/**
 * The device authorization grant (RFC 8628) over `app.inject`: the device authorization endpoint,
 * polling at the token endpoint, and the `/device` pages with the inject browser. The real browser
 * and the example client are in test/e2e/device-browser.test.ts.
 */
import type { LightMyRequestResponse } from 'fastify';
import { jwtVerify } from 'jose';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { InjectBrowser, type Step } from '../browser-helpers.js';
import type { DeviceCodeData } from '../../src/stores/records/device-codes.js';
import { hashHandle } from '../../src/crypto/handles.js';
import {
  type BasicCredentials,
  dropSchema,
  expectNoLeak,
  fetchJwks,
  POSTGRES_URL,
  postForm,
  sleep,
  startSigil,
  testConfig,
  type TestSigil,
  type TokenBody,
  uniqueSchema,
} from '../helpers.js';

const GRANT = 'urn:ietf:params:oauth:grant-type:device_code';
const ISSUER = 'http://127.0.0.1:5999';
const ALPHABET = 'BCDFGHJKLMNPQRSTVWXZ';
const USER_CODE = new RegExp(`^[${ALPHABET}]{4}-[${ALPHABET}]{4}$`);
const ALL_TV_SCOPES = ['api1', 'offline_access', 'openid', 'profile'];
const INVALID_CODE = 'This code is not valid or has expired.';
const DEVICE_WARNING = 'A device is asking for access to your account.';

/** The fixture clients plus three device clients (public, confidential, short-lived codes) polling every second. */
function deviceConfig(rateLimits: { maxFailures: number; windowSeconds: number }) {
  const base = testConfig();
  const device = {
    allowedGrantTypes: [GRANT, 'refresh_token'],
    allowedScopes: ['openid', 'profile', 'api1', 'offline_access'],
    allowOfflineAccess: true,
    pollingInterval: 1,
  };
  return {
    rateLimits,
    // Every device in this suite asks from one address: room for its few hundred authorizations
    // (the limits themselves are tested in pending-limits.test.ts).
    pendingLimits: { deviceAuthorizationsPerAddress: 10_000, deviceAuthorizationsPerClient: 10_000 },
    clients: [
      ...(base.clients ?? []),
      { clientId: 'tv', clientName: 'Living Room TV', requireClientSecret: false, ...device },
      { clientId: 'tvc', clientName: 'Confidential TV', clientSecrets: ['tvc-secret'], ...device },
      { clientId: 'tv-short', clientName: 'Short TV', requireClientSecret: false, ...device, deviceCodeLifetime: 3 },
    ],
  };
}

interface DeviceResponse {
  device_code: string;
  user_code: string;
  verification_uri: string;
  verification_uri_complete: string;
  expires_in: number;
  interval: number;
}

let sigil: TestSigil;
beforeAll(async () => {
  // A high failure limit here: the brute-force test has its own provider with a low one.
  sigil = await startSigil(deviceConfig({ maxFailures: 100, windowSeconds: 60 }));
});
afterAll(async () => sigil?.close());

/** `POST /connect/deviceauthorization`. */
function deviceAuthorization(s: TestSigil, params: Record<string, string>, auth?: BasicCredentials) {
  return postForm(s, '/connect/deviceauthorization', params, auth);
}

/** A device authorization that must succeed. */
async function startDevice(s: TestSigil, clientId = 'tv', scope?: string): Promise<DeviceResponse> {
  const res = await deviceAuthorization(s, { client_id: clientId, ...(scope !== undefined ? { scope } : {}) });
  if (res.statusCode !== 200) throw new Error(`device authorization failed: ${res.statusCode} ${res.body}`);
  return res.json<DeviceResponse>();
}

/** A device poll at the token endpoint (public client by `client_id`, or Basic credentials). */
function poll(
  s: TestSigil,
  deviceCode: string | undefined,
  client: string | BasicCredentials = 'tv',
): Promise<LightMyRequestResponse> {
  const params: Record<string, string> = {
    grant_type: GRANT,
    ...(deviceCode !== undefined ? { device_code: deviceCode } : {}),
  };
  if (typeof client === 'string') return postForm(s, '/connect/token', { ...params, client_id: client });
  return postForm(s, '/connect/token', params, client);
}

/** The `error` of a 400 token-endpoint answer (fails on anything else). */
async function pollError(
  s: TestSigil,
  deviceCode: string | undefined,
  client: string | BasicCredentials = 'tv',
): Promise<string> {
  const res = await poll(s, deviceCode, client);
  expectNoLeak(res);
  expect(res.statusCode, res.body).toBe(400);
  return res.json<{ error: string }>().error;
}

/** A browser with a session of `user` (no pending request). */
async function signedIn(s: TestSigil, user = 'alice'): Promise<InjectBrowser> {
  const b = new InjectBrowser(s.app);
  const done = await b.login('/account/login', user, user);
  expect(done.status).toBe(200);
  return b;
}

/** Opens `/device` and submits `userCode` with the page's CSRF token. */
async function enterCode(b: InjectBrowser, userCode: string): Promise<Step> {
  const page = await b.get('/device');
  return b.post('/device', { csrf_token: InjectBrowser.input(page.body, 'csrf_token'), userCode, button: 'submit' });
}

/**
 * Enters the code, signs in when the page asks, and answers the consent page.
 * @returns the consent page and the page after the answer
 */
async function answer(
  b: InjectBrowser,
  userCode: string,
  button: 'yes' | 'no',
  user = 'alice',
): Promise<{ consent: Step; done: Step }> {
  const entered = await enterCode(b, userCode);
  expect(entered.status, entered.body).toBe(303);
  const consent = entered.location!.startsWith('/account/login')
    ? await b.login(entered.location!, user, user)
    : await b.follow(entered);
  expect(consent.status).toBe(200);
  expect(consent.body).toContain('action="/consent"');
  const done = await b.follow(
    await b.post('/consent', {
      csrf_token: InjectBrowser.input(consent.body, 'csrf_token'),
      interaction: InjectBrowser.input(consent.body, 'interaction'),
      button,
    }),
  );
  expect(done.status).toBe(200);
  return { consent, done };
}

/** Expects the `/device` page again with the "invalid or expired code" message, never consent. */
function expectInvalidCode(step: Step): void {
  expect(step.status).toBeLessThan(500);
  expect(step.location).toBeUndefined();
  expect(step.body).toContain(INVALID_CODE);
  expect(step.body).toContain('action="/device"');
  expect(step.body).not.toContain('action="/consent"');
}

function expectNoStore(res: LightMyRequestResponse): void {
  expect(res.headers['cache-control']).toContain('no-store');
}

describe('device authorization endpoint', () => {
  it('answers the codes, the verification URIs, the lifetime and the interval, uncached', async () => {
    const res = await deviceAuthorization(sigil, { client_id: 'tv', scope: 'openid offline_access' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expectNoStore(res);
    const d = res.json<DeviceResponse>();
    expect(Object.keys(d).sort()).toEqual([
      'device_code',
      'expires_in',
      'interval',
      'user_code',
      'verification_uri',
      'verification_uri_complete',
    ]);
    expect(d.device_code).toMatch(/^[A-Za-z0-9_-]{43,}$/);
    expect(d.user_code).toMatch(USER_CODE);
    expect(d.verification_uri).toBe(`${ISSUER}/device`);
    const complete = new URL(d.verification_uri_complete);
    expect(`${complete.origin}${complete.pathname}`).toBe(`${ISSUER}/device`);
    expect(complete.searchParams.get('userCode')).toBe(d.user_code);
    expect(d.expires_in).toBe(300);
    expect(d.interval).toBe(1);
    expect((await startDevice(sigil, 'tv-short')).expires_in).toBe(3);
  });

  it('GET, a JSON body, no client, an unknown client, a client without the grant and a bad scope are refused in the token endpoint format', async () => {
    const expectError = (res: LightMyRequestResponse, status: number, error: string) => {
      expectNoLeak(res);
      expect(res.statusCode, res.body).toBe(status);
      expect(res.headers['content-type']).toMatch(/^application\/json/);
      expectNoStore(res);
      const body = res.json<{ error: string; error_description?: string }>();
      expect(body.error).toBe(error);
      expect(typeof body.error_description).toBe('string');
    };
    expectError(
      await sigil.app.inject({ method: 'GET', url: '/connect/deviceauthorization?client_id=tv' }),
      400,
      'invalid_request',
    );
    expectError(
      await sigil.app.inject({
        method: 'POST',
        url: '/connect/deviceauthorization',
        headers: { 'content-type': 'application/json' },
        payload: JSON.stringify({ client_id: 'tv' }),
      }),
      400,
      'invalid_request',
    );
    expectError(await deviceAuthorization(sigil, { scope: 'openid' }), 401, 'invalid_client');
    expectError(await deviceAuthorization(sigil, { client_id: 'nobody' }), 401, 'invalid_client');
    const basicUnknown = await deviceAuthorization(sigil, {}, ['nobody', 'x']);
    expectError(basicUnknown, 401, 'invalid_client');
    expect(basicUnknown.headers['www-authenticate']).toMatch(/^Basic/);
    expectError(await deviceAuthorization(sigil, {}, ['ropc', 'ropc-secret']), 400, 'unauthorized_client');
    expectError(await deviceAuthorization(sigil, { client_id: 'spa' }), 400, 'unauthorized_client');
    expectError(await deviceAuthorization(sigil, { client_id: 'tv', scope: 'admin' }), 400, 'invalid_scope');
    // `email` exists but `tv` may not ask for it (CVE-2024-52287: never scopes outside the client's).
    expectError(await deviceAuthorization(sigil, { client_id: 'tv', scope: 'openid email' }), 400, 'invalid_scope');
  });

  it('the confidential device client needs its secret, at the endpoint and when polling', async () => {
    const noSecret = await deviceAuthorization(sigil, { client_id: 'tvc' });
    expect(noSecret.statusCode).toBe(401);
    expect(noSecret.json().error).toBe('invalid_client');
    const wrong = await deviceAuthorization(sigil, {}, ['tvc', 'wrong']);
    expect(wrong.statusCode).toBe(401);
    expect(wrong.json().error).toBe('invalid_client');
    expect((await deviceAuthorization(sigil, { client_id: 'tvc', client_secret: 'tvc-secret' })).statusCode).toBe(200);
    const viaBasic = await deviceAuthorization(sigil, { scope: 'openid' }, ['tvc', 'tvc-secret']);
    expect(viaBasic.statusCode).toBe(200);
    const d = viaBasic.json<DeviceResponse>();

    const unauthenticated = await poll(sigil, d.device_code, 'tvc');
    expect(unauthenticated.statusCode).toBe(401);
    expect(unauthenticated.json().error).toBe('invalid_client');
    const wrongSecret = await poll(sigil, d.device_code, ['tvc', 'wrong']);
    expect(wrongSecret.statusCode).toBe(401);
    expect(wrongSecret.json().error).toBe('invalid_client');
    expect(await pollError(sigil, d.device_code, ['tvc', 'tvc-secret'])).toBe('authorization_pending');
  });

  it('an omitted scope asks for every scope the client is allowed', async () => {
    const d = await startDevice(sigil, 'tv');
    const { consent } = await answer(await signedIn(sigil), d.user_code, 'yes');
    expect([...consent.body.matchAll(/<li>/g)]).toHaveLength(ALL_TV_SCOPES.length);
    const res = await poll(sigil, d.device_code);
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json<TokenBody>().scope.split(' ').sort()).toEqual(ALL_TV_SCOPES);
  });

  it('device codes carry at least 256 bits; 200 user codes are distinct and from the alphabet', async () => {
    const answers: DeviceResponse[] = [];
    for (let batch = 0; batch < 4; batch++)
      answers.push(...(await Promise.all(Array.from({ length: 50 }, () => startDevice(sigil, 'tv', 'api1')))));
    const userCodes = answers.map((d) => d.user_code);
    for (const code of userCodes) expect(code).toMatch(USER_CODE);
    expect(new Set(userCodes).size).toBe(200);
    const deviceCodes = answers.map((d) => d.device_code);
    for (const code of deviceCodes) expect(Buffer.from(code, 'base64url').length).toBeGreaterThanOrEqual(32);
    expect(new Set(deviceCodes).size).toBe(200);
  });

  it('discovery advertises the device authorization endpoint and the grant type', async () => {
    const res = await sigil.app.inject({ method: 'GET', url: '/.well-known/openid-configuration' });
    const doc = res.json<{ device_authorization_endpoint: string; grant_types_supported: string[] }>();
    expect(doc.device_authorization_endpoint).toBe(`${ISSUER}/connect/deviceauthorization`);
    expect(doc.grant_types_supported).toContain(GRANT);
  });
});

// Intervals and expiry against Sigil's clock (Date only; timers run), moved on instead of slept
// through: with real time, two polls meant to come "at once" could be a full 1 s interval apart on a
// slow machine (pending instead of slow_down), and the 3 s code of 'tv-short' could expire during
// the sign-in and denial meant to come before it. The clock is shared, so these run in order.
describe('polling the token endpoint: intervals and expiry', () => {
  const later = (ms: number) => vi.setSystemTime(Date.now() + ms);
  beforeEach(() => {
    // From a whole second: code lifetimes are whole seconds, so the polls fall where they are meant.
    vi.useFakeTimers({ toFake: ['Date'], now: (Math.floor(Date.now() / 1000) + 1) * 1000 });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('authorization_pending at the interval; slow_down when faster, and the interval grows by 5 s', async () => {
    const [a, b] = await Promise.all([startDevice(sigil, 'tv', 'openid'), startDevice(sigil, 'tv', 'openid')]);
    // 0 s
    expect(await pollError(sigil, a.device_code)).toBe('authorization_pending');
    expect(await pollError(sigil, b.device_code)).toBe('authorization_pending');
    expect(await pollError(sigil, b.device_code)).toBe('slow_down');
    later(1100); // 1.1 s: a waited its 1 s interval, then polls at once
    expect(await pollError(sigil, a.device_code)).toBe('authorization_pending');
    expect(await pollError(sigil, a.device_code)).toBe('slow_down');
    later(1100); // 2.2 s: twice the original interval is still too fast once slow_down was answered
    expect(await pollError(sigil, b.device_code)).toBe('slow_down');
    later(5100); // 7.3 s, 6.2 s after a's slow_down: the interval is 1 + 5 s, waited out it is pending again
    expect(await pollError(sigil, a.device_code)).toBe('authorization_pending');
  });

  it('after a denial every poll is access_denied until the code expires, then expired_token', async () => {
    const b = await signedIn(sigil);
    const d = await startDevice(sigil, 'tv-short', 'openid');
    const { done } = await answer(b, d.user_code, 'no');
    expect(done.body).toContain('The device was not given access.');
    const errors: string[] = [];
    for (let i = 0; i < 8 && errors.at(-1) !== 'expired_token'; i++) {
      errors.push(await pollError(sigil, d.device_code, 'tv-short'));
      later(1100);
    }
    // Polled at 0, 1.1, 2.2 and 3.3 s of a 3 s code.
    expect(errors).toEqual(['access_denied', 'access_denied', 'access_denied', 'expired_token']);
    expect(await pollError(sigil, d.device_code, 'tv-short')).toBe('expired_token');
  });

  it('after expires_in the poll is expired_token and the user code is no longer accepted', async () => {
    const d = await startDevice(sigil, 'tv-short', 'openid');
    expect(await pollError(sigil, d.device_code, 'tv-short')).toBe('authorization_pending');
    later(d.expires_in * 1000 + 200);
    expect(await pollError(sigil, d.device_code, 'tv-short')).toBe('expired_token');
    expectInvalidCode(await enterCode(await signedIn(sigil), d.user_code));
    later(1100);
    expect(await pollError(sigil, d.device_code, 'tv-short')).toBe('expired_token');
  });
});

// Each test has its own device codes: they run side by side to overlap the waits for intervals.
describe.concurrent('polling the token endpoint', () => {
  it('after sign-in and approval the device gets tokens once; the user code is spent', async () => {
    const d = await startDevice(sigil, 'tv', 'openid profile offline_access api1');
    const b = new InjectBrowser(sigil.app);
    // Not signed in: the code leads to the login page first, then to consent.
    const entered = await enterCode(b, d.user_code);
    expect(entered.status).toBe(303);
    expect(entered.location).toMatch(/^\/account\/login\?interaction=/);
    expect(await pollError(sigil, d.device_code)).toBe('authorization_pending');
    const { done } = await answer(b, d.user_code, 'yes');
    expect(done.body).toContain('Done. You can return to your device.');
    await sleep(1100);

    const res = await poll(sigil, d.device_code);
    expect(res.statusCode, res.body).toBe(200);
    expectNoStore(res);
    const tokens = res.json<TokenBody>();
    expect(tokens.token_type).toBe('Bearer');
    expect(tokens.access_token).toEqual(expect.any(String));
    expect(tokens.expires_in).toBeGreaterThan(0);
    expect(tokens.refresh_token).toEqual(expect.any(String));
    expect(tokens.scope.split(' ').sort()).toEqual(ALL_TV_SCOPES);
    const { payload } = await jwtVerify(tokens.id_token!, await fetchJwks(sigil), { issuer: ISSUER, audience: 'tv' });
    expect(payload.sub).toBe('1');

    expect(await pollError(sigil, d.device_code)).toBe('invalid_grant');
    expectInvalidCode(await enterCode(b, d.user_code));

    // The refresh token works for the device client.
    const refreshed = await postForm(sigil, '/connect/token', {
      grant_type: 'refresh_token',
      client_id: 'tv',
      refresh_token: tokens.refresh_token!,
    });
    expect(refreshed.statusCode, refreshed.body).toBe(200);
  });

  it('without openid and offline_access there is neither an identity token nor a refresh token', async () => {
    const d = await startDevice(sigil, 'tv', 'api1');
    await answer(await signedIn(sigil), d.user_code, 'yes');
    const res = await poll(sigil, d.device_code);
    expect(res.statusCode, res.body).toBe(200);
    const tokens = res.json<TokenBody>();
    expect(tokens.access_token).toEqual(expect.any(String));
    expect(tokens.id_token).toBeUndefined();
    expect(tokens.refresh_token).toBeUndefined();
  });

  it('another client polling the device code gets invalid_grant, and the code stays usable for its own client', async () => {
    const d = await startDevice(sigil, 'tv', 'openid');
    expect(await pollError(sigil, d.device_code, ['tvc', 'tvc-secret'])).toBe('invalid_grant');
    expect(await pollError(sigil, d.device_code, 'tv-short')).toBe('invalid_grant');
    expect(await pollError(sigil, d.device_code)).toBe('authorization_pending');
    await answer(await signedIn(sigil), d.user_code, 'yes');
    expect(await pollError(sigil, d.device_code, ['tvc', 'tvc-secret'])).toBe('invalid_grant');
    await sleep(1100);
    expect((await poll(sigil, d.device_code)).statusCode).toBe(200);
  });

  it('a missing device_code is invalid_request; a random or overlong one is invalid_grant', async () => {
    expect(await pollError(sigil, undefined)).toBe('invalid_request');
    expect(await pollError(sigil, Buffer.alloc(32, 7).toString('base64url'))).toBe('invalid_grant');
    expect(await pollError(sigil, 'x'.repeat(5000))).toBe('invalid_grant');
  });

  it('of 20 concurrent polls after approval exactly one gets tokens', async () => {
    const d = await startDevice(sigil, 'tv', 'openid offline_access');
    await answer(await signedIn(sigil), d.user_code, 'yes');
    const results = await Promise.all(Array.from({ length: 20 }, () => poll(sigil, d.device_code)));
    for (const r of results) expectNoLeak(r);
    const ok = results.filter((r) => r.statusCode === 200);
    expect(ok).toHaveLength(1);
    expect(ok[0]!.json<TokenBody>().refresh_token).toEqual(expect.any(String));
    for (const r of results.filter((x) => x.statusCode !== 200)) {
      expect(r.statusCode).toBe(400);
      expect(['invalid_grant', 'slow_down']).toContain(r.json<{ error: string }>().error);
    }
    await sleep(1100);
    expect(await pollError(sigil, d.device_code)).toBe('invalid_grant');
  });
});

describe.concurrent('the /device pages', () => {
  it('a POST without a valid CSRF token or from another origin is refused with 403 and approves nothing', async () => {
    const d = await startDevice(sigil, 'tv', 'openid');
    const b = await signedIn(sigil);
    const page = await b.get('/device');
    const csrf = InjectBrowser.input(page.body, 'csrf_token');
    expect((await b.post('/device', { userCode: d.user_code, button: 'submit' })).status).toBe(403);
    expect((await b.post('/device', { csrf_token: 'forged', userCode: d.user_code, button: 'submit' })).status).toBe(
      403,
    );
    const crossSite = await b.post(
      '/device',
      { csrf_token: csrf, userCode: d.user_code, button: 'submit' },
      { origin: 'https://evil.example' },
    );
    expect(crossSite.status).toBe(403);
    expect(await pollError(sigil, d.device_code)).toBe('authorization_pending');

    // Past the code entry, the consent answer needs its token too.
    const entered = await enterCode(b, d.user_code);
    const consent = await b.follow(entered);
    const interaction = InjectBrowser.input(consent.body, 'interaction');
    expect((await b.post('/consent', { interaction, button: 'yes' })).status).toBe(403);
    await sleep(1100);
    expect(await pollError(sigil, d.device_code)).toBe('authorization_pending');
  });

  it('verification_uri_complete pre-fills the code; the consent page names the client and warns; nothing is approved before the POST', async () => {
    const d = await startDevice(sigil, 'tv', 'openid profile api1');
    const b = await signedIn(sigil);
    const page = await b.get(d.verification_uri_complete);
    expect(page.status).toBe(200);
    expect(page.body).toContain(`value="${d.user_code}"`);
    expect(page.body).toContain('<form method="post" action="/device">');
    expect(page.body).toContain('name="button" value="submit"');
    // A lower-case code without dash in the link is shown in canonical form.
    const lower = await b.get(`/device?userCode=${d.user_code.toLowerCase().replace('-', '')}`);
    expect(lower.body).toContain(`value="${d.user_code}"`);
    expect(await pollError(sigil, d.device_code)).toBe('authorization_pending');

    const entered = await b.post('/device', {
      csrf_token: InjectBrowser.input(page.body, 'csrf_token'),
      userCode: d.user_code,
      button: 'submit',
    });
    expect(entered.status).toBe(303);
    expect(entered.location).toMatch(/^\/consent\?interaction=/);
    const consent = await b.follow(entered);
    expect(consent.body).toContain('Living Room TV');
    expect(consent.body).toContain(DEVICE_WARNING);
    expect([...consent.body.matchAll(/<li>/g)]).toHaveLength(3);
    expect(consent.body).toContain('<form method="post" action="/consent" id="consent">');
    expect(consent.body).toContain('name="button" value="yes"');
    expect(consent.body).toContain('name="button" value="no"');
    expect(consent.body).not.toContain('name="remember"');
    await sleep(1100);
    expect(await pollError(sigil, d.device_code)).toBe('authorization_pending');

    const done = await b.follow(
      await b.post('/consent', {
        csrf_token: InjectBrowser.input(consent.body, 'csrf_token'),
        interaction: InjectBrowser.input(consent.body, 'interaction'),
        button: 'no',
      }),
    );
    expect(done.body).toContain('The device was not given access.');
    await sleep(1100);
    expect(await pollError(sigil, d.device_code)).toBe('access_denied');
    // A denied code cannot be entered again.
    expectInvalidCode(await enterCode(b, d.user_code));
  });

  it('when two browsers hold the consent page for one code, only the first answer counts', async () => {
    const d = await startDevice(sigil, 'tv', 'openid');
    const [alice, bob] = await Promise.all([signedIn(sigil, 'alice'), signedIn(sigil, 'bob')]);
    const consentOf = async (b: InjectBrowser) => b.follow(await enterCode(b, d.user_code));
    const [first, second] = [await consentOf(alice), await consentOf(bob)];
    const submit = (b: InjectBrowser, page: Step, button: string) =>
      b.post('/consent', {
        csrf_token: InjectBrowser.input(page.body, 'csrf_token'),
        interaction: InjectBrowser.input(page.body, 'interaction'),
        button,
      });
    expect((await alice.follow(await submit(alice, first, 'yes'))).body).toContain(
      'Done. You can return to your device.',
    );
    const late = await bob.follow(await submit(bob, second, 'yes'));
    expect(late.status).toBe(400);
    expect(late.body).not.toContain('Done.');
    const res = await poll(sigil, d.device_code);
    expect(res.statusCode, res.body).toBe(200);
    const { payload } = await jwtVerify(res.json<TokenBody>().id_token!, await fetchJwks(sigil), {
      issuer: ISSUER,
      audience: 'tv',
    });
    expect(payload.sub).toBe('1');
  });

  it('cancel on the login page denies the device', async () => {
    const d = await startDevice(sigil, 'tv', 'openid');
    const b = new InjectBrowser(sigil.app);
    const entered = await enterCode(b, d.user_code);
    const login = await b.get(entered.location!);
    const cancelled = await b.post('/account/login', {
      csrf_token: InjectBrowser.input(login.body, 'csrf_token'),
      interaction: InjectBrowser.input(login.body, 'interaction'),
      button: 'cancel',
    });
    expect(cancelled.status).toBe(200);
    expect(cancelled.body).toContain('The device was not given access.');
    expect(await pollError(sigil, d.device_code)).toBe('access_denied');
    expectInvalidCode(await enterCode(b, d.user_code));
  });

  it('lower case, no dash and spaces are accepted; letters outside the alphabet and Cyrillic look-alikes are refused', async () => {
    // Cyrillic letters that look like letters of the alphabet.
    const lookAlikes: Record<string, string> = { B: 'В', C: 'С', H: 'Н', K: 'К', M: 'М', P: 'Р', T: 'Т', X: 'Х' };
    let d = await startDevice(sigil, 'tv', 'openid');
    for (let i = 0; i < 20 && ![...d.user_code].some((c) => c in lookAlikes); i++)
      d = await startDevice(sigil, 'tv', 'openid');
    const b = await signedIn(sigil);
    const plain = d.user_code.replace('-', '');
    for (const typed of [
      plain.toLowerCase(),
      d.user_code.toLowerCase(),
      ` ${plain.slice(0, 4)} ${plain.slice(4)} `,
      plain.split('').join(' '),
      `\t${d.user_code}\n`,
    ]) {
      const step = await enterCode(b, typed);
      expect(step.status, typed).toBe(303);
      expect(step.location).toMatch(/^\/consent\?interaction=/);
    }
    const at = [...plain].findIndex((c) => c in lookAlikes);
    const cyrillic = plain.slice(0, at) + lookAlikes[plain[at]!]! + plain.slice(at + 1);
    const wrong = [
      `A${plain.slice(1)}`,
      `0${plain.slice(1)}`,
      cyrillic,
      cyrillic.toLowerCase(),
      plain.slice(1),
      `${plain}B`,
      `${plain.slice(0, 4)}_${plain.slice(4)}`,
      '',
      'Z'.repeat(100),
      '\uffff<script>',
    ];
    for (const typed of wrong) {
      const step = await enterCode(b, typed);
      expectInvalidCode(step);
      expect(step.body).not.toContain('<script>');
    }
    // A NUL is refused by the form parser before the page sees it: a 400, never consent or a 5xx.
    const nul = await enterCode(b, `${plain.slice(0, 7)}\u0000`);
    expect(nul.status).toBe(400);
    expect(nul.location).toBeUndefined();
    expect(await pollError(sigil, d.device_code)).toBe('authorization_pending');
  });
});

describe('user-code brute force', () => {
  let limited: TestSigil;
  beforeAll(async () => {
    limited = await startSigil(deviceConfig({ maxFailures: 5, windowSeconds: 60 }));
  });
  afterAll(async () => limited?.close());

  /** GET /device then POST a code, as a cookie-less browser from `address`. */
  async function enterFrom(
    address: string,
    userCode: string,
    cookies = new Map<string, string>(),
  ): Promise<LightMyRequestResponse> {
    const cookie = () => [...cookies].map(([k, v]) => `${k}=${v}`).join('; ');
    const page = await limited.app.inject({
      method: 'GET',
      url: '/device',
      remoteAddress: address,
      headers: cookies.size ? { cookie: cookie() } : {},
    });
    for (const c of page.cookies) cookies.set(c.name, c.value);
    return limited.app.inject({
      method: 'POST',
      url: '/device',
      remoteAddress: address,
      headers: { cookie: cookie(), 'content-type': 'application/x-www-form-urlencoded' },
      payload: new URLSearchParams({
        csrf_token: InjectBrowser.input(page.body, 'csrf_token'),
        userCode,
        button: 'submit',
      }).toString(),
    });
  }

  it('past maxFailures wrong codes even the right code answers 429 with Retry-After, per browser and per address; the grant stays pending', async () => {
    const d = await startDevice(limited, 'tv', 'openid');
    const wrongCode = (i: number) => (d.user_code.startsWith('BBB') ? 'CCCC-CCC' : 'BBBB-BBB') + ALPHABET[i];
    const b = new InjectBrowser(limited.app);
    for (let i = 0; i < 5; i++) expectInvalidCode(await enterCode(b, wrongCode(i)));

    const blocked = await enterCode(b, d.user_code);
    expect(blocked.status).toBe(429);
    expect(Number(blocked.headers['retry-after'])).toBeGreaterThan(0);
    expect(blocked.headers['content-type']).toMatch(/^text\/html/);
    expect(blocked.body).toContain('Too many failed attempts.');
    expect(blocked.body).not.toMatch(/\bat \S+ \(|\.ts:\d|\.js:\d|node_modules|Error:/);
    expect(blocked.location).toBeUndefined();
    expect(await pollError(limited, d.device_code)).toBe('authorization_pending');

    // Another browser from the same address is blocked (the address counts) ...
    expect((await enterFrom('127.0.0.1', d.user_code)).statusCode).toBe(429);
    // ... and so is the same browser from another address (the browser counts).
    const sameBrowser = new Map(b.cookies);
    expect((await enterFrom('192.0.2.7', d.user_code, sameBrowser)).statusCode).toBe(429);
    // A fresh browser from an unblocked address may enter the code: the limit is not global.
    const fresh = await enterFrom('192.0.2.8', d.user_code);
    expect(fresh.statusCode).toBe(303);
    expect(fresh.headers.location).toMatch(/^\/account\/login\?interaction=/);
    await sleep(1100);
    expect(await pollError(limited, d.device_code)).toBe('authorization_pending');
  });
});

describe('two nodes on one PostgreSQL schema: approvals racing with polls', () => {
  const schema = uniqueSchema('sigil_device_race');
  let nodeA: TestSigil;
  let nodeB: TestSigil;
  beforeAll(async () => {
    const storage = `${POSTGRES_URL}?schema=${schema}&poolSize=10`;
    nodeA = await startSigil({ ...deviceConfig({ maxFailures: 1000, windowSeconds: 60 }), storage });
    nodeB = await startSigil({ ...deviceConfig({ maxFailures: 1000, windowSeconds: 60 }), storage });
  });
  afterAll(async () => {
    await nodeA?.close();
    await nodeB?.close();
    await dropSchema(schema);
  });

  /**
   * Polls on node A without pause (each poll answers slow_down or authorization_pending and writes
   * the row) until `answered` resolves, then twice more, so polls straddle the approval's write.
   */
  async function hammer(deviceCode: string, answered: Promise<unknown>): Promise<string[]> {
    let done = false;
    void answered.then(
      () => (done = true),
      () => (done = true),
    );
    const errors: string[] = [];
    for (let after = 0; after < 2; after += done ? 1 : 0) {
      const res = await poll(nodeA, deviceCode, 'tv');
      expectNoLeak(res);
      errors.push(res.json<{ error: string }>().error);
    }
    return errors;
  }

  it('never loses an approval: node B approves while node A is polled without pause', async () => {
    const browser = await signedIn(nodeB);
    for (let round = 0; round < 8; round++) {
      const device = await startDevice(nodeA, 'tv');
      const answered = answer(browser, device.user_code, 'yes');
      const errors = (
        await Promise.all([answered, ...Array.from({ length: 4 }, () => hammer(device.device_code, answered))])
      )
        .slice(1)
        .flat() as string[];
      // On a loaded machine a poll may come a full interval after the approval and redeem it (no
      // error): that is the approval delivered, once; later polls then find the code used.
      const redeemed = errors.filter((e) => e === undefined).length;
      expect(redeemed, `round ${round}`).toBeLessThanOrEqual(1);
      const allowed = new Set<string | undefined>([
        'slow_down',
        'authorization_pending',
        undefined,
        ...(redeemed === 1 ? ['invalid_grant'] : []),
      ]);
      expect(errors.filter((e) => !allowed.has(e))).toEqual([]);
      if (redeemed === 1) continue;
      // Whatever polls ran around it, the stored answer is node B's approval, seen by node A.
      const row = await nodeA.context.store.grants.get(hashHandle(device.device_code));
      expect((row?.data as DeviceCodeData | undefined)?.status, `round ${round}`).toBe('approved');
      expect((row?.data as DeviceCodeData | undefined)?.subject?.subjectId).toBe('1');
    }
  });
});
