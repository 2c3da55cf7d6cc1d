/**
 * The authorization_code grant (RFC 6749 §4.1.3, §10.5): codes are single use (of two concurrent
 * redemptions exactly one succeeds), bound to their client, redirect URI, PKCE and nonce; a failed
 * redemption leaves the code usable; a replay revokes what the code gave.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { form, sleep, type TestSigil } from '../helpers.js';
import {
  authorizeUrl,
  Browser,
  CB,
  CB2,
  codeParams,
  getCode,
  isActive,
  pkce,
  readResponse,
  redeem,
  startAuthorizeSigil,
  verifyIdToken,
} from '../authorize-helpers.js';

let sigil: TestSigil;
let b: Browser;
const { verifier, challenge } = pkce();

beforeAll(async () => {
  sigil = await startAuthorizeSigil();
  b = new Browser(sigil);
  await b.signIn('alice');
});
afterAll(async () => sigil.close());

const code = (extra: Record<string, string> = {}) => getCode(b, codeParams(challenge, extra));

function refresh(token: string, client = 'web') {
  return sigil.app.inject({
    method: 'POST',
    url: '/connect/token',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      authorization: `Basic ${Buffer.from(`${client}:${client}-secret`).toString('base64')}`,
    },
    payload: form({ grant_type: 'refresh_token', refresh_token: token }),
  });
}

function userinfo(accessToken: string) {
  return sigil.app.inject({
    method: 'GET',
    url: '/connect/userinfo',
    headers: { authorization: `Bearer ${accessToken}` },
  });
}

describe('success shape', () => {
  it('JSON, no-store, Bearer, integer expires_in, granted scope; refresh token only with offline_access', async () => {
    const res = await redeem(sigil, await code(), { verifier });
    expect(res.statusCode).toBe(200);
    expect(String(res.headers['content-type'])).toMatch(/^application\/json/);
    expect(String(res.headers['cache-control'])).toContain('no-store');
    expect(res.headers.pragma).toBe('no-cache');
    const body = res.json();
    expect(body.token_type).toBe('Bearer');
    expect(Number.isInteger(body.expires_in)).toBe(true);
    expect(body.scope.split(' ').sort()).toEqual(['api1', 'offline_access', 'openid', 'profile']);
    expect(body.refresh_token).toBeTypeOf('string');
    const noOffline = (await redeem(sigil, await code({ scope: 'openid api1' }), { verifier })).json();
    expect(noOffline).not.toHaveProperty('refresh_token');
    expect(noOffline.id_token).toBeTypeOf('string');
  });

  it('no openid → no identity token; with openid always one', async () => {
    const apiOnly = (await redeem(sigil, await code({ scope: 'api1' }), { verifier })).json();
    expect(apiOnly.access_token).toBeTypeOf('string');
    expect(apiOnly).not.toHaveProperty('id_token');
    const oidc = (await redeem(sigil, await code({ scope: 'openid' }), { verifier })).json();
    expect(oidc.id_token).toBeTypeOf('string');
  });

  it('the code carries the nonce into the identity token; a refreshed identity token keeps sub and auth_time', async () => {
    const first = (await redeem(sigil, await code({ nonce: 'bound-nonce' }), { verifier })).json();
    const id1 = (await verifyIdToken(sigil, first.id_token, 'web')).claims;
    expect(id1.nonce).toBe('bound-nonce');
    const next = await refresh(first.refresh_token);
    expect(next.statusCode, next.body).toBe(200);
    const id2 = (await verifyIdToken(sigil, next.json().id_token, 'web')).claims;
    expect(id2.sub).toBe(id1.sub);
    expect(id2.auth_time).toBe(id1.auth_time);
    expect(id2.iss).toBe(id1.iss);
    if ('nonce' in id2) expect(id2.nonce).toBe('bound-nonce');
  });
});

describe('a code is single use; a replay revokes what it gave', () => {
  it('the second and third redemption fail; the first access and refresh tokens die', async () => {
    const c = await code();
    const first = await redeem(sigil, c, { verifier });
    expect(first.statusCode).toBe(200);
    const tokens = first.json();
    expect(await isActive(sigil, tokens.access_token)).toBe(true);
    expect((await userinfo(tokens.access_token)).statusCode).toBe(200);

    const second = await redeem(sigil, c, { verifier });
    expect(second.statusCode).toBe(400);
    expect(second.json().error).toBe('invalid_grant');
    await sleep(1000);
    expect((await redeem(sigil, c, { verifier })).json().error).toBe('invalid_grant');

    expect(await isActive(sigil, tokens.access_token)).toBe(false);
    const info = await userinfo(tokens.access_token);
    expect(info.statusCode).toBe(401);
    expect(String(info.headers['www-authenticate'])).toContain('invalid_token');
    const r = await refresh(tokens.refresh_token);
    expect(r.statusCode).toBe(400);
    expect(r.json().error).toBe('invalid_grant');
  });

  it('tokens from a refresh of that grant die too', async () => {
    const c = await code();
    const tokens = (await redeem(sigil, c, { verifier })).json();
    const refreshed = (await refresh(tokens.refresh_token)).json();
    expect(await isActive(sigil, refreshed.access_token)).toBe(true);
    expect((await redeem(sigil, c, { verifier })).json().error).toBe('invalid_grant');
    expect(await isActive(sigil, refreshed.access_token)).toBe(false);
    expect((await refresh(refreshed.refresh_token)).json().error).toBe('invalid_grant');
  });

  it('hybrid: the access token given with the code at the authorization endpoint dies on a replay', async () => {
    const r = readResponse(
      await b.get(
        authorizeUrl({
          client_id: 'hybrid',
          redirect_uri: CB,
          response_type: 'code token',
          scope: 'openid api1',
          state: 's',
          code_challenge: challenge,
          code_challenge_method: 'S256',
        }),
      ),
    );
    const front = r.params.get('access_token')!;
    const c = r.params.get('code')!;
    expect((await redeem(sigil, c, { client: 'hybrid', verifier })).statusCode).toBe(200);
    expect(await isActive(sigil, front)).toBe(true);
    expect((await redeem(sigil, c, { client: 'hybrid', verifier })).json().error).toBe('invalid_grant');
    expect(await isActive(sigil, front)).toBe(false);
  });

  it('two concurrent redemptions: exactly one succeeds', async () => {
    for (let round = 0; round < 3; round++) {
      const c = await code();
      const results = await Promise.all([
        redeem(sigil, c, { verifier }),
        redeem(sigil, c, { verifier }),
        redeem(sigil, c, { verifier }),
      ]);
      expect(results.filter((r) => r.statusCode === 200)).toHaveLength(1);
      for (const r of results.filter((x) => x.statusCode !== 200)) expect(r.json().error).toBe('invalid_grant');
    }
  });

  it('an unknown, malformed or repeated code is refused', async () => {
    expect((await redeem(sigil, 'nope', { verifier })).json().error).toBe('invalid_grant');
    expect((await redeem(sigil, 'x'.repeat(5000), { verifier })).json().error).toBe('invalid_grant');
    const c = await code();
    const twice = await sigil.app.inject({
      method: 'POST',
      url: '/connect/token',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        authorization: `Basic ${Buffer.from('web:web-secret').toString('base64')}`,
      },
      payload: `${form({ grant_type: 'authorization_code', code: c, redirect_uri: CB, code_verifier: verifier })}&code=${c}`,
    });
    expect(twice.json().error).toBe('invalid_request');
    expect((await redeem(sigil, c, { verifier })).statusCode).toBe(200);
  });
});

describe('a code is bound to its client', () => {
  it('another client (with its valid secret) cannot redeem it; the owner still can', async () => {
    const c = await code();
    const stolen = await redeem(sigil, c, { client: 'other', verifier });
    expect(stolen.statusCode).toBe(400);
    expect(stolen.json().error).toBe('invalid_grant');
    const publicTry = await redeem(sigil, c, { client: 'spa', secret: null, verifier });
    expect(publicTry.json().error).toBe('invalid_grant');
    expect((await redeem(sigil, c, { verifier })).statusCode).toBe(200);
  });

  it('the owner must authenticate', async () => {
    const c = await code();
    const wrongSecret = await redeem(sigil, c, { secret: 'wrong', verifier });
    expect(wrongSecret.statusCode).toBe(401);
    expect(wrongSecret.json().error).toBe('invalid_client');
    const noSecret = await redeem(sigil, c, { secret: null, verifier });
    expect(noSecret.statusCode).toBe(401);
    expect((await redeem(sigil, c, { verifier })).statusCode).toBe(200);
  });
});

describe('the redirect URI must equal the authorization request value', () => {
  it('a different value → invalid_grant, none → invalid_request; the right value still works', async () => {
    const c = await code();
    for (const uri of ['https://rp.example/cb/', 'https://RP.example/cb', CB2, 'https://rp.example/cb?']) {
      const res = await redeem(sigil, c, { redirectUri: uri, verifier });
      expect(res.statusCode, uri).toBe(400);
      expect(res.json().error).toBe('invalid_grant');
    }
    const missing = await redeem(sigil, c, { redirectUri: null, verifier });
    expect(missing.statusCode).toBe(400);
    expect(missing.json().error).toBe('invalid_request');
    expect((await redeem(sigil, c, { verifier })).statusCode).toBe(200);
  });

  it('a code issued for the URI with a query is redeemed with exactly that URI', async () => {
    const c = await code({ redirect_uri: CB2 });
    expect((await redeem(sigil, c, { redirectUri: CB, verifier })).json().error).toBe('invalid_grant');
    expect((await redeem(sigil, c, { redirectUri: CB2, verifier })).statusCode).toBe(200);
  });
});

describe('codes expire', () => {
  it('a code of a client with a 1 s lifetime is refused after 2 s', async () => {
    const c = await getCode(b, codeParams(challenge, { client_id: 'short-code' }));
    await sleep(2100);
    const res = await redeem(sigil, c, { client: 'short-code', verifier });
    expect(res.statusCode).toBe(400);
    expect(res.json().error).toBe('invalid_grant');
  });
});
