/**
 * End to end with a real relying party: the built `sigil start` process on a socket, driven by
 * openid-client v6 (discovery, grants, userinfo, introspection, revocation, token exchange).
 */
import { createRemoteJWKSet, decodeProtectedHeader, jwtVerify } from 'jose';
import * as oidc from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ServerProcess, startProcess, testConfig } from '../helpers.js';
import { freePort } from './ports.js';

const TOKEN_EXCHANGE = 'urn:ietf:params:oauth:grant-type:token-exchange';
const ACCESS_TOKEN_TYPE = 'urn:ietf:params:oauth:token-type:access_token';

describe('openid-client against sigil start', () => {
  let server: ServerProcess;
  let issuer: URL;
  const configure = (clientId: string, secret: string) =>
    oidc.discovery(issuer, clientId, secret, undefined, { execute: [oidc.allowInsecureRequests] });
  /** The API resource api1 as an introspection caller. */
  let api1: oidc.Configuration;

  beforeAll(async () => {
    server = await startProcess(testConfig(), await freePort());
    issuer = new URL(server.url);
    api1 = await configure('api1', 'api1-secret');
  });
  afterAll(async () => server?.stop());

  const verifyAccessToken = async (config: oidc.Configuration, token: string) => {
    const jwks = createRemoteJWKSet(new URL(config.serverMetadata().jwks_uri!));
    return jwtVerify(token, jwks, { issuer: server.url, typ: 'at+jwt' });
  };

  it('discovers the issuer and its endpoints', async () => {
    const config = await configure('m2m', 'm2m-secret');
    const meta = config.serverMetadata();
    expect(meta.issuer).toBe(server.url);
    expect(meta.token_endpoint).toBe(`${server.url}/connect/token`);
    expect(meta.userinfo_endpoint).toBe(`${server.url}/connect/userinfo`);
    expect(meta.introspection_endpoint).toBe(`${server.url}/connect/introspect`);
    expect(meta.revocation_endpoint).toBe(`${server.url}/connect/revocation`);
    expect(meta.jwks_uri).toBe(`${server.url}/.well-known/openid-configuration/jwks`);
    expect(meta.grant_types_supported).toEqual(
      expect.arrayContaining(['client_credentials', 'password', 'refresh_token', TOKEN_EXCHANGE]),
    );
    expect(meta.scopes_supported).toEqual(
      expect.arrayContaining(['openid', 'profile', 'api1', 'api2', 'offline_access']),
    );
  });

  it('client_credentials issues an at+jwt access token verifiable with the JWKS', async () => {
    const config = await configure('m2m', 'm2m-secret');
    const tokens = await oidc.clientCredentialsGrant(config, { scope: 'api1' });
    expect(tokens.token_type).toBe('bearer');
    expect(tokens.expires_in).toBe(3600);
    expect(tokens.refresh_token).toBeUndefined();
    expect(tokens.id_token).toBeUndefined();
    const { payload, protectedHeader } = await verifyAccessToken(config, tokens.access_token);
    expect(protectedHeader.typ).toBe('at+jwt');
    expect(payload).toMatchObject({ iss: server.url, sub: 'm2m', client_id: 'm2m', aud: 'api1', scope: 'api1' });
  });

  it('password grant with openid + offline_access, then refresh with rotation', async () => {
    const config = await configure('ropc', 'ropc-secret');
    const tokens = await oidc.genericGrantRequest(config, 'password', {
      username: 'alice',
      password: 'alice',
      scope: 'openid profile api1 offline_access',
    });
    // openid-client validated the id_token (signature, iss, aud, exp, iat) before returning.
    const idClaims = tokens.claims();
    expect(idClaims).toMatchObject({ iss: server.url, sub: '1', aud: 'ropc' });
    expect(decodeProtectedHeader(tokens.id_token!).typ).toBe('JWT');
    expect(tokens.refresh_token).toEqual(expect.any(String));
    expect(tokens.scope).toBe('openid profile api1 offline_access');
    const { payload } = await verifyAccessToken(config, tokens.access_token);
    expect(payload).toMatchObject({ sub: '1', client_id: 'ropc', aud: 'api1', role: ['admin'] });

    const refreshed = await oidc.refreshTokenGrant(config, tokens.refresh_token!);
    expect(refreshed.refresh_token).toEqual(expect.any(String));
    expect(refreshed.refresh_token).not.toBe(tokens.refresh_token);
    expect(refreshed.claims()?.sub).toBe('1');
    expect((await verifyAccessToken(config, refreshed.access_token)).payload.sub).toBe('1');

    // The old refresh token was consumed: reuse is refused (and ends the family, RFC 9700 §4.14.2).
    const reuse = await oidc.refreshTokenGrant(config, tokens.refresh_token!).then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(reuse).toBeInstanceOf(oidc.ResponseBodyError);
    expect((reuse as oidc.ResponseBodyError).error).toBe('invalid_grant');
    const afterReuse = await oidc.refreshTokenGrant(config, refreshed.refresh_token!).then(
      () => undefined,
      (err: unknown) => err,
    );
    expect((afterReuse as oidc.ResponseBodyError).error).toBe('invalid_grant');
  });

  it('fetchUserInfo returns the subject and profile claims', async () => {
    const config = await configure('ropc', 'ropc-secret');
    const tokens = await oidc.genericGrantRequest(config, 'password', {
      username: 'alice',
      password: 'alice',
      scope: 'openid profile email',
    });
    const sub = tokens.claims()!.sub;
    expect(sub).toBe('1');
    const info = await oidc.fetchUserInfo(config, tokens.access_token, sub);
    expect(info).toMatchObject({
      sub: '1',
      name: 'Alice Smith',
      given_name: 'Alice',
      email: 'alice@example.com',
      email_verified: true,
    });
    expect(info.role).toBeUndefined();
    const wrong = await oidc.fetchUserInfo(config, tokens.access_token, '2').then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(wrong).toBeInstanceOf(Error);
  });

  it('introspection by the API resource: JWT and reference tokens active, other audiences inactive', async () => {
    const m2m = await configure('m2m', 'm2m-secret');
    const jwt = await oidc.clientCredentialsGrant(m2m, { scope: 'api1' });
    const jwtInfo = await oidc.tokenIntrospection(api1, jwt.access_token);
    expect(jwtInfo).toMatchObject({
      active: true,
      client_id: 'm2m',
      sub: 'm2m',
      aud: 'api1',
      scope: 'api1',
      iss: server.url,
    });

    const ref = await oidc.clientCredentialsGrant(await configure('m2m-ref', 'm2m-secret'), { scope: 'api1' });
    expect(ref.access_token).not.toContain('.');
    const refInfo = await oidc.tokenIntrospection(api1, ref.access_token);
    expect(refInfo).toMatchObject({ active: true, client_id: 'm2m-ref', aud: 'api1', scope: 'api1' });
    expect(typeof refInfo.exp).toBe('number');

    const api2Only = await oidc.clientCredentialsGrant(m2m, { scope: 'api2' });
    expect(await oidc.tokenIntrospection(api1, api2Only.access_token)).toEqual({ active: false });
    // api2 itself (sha256: secret in the config) sees it.
    const api2 = await configure('api2', 'api2-secret');
    expect(await oidc.tokenIntrospection(api2, api2Only.access_token)).toMatchObject({ active: true, aud: 'api2' });

    expect(await oidc.tokenIntrospection(api1, 'not-a-token')).toEqual({ active: false });
    const badSecret = await configure('api1', 'wrong');
    const refused = await oidc.tokenIntrospection(badSecret, jwt.access_token).then(
      () => undefined,
      (err: unknown) => err,
    );
    // Every 401 invalid_client carries a Basic challenge (RFC 9110 §15.5.2), even for
    // client_secret_post (openid-client's default): openid-client reports the challenge.
    expect(refused).toBeInstanceOf(oidc.WWWAuthenticateChallengeError);
    const challenge = refused as oidc.WWWAuthenticateChallengeError;
    expect(challenge.status).toBe(401);
    expect(challenge.cause.map((c) => c.scheme)).toEqual(['basic']);
    expect(await challenge.response.json()).toMatchObject({ error: 'invalid_client' });
  });

  it('revoking a refresh token makes introspection report it inactive', async () => {
    const config = await configure('ropc', 'ropc-secret');
    const tokens = await oidc.genericGrantRequest(config, 'password', {
      username: 'alice',
      password: 'alice',
      scope: 'openid api1 offline_access',
    });
    const rt = tokens.refresh_token!;
    // The client that owns the refresh token may introspect it; an API resource never sees
    // refresh tokens, only the access tokens addressed to it.
    expect(await oidc.tokenIntrospection(config, rt, { token_type_hint: 'refresh_token' })).toMatchObject({
      active: true,
      sub: '1',
      client_id: 'ropc',
      token_type: 'refresh_token',
    });
    expect(await oidc.tokenIntrospection(api1, rt)).toEqual({ active: false });
    expect(await oidc.tokenIntrospection(api1, tokens.access_token)).toMatchObject({ active: true });
    await oidc.tokenRevocation(config, rt, { token_type_hint: 'refresh_token' });
    expect(await oidc.tokenIntrospection(config, rt)).toEqual({ active: false });
    expect(await oidc.tokenIntrospection(config, rt, { token_type_hint: 'refresh_token' })).toEqual({ active: false });
    // The grant family went with it (access token included) and the refresh token cannot be used.
    expect(await oidc.tokenIntrospection(api1, tokens.access_token)).toEqual({ active: false });
    const err = await oidc.refreshTokenGrant(config, rt).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect((err as oidc.ResponseBodyError).error).toBe('invalid_grant');
    // Revoking again, or an unknown token, is still 200 (RFC 7009 §2.2).
    await oidc.tokenRevocation(config, rt);
    await oidc.tokenRevocation(config, 'unknown-token');
  });

  it('token exchange issues a delegated token with an act claim', async () => {
    const config = await configure('ropc', 'ropc-secret');
    const alice = await oidc.genericGrantRequest(config, 'password', {
      username: 'alice',
      password: 'alice',
      scope: 'openid api1 api2',
    });
    const exchanged = await oidc.genericGrantRequest(config, TOKEN_EXCHANGE, {
      subject_token: alice.access_token,
      subject_token_type: ACCESS_TOKEN_TYPE,
      scope: 'api1',
    });
    expect(exchanged.issued_token_type).toBe(ACCESS_TOKEN_TYPE);
    expect(exchanged.refresh_token).toBeUndefined();
    expect(exchanged.scope).toBe('api1');
    const { payload, protectedHeader } = await verifyAccessToken(config, exchanged.access_token);
    expect(protectedHeader.typ).toBe('at+jwt');
    expect(payload).toMatchObject({ sub: '1', client_id: 'ropc', aud: 'api1', scope: 'api1' });
    expect(payload.act).toEqual({ sub: 'ropc', client_id: 'ropc' });

    // Chained: the earlier actor nests inside the new one (RFC 8693 §4.1).
    const again = await oidc.genericGrantRequest(config, TOKEN_EXCHANGE, {
      subject_token: exchanged.access_token,
      subject_token_type: ACCESS_TOKEN_TYPE,
      scope: 'api1',
    });
    const nested = (await verifyAccessToken(config, again.access_token)).payload;
    expect(nested.act).toEqual({ sub: 'ropc', client_id: 'ropc', act: { sub: 'ropc', client_id: 'ropc' } });

    const bad = await oidc
      .genericGrantRequest(config, TOKEN_EXCHANGE, { subject_token: 'garbage', subject_token_type: ACCESS_TOKEN_TYPE })
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect((bad as oidc.ResponseBodyError).error).toBe('invalid_request');
  });
});
