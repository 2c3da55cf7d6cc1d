/**
 * Token revocation (RFC 7009). Where Duende differs (unknown `token_type_hint` →
 * unsupported_token_type; JWTs not revocable), Sigil follows the RFC: an unknown hint is ignored,
 * and a JWT access token is revoked by its `jti`.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type BasicCredentials,
  basic,
  clientTokens,
  introspect,
  passwordTokens,
  postForm,
  startSigil,
  tokenRequest,
  type TestSigil,
} from '../helpers.js';

const ROPC: BasicCredentials = ['ropc', 'ropc-secret'];
const INACTIVE = '{"active":false}';

describe('revocation', () => {
  let sigil: TestSigil;
  beforeAll(async () => {
    sigil = await startSigil({ rateLimits: { maxFailures: 1000, windowSeconds: 60 } });
  });
  afterAll(async () => sigil.close());

  const revoke = (token: string, client: BasicCredentials = ROPC, extra: Record<string, string> = {}) =>
    postForm(sigil, '/connect/revocation', { token, ...extra }, client);
  const userinfo = (token: string) =>
    sigil.app.inject({ method: 'GET', url: '/connect/userinfo', headers: { authorization: `Bearer ${token}` } });
  const refresh = (token: string, client: BasicCredentials = ROPC) =>
    tokenRequest(sigil, { grant_type: 'refresh_token', refresh_token: token }, client);

  it('ends the whole family when a refresh token is revoked, JWT access tokens included', async () => {
    const first = await passwordTokens(sigil, { scope: 'openid api1 offline_access' });
    const second = (await refresh(first.refresh_token!)).json<{ access_token: string; refresh_token: string }>();
    expect((await userinfo(second.access_token)).statusCode).toBe(200);

    const res = await revoke(second.refresh_token, ROPC, { token_type_hint: 'refresh_token' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['cache-control']).toBe('no-store');

    const again = await refresh(second.refresh_token);
    expect(again.statusCode).toBe(400);
    expect(again.json()).toMatchObject({ error: 'invalid_grant' });
    for (const at of [first.access_token, second.access_token]) {
      expect((await introspect(sigil, at)).body).toBe(INACTIVE);
      const ui = await userinfo(at);
      expect(ui.statusCode).toBe(401);
      expect(ui.headers['www-authenticate']).toContain('error="invalid_token"');
    }
    expect((await introspect(sigil, second.refresh_token, ROPC)).body).toBe(INACTIVE);
  });

  it('ends the family of a reference-token client too', async () => {
    const tokens = await passwordTokens(sigil, {
      client: ['ropc-ref', 'ropc-secret'],
      scope: 'openid api1 offline_access',
    });
    expect((await revoke(tokens.refresh_token!, ['ropc-ref', 'ropc-secret'])).statusCode).toBe(200);
    expect((await refresh(tokens.refresh_token!, ['ropc-ref', 'ropc-secret'])).json()).toMatchObject({
      error: 'invalid_grant',
    });
    expect((await introspect(sigil, tokens.access_token)).body).toBe(INACTIVE);
    expect((await userinfo(tokens.access_token)).statusCode).toBe(401);
  });

  it('revokes a JWT access token by itself, leaving its refresh token alive', async () => {
    const tokens = await passwordTokens(sigil, { scope: 'openid api1 offline_access' });
    expect((await revoke(tokens.access_token, ROPC, { token_type_hint: 'access_token' })).statusCode).toBe(200);
    expect((await introspect(sigil, tokens.access_token)).body).toBe(INACTIVE);
    expect((await userinfo(tokens.access_token)).statusCode).toBe(401);
    expect((await refresh(tokens.refresh_token!)).statusCode).toBe(200);
  });

  it('revokes a JWT access token that has no refresh token (client_credentials)', async () => {
    const { access_token } = await clientTokens(sigil, 'api1');
    expect((await introspect(sigil, access_token)).json()).toMatchObject({ active: true });
    expect((await revoke(access_token, ['m2m', 'm2m-secret'])).statusCode).toBe(200);
    expect((await introspect(sigil, access_token)).body).toBe(INACTIVE);
    // Revoking it twice is still 200.
    expect((await revoke(access_token, ['m2m', 'm2m-secret'])).statusCode).toBe(200);
  });

  it('revokes a reference access token', async () => {
    const { access_token } = await clientTokens(sigil, 'api1', ['m2m-ref', 'm2m-secret']);
    expect((await revoke(access_token, ['m2m-ref', 'm2m-secret'])).statusCode).toBe(200);
    expect((await introspect(sigil, access_token)).body).toBe(INACTIVE);
  });

  it('answers 200 for unknown and garbage tokens', async () => {
    for (const token of ['unknown', 'A'.repeat(43), 'a.b.c', 'x'.repeat(9000)]) {
      const res = await revoke(token);
      expect(res.statusCode).toBe(200);
    }
  });

  it("answers 200 for another client's tokens and changes nothing", async () => {
    const tokens = await passwordTokens(sigil, { scope: 'openid api1 offline_access' });
    const other: BasicCredentials = ['other', 'other-secret'];
    expect((await revoke(tokens.refresh_token!, other)).statusCode).toBe(200);
    expect((await revoke(tokens.access_token, other)).statusCode).toBe(200);
    expect((await introspect(sigil, tokens.access_token)).json()).toMatchObject({ active: true });
    expect((await userinfo(tokens.access_token)).statusCode).toBe(200);
    expect((await refresh(tokens.refresh_token!)).statusCode).toBe(200);
  });

  it("lets a public client (spa) revoke its own refresh token but not another client's", async () => {
    const own = (
      await tokenRequest(sigil, {
        grant_type: 'password',
        username: 'alice',
        password: 'alice',
        scope: 'openid offline_access',
        client_id: 'spa',
      })
    ).json<{ refresh_token: string }>();
    const foreign = await passwordTokens(sigil, { scope: 'openid api1 offline_access' });
    expect(
      (await postForm(sigil, '/connect/revocation', { token: foreign.refresh_token!, client_id: 'spa' })).statusCode,
    ).toBe(200);
    expect((await refresh(foreign.refresh_token!)).statusCode).toBe(200);
    expect(
      (await postForm(sigil, '/connect/revocation', { token: own.refresh_token, client_id: 'spa' })).statusCode,
    ).toBe(200);
    const res = await tokenRequest(sigil, {
      grant_type: 'refresh_token',
      refresh_token: own.refresh_token,
      client_id: 'spa',
    });
    expect(res.json()).toMatchObject({ error: 'invalid_grant' });
  });

  it('ignores an unknown token_type_hint', async () => {
    const tokens = await passwordTokens(sigil, { scope: 'api1 offline_access' });
    const res = await revoke(tokens.refresh_token!, ROPC, { token_type_hint: 'foo' });
    expect(res.statusCode).toBe(200);
    expect((await refresh(tokens.refresh_token!)).json()).toMatchObject({ error: 'invalid_grant' });
  });

  it('finds the token under the wrong hint', async () => {
    const tokens = await passwordTokens(sigil, { scope: 'api1 offline_access' });
    expect((await revoke(tokens.refresh_token!, ROPC, { token_type_hint: 'access_token' })).statusCode).toBe(200);
    expect((await refresh(tokens.refresh_token!)).json()).toMatchObject({ error: 'invalid_grant' });
  });

  it('answers a missing token with 400 invalid_request', async () => {
    const res = await postForm(sigil, '/connect/revocation', {}, ROPC);
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ error: 'invalid_request' });
  });

  it('answers missing or wrong credentials with 401 invalid_client, WWW-Authenticate, and revokes nothing', async () => {
    const tokens = await passwordTokens(sigil, { scope: 'api1 offline_access' });
    const wrong = await revoke(tokens.refresh_token!, ['ropc', 'wrong']);
    expect(wrong.statusCode).toBe(401);
    expect(wrong.json()).toMatchObject({ error: 'invalid_client' });
    expect(wrong.headers['www-authenticate']).toMatch(/^Basic /);
    const none = await postForm(sigil, '/connect/revocation', { token: tokens.refresh_token! });
    expect(none.statusCode).toBe(401);
    expect(none.json()).toMatchObject({ error: 'invalid_client' });
    expect(none.headers['www-authenticate']).toMatch(/^Basic /);
    const idOnly = await postForm(sigil, '/connect/revocation', { token: tokens.refresh_token!, client_id: 'ropc' });
    expect(idOnly.statusCode).toBe(401);
    expect(idOnly.headers['www-authenticate']).toMatch(/^Basic /);
    const inBody = await postForm(sigil, '/connect/revocation', {
      token: tokens.refresh_token!,
      client_id: 'ropc',
      client_secret: 'wrong',
    });
    expect(inBody.statusCode).toBe(401);
    expect(inBody.headers['www-authenticate']).toMatch(/^Basic /);
    expect((await refresh(tokens.refresh_token!)).statusCode).toBe(200);
  });

  it('answers GET with 405 and Allow: POST', async () => {
    const res = await sigil.app.inject({
      method: 'GET',
      url: '/connect/revocation?token=x',
      headers: { authorization: basic(...ROPC) },
    });
    expect(res.statusCode).toBe(405);
    expect(res.headers.allow).toBe('POST');
  });

  it('answers a JSON body with 415', async () => {
    const res = await sigil.app.inject({
      method: 'POST',
      url: '/connect/revocation',
      headers: { authorization: basic(...ROPC), 'content-type': 'application/json' },
      payload: JSON.stringify({ token: 'x' }),
    });
    expect(res.statusCode).toBe(415);
    expect(res.json()).toMatchObject({ error: 'invalid_request' });
  });
});
