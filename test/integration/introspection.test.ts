/**
 * Token introspection (RFC 7662), compared with Duende IdentityServer's.
 * An API resource sees only access tokens addressed to it, never refresh tokens.
 * Sigil answers unauthenticated callers with a 401 `invalid_client` JSON body (RFC 7662 §2.3 →
 * RFC 6749 §5.2) and a missing token with `invalid_request`.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  type BasicCredentials,
  basic,
  clientTokens,
  introspect,
  passwordTokens,
  postForm,
  startSigil,
  testConfig,
  type TestSigil,
} from '../helpers.js';

const ISSUER = 'http://127.0.0.1:5999';
const API1: BasicCredentials = ['api1', 'api1-secret'];
const API2: BasicCredentials = ['api2', 'api2-secret'];
const ROPC: BasicCredentials = ['ropc', 'ropc-secret'];

describe('introspection', () => {
  let sigil: TestSigil;
  beforeAll(async () => {
    const base = testConfig();
    sigil = await startSigil({
      rateLimits: { maxFailures: 1000, windowSeconds: 60 },
      clients: [
        ...(base.clients ?? []),
        {
          clientId: 'brief',
          clientSecrets: ['s'],
          allowedGrantTypes: ['client_credentials'],
          allowedScopes: ['api1'],
          accessTokenLifetime: 2,
        },
        {
          clientId: 'brief-ref',
          clientSecrets: ['s'],
          allowedGrantTypes: ['client_credentials'],
          allowedScopes: ['api1'],
          accessTokenLifetime: 2,
          accessTokenType: 'reference',
        },
      ],
    });
  });
  afterAll(async () => sigil.close());

  it('shows an API its JWT access token as active with the RFC 7662 §2.2 members', async () => {
    const { access_token } = await passwordTokens(sigil, { scope: 'openid api1' });
    const res = await introspect(sigil, access_token, API1);
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(res.headers['cache-control']).toBe('no-store');
    const body = res.json<Record<string, unknown>>();
    expect(body).toMatchObject({
      active: true,
      sub: '1',
      client_id: 'ropc',
      scope: 'openid api1',
      iss: ISSUER,
      aud: 'api1',
      token_type: 'Bearer',
    });
    expect(body.exp).toBe((body.iat as number) + 3600);
    expect(body.iat).toEqual(expect.any(Number));
  });

  it('shows an API a reference token as active', async () => {
    const { access_token } = await clientTokens(sigil, 'api1', ['m2m-ref', 'm2m-secret']);
    const body = (await introspect(sigil, access_token, API1)).json<Record<string, unknown>>();
    expect(body).toMatchObject({
      active: true,
      sub: 'm2m-ref',
      client_id: 'm2m-ref',
      scope: 'api1',
      iss: ISSUER,
      aud: 'api1',
    });
    expect(body.exp).toEqual(expect.any(Number));
    expect(body.iat).toEqual(expect.any(Number));
    expect(body.token_type).toBe('Bearer');
  });

  it('accepts the API credentials in the body (client_secret_post form)', async () => {
    const { access_token } = await clientTokens(sigil, 'api1');
    const res = await postForm(sigil, '/connect/introspect', {
      token: access_token,
      client_id: 'api1',
      client_secret: 'api1-secret',
    });
    expect(res.json()).toMatchObject({ active: true });
  });

  it('answers exactly {"active":false} for a token without the caller\'s API', async () => {
    const { access_token } = await clientTokens(sigil, 'api2');
    const res = await introspect(sigil, access_token, API1);
    expect(res.statusCode).toBe(200);
    expect(res.body).toBe('{"active":false}');
  });

  it('authenticates api2 with its sha256: secret', async () => {
    const { access_token } = await clientTokens(sigil, 'api2');
    expect((await introspect(sigil, access_token, API2)).json()).toMatchObject({
      active: true,
      aud: 'api2',
      scope: 'api2',
    });
    const multi = await clientTokens(sigil, 'api1 api2');
    expect((await introspect(sigil, multi.access_token, API2)).json()).toMatchObject({
      active: true,
      aud: ['api1', 'api2'],
    });
    // The configured digest is not itself a secret that works.
    const digest = testConfig().apiResources![1]!.secrets![0]!;
    const res = await introspect(sigil, access_token, ['api2', digest]);
    expect(res.statusCode).toBe(401);
  });

  it('answers {"active":false} for garbage, truncated, tampered, expired and revoked tokens', async () => {
    const jwt = await clientTokens(sigil, 'api1');
    const [h, p, s] = jwt.access_token.split('.') as [string, string, string];
    const tampered = `${h}.${Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(p, 'base64url').toString()), sub: 'x' })).toString('base64url')}.${s}`;
    for (const token of ['garbage', jwt.access_token.slice(0, -5), tampered, 'A'.repeat(43), 'x'.repeat(9000)]) {
      const res = await introspect(sigil, token, API1);
      expect(res.statusCode).toBe(200);
      expect(res.body).toBe('{"active":false}');
    }

    // Sigil's clock (Date only) stands still from issuance to the first look and is then moved past
    // the 2 s lifetime: with real time a slow machine could see the tokens expire before the first.
    vi.useFakeTimers({ toFake: ['Date'], now: Date.now() });
    try {
      const brief = await clientTokens(sigil, 'api1', ['brief', 's']);
      const briefRef = await clientTokens(sigil, 'api1', ['brief-ref', 's']);
      expect((await introspect(sigil, brief.access_token, API1)).json()).toMatchObject({ active: true });
      expect((await introspect(sigil, briefRef.access_token, API1)).json()).toMatchObject({ active: true });
      vi.setSystemTime(Date.now() + 3100);
      expect((await introspect(sigil, brief.access_token, API1)).body).toBe('{"active":false}');
      expect((await introspect(sigil, briefRef.access_token, API1)).body).toBe('{"active":false}');
    } finally {
      vi.useRealTimers();
    }

    const ref = await clientTokens(sigil, 'api1', ['m2m-ref', 'm2m-secret']);
    expect(
      (await postForm(sigil, '/connect/revocation', { token: ref.access_token }, ['m2m-ref', 'm2m-secret'])).statusCode,
    ).toBe(200);
    expect((await introspect(sigil, ref.access_token, API1)).body).toBe('{"active":false}');
  });

  it('finds the token whatever the token_type_hint', async () => {
    const { access_token } = await clientTokens(sigil, 'api1');
    for (const hint of ['refresh_token', 'access_token', 'foo']) {
      expect((await introspect(sigil, access_token, API1, { token_type_hint: hint })).json(), hint).toMatchObject({
        active: true,
      });
    }
  });

  it('answers a missing token with 400 invalid_request', async () => {
    const res = await postForm(sigil, '/connect/introspect', {}, API1);
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ error: 'invalid_request' });
  });

  it('answers missing, wrong and unknown caller credentials with 401 invalid_client, WWW-Authenticate and no token data', async () => {
    const { access_token } = await clientTokens(sigil, 'api1');
    const cases: [string, Promise<Awaited<ReturnType<typeof postForm>>>][] = [
      ['none', postForm(sigil, '/connect/introspect', { token: access_token })],
      ['wrong API secret', introspect(sigil, access_token, ['api1', 'wrong'])],
      [
        'wrong API secret in body',
        postForm(sigil, '/connect/introspect', { token: access_token, client_id: 'api1', client_secret: 'x' }),
      ],
      ['API without secret', postForm(sigil, '/connect/introspect', { token: access_token, client_id: 'api1' })],
      ['unknown caller', introspect(sigil, access_token, ['nobody', 'x'])],
      ['wrong client secret', introspect(sigil, access_token, ['m2m', 'wrong'])],
      ['public client', postForm(sigil, '/connect/introspect', { token: access_token, client_id: 'spa' })],
    ];
    for (const [name, pending] of cases) {
      const res = await pending;
      expect(res.statusCode, name).toBe(401);
      expect(res.json(), name).toMatchObject({ error: 'invalid_client' });
      expect(res.body).not.toContain('active');
      // RFC 9110 §15.5.2: every 401 carries a challenge, whatever the caller tried.
      expect(res.headers['www-authenticate'], name).toMatch(/^Basic realm="[^"]+"/);
    }
  });

  it('answers a public client (spa) with 401 invalid_client', async () => {
    const { access_token } = await passwordTokens(sigil, { scope: 'openid api1' });
    const res = await postForm(sigil, '/connect/introspect', { token: access_token, client_id: 'spa' });
    expect(res.statusCode).toBe(401);
    expect(res.json()).toMatchObject({ error: 'invalid_client' });
  });

  it("shows a confidential client its own tokens, and not another client's", async () => {
    const own = await clientTokens(sigil, 'api1');
    expect((await introspect(sigil, own.access_token, ['m2m', 'm2m-secret'])).json()).toMatchObject({
      active: true,
      client_id: 'm2m',
    });
    const post = await postForm(sigil, '/connect/introspect', {
      token: own.access_token,
      client_id: 'm2m',
      client_secret: 'm2m-secret',
    });
    expect(post.json()).toMatchObject({ active: true });
    const res = await introspect(sigil, own.access_token, ['m2m-ref', 'm2m-secret']);
    expect(res.statusCode).toBe(200);
    expect(res.body).toBe('{"active":false}');
  });

  it('shows refresh tokens as active with token_type refresh_token to their client only', async () => {
    const tokens = await passwordTokens(sigil, { scope: 'openid api1 offline_access' });
    const rt = tokens.refresh_token!;
    const res = await introspect(sigil, rt, ROPC, { token_type_hint: 'refresh_token' });
    expect(res.json()).toMatchObject({
      active: true,
      token_type: 'refresh_token',
      client_id: 'ropc',
      sub: '1',
      scope: 'openid api1 offline_access',
      iss: ISSUER,
      exp: expect.any(Number),
      iat: expect.any(Number),
    });
    expect((await introspect(sigil, rt, ROPC)).json()).toMatchObject({ active: true, token_type: 'refresh_token' });
    expect((await introspect(sigil, rt, ['other', 'other-secret'])).body).toBe('{"active":false}');
  });

  it('never shows an API a refresh token (an API sees access tokens only)', async () => {
    const tokens = await passwordTokens(sigil, { scope: 'openid api1 offline_access' });
    for (const hint of [{}, { token_type_hint: 'refresh_token' }] as Record<string, string>[]) {
      const res = await introspect(sigil, tokens.refresh_token!, API1, hint);
      expect(res.body).toBe('{"active":false}');
    }
  });

  it('shows a used (rotated) refresh token as inactive', async () => {
    const tokens = await passwordTokens(sigil, { scope: 'api1 offline_access' });
    const rotated = await postForm(
      sigil,
      '/connect/token',
      { grant_type: 'refresh_token', refresh_token: tokens.refresh_token! },
      ROPC,
    );
    expect(rotated.statusCode).toBe(200);
    expect((await introspect(sigil, tokens.refresh_token!, ROPC)).body).toBe('{"active":false}');
    expect(
      (await introspect(sigil, rotated.json<{ refresh_token: string }>().refresh_token, ROPC)).json(),
    ).toMatchObject({ active: true });
  });

  it('answers GET with 405 and Allow: POST', async () => {
    const res = await sigil.app.inject({
      method: 'GET',
      url: '/connect/introspect?token=x',
      headers: { authorization: basic(...API1) },
    });
    expect(res.statusCode).toBe(405);
    expect(res.headers.allow).toBe('POST');
  });

  it('answers a JSON body with 415', async () => {
    const res = await sigil.app.inject({
      method: 'POST',
      url: '/connect/introspect',
      headers: { authorization: basic(...API1), 'content-type': 'application/json' },
      payload: JSON.stringify({ token: 'x' }),
    });
    expect(res.statusCode).toBe(415);
    expect(res.json()).toMatchObject({ error: 'invalid_request' });
  });

  it('answers a malformed form with 400 invalid_request', async () => {
    const res = await sigil.app.inject({
      method: 'POST',
      url: '/connect/introspect',
      headers: { authorization: basic(...API1), 'content-type': 'application/x-www-form-urlencoded' },
      payload: 'token=%ZZ',
    });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ error: 'invalid_request' });
  });
});
