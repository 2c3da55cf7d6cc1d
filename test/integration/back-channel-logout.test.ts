/**
 * OpenID Connect Back-Channel Logout 1.0 against a real HTTP receiver: every client that took part
 * in a session gets one logout token (§2.4, verified with jose against Sigil's JWKS) when the
 * session ends by RP-initiated logout, on Sigil's own logout page, by expiry or by an
 * administrator; delivery is retried with back-off until the client acknowledges it (exactly
 * once), never follows redirects, and gives up on a refusal.
 */
import { createLocalJWKSet, type JSONWebKeySet, jwtVerify } from 'jose';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { createSigil } from '../../src/index.js';
import { Browser, BYE, idTokensInSession, input, ISSUER, startAuthorizeSigil, webLike } from '../authorize-helpers.js';
import { sleep, testConfig, type TestSigil } from '../helpers.js';
import { type Answer, LogoutReceiver } from '../logout-receiver.js';

let receiver: LogoutReceiver;
let sigil: TestSigil;
const EVENT = 'http://schemas.openid.net/event/backchannel-logout';

/** Clients with back-channel logout URIs on the receiver (paths tell them apart). */
function logoutClients(base: string) {
  return [
    webLike('bc', { backChannelLogoutUri: `${base}/bc` }),
    webLike('bc2', { backChannelLogoutUri: `${base}/bc2`, backChannelLogoutSessionRequired: false }),
    webLike('bc-idle', { backChannelLogoutUri: `${base}/idle` }),
    // As dynamic registration stores a client: its URIs are the registrant's choice.
    webLike('bc-dynamic', { backChannelLogoutUri: `${base}/dynamic`, registeredDynamically: true }),
  ];
}

beforeAll(async () => {
  receiver = await LogoutReceiver.start();
  sigil = await startAuthorizeSigil(logoutClients(receiver.url), {
    backChannelLogout: { pollSeconds: 1, timeoutSeconds: 2, retrySeconds: 60 },
  });
});
afterAll(async () => {
  await sigil.close();
  await receiver.close();
});
afterEach(() => {
  receiver.received.length = 0;
  receiver.script.length = 0;
});

/** An identity token for `client` from `b`'s session (signing in first if needed), and the sid. */
async function tokenFor(target: TestSigil, b: Browser, client: string): Promise<{ idToken: string; sid: string }> {
  const { idTokens, sid } = await idTokensInSession(target, b, [client]);
  return { idToken: idTokens[0]!, sid };
}

/** Verifies a logout token as a client does (§2.6), with Sigil's published JWKS. */
async function verifyLogoutToken(target: TestSigil, token: string, audience: string) {
  const jwks = (
    await target.app.inject({ method: 'GET', url: '/.well-known/openid-configuration/jwks' })
  ).json<JSONWebKeySet>();
  return jwtVerify(token, createLocalJWKSet(jwks), { issuer: ISSUER, audience, typ: 'logout+jwt', maxTokenAge: 120 });
}

describe('back-channel logout', () => {
  it('discovery advertises back-channel logout with sessions', async () => {
    const doc = (await sigil.app.inject({ method: 'GET', url: '/.well-known/openid-configuration' })).json();
    expect(doc).toMatchObject({ backchannel_logout_supported: true, backchannel_logout_session_supported: true });
  });

  it('RP-initiated logout: each participating client gets a valid logout token before the redirect; others get none', async () => {
    const b = new Browser(sigil);
    const { idToken, sid } = await tokenFor(sigil, b, 'bc');
    await tokenFor(sigil, b, 'bc2');
    await tokenFor(sigil, b, 'web');
    const step = await b.get(
      `/connect/endsession?${new URLSearchParams({ id_token_hint: idToken, post_logout_redirect_uri: BYE, state: 's' })}`,
    );
    expect(step.status).toBe(303);
    expect(step.location).toBe(`${BYE}?state=s`);
    // Sent before the redirect (the receiver answers at once).
    expect(receiver.delivered.map((r) => r.path).sort()).toEqual(['/bc', '/bc2']);
    for (const r of receiver.delivered) {
      const { payload, protectedHeader } = await verifyLogoutToken(sigil, r.token, r.path.slice(1));
      expect(protectedHeader.typ).toBe('logout+jwt');
      expect(payload).toMatchObject({ iss: ISSUER, sub: '1', sid, events: { [EVENT]: {} } });
      expect(Object.keys(payload).sort()).toEqual(['aud', 'events', 'exp', 'iat', 'iss', 'jti', 'sid', 'sub']);
      expect(payload.nonce).toBeUndefined();
    }
    await sleep(1500);
    expect(receiver.received).toHaveLength(2);
  });

  it("a dynamically registered client's logout URI is posted to under the SSRF guard: on loopback (allowLoopback off) it gets nothing", async () => {
    const b = new Browser(sigil);
    const { idToken } = await tokenFor(sigil, b, 'bc');
    await tokenFor(sigil, b, 'bc-dynamic');
    const step = await b.get(`/connect/endsession?${new URLSearchParams({ id_token_hint: idToken })}`);
    expect(step.status).toBe(200);
    expect(receiver.delivered.map((r) => r.path)).toEqual(['/bc']);
    // Retries (pollSeconds 1) are refused the same way.
    await sleep(2500);
    expect(receiver.received.map((r) => r.path)).toEqual(['/bc']);
  });

  it('a receiver that fails twice gets the token on the third attempt, exactly once, with the same jti', async () => {
    receiver.script.push('fail', 'fail');
    const b = new Browser(sigil);
    const { idToken } = await tokenFor(sigil, b, 'bc');
    await b.get(`/connect/endsession?${new URLSearchParams({ id_token_hint: idToken })}`);
    await receiver.waitFor(() => receiver.delivered.length, 1);
    await sleep(2500);
    expect(receiver.received.map((r) => r.answer)).toEqual(['fail', 'fail', 'ok']);
    const jtis = await Promise.all(
      receiver.received.map(async (r) => (await verifyLogoutToken(sigil, r.token, 'bc')).payload.jti),
    );
    expect(new Set(jtis).size).toBe(1);
  });

  it('redirects are not followed, and a refusal (400) is not retried', async () => {
    for (const [answer, attempts] of [
      ['redirect', 2],
      ['reject', 1],
    ] as [Answer, number][]) {
      receiver.received.length = 0;
      receiver.script.push(answer);
      const b = new Browser(sigil);
      const { idToken } = await tokenFor(sigil, b, 'bc');
      await b.get(`/connect/endsession?${new URLSearchParams({ id_token_hint: idToken })}`);
      await receiver.waitFor(() => receiver.received.length, attempts);
      await sleep(2500);
      expect(receiver.received.map((r) => r.path)).toEqual(Array(attempts).fill('/bc'));
    }
  });

  it("logging out on Sigil's own logout page notifies the session's clients", async () => {
    const b = new Browser(sigil);
    const { sid } = await tokenFor(sigil, b, 'bc');
    const page = await b.get('/account/logout');
    const done = await b.post('/account/logout', { csrf_token: input(page.body, 'csrf_token'), button: 'logout' });
    expect(done.status).toBe(200);
    await receiver.waitFor(() => receiver.delivered.length, 1);
    expect(receiver.delivered[0]).toMatchObject({ path: '/bc', sid });
  });

  it('signing in again in the same browser ends the previous session and notifies its clients', async () => {
    const b = new Browser(sigil);
    const { sid } = await tokenFor(sigil, b, 'bc');
    await b.signIn('bob');
    await receiver.waitFor(() => receiver.delivered.length, 1);
    expect(receiver.delivered[0]).toMatchObject({ path: '/bc', sid });
  });

  it('an administrator ending all sessions of a user notifies each session once', async () => {
    const sids = [];
    for (let i = 0; i < 3; i++) sids.push((await tokenFor(sigil, new Browser(sigil), 'bc')).sid);
    expect(await sigil.context.logout.endSessionsOf('1')).toBeGreaterThanOrEqual(3);
    await receiver.waitFor(() => receiver.delivered.length, 3);
    expect(receiver.delivered.map((r) => r.sid).sort()).toEqual(sids.sort());
    expect(await sigil.context.logout.endSessionsOf('1')).toBe(0);
  });
});

describe('back-channel logout on session expiry', () => {
  it('a session that runs out is ended and its clients are told', async () => {
    // Sign-in and the code flow for 'bc' must happen inside the session's life: with a 2 s
    // session a slow machine could see it run out before the client took part (then no client is
    // told). The session lives 60 s; Sigil's clock (Date only, running on from there) is then
    // moved past it and its poll, on real timers, finds the session run out.
    const expiring = await startAuthorizeSigil(logoutClients(receiver.url), {
      sessionLifetime: 60,
      backChannelLogout: { pollSeconds: 1, timeoutSeconds: 2, retrySeconds: 60 },
    });
    try {
      const { sid } = await tokenFor(expiring, new Browser(expiring), 'bc');
      expect(receiver.received).toEqual([]);
      vi.useFakeTimers({ toFake: ['Date'], now: Date.now() + 61_000, shouldAdvanceTime: true });
      await receiver.waitFor(() => receiver.delivered.length, 1);
      expect(receiver.delivered[0]).toMatchObject({ path: '/bc', sid });
      await verifyLogoutToken(expiring, receiver.delivered[0]!.token, 'bc');
    } finally {
      vi.useRealTimers();
      await expiring.close();
    }
  });
});

describe('back-channel logout settings', () => {
  it('backChannelLogoutUri must be https, or http on a loopback host', async () => {
    for (const uri of ['http://rp.example/logout', 'ftp://rp.example/', 'https://rp.example/logout#x', 'not a url']) {
      const config = testConfig({
        clients: [
          { clientId: 'x', clientSecrets: ['s'], allowedGrantTypes: ['authorization_code'], backChannelLogoutUri: uri },
        ],
      });
      await expect(createSigil(config)).rejects.toThrow(/clients\[0\]\.backChannelLogoutUri/);
    }
  });
});
