/**
 * Token endpoint, `client_credentials` (RFC 6749 §4.4; RFC 9068), as Duende IdentityServer
 * answers it.
 */
import { decodeProtectedHeader, jwtVerify } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clientTokens, fetchJwks, startSigil, tokenRequest, type TestSigil } from '../helpers.js';

const ISSUER = 'http://127.0.0.1:5999';

describe('client_credentials', () => {
  let sigil: TestSigil;
  beforeAll(async () => {
    sigil = await startSigil();
  });
  afterAll(async () => sigil.close());

  it('answers with the RFC 6749 §5.1 shape and no-store headers', async () => {
    const res = await tokenRequest(sigil, { grant_type: 'client_credentials', scope: 'api1' }, ['m2m', 'm2m-secret']);
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.headers.pragma).toBe('no-cache');
    const body = res.json<Record<string, unknown>>();
    expect(body).toEqual({ access_token: expect.any(String), token_type: 'Bearer', expires_in: 3600, scope: 'api1' });
    expect(body).not.toHaveProperty('refresh_token');
    expect(body).not.toHaveProperty('id_token');
  });

  it('issues an RFC 9068 JWT access token that verifies against the published JWKS', async () => {
    const { access_token } = await clientTokens(sigil, 'api1');
    const jwks = await fetchJwks(sigil);
    const { payload, protectedHeader } = await jwtVerify(access_token, jwks, { issuer: ISSUER, typ: 'at+jwt' });
    expect(protectedHeader.typ).toBe('at+jwt');
    expect(protectedHeader.kid).toEqual(expect.any(String));
    const keys = (await sigil.app.inject({ method: 'GET', url: '/.well-known/openid-configuration/jwks' })).json<{
      keys: { kid: string }[];
    }>().keys;
    expect(keys.map((k) => k.kid)).toContain(protectedHeader.kid);

    expect(payload.iss).toBe(ISSUER);
    expect(payload.sub).toBe('m2m');
    expect(payload.client_id).toBe('m2m');
    expect(payload.aud).toBe('api1');
    expect(payload.scope).toBe('api1');
    expect(payload.jti).toEqual(expect.any(String));
    expect(payload.iat).toEqual(expect.any(Number));
    expect(payload.nbf).toBe(payload.iat);
    expect(payload.exp).toBe((payload.iat as number) + 3600);
    // A client token carries no user claims.
    expect(payload).not.toHaveProperty('auth_time');
    expect(payload).not.toHaveProperty('amr');
  });

  it('puts several audiences into an array and the scopes into one space-separated string', async () => {
    const { access_token, scope } = await clientTokens(sigil, 'api1 api2');
    expect(scope).toBe('api1 api2');
    const { payload } = await jwtVerify(access_token, await fetchJwks(sigil), { issuer: ISSUER });
    expect(payload.aud).toEqual(['api1', 'api2']);
    expect(payload.scope).toBe('api1 api2');
  });

  it('gives every jti once', async () => {
    const a = await clientTokens(sigil, 'api1');
    const b = await clientTokens(sigil, 'api1');
    const jwks = await fetchJwks(sigil);
    const [pa, pb] = await Promise.all([jwtVerify(a.access_token, jwks), jwtVerify(b.access_token, jwks)]);
    expect(pa.payload.jti).not.toBe(pb.payload.jti);
  });

  it("grants all of the client's API scopes when scope is omitted", async () => {
    const body = await clientTokens(sigil);
    expect(body.scope.split(' ').sort()).toEqual(['api1', 'api2']);
    const { payload } = await jwtVerify(body.access_token, await fetchJwks(sigil));
    expect(payload.aud).toEqual(['api1', 'api2']);
  });

  it.each([
    ['an unknown scope', 'nope'],
    ['a scope the client may not have', 'api2'],
    ['an allowed and a disallowed scope', 'api1 api2'],
    ['openid', 'openid'],
    ['openid with an API scope', 'openid api1'],
    ['offline_access', 'api1 offline_access'],
  ])('refuses %s with invalid_scope', async (_name, scope) => {
    const res = await tokenRequest(sigil, { grant_type: 'client_credentials', scope }, ['m2m-ref', 'm2m-secret']);
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ error: 'invalid_scope' });
    expect(res.headers['cache-control']).toBe('no-store');
  });

  it('issues reference tokens as opaque 43-character handles for m2m-ref', async () => {
    const body = await clientTokens(sigil, 'api1', ['m2m-ref', 'm2m-secret']);
    expect(body.access_token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(body).toMatchObject({ token_type: 'Bearer', expires_in: 3600, scope: 'api1' });
    const other = await clientTokens(sigil, 'api1', ['m2m-ref', 'm2m-secret']);
    expect(other.access_token).not.toBe(body.access_token);
  });

  it('signs with the first configured algorithm by default', async () => {
    const { access_token } = await clientTokens(sigil, 'api1');
    expect(decodeProtectedHeader(access_token).alg).toBe('RS256');
  });
});
