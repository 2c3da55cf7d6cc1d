/**
 * `acr` (OIDC Core §2, §3.1.2.1, §5.5.1.1) over HTTP: the identity token carries the class Sigil
 * achieved when `acr_values` or a `claims` request for `acr` was sent; an essential `acr` that no
 * sign-in can meet is `unmet_authentication_requirements` (OpenID Connect Core Unmet
 * Authentication Requirements 1.0); one a new sign-in could meet asks for it, and fails if the
 * sign-in done for the request did not meet it. Discovery lists the attainable classes.
 */
import { decodeJwt } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type TestSigil, tokenRequest } from '../helpers.js';
import {
  authorizeUrl,
  Browser,
  codeParams,
  expectClientError,
  getCode,
  isLoginPage,
  pkce,
  readResponse,
  redeem,
  startAuthorizeSigil,
  verifyIdToken,
} from '../authorize-helpers.js';

const PASSWORD = 'urn:sigil:acr:password';
const FEDERATED = 'urn:sigil:acr:federated';
const MFA = 'urn:sigil:acr:mfa';
const essentialAcr = (...values: string[]) => ({
  claims: JSON.stringify({ id_token: { acr: { essential: true, values } } }),
});

let sigil: TestSigil;
/** The same clients plus an upstream provider (never contacted: the tests sign in locally). */
let withUpstream: TestSigil;
beforeAll(async () => {
  sigil = await startAuthorizeSigil();
  withUpstream = await startAuthorizeSigil([], {
    identityProviders: [
      {
        name: 'corp',
        displayName: 'Corp SSO',
        authority: 'http://127.0.0.1:9',
        clientId: 'sigil',
        clientSecret: 's',
        scope: 'openid',
      },
    ],
  });
});
afterAll(async () => {
  await sigil?.close();
  await withUpstream?.close();
});

/** Runs a code flow as alice with `extra` and returns the identity token's claims (and the refresh token). */
async function idTokenOf(on: TestSigil, extra: Record<string, string>, b = new Browser(on)) {
  const { verifier, challenge } = pkce();
  const code = await getCode(b, codeParams(challenge, extra));
  const res = await redeem(on, code, { verifier });
  expect(res.statusCode, res.body).toBe(200);
  return {
    claims: (await verifyIdToken(on, res.json().id_token, 'web')).claims,
    accessClaims: decodeJwt(res.json().access_token as string),
    refreshToken: res.json().refresh_token as string,
  };
}

describe('discovery', () => {
  it('lists password and MFA sign-in, and federated sign-in once an upstream provider is configured', async () => {
    const doc = (await sigil.app.inject({ method: 'GET', url: '/.well-known/openid-configuration' })).json();
    expect(doc.acr_values_supported).toEqual([PASSWORD, MFA]);
    const up = (await withUpstream.app.inject({ method: 'GET', url: '/.well-known/openid-configuration' })).json();
    expect(up.acr_values_supported).toEqual([PASSWORD, MFA, FEDERATED]);
  });
});

describe('acr in the identity token', () => {
  it('acr_values (any value, voluntary) gets the achieved class, in the access token too; refreshed identity tokens keep it', async () => {
    const { claims, accessClaims, refreshToken } = await idTokenOf(sigil, { acr_values: 'urn:example:gold' });
    expect(claims.acr).toBe(PASSWORD);
    // RFC 9068 §2.2.1: the JWT access token carries the authentication information asked for.
    expect(accessClaims.acr).toBe(PASSWORD);
    const refreshed = await tokenRequest(sigil, { grant_type: 'refresh_token', refresh_token: refreshToken }, [
      'web',
      'web-secret',
    ]);
    expect(refreshed.statusCode, refreshed.body).toBe(200);
    expect((await verifyIdToken(sigil, refreshed.json().id_token, 'web')).claims.acr).toBe(PASSWORD);
  });

  it('a claims request for acr (null) gets it too; no request, no acr', async () => {
    expect((await idTokenOf(sigil, { claims: JSON.stringify({ id_token: { acr: null } }) })).claims.acr).toBe(PASSWORD);
    const none = await idTokenOf(sigil, {});
    expect(none.claims.acr).toBeUndefined();
    expect(none.accessClaims.acr).toBeUndefined();
  });

  it('an essential acr that the sign-in meets succeeds (value or values)', async () => {
    expect((await idTokenOf(sigil, essentialAcr('urn:example:gold', PASSWORD))).claims.acr).toBe(PASSWORD);
    const single = { claims: JSON.stringify({ id_token: { acr: { essential: true, value: PASSWORD } } }) };
    expect((await idTokenOf(sigil, single)).claims.acr).toBe(PASSWORD);
  });

  it('a voluntary acr request Sigil cannot meet still succeeds with the achieved class', async () => {
    const voluntary = { claims: JSON.stringify({ id_token: { acr: { values: [FEDERATED] } } }) };
    expect((await idTokenOf(sigil, voluntary)).claims.acr).toBe(PASSWORD);
  });
});

/**
 * acr_values is a voluntary list in order of preference (OIDC Core §3.1.2.1): a
 * sign-in that meets any listed value takes no further step and gets the most preferred value it
 * meets; step-up only when it meets none. An essential acr stays strict (§5.5.1.1).
 */
describe('acr_values in order of preference', () => {
  it('every supported class listed (oidcc-ensure-request-with-acr-values-succeeds): the password alone completes, acr is one of them', async () => {
    const listed = `${PASSWORD} ${FEDERATED} ${MFA}`;
    const { claims, accessClaims } = await idTokenOf(sigil, { acr_values: listed });
    expect(claims.acr).toBe(PASSWORD);
    expect(accessClaims.acr).toBe(PASSWORD);
    expect(claims.amr).toEqual(['pwd']);
  });

  it('the most preferred value the sign-in meets, not the first listed: MFA first, then password', async () => {
    const { claims } = await idTokenOf(sigil, { acr_values: `urn:example:gold ${MFA} ${PASSWORD}` });
    expect(claims.acr).toBe(PASSWORD);
    expect(claims.amr).toEqual(['pwd']);
  });

  it('steps up when no listed value is met (federated or MFA asked, password given): the enrollment page, no code', async () => {
    const b = new Browser(sigil);
    const { challenge } = pkce();
    const login = await b.follow(
      await b.get(authorizeUrl(codeParams(challenge, { acr_values: `${FEDERATED} ${MFA}` }))),
    );
    expect(isLoginPage(login), login.body).toBe(true);
    const next = await b.follow(await b.submitLogin(login, 'bob', 'bob'));
    expect(next.body).toContain('action="/account/totp"');
    expect(b.cookies.has('sigil.session')).toBe(false);
  });

  it('an essential acr stays strict: [federated, mfa] without an upstream provider steps a password session up, it does not answer with password', async () => {
    const b = new Browser(sigil);
    await b.signIn('carol');
    const { challenge } = pkce();
    const step = await b.follow(await b.get(authorizeUrl(codeParams(challenge, essentialAcr(FEDERATED, MFA)))));
    expect(step.status, step.location).toBe(200);
    expect(step.body).toContain('action="/account/totp"');
  });
});

describe('essential acr that cannot be met: unmet_authentication_requirements to the client', () => {
  it('a class no sign-in offers (unknown, or federated without an upstream provider): refused before any page', async () => {
    for (const value of ['urn:example:gold', FEDERATED]) {
      const b = new Browser(sigil);
      const { challenge } = pkce();
      const step = await b.get(authorizeUrl(codeParams(challenge, essentialAcr(value))));
      expectClientError(step, 'unmet_authentication_requirements', { state: 'st' });
    }
  });

  it('signed in with a password, federated asked: the login page; a password sign-in there does not meet it', async () => {
    const b = new Browser(withUpstream);
    await b.signIn('alice');
    const { challenge } = pkce();
    const params = codeParams(challenge, essentialAcr(FEDERATED));
    const toLogin = await b.follow(await b.get(authorizeUrl(params)));
    expect(isLoginPage(toLogin), toLogin.body).toBe(true);
    expect(toLogin.body).toContain('/federation/corp/login');
    const after = await b.follow(await b.submitLogin(toLogin, 'alice', 'alice'));
    expectClientError(after, 'unmet_authentication_requirements', { state: 'st' });
  });

  it('with prompt=none, a session that does not meet an attainable class is login_required', async () => {
    const b = new Browser(withUpstream);
    await b.signIn('alice');
    const { challenge } = pkce();
    const step = await b.get(authorizeUrl(codeParams(challenge, { prompt: 'none', ...essentialAcr(FEDERATED) })));
    expectClientError(step, 'login_required', { state: 'st' });
  });

  it('the password class for a client without local login is unmet', async () => {
    const local = await startAuthorizeSigil([
      {
        clientId: 'nolocal',
        clientSecrets: ['nolocal-secret'],
        allowedGrantTypes: ['authorization_code'],
        allowedScopes: ['openid'],
        redirectUris: ['https://rp.example/cb'],
        enableLocalLogin: false,
      },
    ]);
    try {
      const { challenge } = pkce();
      const step = await new Browser(local).get(
        authorizeUrl(codeParams(challenge, { client_id: 'nolocal', scope: 'openid', ...essentialAcr(PASSWORD) })),
      );
      expectClientError(step, 'unmet_authentication_requirements', { state: 'st' });
    } finally {
      await local.close();
    }
  });

  it('an essential acr with an empty values list is invalid_request', async () => {
    const { challenge } = pkce();
    const step = await new Browser(sigil).get(authorizeUrl(codeParams(challenge, essentialAcr())));
    expectClientError(step, 'invalid_request', { state: 'st' });
  });
});

describe('an essential acr the session already meets', () => {
  it('is answered without a new sign-in', async () => {
    const b = new Browser(sigil);
    await b.signIn('alice');
    const { challenge } = pkce();
    const step = await b.get(authorizeUrl(codeParams(challenge, essentialAcr(PASSWORD))));
    expect(readResponse(step).params.get('code')).toBeTruthy();
  });
});
