/**
 * OpenID CIBA Core 1.0 over HTTP (inject): `/connect/ciba`, the CIBA grant at the token endpoint
 * in poll and ping modes, the approval page `/account/requests` with a signed-in browser, the ping
 * to a loopback notification endpoint, and the mail to the user through a real SMTP server.
 */
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { jwtVerify } from 'jose';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clientSchema } from '../../src/config/schema/client.js';
import { hashHandle } from '../../src/crypto/handles.js';
import { Browser, input } from '../authorize-helpers.js';
import {
  type BasicCredentials,
  dropSchema,
  expectNoLeak,
  fetchJwks,
  passwordTokens,
  POSTGRES_URL,
  postForm,
  settled,
  sleep,
  startSigil,
  testConfig,
  type TestSigil,
  tokenRequest,
  type TokenBody,
  uniqueSchema,
} from '../helpers.js';
import { SmtpReceiver } from '../smtp-receiver.js';
import { enrollTotp, isMfaPage, submitCode, totpCode } from '../mfa-helpers.js';

const GRANT = 'urn:openid:params:grant-type:ciba';
const POLL: BasicCredentials = ['speaker', 'speaker-secret'];
const PING: BasicCredentials = ['kiosk', 'kiosk-secret'];

/** The settings of the suite's CIBA clients. */
const ciba = {
  allowedGrantTypes: [GRANT],
  allowedScopes: ['openid', 'profile', 'email', 'offline_access'],
  allowOfflineAccess: true,
  pollingInterval: 1,
};

/** What the loopback notification endpoint received. */
interface Ping {
  headers: IncomingHttpHeaders;
  body: string;
}

let sigil: TestSigil;
let smtp: SmtpReceiver;
let receiver: Server;
const pings: Ping[] = [];
/** Sigil's log lines (warnings and above). */
const logLines: string[] = [];

beforeAll(async () => {
  smtp = await new SmtpReceiver().start();
  receiver = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      pings.push({ headers: req.headers, body });
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((ok) => receiver.listen(0, '127.0.0.1', ok));
  const port = (receiver.address() as AddressInfo).port;
  const log = new Writable({
    write(chunk: Buffer, _encoding, done) {
      logLines.push(chunk.toString());
      done();
    },
  });
  sigil = await startSigil(
    {
      email: { smtpUrl: smtp.url, from: 'id@acme.example' },
      pendingLimits: { backchannelRequestsPerUserAndClient: 25 },
      clients: [
        ...(testConfig().clients ?? []),
        { clientId: 'speaker', clientName: 'Smart Speaker', clientSecrets: ['speaker-secret'], ...ciba },
        {
          clientId: 'kiosk',
          clientName: 'Bank Kiosk',
          clientSecrets: ['kiosk-secret'],
          ...ciba,
          backchannelTokenDeliveryMode: 'ping',
          backchannelClientNotificationEndpoint: `http://127.0.0.1:${port}/cb`,
        },
        // Its URLs were chosen by whoever registered it: the ping goes under the SSRF guard.
        {
          clientId: 'agent',
          clientSecrets: ['agent-secret'],
          ...ciba,
          registeredDynamically: true,
          backchannelTokenDeliveryMode: 'ping',
          backchannelClientNotificationEndpoint: `http://127.0.0.1:${port}/cb`,
        },
      ],
    },
    { logger: pino({ level: 'warn' }, log) },
  );
});
afterAll(async () => {
  await sigil?.close();
  await smtp?.close();
  await new Promise((ok) => receiver?.close(ok));
});

/** `POST /connect/ciba`. */
function cibaRequest(params: Record<string, string>, auth: BasicCredentials | undefined = POLL, s = sigil) {
  return postForm(s, '/connect/ciba', params, auth);
}

/** A CIBA request that must succeed; its `auth_req_id`. */
async function start(params: Record<string, string> = {}, auth = POLL, s = sigil): Promise<string> {
  const res = await cibaRequest({ scope: 'openid profile', login_hint: 'alice', ...params }, auth, s);
  expect(res.statusCode, res.body).toBe(200);
  expect(res.headers['cache-control']).toBe('no-store');
  const body = res.json<{ auth_req_id: string; expires_in: number; interval: number }>();
  expect(body.interval).toBe(1);
  return body.auth_req_id;
}

/** A token request of the CIBA grant. */
function poll(authReqId: string, auth = POLL, s = sigil) {
  return tokenRequest(s, { grant_type: GRANT, auth_req_id: authReqId }, auth);
}

/** Expects an OAuth error answer. */
function expectError(res: { statusCode: number; body: string; json: <T>() => T }, error: string, status = 400) {
  expect(res.statusCode, res.body).toBe(status);
  expect(res.json<{ error: string }>().error).toBe(error);
  expectNoLeak(res as never);
}

/** A browser signed in as `user`. */
async function signedIn(user: string, s = sigil): Promise<Browser> {
  const b = new Browser(s);
  await b.signIn(user);
  return b;
}

/** The approval page's form fields of the request listed with `clientName`, from a fresh GET. */
async function requestForm(b: Browser): Promise<{ csrf: string; ids: string[]; body: string }> {
  const page = await b.get('/account/requests');
  expect(page.status, page.body).toBe(200);
  const ids = [...page.body.matchAll(/name="request" value="([^"]+)"/g)].map((m) => m[1] as string);
  return { csrf: input(page.body, 'csrf_token'), ids, body: page.body };
}

/** Answers the request of `authReqId` on the page, which lists it by its store key. */
async function answer(b: Browser, authReqId: string, button: 'approve' | 'deny') {
  const { csrf, ids } = await requestForm(b);
  const id = hashHandle(authReqId);
  expect(ids).toContain(id);
  return b.post('/account/requests', { csrf_token: csrf, request: id, button });
}

describe('poll mode', () => {
  it('is pending, slows a fast poller down, then issues tokens once after approval', async () => {
    const id = await start({ binding_message: 'W4SCT', scope: 'openid profile offline_access' });
    expectError(await poll(id), 'authorization_pending');
    // Polled again at once: faster than the interval of 1 s.
    expectError(await poll(id), 'slow_down');

    const alice = await signedIn('alice');
    const { body } = await requestForm(alice);
    expect(body).toContain('Smart Speaker');
    expect(body).toContain('W4SCT');
    expect(body).toContain('profile');
    const answered = await answer(alice, id, 'approve');
    expect(answered.status, answered.body).toBe(200);
    expect(answered.body).not.toContain('W4SCT');

    // slow_down grew the interval to 6 s.
    await sleep(6100);
    const res = await poll(id);
    expect(res.statusCode, res.body).toBe(200);
    const tokens = res.json<TokenBody>();
    expect(tokens.refresh_token).toBeDefined();
    const { payload } = await jwtVerify(tokens.id_token as string, await fetchJwks(sigil), {
      issuer: 'http://127.0.0.1:5999',
      audience: 'speaker',
    });
    expect(payload.sub).toBe('1');
    expectError(await poll(id), 'invalid_grant');
  }, 20_000);

  it('answers access_denied after a denial; the page shows the binding message as text', async () => {
    const id = await start({ binding_message: '<i>Order 42</i>' });
    const alice = await signedIn('alice');
    const { body } = await requestForm(alice);
    expect(body).toContain('&lt;i&gt;Order 42&lt;/i&gt;');
    expect(body).not.toContain('<i>Order 42');
    expect((await answer(alice, id, 'deny')).status).toBe(200);
    expectError(await poll(id), 'access_denied');
  });

  it('answers expired_token after requested_expiry', async () => {
    const res = await cibaRequest({ scope: 'openid', login_hint: 'alice', requested_expiry: '1' });
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json<{ auth_req_id: string; expires_in: number }>();
    expect(body.expires_in).toBe(1);
    await sleep(2100);
    expectError(await poll(body.auth_req_id), 'expired_token');
  });

  it("is another client's to redeem for nobody else", async () => {
    const id = await start();
    expectError(await poll(id, PING), 'invalid_grant');
  });
});

describe('ping mode', () => {
  it('POSTs the auth_req_id with the client_notification_token as Bearer after approval', async () => {
    const id = await start({ client_notification_token: 'ping-token.123' }, PING);
    const alice = await signedIn('alice');
    expect((await answer(alice, id, 'approve')).status).toBe(200);
    const received = await settled(
      async () => pings.length,
      (n) => n > 0,
    );
    expect(received).toBe(1);
    const ping = pings[0] as Ping;
    expect(ping.headers.authorization).toBe('Bearer ping-token.123');
    expect(ping.headers['content-type']).toBe('application/json');
    expect(JSON.parse(ping.body)).toEqual({ auth_req_id: id });
    // Two polls at once after the ping: exactly one gets tokens.
    const both = await Promise.all([poll(id, PING), poll(id, PING)]);
    expect(both.map((r) => r.statusCode).sort()).toEqual([200, 400]);
  });

  it('never pings a loopback address for a client whose URLs a caller chose; the client still polls', async () => {
    const agent: BasicCredentials = ['agent', 'agent-secret'];
    const before = pings.length;
    const id = await start({ client_notification_token: 'agent-token' }, agent);
    const alice = await signedIn('alice');
    expect((await answer(alice, id, 'approve')).status).toBe(200);
    const logged = await settled(
      async () => logLines.some((l) => l.includes('CIBA ping failed') && l.includes('"agent"')),
      (found) => found,
    );
    expect(logged).toBe(true);
    expect(pings.length).toBe(before);
    expect((await poll(id, agent)).statusCode).toBe(200);
  });

  it('needs a client_notification_token, a bearer token of at most 1024 characters', async () => {
    const base = { scope: 'openid', login_hint: 'alice' };
    expectError(await cibaRequest(base, PING), 'invalid_request');
    expectError(await cibaRequest({ ...base, client_notification_token: 'x'.repeat(1025) }, PING), 'invalid_request');
    expectError(await cibaRequest({ ...base, client_notification_token: 'has space' }, PING), 'invalid_request');
  });
});

describe('the backchannel authentication request', () => {
  it('finds the user by email address and by id_token_hint', async () => {
    await start({ login_hint: 'ALICE@example.com' });
    const { id_token } = await passwordTokens(sigil, { scope: 'openid' });
    const res = await cibaRequest({ scope: 'openid', id_token_hint: id_token as string });
    expect(res.statusCode, res.body).toBe(200);
  });

  it('refuses an unknown or inactive user, both hints, no hint and a forged id_token_hint', async () => {
    expectError(await cibaRequest({ scope: 'openid', login_hint: 'nobody' }), 'unknown_user_id');
    expectError(await cibaRequest({ scope: 'openid', login_hint: 'nobody@example.com' }), 'unknown_user_id');
    expectError(await cibaRequest({ scope: 'openid', login_hint: 'dave' }), 'unknown_user_id');
    const { id_token } = await passwordTokens(sigil, { scope: 'openid' });
    expectError(
      await cibaRequest({ scope: 'openid', login_hint: 'alice', id_token_hint: id_token as string }),
      'invalid_request',
    );
    expectError(await cibaRequest({ scope: 'openid' }), 'invalid_request');
    expectError(await cibaRequest({ scope: 'openid', id_token_hint: 'a.b.c' }), 'invalid_request');
  });

  it('needs openid among allowed scopes', async () => {
    expectError(await cibaRequest({ scope: 'profile', login_hint: 'alice' }), 'invalid_request');
    expectError(await cibaRequest({ login_hint: 'alice' }), 'invalid_request');
    expectError(await cibaRequest({ scope: 'openid roles', login_hint: 'alice' }), 'invalid_scope');
  });

  it('refuses a public client, a client without the grant, and a wrong secret', async () => {
    expectError(
      await postForm(sigil, '/connect/ciba', { client_id: 'spa', scope: 'openid', login_hint: 'alice' }),
      'unauthorized_client',
    );
    expectError(
      await cibaRequest({ scope: 'openid', login_hint: 'alice' }, ['other', 'other-secret']),
      'unauthorized_client',
    );
    expectError(
      await cibaRequest({ scope: 'openid', login_hint: 'alice' }, ['speaker', 'wrong']),
      'invalid_client',
      401,
    );
    // A public client cannot even be given the grant.
    const parsed = clientSchema.safeParse({ clientId: 'pub', requireClientSecret: false, allowedGrantTypes: [GRANT] });
    expect(parsed.success).toBe(false);
  });

  it('bounds binding_message and requested_expiry', async () => {
    const base = { scope: 'openid', login_hint: 'alice' };
    expectError(await cibaRequest({ ...base, binding_message: 'x'.repeat(101) }), 'invalid_binding_message');
    expectError(await cibaRequest({ ...base, binding_message: 'line\nbreak' }), 'invalid_binding_message');
    expectError(await cibaRequest({ ...base, requested_expiry: '-5' }), 'invalid_request');
    expectError(await cibaRequest({ ...base, requested_expiry: '1e3' }), 'invalid_request');
    const long = await cibaRequest({ ...base, requested_expiry: '999999' });
    expect(long.json<{ expires_in: number }>().expires_in).toBe(300);
  });

  it('mails the user a link to /account/requests', async () => {
    const before = smtp.mails.length;
    await start({ login_hint: 'alice' });
    const mail = await settled(
      async () => smtp.mails.slice(before).find((m) => m.to.includes('alice@example.com')),
      (m) => m !== undefined,
    );
    expect(mail?.text).toContain('http://127.0.0.1:5999/account/requests');
  });
});

describe('the approval page', () => {
  it('sends a visitor who is not signed in to sign in, then back', async () => {
    const page = await new Browser(sigil).get('/account/requests');
    expect(page.status).toBe(303);
    expect(page.location).toContain('/account/login?return=%2Faccount%2Frequests');
  });

  it("lets nobody answer another user's request", async () => {
    const id = await start();
    const alice = await signedIn('alice');
    expect((await requestForm(alice)).ids).toContain(hashHandle(id));
    // Bob has a request of his own, so his page holds a form (and a CSRF token) to reuse.
    const bobs = await start({ login_hint: 'bob' });
    const bob = await signedIn('bob');
    const own = await requestForm(bob);
    expect(own.ids).toEqual([hashHandle(bobs)]);
    const tried = await bob.post('/account/requests', {
      csrf_token: own.csrf,
      request: hashHandle(id),
      button: 'approve',
    });
    expect(tried.status).toBe(404);
    expectError(await poll(id), 'authorization_pending');
  });

  it('refuses a form without its CSRF token', async () => {
    const id = await start();
    const alice = await signedIn('alice');
    const tried = await alice.post('/account/requests', { request: hashHandle(id), button: 'approve' });
    expect(tried.status).toBe(403);
    expectError(await poll(id), 'authorization_pending');
  });
});

describe('acr_values', () => {
  const MFA = 'urn:sigil:acr:mfa';
  const PASSWORD = 'urn:sigil:acr:password';
  // A server of its own: Alice enrolls a second factor here, which the other tests' sign-ins lack.
  let mfa: TestSigil;
  beforeAll(async () => {
    mfa = await startSigil({
      clients: [{ clientId: 'speaker', clientName: 'Smart Speaker', clientSecrets: ['speaker-secret'], ...ciba }],
    });
  });
  afterAll(async () => mfa?.close());

  /** The claims of the identity token that redeeming the approved `id` gives. */
  async function idTokenOf(id: string): Promise<Record<string, unknown>> {
    await sleep(1100);
    const res = await poll(id, POLL, mfa);
    expect(res.statusCode, res.body).toBe(200);
    const { payload } = await jwtVerify(res.json<TokenBody>().id_token as string, await fetchJwks(mfa), {
      audience: 'speaker',
    });
    return payload;
  }

  it('asking for MFA: approval takes the second factor first (step-up, then back), and the identity token says so', async () => {
    const id = await start({ acr_values: `urn:example:gold ${MFA}`, binding_message: 'MFA-1' }, POLL, mfa);
    // Signed in with the password only, before Alice had a second factor.
    const alice = await signedIn('alice', mfa);
    const listed = await requestForm(alice);
    expect(listed.body).toContain('Approving this request takes your second factor first.');

    // No factor at all: the approval is refused with the way to add one; nothing is recorded.
    const none = await answer(alice, id, 'approve');
    expect(none.status).toBe(403);
    expect(none.body).toContain('your account has none yet');
    expectError(await poll(id, POLL, mfa), 'authorization_pending');

    // Alice adds an authenticator app in another browser; this session still has no MFA.
    const other = await signedIn('alice', mfa);
    const { secret } = await enrollTotp(other);
    const stepUp = await answer(alice, id, 'approve');
    expect(stepUp.status).toBe(303);
    expect(stepUp.location).toBe('/account/mfa?return=%2Faccount%2Frequests');
    await sleep(1100);
    expectError(await poll(id, POLL, mfa), 'authorization_pending');

    const codePage = await alice.follow(stepUp);
    expect(isMfaPage(codePage)).toBe(true);
    expect(codePage.body).toContain('name="return" value="/account/requests"');
    const back = await submitCode(alice, codePage, totpCode(secret, 1));
    // Back on the list, which no longer asks for the second factor.
    expect(back.status, back.body).toBe(200);
    expect(back.body).toContain('MFA-1');
    expect(back.body).not.toContain('Approving this request takes your second factor first.');
    expect((await answer(alice, id, 'approve')).status).toBe(200);

    const claims = await idTokenOf(id);
    expect(claims.acr).toBe(MFA);
    expect(claims.amr).toEqual(expect.arrayContaining(['pwd', 'otp', 'mfa']));
  });

  it('a value Sigil does not know asks for nothing, as at authorize: the achieved class is asserted', async () => {
    const id = await start({ acr_values: 'urn:example:gold', login_hint: 'bob' }, POLL, mfa);
    const bob = await signedIn('bob', mfa);
    expect((await answer(bob, id, 'approve')).status).toBe(200);
    const claims = await idTokenOf(id);
    expect(claims.acr).toBe(PASSWORD);
    expect(claims.amr).toEqual(['pwd']);
  });

  it('a password request is met by a password sign-in; a denial never needs the second factor', async () => {
    const met = await start({ acr_values: `${PASSWORD} ${MFA}`, login_hint: 'bob' }, POLL, mfa);
    const bob = await signedIn('bob', mfa);
    expect((await answer(bob, met, 'approve')).status).toBe(200);
    expect((await idTokenOf(met)).acr).toBe(PASSWORD);
    const denied = await start({ acr_values: MFA, login_hint: 'bob' }, POLL, mfa);
    expect((await answer(bob, denied, 'deny')).status).toBe(200);
    expectError(await poll(denied, POLL, mfa), 'access_denied');
  });

  it('a step-up never returns to a place outside the account pages', async () => {
    const bob = await signedIn('bob', mfa);
    const page = await bob.get('/account/mfa?use=code&return=https%3A%2F%2Fevil.example%2F');
    expect(page.body).not.toContain('evil.example');
    expect(page.body).not.toContain('name="return"');
  });

  it('is bounded as at authorize', async () => {
    const res = await cibaRequest({ scope: 'openid', login_hint: 'alice', acr_values: 'x'.repeat(301) }, POLL, mfa);
    expectError(res, 'invalid_request');
  });
});

describe('audit events', () => {
  // A server of its own: these requests count against no other test's quota.
  let audited: TestSigil;
  beforeAll(async () => {
    audited = await startSigil({
      clients: [{ clientId: 'speaker', clientName: 'Smart Speaker', clientSecrets: ['speaker-secret'], ...ciba }],
    });
  });
  afterAll(async () => audited?.close());

  /** The stored audit events of the speaker (about `subjectId`, when given), oldest first, after a flush. */
  async function eventsOf(subjectId?: string) {
    const audit = audited.context.management.audit;
    await audit.flush();
    const { events } = await audit.query({ clientId: 'speaker', ...(subjectId ? { subjectId } : {}), limit: 200 });
    return events.reverse();
  }

  it('records the request, the approval or denial, the tokens issued and the expired poll', async () => {
    const bob = '2';
    const approved = await start({ login_hint: 'bob' }, POLL, audited);
    const denied = await start({ login_hint: 'bob', scope: 'openid' }, POLL, audited);
    const b = await signedIn('bob', audited);
    await answer(b, approved, 'approve');
    await answer(b, denied, 'deny');
    await sleep(1100);
    expect((await poll(approved, POLL, audited)).statusCode).toBe(200);
    expectError(await poll(denied, POLL, audited), 'access_denied');
    const expiring = await cibaRequest({ scope: 'openid', login_hint: 'bob', requested_expiry: '1' }, POLL, audited);
    const { auth_req_id: expired } = expiring.json<{ auth_req_id: string }>();
    await sleep(1100);
    expectError(await poll(expired, POLL, audited), 'expired_token');

    const about = await eventsOf(bob);
    expect(about.map((e) => [e.name, e.endpoint, e.scopes?.join(' ')])).toEqual([
      ['backchannel_authentication_succeeded', 'ciba', 'openid profile'],
      ['backchannel_authentication_succeeded', 'ciba', 'openid'],
      ['consent_granted', 'ciba_approval', 'openid profile'],
      ['consent_denied', 'ciba_approval', 'openid'],
      ['token_issued', 'token', 'openid profile'],
      ['backchannel_authentication_succeeded', 'ciba', 'openid'],
    ]);
    for (const e of about) expect(e.remoteAddress).toBeDefined();
    expect(about.find((e) => e.name === 'token_issued')?.grantType).toBe(GRANT);
    // A refused poll names the client and its error (the token endpoint names no user then).
    const failed = (await eventsOf()).filter((e) => e.name === 'token_issue_failed' && e.grantType === GRANT);
    expect(failed.map((e) => e.error)).toEqual(['access_denied', 'expired_token']);
    // No auth_req_id in any event.
    const all = JSON.stringify(await eventsOf());
    for (const id of [approved, denied, expired]) expect(all).not.toContain(id);
  });

  it('records a refused request with its error, and a failed client authentication as at the token endpoint', async () => {
    expectError(await cibaRequest({ scope: 'openid', login_hint: 'nobody' }, POLL, audited), 'unknown_user_id');
    expectError(
      await cibaRequest({ scope: 'openid', login_hint: 'alice' }, ['speaker', 'wrong'], audited),
      'invalid_client',
      401,
    );
    const events = await eventsOf();
    expect(events.find((e) => e.name === 'backchannel_authentication_failed')).toMatchObject({
      endpoint: 'ciba',
      error: 'unknown_user_id',
    });
    expect(events.find((e) => e.name === 'client_authentication_failed')).toMatchObject({
      endpoint: 'ciba',
      error: 'invalid_client',
    });
  });
});

describe('limits', () => {
  it('bounds the requests one client may make for one user, and holds back no other client', async () => {
    // The speaker asked Bob once above.
    for (let i = 0; i < 24; i++) await start({ login_hint: 'bob' });
    expectError(await cibaRequest({ scope: 'openid', login_hint: 'bob' }), 'temporarily_unavailable', 429);
    // Nothing else is held back: another client still asks Bob, the speaker still asks Alice.
    await start({ login_hint: 'bob', client_notification_token: 'kiosk-token' }, PING);
    await start({ login_hint: 'alice' });
  });
});

describe('discovery', () => {
  it('names the endpoint and the modes', async () => {
    const doc = (await sigil.app.inject('/.well-known/openid-configuration')).json<Record<string, unknown>>();
    expect(doc.backchannel_authentication_endpoint).toBe('http://127.0.0.1:5999/connect/ciba');
    expect(doc.backchannel_token_delivery_modes_supported).toEqual(['poll', 'ping']);
    expect(doc.backchannel_user_code_parameter_supported).toBe(false);
    expect(doc).not.toHaveProperty('backchannel_authentication_request_signing_alg_values_supported');
    expect(doc.grant_types_supported).toContain(GRANT);
  });
});

describe('on PostgreSQL', () => {
  const schema = uniqueSchema('sigil_ciba');
  let pg: TestSigil;
  beforeAll(async () => {
    pg = await startSigil({
      storage: `${POSTGRES_URL}?schema=${schema}`,
      clients: [{ clientId: 'speaker', clientName: 'Smart Speaker', clientSecrets: ['speaker-secret'], ...ciba }],
    });
  });
  afterAll(async () => {
    await pg?.close();
    await dropSchema(schema);
  });

  it('lists the request to its user, who approves it; tokens once', async () => {
    const id = await start({ binding_message: 'PG-1' }, POLL, pg);
    expectError(await poll(id, POLL, pg), 'authorization_pending');
    const alice = await signedIn('alice', pg);
    expect((await requestForm(alice)).body).toContain('PG-1');
    expect((await answer(alice, id, 'approve')).status).toBe(200);
    await sleep(1100);
    expect((await poll(id, POLL, pg)).statusCode).toBe(200);
    expectError(await poll(id, POLL, pg), 'invalid_grant');
  });
});
