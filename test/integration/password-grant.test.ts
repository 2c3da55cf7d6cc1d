/**
 * Resource owner password grant (RFC 6749 §4.3; OIDC Core §2, §3.1.3.6; as Duende IdentityServer's
 * "password" grant). Sigil departs from Duende by issuing an ID token when `openid` is granted, and
 * by answering a missing `username` with `invalid_request` (RFC 6749 §5.2).
 */
import { createHash } from 'node:crypto';
import { decodeProtectedHeader, jwtVerify } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SigilEvent } from '../../src/index.js';
import { fetchJwks, passwordTokens, startSigil, testConfig, tokenRequest, type TestSigil } from '../helpers.js';

const ISSUER = 'http://127.0.0.1:5999';
const ROPC = ['ropc', 'ropc-secret'] as const;

describe('password grant', () => {
  let sigil: TestSigil;
  beforeAll(async () => {
    const base = testConfig();
    sigil = await startSigil({
      rateLimits: { maxFailures: 1000, windowSeconds: 60 },
      clients: [
        ...(base.clients ?? []),
        {
          clientId: 'restricted',
          clientSecrets: ['restricted-secret'],
          allowedGrantTypes: ['password'],
          allowedScopes: ['openid', 'api1'],
          identityProviderRestrictions: ['corp'],
        },
      ],
      users: [
        ...(base.users ?? []),
        // A second "erin" in another tenant: without tenant:, "erin" names two users.
        { subjectId: '5', username: 'erin', password: 'erin', tenant: 'acme', claims: {} },
        { subjectId: '6', username: 'erin', password: 'erin', tenant: 'globex', claims: {} },
      ],
    });
  });
  afterAll(async () => sigil.close());

  it('issues access, identity and no refresh token for openid, with the no-store headers', async () => {
    const res = await tokenRequest(
      sigil,
      { grant_type: 'password', username: 'alice', password: 'alice', scope: 'openid api1' },
      ROPC,
    );
    expect(res.statusCode).toBe(200);
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.headers.pragma).toBe('no-cache');
    const body = res.json<Record<string, unknown>>();
    expect(body).toEqual({
      access_token: expect.any(String),
      id_token: expect.any(String),
      token_type: 'Bearer',
      expires_in: 3600,
      scope: 'openid api1',
    });
  });

  it('issues a valid ID token: iss, sub, aud, exp, iat, auth_time, amr, at_hash', async () => {
    const before = Math.floor(Date.now() / 1000);
    const body = await passwordTokens(sigil, { scope: 'openid profile api1' });
    const jwks = await fetchJwks(sigil);
    const { payload, protectedHeader } = await jwtVerify(body.id_token!, jwks, { issuer: ISSUER, audience: 'ropc' });
    expect(protectedHeader.typ).toBe('JWT');
    expect(protectedHeader.kid).toEqual(expect.any(String));
    expect(payload.iss).toBe(ISSUER);
    expect(payload.sub).toBe('1');
    expect(payload.aud).toBe('ropc');
    expect(payload.iat).toBeGreaterThanOrEqual(before);
    expect(payload.exp).toBe((payload.iat as number) + 300);
    expect(payload.auth_time).toBeGreaterThanOrEqual(before);
    expect(payload.auth_time).toBeLessThanOrEqual(payload.iat as number);
    expect(payload.amr).toEqual(['pwd']);
    const alg = decodeProtectedHeader(body.id_token!).alg;
    expect(alg).toBe('RS256');
    const digest = createHash('sha256').update(body.access_token, 'ascii').digest();
    expect(payload.at_hash).toBe(digest.subarray(0, 16).toString('base64url'));
    // Profile claims go through userinfo, not the ID token.
    expect(payload).not.toHaveProperty('name');
  });

  it('issues no ID token without openid', async () => {
    const body = await passwordTokens(sigil, { scope: 'api1' });
    expect(body).not.toHaveProperty('id_token');
    expect(body).not.toHaveProperty('refresh_token');
    expect(body.scope).toBe('api1');
  });

  it('issues a refresh token with offline_access', async () => {
    const body = await passwordTokens(sigil, { scope: 'openid api1 offline_access' });
    expect(body.refresh_token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(body.scope).toBe('openid api1 offline_access');
  });

  it('grants every allowed scope, offline_access included, when scope is omitted', async () => {
    const body = await passwordTokens(sigil);
    expect(body.scope.split(' ').sort()).toEqual([
      'api1',
      'api2',
      'email',
      'offline_access',
      'openid',
      'profile',
      'roles',
    ]);
    expect(body.refresh_token).toBeDefined();
    expect(body.id_token).toBeDefined();
  });

  it('puts the API resource user claims, auth_time and amr into the access token', async () => {
    const before = Math.floor(Date.now() / 1000);
    const body = await passwordTokens(sigil, { username: 'bob', scope: 'api1' });
    const { payload } = await jwtVerify(body.access_token, await fetchJwks(sigil), { issuer: ISSUER, typ: 'at+jwt' });
    expect(payload.sub).toBe('2');
    expect(payload.client_id).toBe('ropc');
    expect(payload.aud).toBe('api1');
    expect(payload.scope).toBe('api1');
    expect(payload.role).toEqual(['user', 'dev']);
    expect(payload.auth_time).toBeGreaterThanOrEqual(before);
    expect(payload.amr).toEqual(['pwd']);
    expect(payload.idp).toBe('local');
    // Identity-resource claims are not access-token claims.
    expect(payload).not.toHaveProperty('name');
  });

  it('keeps a one-element array claim an array (alice role)', async () => {
    const body = await passwordTokens(sigil, { scope: 'api1' });
    const { payload } = await jwtVerify(body.access_token, await fetchJwks(sigil));
    expect(payload.role).toEqual(['admin']);
  });

  it('adds the claims of an API scope (api2 → email) to the access token', async () => {
    const body = await passwordTokens(sigil, { scope: 'api2' });
    const { payload } = await jwtVerify(body.access_token, await fetchJwks(sigil));
    expect(payload.aud).toBe('api2');
    expect(payload.email).toBe('alice@example.com');
    expect(payload).not.toHaveProperty('role');
  });

  it('gives a wrong password and an unknown user the identical invalid_grant body', async () => {
    const wrong = await tokenRequest(sigil, { grant_type: 'password', username: 'alice', password: 'nope' }, ROPC);
    const unknown = await tokenRequest(sigil, { grant_type: 'password', username: 'mallory', password: 'nope' }, ROPC);
    expect(wrong.statusCode).toBe(400);
    expect(unknown.statusCode).toBe(400);
    expect(wrong.json()).toMatchObject({ error: 'invalid_grant' });
    expect(unknown.body).toBe(wrong.body);
    expect(unknown.headers['content-type']).toBe(wrong.headers['content-type']);
  });

  it('compares usernames case-insensitively and passwords exactly', async () => {
    const upper = await tokenRequest(
      sigil,
      { grant_type: 'password', username: 'ALICE', password: 'alice', scope: 'api1' },
      ROPC,
    );
    expect(upper.statusCode).toBe(200);
    const wrongCase = await tokenRequest(
      sigil,
      { grant_type: 'password', username: 'alice', password: 'ALICE', scope: 'api1' },
      ROPC,
    );
    expect(wrongCase.json()).toMatchObject({ error: 'invalid_grant' });
  });

  it('answers a missing username or password with invalid_request', async () => {
    const noUser = await tokenRequest(sigil, { grant_type: 'password', password: 'alice' }, ROPC);
    expect(noUser.statusCode).toBe(400);
    expect(noUser.json()).toMatchObject({ error: 'invalid_request' });
    const noPassword = await tokenRequest(sigil, { grant_type: 'password', username: 'alice' }, ROPC);
    expect(noPassword.statusCode).toBe(400);
    expect(noPassword.json()).toMatchObject({ error: 'invalid_request' });
  });

  it('refuses an inactive user (dave) with the right password exactly as a wrong password; the event keeps the reason', async () => {
    const events: SigilEvent[] = [];
    const unsubscribe = sigil.subscribe((e) => void events.push(e));
    try {
      const inactive = await tokenRequest(sigil, { grant_type: 'password', username: 'dave', password: 'dave' }, ROPC);
      const wrong = await tokenRequest(sigil, { grant_type: 'password', username: 'alice', password: 'wrong' }, ROPC);
      expect(inactive.statusCode).toBe(400);
      expect(inactive.json()).toEqual({ error: 'invalid_grant', error_description: 'invalid username or password' });
      expect(inactive.body).toBe(wrong.body);
      expect(events.filter((e) => e.name === 'user_login_failed')).toEqual([
        expect.objectContaining({ subjectId: '4', errorDescription: 'inactive user' }),
        expect.not.objectContaining({ subjectId: expect.anything() }),
      ]);
    } finally {
      unsubscribe();
    }
  });

  it('refuses scopes beyond the client with invalid_scope', async () => {
    const res = await tokenRequest(
      sigil,
      { grant_type: 'password', username: 'alice', password: 'alice', scope: 'openid api2' },
      ['ropc-ref', 'ropc-secret'],
    );
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ error: 'invalid_scope' });
  });

  describe('tenants (acr_values=tenant:<name>)', () => {
    it('finds carol within tenant acme', async () => {
      const body = await passwordTokens(sigil, {
        username: 'carol',
        scope: 'openid',
        extra: { acr_values: 'tenant:acme' },
      });
      const { payload } = await jwtVerify(body.id_token!, await fetchJwks(sigil));
      expect(payload.sub).toBe('3');
    });

    it('finds carol without a tenant, because the username names exactly one user', async () => {
      const body = await passwordTokens(sigil, { username: 'carol', scope: 'openid' });
      const { payload } = await jwtVerify(body.id_token!, await fetchJwks(sigil));
      expect(payload.sub).toBe('3');
    });

    it('does not find carol in another tenant, nor alice (no tenant) in acme', async () => {
      for (const [username, tenant] of [
        ['carol', 'globex'],
        ['alice', 'acme'],
      ] as const) {
        const res = await tokenRequest(
          sigil,
          { grant_type: 'password', username, password: username, acr_values: `tenant:${tenant}` },
          ROPC,
        );
        expect(res.statusCode).toBe(400);
        expect(res.json()).toMatchObject({ error: 'invalid_grant' });
      }
    });

    it('refuses a username that names users in several tenants unless the tenant is given', async () => {
      const ambiguous = await tokenRequest(sigil, { grant_type: 'password', username: 'erin', password: 'erin' }, ROPC);
      expect(ambiguous.statusCode).toBe(400);
      expect(ambiguous.json()).toMatchObject({ error: 'invalid_grant' });
      const jwks = await fetchJwks(sigil);
      for (const [tenant, sub] of [
        ['acme', '5'],
        ['globex', '6'],
      ] as const) {
        const body = await passwordTokens(sigil, {
          username: 'erin',
          scope: 'openid',
          extra: { acr_values: `tenant:${tenant}` },
        });
        expect((await jwtVerify(body.id_token!, jwks)).payload.sub).toBe(sub);
      }
    });
  });

  describe('identity provider restrictions (acr_values=idp:<name>)', () => {
    it("refuses an idp outside the client's identityProviderRestrictions with invalid_grant", async () => {
      const res = await tokenRequest(
        sigil,
        { grant_type: 'password', username: 'alice', password: 'alice', scope: 'api1', acr_values: 'idp:x' },
        ['restricted', 'restricted-secret'],
      );
      expect(res.statusCode).toBe(400);
      expect(res.json()).toMatchObject({ error: 'invalid_grant' });
    });

    it('allows an idp the client lists', async () => {
      const res = await tokenRequest(
        sigil,
        { grant_type: 'password', username: 'alice', password: 'alice', scope: 'api1', acr_values: 'idp:corp' },
        ['restricted', 'restricted-secret'],
      );
      expect(res.statusCode).toBe(200);
    });

    it('allows any idp when the restrictions are empty', async () => {
      const res = await tokenRequest(
        sigil,
        { grant_type: 'password', username: 'alice', password: 'alice', scope: 'api1', acr_values: 'idp:x' },
        ROPC,
      );
      expect(res.statusCode).toBe(200);
    });
  });
});

describe('password grant brute-force limit', () => {
  let sigil: TestSigil;
  beforeAll(async () => {
    sigil = await startSigil({ rateLimits: { maxFailures: 3, windowSeconds: 60 } });
  });
  afterAll(async () => sigil.close());

  const attempt = (username: string, password: string, remoteAddress: string) =>
    sigil.app.inject({
      method: 'POST',
      url: '/connect/token',
      remoteAddress,
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        authorization: `Basic ${Buffer.from('ropc:ropc-secret').toString('base64')}`,
      },
      payload: new URLSearchParams({ grant_type: 'password', username, password, scope: 'api1' }).toString(),
    });

  it('answers 429 with Retry-After for the user and address after maxFailures, even with the right password; not from another address', async () => {
    for (let i = 0; i < 3; i++) expect((await attempt('bob', 'wrong', '10.1.0.1')).statusCode).toBe(400);
    const blocked = await attempt('bob', 'bob', '10.1.0.1');
    expect(blocked.statusCode).toBe(429);
    expect(Number(blocked.headers['retry-after'])).toBeGreaterThan(0);
    expect((await attempt('bob', 'bob', '10.1.0.4')).statusCode).toBe(200);
  });

  it('counts an inactive user with the right password as a failure', async () => {
    for (let i = 0; i < 3; i++) expect((await attempt('dave', 'dave', '10.1.1.1')).statusCode).toBe(400);
    expect((await attempt('dave', 'dave', '10.1.1.1')).statusCode).toBe(429);
  });
});
