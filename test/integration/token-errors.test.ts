/**
 * Error handling of the token endpoint (RFC 6749 §3.2, §5.2):
 * repeated parameters, oversized bodies (413), other methods and content types.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { basic, expectNoLeak, form, startSigil, tokenRequest, type TestSigil } from '../helpers.js';
import type { LightMyRequestResponse } from 'fastify';

const M2M = basic('m2m', 'm2m-secret');
/** RFC 6749 §5.2: error_description is %x20-21 / %x23-5B / %x5D-7E. */
const DESCRIPTION_CHARS = /^[\x20\x21\x23-\x5B\x5D-\x7E]*$/;

function expectOAuthError(res: LightMyRequestResponse, status: number, error: string): void {
  expectNoLeak(res);
  expect(res.statusCode).toBe(status);
  expect(res.headers['content-type']).toMatch(/^application\/json/);
  expect(res.headers['cache-control']).toBe('no-store');
  const body = res.json<Record<string, unknown>>();
  expect(body.error).toBe(error);
  expect(Object.keys(body).every((k) => k === 'error' || k === 'error_description')).toBe(true);
  if (body.error_description !== undefined) expect(body.error_description).toMatch(DESCRIPTION_CHARS);
}

describe('token endpoint errors', () => {
  let sigil: TestSigil;
  beforeAll(async () => {
    sigil = await startSigil({ rateLimits: { maxFailures: 1000, windowSeconds: 60 } });
  });
  afterAll(async () => sigil.close());

  const raw = (payload: string | Buffer, headers: Record<string, string> = {}, method: 'POST' | 'PUT' = 'POST') =>
    sigil.app.inject({ method, url: '/connect/token', headers: { authorization: M2M, ...headers }, payload });
  const formPost = (payload: string) => raw(payload, { 'content-type': 'application/x-www-form-urlencoded' });

  it('answers GET with 400 invalid_request, and query credentials never authenticate', async () => {
    const res = await sigil.app.inject({
      method: 'GET',
      url: '/connect/token?grant_type=client_credentials&client_id=m2m&client_secret=m2m-secret',
    });
    expectOAuthError(res, 400, 'invalid_request');
    expect(res.body).not.toContain('access_token');
  });

  it('answers PUT with 400 invalid_request', async () => {
    const res = await raw(
      form({ grant_type: 'client_credentials' }),
      { 'content-type': 'application/x-www-form-urlencoded' },
      'PUT',
    );
    expectOAuthError(res, 400, 'invalid_request');
  });

  it('answers a JSON body with 400 invalid_request', async () => {
    const res = await raw(JSON.stringify({ grant_type: 'client_credentials', scope: 'api1' }), {
      'content-type': 'application/json',
    });
    expectOAuthError(res, 400, 'invalid_request');
  });

  it('answers a JSON body with __proto__ with 400 invalid_request', async () => {
    const res = await raw('{"__proto__":{"admin":true},"grant_type":"client_credentials"}', {
      'content-type': 'application/json',
    });
    expectOAuthError(res, 400, 'invalid_request');
  });

  it('answers multipart/form-data with 400 invalid_request', async () => {
    const boundary = 'XyZ';
    const payload =
      `--${boundary}\r\nContent-Disposition: form-data; name="grant_type"\r\n\r\nclient_credentials\r\n` +
      `--${boundary}\r\nContent-Disposition: form-data; name="scope"\r\n\r\napi1\r\n--${boundary}--\r\n`;
    const res = await raw(payload, { 'content-type': `multipart/form-data; boundary=${boundary}` });
    expectOAuthError(res, 400, 'invalid_request');
  });

  it('answers a body without a content type with 400 invalid_request', async () => {
    const res = await raw(Buffer.from(form({ grant_type: 'client_credentials', scope: 'api1' })));
    expectOAuthError(res, 400, 'invalid_request');
  });

  it('answers an empty POST without content type with 400 invalid_request', async () => {
    const res = await sigil.app.inject({ method: 'POST', url: '/connect/token', headers: { authorization: M2M } });
    expectOAuthError(res, 400, 'invalid_request');
  });

  it('accepts a form content type with a charset parameter', async () => {
    const res = await raw(form({ grant_type: 'client_credentials', scope: 'api1' }), {
      'content-type': 'application/x-www-form-urlencoded; charset=UTF-8',
    });
    expect(res.statusCode).toBe(200);
  });

  it('answers a missing grant_type with 400 invalid_request', async () => {
    const res = await formPost(form({ scope: 'api1' }));
    expectOAuthError(res, 400, 'invalid_request');
  });

  it('answers an unknown grant_type with 400 unsupported_grant_type', async () => {
    const res = await formPost(form({ grant_type: 'foo' }));
    expectOAuthError(res, 400, 'unsupported_grant_type');
  });

  it.each([
    ['password', 'm2m', 'm2m-secret'],
    ['client_credentials', 'ropc', 'ropc-secret'],
    ['urn:ietf:params:oauth:grant-type:token-exchange', 'm2m', 'm2m-secret'],
  ])('answers %s for a client not allowed it (%s) with 400 unauthorized_client', async (grant, id, secret) => {
    const res = await tokenRequest(sigil, { grant_type: grant, username: 'alice', password: 'alice' }, [id, secret]);
    expectOAuthError(res, 400, 'unauthorized_client');
  });

  it('answers refresh_token for a client without allowOfflineAccess with 400 unauthorized_client', async () => {
    const res = await tokenRequest(sigil, { grant_type: 'refresh_token', refresh_token: 'x' }, ['m2m', 'm2m-secret']);
    expectOAuthError(res, 400, 'unauthorized_client');
  });

  it.each([
    ['grant_type', 'grant_type=client_credentials&grant_type=client_credentials&scope=api1'],
    ['scope', 'grant_type=client_credentials&scope=api1&scope=api1'],
  ])('answers a repeated %s with 400 invalid_request', async (_name, payload) => {
    const res = await formPost(payload);
    expectOAuthError(res, 400, 'invalid_request');
  });

  it('answers a repeated password-grant parameter with 400 invalid_request', async () => {
    const res = await raw('grant_type=password&username=alice&username=bob&password=alice', {
      'content-type': 'application/x-www-form-urlencoded',
      authorization: basic('ropc', 'ropc-secret'),
    });
    expectOAuthError(res, 400, 'invalid_request');
  });

  it('keeps error_description within the RFC 6749 §5.2 character set for CR LF " \\ input', async () => {
    const cases = [
      'grant_type=password&username=%0d%0a%22%5c&password=x&code=%0d%0a%22%5c',
      'grant_type=client_credentials&scope=api1%0d%0a%22%5c',
      'grant_type=%0d%0a%22%5c',
      'grant_type=client_credentials&scope=%22%5c%09%7f%c3%a9',
      'grant_type=refresh_token&refresh_token=%0d%0a%22%5c',
    ];
    for (const payload of cases) {
      const auth = payload.includes('password') || payload.includes('refresh') ? basic('ropc', 'ropc-secret') : M2M;
      const res = await raw(payload, { 'content-type': 'application/x-www-form-urlencoded', authorization: auth });
      expectNoLeak(res);
      expect(res.statusCode, payload).toBeGreaterThanOrEqual(400);
      const body = res.json<{ error: string; error_description?: string }>();
      expect(body.error).toMatch(/^[\x20\x21\x23-\x5B\x5D-\x7E]+$/);
      if (body.error_description !== undefined) expect(body.error_description, payload).toMatch(DESCRIPTION_CHARS);
    }
  });

  it.each([
    ['%ZZ', 'grant_type=client_credentials&scope=%ZZ'],
    ['a lone %', 'grant_type=client_credentials&scope=api1%'],
    ['invalid UTF-8 %C3%28', 'grant_type=client_credentials&scope=%C3%28'],
    ['an encoded surrogate %ED%A0%80', 'grant_type=client_credentials&scope=%ED%A0%80'],
    ['%00 in a value', 'grant_type=client_credentials&scope=api1%00'],
    ['%00 in a name', 'grant_type=client_credentials&sc%00ope=api1'],
    ['%ZZ in a name', 'grant_type=client_credentials&%ZZ=1&scope=api1'],
  ])('answers %s with 400 invalid_request', async (_name, payload) => {
    const res = await formPost(payload);
    expectOAuthError(res, 400, 'invalid_request');
  });

  it('answers a body over 64 KiB with 413 and a JSON invalid_request', async () => {
    const payload = form({ grant_type: 'client_credentials', scope: 'api1', padding: 'a'.repeat(65 * 1024) });
    const res = await formPost(payload);
    expectOAuthError(res, 413, 'invalid_request');
  });

  it('accepts a body just under 64 KiB (unknown parameters are ignored)', async () => {
    const head = `${form({ grant_type: 'client_credentials', scope: 'api1' })}&padding=`;
    const res = await formPost(head + 'a'.repeat(64 * 1024 - head.length - 1));
    expect(res.statusCode).toBe(200);
  });

  it('treats prototype-polluting parameter names as unknown names', async () => {
    const res = await formPost(
      'grant_type=client_credentials&scope=api1&__proto__%5Badmin%5D=1&constructor%5Bprototype%5D%5Bx%5D=1&a%5Bb%5D=1',
    );
    expect(res.statusCode).toBe(200);
    expect(({} as Record<string, unknown>).admin).toBeUndefined();
    const after = await tokenRequest(sigil, { grant_type: 'password', username: 'alice', password: 'alice' }, [
      'm2m',
      'm2m-secret',
    ]);
    expectOAuthError(after, 400, 'unauthorized_client');
  });

  it('answers a 20 000-character scope with 400 invalid_scope', async () => {
    const res = await formPost(form({ grant_type: 'client_credentials', scope: Array(4000).fill('api1').join(' ') }));
    expectOAuthError(res, 400, 'invalid_scope');
  });

  it('answers an unknown path with 404 JSON and no stack trace', async () => {
    const res = await sigil.app.inject({ method: 'POST', url: '/connect/tokeninvalid' });
    expectNoLeak(res);
    expect(res.statusCode).toBe(404);
  });

  it('sends no X-Powered-By header', async () => {
    const res = await formPost(form({ grant_type: 'client_credentials', scope: 'api1' }));
    expect(res.headers['x-powered-by']).toBeUndefined();
  });
});

describe('hostile input on every back-channel endpoint', () => {
  let sigil: TestSigil;
  beforeAll(async () => {
    sigil = await startSigil({ rateLimits: { maxFailures: 1000, windowSeconds: 60 } });
  });
  afterAll(async () => sigil.close());

  const urls = [
    '/connect/token',
    '/connect/introspect',
    '/connect/revocation',
    '/connect/userinfo',
    '/.well-known/openid-configuration',
  ];
  const bodies: [string, string | Buffer][] = [
    ['application/x-www-form-urlencoded', 'token=%ZZ&grant_type=%C3%28'],
    ['application/x-www-form-urlencoded', 'token=%00&access_token=%ED%A0%80'],
    ['application/x-www-form-urlencoded', 'token=a&token=b&grant_type=x&grant_type=y&access_token=a&access_token=b'],
    ['application/x-www-form-urlencoded', '&&&=&=x&x=&%3D=%3D'],
    ['application/x-www-form-urlencoded', `token=${'%F0%9F%98%80'.repeat(500)}&client_id=%E2%80%AE`],
    ['application/x-www-form-urlencoded', 'a'.repeat(70 * 1024)],
    ['application/json', '{"__proto__":{"x":1},"token":"a"}'],
    ['application/json', '{not json'],
    ['text/plain', 'token=x'],
    ['multipart/form-data; boundary=x', '--x\r\nContent-Disposition: form-data; name="token"\r\n\r\nx\r\n--x--\r\n'],
    ['application/x-www-form-urlencoded; charset=iso-8859-1', 'token=%E9'],
  ];
  const authorizations = [
    undefined,
    basic('api1', 'api1-secret'),
    'Basic %%%',
    `Basic ${Buffer.from('\u0000:\u0000').toString('base64')}`,
    `Bearer ${'x'.repeat(9000)}`,
    'Bearer a b c',
    'Digest username="x"',
  ];

  it('never answers 5xx nor leaks internals', async () => {
    let count = 0;
    for (const url of urls) {
      for (const [type, payload] of bodies) {
        for (const authorization of authorizations) {
          for (const method of ['POST', 'PUT'] as const) {
            const res = await sigil.app.inject({
              method,
              url,
              headers: { 'content-type': type, ...(authorization ? { authorization } : {}) },
              payload,
            });
            expectNoLeak(res);
            expect(res.statusCode, `${method} ${url} ${type} ${String(authorization).slice(0, 20)}`).toBeLessThan(500);
            count++;
          }
        }
      }
    }
    expect(count).toBe(urls.length * bodies.length * authorizations.length * 2);
  });
});
