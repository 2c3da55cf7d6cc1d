/**
 * End to end: openid-client v6 as a relying party that pushes its authorization request (RFC 9126)
 * and authenticates with `private_key_jwt` (RFC 7523), code flow with PKCE, against the built
 * `sigil start` process; the user signs in with Chromium.
 */
import * as oidc from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clientKey, type ClientKey } from '../assertion-helpers.js';
import {
  type BrowserFixture,
  browserConfig,
  callbackResponse,
  newPage,
  pushedCodeFlow,
  startBrowserFixture,
} from './browser-fixture.js';

let f: BrowserFixture;
let key: ClientKey;
let rp: oidc.Configuration;

beforeAll(async () => {
  key = await clientKey('ES256', 'rp-key-1');
  f = await startBrowserFixture((cb) => {
    const base = browserConfig(cb);
    return {
      ...base,
      clients: [
        ...(base.clients ?? []),
        {
          clientId: 'signed-rp',
          clientSecrets: [],
          jwks: { keys: [key.publicJwk] },
          tokenEndpointAuthMethod: 'private_key_jwt',
          tokenEndpointAuthSigningAlgorithms: ['ES256', 'PS256'],
          requirePushedAuthorizationRequests: true,
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
    'signed-rp',
    undefined,
    oidc.PrivateKeyJwt({ key: key.privateKey, kid: key.kid }),
    {
      execute: [oidc.allowInsecureRequests],
    },
  );
});
afterAll(async () => f?.close());

describe('openid-client: PAR + private_key_jwt + PKCE', () => {
  it('discovery advertises PAR and the assertion methods', () => {
    const meta = rp.serverMetadata();
    expect(meta.pushed_authorization_request_endpoint).toBe(`${f.sigil.url}/connect/par`);
    expect(meta.token_endpoint_auth_methods_supported).toContain('private_key_jwt');
    expect(meta.token_endpoint_auth_signing_alg_values_supported).toContain('ES256');
  });

  it('pushes the request, signs in, redeems the code and refreshes, every call authenticated by a signed JWT', async () => {
    const { context, page } = await newPage(f.browser);
    try {
      const { url, response, tokens } = await pushedCodeFlow(f, page, rp, {
        scope: 'openid profile api1 offline_access',
      });
      expect(url.searchParams.get('request_uri')).toMatch(/^urn:ietf:params:oauth:request_uri:/);
      expect([...url.searchParams.keys()].sort()).toEqual(['client_id', 'request_uri']);
      expect(response.params.code).toBeTruthy();
      expect(tokens.claims()).toMatchObject({ sub: '1', aud: 'signed-rp' });
      expect(tokens.refresh_token).toEqual(expect.any(String));
      const refreshed = await oidc.refreshTokenGrant(rp, tokens.refresh_token!);
      expect(refreshed.access_token).toEqual(expect.any(String));
      expect(await oidc.tokenIntrospection(rp, refreshed.access_token)).toMatchObject({
        active: true,
        client_id: 'signed-rp',
        sub: '1',
      });

      // The request_uri was used once: the same URL again is the error page, no redirect.
      const reuse = await page.goto(url.href);
      expect(reuse?.status()).toBe(400);
      expect(await page.content()).toContain('invalid_request_uri');
    } finally {
      await context.close();
    }
  });

  it('a client that must push gets invalid_request for a plain authorization request', async () => {
    const { context, page } = await newPage(f.browser);
    try {
      const url = oidc.buildAuthorizationUrl(rp, {
        redirect_uri: `${f.cb.url}/cb`,
        response_type: 'code',
        scope: 'openid',
        code_challenge: await oidc.calculatePKCECodeChallenge(oidc.randomPKCECodeVerifier()),
        code_challenge_method: 'S256',
        state: 'plain',
      });
      const since = f.cb.hits.length;
      await page.goto(url.href);
      const response = await callbackResponse(page, f.cb, since);
      expect(response.params).toMatchObject({ error: 'invalid_request', state: 'plain' });
    } finally {
      await context.close();
    }
  });
});
