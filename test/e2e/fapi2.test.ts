/**
 * End to end: a `profile: "fapi2"` client (FAPI 2.0 Security Profile) driven by openid-client v6
 * against the built `sigil start` process: PAR with a DPoP proof, PKCE S256, private_key_jwt
 * (PS256), DPoP-bound tokens (ES256 proof key), refresh with the bound key, userinfo with DPoP,
 * introspection showing `cnf`, and the bound token refused as a bearer token. The user signs in
 * with Chromium.
 */
import { calculateJwkThumbprint, decodeJwt, decodeProtectedHeader, exportJWK } from 'jose';
import * as oidc from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clientKey, type ClientKey } from '../assertion-helpers.js';
import { type BrowserFixture, browserConfig, newPage, pushedCodeFlow, startBrowserFixture } from './browser-fixture.js';

let f: BrowserFixture;
let key: ClientKey;
let rp: oidc.Configuration;

beforeAll(async () => {
  key = await clientKey('PS256', 'bank-key-1');
  f = await startBrowserFixture((cb) => {
    const base = browserConfig(cb);
    return {
      ...base,
      clients: [
        ...(base.clients ?? []),
        {
          clientId: 'bank',
          profile: 'fapi2',
          jwks: { keys: [key.publicJwk] },
          allowedGrantTypes: ['authorization_code', 'refresh_token'],
          allowedScopes: ['openid', 'profile', 'api1', 'offline_access'],
          allowOfflineAccess: true,
          redirectUris: [`${cb}/cb`],
          // http://rp.test, the browser fixture's relying party: plain http off loopback (development).
          allowHttpRedirectUris: true,
        },
      ],
    };
  });
  rp = await oidc.discovery(
    new URL(f.sigil.url),
    'bank',
    undefined,
    oidc.PrivateKeyJwt({ key: key.privateKey, kid: key.kid }),
    {
      execute: [oidc.allowInsecureRequests],
    },
  );
});
afterAll(async () => f?.close());

/** A DPoP handle of a fresh ES256 key, and that key's thumbprint (`cnf.jkt`). */
async function dpopKey(): Promise<{ handle: oidc.DPoPHandle; jkt: string }> {
  const pair = await oidc.randomDPoPKeyPair('ES256');
  return {
    handle: oidc.getDPoPHandle(rp, pair),
    jkt: await calculateJwkThumbprint(await exportJWK(pair.publicKey), 'sha256'),
  };
}

const failure = (p: Promise<unknown>) =>
  p.then(
    () => undefined,
    (err: unknown) => err,
  );

describe('openid-client: a FAPI 2.0 client (PAR + PKCE + private_key_jwt + DPoP)', () => {
  it("discovery lists the FAPI 2.0 algorithms for Sigil's tokens, client assertions and DPoP proofs", () => {
    const meta = rp.serverMetadata();
    expect(meta.id_token_signing_alg_values_supported).toEqual(expect.arrayContaining(['ES256']));
    expect(meta.token_endpoint_auth_signing_alg_values_supported).toEqual(
      expect.arrayContaining(['PS256', 'ES256', 'EdDSA']),
    );
    expect(meta.dpop_signing_alg_values_supported).toEqual(expect.arrayContaining(['PS256', 'ES256', 'EdDSA']));
    expect(meta.authorization_response_iss_parameter_supported).toBe(true);
  });

  it('signs in, gets bound tokens, refreshes with the bound key, calls userinfo with DPoP; introspection shows cnf; Bearer and another key are refused', async () => {
    const { context, page } = await newPage(f.browser);
    try {
      const { handle, jkt } = await dpopKey();
      const { response, tokens } = await pushedCodeFlow(f, page, rp, {
        scope: 'openid profile api1 offline_access',
        dpop: handle,
      });
      expect(response.params.iss).toBe(f.sigil.url);
      expect(tokens.token_type).toBe('dpop');
      expect(decodeJwt(tokens.access_token).cnf).toEqual({ jkt });
      // testConfig signs with RS256 first; a fapi2 client's tokens use ES256.
      expect(decodeProtectedHeader(tokens.id_token!).alg).toBe('ES256');
      expect(decodeProtectedHeader(tokens.access_token).alg).toBe('ES256');
      expect(tokens.claims()).toMatchObject({ sub: '1', aud: 'bank' });

      expect((await oidc.fetchUserInfo(rp, tokens.access_token, '1', { DPoP: handle })).sub).toBe('1');
      expect(await oidc.tokenIntrospection(rp, tokens.access_token)).toMatchObject({
        active: true,
        token_type: 'DPoP',
        cnf: { jkt },
      });

      // RFC 9449 §7.2: the bound access token as a bearer token is refused.
      const asBearer = await failure(oidc.fetchUserInfo(rp, tokens.access_token, '1'));
      expect(asBearer).toBeInstanceOf(oidc.WWWAuthenticateChallengeError);
      expect((asBearer as oidc.WWWAuthenticateChallengeError).cause[0]).toMatchObject({
        scheme: 'dpop',
        parameters: { error: 'invalid_token' },
      });

      // Without a proof the refresh is refused (all its tokens are sender-constrained); the
      // refresh token is bound as well (a confidential fapi2 client): another key is refused.
      const bare = await failure(oidc.refreshTokenGrant(rp, tokens.refresh_token!));
      expect(bare).toBeInstanceOf(oidc.ResponseBodyError);
      expect((bare as oidc.ResponseBodyError).error).toBe('invalid_request');
      const other = await dpopKey();
      const stolen = await failure(
        oidc.refreshTokenGrant(rp, tokens.refresh_token!, undefined, { DPoP: other.handle }),
      );
      expect(stolen).toBeInstanceOf(oidc.ResponseBodyError);
      expect((stolen as oidc.ResponseBodyError).error).toBe('invalid_grant');
      const refreshed = await oidc.refreshTokenGrant(rp, tokens.refresh_token!, undefined, { DPoP: handle });
      expect(refreshed.token_type).toBe('dpop');
      expect(decodeJwt(refreshed.access_token).cnf).toEqual({ jkt });
      expect((await oidc.fetchUserInfo(rp, refreshed.access_token, '1', { DPoP: handle })).sub).toBe('1');
      expect(await oidc.tokenIntrospection(rp, refreshed.refresh_token!)).toMatchObject({ active: true, cnf: { jkt } });
    } finally {
      await context.close();
    }
  });
});
