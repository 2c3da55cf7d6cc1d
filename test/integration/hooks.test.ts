/**
 * Synchronous hooks (DESIGN §6b "Webhooks and hooks") over real parts: the provider on SQLite (one
 * suite on PostgreSQL too), a loopback receiver that verifies each call's Standard Webhooks
 * signature and answers as the test says, the token endpoint and the code flow through the
 * authorize helpers, dynamic client registration and the self-registration page.
 */
import { decodeJwt } from 'jose';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { authorizeClients, Browser, codeParams, input, pkce, readResponse, redeem } from '../authorize-helpers.js';
import { ConfigError, type ConfigInput } from '../../src/index.js';
import { HOOK_FAILED_DESCRIPTION } from '../../src/webhooks/hooks.js';
import {
  clientTokens,
  dropSchema,
  form,
  POSTGRES_URL,
  sleep,
  startSigil,
  testConfig,
  type TestSigil,
  tokenRequest,
  uniqueSchema,
} from '../helpers.js';
import { registrationConfig } from '../registration-helpers.js';
import { SmtpReceiver } from '../smtp-receiver.js';
import { CONFIG_SECRET } from '../webhook-helpers.js';
import { startReceiver, type Receiver } from '../webhook-receiver.js';

const M2M = ['m2m', 'm2m-secret'] as const;
const ROPC = ['ropc', 'ropc-secret'] as const;
const DEVICE_GRANT = 'urn:ietf:params:oauth:grant-type:device_code';
const TOKEN_EXCHANGE = 'urn:ietf:params:oauth:grant-type:token-exchange';
/** A secret the receiver may sign with that is not the hook's. */
const OTHER_SECRET = `whsec_${Buffer.alloc(32, 9).toString('base64')}`;

/** The test config's clients and the authorize suites' browser clients (ids of both sets apart). */
function clients(): NonNullable<ConfigInput['clients']> {
  const browser = authorizeClients().filter((c) => !['spa', 'other'].includes(c.clientId));
  const tv = {
    clientId: 'tv',
    requireClientSecret: false,
    allowedGrantTypes: [DEVICE_GRANT],
    allowedScopes: ['openid', 'profile', 'api1'],
    pollingInterval: 1,
  };
  return [...(testConfig().clients ?? []), ...browser, tv];
}

/** A provider whose `hooks.preToken` posts to `receiver` with `onFailure`. */
function withPreToken(
  receiver: Receiver,
  onFailure: 'deny' | 'continue',
  overrides: Partial<ConfigInput> = {},
): Promise<TestSigil> {
  return startSigil({
    clients: clients(),
    hooks: { preToken: { url: `${receiver.url}/pre-token`, secret: CONFIG_SECRET, timeoutMs: 500, onFailure } },
    ...overrides,
  });
}

/** The verified event of the receiver's last call (its signature checked with the hook's secret). */
function lastEvent(receiver: Receiver): Record<string, unknown> {
  const last = receiver.received.at(-1);
  expect(last?.verified, 'the call verifies with the hook secret').toBeDefined();
  return last?.verified as unknown as Record<string, unknown>;
}

/** A client_credentials token request by m2m for `api1`. */
function m2mToken(sigil: TestSigil) {
  return tokenRequest(sigil, { grant_type: 'client_credentials', scope: 'api1' }, M2M);
}

describe('preToken with onFailure deny', () => {
  let receiver: Receiver;
  let sigil: TestSigil;
  beforeAll(async () => {
    receiver = await startReceiver([CONFIG_SECRET]);
    sigil = await withPreToken(receiver, 'deny');
  });
  afterAll(async () => {
    await sigil?.close();
    await receiver?.close();
  });
  afterEach(() => {
    receiver.replies = [];
    receiver.otherwise = 204;
  });

  it('adds claims to a client_credentials access token; the protected ones stay Sigil’s', async () => {
    receiver.replies = [
      {
        json: {
          accessToken: {
            claims: {
              tier: 'gold',
              limits: { rpm: 600 },
              sub: 'evil',
              iss: 'https://evil.example',
              scope: 'everything',
              org_id: 'org-x',
              client_id: 'other',
              act: { sub: 'x' },
              aud: 'api9',
            },
          },
        },
      },
    ];
    const res = await m2mToken(sigil);
    expect(res.statusCode, res.body).toBe(200);
    const claims = decodeJwt(res.json().access_token);
    expect(claims).toMatchObject({ tier: 'gold', limits: { rpm: 600 } });
    expect(claims.sub).toBe('m2m');
    expect(claims.iss).toBe('http://127.0.0.1:5999');
    expect(claims.scope).toBe('api1');
    expect(claims.client_id).toBe('m2m');
    expect(claims.aud).toBe('api1');
    expect(claims.org_id).toBeUndefined();
    expect(claims.act).toBeUndefined();
    expect(lastEvent(receiver)).toEqual({
      client: { clientId: 'm2m', clientName: null },
      subject: null,
      scopes: ['api1'],
      grantType: 'client_credentials',
      organization: null,
      claims: {},
    });
  });

  it('code flow: asked once at authorize, the code carries the claims to both tokens, a refresh keeps them', async () => {
    const { verifier, challenge } = pkce();
    receiver.replies = [
      {
        json: {
          accessToken: { claims: { plan: 'pro', scope: 'admin' } },
          idToken: { claims: { department: 'sales', sub: 'mallory', nonce: 'forged', amr: ['hwk'] } },
        },
      },
    ];
    const before = receiver.received.length;
    const b = new Browser(sigil);
    const r = readResponse(await b.authorize(codeParams(challenge)));
    const code = r.params.get('code') ?? '';
    expect(receiver.received.length).toBe(before + 1);
    const event = lastEvent(receiver);
    expect(event).toMatchObject({ subject: '1', grantType: 'authorization_code', client: { clientId: 'web' } });
    expect((event.claims as Record<string, unknown>).email).toBe('alice@example.com');
    const res = await redeem(sigil, code, { verifier });
    expect(res.statusCode, res.body).toBe(200);
    // The token endpoint did not ask again: the code carried the answer.
    expect(receiver.received.length).toBe(before + 1);
    const tokens = res.json();
    const access = decodeJwt(tokens.access_token);
    expect(access.plan).toBe('pro');
    expect(access.scope).toBe('openid profile api1 offline_access');
    const id = decodeJwt(tokens.id_token);
    expect(id).toMatchObject({ department: 'sales', sub: '1', nonce: 'n-1', amr: ['pwd'] });
    expect(id.plan).toBeUndefined();

    // A refresh asks again (grant type refresh_token); an empty answer keeps the grant's claims.
    receiver.replies = [{ json: {} }];
    const refreshed = await tokenRequest(sigil, { grant_type: 'refresh_token', refresh_token: tokens.refresh_token }, [
      'web',
      'web-secret',
    ]);
    expect(refreshed.statusCode, refreshed.body).toBe(200);
    expect(lastEvent(receiver)).toMatchObject({ grantType: 'refresh_token', subject: '1' });
    expect(decodeJwt(refreshed.json().access_token).plan).toBe('pro');
    expect(decodeJwt(refreshed.json().id_token).department).toBe('sales');
  });

  it('a denial at the token endpoint is invalid_grant with the description', async () => {
    receiver.replies = [{ json: { deny: { error: 'access_denied', description: 'no tokens on Sundays' } } }];
    const res = await m2mToken(sigil);
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({ error: 'invalid_grant', error_description: 'no tokens on Sundays' });
  });

  it('a denial at authorize reaches the client as access_denied with the description', async () => {
    const { challenge } = pkce();
    receiver.replies = [{ json: { deny: { description: 'contractors may not use this app' } } }];
    const r = readResponse(await new Browser(sigil).authorize(codeParams(challenge)));
    expect(r.params.get('error')).toBe('access_denied');
    expect(r.params.get('error_description')).toBe('contractors may not use this app');
    expect(r.params.has('code')).toBe(false);
  });

  it('a denied refresh leaves the refresh token usable', async () => {
    const { verifier, challenge } = pkce();
    receiver.replies = [{ json: {} }];
    const code = readResponse(await new Browser(sigil).authorize(codeParams(challenge))).params.get('code') ?? '';
    const refreshToken = (await redeem(sigil, code, { verifier })).json().refresh_token;
    const refresh = () =>
      tokenRequest(sigil, { grant_type: 'refresh_token', refresh_token: refreshToken }, ['web', 'web-secret']);
    receiver.replies = [{ json: { deny: { description: 'not now' } } }];
    const denied = await refresh();
    expect(denied.json()).toEqual({ error: 'invalid_grant', error_description: 'not now' });
    receiver.replies = [{ json: {} }];
    expect((await refresh()).statusCode).toBe(200);
  });

  it('the password grant asks too, with the user', async () => {
    receiver.replies = [{ json: { accessToken: { claims: { via: 'ropc' } } } }];
    const res = await tokenRequest(
      sigil,
      { grant_type: 'password', username: 'bob', password: 'bob', scope: 'api1' },
      ROPC,
    );
    expect(res.statusCode, res.body).toBe(200);
    expect(decodeJwt(res.json().access_token).via).toBe('ropc');
    expect(lastEvent(receiver)).toMatchObject({ grantType: 'password', subject: '2' });
  });

  it('device code: a denial leaves the device code redeemable; the next poll gets the claims', async () => {
    const started = await sigil.app.inject({
      method: 'POST',
      url: '/connect/deviceauthorization',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: form({ client_id: 'tv', scope: 'openid api1' }),
    });
    const d = started.json();
    const b = new Browser(sigil);
    const page = await b.get(`/device?userCode=${d.user_code}`);
    const entered = await b.post('/device', {
      csrf_token: input(page.body, 'csrf_token'),
      userCode: d.user_code,
      button: 'submit',
    });
    const consent = await b.login(entered.location ?? '', 'alice');
    expect(consent.body).toContain('value="yes"');
    await b.consent(consent, 'yes');
    const poll = () =>
      sigil.app.inject({
        method: 'POST',
        url: '/connect/token',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        payload: form({ grant_type: DEVICE_GRANT, client_id: 'tv', device_code: d.device_code }),
      });
    receiver.replies = [{ json: { deny: { description: 'devices need a second look' } } }];
    expect((await poll()).json()).toEqual({ error: 'invalid_grant', error_description: 'devices need a second look' });
    expect(lastEvent(receiver)).toMatchObject({ grantType: DEVICE_GRANT, subject: '1' });
    // Past the 1 s polling interval.
    await sleep(1100);
    receiver.replies = [{ json: { accessToken: { claims: { device: 'tv' } } } }];
    const granted = await poll();
    expect(granted.statusCode, granted.body).toBe(200);
    expect(decodeJwt(granted.json().access_token).device).toBe('tv');
  });

  it('token exchange asks with its grant type', async () => {
    receiver.replies = [{ json: {} }];
    const subjectToken = (
      await tokenRequest(sigil, { grant_type: 'password', username: 'alice', password: 'alice', scope: 'api1' }, ROPC)
    ).json().access_token;
    receiver.replies = [{ json: { accessToken: { claims: { exchanged: true } } } }];
    const res = await tokenRequest(
      sigil,
      {
        grant_type: TOKEN_EXCHANGE,
        subject_token: subjectToken,
        subject_token_type: 'urn:ietf:params:oauth:token-type:access_token',
        scope: 'api1',
      },
      ROPC,
    );
    expect(res.statusCode, res.body).toBe(200);
    expect(decodeJwt(res.json().access_token).exchanged).toBe(true);
    expect(lastEvent(receiver)).toMatchObject({ grantType: TOKEN_EXCHANGE, subject: '1' });
  });

  it.each([
    ['no answer in time', 'hang' as const],
    ['a 500', 500],
    ['a 302 (not followed)', 302],
    ['an answer the schema refuses', { json: { accessToken: { claims: 'all' } } }],
    ['a description with a quote', { json: { deny: { description: 'say "no"' } } }],
    ['an answer signed with another secret', { json: { accessToken: { claims: { x: 1 } } }, signWith: OTHER_SECRET }],
    [
      'an answer signed for another call',
      { json: { accessToken: { claims: { x: 1 } } }, signWith: CONFIG_SECRET, signId: 'msg_other' },
    ],
    ['a 50 MB answer', 'huge' as const],
  ])('%s is a failure: denied with a generic description', async (_name, reply) => {
    receiver.replies = [reply];
    const res = await m2mToken(sigil);
    expect(res.statusCode, res.body).toBe(400);
    expect(res.json()).toEqual({ error: 'invalid_grant', error_description: HOOK_FAILED_DESCRIPTION });
  });

  it('a 50 MB answer is not read whole', async () => {
    const before = process.memoryUsage();
    receiver.replies = ['huge', 'huge', 'huge'];
    for (let i = 0; i < 3; i++) expect((await m2mToken(sigil)).statusCode).toBe(400);
    const after = process.memoryUsage();
    // 150 MB were offered; what was read stops at 64 KiB per answer.
    expect(after.arrayBuffers - before.arrayBuffers).toBeLessThan(40 * 1024 * 1024);
  });

  it('an answer signed with the hook secret for this call is taken; an empty 204 allows unchanged', async () => {
    receiver.replies = [{ json: { accessToken: { claims: { signed: true } } }, signWith: CONFIG_SECRET }];
    const signed = await m2mToken(sigil);
    expect(signed.statusCode, signed.body).toBe(200);
    expect(decodeJwt(signed.json().access_token).signed).toBe(true);
    receiver.replies = [204];
    const plain = await m2mToken(sigil);
    expect(plain.statusCode).toBe(200);
    expect(decodeJwt(plain.json().access_token).signed).toBeUndefined();
  });

  it('counts the calls by hook and outcome', async () => {
    receiver.replies = [{ json: {} }];
    await m2mToken(sigil);
    const text = (await sigil.metricsApp.inject({ method: 'GET', url: '/metrics' })).body;
    expect(text).toMatch(/sigil_hook_calls_total\{hook="preToken",outcome="allowed"\} [1-9]/);
    expect(text).toMatch(/sigil_hook_calls_total\{hook="preToken",outcome="failed_denied"\} [1-9]/);
    expect(text).toMatch(/sigil_hook_calls_total\{hook="preToken",outcome="denied"\} [1-9]/);
  });
});

describe('preToken with onFailure continue', () => {
  let receiver: Receiver;
  let sigil: TestSigil;
  beforeAll(async () => {
    receiver = await startReceiver([CONFIG_SECRET]);
    sigil = await withPreToken(receiver, 'continue');
  });
  afterAll(async () => {
    await sigil?.close();
    await receiver?.close();
  });

  it.each([
    ['no answer in time', 'hang' as const],
    ['an answer signed with another secret', { json: { accessToken: { claims: { x: 1 } } }, signWith: OTHER_SECRET }],
  ])('%s: the token is issued unchanged', async (_name, reply) => {
    receiver.replies = [reply];
    const res = await m2mToken(sigil);
    expect(res.statusCode, res.body).toBe(200);
    expect(decodeJwt(res.json().access_token).x).toBeUndefined();
  });

  it('a denial still denies', async () => {
    receiver.replies = [{ json: { deny: { description: 'revoked partner' } } }];
    expect((await m2mToken(sigil)).json()).toEqual({ error: 'invalid_grant', error_description: 'revoked partner' });
  });
});

describe('hook URLs', () => {
  it('plain http to a host that is not loopback is refused when the config loads', async () => {
    for (const url of ['http://hooks.example/pre-token', 'http://169.254.169.254/latest', 'ftp://127.0.0.1/x'])
      await expect(startSigil({ hooks: { preToken: { url, secret: CONFIG_SECRET } } }), url).rejects.toBeInstanceOf(
        ConfigError,
      );
  });

  it('an https URL at an internal address is never called: a failure', async () => {
    const sigil = await startSigil({
      hooks: { preToken: { url: 'https://10.0.0.1/pre-token', secret: CONFIG_SECRET, onFailure: 'deny' } },
    });
    try {
      expect((await m2mToken(sigil)).json()).toEqual({
        error: 'invalid_grant',
        error_description: HOOK_FAILED_DESCRIPTION,
      });
    } finally {
      await sigil.close();
    }
  });
});

describe('hooks as functions (createSigil options)', () => {
  it('a preToken function adds claims; one that throws denies', async () => {
    let fail = false;
    const sigil = await startSigil(
      {},
      {
        hooks: {
          preToken: async (event) => {
            if (fail) throw new Error('directory down');
            return { accessToken: { claims: { grant: event.grantType, client: event.client.clientId } } };
          },
        },
      },
    );
    try {
      const res = await m2mToken(sigil);
      expect(decodeJwt(res.json().access_token)).toMatchObject({ grant: 'client_credentials', client: 'm2m' });
      fail = true;
      expect((await m2mToken(sigil)).json()).toEqual({
        error: 'invalid_grant',
        error_description: HOOK_FAILED_DESCRIPTION,
      });
    } finally {
      await sigil.close();
    }
  });

  it('a postLogin function that denies keeps the user out, with its description', async () => {
    const sigil = await startSigil(
      {},
      {
        hooks: {
          postLogin: async ({ subject }) =>
            subject === '2' ? { deny: { error: 'access_denied', description: 'bob is suspended' } } : {},
        },
      },
    );
    try {
      const b = new Browser(sigil);
      const page = await b.get('/account/login');
      const denied = await b.submitLogin(page, 'bob', 'bob');
      expect(denied.status).toBe(403);
      expect(denied.body).toContain('bob is suspended');
      expect(b.cookies.has('sigil.session')).toBe(false);
      await b.signIn('alice');
    } finally {
      await sigil.close();
    }
  });

  it('a hook both in the config and a function stops the start', async () => {
    await expect(
      startSigil(
        { hooks: { preToken: { url: 'http://127.0.0.1:9/x', secret: CONFIG_SECRET } } },
        { hooks: { preToken: () => ({}) } },
      ),
    ).rejects.toThrow(/both in the config and in createSigil/);
  });
});

describe('preRegistration', () => {
  let receiver: Receiver;
  let smtp: SmtpReceiver;
  let sigil: TestSigil;
  beforeAll(async () => {
    receiver = await startReceiver([CONFIG_SECRET]);
    smtp = await new SmtpReceiver().start();
    sigil = await startSigil({
      ...registrationConfig({ open: true }),
      email: { smtpUrl: smtp.url, from: 'id@acme.example', selfRegistration: true },
      hooks: { preRegistration: { url: `${receiver.url}/pre-registration`, secret: CONFIG_SECRET } },
    });
  });
  afterAll(async () => {
    await sigil?.close();
    await smtp?.close();
    await receiver?.close();
  });

  const register = () =>
    sigil.app.inject({
      method: 'POST',
      url: '/connect/register',
      headers: { 'content-type': 'application/json' },
      payload: { redirect_uris: ['https://rp.example/cb'], client_name: 'Hooked' },
    });

  it('a dynamic registration denied is access_denied with the description, and nothing is registered', async () => {
    receiver.replies = [{ json: { deny: { error: 'access_denied', description: 'registrations are closed' } } }];
    const res = await register();
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({ error: 'access_denied', error_description: 'registrations are closed' });
    expect(lastEvent(receiver)).toMatchObject({ kind: 'client', metadata: { client_name: 'Hooked' } });
    receiver.replies = [{ json: {} }];
    const allowed = await register();
    expect(allowed.statusCode, allowed.body).toBe(201);
  });

  it('a self-registration denied shows the description on the form and sends no link', async () => {
    receiver.replies = [{ json: { deny: { description: 'use your company account' } } }];
    const b = new Browser(sigil, '198.51.100.7');
    const page = await b.get('/account/register');
    const sent = smtp.mails.length;
    const res = await b.post('/account/register', {
      csrf_token: input(page.body, 'csrf_token'),
      email: 'zoe@example.net',
    });
    expect(res.status).toBe(403);
    expect(res.body).toContain('use your company account');
    expect(lastEvent(receiver)).toMatchObject({ kind: 'user', email: 'zoe@example.net', ip: '198.51.100.7' });
    await new Promise((done) => setTimeout(done, 200));
    expect(smtp.mails.length).toBe(sent);
  });
});

describe('preToken on PostgreSQL', () => {
  it('adds claims to a client_credentials token', async () => {
    const receiver = await startReceiver([CONFIG_SECRET]);
    const schema = uniqueSchema('hooks');
    const sigil = await withPreToken(receiver, 'deny', { storage: `${POSTGRES_URL}?schema=${schema}` });
    try {
      receiver.replies = [{ json: { accessToken: { claims: { region: 'eu' } } } }];
      const token = (await clientTokens(sigil, 'api1', M2M)).access_token;
      expect(decodeJwt(token).region).toBe('eu');
    } finally {
      await sigil.close();
      await receiver.close();
      await dropSchema(schema);
    }
  });
});
