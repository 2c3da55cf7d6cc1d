/**
 * The Identity Assertion JWT Authorization Grant (draft-ietf-oauth-identity-assertion-authz-grant)
 * between real Sigil instances on real sockets: A is the enterprise identity provider, which
 * issues an identity token to an agent client through the code flow and exchanges it for an
 * ID-JAG (RFC 8693); B (subjectMapping "link") and C (subjectMapping "email") are resource
 * authorization servers that trust A's keys at its jwks_uri and redeem the ID-JAG with the JWT
 * bearer grant (RFC 7523 §2.1). A test identity provider T (its own keys, served by a plain HTTP
 * server on loopback) signs assertions that A would never issue.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  createLocalJWKSet,
  decodeJwt,
  decodeProtectedHeader,
  exportJWK,
  generateKeyPair,
  type JWTPayload,
  jwtVerify,
  SignJWT,
} from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Browser, codeParams, getCode, pkce, redeem, webLike } from '../authorize-helpers.js';
import { freePort } from '../e2e/ports.js';
import { basic, startSigil, testConfig, type TestSigil } from '../helpers.js';

const TOKEN_EXCHANGE = 'urn:ietf:params:oauth:grant-type:token-exchange';
const JWT_BEARER = 'urn:ietf:params:oauth:grant-type:jwt-bearer';
const ID_JAG = 'urn:ietf:params:oauth:token-type:id-jag';
const ID_TOKEN = 'urn:ietf:params:oauth:token-type:id_token';
const ACCESS_TOKEN = 'urn:ietf:params:oauth:token-type:access_token';
const CHAT_API = 'https://api.chat.example/';
const JWKS_PATH = '/.well-known/openid-configuration/jwks';
/** The test identity provider whose keys the tests hold. */
const T_ISSUER = 'https://t-idp.example';
/** A trusted issuer whose keys are on a private address. */
const PRIVATE_ISSUER = 'https://private-idp.example';

interface Answer {
  status: number;
  body: Record<string, unknown>;
}

/** POSTs a form to `url` over HTTP with Basic client authentication. */
async function post(url: string, fields: Record<string, string>, client: [string, string]): Promise<Answer> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: basic(...client) },
    body: new URLSearchParams(fields).toString(),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

function expectError(answer: Answer, error: string): void {
  expect(answer.status, JSON.stringify(answer.body)).toBe(400);
  expect(answer.body.error, JSON.stringify(answer.body)).toBe(error);
}

describe('ID-JAG across two trust domains', () => {
  let a: TestSigil;
  let b: TestSigil;
  let c: TestSigil;
  let aIssuer: string;
  let bIssuer: string;
  let cIssuer: string;
  let jwksServer: Server;
  let tKey: CryptoKey;
  /** Alice's local subject at B, linked to her subject at A. */
  let aliceAtB: string;
  /** Alice's local subject at C, found by her verified address. */
  let aliceAtC: string;
  const agent: [string, string] = ['agent', 'agent-secret'];
  const agentAtB: [string, string] = ['agent-at-b', 'agent-b-secret'];
  const agentAtC: [string, string] = ['agent-at-c', 'agent-c-secret'];

  beforeAll(async () => {
    const [portA, portB, portC] = await Promise.all([freePort(), freePort(), freePort()]);
    aIssuer = `http://127.0.0.1:${portA}`;
    bIssuer = `http://127.0.0.1:${portB}`;
    cIssuer = `http://127.0.0.1:${portC}`;

    const pair = await generateKeyPair('ES256');
    tKey = pair.privateKey;
    const jwks = JSON.stringify({ keys: [{ ...(await exportJWK(pair.publicKey)), kid: 't1', alg: 'ES256' }] });
    jwksServer = createServer((_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end(jwks));
    await new Promise<void>((ok) => jwksServer.listen(0, '127.0.0.1', ok));
    const tJwks = `http://127.0.0.1:${(jwksServer.address() as AddressInfo).port}/jwks`;

    a = await startSigil({
      issuer: aIssuer,
      clients: [
        webLike('agent', {
          allowedGrantTypes: ['authorization_code', TOKEN_EXCHANGE],
          allowedScopes: ['openid', 'email'],
          allowOfflineAccess: false,
          idJagAudiences: [
            { issuer: bIssuer, clientId: 'agent-at-b' },
            { issuer: cIssuer, clientId: 'agent-at-c' },
          ],
        }),
        webLike('web', { allowedScopes: ['openid', 'email'], allowOfflineAccess: false }),
      ],
      users: [
        ...(testConfig().users ?? []),
        {
          subjectId: 'erin-1',
          username: 'erin',
          password: 'erin',
          claims: { email: 'erin@example.com', email_verified: false },
        },
      ],
    });
    await a.app.listen({ port: portA, host: '127.0.0.1' });

    const resourceServer = {
      // A's and T's keys are on loopback (development and tests only).
      clientIdMetadataDocuments: { allowLoopback: true },
      apiScopes: [{ name: 'chat.read' }, { name: 'chat.history' }],
      apiResources: [
        { name: 'chat', scopes: ['chat.read', 'chat.history'], secrets: ['chat-secret'], resourceUris: [CHAT_API] },
      ],
      users: [],
    };
    b = await startSigil({
      ...resourceServer,
      issuer: bIssuer,
      clients: [
        {
          clientId: 'agent-at-b',
          clientSecrets: ['agent-b-secret'],
          allowedGrantTypes: [JWT_BEARER],
          allowedScopes: ['openid', 'chat.read'],
        },
        {
          clientId: 'rival',
          clientSecrets: ['rival-secret'],
          allowedGrantTypes: [JWT_BEARER],
          allowedScopes: ['chat.read', 'chat.history'],
        },
        {
          clientId: 'no-grant',
          clientSecrets: ['no-grant-secret'],
          allowedGrantTypes: ['client_credentials'],
          allowedScopes: ['chat.read'],
        },
      ],
      // B's users sign in through A as "corp" and T as "tcorp": the links the "link" mapping follows.
      identityProviders: [
        { name: 'corp', authority: aIssuer, clientId: 'b-at-a', clientSecret: 'unused' },
        { name: 'tcorp', authority: T_ISSUER, clientId: 'b-at-t', clientSecret: 'unused' },
      ],
      trustedIdentityIssuers: [
        { issuer: aIssuer, jwksUri: `${aIssuer}${JWKS_PATH}`, subjectMapping: 'link' },
        { issuer: T_ISSUER, jwksUri: tJwks, subjectMapping: 'link' },
        { issuer: PRIVATE_ISSUER, jwksUri: 'https://10.0.0.1/jwks', subjectMapping: 'link' },
      ],
    });
    await b.app.listen({ port: portB, host: '127.0.0.1' });
    c = await startSigil({
      ...resourceServer,
      issuer: cIssuer,
      clients: [
        {
          clientId: 'agent-at-c',
          clientSecrets: ['agent-c-secret'],
          allowedGrantTypes: [JWT_BEARER],
          allowedScopes: ['chat.read', 'chat.history'],
        },
      ],
      trustedIdentityIssuers: [{ issuer: aIssuer, jwksUri: `${aIssuer}${JWKS_PATH}`, subjectMapping: 'email' }],
    });
    await c.app.listen({ port: portC, host: '127.0.0.1' });

    // The user admin's link, as B's federation callback writes it at a sign-in through A (alice is "1" at A).
    aliceAtB = (await b.context.management.users.linkUpstream('corp', '1', { name: 'Alice at B' }, null)).subjectId;
    await b.context.management.users.linkUpstream('tcorp', 't-user', {}, null);
    ({ subjectId: aliceAtC } = await c.context.management.users.create({
      username: 'alice.c',
      email: 'alice@example.com',
      emailVerified: true,
    }));
  });

  afterAll(async () => {
    await Promise.all([a?.close(), b?.close(), c?.close()]);
    await new Promise((ok) => jwksServer?.close(ok));
  });

  /** The identity and access tokens `user` gets at A for `client` through the code flow. */
  async function signInAtA(user: string, client = 'agent'): Promise<{ idToken: string; accessToken: string }> {
    const { verifier, challenge } = pkce();
    const code = await getCode(
      new Browser(a),
      codeParams(challenge, { client_id: client, scope: 'openid email' }),
      user,
    );
    const res = await redeem(a, code, { client, verifier });
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json<{ id_token: string; access_token: string }>();
    return { idToken: body.id_token, accessToken: body.access_token };
  }

  /** A's token exchange of `subjectToken` for an ID-JAG for `audience`. */
  function exchange(subjectToken: string, audience: string, extra: Record<string, string> = {}): Promise<Answer> {
    return post(
      `${aIssuer}/connect/token`,
      {
        grant_type: TOKEN_EXCHANGE,
        requested_token_type: ID_JAG,
        subject_token: subjectToken,
        subject_token_type: ID_TOKEN,
        audience,
        ...extra,
      },
      agent,
    );
  }

  /** An ID-JAG of A for alice at `audience`. */
  async function idJag(audience: string, extra: Record<string, string> = {}): Promise<string> {
    const answer = await exchange((await signInAtA('alice')).idToken, audience, {
      scope: 'chat.read chat.history',
      resource: CHAT_API,
      ...extra,
    });
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    return String(answer.body.access_token);
  }

  /** Redeems `assertion` at `issuer` as `client`. */
  function redeemAt(issuer: string, assertion: string, client: [string, string], extra: Record<string, string> = {}) {
    return post(`${issuer}/connect/token`, { grant_type: JWT_BEARER, assertion, ...extra }, client);
  }

  /** An assertion signed by T's key (or `key`), an ID-JAG for agent-at-b at B unless `claims` say otherwise. */
  async function tAssertion(
    claims: JWTPayload & Record<string, unknown> = {},
    header: Record<string, unknown> = { typ: 'oauth-id-jag+jwt' },
    key: CryptoKey = tKey,
  ): Promise<string> {
    const now = Math.floor(Date.now() / 1000);
    return new SignJWT({
      iss: T_ISSUER,
      sub: 't-user',
      aud: bIssuer,
      client_id: 'agent-at-b',
      jti: crypto.randomUUID(),
      iat: now,
      exp: now + 300,
      scope: 'chat.read',
      ...claims,
    })
      .setProtectedHeader({ alg: 'ES256', kid: 't1', ...header })
      .sign(key);
  }

  it('A exchanges an identity token for an ID-JAG that B redeems for an access token of the linked user (link)', async () => {
    const { idToken } = await signInAtA('alice');
    const answer = await exchange(idToken, bIssuer, { scope: 'chat.read chat.history', resource: CHAT_API });
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    expect(answer.body).toMatchObject({
      issued_token_type: ID_JAG,
      token_type: 'N_A',
      expires_in: 300,
      scope: 'chat.read chat.history',
    });
    expect(answer.body).not.toHaveProperty('refresh_token');
    const grant = String(answer.body.access_token);
    const { payload, protectedHeader } = await jwtVerify(
      grant,
      createLocalJWKSet(await (await fetch(`${aIssuer}${JWKS_PATH}`)).json()),
      {
        issuer: aIssuer,
        audience: bIssuer,
        typ: 'oauth-id-jag+jwt',
      },
    );
    expect(protectedHeader.typ).toBe('oauth-id-jag+jwt');
    expect(payload).toMatchObject({
      sub: '1',
      client_id: 'agent-at-b',
      resource: CHAT_API,
      scope: 'chat.read chat.history',
      email: 'alice@example.com',
      email_verified: true,
    });
    expect(typeof payload.jti).toBe('string');
    expect((payload.exp as number) - (payload.iat as number)).toBeLessThanOrEqual(300);

    const redeemed = await redeemAt(bIssuer, grant, agentAtB);
    expect(redeemed.status, JSON.stringify(redeemed.body)).toBe(200);
    // chat.history is beyond what agent-at-b may have at B: narrowed away; no refresh or identity token.
    expect(redeemed.body).toMatchObject({ token_type: 'Bearer', scope: 'chat.read' });
    expect(redeemed.body).not.toHaveProperty('refresh_token');
    expect(redeemed.body).not.toHaveProperty('id_token');
    const bJwks = createLocalJWKSet(await (await fetch(`${bIssuer}${JWKS_PATH}`)).json());
    const { payload: token } = await jwtVerify(String(redeemed.body.access_token), bJwks, {
      issuer: bIssuer,
      audience: 'chat',
    });
    expect(token).toMatchObject({ sub: aliceAtB, client_id: 'agent-at-b', scope: 'chat.read', aud: 'chat' });
  });

  it('C redeems an ID-JAG of A for the user with that verified address (email)', async () => {
    const redeemed = await redeemAt(cIssuer, await idJag(cIssuer), agentAtC);
    expect(redeemed.status, JSON.stringify(redeemed.body)).toBe(200);
    expect(redeemed.body.scope).toBe('chat.read chat.history');
    expect(decodeJwt(String(redeemed.body.access_token))).toMatchObject({ sub: aliceAtC, client_id: 'agent-at-c' });
  });

  it('the ID-JAG grants nothing beyond its scope: a wider scope parameter is invalid_scope and uses nothing up', async () => {
    const grant = await idJag(bIssuer, { scope: 'chat.read', resource: CHAT_API });
    expectError(await redeemAt(bIssuer, grant, agentAtB, { scope: 'chat.read openid' }), 'invalid_scope');
    const redeemed = await redeemAt(bIssuer, grant, agentAtB);
    expect(redeemed.status, JSON.stringify(redeemed.body)).toBe(200);
    expect(redeemed.body.scope).toBe('chat.read');
  });

  it('discovery: A lists the id-jag token type, B the JWT bearer grant', async () => {
    const aMeta = (await (await fetch(`${aIssuer}/.well-known/openid-configuration`)).json()) as Record<
      string,
      string[]
    >;
    expect(aMeta.identity_chaining_requested_token_types_supported).toEqual([ID_JAG]);
    expect(aMeta.grant_types_supported).not.toContain(JWT_BEARER);
    const bMeta = (await (await fetch(`${bIssuer}/.well-known/openid-configuration`)).json()) as Record<
      string,
      string[]
    >;
    expect(bMeta.grant_types_supported).toContain(JWT_BEARER);
    expect(bMeta).not.toHaveProperty('identity_chaining_requested_token_types_supported');
  });

  describe('attacks on the exchange at A', () => {
    it('an audience not in idJagAudiences is invalid_target', async () => {
      expectError(await exchange((await signInAtA('alice')).idToken, 'https://elsewhere.example'), 'invalid_target');
      expectError(await exchange((await signInAtA('alice')).idToken, aIssuer), 'invalid_target');
    });

    it("another client's identity token is refused", async () => {
      const { idToken } = await signInAtA('alice', 'web');
      const answer = await exchange(idToken, bIssuer);
      expectError(answer, 'invalid_request');
      expect(answer.body.error_description).toMatch(/not issued to this client/);
    });

    it('a user made inactive since the identity token was issued gets no ID-JAG', async () => {
      const { subjectId } = await a.context.management.users.create({
        username: 'frank',
        password: 'Lantern-Quiet-42',
      });
      const { verifier, challenge } = pkce();
      const b1 = new Browser(a);
      await b1.signIn('frank', 'Lantern-Quiet-42');
      const code = await getCode(b1, codeParams(challenge, { client_id: 'agent', scope: 'openid' }), 'frank');
      const idToken = (await redeem(a, code, { client: 'agent', verifier })).json<{ id_token: string }>().id_token;
      expect((await exchange(idToken, bIssuer)).status).toBe(200);
      await a.context.management.users.update(subjectId, { active: false });
      expectError(await exchange(idToken, bIssuer), 'invalid_grant');
    });

    it('an access token passed as the subject token is refused', async () => {
      const { accessToken } = await signInAtA('alice');
      expectError(await exchange(accessToken, bIssuer), 'invalid_request');
      expectError(await exchange(accessToken, bIssuer, { subject_token_type: ACCESS_TOKEN }), 'invalid_request');
    });
  });

  describe('attacks on the redemption at B', () => {
    it('a replayed ID-JAG is invalid_grant', async () => {
      const grant = await idJag(bIssuer);
      expect((await redeemAt(bIssuer, grant, agentAtB)).status).toBe(200);
      const replay = await redeemAt(bIssuer, grant, agentAtB);
      expectError(replay, 'invalid_grant');
      expect(replay.body.error_description).toMatch(/used before/);
    });

    it('an ID-JAG for another client_id is invalid_grant', async () => {
      expectError(await redeemAt(bIssuer, await idJag(bIssuer), ['rival', 'rival-secret']), 'invalid_grant');
    });

    it('a client without the grant in allowedGrantTypes is unauthorized_client', async () => {
      expectError(
        await redeemAt(bIssuer, await idJag(bIssuer), ['no-grant', 'no-grant-secret']),
        'unauthorized_client',
      );
    });

    it('an ID-JAG for another audience (C) is invalid_grant at B', async () => {
      const answer = await redeemAt(bIssuer, await idJag(cIssuer), agentAtB);
      expectError(answer, 'invalid_grant');
    });

    it('an identity token of A is no ID-JAG (typ)', async () => {
      const answer = await redeemAt(bIssuer, (await signInAtA('alice')).idToken, agentAtB);
      expectError(answer, 'invalid_grant');
      expect(answer.body.error_description).toMatch(/typ/);
    });

    it('an unmapped subject is invalid_grant, and no user is created', async () => {
      const { idToken } = await signInAtA('bob');
      const answer = await exchange(idToken, bIssuer, { scope: 'chat.read' });
      expect(answer.status).toBe(200);
      const before = (await b.context.store.users.listUsers()).length;
      expectError(await redeemAt(bIssuer, String(answer.body.access_token), agentAtB), 'invalid_grant');
      expect((await b.context.store.users.listUsers()).length).toBe(before);
    });

    it('an unverified address in email mode is invalid_grant', async () => {
      const { idToken } = await signInAtA('erin');
      const answer = await exchange(idToken, cIssuer, { scope: 'chat.read' });
      expect(answer.status).toBe(200);
      expect(decodeJwt(String(answer.body.access_token))).toMatchObject({ email_verified: false });
      expectError(await redeemAt(cIssuer, String(answer.body.access_token), agentAtC), 'invalid_grant');
    });

    it("T's well-formed assertion is accepted (the control of the attacks below)", async () => {
      const answer = await redeemAt(bIssuer, await tAssertion(), agentAtB);
      expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    });

    it('a wrong aud is invalid_grant', async () => {
      expectError(await redeemAt(bIssuer, await tAssertion({ aud: cIssuer }), agentAtB), 'invalid_grant');
      expectError(await redeemAt(bIssuer, await tAssertion({ aud: [bIssuer, cIssuer] }), agentAtB), 'invalid_grant');
    });

    it('an untrusted issuer is invalid_grant', async () => {
      const answer = await redeemAt(bIssuer, await tAssertion({ iss: 'https://evil.example' }), agentAtB);
      expectError(answer, 'invalid_grant');
      expect(answer.body.error_description).toMatch(/not trusted/);
    });

    it("an assertion signed by a key not in the issuer's JWKS is invalid_grant", async () => {
      const { privateKey } = await generateKeyPair('ES256');
      expectError(await redeemAt(bIssuer, await tAssertion({}, undefined, privateKey), agentAtB), 'invalid_grant');
      const other = await tAssertion({}, { typ: 'oauth-id-jag+jwt', kid: 'unknown' }, privateKey);
      expectError(await redeemAt(bIssuer, other, agentAtB), 'invalid_grant');
    });

    it('a missing or other typ is invalid_grant', async () => {
      const untyped = await tAssertion({}, {});
      expect(decodeProtectedHeader(untyped)).not.toHaveProperty('typ');
      expectError(await redeemAt(bIssuer, untyped, agentAtB), 'invalid_grant');
      expectError(await redeemAt(bIssuer, await tAssertion({}, { typ: 'JWT' }), agentAtB), 'invalid_grant');
    });

    it('an exp too far ahead, a past exp or a future iat is invalid_grant', async () => {
      const now = Math.floor(Date.now() / 1000);
      expectError(await redeemAt(bIssuer, await tAssertion({ exp: now + 3600 }), agentAtB), 'invalid_grant');
      expectError(
        await redeemAt(bIssuer, await tAssertion({ iat: now - 900, exp: now + 60 }), agentAtB),
        'invalid_grant',
      );
      expectError(
        await redeemAt(bIssuer, await tAssertion({ iat: now - 400, exp: now - 100 }), agentAtB),
        'invalid_grant',
      );
      expectError(
        await redeemAt(bIssuer, await tAssertion({ iat: now + 200, exp: now + 300 }), agentAtB),
        'invalid_grant',
      );
    });

    it('an assertion without jti or client_id is invalid_grant', async () => {
      expectError(await redeemAt(bIssuer, await tAssertion({ jti: undefined }), agentAtB), 'invalid_grant');
      expectError(await redeemAt(bIssuer, await tAssertion({ client_id: undefined }), agentAtB), 'invalid_grant');
    });

    it('an issuer whose jwksUri is on a private address gets no fetch: invalid_grant', async () => {
      const assertion = await tAssertion({ iss: PRIVATE_ISSUER });
      const answer = await redeemAt(bIssuer, assertion, agentAtB);
      expectError(answer, 'invalid_grant');
      expect(answer.body.error_description).toMatch(/could not be fetched/);
    });

    it('an unknown resource in the assertion is invalid_target', async () => {
      expectError(
        await redeemAt(bIssuer, await tAssertion({ resource: 'https://unknown.example/' }), agentAtB),
        'invalid_target',
      );
    });
  });
});
