/**
 * FAPI 2.0 Security Profile mode (`profile: "fapi2"`, FAPI 2.0 SP final §5.3.2, §5.4) over HTTP:
 * the happy path (PAR, PKCE S256, private_key_jwt with aud = issuer, DPoP-bound access and
 * refresh tokens, tokens signed with a FAPI algorithm), and one negative test per check, after
 * the FAPI 2.0 conformance modules. Also RFC 9449 §10.1: a DPoP header at PAR.
 */
import { generateKeyPairSync } from 'node:crypto';
import { calculateJwkThumbprint, decodeJwt, decodeProtectedHeader, exportJWK, jwtVerify, SignJWT } from 'jose';
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { assertionFields, clientKey, type ClientKey, signAssertion } from '../assertion-helpers.js';
import {
  Browser,
  CB,
  ISSUER,
  codeParams,
  expectClientError,
  getCode,
  isActive,
  pkce,
  startAuthorizeSigil,
  webLike,
} from '../authorize-helpers.js';
import { proof, proofKey, type ProofKey } from '../dpop-helpers.js';
import { fetchJwks, introspect, postForm, type TestSigil } from '../helpers.js';

const TOKEN_URL = `${ISSUER}/connect/token`;
const PAR_URL = `${ISSUER}/connect/par`;
const TOKEN_EXCHANGE = 'urn:ietf:params:oauth:grant-type:token-exchange';
const ACCESS_TOKEN_TYPE = 'urn:ietf:params:oauth:token-type:access_token';

function expectError(res: LightMyRequestResponse, error: string, status = 400): void {
  expect(res.statusCode, res.body).toBe(status);
  expect(res.json<{ error: string }>().error).toBe(error);
}

let ps: ClientKey;
let rs: ClientKey;
let dpopKey: ProofKey;
beforeAll(async () => {
  [ps, rs, dpopKey] = await Promise.all([clientKey('PS256', 'ps-1'), clientKey('RS256', 'rs-1'), proofKey('ES256')]);
});

/** The `DPoP` request header carrying `proofJwt`, if any. */
function dpopHeader(proofJwt: string | undefined): Record<string, string> {
  return proofJwt === undefined ? {} : { dpop: proofJwt };
}

/** A fapi2 client `id` (its keys: PS256 and RS256, so that only the profile refuses RS256). */
const fapiClient = (id: string) =>
  webLike(id, { clientSecrets: [], jwks: { keys: [ps.publicJwk, rs.publicJwk] }, profile: 'fapi2' });

/** Requests for one fapi2 client of `sigil`, authenticated with private_key_jwt. */
function fapiCalls(sigil: () => TestSigil, clientId: string) {
  const auth = async (opts: { key?: ClientKey; aud?: string | string[] } = {}) =>
    assertionFields(await signAssertion(opts.key ?? ps, clientId, opts.aud ?? ISSUER), clientId);
  return {
    auth,
    /** POST /connect/par with the code request `params` (PKCE S256 unless overridden). */
    async push(params: Record<string, string>, opts: { dpop?: string; key?: ClientKey; aud?: string } = {}) {
      return postForm(sigil(), '/connect/par', { ...params, ...(await auth(opts)) }, undefined, dpopHeader(opts.dpop));
    },
    /** Pushes, signs alice in and returns the code. */
    async code(params: Record<string, string>, opts: { dpop?: string } = {}) {
      const res = await this.push(params, opts);
      expect(res.statusCode, res.body).toBe(201);
      return getCode(new Browser(sigil()), {
        client_id: clientId,
        request_uri: res.json<{ request_uri: string }>().request_uri,
      });
    },
    /** A token request with a fresh assertion and, unless null, a proof of `key`. */
    async token(
      params: Record<string, string>,
      opts: { proofKey?: ProofKey | null; key?: ClientKey; aud?: string | string[] } = {},
    ) {
      const key = opts.proofKey === undefined ? dpopKey : opts.proofKey;
      return postForm(
        sigil(),
        '/connect/token',
        { ...params, ...(await auth(opts)) },
        undefined,
        dpopHeader(key ? await proof(key, TOKEN_URL) : undefined),
      );
    },
  };
}

describe('profile "fapi2"', () => {
  let sigil: TestSigil;
  // RS256 comes first in signingAlgorithms: other clients' tokens are RS256, the fapi2 client's are not.
  beforeAll(async () => {
    const gateway = {
      clientId: 'gateway',
      clientSecrets: ['gateway-secret'],
      allowedGrantTypes: [TOKEN_EXCHANGE],
      allowedScopes: ['api1'],
      tokenExchangeSubjectAudiences: ['api1'],
    };
    sigil = await startAuthorizeSigil(
      [
        fapiClient('bank'),
        webLike('signed', { clientSecrets: [], jwks: { keys: [ps.publicJwk, rs.publicJwk] } }),
        gateway,
      ],
      {
        signingAlgorithms: ['RS256', 'ES256'],
        rateLimits: { maxFailures: 1000, windowSeconds: 60 },
      },
    );
  });
  afterAll(async () => sigil?.close());
  afterEach(() => {
    vi.useRealTimers();
  });
  const bank = fapiCalls(() => sigil, 'bank');
  const redeemParams = (code: string, verifier: string) => ({
    grant_type: 'authorization_code',
    code,
    redirect_uri: CB,
    code_verifier: verifier,
  });

  it('completes PAR + PKCE + private_key_jwt + DPoP: bound access and refresh tokens, ES256-signed identity token', async () => {
    const { verifier, challenge } = pkce();
    const code = await bank.code(codeParams(challenge, { client_id: 'bank' }));
    const res = await bank.token(redeemParams(code, verifier));
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json<{ access_token: string; refresh_token: string; id_token: string; token_type: string }>();
    expect(body.token_type).toBe('DPoP');
    expect(decodeJwt(body.access_token).cnf).toEqual({ jkt: dpopKey.jkt });
    expect(decodeProtectedHeader(body.access_token).alg).toBe('ES256');
    expect(decodeProtectedHeader(body.id_token).alg).toBe('ES256');
    await jwtVerify(body.id_token, await fetchJwks(sigil), { issuer: ISSUER, audience: 'bank' });

    // The refresh token is bound too: no proof, another key, then the right key.
    const refresh = { grant_type: 'refresh_token', refresh_token: body.refresh_token };
    expectError(await bank.token(refresh, { proofKey: null }), 'invalid_request');
    expectError(await bank.token(refresh, { proofKey: await proofKey('ES256') }), 'invalid_grant');
    const refreshed = await bank.token(refresh);
    expect(refreshed.statusCode, refreshed.body).toBe(200);
    expect(refreshed.json().token_type).toBe('DPoP');
    expect(decodeJwt(refreshed.json().access_token).cnf).toEqual({ jkt: dpopKey.jkt });
    // Introspection shows the bindings: the access token to its API, the refresh token to its client.
    const at = await introspect(sigil, refreshed.json().access_token);
    expect(at.json()).toMatchObject({ active: true, token_type: 'DPoP', cnf: { jkt: dpopKey.jkt } });
    const rt = await postForm(sigil, '/connect/introspect', {
      token: refreshed.json().refresh_token,
      ...(await bank.auth()),
    });
    expect(rt.json()).toMatchObject({ active: true, cnf: { jkt: dpopKey.jkt } });
  });

  it("never turns its tokens into Bearer tokens: another client's token exchange needs the bound key", async () => {
    const { verifier, challenge } = pkce();
    const code = await bank.code(codeParams(challenge, { client_id: 'bank' }));
    const subject = (await bank.token(redeemParams(code, verifier))).json<{ access_token: string }>().access_token;
    // The gateway acts as api1, the audience of bank's token, and is no fapi2 client: it may send no proof at all.
    const params = {
      grant_type: TOKEN_EXCHANGE,
      subject_token: subject,
      subject_token_type: ACCESS_TOKEN_TYPE,
      scope: 'api1',
    };
    const exchange = (proofJwt?: string) =>
      postForm(sigil, '/connect/token', params, ['gateway', 'gateway-secret'], dpopHeader(proofJwt));
    expectError(await exchange(), 'invalid_request');
    expectError(
      await exchange(await proof(await proofKey('ES256'), TOKEN_URL, { accessToken: subject })),
      'invalid_dpop_proof',
    );
    const res = await exchange(await proof(dpopKey, TOKEN_URL, { accessToken: subject }));
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().token_type).toBe('DPoP');
    expect(decodeJwt(res.json().access_token).cnf).toEqual({ jkt: dpopKey.jkt });
  });

  it('refuses a client assertion whose aud is the token endpoint URL or an array (ensure-client-assertion-with-wrong-aud-fails)', async () => {
    const { verifier, challenge } = pkce();
    const code = await bank.code(codeParams(challenge, { client_id: 'bank' }));
    for (const aud of [TOKEN_URL, [ISSUER], PAR_URL]) {
      const res = await bank.token(redeemParams(code, verifier), { aud });
      expectError(res, 'invalid_client', 401);
      expect(res.json().error_description).toMatch(/aud/);
    }
    // The same at PAR.
    expectError(await bank.push(codeParams(challenge, { client_id: 'bank' }), { aud: PAR_URL }), 'invalid_client', 401);
    // A client without the profile may name the token endpoint.
    const other = await postForm(sigil, '/connect/token', {
      grant_type: 'authorization_code',
      code: 'x',
      redirect_uri: CB,
      ...assertionFields(await signAssertion(ps, 'signed', TOKEN_URL), 'signed'),
    });
    expectError(other, 'invalid_grant');
    // The code was not used up by the refusals.
    expect((await bank.token(redeemParams(code, verifier))).statusCode).toBe(200);
  });

  it('refuses an RS256 client assertion (ensure-signed-client-assertion-with-RS256-fails)', async () => {
    const res = await bank.push(codeParams(pkce().challenge, { client_id: 'bank' }), { key: rs });
    expectError(res, 'invalid_client', 401);
    expect(res.json().error_description).toMatch(/algorithm/);
  });

  it('refuses response_type=code id_token and token (ensure-response-type-code-idtoken-fails)', async () => {
    for (const rt of ['code id_token', 'code token', 'id_token']) {
      const res = await bank.push(codeParams(pkce().challenge, { client_id: 'bank', response_type: rt }));
      expectError(res, 'unsupported_response_type');
    }
  });

  it('refuses an unpushed authorization request with invalid_request to the client', async () => {
    const b = new Browser(sigil);
    expectClientError(
      await b.get(`/connect/authorize?${new URLSearchParams(codeParams(pkce().challenge, { client_id: 'bank' }))}`),
      'invalid_request',
    );
  });

  it('requires PKCE with S256 and redirect_uri at PAR (ensure-pkce-required)', async () => {
    const { challenge } = pkce();
    const base = codeParams(challenge, { client_id: 'bank' });
    const { code_challenge: _c, code_challenge_method: _m, ...noPkce } = base;
    expectError(await bank.push(noPkce), 'invalid_request');
    expectError(await bank.push({ ...base, code_challenge_method: 'plain' }), 'invalid_request');
    const { code_challenge_method: _m2, ...noMethod } = base;
    expectError(await bank.push(noMethod), 'invalid_request');
    const { redirect_uri: _r, ...noRedirect } = base;
    expectError(await bank.push(noRedirect), 'invalid_request');
  });

  it('refuses an RS256 request object at PAR (invalid_request_object)', async () => {
    const { challenge } = pkce();
    const claims = { ...codeParams(challenge, { client_id: 'bank' }), iss: 'bank', aud: ISSUER };
    const sign = (key: ClientKey) =>
      new SignJWT(claims)
        .setProtectedHeader({ alg: key.alg, kid: key.kid })
        .setIssuedAt()
        .setExpirationTime('1m')
        .sign(key.privateKey);
    expectError(await bank.push({ client_id: 'bank', request: await sign(rs) }), 'invalid_request_object');
    expect((await bank.push({ client_id: 'bank', request: await sign(ps) })).statusCode).toBe(201);
  });

  it('refuses a token request without DPoP (ensure-holder-of-key-required) and an RS256 proof', async () => {
    const { verifier, challenge } = pkce();
    const code = await bank.code(codeParams(challenge, { client_id: 'bank' }));
    expectError(await bank.token(redeemParams(code, verifier), { proofKey: null }), 'invalid_request');
    const rsProof = await bank.token(redeemParams(code, verifier), { proofKey: await proofKey('RS256') });
    expectError(rsProof, 'invalid_dpop_proof');
    expect(rsProof.json().error_description).toMatch(/RS256/);
    expect((await bank.token(redeemParams(code, verifier), { proofKey: await proofKey('EdDSA') })).statusCode).toBe(
      200,
    );
  });

  it('refuses an RS256 proof at userinfo for its token, accepts PS256 with the same RSA key', async () => {
    // One RSA key that can sign both PS256 and RS256 (a node:crypto KeyObject; jose signs with it).
    const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const jwk = await exportJWK(publicKey);
    const rsa: ProofKey = {
      alg: 'PS256',
      privateKey: privateKey as unknown as ProofKey['privateKey'],
      jwk,
      jkt: await calculateJwkThumbprint(jwk, 'sha256'),
    };
    const { verifier, challenge } = pkce();
    const code = await bank.code(codeParams(challenge, { client_id: 'bank' }));
    const res = await bank.token(redeemParams(code, verifier), { proofKey: rsa });
    expect(res.statusCode, res.body).toBe(200);
    const accessToken = res.json<{ access_token: string }>().access_token;
    const call = async (alg: string) =>
      sigil.app.inject({
        url: '/connect/userinfo',
        headers: {
          authorization: `DPoP ${accessToken}`,
          dpop: await proof({ ...rsa, alg }, `${ISSUER}/connect/userinfo`, { htm: 'GET', accessToken }),
        },
      });
    const refused = await call('RS256');
    expect(refused.statusCode).toBe(401);
    expect(refused.headers['www-authenticate']).toMatch(/error="invalid_dpop_proof"/);
    expect((await call('PS256')).statusCode).toBe(200);
  });

  it('refuses a code older than 60 seconds (codes live at most 60 s)', async () => {
    const { verifier, challenge } = pkce();
    const code = await bank.code(codeParams(challenge, { client_id: 'bank' }));
    vi.useFakeTimers({ toFake: ['Date'], now: Date.now() + 61_000 });
    const res = await bank.token(redeemParams(code, verifier));
    expectError(res, 'invalid_grant');
    expect(res.json().error_description).toMatch(/expired/);
  });

  describe('a DPoP header at PAR (RFC 9449 §10.1)', () => {
    it('binds the code to the proof key when dpop_jkt is absent', async () => {
      const { verifier, challenge } = pkce();
      const code = await bank.code(codeParams(challenge, { client_id: 'bank' }), {
        dpop: await proof(dpopKey, PAR_URL),
      });
      expectError(
        await bank.token(redeemParams(code, verifier), { proofKey: await proofKey('ES256') }),
        'invalid_grant',
      );
      const res = await bank.token(redeemParams(code, verifier));
      expect(res.statusCode, res.body).toBe(200);
      expect(await isActive(sigil, res.json().access_token)).toBe(true);
    });

    it('accepts dpop_jkt naming the proof key, refuses one naming another key (invalid_request)', async () => {
      const { challenge } = pkce();
      const params = codeParams(challenge, { client_id: 'bank' });
      const other = await proofKey('ES256');
      const mismatch = await bank.push({ ...params, dpop_jkt: other.jkt }, { dpop: await proof(dpopKey, PAR_URL) });
      expectError(mismatch, 'invalid_request');
      expect(mismatch.json().error_description).toMatch(/dpop_jkt/);
      expect(
        (await bank.push({ ...params, dpop_jkt: dpopKey.jkt }, { dpop: await proof(dpopKey, PAR_URL) })).statusCode,
      ).toBe(201);
    });

    it('refuses an invalid proof (wrong htu, reused jti, RS256 for a fapi2 client) with invalid_dpop_proof', async () => {
      const params = codeParams(pkce().challenge, { client_id: 'bank' });
      expectError(await bank.push(params, { dpop: await proof(dpopKey, TOKEN_URL) }), 'invalid_dpop_proof');
      const once = await proof(dpopKey, PAR_URL);
      expect((await bank.push(params, { dpop: once })).statusCode).toBe(201);
      expectError(await bank.push(params, { dpop: once }), 'invalid_dpop_proof');
      expectError(
        await bank.push(params, { dpop: await proof(await proofKey('RS256'), PAR_URL) }),
        'invalid_dpop_proof',
      );
    });
  });
});

describe('EdDSA signing keys', () => {
  let sigil: TestSigil;
  beforeAll(async () => {
    sigil = await startAuthorizeSigil([fapiClient('bank')], { signingAlgorithms: ['RS256', 'EdDSA'] });
  });
  afterAll(async () => sigil?.close());

  it("publishes an Ed25519 key, lists EdDSA in discovery, signs the fapi2 client's tokens with it; they verify and work at userinfo", async () => {
    const jwks = (await sigil.app.inject('/.well-known/openid-configuration/jwks')).json<{
      keys: Record<string, unknown>[];
    }>();
    expect(jwks.keys).toContainEqual(expect.objectContaining({ kty: 'OKP', crv: 'Ed25519', alg: 'EdDSA', use: 'sig' }));
    expect(jwks.keys.every((k) => !('d' in k))).toBe(true);
    const doc = (await sigil.app.inject('/.well-known/openid-configuration')).json();
    expect(doc.id_token_signing_alg_values_supported).toEqual(['RS256', 'EdDSA']);

    const bank = fapiCalls(() => sigil, 'bank');
    const { verifier, challenge } = pkce();
    const code = await bank.code(codeParams(challenge, { client_id: 'bank' }));
    const res = await bank.token({ grant_type: 'authorization_code', code, redirect_uri: CB, code_verifier: verifier });
    expect(res.statusCode, res.body).toBe(200);
    const { id_token: idToken, access_token: accessToken } = res.json<{ id_token: string; access_token: string }>();
    expect(decodeProtectedHeader(idToken).alg).toBe('EdDSA');
    await jwtVerify(idToken, await fetchJwks(sigil), { issuer: ISSUER, audience: 'bank', algorithms: ['EdDSA'] });
    const userinfo = await sigil.app.inject({
      url: '/connect/userinfo',
      headers: {
        authorization: `DPoP ${accessToken}`,
        dpop: await proof(dpopKey, `${ISSUER}/connect/userinfo`, { htm: 'GET', accessToken }),
      },
    });
    expect(userinfo.statusCode, userinfo.body).toBe(200);
    expect(userinfo.json().sub).toBeDefined();
  });
});
