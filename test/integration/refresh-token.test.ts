/**
 * Refresh tokens (RFC 6749 §6; RFC 9700 §4.14.2):
 * rotation with family revocation on reuse, reuse mode, absolute and sliding expiry, narrowing,
 * client binding, and one winner among concurrent redemptions.
 */
import { decodeJwt, jwtVerify } from 'jose';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import {
  type BasicCredentials,
  fetchJwks,
  introspect,
  passwordTokens,
  postForm,
  startSigil,
  testConfig,
  tokenRequest,
  type TestSigil,
} from '../helpers.js';
import { proof, proofKey } from '../dpop-helpers.js';

const ROPC: BasicCredentials = ['ropc', 'ropc-secret'];

describe('refresh_token grant', () => {
  let sigil: TestSigil;
  beforeAll(async () => {
    const base = testConfig();
    const shortLived = {
      clientSecrets: ['s'],
      allowedGrantTypes: ['password'],
      allowedScopes: ['openid', 'api1', 'offline_access'],
      allowOfflineAccess: true,
    };
    sigil = await startSigil({
      rateLimits: { maxFailures: 1000, windowSeconds: 60 },
      clients: [
        ...(base.clients ?? []),
        // Absolute: 4 s from the first issuance, whatever the rotations.
        { clientId: 'abs', ...shortLived, refreshTokenExpiration: 'absolute', absoluteRefreshTokenLifetime: 4 },
        // Sliding: 4 s from the last use, capped at 100 s.
        {
          clientId: 'slide',
          ...shortLived,
          refreshTokenExpiration: 'sliding',
          slidingRefreshTokenLifetime: 4,
          absoluteRefreshTokenLifetime: 100,
          refreshTokenUsage: 'reuse',
        },
        // Sliding, but the absolute cap (6 s) ends what the sliding window (4 s) would extend.
        {
          clientId: 'capped',
          ...shortLived,
          refreshTokenExpiration: 'sliding',
          slidingRefreshTokenLifetime: 4,
          absoluteRefreshTokenLifetime: 6,
        },
      ],
    });
  });
  afterAll(async () => sigil.close());

  const refresh = (token: string, client: BasicCredentials = ROPC, extra: Record<string, string> = {}) =>
    tokenRequest(sigil, { grant_type: 'refresh_token', refresh_token: token, ...extra }, client);

  it('rotates a oneTime refresh token and answers with the full token response', async () => {
    const first = await passwordTokens(sigil, { scope: 'openid api1 offline_access' });
    const res = await refresh(first.refresh_token!);
    expect(res.statusCode).toBe(200);
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.headers.pragma).toBe('no-cache');
    const body = res.json<Record<string, string>>();
    expect(body).toMatchObject({ token_type: 'Bearer', expires_in: 3600, scope: 'openid api1 offline_access' });
    expect(body.refresh_token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(body.refresh_token).not.toBe(first.refresh_token);
    expect(body.access_token).not.toBe(first.access_token);
    // OIDC Core §12.2: same iss, sub, aud and auth_time as the original ID token.
    const jwks = await fetchJwks(sigil);
    const original = (await jwtVerify(first.id_token!, jwks)).payload;
    const renewed = (await jwtVerify(body.id_token!, jwks)).payload;
    expect(renewed).toMatchObject({
      iss: original.iss,
      sub: original.sub,
      aud: original.aud,
      auth_time: original.auth_time,
    });
  });

  it('revokes the whole family when a used oneTime refresh token comes back', async () => {
    const first = await passwordTokens(sigil, { scope: 'openid api1 offline_access' });
    const second = (await refresh(first.refresh_token!)).json<{ refresh_token: string; access_token: string }>();
    expect((await introspect(sigil, second.access_token)).json()).toMatchObject({ active: true });

    const replay = await refresh(first.refresh_token!);
    expect(replay.statusCode).toBe(400);
    expect(replay.json()).toMatchObject({ error: 'invalid_grant' });

    const next = await refresh(second.refresh_token);
    expect(next.statusCode).toBe(400);
    expect(next.json()).toMatchObject({ error: 'invalid_grant' });
    expect((await introspect(sigil, second.access_token)).json()).toEqual({ active: false });
    expect((await introspect(sigil, first.access_token)).json()).toEqual({ active: false });
    expect((await introspect(sigil, second.refresh_token, ROPC)).json()).toEqual({ active: false });
  });

  it('returns the same refresh token in reuse mode (ropc-ref)', async () => {
    const first = await passwordTokens(sigil, {
      client: ['ropc-ref', 'ropc-secret'],
      scope: 'openid api1 offline_access',
    });
    for (let i = 0; i < 2; i++) {
      const res = await refresh(first.refresh_token!, ['ropc-ref', 'ropc-secret']);
      expect(res.statusCode).toBe(200);
      const body = res.json<{ refresh_token: string; access_token: string }>();
      expect(body.refresh_token).toBe(first.refresh_token);
      expect(body.access_token).toMatch(/^[A-Za-z0-9_-]{43}$/);
      expect(body.access_token).not.toBe(first.access_token);
    }
  });

  describe('once bound, always bound', () => {
    const TOKEN_URL = `${testConfig().issuer}/connect/token`;
    const withProof = async (token: string, client: BasicCredentials, key?: Awaited<ReturnType<typeof proofKey>>) =>
      postForm(
        sigil,
        '/connect/token',
        { grant_type: 'refresh_token', refresh_token: token },
        client,
        key ? { dpop: await proof(key, TOKEN_URL) } : {},
      );
    const expectRefused = (res: { statusCode: number; json: () => unknown }) => {
      expect(res.statusCode).toBe(400);
      expect(res.json()).toMatchObject({ error: 'invalid_grant' });
    };

    for (const [usage, client] of [
      ['oneTime', ROPC],
      ['reuse', ['ropc-ref', 'ropc-secret']],
    ] as const) {
      it(`binds an unbound grant (${usage}) to the key of the first refresh with a proof; later refreshes need that key`, async () => {
        const [key, other] = await Promise.all([proofKey(), proofKey()]);
        const first = await passwordTokens(sigil, { client, scope: 'openid api1 offline_access' });
        // A grant stored unbound (as every grant from before the binding was recorded) refreshes without a proof.
        const bearer = await withProof(first.refresh_token!, client);
        expect(bearer.statusCode, bearer.body).toBe(200);
        expect(bearer.json<{ token_type: string }>().token_type).toBe('Bearer');
        const bound = await withProof(bearer.json<{ refresh_token: string }>().refresh_token, client, key);
        expect(bound.statusCode, bound.body).toBe(200);
        const body = bound.json<{ token_type: string; access_token: string; refresh_token: string }>();
        expect(body.token_type).toBe('DPoP');
        expect((await introspect(sigil, body.access_token)).json()).toMatchObject({
          active: true,
          cnf: { jkt: key.jkt },
        });
        expectRefused(await withProof(body.refresh_token, client));
        expectRefused(await withProof(body.refresh_token, client, other));
        const again = await withProof(body.refresh_token, client, key);
        expect(again.statusCode, again.body).toBe(200);
        expect(again.json<{ token_type: string }>().token_type).toBe('DPoP');
        if (usage === 'oneTime')
          expect(decodeJwt(again.json<{ access_token: string }>().access_token).cnf).toEqual({ jkt: key.jkt });
      });
    }
  });

  it('allows a narrower scope: the access token carries only it, the ID token only while openid stays', async () => {
    const first = await passwordTokens(sigil, { scope: 'openid profile api1 api2 offline_access' });
    const narrow = await refresh(first.refresh_token!, ROPC, { scope: 'api1' });
    expect(narrow.statusCode).toBe(200);
    const body = narrow.json<{ scope: string; access_token: string; id_token?: string; refresh_token: string }>();
    expect(body.scope).toBe('api1');
    expect(body.id_token).toBeUndefined();
    const jwks = await fetchJwks(sigil);
    const { payload } = await jwtVerify(body.access_token, jwks);
    expect(payload.scope).toBe('api1');
    expect(payload.aud).toBe('api1');

    // The refresh token keeps the original grant (RFC 6749 §6): openid can come back.
    const withOpenid = await refresh(body.refresh_token, ROPC, { scope: 'openid api2' });
    expect(withOpenid.statusCode).toBe(200);
    const again = withOpenid.json<{ scope: string; id_token?: string; access_token: string }>();
    expect(again.scope).toBe('openid api2');
    expect(again.id_token).toEqual(expect.any(String));
    expect((await jwtVerify(again.access_token, jwks)).payload.aud).toBe('api2');
  });

  it('refuses a wider scope with invalid_scope and leaves the refresh token usable', async () => {
    const first = await passwordTokens(sigil, { scope: 'openid api1 offline_access' });
    for (const scope of ['openid api1 api2', 'openid api1 admin', 'profile']) {
      const res = await refresh(first.refresh_token!, ROPC, { scope });
      expect(res.statusCode, scope).toBe(400);
      expect(res.json()).toMatchObject({ error: 'invalid_scope' });
    }
    expect((await refresh(first.refresh_token!)).statusCode).toBe(200);
  });

  it("refuses another client's refresh token with invalid_grant, and the owner can still use it", async () => {
    const first = await passwordTokens(sigil, { scope: 'openid api1 offline_access' });
    const stolen = await refresh(first.refresh_token!, ['other', 'other-secret']);
    expect(stolen.statusCode).toBe(400);
    expect(stolen.json()).toMatchObject({ error: 'invalid_grant' });
    const own = await refresh(first.refresh_token!);
    expect(own.statusCode).toBe(200);
  });

  it('refuses unknown, tampered and missing refresh tokens', async () => {
    const first = await passwordTokens(sigil, { scope: 'api1 offline_access' });
    const rt = first.refresh_token!;
    const flipped = rt.slice(0, 20) + (rt[20] === 'A' ? 'B' : 'A') + rt.slice(21);
    for (const token of [flipped, rt.slice(0, -1), 'a'.repeat(66), 'x'.repeat(600), first.access_token]) {
      const res = await refresh(token);
      expect(res.statusCode).toBe(400);
      expect(res.json()).toMatchObject({ error: 'invalid_grant' });
    }
    const missing = await tokenRequest(sigil, { grant_type: 'refresh_token' }, ROPC);
    expect(missing.statusCode).toBe(400);
    expect(missing.json()).toMatchObject({ error: 'invalid_request' });
    // None of that touched the real one.
    expect((await refresh(rt)).statusCode).toBe(200);
  });

  it('requires the confidential client to authenticate', async () => {
    const first = await passwordTokens(sigil, { scope: 'api1 offline_access' });
    const res = await tokenRequest(sigil, {
      grant_type: 'refresh_token',
      refresh_token: first.refresh_token!,
      client_id: 'ropc',
    });
    expect(res.statusCode).toBe(401);
    expect(res.json()).toMatchObject({ error: 'invalid_client' });
  });

  it("rotates the public client's (spa) refresh tokens too", async () => {
    // The public client authenticates by client_id in the body.
    const issued = (
      await tokenRequest(sigil, {
        grant_type: 'password',
        username: 'alice',
        password: 'alice',
        scope: 'openid offline_access',
        client_id: 'spa',
      })
    ).json<{ refresh_token: string }>();
    const res = await tokenRequest(sigil, {
      grant_type: 'refresh_token',
      refresh_token: issued.refresh_token,
      client_id: 'spa',
    });
    expect(res.statusCode).toBe(200);
    expect(res.json<{ refresh_token: string }>().refresh_token).not.toBe(issued.refresh_token);
  });

  it('lets exactly one of 20 concurrent redemptions of a oneTime refresh token succeed, then kills the family', async () => {
    for (let round = 0; round < 5; round++) {
      const first = await passwordTokens(sigil, { scope: 'openid api1 offline_access' });
      const results = await Promise.all(Array.from({ length: 20 }, () => refresh(first.refresh_token!)));
      const statuses = results.map((r) => r.statusCode);
      expect(statuses.filter((s) => s === 200)).toHaveLength(1);
      expect(statuses.filter((s) => s === 400)).toHaveLength(19);
      for (const r of results.filter((x) => x.statusCode === 400))
        expect(r.json()).toMatchObject({ error: 'invalid_grant' });
      // The losers presented a used token: the winner's tokens die with the family.
      const winner = results.find((r) => r.statusCode === 200)!.json<{ refresh_token: string; access_token: string }>();
      const next = await refresh(winner.refresh_token);
      expect(next.statusCode).toBe(400);
      expect(next.json()).toMatchObject({ error: 'invalid_grant' });
      expect((await introspect(sigil, winner.access_token)).json()).toEqual({ active: false });
    }
  });

  describe('expiry', () => {
    // Sigil's clock (Date only; timers run as usual) is set to each step instead of sleeping
    // through it: with real sleeps a slow machine could push a use that must still succeed past
    // the 4 s or 6 s lifetime. Steps start on a whole second (token times are whole seconds).
    let t0 = 0;
    const at = (seconds: number) => vi.setSystemTime(t0 + seconds * 1000);
    beforeEach(() => {
      t0 = (Math.floor(Date.now() / 1000) + 1) * 1000;
      vi.useFakeTimers({ toFake: ['Date'], now: t0 });
    });
    afterEach(() => {
      vi.useRealTimers();
    });

    it('absolute: rotation does not extend the lifetime', async () => {
      const client: BasicCredentials = ['abs', 's'];
      const first = await passwordTokens(sigil, { client, scope: 'api1 offline_access' });
      at(2);
      const rotated = await refresh(first.refresh_token!, client);
      expect(rotated.statusCode).toBe(200);
      const rt2 = rotated.json<{ refresh_token: string }>().refresh_token;
      at(4.1);
      // Past 4 s from the first issuance: the rotated token expired with its family.
      const late = await refresh(rt2, client);
      expect(late.statusCode).toBe(400);
      expect(late.json()).toMatchObject({ error: 'invalid_grant' });
    });

    it('sliding: each use extends the lifetime, an unused token expires', async () => {
      const client: BasicCredentials = ['slide', 's'];
      const first = await passwordTokens(sigil, { client, scope: 'api1 offline_access' });
      at(2);
      expect((await refresh(first.refresh_token!, client)).statusCode).toBe(200);
      at(4.1);
      // More than 4 s after issuance: alive only because the previous use slid the window.
      const slid = await refresh(first.refresh_token!, client);
      expect(slid.statusCode).toBe(200);
      expect(slid.json<{ refresh_token: string }>().refresh_token).toBe(first.refresh_token);
      at(8.7);
      // 4.6 s after the last use.
      const idle = await refresh(first.refresh_token!, client);
      expect(idle.statusCode).toBe(400);
      expect(idle.json()).toMatchObject({ error: 'invalid_grant' });
    });

    it('sliding: the absolute lifetime caps the window', async () => {
      const client: BasicCredentials = ['capped', 's'];
      let rt = (await passwordTokens(sigil, { client, scope: 'api1 offline_access' })).refresh_token!;
      for (const step of [2, 4]) {
        at(step);
        const res = await refresh(rt, client);
        expect(res.statusCode).toBe(200);
        rt = res.json<{ refresh_token: string }>().refresh_token;
      }
      at(6.2);
      // 6.2 s after issuance: inside the last sliding window (4 s) but past the absolute 6 s.
      const res = await refresh(rt, client);
      expect(res.statusCode).toBe(400);
      expect(res.json()).toMatchObject({ error: 'invalid_grant' });
    });
  });
});
