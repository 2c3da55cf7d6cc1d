/**
 * End to end: the `claims` request parameter (OIDC Core §5.5) and `acr` (§3.1.2.1) with a real
 * relying party (openid-client builds the request, redeems the code, validates the identity token
 * and calls userinfo) against the built `sigil start` process, the user signing in with Chromium.
 */
import * as oidc from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type BrowserFixture,
  callbackResponse,
  newPage,
  startBrowserFixture,
  submitLogin,
  WEB,
} from './browser-fixture.js';

let f: BrowserFixture;
let web: oidc.Configuration;

beforeAll(async () => {
  f = await startBrowserFixture();
  web = await oidc.discovery(new URL(f.sigil.url), WEB.id, WEB.secret, oidc.ClientSecretBasic(WEB.secret), {
    execute: [oidc.allowInsecureRequests],
  });
});
afterAll(async () => f?.close());

describe('claims parameter through openid-client and Chromium', () => {
  it('scope openid: email asked for the identity token, name for userinfo, acr through acr_values', async () => {
    const meta = web.serverMetadata();
    expect(meta.claims_parameter_supported).toBe(true);
    expect(meta.acr_values_supported).toEqual(['urn:sigil:acr:password', 'urn:sigil:acr:mfa']);

    const { context, page } = await newPage(f.browser);
    try {
      const codeVerifier = oidc.randomPKCECodeVerifier();
      const state = oidc.randomState();
      const nonce = oidc.randomNonce();
      const url = oidc.buildAuthorizationUrl(web, {
        redirect_uri: `${f.cb.url}/cb`,
        response_type: 'code',
        scope: 'openid',
        claims: JSON.stringify({ id_token: { email: { essential: true } }, userinfo: { name: null } }),
        acr_values: 'urn:sigil:acr:password',
        code_challenge: await oidc.calculatePKCECodeChallenge(codeVerifier),
        code_challenge_method: 'S256',
        state,
        nonce,
      });
      const since = f.cb.hits.length;
      await page.goto(url.href);
      await page.waitForURL(/\/account\/login\?interaction=/);
      await submitLogin(page, 'alice');
      const response = await callbackResponse(page, f.cb, since);
      expect(response.params.code).toBeTruthy();

      const tokens = await oidc.authorizationCodeGrant(web, new URL(page.url()), {
        pkceCodeVerifier: codeVerifier,
        expectedState: state,
        expectedNonce: nonce,
      });
      const idClaims = tokens.claims()!;
      expect(idClaims).toMatchObject({ sub: '1', email: 'alice@example.com', acr: 'urn:sigil:acr:password' });
      expect(idClaims.name).toBeUndefined();
      expect(await oidc.fetchUserInfo(web, tokens.access_token, idClaims.sub)).toEqual({
        sub: '1',
        name: 'Alice Smith',
      });
    } finally {
      await context.close();
    }
  });
});
