/**
 * Dynamic Client Registration (RFC 7591) and management (RFC 7592) over HTTP, with RFC 8414
 * metadata: initial access tokens, the registration policy, registration access token rotation,
 * deletion, unused-client removal, the per-address quota, and a property test that no body gives
 * a 500.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mintInitialToken } from '../../src/admin/registrations.js';
import { hashHandle, nowSeconds } from '../../src/crypto/handles.js';
import {
  authorizeUrl,
  Browser,
  codeParams,
  getCode,
  isConsentPage,
  isLoginPage,
  pkce,
  redeem,
} from '../authorize-helpers.js';
import { basic, form, startSigil, type TestSigil } from '../helpers.js';
import { registrationConfig } from '../registration-helpers.js';

const ISSUER = 'http://127.0.0.1:5999';
const pkceParams = () => ({ code_challenge: pkce().challenge, code_challenge_method: 'S256' });
type Json = Record<string, unknown>;

describe('dynamic client registration', () => {
  let sigil: TestSigil;
  let sector: Server;
  let sectorUrl = '';
  let sectorDoc: unknown = [];
  beforeAll(async () => {
    // The registrant's documents are served by a loopback listener: the development setting lets the guarded
    // fetch reach it.
    sigil = await startSigil({
      ...registrationConfig({ registrationsPerAccessToken: 3, registrationsPerAddress: 1000 }),
      clientIdMetadataDocuments: { allowLoopback: true },
    });
    sector = createServer((_req, res) =>
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(sectorDoc)),
    );
    await new Promise<void>((r) => sector.listen(0, '127.0.0.1', r));
    sectorUrl = `http://127.0.0.1:${(sector.address() as AddressInfo).port}/sector.json`;
  });
  afterAll(async () => {
    sector.close();
    await sigil.close();
  });

  /** A fresh access token with sigil:register (each may register 3 clients here). */
  const registerToken = async (
    scope = 'sigil:register',
    client: readonly [string, string] = ['registrar', 'registrar-secret'],
  ) => {
    const res = await sigil.app.inject({
      method: 'POST',
      url: '/connect/token',
      headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: basic(client[0], client[1]) },
      payload: form({ grant_type: 'client_credentials', scope }),
    });
    expect(res.statusCode).toBe(200);
    return res.json<{ access_token: string }>().access_token;
  };
  const register = async (body: unknown, token?: string, raw = false) =>
    sigil.app.inject({
      method: 'POST',
      url: '/connect/register',
      headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
      payload: raw ? (body as string) : JSON.stringify(body),
    });
  const manage = (method: 'GET' | 'PUT' | 'DELETE', uri: string, token: string, body?: unknown) =>
    sigil.app.inject({
      method,
      url: new URL(uri).pathname,
      headers: {
        authorization: `Bearer ${token}`,
        ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
      },
      ...(body !== undefined ? { payload: JSON.stringify(body) } : {}),
    });
  const web = { redirect_uris: ['https://rp.example/cb'], client_name: 'RP' };

  describe('RFC 8414 metadata', () => {
    it('serves the discovery document at /.well-known/oauth-authorization-server, with registration_endpoint', async () => {
      const oidc = await sigil.app.inject({ method: 'GET', url: '/.well-known/openid-configuration' });
      const oauth = await sigil.app.inject({ method: 'GET', url: '/.well-known/oauth-authorization-server' });
      expect(oauth.statusCode).toBe(200);
      expect(oauth.json()).toEqual(oidc.json());
      expect(oauth.json<Json>().registration_endpoint).toBe(`${ISSUER}/connect/register`);
      expect(
        (await sigil.app.inject({ method: 'POST', url: '/.well-known/oauth-authorization-server' })).statusCode,
      ).toBe(405);
    });

    it('serves the path-inserted location for an issuer with a path (RFC 8414 §3.1), and no registration_endpoint when registration is off', async () => {
      const tenant = await startSigil({ issuer: 'http://127.0.0.1:5999/tenant-a' });
      try {
        const inserted = await tenant.app.inject({
          method: 'GET',
          url: '/.well-known/oauth-authorization-server/tenant-a',
        });
        expect(inserted.statusCode).toBe(200);
        expect(inserted.json<Json>().issuer).toBe('http://127.0.0.1:5999/tenant-a');
        expect(inserted.json<Json>()).not.toHaveProperty('registration_endpoint');
        // Below the issuer's path too, where every other endpoint of this issuer is.
        expect(
          (await tenant.app.inject({ method: 'GET', url: '/tenant-a/.well-known/oauth-authorization-server' }))
            .statusCode,
        ).toBe(200);
        expect(
          (await tenant.app.inject({ method: 'POST', url: '/tenant-a/connect/register', payload: {} })).statusCode,
        ).toBe(404);
      } finally {
        await tenant.close();
      }
    });
  });

  describe('initial access tokens', () => {
    it('refuses a registration without one (401 with a Bearer challenge, RFC 6750 §3.1)', async () => {
      const res = await register(web);
      expect(res.statusCode).toBe(401);
      expect(res.headers['www-authenticate']).toBe('Bearer');
      expect(res.headers['cache-control']).toBe('no-store');
    });

    it('refuses an invalid token (401 invalid_token) and one without sigil:register (403 insufficient_scope)', async () => {
      const bad = await register(web, 'not-a-token');
      expect(bad.statusCode).toBe(401);
      expect(bad.json<Json>().error).toBe('invalid_token');
      const wrongScope = await register(web, await registerToken('api1', ['m2m', 'm2m-secret']));
      expect(wrongScope.statusCode).toBe(403);
      expect(wrongScope.json<Json>().error).toBe('insufficient_scope');
      expect(wrongScope.headers['www-authenticate']).toContain('scope="sigil:register"');
    });

    it('refuses the sigil:register token of a client removed since (401): it has no stored mark to revoke', async () => {
      const { secret } = await sigil.context.management.clients.create({
        clientId: 'gone-registrar',
        allowedGrantTypes: ['client_credentials'],
        allowedScopes: ['sigil:register'],
      });
      await sigil.context.management.reloadClients();
      const token = await registerToken('sigil:register', ['gone-registrar', secret ?? '']);
      await sigil.context.management.clients.delete('gone-registrar');
      await sigil.context.management.reloadClients();
      const res = await register(web, token);
      expect(res.statusCode, res.body).toBe(401);
      expect(res.json<Json>().error).toBe('invalid_token');
    });

    it('registers with an access token carrying sigil:register: 201, no-store, secret and registration access token', async () => {
      const res = await register(web, await registerToken());
      expect(res.statusCode).toBe(201);
      expect(res.headers['cache-control']).toBe('no-store');
      const body = res.json<Json>();
      expect(body).toMatchObject({
        client_secret_expires_at: 0,
        redirect_uris: ['https://rp.example/cb'],
        client_name: 'RP',
        token_endpoint_auth_method: 'client_secret_basic',
        grant_types: ['authorization_code'],
        response_types: ['code'],
      });
      expect(body.client_id_issued_at).toBeGreaterThanOrEqual(nowSeconds() - 5);
      expect(body.client_secret).toMatch(/^[A-Za-z0-9_-]{43}$/);
      expect(body.registration_access_token).toMatch(/^[A-Za-z0-9_-]{43}$/);
      expect(body.registration_client_uri).toBe(`${ISSUER}/connect/register/${String(body.client_id)}`);
      // The secret is stored as a digest only.
      const stored = await sigil.context.store.clients.listClients();
      const client = stored.find((c) => c.clientId === body.client_id) as {
        clientSecrets: string[];
        requireConsent: boolean;
      };
      expect(client.clientSecrets).toEqual([expect.stringMatching(/^sha256:/)]);
      expect(client.clientSecrets[0]).not.toContain(String(body.client_secret));
      expect(client.requireConsent).toBe(true);
    });

    it('stops an access token after registrationsPerAccessToken registrations (the cap), counting only successful ones', async () => {
      const token = await registerToken();
      expect((await register({ redirect_uris: ['http://rp.example/cb'] }, token)).statusCode).toBe(400);
      // A refused registration stored nothing, not even the token's count.
      expect(await sigil.context.store.registrations.findInitialToken(hashHandle(token))).toBeUndefined();
      for (let i = 0; i < 3; i++) expect((await register(web, token)).statusCode).toBe(201);
      const over = await register(web, token);
      expect(over.statusCode).toBe(401);
      expect(over.json<Json>()).toMatchObject({
        error: 'invalid_token',
        error_description: 'the initial access token is used up',
      });
    });

    it('takes tokens of sigil clients initial-token: their own cap, and refused once expired', async () => {
      const { token } = await mintInitialToken(sigil.context.store.registrations, 1, 600);
      expect(token).toMatch(/^sigil_iat_/);
      expect((await register(web, token)).statusCode).toBe(201);
      expect((await register(web, token)).statusCode).toBe(401);
      const expired = await mintInitialToken(sigil.context.store.registrations, 5, 60, nowSeconds() - 120);
      const res = await register(web, expired.token);
      expect(res.statusCode).toBe(401);
      expect(res.json<Json>().error_description).toBe('the initial access token is expired');
    });

    it('lets concurrent registrations with one minted token take no more than its cap', async () => {
      const { token } = await mintInitialToken(sigil.context.store.registrations, 2, 600);
      const answers = await Promise.all(Array.from({ length: 6 }, () => register(web, token)));
      expect(answers.filter((r) => r.statusCode === 201)).toHaveLength(2);
      expect(answers.filter((r) => r.statusCode === 401)).toHaveLength(4);
    });
  });

  describe('policy (RFC 7591 §3.2.2 errors)', () => {
    const expectError = async (body: unknown, error: string) => {
      const { token } = await mintInitialToken(sigil.context.store.registrations, 1, 600);
      const res = await register(body, token);
      expect(res.statusCode, JSON.stringify(body)).toBe(400);
      expect(res.headers['cache-control']).toBe('no-store');
      expect(res.json<Json>().error, JSON.stringify(body)).toBe(error);
      return res.json<Json>();
    };
    const accepted = async (body: Json) => {
      const res = await register(body, (await mintInitialToken(sigil.context.store.registrations, 1, 600)).token);
      expect(res.statusCode, res.body).toBe(201);
      return res.json<Json>();
    };

    it('refuses redirect URIs that are not https for web clients, with fragments, wildcards or dangerous schemes', async () => {
      for (const uri of [
        'http://rp.example/cb',
        'https://rp.example/cb#frag',
        'https://*.rp.example/cb',
        'https://rp.example/*',
        'javascript:alert(1)',
        'data:text/html,hi',
        'file:///etc/passwd',
        'com.example.app:/cb',
        'https://user:pw@rp.example/cb',
        'not a uri',
      ])
        await expectError({ redirect_uris: [uri] }, 'invalid_redirect_uri');
      await expectError({ redirect_uris: [] }, 'invalid_redirect_uri');
      await expectError({ redirect_uris: 'https://rp.example/cb' }, 'invalid_redirect_uri');
      await expectError(
        { redirect_uris: Array.from({ length: 21 }, (_, i) => `https://rp.example/${i}`) },
        'invalid_redirect_uri',
      );
    });

    it('refuses redirect URIs a browser would rewrite before following them (white space, controls, backslashes), as every client path does', async () => {
      for (const uri of [
        ' https://rp.example/cb',
        'https://rp.example/cb\t',
        'https://rp.ex\nample/cb',
        'https:\\\\evil.example\\cb',
        ' JAVASCRIPT:alert(1)',
      ])
        for (const application_type of ['web', 'native'])
          await expectError({ application_type, redirect_uris: [uri] }, 'invalid_redirect_uri');
      await expectError(
        { redirect_uris: ['https://rp.example/cb'], post_logout_redirect_uris: ['https://rp.example/bye\u0000'] },
        'invalid_client_metadata',
      );
    });

    it('takes loopback redirects without application_type, as MCP clients register (RFC 8252 §7.3; OIDC DCR §2 bars localhost for implicit only)', async () => {
      for (const uri of [
        'http://127.0.0.1:33418/callback',
        'http://localhost:6274/oauth/callback',
        'http://[::1]/cb',
        'https://127.0.0.1/cb',
      ])
        expect((await accepted({ redirect_uris: [uri], token_endpoint_auth_method: 'none' })).redirect_uris).toEqual([
          uri,
        ]);
    });

    it('takes reverse-DNS private-use schemes for native clients only (RFC 8252 §7.1), and loopback for both', async () => {
      for (const uri of [
        'http://127.0.0.1/cb',
        'http://[::1]:8080/cb',
        'http://localhost/cb',
        'com.example.app:/oauth2redirect',
        'https://app.example/cb',
      ])
        expect(
          (await accepted({ application_type: 'native', redirect_uris: [uri], token_endpoint_auth_method: 'none' }))
            .redirect_uris,
        ).toEqual([uri]);
      for (const uri of [
        'myapp:/cb',
        'http://192.168.1.10/cb',
        'javascript:alert(1)',
        'data:x',
        'file:///x',
        'com.example.app:/cb#x',
      ])
        await expectError({ application_type: 'native', redirect_uris: [uri] }, 'invalid_redirect_uri');
      await expectError(
        { application_type: 'desktop', redirect_uris: ['https://rp.example/cb'] },
        'invalid_client_metadata',
      );
    });

    it('refuses grant types, response types and scopes outside the policy; never password, token exchange or sigil:*', async () => {
      for (const grant of [
        'password',
        'urn:ietf:params:oauth:grant-type:token-exchange',
        'implicit',
        'client_credentials',
        'urn:ietf:params:oauth:grant-type:device_code',
      ])
        await expectError({ ...web, grant_types: ['authorization_code', grant] }, 'invalid_client_metadata');
      await expectError({ ...web, grant_types: ['refresh_token'] }, 'invalid_client_metadata');
      await expectError({ ...web, response_types: ['code id_token'] }, 'invalid_client_metadata');
      await expectError({ ...web, response_types: ['token'] }, 'invalid_client_metadata');
      for (const scope of [
        'openid sigil:register',
        'openid sigil:admin',
        'openid scim',
        'openid nope',
        'offline_access',
      ])
        await expectError({ ...web, scope }, 'invalid_client_metadata');
      // Exactly the scope asked: refresh tokens come with the grant type, offline_access is not added.
      const ok = await accepted({
        ...web,
        grant_types: ['authorization_code', 'refresh_token'],
        scope: 'openid profile',
      });
      expect(ok.scope).toBe('openid profile');
    });

    it('reads the scopes at each registration: stored identity and API scopes are registrable by default, a deleted one no longer', async () => {
      // Its own server: the stored scopes must not change what the other tests' clients get.
      const own = await startSigil(registrationConfig());
      try {
        const resources = own.context.management.resources;
        await resources.create('identity_resource', { name: 'reg-badge', userClaims: ['badge'] });
        await resources.create('identity_resource', { name: 'reg-gone', userClaims: ['gone'] });
        await resources.create('api_scope', { name: 'reg-api' });
        await resources.delete('identity_resource', 'reg-gone');
        const registerOn = async (scope?: string) =>
          own.app.inject({
            method: 'POST',
            url: '/connect/register',
            headers: {
              'content-type': 'application/json',
              authorization: `Bearer ${(await mintInitialToken(own.context.store.registrations, 1, 600)).token}`,
            },
            payload: JSON.stringify({ ...web, ...(scope === undefined ? {} : { scope }) }),
          });
        const badge = await registerOn('openid reg-badge');
        expect(badge.statusCode, badge.body).toBe(201);
        expect(badge.json<Json>().scope).toBe('openid reg-badge');
        // No scope asked: every identity scope the policy allows, the stored one included, no API scope.
        const defaults = String((await registerOn()).json<Json>().scope).split(' ');
        expect(defaults).toContain('reg-badge');
        expect(defaults).not.toContain('reg-api');
        const api = await registerOn('openid reg-api');
        expect(api.statusCode, api.body).toBe(201);
        expect(api.json<Json>().scope).toBe('openid reg-api');
        for (const scope of ['openid reg-gone']) {
          const refused = await registerOn(scope);
          expect(refused.statusCode, scope).toBe(400);
          expect(refused.json<Json>().error).toBe('invalid_client_metadata');
        }
      } finally {
        await own.close();
      }
    });

    it('limits token_endpoint_auth_method to the allowed list and checks its keys', async () => {
      await expectError({ ...web, token_endpoint_auth_method: 'client_secret_jwt' }, 'invalid_client_metadata');
      await expectError({ ...web, token_endpoint_auth_method: 'tls_client_auth' }, 'invalid_client_metadata');
      await expectError({ ...web, token_endpoint_auth_method: 'private_key_jwt' }, 'invalid_client_metadata');
      await expectError(
        { ...web, jwks: { keys: [{ kty: 'oct', k: 'c2VjcmV0' }] }, token_endpoint_auth_method: 'private_key_jwt' },
        'invalid_client_metadata',
      );
      await expectError(
        { ...web, jwks: { keys: [{ kty: 'EC' }] }, jwks_uri: 'https://rp.example/jwks' },
        'invalid_client_metadata',
      );
      await expectError(
        { ...web, jwks_uri: 'ftp://rp.example/jwks', token_endpoint_auth_method: 'private_key_jwt' },
        'invalid_client_metadata',
      );
      await expectError(
        {
          ...web,
          token_endpoint_auth_signing_alg: 'HS256',
          token_endpoint_auth_method: 'private_key_jwt',
          jwks_uri: 'https://rp.example/jwks',
        },
        'invalid_client_metadata',
      );
      const pub = await accepted({ ...web, token_endpoint_auth_method: 'none' });
      expect(pub).not.toHaveProperty('client_secret');
      expect(pub).not.toHaveProperty('client_secret_expires_at');
    });

    it('refuses what Sigil cannot honour, and software statements (unapproved_software_statement)', async () => {
      await expectError({ ...web, subject_type: 'pairwise' }, 'invalid_client_metadata');
      await expectError({ ...web, id_token_signed_response_alg: 'none' }, 'invalid_client_metadata');
      await expectError({ ...web, userinfo_signed_response_alg: 'RS256' }, 'invalid_client_metadata');
      await expectError({ ...web, id_token_encrypted_response_alg: 'RSA-OAEP' }, 'invalid_client_metadata');
      await expectError({ ...web, default_max_age: 60 }, 'invalid_client_metadata');
      await expectError({ ...web, software_statement: 'eyJhbGciOiJub25lIn0.e30.' }, 'unapproved_software_statement');
      await expectError({ ...web, client_name: 'x'.repeat(201) }, 'invalid_client_metadata');
      await expectError({ ...web, contacts: ['a@example.com', 7] }, 'invalid_client_metadata');
      await expectError({ ...web, request_uris: ['http://rp.example/req'] }, 'invalid_client_metadata');
      await expectError({ ...web, backchannel_logout_uri: 'http://rp.example/bcl' }, 'invalid_client_metadata');
      await expectError({ ...web, logo_uri: 'javascript:alert(1)' }, 'invalid_client_metadata');
      await expectError({ ...web, tos_uri: 'http://rp.example/tos' }, 'invalid_client_metadata');
    });

    it('refuses bodies that are not a JSON object, too deep or not JSON', async () => {
      await expectError([web], 'invalid_client_metadata');
      await expectError(
        '[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]',
        'invalid_client_metadata',
      );
      const raw = await register(
        '{"redirect_uris": [',
        (await mintInitialToken(sigil.context.store.registrations, 1, 60)).token,
        true,
      );
      expect(raw.statusCode).toBe(400);
      expect(raw.json<Json>().error).toBe('invalid_client_metadata');
      const formBody = await sigil.app.inject({
        method: 'POST',
        url: '/connect/register',
        headers: {
          'content-type': 'application/x-www-form-urlencoded',
          authorization: `Bearer ${(await mintInitialToken(sigil.context.store.registrations, 1, 60)).token}`,
        },
        payload: 'redirect_uris=https://rp.example/cb',
      });
      expect(formBody.json<Json>().error).toBe('invalid_client_metadata');
      const huge = await register(
        { ...web, client_name: 'x'.repeat(70_000) },
        (await mintInitialToken(sigil.context.store.registrations, 1, 60)).token,
      );
      expect(huge.statusCode).toBe(413);
    });

    it('ignores unknown members and language-tagged names (RFC 7591 §2, §2.2)', async () => {
      const body = await accepted({
        ...web,
        frobnicate: { deep: [1, 2] },
        'client_name#de': 'RP auf Deutsch',
        __proto__: { polluted: true },
      });
      expect(body).not.toHaveProperty('frobnicate');
      expect(body).not.toHaveProperty('client_name#de');
      expect(({} as Json).polluted).toBeUndefined();
    });

    it('checks sector_identifier_uri: every redirect URI must be listed there (OIDC Core §8.1)', async () => {
      sectorDoc = ['https://rp.example/cb', 'https://rp.example/other'];
      const ok = await accepted({ ...web, sector_identifier_uri: sectorUrl });
      expect(ok.sector_identifier_uri).toBe(sectorUrl);
      sectorDoc = ['https://rp.example/other'];
      await expectError({ ...web, sector_identifier_uri: sectorUrl }, 'invalid_redirect_uri');
      sectorDoc = { not: 'a list' };
      await expectError({ ...web, sector_identifier_uri: sectorUrl }, 'invalid_client_metadata');
      await expectError(
        { ...web, sector_identifier_uri: 'http://127.0.0.1:1/nothing-listens' },
        'invalid_client_metadata',
      );
    });
  });

  it("shows a registered client's logo, name and links (client_uri, policy_uri, tos_uri) on its consent page", async () => {
    const client = await register(
      {
        ...web,
        token_endpoint_auth_method: 'none',
        client_name: 'Registered RP',
        logo_uri: 'https://cdn.rp.example/logo.png',
        client_uri: 'https://rp.example/',
        policy_uri: 'https://rp.example/privacy',
        tos_uri: 'https://rp.example/terms',
      },
      await registerToken(),
    );
    expect(client.statusCode, client.body).toBe(201);
    const browser = new Browser(sigil);
    let step = await browser.follow(
      await browser.get(
        authorizeUrl({
          client_id: String(client.json<Json>().client_id),
          response_type: 'code',
          scope: 'openid',
          redirect_uri: 'https://rp.example/cb',
          ...pkceParams(),
        }),
      ),
    );
    if (isLoginPage(step)) step = await browser.follow(await browser.submitLogin(step, 'alice', 'alice'));
    expect(isConsentPage(step)).toBe(true);
    expect(step.body).toContain('Registered RP');
    expect(step.body).toContain('src="https://cdn.rp.example/logo.png"');
    for (const href of ['https://rp.example/', 'https://rp.example/privacy', 'https://rp.example/terms'])
      expect(step.body).toContain(`href="${href}"`);
    // The logo's origin is allowed as an image source on that page.
    expect(String(step.headers['content-security-policy'])).toContain('https://cdn.rp.example');
  });

  describe('management (RFC 7592)', () => {
    const everything = {
      redirect_uris: ['https://rp.example/cb', 'https://rp.example/cb2?x=1'],
      token_endpoint_auth_method: 'client_secret_post',
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      client_name: 'Every Field',
      client_uri: 'https://rp.example/',
      logo_uri: 'https://rp.example/logo.png',
      policy_uri: 'https://rp.example/policy',
      tos_uri: 'https://rp.example/tos',
      scope: 'openid profile email offline_access',
      contacts: ['ops@rp.example'],
      software_id: '4NRB1-0XZABZI9E6-5SM3R',
      software_version: '2.1',
      application_type: 'web',
      subject_type: 'public',
      id_token_signed_response_alg: 'RS256',
      post_logout_redirect_uris: ['https://rp.example/bye'],
      request_uris: ['https://rp.example/request.jwt'],
      backchannel_logout_uri: 'https://rp.example/bcl',
      backchannel_logout_session_required: true,
      frontchannel_logout_uri: 'https://rp.example/fcl',
      frontchannel_logout_session_required: false,
      require_auth_time: true,
      dpop_bound_access_tokens: false,
    };

    it('round-trips every supported field through registration and read', async () => {
      const created = (await register(everything, await registerToken())).json<Json>();
      expect(created).toMatchObject(everything);
      const read = await manage(
        'GET',
        String(created.registration_client_uri),
        String(created.registration_access_token),
      );
      expect(read.statusCode).toBe(200);
      expect(read.headers['cache-control']).toBe('no-store');
      expect(read.json()).toMatchObject({
        ...everything,
        client_id: created.client_id,
        client_id_issued_at: created.client_id_issued_at,
      });
      expect(read.json()).not.toHaveProperty('client_secret');
      const client = sigil.context.clients.get(String(created.client_id));
      expect(client).toMatchObject({
        clientName: 'Every Field',
        tokenEndpointAuthMethod: 'client_secret_post',
        allowOfflineAccess: true,
        allowedGrantTypes: ['authorization_code'],
        redirectUris: everything.redirect_uris,
        postLogoutRedirectUris: ['https://rp.example/bye'],
        requestUris: ['https://rp.example/request.jwt'],
        backChannelLogoutUri: 'https://rp.example/bcl',
        frontChannelLogoutSessionRequired: false,
      });
    });

    it('rotates the registration access token on update: the new one works, the old one fails (RFC 7592 §2.2)', async () => {
      const created = (await register(web, await registerToken())).json<Json>();
      const uri = String(created.registration_client_uri);
      const updated = await manage('PUT', uri, String(created.registration_access_token), {
        client_id: created.client_id,
        client_secret: created.client_secret,
        redirect_uris: ['https://rp.example/new'],
        client_name: 'Renamed',
      });
      expect(updated.statusCode, updated.body).toBe(200);
      const body = updated.json<Json>();
      expect(body).toMatchObject({ client_name: 'Renamed', redirect_uris: ['https://rp.example/new'] });
      expect(body.registration_access_token).not.toBe(created.registration_access_token);
      expect(body).not.toHaveProperty('client_secret');
      expect((await manage('GET', uri, String(created.registration_access_token))).statusCode).toBe(401);
      expect((await manage('GET', uri, String(body.registration_access_token))).json<Json>().client_name).toBe(
        'Renamed',
      );
      expect(sigil.context.clients.get(String(created.client_id))?.redirectUris).toEqual(['https://rp.example/new']);
      // The secret stayed: the client still authenticates with it.
      const auth = await sigil.app.inject({
        method: 'POST',
        url: '/connect/token',
        headers: {
          'content-type': 'application/x-www-form-urlencoded',
          authorization: basic(String(created.client_id), String(created.client_secret)),
        },
        payload: form({ grant_type: 'authorization_code', code: 'nope', redirect_uri: 'https://rp.example/new' }),
      });
      expect(auth.json<Json>().error).toBe('invalid_grant');
    });

    it('gives a public client that becomes confidential a new secret on update, shown once', async () => {
      const created = (
        await register({ ...web, token_endpoint_auth_method: 'none' }, await registerToken())
      ).json<Json>();
      expect(created).not.toHaveProperty('client_secret');
      const updated = (
        await manage('PUT', String(created.registration_client_uri), String(created.registration_access_token), {
          ...web,
          client_id: created.client_id,
        })
      ).json<Json>();
      expect(updated).toMatchObject({ token_endpoint_auth_method: 'client_secret_basic', client_secret_expires_at: 0 });
      expect(updated.client_secret).toMatch(/^[A-Za-z0-9_-]{43}$/);
      const auth = await sigil.app.inject({
        method: 'POST',
        url: '/connect/token',
        headers: {
          'content-type': 'application/x-www-form-urlencoded',
          authorization: basic(String(created.client_id), String(updated.client_secret)),
        },
        payload: form({ grant_type: 'authorization_code', code: 'nope', redirect_uri: 'https://rp.example/cb' }),
      });
      expect(auth.json<Json>().error).toBe('invalid_grant');
      const read = await manage(
        'GET',
        String(created.registration_client_uri),
        String(updated.registration_access_token),
      );
      expect(read.json()).not.toHaveProperty('client_secret');
    });

    it('refuses an update naming another client_id or a wrong client_secret, and changes nothing', async () => {
      const created = (await register(web, await registerToken())).json<Json>();
      const uri = String(created.registration_client_uri);
      const token = String(created.registration_access_token);
      expect((await manage('PUT', uri, token, { ...web, client_id: 'someone-else' })).json<Json>().error).toBe(
        'invalid_client_metadata',
      );
      expect(
        (await manage('PUT', uri, token, { ...web, client_id: created.client_id, client_secret: 'wrong' })).json<Json>()
          .error,
      ).toBe('invalid_client_metadata');
      expect(
        (
          await manage('PUT', uri, token, { client_id: created.client_id, redirect_uris: ['http://rp.example/x'] })
        ).json<Json>().error,
      ).toBe('invalid_redirect_uri');
      expect((await manage('GET', uri, token)).statusCode).toBe(200);
    });

    it("emits audit events for registration, update and deletion, with the caller's origin", async () => {
      const seen: { name: string; clientId?: string; remoteAddress?: string; endpoint: string }[] = [];
      const unsubscribe = sigil.subscribe((e) => void seen.push(e));
      try {
        const created = (await register(web, await registerToken())).json<Json>();
        const uri = String(created.registration_client_uri);
        const next = (
          await manage('PUT', uri, String(created.registration_access_token), { ...web, client_id: created.client_id })
        ).json<Json>();
        await manage('DELETE', uri, String(next.registration_access_token));
        const mine = seen.filter((e) => e.clientId === created.client_id);
        expect(mine.map((e) => e.name)).toEqual(['client_registered', 'client_updated', 'client_deleted']);
        expect(mine.every((e) => e.endpoint === 'register' && e.remoteAddress === '127.0.0.1')).toBe(true);
      } finally {
        unsubscribe();
      }
    });

    it("answers 401 for a missing or wrong registration access token and for another client's", async () => {
      const a = (await register(web, await registerToken())).json<Json>();
      const b = (await register(web, await registerToken())).json<Json>();
      const none = await sigil.app.inject({ method: 'GET', url: new URL(String(a.registration_client_uri)).pathname });
      expect(none.statusCode).toBe(401);
      expect((await manage('GET', String(a.registration_client_uri), 'wrong')).json<Json>().error).toBe(
        'invalid_token',
      );
      expect(
        (await manage('GET', String(a.registration_client_uri), String(b.registration_access_token))).statusCode,
      ).toBe(401);
      expect(
        (await manage('GET', `${ISSUER}/connect/register/unknown`, String(a.registration_access_token))).statusCode,
      ).toBe(401);
    });

    it('deletes a client: 204, then its registration access token and its credentials fail (invalid_client)', async () => {
      const created = (await register(web, await registerToken())).json<Json>();
      const uri = String(created.registration_client_uri);
      const token = String(created.registration_access_token);
      const del = await manage('DELETE', uri, token);
      expect(del.statusCode).toBe(204);
      expect((await manage('GET', uri, token)).statusCode).toBe(401);
      expect((await manage('DELETE', uri, token)).statusCode).toBe(401);
      const auth = await sigil.app.inject({
        method: 'POST',
        url: '/connect/token',
        headers: {
          'content-type': 'application/x-www-form-urlencoded',
          authorization: basic(String(created.client_id), String(created.client_secret)),
        },
        payload: form({ grant_type: 'authorization_code', code: 'nope', redirect_uri: 'https://rp.example/cb' }),
      });
      expect(auth.statusCode).toBe(401);
      expect(auth.json<Json>().error).toBe('invalid_client');
    });
  });

  it('deleting a client revokes its grants and tokens (RFC 7592 §2.3): a client later made with the same id gets none of them', async () => {
    const created = (
      await register(
        { ...web, grant_types: ['authorization_code', 'refresh_token'], scope: 'openid offline_access' },
        await registerToken(),
      )
    ).json<Json>();
    const id = String(created.client_id);
    const { verifier, challenge } = pkce();
    const browser = new Browser(sigil);
    const code = await getCode(browser, codeParams(challenge, { client_id: id, scope: 'openid offline_access' }));
    const redeemed = await redeem(sigil, code, { client: id, secret: String(created.client_secret), verifier });
    expect(redeemed.statusCode, redeemed.body).toBe(200);
    const tokens = redeemed.json<{ access_token: string; refresh_token: string }>();
    const userinfo = async () =>
      (
        await sigil.app.inject({
          method: 'GET',
          url: '/connect/userinfo',
          headers: { authorization: `Bearer ${tokens.access_token}` },
        })
      ).statusCode;
    expect(await userinfo()).toBe(200);
    // An unused code of the same client, issued before the deletion.
    const unused = pkce();
    const pending = await getCode(browser, codeParams(unused.challenge, { client_id: id, scope: 'openid' }));
    expect(
      (await manage('DELETE', String(created.registration_client_uri), String(created.registration_access_token)))
        .statusCode,
    ).toBe(204);

    // Someone later creates a stored client with that id (the management API's service).
    const again = await sigil.context.management.clients.create({
      clientId: id,
      allowedGrantTypes: ['authorization_code', 'refresh_token'],
      allowedScopes: ['openid', 'offline_access'],
      allowOfflineAccess: true,
      redirectUris: ['https://rp.example/cb'],
    });
    await sigil.context.management.reloadClients();
    const secret = String(again.secret);
    const refreshed = await sigil.app.inject({
      method: 'POST',
      url: '/connect/token',
      headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: basic(id, secret) },
      payload: form({ grant_type: 'refresh_token', refresh_token: tokens.refresh_token }),
    });
    expect(refreshed.statusCode, refreshed.body).toBe(400);
    expect(refreshed.json<Json>().error).toBe('invalid_grant');
    const late = await redeem(sigil, pending, { client: id, secret, verifier: unused.verifier });
    expect(late.json<Json>().error).toBe('invalid_grant');
    expect(await userinfo()).toBe(401);
    await sigil.context.management.clients.delete(id);
  });

  describe('last use and removal of unused clients', () => {
    it('records a use at most once a day, and removes clients unused for unusedClientDays', async () => {
      const created = (await register(web, await registerToken())).json<Json>();
      const id = String(created.client_id);
      const store = sigil.context.store.registrations;
      const issued = (await store.find(id))?.lastUsedAt ?? 0;
      // Today's use is recorded already (registration); a lookup a day later is recorded once.
      sigil.context.registrations.touch(id, issued + 86_401);
      await new Promise((r) => setTimeout(r, 50));
      expect((await store.find(id))?.lastUsedAt).toBe(issued + 86_401);
      // 89 days after that last use it stays; 91 days after, housekeeping removes it.
      expect(await sigil.context.registrations.removeUnused(issued + 86_401 + 89 * 86_400)).not.toContain(id);
      expect(sigil.context.clients.get(id)).toBeDefined();
      expect(await sigil.context.registrations.removeUnused(issued + 86_401 + 91 * 86_400)).toContain(id);
      expect(sigil.context.clients.get(id)).toBeUndefined();
      expect(
        (await manage('GET', String(created.registration_client_uri), String(created.registration_access_token)))
          .statusCode,
      ).toBe(401);
    });

    it('revokes what a client removed for disuse was issued (RFC 7592 §2.3), and a client later made with its id gets none of it', async () => {
      const created = (
        await register(
          { ...web, grant_types: ['authorization_code', 'refresh_token'], scope: 'openid offline_access' },
          await registerToken(),
        )
      ).json<Json>();
      const id = String(created.client_id);
      const { verifier, challenge } = pkce();
      const code = await getCode(
        new Browser(sigil),
        codeParams(challenge, { client_id: id, scope: 'openid offline_access' }),
      );
      const redeemed = await redeem(sigil, code, { client: id, secret: String(created.client_secret), verifier });
      expect(redeemed.statusCode, redeemed.body).toBe(200);
      const tokens = redeemed.json<{ access_token: string; refresh_token: string }>();
      const userinfo = async () =>
        (
          await sigil.app.inject({
            method: 'GET',
            url: '/connect/userinfo',
            headers: { authorization: `Bearer ${tokens.access_token}` },
          })
        ).statusCode;
      expect(await userinfo()).toBe(200);

      const lastUse = (await sigil.context.store.registrations.find(id))?.lastUsedAt ?? 0;
      expect(await sigil.context.registrations.removeUnused(lastUse + 91 * 86_400)).toContain(id);
      expect(await userinfo()).toBe(401);

      const again = await sigil.context.management.clients.create({
        clientId: id,
        allowedGrantTypes: ['authorization_code', 'refresh_token'],
        allowedScopes: ['openid', 'offline_access'],
        allowOfflineAccess: true,
        redirectUris: ['https://rp.example/cb'],
      });
      await sigil.context.management.reloadClients();
      const refreshed = await sigil.app.inject({
        method: 'POST',
        url: '/connect/token',
        headers: {
          'content-type': 'application/x-www-form-urlencoded',
          authorization: basic(id, String(again.secret)),
        },
        payload: form({ grant_type: 'refresh_token', refresh_token: tokens.refresh_token }),
      });
      expect(refreshed.json<Json>().error).toBe('invalid_grant');
      expect(await userinfo()).toBe(401);
      await sigil.context.management.clients.delete(id);
    });
  });

  it('never answers 500, whatever JSON the body holds (property)', async () => {
    const { token } = await mintInitialToken(sigil.context.store.registrations, 100_000, 600);
    const field = fc.constantFrom(
      'redirect_uris',
      'grant_types',
      'response_types',
      'token_endpoint_auth_method',
      'scope',
      'jwks',
      'jwks_uri',
      'contacts',
      'client_name',
      'application_type',
      'subject_type',
      'sector_identifier_uri',
      'request_uris',
      'software_statement',
      'backchannel_logout_uri',
      'dpop_bound_access_tokens',
      'id_token_signed_response_alg',
      '__proto__',
      'constructor',
    );
    const body = fc.oneof(
      fc.jsonValue({ maxDepth: 30 }),
      fc.dictionary(field, fc.jsonValue({ maxDepth: 4 })),
      fc.record(
        { redirect_uris: fc.array(fc.oneof(fc.webUrl(), fc.string())), jwks: fc.jsonValue() },
        { requiredKeys: [] },
      ),
    );
    await fc.assert(
      fc.asyncProperty(body, async (b) => {
        const res = await register(JSON.stringify(b), token, true);
        expect(res.statusCode, res.body).toBeLessThan(500);
      }),
      { numRuns: 150 },
    );
  });
});

describe('open registration and the per-address quota', () => {
  let sigil: TestSigil;
  beforeAll(async () => {
    sigil = await startSigil(registrationConfig({ open: true, registrationsPerAddress: 2, windowSeconds: 600 }));
  });
  afterAll(async () => sigil.close());
  const from = (remoteAddress: string) =>
    sigil.app.inject({
      method: 'POST',
      url: '/connect/register',
      remoteAddress,
      headers: { 'content-type': 'application/json' },
      payload: JSON.stringify({ redirect_uris: ['https://rp.example/cb'] }),
    });

  it('registers without a token, and refuses an address past registrationsPerAddress (429, Retry-After) without touching others', async () => {
    expect((await from('198.51.100.7')).statusCode).toBe(201);
    expect((await from('198.51.100.7')).statusCode).toBe(201);
    const third = await from('198.51.100.7');
    expect(third.statusCode).toBe(429);
    expect(Number(third.headers['retry-after'])).toBeGreaterThan(0);
    // One IPv6 /64 is one address.
    expect((await from('2001:db8:1:2::1')).statusCode).toBe(201);
    expect((await from('2001:db8:1:2::2')).statusCode).toBe(201);
    expect((await from('2001:db8:1:2::3')).statusCode).toBe(429);
    expect((await from('198.51.100.8')).statusCode).toBe(201);
  });

  it('counts changes and removals at the configuration endpoint against the same quota (each reloads the clients)', async () => {
    const made = (await from('203.0.113.9')).json<Json>();
    const update = () =>
      sigil.app.inject({
        method: 'PUT',
        url: new URL(String(made.registration_client_uri)).pathname,
        remoteAddress: '203.0.113.9',
        headers: {
          'content-type': 'application/json',
          authorization: `Bearer ${String(made.registration_access_token)}`,
        },
        payload: JSON.stringify({ client_id: made.client_id, redirect_uris: ['https://rp.example/cb'] }),
      });
    const second = await update();
    expect(second.statusCode, second.body).toBe(200);
    const third = await update();
    expect(third.statusCode).toBe(429);
    expect(Number(third.headers['retry-after'])).toBeGreaterThan(0);
  });
});
