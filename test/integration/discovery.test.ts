/**
 * Discovery, JWKS, CORS and health (OIDC Discovery §3-4; RFC 7517).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { form, startSigil, testConfig, type TestSigil } from '../helpers.js';

const ISSUER = 'http://127.0.0.1:5999';
const DISC = '/.well-known/openid-configuration';
const JWKS = '/.well-known/openid-configuration/jwks';

describe('discovery', () => {
  let sigil: TestSigil;
  beforeAll(async () => {
    sigil = await startSigil();
  });
  afterAll(async () => sigil.close());

  const get = (url: string, headers: Record<string, string> = {}) => sigil.app.inject({ method: 'GET', url, headers });

  it('publishes the configured issuer and endpoint URLs under it', async () => {
    const res = await get(DISC);
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    const doc = res.json<Record<string, unknown>>();
    expect(doc.issuer).toBe(ISSUER);
    expect(doc).toMatchObject({
      jwks_uri: `${ISSUER}${JWKS}`,
      token_endpoint: `${ISSUER}/connect/token`,
      userinfo_endpoint: `${ISSUER}/connect/userinfo`,
      introspection_endpoint: `${ISSUER}/connect/introspect`,
      revocation_endpoint: `${ISSUER}/connect/revocation`,
      subject_types_supported: ['public'],
    });
    for (const [name, value] of Object.entries(doc))
      if (name.endsWith('_endpoint') || name.endsWith('_uri')) expect(value, name).toMatch(new RegExp(`^${ISSUER}/`));
    expect(doc.id_token_signing_alg_values_supported).toContain('RS256');
    expect(doc.scopes_supported).toEqual(
      expect.arrayContaining(['openid', 'profile', 'email', 'api1', 'api2', 'offline_access']),
    );
    expect(doc.code_challenge_methods_supported).toEqual(['S256']);
  });

  it('advertises only grant types some client may use', async () => {
    const doc = (await get(DISC)).json<{ grant_types_supported: string[] }>();
    const clients = testConfig().clients ?? [];
    // Clients of metadata documents (on by default) use the code flow and refresh tokens.
    const used = new Set([
      'authorization_code',
      'refresh_token',
      ...clients.flatMap((c) => [...c.allowedGrantTypes, ...(c.allowOfflineAccess ? ['refresh_token'] : [])]),
    ]);
    for (const g of doc.grant_types_supported) expect(used.has(g), g).toBe(true);
    expect(doc.grant_types_supported).toEqual(
      expect.arrayContaining([
        'client_credentials',
        'password',
        'refresh_token',
        'urn:ietf:params:oauth:grant-type:token-exchange',
      ]),
    );
  });

  it('cannot be steered by Host or X-Forwarded-* headers', async () => {
    const plain = (await get(DISC)).body;
    const spoofed: Record<string, string>[] = [
      { host: 'evil.example' },
      { 'x-forwarded-host': 'evil.example', 'x-forwarded-proto': 'https' },
      { forwarded: 'host=evil.example;proto=https' },
      { host: 'evil.example:8443', 'x-forwarded-host': 'evil2.example', 'x-forwarded-port': '444' },
    ];
    for (const headers of spoofed) {
      const res = await get(DISC, headers);
      expect(res.statusCode).toBe(200);
      expect(res.body).toBe(plain);
      expect(res.body).not.toContain('evil');
    }
  });

  it('cannot be steered by headers even when a proxy is trusted', async () => {
    const proxied = await startSigil({ trustProxy: ['127.0.0.1'] });
    try {
      const res = await proxied.app.inject({
        method: 'GET',
        url: DISC,
        headers: { 'x-forwarded-host': 'evil.example', 'x-forwarded-proto': 'https' },
      });
      const doc = res.json<Record<string, unknown>>();
      expect(doc.issuer).toBe(ISSUER);
      expect(res.body).not.toContain('evil');
    } finally {
      await proxied.close();
    }
  });

  it('publishes public signing keys only: kid, use sig, alg, no private members', async () => {
    const res = await get(JWKS);
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(res.headers['cache-control']).toMatch(/max-age=\d+/);
    const { keys } = res.json<{ keys: Record<string, unknown>[] }>();
    expect(keys.length).toBeGreaterThanOrEqual(2);
    const algs = keys.map((k) => k.alg);
    expect(algs).toEqual(expect.arrayContaining(['RS256', 'ES256']));
    for (const key of keys) {
      expect(key.kid).toEqual(expect.any(String));
      expect(key.use).toBe('sig');
      expect(['RSA', 'EC', 'OKP']).toContain(key.kty);
      for (const secret of ['d', 'p', 'q', 'dp', 'dq', 'qi', 'k', 'oth'])
        expect(key, `${String(key.kid)} ${secret}`).not.toHaveProperty(secret);
    }
    expect(new Set(keys.map((k) => k.kid)).size).toBe(keys.length);
  });

  it('answers POST, PUT and DELETE on discovery and the JWKS with 405 and Allow: GET', async () => {
    for (const url of [DISC, JWKS]) {
      for (const method of ['POST', 'PUT', 'DELETE'] as const) {
        const res = await sigil.app.inject({ method, url });
        expect(res.statusCode, `${method} ${url}`).toBe(405);
        expect(res.headers.allow).toBe('GET');
      }
    }
  });

  describe('CORS', () => {
    const tokenPost = (origin: string) =>
      sigil.app.inject({
        method: 'POST',
        url: '/connect/token',
        headers: { origin, 'content-type': 'application/x-www-form-urlencoded' },
        payload: form({
          grant_type: 'password',
          username: 'alice',
          password: 'alice',
          scope: 'api1',
          client_id: 'spa',
        }),
      });

    it('allows a registered origin on /connect/token', async () => {
      const res = await tokenPost('https://spa.example');
      expect(res.statusCode).toBe(200);
      expect(res.headers['access-control-allow-origin']).toBe('https://spa.example');
    });

    it('does not allow an unregistered origin', async () => {
      for (const origin of ['https://evil.example', 'https://spa.example.evil.example', 'http://spa.example', 'null']) {
        const res = await tokenPost(origin);
        expect(res.headers['access-control-allow-origin'], origin).toBeUndefined();
      }
    });

    it('answers a preflight for a registered origin only', async () => {
      const preflight = (origin: string) =>
        sigil.app.inject({
          method: 'OPTIONS',
          url: '/connect/token',
          headers: {
            origin,
            'access-control-request-method': 'POST',
            'access-control-request-headers': 'content-type',
          },
        });
      const ok = await preflight('https://spa.example');
      expect(ok.statusCode).toBeLessThan(300);
      expect(ok.headers['access-control-allow-origin']).toBe('https://spa.example');
      expect(String(ok.headers['access-control-allow-methods'])).toContain('POST');
      const evil = await preflight('https://evil.example');
      expect(evil.headers['access-control-allow-origin']).toBeUndefined();
    });

    it('allows the registered origin on discovery and the JWKS', async () => {
      for (const url of [DISC, JWKS]) {
        expect((await get(url, { origin: 'https://spa.example' })).headers['access-control-allow-origin']).toBe(
          'https://spa.example',
        );
        expect(
          (await get(url, { origin: 'https://evil.example' })).headers['access-control-allow-origin'],
        ).toBeUndefined();
      }
    });

    it('does not allow CORS on introspection', async () => {
      const res = await sigil.app.inject({
        method: 'POST',
        url: '/connect/introspect',
        headers: { origin: 'https://spa.example', 'content-type': 'application/x-www-form-urlencoded' },
        payload: form({ token: 'x' }),
      });
      expect(res.headers['access-control-allow-origin']).toBeUndefined();
    });
  });

  it('answers /healthz and /readyz with 200', async () => {
    const health = await get('/healthz');
    expect(health.statusCode).toBe(200);
    expect(health.json()).toEqual({ status: 'ok' });
    const ready = await get('/readyz');
    expect(ready.statusCode).toBe(200);
    expect(ready.json()).toEqual({ status: 'ready' });
  });

  it('sends no X-Powered-By and no version in Server', async () => {
    const res = await get(DISC);
    expect(res.headers['x-powered-by']).toBeUndefined();
    expect(res.headers.server ?? '').not.toMatch(/\d/);
  });
});
