/**
 * Code, implicit and hybrid flows end to end, with every identity token verified against the
 * published JWKS and its hashes computed here (OIDC Core §3.1.3.6, §3.2.2.10, §3.3.2.11).
 */
import { jwtVerify } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fetchJwks, type TestSigil } from '../helpers.js';
import {
  authorizeUrl,
  Browser,
  CB,
  codeParams,
  expectClientError,
  halfHash,
  isActive,
  ISSUER,
  pkce,
  readResponse,
  redeem,
  startAuthorizeSigil,
  verifyIdToken,
} from '../authorize-helpers.js';

let sigil: TestSigil;
let b: Browser;
let login: { sid: string; authTime: number };
const { verifier, challenge } = pkce();
const NONCE = `n\u00e9-\u{1F511}-${'x'.repeat(280)}`;

beforeAll(async () => {
  sigil = await startAuthorizeSigil();
  b = new Browser(sigil);
  const before = Math.floor(Date.now() / 1000);
  await b.signIn('alice');
  login = { sid: '', authTime: before };
});
afterAll(async () => sigil.close());

const hybrid = (responseType: string, extra: Record<string, string> = {}) => ({
  client_id: 'hybrid',
  redirect_uri: CB,
  response_type: responseType,
  scope: 'openid profile api1',
  state: 'st',
  nonce: NONCE,
  code_challenge: challenge,
  code_challenge_method: 'S256',
  ...extra,
});

/** Common identity-token checks for alice's session: iss, sub, aud, nonce, amr, sid, auth_time and iat. */
async function checkIdToken(token: string, clientId: string, nonce: string | undefined) {
  const { claims, alg } = await verifyIdToken(sigil, token, clientId);
  expect(claims.iss).toBe(ISSUER);
  expect(claims.sub).toBe('1');
  expect(claims.aud).toBe(clientId);
  if (nonce === undefined) expect(claims).not.toHaveProperty('nonce');
  else expect(claims.nonce).toBe(nonce);
  expect(claims.amr).toEqual(['pwd']);
  expect(claims.sid).toBeTypeOf('string');
  if (login.sid === '') login.sid = claims.sid as string;
  expect(claims.sid).toBe(login.sid);
  expect(claims.auth_time).toBeTypeOf('number');
  expect(Math.abs((claims.auth_time as number) - login.authTime)).toBeLessThanOrEqual(30);
  expect(Math.abs((claims.iat as number) - Date.now() / 1000)).toBeLessThanOrEqual(30);
  return { claims, alg };
}

describe('code flow', () => {
  it('the identity token from the token endpoint: signature, iss, aud, nonce, at_hash, auth_time, sid, amr, lifetime', async () => {
    const r = readResponse(await b.get(authorizeUrl(codeParams(challenge, { nonce: NONCE }))));
    expect(r.params.has('id_token')).toBe(false);
    expect(r.params.has('access_token')).toBe(false);
    const res = await redeem(sigil, r.params.get('code')!, { verifier });
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json();
    const { claims, alg } = await checkIdToken(body.id_token, 'web', NONCE);
    expect(claims.at_hash).toBe(halfHash(body.access_token, alg));
    expect((claims.exp as number) - (claims.iat as number)).toBe(300);
    // The access token is a JWT for the API, not an identity token.
    const at = await jwtVerify(body.access_token, await fetchJwks(sigil), { issuer: ISSUER, typ: 'at+jwt' });
    expect(at.payload.sub).toBe('1');
    expect(at.payload.client_id).toBe('web');
    expect(body.refresh_token).toBeTypeOf('string');
  });
});

describe('hybrid flows (client hybrid)', () => {
  it('code id_token: c_hash in the front-channel token; the back-channel token agrees on iss and sub', async () => {
    const r = readResponse(await b.get(authorizeUrl(hybrid('code id_token'))));
    expect(r.mode).toBe('fragment');
    expect([...r.params.keys()].sort()).toEqual(['code', 'id_token', 'iss', 'state']);
    const code = r.params.get('code')!;
    const front = await checkIdToken(r.params.get('id_token')!, 'hybrid', NONCE);
    expect(front.claims.c_hash).toBe(halfHash(code, front.alg));
    expect(front.claims).not.toHaveProperty('at_hash');
    // An access token follows from the token endpoint: the profile claims stay for userinfo.
    expect(front.claims).not.toHaveProperty('name');
    const res = await redeem(sigil, code, { client: 'hybrid', verifier });
    expect(res.statusCode, res.body).toBe(200);
    const back = await checkIdToken(res.json().id_token, 'hybrid', NONCE);
    expect(back.claims.iss).toBe(front.claims.iss);
    expect(back.claims.sub).toBe(front.claims.sub);
    expect(back.claims.at_hash).toBe(halfHash(res.json().access_token, back.alg));
  });

  it('code token: code and access token, no identity token', async () => {
    const r = readResponse(await b.get(authorizeUrl(hybrid('code token', { scope: 'openid api1' }))));
    expect([...r.params.keys()].sort()).toEqual([
      'access_token',
      'code',
      'expires_in',
      'iss',
      'scope',
      'state',
      'token_type',
    ]);
    expect(r.params.get('token_type')).toBe('Bearer');
    expect(r.params.get('expires_in')).toBe('3600');
    expect(r.params.get('scope')).toBe('openid api1');
    expect(await isActive(sigil, r.params.get('access_token')!)).toBe(true);
    const res = await redeem(sigil, r.params.get('code')!, { client: 'hybrid', verifier });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().id_token).toBeTypeOf('string');
  });

  it('code id_token token: c_hash and at_hash', async () => {
    const r = readResponse(await b.get(authorizeUrl(hybrid('code id_token token'))));
    const { claims, alg } = await checkIdToken(r.params.get('id_token')!, 'hybrid', NONCE);
    expect(claims.c_hash).toBe(halfHash(r.params.get('code')!, alg));
    expect(claims.at_hash).toBe(halfHash(r.params.get('access_token')!, alg));
    expect(r.params.has('refresh_token')).toBe(false);
  });

  it('the code of a hybrid response is bound to PKCE and the nonce like any code', async () => {
    const r = readResponse(await b.get(authorizeUrl(hybrid('code id_token', { nonce: 'hyb-n' }))));
    const wrong = await redeem(sigil, r.params.get('code')!, { client: 'hybrid', verifier: pkce().verifier });
    expect(wrong.json().error).toBe('invalid_grant');
    const ok = await redeem(sigil, r.params.get('code')!, { client: 'hybrid', verifier });
    expect((await checkIdToken(ok.json().id_token, 'hybrid', 'hyb-n')).claims.nonce).toBe('hyb-n');
  });
});

describe('implicit flows (client hybrid, allowAccessTokensViaBrowser)', () => {
  it('id_token: only an identity token, with the identity scope claims in it (no access token to fetch them)', async () => {
    const r = readResponse(await b.get(authorizeUrl(hybrid('id_token', { scope: 'openid profile email' }))));
    expect([...r.params.keys()].sort()).toEqual(['id_token', 'iss', 'state']);
    const { claims } = await checkIdToken(r.params.get('id_token')!, 'hybrid', NONCE);
    expect(claims.name).toBe('Alice Smith');
    expect(claims.email).toBe('alice@example.com');
    expect(claims).not.toHaveProperty('at_hash');
    expect(claims).not.toHaveProperty('c_hash');
  });

  it('id_token token: at_hash binds the access token', async () => {
    const r = readResponse(await b.get(authorizeUrl(hybrid('id_token token'))));
    expect([...r.params.keys()].sort()).toEqual([
      'access_token',
      'expires_in',
      'id_token',
      'iss',
      'scope',
      'state',
      'token_type',
    ]);
    const { claims, alg } = await checkIdToken(r.params.get('id_token')!, 'hybrid', NONCE);
    expect(claims.at_hash).toBe(halfHash(r.params.get('access_token')!, alg));
    expect(claims).not.toHaveProperty('name');
    const at = await jwtVerify(r.params.get('access_token')!, await fetchJwks(sigil), {
      issuer: ISSUER,
      typ: 'at+jwt',
    });
    expect(at.payload.client_id).toBe('hybrid');
    const info = await sigil.app.inject({
      method: 'GET',
      url: '/connect/userinfo',
      headers: { authorization: `Bearer ${r.params.get('access_token')}` },
    });
    expect(info.statusCode).toBe(200);
    expect(info.json().name).toBe('Alice Smith');
  });

  it('token: an access token for the API scopes only', async () => {
    const r = readResponse(await b.get(authorizeUrl(hybrid('token', { scope: 'api1' }))));
    expect([...r.params.keys()].sort()).toEqual(['access_token', 'expires_in', 'iss', 'scope', 'state', 'token_type']);
    expect(r.params.get('scope')).toBe('api1');
    expect(await isActive(sigil, r.params.get('access_token')!)).toBe(true);
  });

  it('offline_access is ignored unless a code is returned', async () => {
    const r = readResponse(
      await b.get(authorizeUrl(hybrid('id_token token', { scope: 'openid api1 offline_access' }))),
    );
    expect(r.params.get('access_token')).toBeTruthy();
    expect(r.params.get('scope')).toBe('openid api1');
    expect(r.params.has('refresh_token')).toBe(false);
    const t = readResponse(await b.get(authorizeUrl(hybrid('token', { scope: 'api1 offline_access' }))));
    expect(t.params.get('scope')).toBe('api1');
    // With a code, the same scope yields a refresh token from the token endpoint.
    const h = readResponse(
      await b.get(authorizeUrl(hybrid('code id_token token', { scope: 'openid api1 offline_access' }))),
    );
    expect(h.params.get('scope')).toBe('openid api1');
    expect(h.params.has('refresh_token')).toBe(false);
    const res = await redeem(sigil, h.params.get('code')!, { client: 'hybrid', verifier });
    expect(res.json().refresh_token).toBeTypeOf('string');
    expect(res.json().scope.split(' ')).toContain('offline_access');
  });
});

describe('access tokens from this endpoint only for clients allowed them (client nobrowser)', () => {
  const nb = (rt: string, extra: Record<string, string> = {}) =>
    hybrid(rt, { client_id: 'nobrowser', scope: 'openid api1', ...extra });

  it('token, id_token token, code token, code id_token token → unauthorized_client, nothing issued', async () => {
    for (const rt of ['token', 'id_token token', 'code token', 'code id_token token']) {
      expectClientError(
        await b.get(authorizeUrl(nb(rt, rt === 'token' ? { scope: 'api1' } : {}))),
        'unauthorized_client',
        { mode: 'fragment', state: 'st' },
      );
    }
  });

  it('id_token and code id_token still work', async () => {
    const idt = readResponse(await b.get(authorizeUrl(nb('id_token', { scope: 'openid profile' }))));
    await checkIdToken(idt.params.get('id_token')!, 'nobrowser', NONCE);
    const h = readResponse(await b.get(authorizeUrl(nb('code id_token'))));
    expect(h.params.get('code')).toBeTruthy();
    expect(h.params.has('access_token')).toBe(false);
  });
});

describe('hash sizes follow the signing algorithm', () => {
  it('with ES384, c_hash and at_hash are the left 24 bytes of SHA-384', async () => {
    const es = await startAuthorizeSigil([], { signingAlgorithms: ['ES384'] });
    try {
      const browser = new Browser(es);
      await browser.signIn('alice');
      const r = readResponse(await browser.get(authorizeUrl(hybrid('code id_token token'))));
      const { claims, alg } = await verifyIdToken(es, r.params.get('id_token')!, 'hybrid');
      expect(alg).toBe('ES384');
      expect(claims.c_hash).toBe(halfHash(r.params.get('code')!, 'ES384'));
      expect(claims.at_hash).toBe(halfHash(r.params.get('access_token')!, 'ES384'));
      expect(Buffer.from(claims.c_hash as string, 'base64url')).toHaveLength(24);
    } finally {
      await es.close();
    }
  });
});
