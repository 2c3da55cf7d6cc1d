/**
 * The behaviours of the OpenID Foundation's Dynamic OP plan (conformance suite,
 * `oidcc-dynamic-certification-test-plan`, net.openid.conformance.openid.OIDCCDynamicTestPlan)
 * with dynamically registered clients: one test per module Sigil implements, named after it.
 * The plan registers with private_key_jwt and runs the code flow; the browser steps go over the
 * same server (login and consent pages).
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { decodeProtectedHeader } from 'jose';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { KeyAdmin } from '../../src/admin/keys.js';
import { mintInitialToken } from '../../src/admin/registrations.js';
import { assertionFields, type ClientKey, clientKey, signAssertion } from '../assertion-helpers.js';
import {
  authorizeUrl,
  Browser,
  isConsentPage,
  isLoginPage,
  pkce,
  readResponse,
  type Step,
} from '../authorize-helpers.js';
import { form, startSigil, type TestSigil } from '../helpers.js';
import { registrationConfig } from '../registration-helpers.js';

const ISSUER = 'http://127.0.0.1:5999';
type Json = Record<string, unknown>;

describe('OpenID Dynamic OP plan (oidcc-dynamic-certification-test-plan)', () => {
  let sigil: TestSigil;
  let jwksServer: Server;
  let jwksBase = '';
  /** The documents the loopback server serves, by path. */
  const served = new Map<string, unknown>();
  let key: ClientKey;

  beforeAll(async () => {
    // The registrant's documents are served by a loopback listener: the development setting lets the guarded
    // fetch reach it.
    sigil = await startSigil({
      ...registrationConfig({ allowedGrantTypes: ['authorization_code', 'refresh_token'] }),
      clientIdMetadataDocuments: { allowLoopback: true },
    });
    jwksServer = createServer((req, res) => {
      const doc = served.get(req.url ?? '');
      if (doc === undefined) res.writeHead(404).end();
      else res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(doc));
    });
    await new Promise<void>((r) => jwksServer.listen(0, '127.0.0.1', r));
    jwksBase = `http://127.0.0.1:${(jwksServer.address() as AddressInfo).port}`;
    key = await clientKey('RS256', 'k1');
  });
  afterAll(async () => {
    jwksServer.close();
    await sigil.close();
  });

  const register = async (metadata: Json) => {
    const { token } = await mintInitialToken(sigil.context.store.registrations, 1, 600);
    return sigil.app.inject({
      method: 'POST',
      url: '/connect/register',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      payload: JSON.stringify(metadata),
    });
  };
  const registered = async (metadata: Json) => {
    const res = await register(metadata);
    expect(res.statusCode, res.body).toBe(201);
    return res.json<Json>();
  };
  /** The plan's client: private_key_jwt with its keys inline, the code flow with refresh tokens. */
  const planClient = (extra: Json = {}) => ({
    redirect_uris: ['https://rp.example/cb'],
    token_endpoint_auth_method: 'private_key_jwt',
    jwks: { keys: [key.publicJwk] },
    grant_types: ['authorization_code', 'refresh_token'],
    scope: 'openid profile offline_access',
    ...extra,
  });
  /** Runs the code flow to its authorization response for a registered client. */
  const authorize = async (
    clientId: string,
    params: Record<string, string> = {},
  ): Promise<{ step: Step; verifier: string }> => {
    const { verifier, challenge } = pkce();
    const browser = new Browser(sigil);
    let step = await browser.follow(
      await browser.get(
        authorizeUrl({
          client_id: clientId,
          response_type: 'code',
          scope: 'openid profile offline_access',
          redirect_uri: 'https://rp.example/cb',
          code_challenge: challenge,
          code_challenge_method: 'S256',
          state: 's1',
          nonce: 'n1',
          ...params,
        }),
      ),
    );
    if (isLoginPage(step)) step = await browser.follow(await browser.submitLogin(step, 'alice', 'alice'));
    if (isConsentPage(step)) step = await browser.consent(step, 'yes');
    return { step, verifier };
  };
  const token = async (
    clientId: string,
    fields: Record<string, string>,
    signWith: ClientKey = key,
    aud: string = `${ISSUER}/connect/token`,
  ) =>
    sigil.app.inject({
      method: 'POST',
      url: '/connect/token',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: form({ ...fields, ...assertionFields(await signAssertion(signWith, clientId, aud), clientId) }),
    });
  /** Code flow to tokens. */
  const codeFlow = async (clientId: string, signWith: ClientKey = key) => {
    const { step, verifier } = await authorize(clientId);
    const code = readResponse(step).params.get('code') ?? '';
    const res = await token(
      clientId,
      { grant_type: 'authorization_code', code, redirect_uri: 'https://rp.example/cb', code_verifier: verifier },
      signWith,
    );
    expect(res.statusCode, res.body).toBe(200);
    return res.json<{ id_token: string; refresh_token: string; access_token: string }>();
  };

  it('OIDCCDiscoveryEndpointVerification: discovery names the registration endpoint and what the plan checks', async () => {
    const doc = (await sigil.app.inject({ method: 'GET', url: '/.well-known/openid-configuration' })).json<Json>();
    expect(doc).toMatchObject({
      issuer: ISSUER,
      registration_endpoint: `${ISSUER}/connect/register`,
      subject_types_supported: ['public'],
      claims_parameter_supported: true,
    });
    expect(doc.scopes_supported).toContain('openid');
    expect(doc.response_types_supported).toContain('code');
    expect(doc.id_token_signing_alg_values_supported).toContain('RS256');
    expect(doc.token_endpoint_auth_methods_supported).toContain('private_key_jwt');
    expect(
      (await sigil.app.inject({ method: 'GET', url: '/.well-known/openid-configuration/jwks' })).json<{
        keys: unknown[];
      }>().keys.length,
    ).toBeGreaterThan(0);
  });

  it('OIDCCServerTest: registers with private_key_jwt and inline jwks, runs the code flow, the id_token names the client', async () => {
    const client = await registered(planClient());
    const tokens = await codeFlow(String(client.client_id));
    const payload = JSON.parse(Buffer.from(tokens.id_token.split('.')[1] ?? '', 'base64url').toString()) as Json;
    expect(payload).toMatchObject({ iss: ISSUER, aud: client.client_id, sub: '1', nonce: 'n1' });
  });

  it('OIDCCIdTokenRS256: id_token_signed_response_alg RS256 is registered and the id_token is RS256', async () => {
    const client = await registered(planClient({ id_token_signed_response_alg: 'RS256' }));
    expect(client.id_token_signed_response_alg).toBe('RS256');
    expect(decodeProtectedHeader((await codeFlow(String(client.client_id))).id_token).alg).toBe('RS256');
  });

  it('OIDCCIdTokenUnsigned: none is refused at registration and not advertised (the plan skips it then)', async () => {
    const res = await register(planClient({ id_token_signed_response_alg: 'none' }));
    expect(res.json<Json>().error).toBe('invalid_client_metadata');
    const doc = (await sigil.app.inject({ method: 'GET', url: '/.well-known/openid-configuration' })).json<Json>();
    expect(doc.id_token_signing_alg_values_supported).not.toContain('none');
  });

  it('OIDCCEnsureRedirectUriInAuthorizationRequest: a request without redirect_uri is refused on an error page, not redirected', async () => {
    const client = await registered(planClient());
    const { challenge } = pkce();
    const res = await sigil.app.inject({
      method: 'GET',
      url: authorizeUrl({
        client_id: String(client.client_id),
        response_type: 'code',
        scope: 'openid',
        code_challenge: challenge,
        code_challenge_method: 'S256',
      }),
    });
    expect(res.statusCode).toBe(400);
    expect(res.headers.location).toBeUndefined();
  });

  it('OIDCCRedirectUriQueryOK: a registered redirect URI with a query works as registered', async () => {
    const client = await registered(planClient({ redirect_uris: ['https://rp.example/cb?foo=bar'] }));
    const { step } = await authorize(String(client.client_id), { redirect_uri: 'https://rp.example/cb?foo=bar' });
    const r = readResponse(step);
    expect(r.target).toBe('https://rp.example/cb');
    expect(r.params.get('foo')).toBe('bar');
    expect(r.params.get('code')).toEqual(expect.any(String));
  });

  it('OIDCCRedirectUriQueryMismatch: another query than the registered one is refused', async () => {
    const client = await registered(planClient({ redirect_uris: ['https://rp.example/cb?foo=bar'] }));
    const { step } = await authorize(String(client.client_id), { redirect_uri: 'https://rp.example/cb?foo=baz' });
    expect(step.status).toBe(400);
    expect(step.location).toBeUndefined();
  });

  it('OIDCCRedirectUriQueryAdded: a query added to a registered redirect URI is refused', async () => {
    const client = await registered(planClient());
    const { step } = await authorize(String(client.client_id), { redirect_uri: 'https://rp.example/cb?foo=bar' });
    expect(step.status).toBe(400);
    expect(step.location).toBeUndefined();
  });

  it('OIDCCRedirectUriRegFrag: a redirect URI with a fragment is refused at registration', async () => {
    const res = await register(planClient({ redirect_uris: ['https://rp.example/cb#foo'] }));
    expect(res.statusCode).toBe(400);
    expect(res.json<Json>().error).toBe('invalid_redirect_uri');
  });

  it('OIDCCRegistrationLogoUri, OIDCCRegistrationPolicyUri, OIDCCRegistrationTosUri: registered, returned and the flow runs', async () => {
    for (const [name, uri] of [
      ['logo_uri', 'https://rp.example/logo.png'],
      ['policy_uri', 'https://rp.example/policy'],
      ['tos_uri', 'https://rp.example/tos'],
    ]) {
      const client = await registered(planClient({ [name as string]: uri }));
      expect(client[name as string]).toBe(uri);
      const read = await sigil.app.inject({
        method: 'GET',
        url: new URL(String(client.registration_client_uri)).pathname,
        headers: { authorization: `Bearer ${String(client.registration_access_token)}` },
      });
      expect(read.json<Json>()[name as string]).toBe(uri);
      await codeFlow(String(client.client_id));
    }
  });

  it('OIDCCRegistrationJwksUri: private_key_jwt with keys at jwks_uri authenticates at the token endpoint', async () => {
    served.set('/jwks-uri-client', { keys: [key.publicJwk] });
    const client = await registered(planClient({ jwks: undefined, jwks_uri: `${jwksBase}/jwks-uri-client` }));
    expect(client.jwks_uri).toBe(`${jwksBase}/jwks-uri-client`);
    await codeFlow(String(client.client_id));
  });

  it('OIDCCRegistrationSectorUri: a sector_identifier_uri listing every redirect URI is accepted', async () => {
    served.set('/sector', ['https://rp.example/cb', 'https://rp.example/elsewhere']);
    const client = await registered(planClient({ sector_identifier_uri: `${jwksBase}/sector` }));
    expect(client.sector_identifier_uri).toBe(`${jwksBase}/sector`);
  });

  it('OIDCCRegistrationSectorBad: a sector_identifier_uri not listing a redirect URI is refused', async () => {
    served.set('/sector-bad', ['https://rp.example/elsewhere']);
    const res = await register(planClient({ sector_identifier_uri: `${jwksBase}/sector-bad` }));
    expect(res.statusCode).toBe(400);
    expect(res.json<Json>().error).toBe('invalid_redirect_uri');
  });

  it('OIDCCRefreshToken: the dynamic client refreshes its tokens', async () => {
    const client = await registered(planClient());
    const tokens = await codeFlow(String(client.client_id));
    const refreshed = await token(String(client.client_id), {
      grant_type: 'refresh_token',
      refresh_token: tokens.refresh_token,
    });
    expect(refreshed.statusCode, refreshed.body).toBe(200);
    expect(refreshed.json<Json>().access_token).toEqual(expect.any(String));
  });

  it('OIDCCRefreshTokenRPKeyRotation: 60 s after the client rotates the keys at its jwks_uri, a refresh signed with the new key works', async () => {
    served.set('/rotating', { keys: [key.publicJwk] });
    const client = await registered(planClient({ jwks: undefined, jwks_uri: `${jwksBase}/rotating` }));
    const tokens = await codeFlow(String(client.client_id));
    const next = await clientKey('RS256', 'k2');
    served.set('/rotating', { keys: [next.publicJwk] });
    // The plan waits 60 s (WaitFor60Seconds) so that the jwks_uri refetch limit (once a minute,
    // clients/client-keys.ts) has passed; the clock is moved instead of waited for.
    vi.useFakeTimers({ toFake: ['Date'], now: Date.now() });
    try {
      vi.setSystemTime(Date.now() + 61_000);
      const refreshed = await token(
        String(client.client_id),
        { grant_type: 'refresh_token', refresh_token: tokens.refresh_token },
        next,
      );
      expect(refreshed.statusCode, refreshed.body).toBe(200);
    } finally {
      vi.useRealTimers();
    }
  });

  it('OIDCCEnsureClientAssertionWithIssAudSucceeds: an assertion whose aud is the issuer is accepted', async () => {
    const client = await registered(planClient());
    const { step, verifier } = await authorize(String(client.client_id));
    const code = readResponse(step).params.get('code') ?? '';
    const res = await token(
      String(client.client_id),
      { grant_type: 'authorization_code', code, redirect_uri: 'https://rp.example/cb', code_verifier: verifier },
      key,
      ISSUER,
    );
    expect(res.statusCode, res.body).toBe(200);
  });

  it('OIDCCServerRotateKeys: after the OP rotates its signing key, identity tokens carry the new kid, published in the JWKS', async () => {
    const rotating = await startSigil({
      ...registrationConfig(),
      signingKeys: { propagationSeconds: 0, retentionSeconds: 3600, rotationSeconds: 7_776_000, reloadSeconds: 60 },
    });
    try {
      const jwks = async () =>
        (await rotating.app.inject({ method: 'GET', url: '/.well-known/openid-configuration/jwks' })).json<{
          keys: { kid: string; alg: string }[];
        }>().keys;
      const before = (await jwks()).filter((k) => k.alg === 'RS256').map((k) => k.kid);
      // Keys carry their times in whole seconds: a key made in the start's second would tie with
      // the first key for "newest", so the rotation happens in a later second.
      await new Promise((resolve) => setTimeout(resolve, 1_100));
      const [added] = await new KeyAdmin(rotating.context.store.keys, rotating.context.config).rotate('RS256');
      await rotating.context.keys.refresh();
      const after = await jwks();
      expect(after.map((k) => k.kid)).toEqual(expect.arrayContaining([...before, added?.kid]));
      // The new key signs the identity token of a freshly registered client's code flow.
      const { token: iat } = await mintInitialToken(rotating.context.store.registrations, 1, 600);
      const created = (
        await rotating.app.inject({
          method: 'POST',
          url: '/connect/register',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${iat}` },
          payload: planClient(),
        })
      ).json<Json>();
      const { verifier, challenge } = pkce();
      const browser = new Browser(rotating);
      let step = await browser.follow(
        await browser.get(
          authorizeUrl({
            client_id: String(created.client_id),
            response_type: 'code',
            scope: 'openid',
            redirect_uri: 'https://rp.example/cb',
            code_challenge: challenge,
            code_challenge_method: 'S256',
          }),
        ),
      );
      step = await browser.follow(await browser.submitLogin(step, 'alice', 'alice'));
      step = await browser.consent(step, 'yes');
      const code = readResponse(step).params.get('code') ?? '';
      const res = await rotating.app.inject({
        method: 'POST',
        url: '/connect/token',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        payload: form({
          grant_type: 'authorization_code',
          code,
          redirect_uri: 'https://rp.example/cb',
          code_verifier: verifier,
          ...assertionFields(
            await signAssertion(key, String(created.client_id), `${ISSUER}/connect/token`),
            String(created.client_id),
          ),
        }),
      });
      expect(res.statusCode, res.body).toBe(200);
      expect(decodeProtectedHeader(res.json<{ id_token: string }>().id_token).kid).toBe(added?.kid);
    } finally {
      await rotating.close();
    }
  });
});
