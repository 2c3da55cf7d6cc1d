/**
 * Client authentication at the token endpoint (RFC 6749 §2.3, §3.2.1, §5.2).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { basic, form, startSigil, testConfig, tokenRequest, type TestSigil } from '../helpers.js';

const CC = { grant_type: 'client_credentials', scope: 'api1' };

describe('client authentication', () => {
  let sigil: TestSigil;
  beforeAll(async () => {
    // Many failures below come from one address: keep the limiter out of the way here.
    sigil = await startSigil({ rateLimits: { maxFailures: 1000, windowSeconds: 60 } });
  });
  afterAll(async () => sigil.close());

  const post = (payload: string, headers: Record<string, string | string[]> = {}, url = '/connect/token') =>
    sigil.app.inject({
      method: 'POST',
      url,
      headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
      payload,
    });

  it('accepts client_secret_basic', async () => {
    const res = await tokenRequest(sigil, CC, ['m2m', 'm2m-secret']);
    expect(res.statusCode).toBe(200);
  });

  it('accepts client_secret_post', async () => {
    const res = await tokenRequest(sigil, { ...CC, client_id: 'm2m', client_secret: 'm2m-secret' });
    expect(res.statusCode).toBe(200);
  });

  it('form-url-decodes the Basic id and secret (c:1 / s+/%)', async () => {
    const header = `Basic ${Buffer.from('c%3A1:s%2B%2F%25').toString('base64')}`;
    expect(basic('c:1', 's+/%')).toBe(header);
    const res = await post(form(CC), { authorization: header });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ token_type: 'Bearer', scope: 'api1' });
  });

  it('does not accept the undecoded Basic secret', async () => {
    const raw = `Basic ${Buffer.from('c%3A1:s+/%').toString('base64')}`;
    const res = await post(form(CC), { authorization: raw });
    expect(res.statusCode).toBe(401);
    expect(res.json()).toMatchObject({ error: 'invalid_client' });
  });

  it('treats the Basic scheme name case-insensitively', async () => {
    const res = await post(form(CC), { authorization: basic('m2m', 'm2m-secret').replace('Basic', 'bAsIc') });
    expect(res.statusCode).toBe(200);
  });

  it('answers a wrong secret via Basic with 401 invalid_client and WWW-Authenticate: Basic', async () => {
    const res = await tokenRequest(sigil, CC, ['m2m', 'wrong']);
    expect(res.statusCode).toBe(401);
    expect(res.json()).toMatchObject({ error: 'invalid_client' });
    expect(res.headers['www-authenticate']).toMatch(/^Basic realm="[^"]+"/);
    expect(res.headers['cache-control']).toBe('no-store');
  });

  it('answers a wrong secret via the body with 401 invalid_client and WWW-Authenticate: Basic (RFC 9110 §15.5.2)', async () => {
    const res = await tokenRequest(sigil, { ...CC, client_id: 'm2m', client_secret: 'wrong' });
    expect(res.statusCode).toBe(401);
    expect(res.json()).toMatchObject({ error: 'invalid_client' });
    expect(res.headers['www-authenticate']).toMatch(/^Basic realm="[^"]+"/);
  });

  it('answers an unknown client with 401 invalid_client, the same body as a wrong secret', async () => {
    const unknown = await tokenRequest(sigil, CC, ['nobody', 'm2m-secret']);
    const wrong = await tokenRequest(sigil, CC, ['m2m', 'wrong']);
    expect(unknown.statusCode).toBe(401);
    expect(unknown.json()).toMatchObject({ error: 'invalid_client' });
    expect(unknown.headers['www-authenticate']).toMatch(/^Basic /);
    expect(unknown.body).toBe(wrong.body);
  });

  it('answers a request without credentials with 401 invalid_client and WWW-Authenticate: Basic (RFC 9110 §15.5.2)', async () => {
    const res = await tokenRequest(sigil, CC);
    expect(res.statusCode).toBe(401);
    expect(res.json()).toMatchObject({ error: 'invalid_client' });
    expect(res.headers['www-authenticate']).toMatch(/^Basic realm="[^"]+"/);
  });

  it('refuses Basic together with client_secret in the body (400 invalid_request)', async () => {
    const res = await tokenRequest(sigil, { ...CC, client_secret: 'm2m-secret' }, ['m2m', 'm2m-secret']);
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ error: 'invalid_request' });
  });

  it('refuses a Basic client_id that differs from the body client_id', async () => {
    const res = await tokenRequest(sigil, { ...CC, client_id: 'm2m-ref' }, ['m2m', 'm2m-secret']);
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ error: 'invalid_request' });
  });

  it('refuses client_secret in the query string (400 invalid_request), even when it is right', async () => {
    const res = await post(form({ ...CC, client_id: 'm2m' }), {}, '/connect/token?client_secret=m2m-secret');
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ error: 'invalid_request' });
  });

  it('answers a confidential client that sends only client_id with 401 invalid_client', async () => {
    const res = await tokenRequest(sigil, { ...CC, client_id: 'm2m' });
    expect(res.statusCode).toBe(401);
    expect(res.json()).toMatchObject({ error: 'invalid_client' });
    expect(res.headers['www-authenticate']).toMatch(/^Basic /);
  });

  it('refuses a public client that presents a secret, in the body or by Basic (RFC 6749 §2.3; an empty Basic password is none, see below)', async () => {
    const params = { grant_type: 'password', username: 'alice', password: 'alice', scope: 'api1' };
    for (const [name, res] of [
      ['body', await tokenRequest(sigil, { ...params, client_id: 'spa', client_secret: 'anything' })],
      ['Basic', await tokenRequest(sigil, params, ['spa', 'anything'])],
    ] as const) {
      expect(res.statusCode, name).toBe(401);
      expect(res.json(), name).toMatchObject({ error: 'invalid_client' });
      expect(res.headers['www-authenticate'], name).toMatch(/^Basic /);
      expect(res.body, name).not.toContain('access_token');
    }
  });

  it('answers malformed Basic credentials with 401 invalid_client', async () => {
    for (const authorization of [
      'Basic !!!',
      `Basic ${Buffer.from('no-colon').toString('base64')}`,
      `Basic ${Buffer.from(':x').toString('base64')}`,
    ]) {
      const res = await post(form(CC), { authorization });
      expect(res.statusCode, authorization).toBe(401);
      expect(res.json()).toMatchObject({ error: 'invalid_client' });
      expect(res.headers['www-authenticate']).toMatch(/^Basic /);
    }
  });

  it('refuses a repeated Authorization header (400 invalid_request)', async () => {
    const res = await post(form(CC), { authorization: [basic('m2m', 'm2m-secret'), basic('m2m', 'm2m-secret')] });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ error: 'invalid_request' });
  });

  it('refuses a repeated client_id (400 invalid_request)', async () => {
    const res = await post('grant_type=client_credentials&client_id=m2m&client_id=m2m&client_secret=m2m-secret');
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ error: 'invalid_request' });
  });

  it('lets a public client authenticate with client_id alone', async () => {
    const res = await tokenRequest(sigil, {
      grant_type: 'password',
      username: 'alice',
      password: 'alice',
      scope: 'api1',
      client_id: 'spa',
    });
    expect(res.statusCode).toBe(200);
  });
});

describe('client authentication brute-force limit', () => {
  let sigil: TestSigil;
  beforeAll(async () => {
    sigil = await startSigil({ rateLimits: { maxFailures: 3, windowSeconds: 60 } });
  });
  afterAll(async () => sigil.close());

  const attempt = (secret: string, remoteAddress: string) =>
    sigil.app.inject({
      method: 'POST',
      url: '/connect/token',
      remoteAddress,
      headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: basic('m2m', secret) },
      payload: form(CC),
    });

  it('answers 429 with Retry-After after maxFailures from one address, even for the right secret; another address is not blocked', async () => {
    for (let i = 0; i < 3; i++) {
      const res = await attempt('wrong', '10.0.0.1');
      expect(res.statusCode).toBe(401);
    }
    const blocked = await attempt('wrong', '10.0.0.1');
    expect(blocked.statusCode).toBe(429);
    expect(Number(blocked.headers['retry-after'])).toBeGreaterThan(0);
    expect(Number(blocked.headers['retry-after'])).toBeLessThanOrEqual(60);
    expect(blocked.headers['content-type']).toMatch(/^application\/json/);
    expect(blocked.json()).toHaveProperty('error');

    const right = await attempt('m2m-secret', '10.0.0.1');
    expect(right.statusCode).toBe(429);
    expect(right.headers['retry-after']).toBeDefined();
    // Failures from one address never lock the client out elsewhere.
    const elsewhere = await attempt('m2m-secret', '10.0.0.2');
    expect(elsewhere.statusCode).toBe(200);
  });

  it("does not count a public client's empty Basic password as a failure", async () => {
    for (let i = 0; i < 5; i++) {
      const res = await sigil.app.inject({
        method: 'POST',
        url: '/connect/token',
        remoteAddress: '10.0.0.4',
        headers: {
          'content-type': 'application/x-www-form-urlencoded',
          authorization: `Basic ${Buffer.from('spa:').toString('base64')}`,
        },
        payload: form({ grant_type: 'password', username: 'alice', password: 'alice', scope: 'api1' }),
      });
      expect(res.statusCode, res.body).toBe(200);
    }
  });

  it('does not block other clients from another address', async () => {
    const res = await sigil.app.inject({
      method: 'POST',
      url: '/connect/token',
      remoteAddress: '10.0.0.3',
      headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: basic('m2m-ref', 'm2m-secret') },
      payload: form(CC),
    });
    expect(res.statusCode).toBe(200);
  });
});

describe('an empty Basic password is no secret (RFC 6749 §2.3.1), at every endpoint that authenticates clients', () => {
  const DEVICE_GRANT = 'urn:ietf:params:oauth:grant-type:device_code';
  let sigil: TestSigil;
  beforeAll(async () => {
    const base = testConfig();
    sigil = await startSigil({
      rateLimits: { maxFailures: 1000, windowSeconds: 60 },
      clients: [
        ...(base.clients ?? []),
        // A public client as oidc-agent registers it: it sends `Basic base64(client_id:)` everywhere.
        {
          clientId: 'agent',
          requireClientSecret: false,
          allowedGrantTypes: ['password', 'refresh_token', 'authorization_code', DEVICE_GRANT],
          allowedScopes: ['openid', 'api1', 'offline_access'],
          allowOfflineAccess: true,
          redirectUris: ['http://127.0.0.1/cb'],
        },
      ],
    });
  });
  afterAll(async () => sigil.close());

  const emptyPassword = (id: string) => `Basic ${Buffer.from(`${id}:`).toString('base64')}`;
  const pushed = {
    response_type: 'code',
    redirect_uri: 'http://127.0.0.1/cb',
    scope: 'openid',
    code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWjuydleJV84e4',
    code_challenge_method: 'S256',
  };
  const call = (url: string, params: Record<string, string>, authorization?: string) =>
    sigil.app.inject({
      method: 'POST',
      url,
      headers: { 'content-type': 'application/x-www-form-urlencoded', ...(authorization ? { authorization } : {}) },
      payload: form(params),
    });

  it('authenticates a public client sending Basic with an empty password as method none at token, revocation, PAR and device authorization', async () => {
    const tokens = await call(
      '/connect/token',
      { grant_type: 'password', username: 'alice', password: 'alice', scope: 'openid api1 offline_access' },
      emptyPassword('agent'),
    );
    expect(tokens.statusCode, tokens.body).toBe(200);
    const { refresh_token: refreshToken } = tokens.json<{ refresh_token: string }>();
    const refreshed = await call(
      '/connect/token',
      { grant_type: 'refresh_token', refresh_token: refreshToken },
      emptyPassword('agent'),
    );
    expect(refreshed.statusCode, refreshed.body).toBe(200);
    const next = refreshed.json<{ refresh_token: string }>().refresh_token;

    const par = await call('/connect/par', pushed, emptyPassword('agent'));
    expect(par.statusCode, par.body).toBe(201);
    expect(par.json()).toHaveProperty('request_uri');

    const device = await call('/connect/deviceauthorization', { scope: 'openid api1' }, emptyPassword('agent'));
    expect(device.statusCode, device.body).toBe(200);
    expect(device.json()).toHaveProperty('device_code');

    const revoked = await call(
      '/connect/revocation',
      { token: next, token_type_hint: 'refresh_token' },
      emptyPassword('agent'),
    );
    expect(revoked.statusCode, revoked.body).toBe(200);
    const afterRevocation = await call(
      '/connect/token',
      { grant_type: 'refresh_token', refresh_token: next },
      emptyPassword('agent'),
    );
    expect(afterRevocation.statusCode).toBe(400);
    expect(afterRevocation.json()).toMatchObject({ error: 'invalid_grant' });
  });

  it('still refuses introspection to a public client, with or without the empty Basic password', async () => {
    const { access_token: token } = (
      await call(
        '/connect/token',
        { grant_type: 'password', username: 'alice', password: 'alice', scope: 'api1' },
        emptyPassword('agent'),
      )
    ).json<{ access_token: string }>();
    for (const [name, res] of [
      ['empty Basic password', await call('/connect/introspect', { token }, emptyPassword('agent'))],
      ['client_id in the body', await call('/connect/introspect', { token, client_id: 'agent' })],
    ] as const) {
      expect(res.statusCode, name).toBe(401);
      expect(res.json(), name).toEqual({
        error: 'invalid_client',
        error_description: 'public clients cannot introspect',
      });
      expect(res.body, name).not.toContain('"active"');
    }
  });

  it('refuses a non-empty secret from a public client, and an empty Basic password from a confidential client, at every endpoint', async () => {
    const endpoints: [string, Record<string, string>][] = [
      ['/connect/token', { grant_type: 'password', username: 'alice', password: 'alice', scope: 'api1' }],
      ['/connect/revocation', { token: 'x'.repeat(43) }],
      ['/connect/introspect', { token: 'x'.repeat(43) }],
      ['/connect/par', pushed],
      ['/connect/deviceauthorization', { scope: 'api1' }],
    ];
    for (const [url, params] of endpoints) {
      for (const [name, authorization] of [
        ['public client, non-empty secret', basic('agent', 'x')],
        ['public client, a space as secret', basic('agent', ' ')],
        ['confidential client, empty password', emptyPassword('ropc')],
        ['unknown client, empty password', emptyPassword('nobody')],
      ] as const) {
        const res = await call(url, params, authorization);
        expect(res.statusCode, `${url}: ${name}`).toBe(401);
        expect(res.json(), `${url}: ${name}`).toMatchObject({ error: 'invalid_client' });
        expect(res.headers['www-authenticate'], `${url}: ${name}`).toMatch(/^Basic /);
      }
    }
  });
});
