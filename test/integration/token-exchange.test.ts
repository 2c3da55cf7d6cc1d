/**
 * Token exchange (RFC 8693, delegation only) and extension grants (RFC 6749 §4.5; as Duende
 * IdentityServer's extension grants).
 */
import { decodeJwt, jwtVerify } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OAuthError, type ExtensionGrant } from '../../src/index.js';
import { proof, proofKey, type ProofKey } from '../dpop-helpers.js';
import {
  type BasicCredentials,
  clientTokens,
  fetchJwks,
  introspect,
  passwordTokens,
  postForm,
  startSigil,
  testConfig,
  tokenRequest,
  type TestSigil,
  type TokenBody,
  userinfo,
} from '../helpers.js';

const TOKEN_EXCHANGE = 'urn:ietf:params:oauth:grant-type:token-exchange';
const ACCESS_TOKEN_TYPE = 'urn:ietf:params:oauth:token-type:access_token';
const ROPC: BasicCredentials = ['ropc', 'ropc-secret'];
/** Acts as API resource api1: may exchange user tokens whose audience is api1. */
const GATEWAY: BasicCredentials = ['gateway', 'gateway-secret'];
/** Issues short-lived (30 s) user tokens. */
const SHORT: BasicCredentials = ['short', 'short-secret'];
/** Issues reference access tokens; exchanges its own and, acting as api1, api1 tokens. */
const REF: BasicCredentials = ['ref-ex', 'ref-secret'];
const MAY_ACT_GRANT = 'urn:example:may-act';
const TOKEN_URL = `${testConfig().issuer}/connect/token`;

/** alice's tokens from `client` by the password grant, bound to `key` (RFC 9449 §5). */
async function boundTokens(
  sigil: TestSigil,
  client: BasicCredentials,
  key: ProofKey,
  scope: string,
): Promise<TokenBody> {
  const params = { grant_type: 'password', username: 'alice', password: 'alice', scope };
  const res = await postForm(sigil, '/connect/token', params, client, { dpop: await proof(key, TOKEN_URL) });
  expect(res.json<TokenBody>().token_type, res.body).toBe('DPoP');
  return res.json<TokenBody>();
}

function expectError(res: { statusCode: number; json: () => unknown }, error: string): void {
  expect(res.statusCode).toBe(400);
  expect(res.json()).toMatchObject({ error });
}

/** A token request of `client` with `proofJwt` as its DPoP header, if any. */
function tokenRequestWithProof(
  sigil: TestSigil,
  params: Record<string, string>,
  client: BasicCredentials,
  proofJwt?: string,
) {
  return postForm(sigil, '/connect/token', params, client, proofJwt === undefined ? {} : { dpop: proofJwt });
}

/**
 * How a Sigil-issued token carries `may_act` (RFC 8693 §4.4): an extension grant's result sets it
 * in `claims`. This one issues alice an api1 token whose `may_act` is the `may_act` parameter.
 */
const mayActGrant: ExtensionGrant = {
  grantType: MAY_ACT_GRANT,
  async validate(ctx) {
    return {
      subject: { subjectId: '1' },
      scopes: ['api1'],
      claims: { may_act: JSON.parse(ctx.params.require('may_act')) },
    };
  },
};

describe('token exchange', () => {
  let sigil: TestSigil;
  beforeAll(async () => {
    const base = testConfig();
    sigil = await startSigil(
      {
        clients: [
          ...(base.clients ?? []).map((c) =>
            c.clientId === 'ropc' ? { ...c, allowedGrantTypes: [...c.allowedGrantTypes, MAY_ACT_GRANT] } : c,
          ),
          {
            clientId: 'gateway',
            clientSecrets: ['gateway-secret'],
            allowedGrantTypes: [TOKEN_EXCHANGE],
            allowedScopes: ['openid', 'profile', 'email', 'roles', 'api1', 'api2'],
            tokenExchangeSubjectAudiences: ['api1'],
          },
          {
            clientId: 'short',
            clientSecrets: ['short-secret'],
            allowedGrantTypes: ['password'],
            allowedScopes: ['openid', 'api1'],
            accessTokenLifetime: 30,
          },
          {
            clientId: 'ref-ex',
            clientSecrets: ['ref-secret'],
            allowedGrantTypes: ['password', TOKEN_EXCHANGE],
            allowedScopes: ['openid', 'profile', 'api1', 'offline_access'],
            allowOfflineAccess: true,
            accessTokenType: 'reference',
            tokenExchangeSubjectAudiences: ['api1'],
          },
        ],
      },
      { extensionGrants: [mayActGrant] },
    );
  });
  afterAll(async () => sigil.close());

  const exchange = (params: Record<string, string>, client: BasicCredentials = ROPC) =>
    tokenRequest(sigil, { grant_type: TOKEN_EXCHANGE, ...params }, client);
  /** Exchanges `subject_token` as `client`; fails the test unless it is 200. */
  const exchanged = async (
    subject_token: string,
    client: BasicCredentials = ROPC,
    extra: Record<string, string> = {},
  ): Promise<TokenBody> => {
    const res = await exchange({ subject_token, subject_token_type: ACCESS_TOKEN_TYPE, ...extra }, client);
    expect(res.statusCode, res.body).toBe(200);
    return res.json<TokenBody>();
  };

  describe('never widens the subject token', () => {
    it('refuses scopes beyond the subject token with invalid_scope, even ones the client may request', async () => {
      const alice = await passwordTokens(sigil, { scope: 'api1' });
      const subject = { subject_token: alice.access_token, subject_token_type: ACCESS_TOKEN_TYPE };
      for (const scope of ['openid profile email roles api2', 'openid', 'api1 profile', 'api2']) {
        expectError(await exchange({ ...subject, scope }), 'invalid_scope');
      }
      // Omitted scope: what the subject token had, not everything the client may request.
      expect((await exchanged(alice.access_token)).scope).toBe('api1');
    });

    it('lets userinfo release no claim the subject token did not allow', async () => {
      const alice = await passwordTokens(sigil, { scope: 'openid profile api1' });
      for (const scope of ['openid profile email', 'openid roles', 'openid profile api1 email']) {
        expectError(
          await exchange({ subject_token: alice.access_token, subject_token_type: ACCESS_TOKEN_TYPE, scope }),
          'invalid_scope',
        );
      }
      const all = await exchanged(alice.access_token);
      expect(all.scope).toBe('openid profile api1');
      expect((await userinfo(sigil, all.access_token)).json()).toEqual({
        sub: '1',
        name: 'Alice Smith',
        given_name: 'Alice',
        family_name: 'Smith',
      });
      const narrower = await exchanged(alice.access_token, ROPC, { scope: 'openid api1' });
      expect((await userinfo(sigil, narrower.access_token)).json()).toEqual({ sub: '1' });
      // Re-exchanging the narrower token cannot get profile back.
      const again = await exchange({
        subject_token: narrower.access_token,
        subject_token_type: ACCESS_TOKEN_TYPE,
        scope: 'openid profile',
      });
      expectError(again, 'invalid_scope');
    });
  });

  describe('audience and actor policy', () => {
    it("refuses another client's token unless the client acts as its audience (tokenExchangeSubjectAudiences)", async () => {
      const foreign = await passwordTokens(sigil, { client: ['other', 'other-secret'], scope: 'openid api1' });
      // ropc lists no audiences: only its own tokens.
      expectError(
        await exchange({ subject_token: foreign.access_token, subject_token_type: ACCESS_TOKEN_TYPE }),
        'invalid_request',
      );
      // gateway acts as api1: a token for api1 is acceptable, and it acts.
      const body = await exchanged(foreign.access_token, GATEWAY, { scope: 'api1' });
      const payload = decodeJwt(body.access_token);
      expect(payload).toMatchObject({
        sub: '1',
        client_id: 'gateway',
        aud: 'api1',
        act: { sub: 'gateway', client_id: 'gateway' },
      });
      // A token without api1 in its audience is not.
      const identityOnly = await passwordTokens(sigil, { client: ['other', 'other-secret'], scope: 'openid' });
      expectError(
        await exchange({ subject_token: identityOnly.access_token, subject_token_type: ACCESS_TOKEN_TYPE }, GATEWAY),
        'invalid_request',
      );
    });

    it('honours may_act: only the party it names may exchange the token', async () => {
      const issue = async (mayAct: unknown) => {
        const res = await tokenRequest(sigil, { grant_type: MAY_ACT_GRANT, may_act: JSON.stringify(mayAct) }, ROPC);
        expect(res.statusCode, res.body).toBe(200);
        const token = res.json<TokenBody>().access_token;
        expect(decodeJwt(token).may_act).toEqual(mayAct);
        return token;
      };
      const bob = await passwordTokens(sigil, { username: 'bob', scope: 'api1' });
      const withActor = (subject_token: string, actor_token?: string) =>
        exchange({
          subject_token,
          subject_token_type: ACCESS_TOKEN_TYPE,
          ...(actor_token ? { actor_token, actor_token_type: ACCESS_TOKEN_TYPE } : {}),
        });

      const forBob = await issue({ sub: '2' });
      expectError(await withActor(forBob), 'invalid_request');
      const asBob = await withActor(forBob, bob.access_token);
      expect(asBob.statusCode, asBob.body).toBe(200);
      expect(decodeJwt(asBob.json<TokenBody>().access_token).act).toEqual({ sub: '2', client_id: 'ropc' });

      const forGateway = await issue({ client_id: 'gateway' });
      expectError(await withActor(forGateway), 'invalid_request');
      // gateway (acting as api1) may; the restriction travels with the new token, so ref-ex (also
      // acting as api1) may not take it one hop further, while gateway may re-exchange its own.
      const byGateway = await exchanged(forGateway, GATEWAY, { scope: 'api1' });
      expect(decodeJwt(byGateway.access_token).may_act).toEqual({ client_id: 'gateway' });
      expectError(
        await exchange({ subject_token: byGateway.access_token, subject_token_type: ACCESS_TOKEN_TYPE }, REF),
        'invalid_request',
      );
      await exchanged(byGateway.access_token, GATEWAY, { scope: 'api1' });
      const forRopc = await issue({ client_id: 'ropc', sub: 'ropc' });
      expect((await withActor(forRopc)).statusCode).toBe(200);
      expectError(await withActor(forRopc, bob.access_token), 'invalid_request');
    });
  });

  describe("belongs to the subject token's grant", () => {
    for (const [format, client] of [
      ['JWT', ROPC],
      ['reference', REF],
    ] as const) {
      it(`ends with the user's grant family when its refresh token is revoked (${format})`, async () => {
        const alice = await passwordTokens(sigil, { client, scope: 'openid api1 offline_access' });
        const once = await exchanged(alice.access_token, client);
        const twice = await exchanged(once.access_token, client);
        expect(once.scope).toBe('openid api1');
        for (const t of [once, twice]) {
          expect((await introspect(sigil, t.access_token)).json()).toMatchObject({ active: true, sub: '1' });
          expect((await userinfo(sigil, t.access_token)).statusCode).toBe(200);
        }
        const revoked = await postForm(
          sigil,
          '/connect/revocation',
          { token: alice.refresh_token!, token_type_hint: 'refresh_token' },
          client,
        );
        expect(revoked.statusCode).toBe(200);
        for (const t of [once, twice]) {
          expect((await introspect(sigil, t.access_token)).json()).toEqual({ active: false });
          expect((await userinfo(sigil, t.access_token)).statusCode).toBe(401);
          expectError(
            await exchange({ subject_token: t.access_token, subject_token_type: ACCESS_TOKEN_TYPE }, client),
            'invalid_request',
          );
        }
      });
    }

    for (const [format, exchanger] of [
      ['JWT', GATEWAY],
      ['reference', REF],
    ] as const) {
      it(`never outlives the subject token, however often it is re-exchanged (${format})`, async () => {
        const alice = await passwordTokens(sigil, { client: SHORT, scope: 'openid api1' });
        const subjectExp = decodeJwt(alice.access_token).exp!;
        let token = alice.access_token;
        for (let i = 0; i < 3; i++) {
          const body = await exchanged(token, exchanger, { scope: 'api1' });
          const seen = (await introspect(sigil, body.access_token)).json<{
            active: boolean;
            exp: number;
            iat: number;
          }>();
          expect(seen.active).toBe(true);
          expect(seen.exp).toBeLessThanOrEqual(subjectExp);
          expect(body.expires_in).toBe(seen.exp - seen.iat);
          token = body.access_token;
        }
      });
    }
  });

  describe('keeps the DPoP binding of the tokens it is given', () => {
    const withProof = (params: Record<string, string>, client: BasicCredentials, proofJwt?: string) =>
      tokenRequestWithProof(sigil, { grant_type: TOKEN_EXCHANGE, ...params }, client, proofJwt);

    for (const [format, owner, exchanger] of [
      ['JWT', ROPC, GATEWAY],
      ['reference', REF, REF],
    ] as const) {
      it(`needs a proof of a bound subject_token's key with its ath, and binds the new token to that key (${format})`, async () => {
        const [key, other] = await Promise.all([proofKey(), proofKey()]);
        const subject = (await boundTokens(sigil, owner, key, 'openid api1')).access_token;
        const params = { subject_token: subject, subject_token_type: ACCESS_TOKEN_TYPE, scope: 'api1' };
        // A stolen bound token, no key: no proof, a proof of the thief's own key.
        expectError(await withProof(params, exchanger), 'invalid_request');
        expectError(
          await withProof(params, exchanger, await proof(other, TOKEN_URL, { accessToken: subject })),
          'invalid_dpop_proof',
        );
        // The right key, but the proof is not tied to the subject token: no ath, another token's.
        expectError(await withProof(params, exchanger, await proof(key, TOKEN_URL)), 'invalid_dpop_proof');
        expectError(
          await withProof(params, exchanger, await proof(key, TOKEN_URL, { accessToken: 'another token' })),
          'invalid_dpop_proof',
        );

        const res = await withProof(params, exchanger, await proof(key, TOKEN_URL, { accessToken: subject }));
        expect(res.statusCode, res.body).toBe(200);
        const body = res.json<TokenBody>();
        expect(body.token_type).toBe('DPoP');
        expect((await introspect(sigil, body.access_token)).json()).toMatchObject({
          active: true,
          sub: '1',
          cnf: { jkt: key.jkt },
        });
        if (format === 'JWT') expect(decodeJwt(body.access_token).cnf).toEqual({ jkt: key.jkt });
        // The new token is bound as well: one more hop needs the key again.
        const next = { ...params, subject_token: body.access_token };
        expectError(await withProof(next, exchanger), 'invalid_request');
        const again = await withProof(next, exchanger, await proof(key, TOKEN_URL, { accessToken: body.access_token }));
        expect(again.statusCode, again.body).toBe(200);
        expect((await introspect(sigil, again.json<TokenBody>().access_token)).json()).toMatchObject({
          active: true,
          cnf: { jkt: key.jkt },
        });
      });
    }

    it("needs a proof of a bound actor_token's key too, and binds the new token to it", async () => {
      const [key, other] = await Promise.all([proofKey(), proofKey()]);
      const alice = await passwordTokens(sigil, { scope: 'openid api1' });
      const actor = (await boundTokens(sigil, ROPC, key, 'api1')).access_token;
      const params = {
        subject_token: alice.access_token,
        subject_token_type: ACCESS_TOKEN_TYPE,
        actor_token: actor,
        actor_token_type: ACCESS_TOKEN_TYPE,
        scope: 'api1',
      };
      expectError(await withProof(params, ROPC), 'invalid_request');
      expectError(await withProof(params, ROPC, await proof(other, TOKEN_URL)), 'invalid_dpop_proof');
      const res = await withProof(params, ROPC, await proof(key, TOKEN_URL));
      expect(res.statusCode, res.body).toBe(200);
      expect(res.json<TokenBody>().token_type).toBe('DPoP');
      expect(decodeJwt(res.json<TokenBody>().access_token).cnf).toEqual({ jkt: key.jkt });
      // A subject and an actor bound to two keys: one proof cannot show both.
      const subject = (await boundTokens(sigil, ROPC, other, 'openid api1')).access_token;
      const both = { ...params, subject_token: subject };
      expectError(
        await withProof(both, ROPC, await proof(other, TOKEN_URL, { accessToken: subject })),
        'invalid_dpop_proof',
      );
      expectError(
        await withProof(both, ROPC, await proof(key, TOKEN_URL, { accessToken: subject })),
        'invalid_dpop_proof',
      );
    });
  });

  it("exchanges alice's access token for a new one that names the acting client", async () => {
    const alice = await passwordTokens(sigil, { scope: 'openid api1' });
    const res = await exchange({
      subject_token: alice.access_token,
      subject_token_type: ACCESS_TOKEN_TYPE,
      scope: 'api1',
    });
    expect(res.statusCode).toBe(200);
    expect(res.headers['cache-control']).toBe('no-store');
    const body = res.json<Record<string, unknown>>();
    expect(body).toMatchObject({ token_type: 'Bearer', issued_token_type: ACCESS_TOKEN_TYPE, scope: 'api1' });
    expect(body).not.toHaveProperty('refresh_token');
    expect(body).not.toHaveProperty('id_token');
    const { payload } = await jwtVerify(body.access_token as string, await fetchJwks(sigil), { typ: 'at+jwt' });
    // The subject token's lifetime (3600 s) bounds the new one.
    expect(payload.exp).toBeLessThanOrEqual(decodeJwt(alice.access_token).exp!);
    expect(body.expires_in).toBe(payload.exp! - payload.iat!);
    expect(payload.sub).toBe('1');
    expect(payload.client_id).toBe('ropc');
    expect(payload.aud).toBe('api1');
    expect(payload.act).toEqual({ sub: 'ropc', client_id: 'ropc' });
    expect(payload.amr).toEqual(['pwd']);
    expect((await introspect(sigil, body.access_token as string)).json()).toMatchObject({ active: true, sub: '1' });
  });

  it("keeps only the subject token's scopes when scope is omitted", async () => {
    const alice = await passwordTokens(sigil, { scope: 'openid api2' });
    const res = await exchange({ subject_token: alice.access_token, subject_token_type: ACCESS_TOKEN_TYPE });
    expect(res.statusCode).toBe(200);
    expect(res.json<{ scope: string }>().scope).toBe('openid api2');
  });

  it("names the actor token's subject in act when an actor_token is sent", async () => {
    const alice = await passwordTokens(sigil, { scope: 'openid api1' });
    const bob = await passwordTokens(sigil, { username: 'bob', scope: 'api1' });
    const res = await exchange({
      subject_token: alice.access_token,
      subject_token_type: ACCESS_TOKEN_TYPE,
      actor_token: bob.access_token,
      actor_token_type: ACCESS_TOKEN_TYPE,
      scope: 'api1',
    });
    expect(res.statusCode).toBe(200);
    const { payload } = await jwtVerify(res.json<{ access_token: string }>().access_token, await fetchJwks(sigil));
    expect(payload.sub).toBe('1');
    expect(payload.act).toEqual({ sub: '2', client_id: 'ropc' });
  });

  it('nests the earlier actor when an exchanged token is exchanged again', async () => {
    const alice = await passwordTokens(sigil, { scope: 'openid api1' });
    const once = (
      await exchange({ subject_token: alice.access_token, subject_token_type: ACCESS_TOKEN_TYPE, scope: 'api1' })
    ).json<{ access_token: string }>();
    const twice = await exchange({
      subject_token: once.access_token,
      subject_token_type: ACCESS_TOKEN_TYPE,
      scope: 'api1',
    });
    expect(twice.statusCode).toBe(200);
    const { payload } = await jwtVerify(twice.json<{ access_token: string }>().access_token, await fetchJwks(sigil));
    expect(payload.act).toEqual({ sub: 'ropc', client_id: 'ropc', act: { sub: 'ropc', client_id: 'ropc' } });
  });

  it('refuses an actor token issued to another client with invalid_request', async () => {
    const alice = await passwordTokens(sigil, { scope: 'openid api1' });
    const foreign = await passwordTokens(sigil, { client: ['other', 'other-secret'], username: 'bob', scope: 'api1' });
    const res = await exchange({
      subject_token: alice.access_token,
      subject_token_type: ACCESS_TOKEN_TYPE,
      actor_token: foreign.access_token,
      actor_token_type: ACCESS_TOKEN_TYPE,
    });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ error: 'invalid_request' });
  });

  it('refuses an invalid subject token with invalid_request', async () => {
    const alice = await passwordTokens(sigil, { scope: 'openid api1 offline_access' });
    for (const subject_token of ['garbage', alice.refresh_token!, alice.id_token!]) {
      const res = await exchange({ subject_token, subject_token_type: ACCESS_TOKEN_TYPE });
      expect(res.statusCode).toBe(400);
      expect(res.json()).toMatchObject({ error: 'invalid_request' });
    }
  });

  it('refuses a client token as subject (no user) with invalid_request', async () => {
    const { access_token } = await clientTokens(sigil, 'api1');
    const res = await exchange({ subject_token: access_token, subject_token_type: ACCESS_TOKEN_TYPE });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ error: 'invalid_request' });
  });

  it('refuses a revoked subject token with invalid_request', async () => {
    const alice = await passwordTokens(sigil, { scope: 'openid api1' });
    const revoked = await postForm(sigil, '/connect/revocation', { token: alice.access_token }, ROPC);
    expect(revoked.statusCode).toBe(200);
    const res = await exchange({ subject_token: alice.access_token, subject_token_type: ACCESS_TOKEN_TYPE });
    expect(res.json()).toMatchObject({ error: 'invalid_request' });
  });

  it('answers a missing subject_token or subject_token_type with invalid_request', async () => {
    const alice = await passwordTokens(sigil, { scope: 'openid api1' });
    const cases: Record<string, string>[] = [
      { subject_token: alice.access_token },
      { subject_token_type: ACCESS_TOKEN_TYPE },
      { subject_token: alice.access_token, subject_token_type: 'urn:ietf:params:oauth:token-type:id_token' },
      { subject_token: alice.access_token, subject_token_type: ACCESS_TOKEN_TYPE, actor_token_type: ACCESS_TOKEN_TYPE },
    ];
    for (const params of cases) {
      const res = await exchange(params);
      expect(res.statusCode).toBe(400);
      expect(res.json()).toMatchObject({ error: 'invalid_request' });
    }
  });

  it('issues no refresh token: offline_access is refused with invalid_scope', async () => {
    const alice = await passwordTokens(sigil, { scope: 'openid api1' });
    const res = await exchange({
      subject_token: alice.access_token,
      subject_token_type: ACCESS_TOKEN_TYPE,
      scope: 'api1 offline_access',
    });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ error: 'invalid_scope' });
  });

  it('is unauthorized_client for a client that does not list it', async () => {
    const alice = await passwordTokens(sigil, { scope: 'openid api1' });
    const res = await exchange({ subject_token: alice.access_token, subject_token_type: ACCESS_TOKEN_TYPE }, [
      'other',
      'other-secret',
    ]);
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ error: 'unauthorized_client' });
  });
});

describe('extension grants', () => {
  const seen: { scopes: readonly string[]; scopeRequested: boolean }[] = [];
  const custom: ExtensionGrant = {
    grantType: 'urn:example:custom',
    async validate(ctx) {
      seen.push({ scopes: ctx.scopes, scopeRequested: ctx.scopeRequested });
      const credential = ctx.params.get('custom_credential');
      if (credential === undefined) throw new OAuthError('invalid_grant', 'custom_credential is missing');
      if (credential === 'teapot') throw new OAuthError('invalid_request', 'no coffee here');
      if (credential === 'machine') return {};
      if (credential === 'ghost') return { subject: { subjectId: 'no-such-user' } };
      if (credential === 'dave') return { subject: { subjectId: '4' } };
      if (credential === 'expired')
        return { subject: { subjectId: '1' }, expiresAt: Math.floor(Date.now() / 1000) - 1 };
      if (credential === 'joined' || credential === 'revoked-meanwhile') {
        // Joins the grant family of a user's access token and expires with it.
        const valid = await ctx.validateAccessToken(ctx.params.require('user_token'));
        if (!valid) throw new OAuthError('invalid_grant', 'user_token is invalid');
        // The user's grant is revoked while this request is in flight.
        if (credential === 'revoked-meanwhile')
          await postForm(sigil, '/connect/revocation', { token: ctx.params.require('user_refresh_token') }, ROPC);
        return { subject: { subjectId: valid.claims.sub }, familyId: valid.familyId!, expiresAt: valid.claims.exp! };
      }
      return { subject: { subjectId: credential }, claims: { tenant_hint: 'x', sub: 'forged', act: { sub: 'svc' } } };
    },
  };

  let sigil: TestSigil;
  beforeAll(async () => {
    const base = testConfig();
    sigil = await startSigil(
      {
        clients: [
          ...(base.clients ?? []),
          {
            clientId: 'custom',
            clientSecrets: ['custom-secret'],
            allowedGrantTypes: ['urn:example:custom'],
            allowedScopes: ['openid', 'api1', 'api2', 'offline_access'],
            allowOfflineAccess: true,
          },
        ],
      },
      { extensionGrants: [custom] },
    );
  });
  afterAll(async () => sigil.close());

  const CUSTOM: BasicCredentials = ['custom', 'custom-secret'];
  const grant = (params: Record<string, string>, client: BasicCredentials = CUSTOM) =>
    tokenRequest(sigil, { grant_type: 'urn:example:custom', ...params }, client);

  it('the same client without the grant registered is refused at load, naming the field', async () => {
    await expect(
      startSigil({
        clients: [{ clientId: 'custom', clientSecrets: ['s'], allowedGrantTypes: ['urn:example:custom'] }],
      }),
    ).rejects.toThrow(/clients\[0\]\.allowedGrantTypes\[0\]: unknown grant type "urn:example:custom"/);
  });

  it('issues tokens for a user to a client that lists the grant', async () => {
    const res = await grant({ custom_credential: '1', scope: 'api1 offline_access' });
    expect(res.statusCode).toBe(200);
    const body = res.json<{ access_token: string; refresh_token?: string; scope: string; id_token?: string }>();
    expect(body.scope).toBe('api1 offline_access');
    expect(body.refresh_token).toEqual(expect.any(String));
    expect(body.id_token).toBeUndefined();
    const { payload } = await jwtVerify(body.access_token, await fetchJwks(sigil));
    expect(payload.sub).toBe('1');
    expect(payload.client_id).toBe('custom');
    expect(payload.amr).toEqual(['urn:example:custom']);
    expect(payload.role).toEqual(['admin']);
    // Extra claims: custom ones pass, protocol claims other than act are ignored.
    expect(payload.tenant_hint).toBe('x');
    expect(payload.act).toEqual({ sub: 'svc' });
    // The refresh token works for that client.
    const refreshed = await tokenRequest(
      sigil,
      { grant_type: 'refresh_token', refresh_token: body.refresh_token! },
      CUSTOM,
    );
    expect(refreshed.statusCode).toBe(200);
  });

  it('hands validate the requested scopes, or all allowed ones when omitted', async () => {
    seen.length = 0;
    await grant({ custom_credential: '1', scope: 'api2' });
    await grant({ custom_credential: '1' });
    expect(seen[0]).toEqual({ scopes: ['api2'], scopeRequested: true });
    expect(seen[1]?.scopeRequested).toBe(false);
    expect([...(seen[1]?.scopes ?? [])].sort()).toEqual(['api1', 'api2', 'offline_access', 'openid']);
  });

  it('is unauthorized_client for clients that do not list it', async () => {
    const res = await grant({ custom_credential: '1' }, ['ropc', 'ropc-secret']);
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ error: 'unauthorized_client' });
  });

  it('propagates an OAuthError thrown by the validator', async () => {
    const missing = await grant({});
    expect(missing.statusCode).toBe(400);
    expect(missing.json()).toEqual({ error: 'invalid_grant', error_description: 'custom_credential is missing' });
    const teapot = await grant({ custom_credential: 'teapot' });
    expect(teapot.statusCode).toBe(400);
    expect(teapot.json()).toEqual({ error: 'invalid_request', error_description: 'no coffee here' });
  });

  it('gives a client token for a subject-less result', async () => {
    const res = await grant({ custom_credential: 'machine' });
    expect(res.statusCode).toBe(200);
    const body = res.json<{ access_token: string; scope: string; refresh_token?: string }>();
    expect(body.refresh_token).toBeUndefined();
    expect(body.scope.split(' ').sort()).toEqual(['api1', 'api2']);
    const { payload } = await jwtVerify(body.access_token, await fetchJwks(sigil));
    expect(payload.sub).toBe('custom');
    expect(payload.client_id).toBe('custom');
    expect(payload).not.toHaveProperty('auth_time');
    expect(payload).not.toHaveProperty('amr');
  });

  it('refuses user scopes for a subject-less result with invalid_scope', async () => {
    const res = await grant({ custom_credential: 'machine', scope: 'openid api1' });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ error: 'invalid_scope' });
  });

  it('refuses an unknown or inactive subject with invalid_grant', async () => {
    for (const custom_credential of ['ghost', 'dave']) {
      const res = await grant({ custom_credential });
      expect(res.statusCode).toBe(400);
      expect(res.json()).toMatchObject({ error: 'invalid_grant' });
    }
  });

  it('joins a named grant family and expiry cap: the tokens end with that grant', async () => {
    const alice = await passwordTokens(sigil, { scope: 'openid api1 offline_access' });
    const res = await grant({
      custom_credential: 'joined',
      user_token: alice.access_token,
      scope: 'api1 offline_access',
    });
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json<TokenBody>();
    const subjectExp = decodeJwt(alice.access_token).exp!;
    expect(decodeJwt(body.access_token).exp).toBeLessThanOrEqual(subjectExp);
    // The refresh token is capped too: introspected by its client, it expires with the subject token.
    const refresh = (await introspect(sigil, body.refresh_token!, CUSTOM)).json<{ active: boolean; exp: number }>();
    expect(refresh.active).toBe(true);
    expect(refresh.exp).toBeLessThanOrEqual(subjectExp);
    // Revoking alice's grant ends the joined tokens.
    expect((await postForm(sigil, '/connect/revocation', { token: alice.refresh_token! }, ROPC)).statusCode).toBe(200);
    expect((await introspect(sigil, body.access_token)).json()).toEqual({ active: false });
    expect((await introspect(sigil, body.refresh_token!, CUSTOM)).json()).toEqual({ active: false });
  });

  it('needs a proof of the key a validated token is bound to, and binds its tokens to it', async () => {
    const key = await proofKey();
    const alice = await boundTokens(sigil, ROPC, key, 'openid api1 offline_access');
    const params = {
      grant_type: 'urn:example:custom',
      custom_credential: 'joined',
      user_token: alice.access_token,
      scope: 'api1 offline_access',
    };
    expectError(await tokenRequestWithProof(sigil, params, CUSTOM), 'invalid_request');
    expectError(
      await tokenRequestWithProof(sigil, params, CUSTOM, await proof(await proofKey(), TOKEN_URL)),
      'invalid_dpop_proof',
    );
    const res = await tokenRequestWithProof(sigil, params, CUSTOM, await proof(key, TOKEN_URL));
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json<TokenBody>();
    expect(decodeJwt(body.access_token).cnf).toEqual({ jkt: key.jkt });
    // Its refresh token is bound too: no Bearer tokens by refreshing either.
    const refresh = { grant_type: 'refresh_token', refresh_token: body.refresh_token! };
    expectError(await tokenRequestWithProof(sigil, refresh, CUSTOM), 'invalid_grant');
    const refreshed = await tokenRequestWithProof(sigil, refresh, CUSTOM, await proof(key, TOKEN_URL));
    expect(refreshed.statusCode, refreshed.body).toBe(200);
    expect(decodeJwt(refreshed.json<TokenBody>().access_token).cnf).toEqual({ jkt: key.jkt });
  });

  it('refuses with invalid_request when the named family is revoked while the tokens are issued', async () => {
    const alice = await passwordTokens(sigil, { scope: 'openid api1 offline_access' });
    const res = await grant({
      custom_credential: 'revoked-meanwhile',
      user_token: alice.access_token,
      user_refresh_token: alice.refresh_token!,
      scope: 'api1',
    });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ error: 'invalid_request' });
  });

  it('refuses a result whose expiry cap has passed with invalid_grant', async () => {
    const res = await grant({ custom_credential: 'expired' });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ error: 'invalid_grant' });
  });

  it('is unsupported_grant_type when no such grant is registered', async () => {
    const res = await tokenRequest(sigil, { grant_type: 'urn:example:other' }, CUSTOM);
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ error: 'unsupported_grant_type' });
  });
});
