/**
 * DPoP end to end (RFC 9449): the built `sigil start` process, with server nonces required,
 * driven by openid-client v6 and its `DPoP` option: client_credentials, password grant of a public
 * client with refresh by the bound key, userinfo with the DPoP scheme, introspection showing the
 * binding, and the refusals of a bound token sent as Bearer and of a refresh with another key.
 */
import { calculateJwkThumbprint, decodeJwt, exportJWK } from 'jose';
import * as oidc from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ServerProcess, startProcess, testConfig } from '../helpers.js';
import { freePort } from './ports.js';

describe('openid-client with DPoP against sigil start', () => {
  let server: ServerProcess;
  let issuer: URL;
  const insecure = { execute: [oidc.allowInsecureRequests] };
  const confidential = (clientId: string, secret: string) =>
    oidc.discovery(issuer, clientId, secret, undefined, insecure);
  const publicClient = (clientId: string) => oidc.discovery(issuer, clientId, undefined, oidc.None(), insecure);
  /** A DPoP handle of a fresh ES256 key, and that key's thumbprint (`cnf.jkt`). */
  const dpopKey = async (config: oidc.Configuration) => {
    const pair = await oidc.randomDPoPKeyPair('ES256');
    return {
      handle: oidc.getDPoPHandle(config, pair),
      jkt: await calculateJwkThumbprint(await exportJWK(pair.publicKey), 'sha256'),
    };
  };
  const failure = (p: Promise<unknown>) =>
    p.then(
      () => undefined,
      (err: unknown) => err,
    );

  beforeAll(async () => {
    server = await startProcess(testConfig({ dpop: { requireNonce: true } }), await freePort());
    issuer = new URL(server.url);
  });
  afterAll(async () => server?.stop());

  it('discovery lists the DPoP proof algorithms, asymmetric only', async () => {
    const algs = (await confidential('m2m', 'm2m-secret')).serverMetadata().dpop_signing_alg_values_supported;
    expect(algs).toEqual(expect.arrayContaining(['ES256', 'PS256', 'EdDSA']));
    expect(algs?.some((a) => a === 'none' || a.startsWith('HS'))).toBe(false);
  });

  it('client_credentials: a DPoP-bound access token (after the nonce round trip), introspected with cnf', async () => {
    const config = await confidential('m2m', 'm2m-secret');
    const { handle, jkt } = await dpopKey(config);
    const tokens = await oidc.clientCredentialsGrant(config, { scope: 'api1' }, { DPoP: handle });
    expect(tokens.token_type).toBe('dpop');
    expect(decodeJwt(tokens.access_token).cnf).toEqual({ jkt });
    const info = await oidc.tokenIntrospection(await confidential('api1', 'api1-secret'), tokens.access_token);
    expect(info).toMatchObject({ active: true, token_type: 'DPoP', cnf: { jkt } });
  });

  it('public client: password grant and refresh bound to the key, userinfo with DPoP, Bearer and another key refused', async () => {
    const config = await publicClient('spa');
    const { handle, jkt } = await dpopKey(config);
    const tokens = await oidc.genericGrantRequest(
      config,
      'password',
      { username: 'alice', password: 'alice', scope: 'openid api1 offline_access' },
      { DPoP: handle },
    );
    expect(tokens.token_type).toBe('dpop');
    expect(decodeJwt(tokens.access_token).cnf).toEqual({ jkt });

    const info = await oidc.fetchUserInfo(config, tokens.access_token, '1', { DPoP: handle });
    expect(info.sub).toBe('1');

    // RFC 9449 §7.2: the bound token as a bearer token is refused with a DPoP challenge.
    const asBearer = await failure(oidc.fetchUserInfo(config, tokens.access_token, '1'));
    expect(asBearer).toBeInstanceOf(oidc.WWWAuthenticateChallengeError);
    const challenge = (asBearer as oidc.WWWAuthenticateChallengeError).cause[0];
    expect(challenge).toMatchObject({ scheme: 'dpop', parameters: { error: 'invalid_token' } });

    // The refresh token is bound too: another key is refused, the same key refreshes.
    const other = await dpopKey(config);
    const stolen = await failure(
      oidc.refreshTokenGrant(config, tokens.refresh_token!, undefined, { DPoP: other.handle }),
    );
    expect(stolen).toBeInstanceOf(oidc.ResponseBodyError);
    expect((stolen as oidc.ResponseBodyError).error).toBe('invalid_grant');
    const refreshed = await oidc.refreshTokenGrant(config, tokens.refresh_token!, undefined, { DPoP: handle });
    expect(refreshed.token_type).toBe('dpop');
    expect(decodeJwt(refreshed.access_token).cnf).toEqual({ jkt });
    expect((await oidc.fetchUserInfo(config, refreshed.access_token, '1', { DPoP: handle })).sub).toBe('1');
  });
});
