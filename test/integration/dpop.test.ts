/**
 * DPoP (RFC 9449) over HTTP: proofs at the token endpoint bind access tokens (`cnf.jkt`,
 * `token_type: DPoP`) and refresh tokens, confidential clients' too; every failed check of §4.3 is
 * `invalid_dpop_proof` and issues nothing; `dpop_jkt` binds the authorization code (§10); server
 * nonces (§8); userinfo with the DPoP scheme (§7.1) and refusal of a bound token as Bearer (§7.2);
 * introspection shows the binding (§6.2).
 */
import fc from 'fast-check';
import { decodeJwt, SignJWT } from 'jose';
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ISSUER,
  Browser,
  codeParams,
  expectClientError,
  getCode,
  pkce,
  redeem,
  startAuthorizeSigil,
} from '../authorize-helpers.js';
import {
  postForm,
  introspect,
  sleep,
  startSigil,
  type BasicCredentials,
  type TestSigil,
  type TokenBody,
} from '../helpers.js';
import { proof, proofKey, type ProofKey } from '../dpop-helpers.js';

const TOKEN_URL = `${ISSUER}/connect/token`;
const USERINFO_URL = `${ISSUER}/connect/userinfo`;
const M2M: BasicCredentials = ['m2m', 'm2m-secret'];
const now = () => Math.floor(Date.now() / 1000);

function token(
  sigil: TestSigil,
  params: Record<string, string>,
  auth: BasicCredentials | undefined,
  dpop?: string | string[],
): Promise<LightMyRequestResponse> {
  return postForm(
    sigil,
    '/connect/token',
    params,
    auth,
    dpop === undefined ? {} : ({ dpop } as unknown as Record<string, string>),
  );
}

function expectError(res: LightMyRequestResponse, error: string, status = 400): void {
  expect(res.statusCode, res.body).toBe(status);
  expect(res.json<{ error: string }>().error).toBe(error);
}

describe('DPoP at the token endpoint', () => {
  let sigil: TestSigil;
  let key: ProofKey;
  beforeAll(async () => {
    sigil = await startSigil({
      clients: [
        {
          clientId: 'm2m',
          clientSecrets: ['m2m-secret'],
          allowedGrantTypes: ['client_credentials'],
          allowedScopes: ['api1', 'api2'],
        },
        {
          clientId: 'm2m-ref',
          clientSecrets: ['m2m-secret'],
          allowedGrantTypes: ['client_credentials'],
          allowedScopes: ['api1'],
          accessTokenType: 'reference',
        },
        {
          clientId: 'bound',
          clientSecrets: ['bound-secret'],
          allowedGrantTypes: ['client_credentials'],
          allowedScopes: ['api1'],
          requireDPoP: true,
        },
        {
          clientId: 'spa',
          requireClientSecret: false,
          allowedGrantTypes: ['password'],
          allowedScopes: ['openid', 'api1', 'offline_access'],
          allowOfflineAccess: true,
        },
        {
          clientId: 'ropc',
          clientSecrets: ['ropc-secret'],
          allowedGrantTypes: ['password', 'urn:ietf:params:oauth:grant-type:token-exchange'],
          allowedScopes: ['openid', 'profile', 'api1', 'offline_access'],
          allowOfflineAccess: true,
        },
      ],
    });
    key = await proofKey();
  });
  afterAll(async () => sigil?.close());

  it('binds a client_credentials access token to the proof key (cnf.jkt, token_type DPoP), shown by introspection', async () => {
    const res = await token(
      sigil,
      { grant_type: 'client_credentials', scope: 'api1' },
      M2M,
      await proof(key, TOKEN_URL),
    );
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json<TokenBody>();
    expect(body.token_type).toBe('DPoP');
    expect(decodeJwt(body.access_token).cnf).toEqual({ jkt: key.jkt });
    const info = (await introspect(sigil, body.access_token)).json<Record<string, unknown>>();
    expect(info).toMatchObject({ active: true, token_type: 'DPoP', cnf: { jkt: key.jkt } });
  });

  it('keeps the binding of reference tokens', async () => {
    const res = await token(
      sigil,
      { grant_type: 'client_credentials' },
      ['m2m-ref', 'm2m-secret'],
      await proof(key, TOKEN_URL),
    );
    const body = res.json<TokenBody>();
    expect(body.token_type).toBe('DPoP');
    expect(body.access_token).not.toContain('.');
    const info = (await introspect(sigil, body.access_token)).json<Record<string, unknown>>();
    expect(info).toMatchObject({ active: true, token_type: 'DPoP', cnf: { jkt: key.jkt } });
  });

  it('issues Bearer tokens without a proof, and refuses a requireDPoP client without one', async () => {
    const plain = await token(sigil, { grant_type: 'client_credentials' }, M2M);
    expect(plain.json<TokenBody>().token_type).toBe('Bearer');
    expect(decodeJwt(plain.json<TokenBody>().access_token).cnf).toBeUndefined();
    expectError(await token(sigil, { grant_type: 'client_credentials' }, ['bound', 'bound-secret']), 'invalid_request');
    const ok = await token(
      sigil,
      { grant_type: 'client_credentials' },
      ['bound', 'bound-secret'],
      await proof(key, TOKEN_URL),
    );
    expect(ok.json<TokenBody>().token_type).toBe('DPoP');
  });

  it('accepts htu with a query or fragment, other letter case in scheme and host, and iat a few seconds off', async () => {
    for (const opts of [
      { htu: `${TOKEN_URL}?x=1#f` },
      { htu: TOKEN_URL.replace('http://', 'HTTP://') },
      { iat: now() - 10 },
      { iat: now() + 10 },
      { claims: { extra: 'member' } },
    ]) {
      const res = await token(sigil, { grant_type: 'client_credentials' }, M2M, await proof(key, TOKEN_URL, opts));
      expect(res.statusCode, `${JSON.stringify(opts)}: ${res.body}`).toBe(200);
      expect(res.json<TokenBody>().token_type).toBe('DPoP');
    }
  });

  it('refuses every proof failing a check of RFC 9449 §4.3 with invalid_dpop_proof', async () => {
    const other = await proofKey();
    const hmac = new TextEncoder().encode('x'.repeat(32));
    const hsProof = await new SignJWT({ htm: 'POST', htu: TOKEN_URL, jti: 'hs' })
      .setProtectedHeader({ alg: 'HS256', typ: 'dpop+jwt', jwk: key.jwk })
      .setIssuedAt()
      .sign(hmac);
    const rsa = await proofKey('RS256');
    const privateJwk = { ...key.jwk, d: 'AAAA' };
    const cases: Record<string, string | string[]> = {
      'wrong htu path': await proof(key, TOKEN_URL, { htu: `${ISSUER}/connect/userinfo` }),
      'wrong htu host': await proof(key, TOKEN_URL, { htu: 'http://evil.example:5999/connect/token' }),
      'wrong htm': await proof(key, TOKEN_URL, { htm: 'GET' }),
      'iat an hour old': await proof(key, TOKEN_URL, { iat: now() - 3600 }),
      'iat an hour ahead': await proof(key, TOKEN_URL, { iat: now() + 3600 }),
      'typ jwt': await proof(key, TOKEN_URL, { typ: 'JWT' }),
      'no jwk': await proof(key, TOKEN_URL, { jwk: null }),
      'private jwk': await proof(key, TOKEN_URL, { jwk: privateJwk }),
      // WebCrypto refuses such a key with a DOMException, not a jose error (found by the property below).
      'jwk not on the curve': await proof(key, TOKEN_URL, { jwk: { ...key.jwk, x: key.jwk.x!.slice(1) } }),
      'bad signature': await proof(key, TOKEN_URL, { signWith: other.privateKey }),
      'RS256 proof naming an EC jwk': await proof(rsa, TOKEN_URL, { jwk: key.jwk }),
      'no jti': await proof(key, TOKEN_URL, { claims: { jti: undefined } }),
      'no htm': await proof(key, TOKEN_URL, { claims: { htm: undefined } }),
      'jti of 10 KB': await proof(key, TOKEN_URL, { jti: 'j'.repeat(10_000) }),
      HS256: hsProof,
      'alg none': `${Buffer.from(JSON.stringify({ alg: 'none', typ: 'dpop+jwt', jwk: key.jwk })).toString('base64url')}.${Buffer.from(JSON.stringify({ htm: 'POST', htu: TOKEN_URL, jti: 'n', iat: now() })).toString('base64url')}.`,
      'not a JWT': 'not-a-jwt',
      'two DPoP headers': [await proof(key, TOKEN_URL), await proof(key, TOKEN_URL)],
    };
    for (const [name, value] of Object.entries(cases)) {
      const res = await token(sigil, { grant_type: 'client_credentials' }, M2M, value);
      expect(res.statusCode, `${name}: ${res.body}`).toBe(400);
      expect(res.json<{ error: string }>().error, name).toBe('invalid_dpop_proof');
    }
  });

  it('checks every proof of a key it has imported before: another signer, a changed JWK or another alg is refused; 1,100 other keys later it still binds', async () => {
    const seen = await proofKey();
    const first = await token(
      sigil,
      { grant_type: 'client_credentials', scope: 'api1' },
      M2M,
      await proof(seen, TOKEN_URL),
    );
    expect(decodeJwt(first.json<TokenBody>().access_token).cnf).toEqual({ jkt: seen.jkt });

    // The attacker copies the known public JWK into a proof signed with its own key.
    const attacker = await proofKey();
    expectError(
      await token(
        sigil,
        { grant_type: 'client_credentials' },
        M2M,
        await proof(seen, TOKEN_URL, { signWith: attacker.privateKey }),
      ),
      'invalid_dpop_proof',
    );
    // The same JWK with one coordinate changed is another key, imported (and refused) on its own.
    const changed = { ...seen.jwk, y: attacker.jwk.y! };
    expectError(
      await token(sigil, { grant_type: 'client_credentials' }, M2M, await proof(seen, TOKEN_URL, { jwk: changed })),
      'invalid_dpop_proof',
    );
    // The same JWK under another algorithm.
    const es384 = await proofKey('ES384');
    expectError(
      await token(sigil, { grant_type: 'client_credentials' }, M2M, await proof(es384, TOKEN_URL, { jwk: seen.jwk })),
      'invalid_dpop_proof',
    );

    // More keys than are kept imported (1,000): each binds its own token, and the first key still works.
    for (let i = 0; i < 1_100; i++) {
      const k = await proofKey();
      const res = await token(
        sigil,
        { grant_type: 'client_credentials', scope: 'api1' },
        M2M,
        await proof(k, TOKEN_URL),
      );
      expect(res.statusCode, res.body).toBe(200);
      if (i % 100 === 0) expect(decodeJwt(res.json<TokenBody>().access_token).cnf).toEqual({ jkt: k.jkt });
    }
    const again = await token(
      sigil,
      { grant_type: 'client_credentials', scope: 'api1' },
      M2M,
      await proof(seen, TOKEN_URL),
    );
    expect(again.statusCode, again.body).toBe(200);
    expect(decodeJwt(again.json<TokenBody>().access_token).cnf).toEqual({ jkt: seen.jkt });
  }, 60_000);

  it('refuses a proof used twice (jti single use per key)', async () => {
    const p = await proof(key, TOKEN_URL);
    expect((await token(sigil, { grant_type: 'client_credentials' }, M2M, p)).statusCode).toBe(200);
    expectError(await token(sigil, { grant_type: 'client_credentials' }, M2M, p), 'invalid_dpop_proof');
  });

  it("binds a public client's refresh token: refresh needs a proof of the same key", async () => {
    const first = await token(
      sigil,
      {
        grant_type: 'password',
        username: 'alice',
        password: 'alice',
        scope: 'openid api1 offline_access',
        client_id: 'spa',
      },
      undefined,
      await proof(key, TOKEN_URL),
    );
    const tokens = first.json<TokenBody>();
    expect(tokens.token_type).toBe('DPoP');
    const refresh = { grant_type: 'refresh_token', refresh_token: tokens.refresh_token!, client_id: 'spa' };
    const other = await proofKey();
    expectError(await token(sigil, refresh, undefined, await proof(other, TOKEN_URL)), 'invalid_grant');
    expectError(await token(sigil, refresh, undefined), 'invalid_grant');
    // The refused attempts consumed nothing: the right key still refreshes, and the new refresh token stays bound.
    const ok = await token(sigil, refresh, undefined, await proof(key, TOKEN_URL));
    expect(ok.statusCode, ok.body).toBe(200);
    const next = ok.json<TokenBody>();
    expect(next.token_type).toBe('DPoP');
    expect(decodeJwt(next.access_token).cnf).toEqual({ jkt: key.jkt });
    expectError(
      await token(sigil, { ...refresh, refresh_token: next.refresh_token! }, undefined, await proof(other, TOKEN_URL)),
      'invalid_grant',
    );
  });

  it("binds a confidential client's grant once its tokens are bound: every refresh needs the same key", async () => {
    const ROPC: BasicCredentials = ['ropc', 'ropc-secret'];
    const first = await token(
      sigil,
      { grant_type: 'password', username: 'alice', password: 'alice', scope: 'openid api1 offline_access' },
      ROPC,
      await proof(key, TOKEN_URL),
    );
    expect(first.json<TokenBody>().token_type).toBe('DPoP');
    const refresh = { grant_type: 'refresh_token', refresh_token: first.json<TokenBody>().refresh_token! };
    expect((await introspect(sigil, refresh.refresh_token, ROPC)).json()).toMatchObject({
      active: true,
      cnf: { jkt: key.jkt },
    });
    // A stolen refresh token and client secret, without the key: no Bearer tokens.
    expectError(await token(sigil, refresh, ROPC), 'invalid_grant');
    expectError(await token(sigil, refresh, ROPC, await proof(await proofKey(), TOKEN_URL)), 'invalid_grant');
    const ok = await token(sigil, refresh, ROPC, await proof(key, TOKEN_URL));
    expect(ok.statusCode, ok.body).toBe(200);
    const next = ok.json<TokenBody>();
    expect(next.token_type).toBe('DPoP');
    expect(decodeJwt(next.access_token).cnf).toEqual({ jkt: key.jkt });
    // The rotated refresh token carries the binding on.
    expectError(await token(sigil, { ...refresh, refresh_token: next.refresh_token! }, ROPC), 'invalid_grant');
  });

  it('binds tokens of extension grants (token exchange) too', async () => {
    const subject = await token(
      sigil,
      { grant_type: 'password', username: 'alice', password: 'alice', scope: 'api1' },
      ['ropc', 'ropc-secret'],
    );
    const res = await token(
      sigil,
      {
        grant_type: 'urn:ietf:params:oauth:grant-type:token-exchange',
        subject_token: subject.json<TokenBody>().access_token,
        subject_token_type: 'urn:ietf:params:oauth:token-type:access_token',
      },
      ['ropc', 'ropc-secret'],
      await proof(key, TOKEN_URL),
    );
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json<TokenBody>().token_type).toBe('DPoP');
    expect(decodeJwt(res.json<TokenBody>().access_token).cnf).toEqual({ jkt: key.jkt });
  });

  describe('userinfo', () => {
    let bound: string;
    const get = (headers: Record<string, string>) =>
      sigil.app.inject({ method: 'GET', url: '/connect/userinfo', headers });
    beforeAll(async () => {
      const res = await token(
        sigil,
        { grant_type: 'password', username: 'alice', password: 'alice', scope: 'openid api1' },
        ['ropc', 'ropc-secret'],
        await proof(key, TOKEN_URL),
      );
      bound = res.json<TokenBody>().access_token;
    });

    it('answers Authorization: DPoP with a proof carrying ath', async () => {
      const res = await get({
        authorization: `DPoP ${bound}`,
        dpop: await proof(key, USERINFO_URL, { htm: 'GET', accessToken: bound }),
      });
      expect(res.statusCode, res.body).toBe(200);
      expect(res.json()).toMatchObject({ sub: '1' });
    });

    it('refuses the bound token as Bearer with invalid_token and a DPoP challenge (RFC 9449 §7.2)', async () => {
      const res = await get({ authorization: `Bearer ${bound}` });
      expect(res.statusCode).toBe(401);
      expect(res.headers['www-authenticate']).toMatch(/^DPoP algs="[^"]+", error="invalid_token"/);
    });

    it('refuses a missing proof, a missing or wrong ath, another key, a reused proof, a wrong htm', async () => {
      const other = await proofKey();
      const reused = await proof(key, USERINFO_URL, { htm: 'GET', accessToken: bound });
      expect((await get({ authorization: `DPoP ${bound}`, dpop: reused })).statusCode).toBe(200);
      const cases: Record<string, Record<string, string>> = {
        'no proof': { authorization: `DPoP ${bound}` },
        'no ath': { authorization: `DPoP ${bound}`, dpop: await proof(key, USERINFO_URL, { htm: 'GET' }) },
        'wrong ath': {
          authorization: `DPoP ${bound}`,
          dpop: await proof(key, USERINFO_URL, { htm: 'GET', accessToken: 'another' }),
        },
        'another key': {
          authorization: `DPoP ${bound}`,
          dpop: await proof(other, USERINFO_URL, { htm: 'GET', accessToken: bound }),
        },
        reused: { authorization: `DPoP ${bound}`, dpop: reused },
        'wrong htm': {
          authorization: `DPoP ${bound}`,
          dpop: await proof(key, USERINFO_URL, { htm: 'POST', accessToken: bound }),
        },
      };
      for (const [name, headers] of Object.entries(cases)) {
        const res = await get(headers);
        expect(res.statusCode, name).toBe(401);
        expect(res.headers['www-authenticate'], name).toMatch(/^DPoP algs="[^"]+", error="invalid_dpop_proof"/);
      }
    });

    it('refuses an unbound token presented with the DPoP scheme', async () => {
      const res = await token(
        sigil,
        { grant_type: 'password', username: 'alice', password: 'alice', scope: 'openid' },
        ['ropc', 'ropc-secret'],
      );
      const plain = res.json<TokenBody>().access_token;
      const out = await get({
        authorization: `DPoP ${plain}`,
        dpop: await proof(key, USERINFO_URL, { htm: 'GET', accessToken: plain }),
      });
      expect(out.statusCode).toBe(401);
      expect(out.headers['www-authenticate']).toContain('error="invalid_dpop_proof"');
    });
  });
});

describe('malformed DPoP proofs (property)', () => {
  let sigil: TestSigil;
  let key: ProofKey;
  let bound: string;
  beforeAll(async () => {
    sigil = await startSigil();
    key = await proofKey();
    bound = (
      await token(sigil, { grant_type: 'client_credentials' }, M2M, await proof(key, TOKEN_URL))
    ).json<TokenBody>().access_token;
  });
  afterAll(async () => sigil?.close());

  const b64 = (value: unknown) =>
    Buffer.from(typeof value === 'string' ? value : (JSON.stringify(value) ?? 'null')).toString('base64url');
  /** Header and payload members near the real ones, with values of any JSON type. */
  const member = (names: string[]) =>
    fc.dictionary(fc.constantFrom(...names), fc.oneof(fc.jsonValue({ maxDepth: 3 }), fc.string()), {
      maxKeys: names.length,
    });
  const headerArb = fc.oneof(
    member(['alg', 'typ', 'jwk', 'kid', 'crit', 'b64', 'x5c']),
    fc.jsonValue({ maxDepth: 30 }),
  );
  const payloadArb = fc.oneof(
    member(['htm', 'htu', 'iat', 'jti', 'ath', 'nonce', 'exp', 'nbf']),
    fc.jsonValue({ maxDepth: 30 }),
  );
  /** Unsigned junk, signed proofs with arbitrary claims, and valid proofs cut or altered. */
  const proofArb = fc.oneof(
    fc.tuple(headerArb, payloadArb, fc.string()).map(([h, p, sig]) => `${b64(h)}.${b64(p)}.${b64(sig)}`),
    fc
      .tuple(
        member(['htm', 'htu', 'iat', 'jti', 'ath', 'nonce', 'exp', 'nbf']),
        fc.constantFrom('dpop+jwt', 'JWT', 'DPOP+JWT'),
      )
      .map(
        ([claims, typ]) =>
          async () =>
            new SignJWT(claims as Record<string, unknown>)
              .setProtectedHeader({ alg: key.alg, typ, jwk: key.jwk })
              .sign(key.privateKey),
      ),
    fc.tuple(fc.nat(), fc.string({ maxLength: 5 })).map(([cut, insert]) => async () => {
      const valid = await proof(key, TOKEN_URL);
      const at = cut % valid.length;
      return valid.slice(0, at) + insert + valid.slice(at + 1);
    }),
    fc.string({ maxLength: 200 }),
  );
  const resolve = async (p: string | (() => Promise<string>)) => (typeof p === 'string' ? p : p());

  it('never answers a malformed proof with a 5xx, at the token endpoint or userinfo', async () => {
    await fc.assert(
      fc.asyncProperty(proofArb, async (arb) => {
        const p = (await resolve(arb)).replace(/[\r\n\0]/g, '');
        const res = await token(sigil, { grant_type: 'client_credentials' }, M2M, p);
        expect(res.statusCode, res.body).toBeLessThan(500);
        if (res.statusCode !== 200)
          expect(['invalid_dpop_proof', 'invalid_request']).toContain(res.json<{ error: string }>().error);
        const info = await sigil.app.inject({
          method: 'GET',
          url: '/connect/userinfo',
          headers: { authorization: `DPoP ${bound}`, dpop: p },
        });
        expect(info.statusCode, info.body).toBeLessThan(500);
      }),
      { numRuns: 150 },
    );
  });
});

describe('DPoP server nonces (RFC 9449 §8)', () => {
  let sigil: TestSigil;
  beforeAll(async () => {
    sigil = await startSigil({ dpop: { requireNonce: true } });
  });
  afterAll(async () => sigil?.close());

  it('answers use_dpop_nonce with a DPoP-Nonce header, then accepts the nonce and hands out the next', async () => {
    const key = await proofKey();
    const first = await token(sigil, { grant_type: 'client_credentials' }, M2M, await proof(key, TOKEN_URL));
    expectError(first, 'use_dpop_nonce');
    const nonce = first.headers['dpop-nonce'];
    expect(nonce).toEqual(expect.any(String));
    expect(first.headers['cache-control']).toBe('no-store');
    expectError(
      await token(sigil, { grant_type: 'client_credentials' }, M2M, await proof(key, TOKEN_URL, { nonce: 'forged' })),
      'use_dpop_nonce',
    );
    const ok = await token(
      sigil,
      { grant_type: 'client_credentials' },
      M2M,
      await proof(key, TOKEN_URL, { nonce: nonce as string }),
    );
    expect(ok.statusCode, ok.body).toBe(200);
    expect(ok.json<TokenBody>().token_type).toBe('DPoP');
    expect(ok.headers['dpop-nonce']).toEqual(expect.any(String));
    // Requests without DPoP are not asked for a nonce.
    expect((await token(sigil, { grant_type: 'client_credentials' }, M2M)).statusCode).toBe(200);
  });

  it('refuses an expired nonce with use_dpop_nonce and a fresh one', async () => {
    const short = await startSigil({ dpop: { requireNonce: true, nonceLifetimeSeconds: 2 } });
    try {
      const key = await proofKey();
      const nonce = (await token(short, { grant_type: 'client_credentials' }, M2M, await proof(key, TOKEN_URL)))
        .headers['dpop-nonce'] as string;
      await sleep(2100);
      const late = await token(
        short,
        { grant_type: 'client_credentials' },
        M2M,
        await proof(key, TOKEN_URL, { nonce }),
      );
      expectError(late, 'use_dpop_nonce');
      expect(late.headers['dpop-nonce']).not.toBe(nonce);
    } finally {
      await short.close();
    }
  });
});

describe('dpop_jkt binds the authorization code (RFC 9449 §10)', () => {
  let sigil: TestSigil;
  beforeAll(async () => {
    sigil = await startAuthorizeSigil();
  });
  afterAll(async () => sigil?.close());

  it('refuses the code without a proof or with another key (invalid_grant), then redeems it with the key', async () => {
    const key = await proofKey();
    const other = await proofKey();
    const { verifier, challenge } = pkce();
    const code = await getCode(new Browser(sigil), codeParams(challenge, { dpop_jkt: key.jkt }));
    expectError(await redeem(sigil, code, { verifier }), 'invalid_grant');
    expectError(
      await redeem(sigil, code, { verifier, headers: { dpop: await proof(other, TOKEN_URL) } }),
      'invalid_grant',
    );
    const ok = await redeem(sigil, code, { verifier, headers: { dpop: await proof(key, TOKEN_URL) } });
    expect(ok.statusCode, ok.body).toBe(200);
    expect(ok.json<TokenBody>().token_type).toBe('DPoP');
    expect(decodeJwt(ok.json<TokenBody>().access_token).cnf).toEqual({ jkt: key.jkt });
  });

  it('refuses a malformed dpop_jkt at authorize with invalid_request', async () => {
    const { challenge } = pkce();
    const step = await new Browser(sigil).authorize(codeParams(challenge, { dpop_jkt: 'not a thumbprint' }), {
      user: 'alice',
    });
    expectClientError(step, 'invalid_request', { state: 'st' });
  });
});

describe("public clients' DPoP proofs are counted per address (each proof's jti is a stored row)", () => {
  let sigil: TestSigil;
  let key: ProofKey;
  beforeAll(async () => {
    sigil = await startSigil({
      pendingLimits: { dpopProofsPerAddress: 3 },
      clients: [
        {
          clientId: 'm2m',
          clientSecrets: ['m2m-secret'],
          allowedGrantTypes: ['client_credentials'],
          allowedScopes: ['api1'],
        },
        { clientId: 'spa', requireClientSecret: false, allowedGrantTypes: ['password'], allowedScopes: ['api1'] },
      ],
    });
    key = await proofKey();
  });
  afterAll(async () => sigil?.close());

  const from = (address: string, params: Record<string, string>, auth: BasicCredentials | undefined, dpop: string) =>
    sigil.app.inject({
      method: 'POST',
      url: '/connect/token',
      remoteAddress: address,
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        dpop,
        ...(auth ? { authorization: `Basic ${Buffer.from(`${auth[0]}:${auth[1]}`).toString('base64')}` } : {}),
      },
      payload: new URLSearchParams(params).toString(),
    });
  const guess = { grant_type: 'password', client_id: 'spa', username: 'alice', password: 'wrong', scope: 'api1' };

  it('past the quota one address gets 429 and stores no proof; another address and confidential clients go on', async () => {
    for (let i = 0; i < 3; i++)
      expectError(await from('198.51.100.7', guess, undefined, await proof(key, TOKEN_URL)), 'invalid_grant');
    const refused = await from('198.51.100.7', guess, undefined, await proof(key, TOKEN_URL));
    expectError(refused, 'temporarily_unavailable', 429);
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
    expectError(await from('203.0.113.9', guess, undefined, await proof(key, TOKEN_URL)), 'invalid_grant');
    for (let i = 0; i < 4; i++) {
      const res = await from(
        '198.51.100.7',
        { grant_type: 'client_credentials', scope: 'api1' },
        M2M,
        await proof(key, TOKEN_URL),
      );
      expect(res.statusCode, res.body).toBe(200);
    }
  });
});
