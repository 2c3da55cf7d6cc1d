/**
 * The `claims` authorization request parameter (OIDC Core §5.5) over HTTP: individual claims for
 * the identity token and userinfo, carried by the code and the refresh token; only claims of the
 * granted scopes, or of the client's allowed scopes when no consent is involved; inside a request
 * object; malformed or oversized JSON is `invalid_request`; a `sub` value binds the user.
 * Then the same code flow driven by openid-client over a real socket.
 */
import { SignJWT } from 'jose';
import * as oidc from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../e2e/ports.js';
import { type TestSigil, tokenRequest, userinfo } from '../helpers.js';
import {
  authorizeUrl,
  Browser,
  CB,
  codeParams,
  expectClientError,
  ISSUER,
  pkce,
  readResponse,
  redeem,
  startAuthorizeSigil,
  verifyIdToken,
} from '../authorize-helpers.js';

let sigil: TestSigil;
beforeAll(async () => {
  sigil = await startAuthorizeSigil([
    {
      clientId: 'webref',
      clientSecrets: ['webref-secret'],
      allowedGrantTypes: ['authorization_code'],
      allowedScopes: ['openid', 'email'],
      redirectUris: [CB],
      accessTokenType: 'reference',
    },
  ]);
});
afterAll(async () => sigil?.close());

const claimsParam = (value: unknown) => ({ claims: JSON.stringify(value) });

/** Signs in as alice, runs a code request with `extra`, redeems the code; returns the token response. */
async function codeFlow(extra: Record<string, string>, opts: { client?: string; consent?: boolean } = {}) {
  const b = new Browser(sigil);
  const { verifier, challenge } = pkce();
  const client = opts.client ?? 'web';
  const params = codeParams(challenge, { client_id: client, ...extra });
  const r = readResponse(await b.authorize(params, { user: 'alice', consent: 'yes' }));
  const code = r.params.get('code');
  expect(code, r.location ?? JSON.stringify([...r.params])).toBeTruthy();
  const res = await redeem(sigil, code!, { client, verifier });
  expect(res.statusCode, res.body).toBe(200);
  const body = res.json<{ id_token: string; access_token: string; refresh_token?: string }>();
  const { claims } = await verifyIdToken(sigil, body.id_token, client);
  return { ...body, idClaims: claims };
}

async function userinfoOf(accessToken: string): Promise<Record<string, unknown>> {
  const res = await userinfo(sigil, accessToken);
  expect(res.statusCode, res.body).toBe(200);
  return res.json();
}

describe('discovery', () => {
  it('advertises claims_parameter_supported and acr among claims_supported', async () => {
    const doc = (await sigil.app.inject({ method: 'GET', url: '/.well-known/openid-configuration' })).json();
    expect(doc.claims_parameter_supported).toBe(true);
    expect(doc.claims_supported).toEqual(expect.arrayContaining(['sub', 'acr', 'name', 'email']));
  });
});

describe('individual claims for the identity token and userinfo', () => {
  it('scope openid only: email asked for the identity token, name for userinfo; each only where asked', async () => {
    const out = await codeFlow({
      scope: 'openid offline_access',
      ...claimsParam({ id_token: { email: { essential: true } }, userinfo: { name: null } }),
    });
    expect(out.idClaims.email).toBe('alice@example.com');
    expect(out.idClaims.name).toBeUndefined();
    const info = await userinfoOf(out.access_token);
    expect(info).toEqual({ sub: '1', name: 'Alice Smith' });

    // The refresh token carries the request: the new identity token and access token honour it.
    const refreshed = await tokenRequest(sigil, { grant_type: 'refresh_token', refresh_token: out.refresh_token! }, [
      'web',
      'web-secret',
    ]);
    expect(refreshed.statusCode, refreshed.body).toBe(200);
    const again = refreshed.json<{ id_token: string; access_token: string }>();
    expect((await verifyIdToken(sigil, again.id_token, 'web')).claims.email).toBe('alice@example.com');
    expect(await userinfoOf(again.access_token)).toEqual({ sub: '1', name: 'Alice Smith' });
  });

  it('reference access tokens keep the userinfo claims in their stored row too', async () => {
    const out = await codeFlow(
      { scope: 'openid', ...claimsParam({ userinfo: { email: null } }) },
      { client: 'webref' },
    );
    expect(out.access_token).not.toContain('.');
    expect(await userinfoOf(out.access_token)).toEqual({ sub: '1', email: 'alice@example.com' });
  });

  it('a claim of a granted scope asked for the identity token goes into it (code flow keeps profile claims in userinfo otherwise)', async () => {
    const plain = await codeFlow({ scope: 'openid profile' });
    expect(plain.idClaims.name).toBeUndefined();
    const asked = await codeFlow({ scope: 'openid profile', ...claimsParam({ id_token: { given_name: null } }) });
    expect(asked.idClaims.given_name).toBe('Alice');
    expect(asked.idClaims.family_name).toBeUndefined();
  });

  it('never releases a claim of a scope the client may not have (role), nor protocol claims from the profile', async () => {
    const out = await codeFlow({
      scope: 'openid',
      ...claimsParam({
        id_token: { role: { essential: true }, amr: null, iss: null },
        userinfo: { role: null, email: null },
      }),
    });
    expect(out.idClaims.role).toBeUndefined();
    expect(out.idClaims.iss).toBe(ISSUER);
    expect(out.idClaims.amr).toEqual(['pwd']);
    expect(await userinfoOf(out.access_token)).toEqual({ sub: '1', email: 'alice@example.com' });
  });

  it('a client that requires consent gets only claims of the consented scopes', async () => {
    const out = await codeFlow(
      {
        scope: 'openid profile',
        ...claimsParam({ id_token: { email: { essential: true }, name: null }, userinfo: { email: null } }),
      },
      { client: 'consent' },
    );
    expect(out.idClaims.name).toBe('Alice Smith');
    expect(out.idClaims.email).toBeUndefined();
    const info = await userinfoOf(out.access_token);
    expect(info.email).toBeUndefined();
    expect(info.name).toBe('Alice Smith');
  });

  it('prompt=consent also limits the claims to the consented scopes', async () => {
    const out = await codeFlow({ scope: 'openid', prompt: 'consent', ...claimsParam({ id_token: { email: null } }) });
    expect(out.idClaims.email).toBeUndefined();
  });

  it('implicit id_token: requested claims join the identity token; the request survives the login page', async () => {
    const b = new Browser(sigil);
    const r = readResponse(
      await b.authorize(
        {
          client_id: 'hybrid',
          redirect_uri: CB,
          response_type: 'id_token',
          scope: 'openid',
          nonce: 'n-i',
          state: 'st',
          ...claimsParam({ id_token: { email: null } }),
        },
        { user: 'alice' },
      ),
    );
    const idToken = r.params.get('id_token');
    expect(idToken, r.location).toBeTruthy();
    const { claims } = await verifyIdToken(sigil, idToken!, 'hybrid');
    expect(claims.email).toBe('alice@example.com');
    expect(claims.nonce).toBe('n-i');
  });

  it('inside a request object (HS256 with the client secret)', async () => {
    const { verifier, challenge } = pkce();
    const b = new Browser(sigil);
    await b.signIn('alice');
    const jwt = await new SignJWT({
      ...codeParams(challenge, { scope: 'openid' }),
      claims: { id_token: { email: { essential: true } } },
    })
      .setProtectedHeader({ alg: 'HS256' })
      .setIssuer('web')
      .setAudience(ISSUER)
      .setExpirationTime('2m')
      .sign(new TextEncoder().encode('web-secret'));
    const r = readResponse(await b.get(authorizeUrl({ client_id: 'web', request: jwt })));
    const res = await redeem(sigil, r.params.get('code')!, { verifier });
    expect(res.statusCode, res.body).toBe(200);
    expect((await verifyIdToken(sigil, res.json().id_token, 'web')).claims.email).toBe('alice@example.com');
  });

  it('a sub value for another user never yields alice tokens: prompt=none is login_required', async () => {
    const b = new Browser(sigil);
    await b.signIn('alice');
    const { challenge } = pkce();
    const other = await b.get(
      authorizeUrl(codeParams(challenge, { prompt: 'none', ...claimsParam({ id_token: { sub: { value: '2' } } }) })),
    );
    expectClientError(other, 'login_required', { state: 'st' });
    const same = await b.get(
      authorizeUrl(codeParams(challenge, { prompt: 'none', ...claimsParam({ id_token: { sub: { value: '1' } } }) })),
    );
    expect(readResponse(same).params.get('code')).toBeTruthy();
  });
});

describe('malformed claims parameter: invalid_request back to the client', () => {
  const cases: [string, string][] = [
    ['not JSON', '{"id_token":'],
    ['an array', '[]'],
    ['a string', '"email"'],
    ['id_token not an object', '{"id_token":["email"]}'],
    ['a claim neither null nor an object', '{"userinfo":{"email":true}}'],
    ['essential not a boolean', '{"id_token":{"email":{"essential":"yes"}}}'],
    ['values not an array', '{"id_token":{"acr":{"values":"urn:x"}}}'],
    ['nested too deeply', `{"id_token":{"email":{"value":${'['.repeat(10)}${']'.repeat(10)}}}}`],
    [
      'too long',
      JSON.stringify({
        userinfo: Object.fromEntries(Array.from({ length: 200 }, (_, i) => [`claim_${i}_${'x'.repeat(20)}`, null])),
      }),
    ],
    ['sub value not one string', '{"id_token":{"sub":{"values":["1","2"]}}}'],
  ];
  for (const [name, claims] of cases) {
    it(name, async () => {
      const b = new Browser(sigil);
      await b.signIn('alice');
      const { challenge } = pkce();
      expectClientError(await b.get(authorizeUrl(codeParams(challenge, { claims }))), 'invalid_request', {
        state: 'st',
      });
    });
  }

  it('userinfo claims with response_type=id_token (no access token) are refused (OIDC Core §5.5)', async () => {
    const b = new Browser(sigil);
    await b.signIn('alice');
    const step = await b.get(
      authorizeUrl({
        client_id: 'hybrid',
        redirect_uri: CB,
        response_type: 'id_token',
        scope: 'openid',
        nonce: 'n',
        state: 'st',
        ...claimsParam({ userinfo: { email: null } }),
      }),
    );
    expectClientError(step, 'invalid_request', { state: 'st', mode: 'fragment' });
  });

  it('a claims parameter without the openid scope is refused', async () => {
    const b = new Browser(sigil);
    await b.signIn('alice');
    const { challenge } = pkce();
    const step = await b.get(
      authorizeUrl(codeParams(challenge, { scope: 'api1', ...claimsParam({ userinfo: { email: null } }) })),
    );
    expectClientError(step, 'invalid_request', { state: 'st' });
  });

  it('a malformed claims parameter inside a request object is invalid_request too', async () => {
    const b = new Browser(sigil);
    await b.signIn('alice');
    const { challenge } = pkce();
    const jwt = await new SignJWT({ ...codeParams(challenge), claims: { id_token: { email: { essential: 1 } } } })
      .setProtectedHeader({ alg: 'HS256' })
      .setAudience(ISSUER)
      .setExpirationTime('2m')
      .sign(new TextEncoder().encode('web-secret'));
    expectClientError(await b.get(authorizeUrl({ client_id: 'web', request: jwt })), 'invalid_request', {
      state: 'st',
    });
  });
});

describe('through openid-client', () => {
  let listening: TestSigil;
  let config: oidc.Configuration;

  beforeAll(async () => {
    const port = await freePort();
    const issuer = `http://127.0.0.1:${port}`;
    listening = await startAuthorizeSigil([], { issuer });
    await listening.app.listen({ port, host: '127.0.0.1' });
    config = await oidc.discovery(new URL(issuer), 'web', 'web-secret', oidc.ClientSecretBasic('web-secret'), {
      execute: [oidc.allowInsecureRequests],
    });
  });
  afterAll(async () => listening?.close());

  it('a code flow asking for email in the identity token and name from userinfo (scope openid only)', async () => {
    expect(config.serverMetadata().claims_parameter_supported).toBe(true);
    const codeVerifier = oidc.randomPKCECodeVerifier();
    const state = oidc.randomState();
    const nonce = oidc.randomNonce();
    const url = oidc.buildAuthorizationUrl(config, {
      redirect_uri: CB,
      response_type: 'code',
      scope: 'openid',
      claims: JSON.stringify({ id_token: { email: { essential: true } }, userinfo: { name: { essential: true } } }),
      code_challenge: await oidc.calculatePKCECodeChallenge(codeVerifier),
      code_challenge_method: 'S256',
      state,
      nonce,
    });
    // The user's browser: sign-in on Sigil's pages (same server, driven through inject).
    const b = new Browser(listening);
    const step = await b.authorize(Object.fromEntries(url.searchParams), { user: 'alice' });
    const callback = readResponse(step).location!;

    const tokens = await oidc.authorizationCodeGrant(config, new URL(callback), {
      pkceCodeVerifier: codeVerifier,
      expectedState: state,
      expectedNonce: nonce,
    });
    const idClaims = tokens.claims()!;
    expect(idClaims.email).toBe('alice@example.com');
    expect(idClaims.name).toBeUndefined();
    const info = await oidc.fetchUserInfo(config, tokens.access_token, idClaims.sub);
    expect(info).toEqual({ sub: '1', name: 'Alice Smith' });
  });
});
