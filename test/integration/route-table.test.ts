/**
 * The route table is the one registration of an endpoint: every endpoint that discovery names is
 * served, and cross-origin requests are answered exactly on the paths the table marks for CORS.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSigil, testConfig, type TestSigil } from '../helpers.js';

const ISSUER = 'http://127.0.0.1:5999';
const ORIGIN = 'https://spa.example';

describe('route table', () => {
  let sigil: TestSigil;
  beforeAll(async () => {
    const base = testConfig();
    const clients = (base.clients ?? []).map((c, i) => (i === 0 ? { ...c, allowedCorsOrigins: [ORIGIN] } : c));
    sigil = await startSigil(testConfig({ clients, registration: { enabled: true } }));
  });
  afterAll(async () => sigil.close());

  it('serves every endpoint that discovery names, and discovery names the registration endpoint only when it is served', async () => {
    const doc = (await sigil.app.inject({ method: 'GET', url: '/.well-known/openid-configuration' })).json<
      Record<string, unknown>
    >();
    const fields = Object.entries(doc).filter(([name]) => name.endsWith('_endpoint') || name === 'jwks_uri');
    expect(fields.map(([name]) => name)).toEqual(
      expect.arrayContaining([
        'authorization_endpoint',
        'token_endpoint',
        'userinfo_endpoint',
        'introspection_endpoint',
        'revocation_endpoint',
        'end_session_endpoint',
        'device_authorization_endpoint',
        'pushed_authorization_request_endpoint',
        'registration_endpoint',
        'jwks_uri',
      ]),
    );
    for (const [name, url] of fields) {
      expect(url, name).toMatch(new RegExp(`^${ISSUER}/`));
      const path = String(url).slice(ISSUER.length);
      for (const method of ['GET', 'POST'] as const) {
        const res = await sigil.app.inject({ method, url: path, headers: { accept: 'application/json' } });
        expect(res.statusCode, `${method} ${name} ${path}`).not.toBe(404);
      }
    }
    const off = await startSigil(testConfig({ registration: { enabled: false } }));
    try {
      const plain = (await off.app.inject({ method: 'GET', url: '/.well-known/openid-configuration' })).json<
        Record<string, unknown>
      >();
      expect(plain.registration_endpoint).toBeUndefined();
      expect(plain.token_endpoint).toBe(`${ISSUER}/connect/token`);
    } finally {
      await off.close();
    }
  });

  it('answers preflights from a client origin on the CORS paths, and on no other path', async () => {
    const preflight = (url: string) =>
      sigil.app.inject({
        method: 'OPTIONS',
        url,
        headers: { origin: ORIGIN, 'access-control-request-method': 'POST' },
      });
    const cors = [
      '/connect/token',
      '/connect/userinfo',
      '/connect/revocation',
      '/.well-known/openid-configuration',
      '/.well-known/openid-configuration/jwks',
      '/.well-known/oauth-authorization-server',
    ];
    for (const path of cors) {
      const res = await preflight(path);
      expect(res.statusCode, path).toBeLessThan(300);
      expect(res.headers['access-control-allow-origin'], path).toBe(ORIGIN);
    }
    for (const path of ['/connect/introspect', '/connect/par', '/connect/authorize', '/connect/deviceauthorization']) {
      const res = await preflight(path);
      expect(res.headers['access-control-allow-origin'], path).toBeUndefined();
    }
    const stranger = await sigil.app.inject({
      method: 'OPTIONS',
      url: '/connect/token',
      headers: { origin: 'https://evil.example', 'access-control-request-method': 'POST' },
    });
    expect(stranger.headers['access-control-allow-origin']).toBeUndefined();
  });
});
