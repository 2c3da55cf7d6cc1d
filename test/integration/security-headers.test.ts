/**
 * Which responses carry the page plugins' work (src/app.ts): browser pages and public
 * documents have helmet's headers (CSP, frame options, nosniff, referrer policy) and CSRF
 * cookies; the JSON APIs of clients and resource servers are registered outside that context and
 * answer with neither, whatever cookies a request brings.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { basic, startSigil, type TestSigil } from '../helpers.js';

const FORM = { 'content-type': 'application/x-www-form-urlencoded' };
const PAGE_HEADERS = ['content-security-policy', 'x-frame-options', 'x-content-type-options', 'referrer-policy'];

describe('security headers and cookies by context', () => {
  let sigil: TestSigil;
  beforeAll(async () => {
    sigil = await startSigil();
  });
  afterAll(async () => sigil?.close());

  it.each(['/account/login', '/device', '/.well-known/openid-configuration', '/healthz', '/assets/sigil.css'])(
    'GET %s carries the page headers',
    async (url) => {
      const res = await sigil.app.inject({ method: 'GET', url });
      expect(res.statusCode, res.body).toBe(200);
      for (const name of PAGE_HEADERS) expect(res.headers[name], name).toBeDefined();
      expect(res.headers['x-frame-options']).toBe('DENY');
    },
  );

  it('the login page still sets its CSRF cookie', async () => {
    const res = await sigil.app.inject({ method: 'GET', url: '/account/login' });
    expect(String(res.headers['set-cookie'])).toContain('sigil.csrf=');
  });

  it('the JSON APIs answer without page headers or cookies, also to a request that sends cookies', async () => {
    const cookie = 'sigil.csrf=abc; sigil.session=xyz';
    const m2m = { authorization: basic('m2m', 'm2m-secret'), cookie };
    const token = await sigil.app.inject({
      method: 'POST',
      url: '/connect/token',
      headers: { ...FORM, ...m2m },
      payload: 'grant_type=client_credentials&scope=api1',
    });
    expect(token.statusCode, token.body).toBe(200);
    const accessToken = token.json<{ access_token: string }>().access_token;
    const api = { authorization: basic('api1', 'api1-secret'), cookie };
    const responses = {
      token,
      introspection: await sigil.app.inject({
        method: 'POST',
        url: '/connect/introspect',
        headers: { ...FORM, ...api },
        payload: `token=${accessToken}`,
      }),
      revocation: await sigil.app.inject({
        method: 'POST',
        url: '/connect/revocation',
        headers: { ...FORM, ...m2m },
        payload: `token=${accessToken}`,
      }),
      userinfo: await sigil.app.inject({
        method: 'GET',
        url: '/connect/userinfo',
        headers: { authorization: `Bearer ${accessToken}`, cookie },
      }),
      'token error': await sigil.app.inject({
        method: 'POST',
        url: '/connect/token',
        headers: { ...FORM, cookie },
        payload: 'grant_type=client_credentials',
      }),
    };
    for (const [name, res] of Object.entries(responses)) {
      expect(res.statusCode, `${name}: ${res.body}`).toBeLessThan(500);
      for (const header of [...PAGE_HEADERS, 'set-cookie'])
        expect(res.headers[header], `${name} ${header}`).toBeUndefined();
    }
  });
});
