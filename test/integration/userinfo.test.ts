/**
 * UserInfo (OIDC Core §5.3, §5.4; RFC 6750 §2, §3).
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { LightMyRequestResponse } from 'fastify';
import { clientTokens, form, passwordTokens, postForm, startSigil, testConfig, type TestSigil } from '../helpers.js';

function expectBearerError(res: LightMyRequestResponse, status: number, error: string): void {
  expect(res.statusCode).toBe(status);
  expect(res.headers['www-authenticate']).toMatch(/^Bearer realm="[^"]+"/);
  expect(res.headers['www-authenticate']).toContain(`error="${error}"`);
  expect(res.headers['cache-control']).toBe('no-store');
}

describe('userinfo', () => {
  let sigil: TestSigil;
  beforeAll(async () => {
    const base = testConfig();
    sigil = await startSigil({
      clients: [
        ...(base.clients ?? []),
        {
          clientId: 'brief',
          clientSecrets: ['s'],
          allowedGrantTypes: ['password'],
          allowedScopes: ['openid', 'email', 'api1'],
          accessTokenLifetime: 2,
        },
        {
          clientId: 'brief-ref',
          clientSecrets: ['s'],
          allowedGrantTypes: ['password'],
          allowedScopes: ['openid', 'email'],
          accessTokenLifetime: 2,
          accessTokenType: 'reference',
        },
      ],
    });
  });
  afterAll(async () => sigil.close());

  const get = (authorization?: string, url = '/connect/userinfo') =>
    sigil.app.inject({ method: 'GET', url, headers: authorization === undefined ? {} : { authorization } });

  it('answers GET with Bearer: sub and the claims of the granted identity scopes', async () => {
    const { access_token } = await passwordTokens(sigil, { scope: 'openid profile email' });
    const res = await get(`Bearer ${access_token}`);
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.json()).toEqual({
      sub: '1',
      name: 'Alice Smith',
      given_name: 'Alice',
      family_name: 'Smith',
      email: 'alice@example.com',
      email_verified: true,
    });
  });

  it('answers POST with access_token in the form body', async () => {
    const { access_token } = await passwordTokens(sigil, { scope: 'openid' });
    const res = await postForm(sigil, '/connect/userinfo', { access_token });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ sub: '1' });
  });

  it('answers POST with the Bearer header', async () => {
    const { access_token } = await passwordTokens(sigil, { scope: 'openid email' });
    const res = await sigil.app.inject({
      method: 'POST',
      url: '/connect/userinfo',
      headers: { authorization: `Bearer ${access_token}` },
    });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ sub: '1', email: 'alice@example.com', email_verified: true });
  });

  it('returns only sub for openid alone', async () => {
    const { access_token } = await passwordTokens(sigil, { scope: 'openid api1' });
    const res = await get(`Bearer ${access_token}`);
    expect(res.json()).toEqual({ sub: '1' });
  });

  it('returns email and email_verified for openid email, nothing from profile or API claims', async () => {
    const { access_token } = await passwordTokens(sigil, { scope: 'openid email api1' });
    const res = await get(`Bearer ${access_token}`);
    expect(res.json()).toEqual({ sub: '1', email: 'alice@example.com', email_verified: true });
  });

  it('returns a multi-valued claim as an array (roles)', async () => {
    const { access_token } = await passwordTokens(sigil, { username: 'bob', scope: 'openid roles' });
    const res = await get(`Bearer ${access_token}`);
    expect(res.json()).toEqual({ sub: '2', role: ['user', 'dev'] });
  });

  it('accepts a reference access token', async () => {
    const { access_token } = await passwordTokens(sigil, {
      client: ['ropc-ref', 'ropc-secret'],
      scope: 'openid profile',
    });
    const res = await get(`Bearer ${access_token}`);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ sub: '1', name: 'Alice Smith', given_name: 'Alice', family_name: 'Smith' });
  });

  it('treats the Bearer scheme case-insensitively', async () => {
    const { access_token } = await passwordTokens(sigil, { scope: 'openid' });
    for (const scheme of ['bearer', 'BEARER', 'BeArEr'])
      expect((await get(`${scheme} ${access_token}`)).statusCode).toBe(200);
  });

  it('answers no token with 401 and Bearer and DPoP challenges without error', async () => {
    for (const res of [await get(), await get(`Basic ${Buffer.from('a:b').toString('base64')}`)]) {
      expect(res.statusCode).toBe(401);
      // RFC 9449 §7.1: both schemes are offered.
      expect(res.headers['www-authenticate']).toMatch(/^Bearer realm="[^"]+", DPoP algs="ES256 [^"]+"$/);
      expect(res.headers['www-authenticate']).not.toContain('error');
    }
  });

  it('ignores a token in the query string', async () => {
    const { access_token } = await passwordTokens(sigil, { scope: 'openid' });
    const res = await get(undefined, `/connect/userinfo?access_token=${access_token}`);
    expect(res.statusCode).toBe(401);
    expect(res.headers['www-authenticate']).not.toContain('error');
  });

  it('answers a garbage token with 401 invalid_token', async () => {
    for (const token of ['garbage', 'a.b.c', 'A'.repeat(43), 'x'.repeat(12_000)])
      expectBearerError(await get(`Bearer ${token}`), 401, 'invalid_token');
  });

  it('answers a tampered JWT with 401 invalid_token', async () => {
    const { access_token } = await passwordTokens(sigil, { scope: 'openid' });
    const [h, p, s] = access_token.split('.') as [string, string, string];
    const claims = JSON.parse(Buffer.from(p, 'base64url').toString()) as Record<string, unknown>;
    const forged = `${h}.${Buffer.from(JSON.stringify({ ...claims, sub: '2' })).toString('base64url')}.${s}`;
    expectBearerError(await get(`Bearer ${forged}`), 401, 'invalid_token');
  });

  it('answers expired JWT and reference tokens with 401 invalid_token', async () => {
    // Sigil's clock (Date only) stands still from issuance to the first use and is then moved past
    // the 2 s lifetime: with real time a slow machine could see the tokens expire before the first.
    vi.useFakeTimers({ toFake: ['Date'], now: Date.now() });
    try {
      const jwt = await passwordTokens(sigil, { client: ['brief', 's'], scope: 'openid' });
      const ref = await passwordTokens(sigil, { client: ['brief-ref', 's'], scope: 'openid' });
      expect((await get(`Bearer ${jwt.access_token}`)).statusCode).toBe(200);
      expect((await get(`Bearer ${ref.access_token}`)).statusCode).toBe(200);
      vi.setSystemTime(Date.now() + 3100);
      expectBearerError(await get(`Bearer ${jwt.access_token}`), 401, 'invalid_token');
      expectBearerError(await get(`Bearer ${ref.access_token}`), 401, 'invalid_token');
    } finally {
      vi.useRealTimers();
    }
  });

  it('answers a revoked token with 401 invalid_token', async () => {
    const { access_token } = await passwordTokens(sigil, { scope: 'openid' });
    const revoked = await postForm(sigil, '/connect/revocation', { token: access_token }, ['ropc', 'ropc-secret']);
    expect(revoked.statusCode).toBe(200);
    expectBearerError(await get(`Bearer ${access_token}`), 401, 'invalid_token');
  });

  it('answers a client_credentials token with 403 insufficient_scope', async () => {
    const { access_token } = await clientTokens(sigil, 'api1');
    expectBearerError(await get(`Bearer ${access_token}`), 403, 'insufficient_scope');
  });

  it('answers a user token without openid with 403 insufficient_scope', async () => {
    const { access_token } = await passwordTokens(sigil, { scope: 'email api1' });
    expectBearerError(await get(`Bearer ${access_token}`), 403, 'insufficient_scope');
  });

  it('answers a token in both header and body with 400 invalid_request', async () => {
    const { access_token } = await passwordTokens(sigil, { scope: 'openid' });
    const res = await sigil.app.inject({
      method: 'POST',
      url: '/connect/userinfo',
      headers: { authorization: `Bearer ${access_token}`, 'content-type': 'application/x-www-form-urlencoded' },
      payload: form({ access_token }),
    });
    expectBearerError(res, 400, 'invalid_request');
  });

  it('answers a malformed Authorization header with 400 invalid_request', async () => {
    const { access_token } = await passwordTokens(sigil, { scope: 'openid' });
    for (const header of [
      `Bearer\t${access_token}`,
      `Bearer ${access_token} extra`,
      'Bearer',
      'Bearer ',
      `Bearer  ${access_token}`,
    ]) {
      const res = await get(header);
      expectBearerError(res, 400, 'invalid_request');
    }
  });

  it('answers a repeated Authorization header with 400 invalid_request', async () => {
    const { access_token } = await passwordTokens(sigil, { scope: 'openid' });
    const headers: Record<string, string[]> = { authorization: [`Bearer ${access_token}`, `Bearer ${access_token}`] };
    const res = await sigil.app.inject({ method: 'GET', url: '/connect/userinfo', headers });
    expectBearerError(res, 400, 'invalid_request');
  });

  it('answers an identity token presented as access token with 401 invalid_token', async () => {
    const { id_token } = await passwordTokens(sigil, { scope: 'openid' });
    expectBearerError(await get(`Bearer ${id_token!}`), 401, 'invalid_token');
  });

  it('answers a refresh token presented as access token with 401 invalid_token', async () => {
    const { refresh_token } = await passwordTokens(sigil, { scope: 'openid offline_access' });
    expectBearerError(await get(`Bearer ${refresh_token!}`), 401, 'invalid_token');
  });

  it('answers PUT and DELETE with 405 and Allow', async () => {
    const { access_token } = await passwordTokens(sigil, { scope: 'openid' });
    for (const method of ['PUT', 'DELETE'] as const) {
      const res = await sigil.app.inject({
        method,
        url: '/connect/userinfo',
        headers: { authorization: `Bearer ${access_token}` },
      });
      expect(res.statusCode).toBe(405);
      expect(res.headers.allow).toContain('GET');
      expect(res.headers.allow).toContain('POST');
    }
  });

  it('answers a POST with a JSON body with 415', async () => {
    const { access_token } = await passwordTokens(sigil, { scope: 'openid' });
    const res = await sigil.app.inject({
      method: 'POST',
      url: '/connect/userinfo',
      headers: { 'content-type': 'application/json' },
      payload: JSON.stringify({ access_token }),
    });
    expect(res.statusCode).toBe(415);
  });
});
