/**
 * Client authentication at the token endpoint (RFC 6749 §2.3, §3.2.1, §5.2; checklist 1.6 CA-01..07,
 * D-08, D-18).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { basic, form, startSigil, tokenRequest, type TestSigil } from '../helpers.js';

const CC = { grant_type: 'client_credentials', scope: 'api1' };

describe('client authentication', () => {
  let sigil: TestSigil;
  beforeAll(async () => {
    // Many failures below come from one address: keep the limiter out of the way here.
    sigil = await startSigil({ rateLimits: { maxFailures: 1000, windowSeconds: 60 } });
  });
  afterAll(async () => sigil.close());

  const post = (payload: string, headers: Record<string, string | string[]> = {}, url = '/connect/token') =>
    sigil.app.inject({
      method: 'POST',
      url,
      headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
      payload,
    });

  it('accepts client_secret_basic', async () => {
    const res = await tokenRequest(sigil, CC, ['m2m', 'm2m-secret']);
    expect(res.statusCode).toBe(200);
  });

  it('accepts client_secret_post', async () => {
    const res = await tokenRequest(sigil, { ...CC, client_id: 'm2m', client_secret: 'm2m-secret' });
    expect(res.statusCode).toBe(200);
  });

  it('form-url-decodes the Basic id and secret (c:1 / s+/%)', async () => {
    const header = 'Basic ' + Buffer.from('c%3A1:s%2B%2F%25').toString('base64');
    expect(basic('c:1', 's+/%')).toBe(header);
    const res = await post(form(CC), { authorization: header });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ token_type: 'Bearer', scope: 'api1' });
  });

  it('does not accept the undecoded Basic secret', async () => {
    const raw = 'Basic ' + Buffer.from('c%3A1:s+/%').toString('base64');
    const res = await post(form(CC), { authorization: raw });
    expect(res.statusCode).toBe(401);
    expect(res.json()).toMatchObject({ error: 'invalid_client' });
  });

  it('treats the Basic scheme name case-insensitively', async () => {
    const res = await post(form(CC), { authorization: basic('m2m', 'm2m-secret').replace('Basic', 'bAsIc') });
    expect(res.statusCode).toBe(200);
  });

  it('answers a wrong secret via Basic with 401 invalid_client and WWW-Authenticate: Basic', async () => {
    const res = await tokenRequest(sigil, CC, ['m2m', 'wrong']);
    expect(res.statusCode).toBe(401);
    expect(res.json()).toMatchObject({ error: 'invalid_client' });
    expect(res.headers['www-authenticate']).toMatch(/^Basic realm="[^"]+"/);
    expect(res.headers['cache-control']).toBe('no-store');
  });

  it('answers a wrong secret via the body with 401 invalid_client and WWW-Authenticate: Basic (RFC 9110 §15.5.2)', async () => {
    const res = await tokenRequest(sigil, { ...CC, client_id: 'm2m', client_secret: 'wrong' });
    expect(res.statusCode).toBe(401);
    expect(res.json()).toMatchObject({ error: 'invalid_client' });
    expect(res.headers['www-authenticate']).toMatch(/^Basic realm="[^"]+"/);
  });

  it('answers an unknown client with 401 invalid_client, the same body as a wrong secret', async () => {
    const unknown = await tokenRequest(sigil, CC, ['nobody', 'm2m-secret']);
    const wrong = await tokenRequest(sigil, CC, ['m2m', 'wrong']);
    expect(unknown.statusCode).toBe(401);
    expect(unknown.json()).toMatchObject({ error: 'invalid_client' });
    expect(unknown.headers['www-authenticate']).toMatch(/^Basic /);
    expect(unknown.body).toBe(wrong.body);
  });

  it('answers a request without credentials with 401 invalid_client and WWW-Authenticate: Basic (RFC 9110 §15.5.2)', async () => {
    const res = await tokenRequest(sigil, CC);
    expect(res.statusCode).toBe(401);
    expect(res.json()).toMatchObject({ error: 'invalid_client' });
    expect(res.headers['www-authenticate']).toMatch(/^Basic realm="[^"]+"/);
  });

  it('refuses Basic together with client_secret in the body (400 invalid_request)', async () => {
    const res = await tokenRequest(sigil, { ...CC, client_secret: 'm2m-secret' }, ['m2m', 'm2m-secret']);
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ error: 'invalid_request' });
  });

  it('refuses a Basic client_id that differs from the body client_id', async () => {
    const res = await tokenRequest(sigil, { ...CC, client_id: 'm2m-ref' }, ['m2m', 'm2m-secret']);
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ error: 'invalid_request' });
  });

  it('refuses client_secret in the query string (400 invalid_request), even when it is right', async () => {
    const res = await post(form({ ...CC, client_id: 'm2m' }), {}, '/connect/token?client_secret=m2m-secret');
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ error: 'invalid_request' });
  });

  it('answers a confidential client that sends only client_id with 401 invalid_client', async () => {
    const res = await tokenRequest(sigil, { ...CC, client_id: 'm2m' });
    expect(res.statusCode).toBe(401);
    expect(res.json()).toMatchObject({ error: 'invalid_client' });
    expect(res.headers['www-authenticate']).toMatch(/^Basic /);
  });

  it('refuses a public client that presents a secret, in the body or by Basic (RFC 6749 §2.3)', async () => {
    const params = { grant_type: 'password', username: 'alice', password: 'alice', scope: 'api1' };
    for (const [name, res] of [
      ['body', await tokenRequest(sigil, { ...params, client_id: 'spa', client_secret: 'anything' })],
      ['Basic', await tokenRequest(sigil, params, ['spa', 'anything'])],
      ['Basic, empty secret', await post(form(params), { authorization: 'Basic ' + Buffer.from('spa:').toString('base64') })],
    ] as const) {
      expect(res.statusCode, name).toBe(401);
      expect(res.json(), name).toMatchObject({ error: 'invalid_client' });
      expect(res.headers['www-authenticate'], name).toMatch(/^Basic /);
      expect(res.body, name).not.toContain('access_token');
    }
  });

  it('answers malformed Basic credentials with 401 invalid_client', async () => {
    for (const authorization of ['Basic !!!', 'Basic ' + Buffer.from('no-colon').toString('base64'), 'Basic ' + Buffer.from(':x').toString('base64')]) {
      const res = await post(form(CC), { authorization });
      expect(res.statusCode, authorization).toBe(401);
      expect(res.json()).toMatchObject({ error: 'invalid_client' });
      expect(res.headers['www-authenticate']).toMatch(/^Basic /);
    }
  });

  it('refuses a repeated Authorization header (400 invalid_request)', async () => {
    const res = await post(form(CC), { authorization: [basic('m2m', 'm2m-secret'), basic('m2m', 'm2m-secret')] });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ error: 'invalid_request' });
  });

  it('refuses a repeated client_id (400 invalid_request)', async () => {
    const res = await post('grant_type=client_credentials&client_id=m2m&client_id=m2m&client_secret=m2m-secret');
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ error: 'invalid_request' });
  });

  it('lets a public client authenticate with client_id alone', async () => {
    const res = await tokenRequest(sigil, { grant_type: 'password', username: 'alice', password: 'alice', scope: 'api1', client_id: 'spa' });
    expect(res.statusCode).toBe(200);
  });
});

describe('client authentication brute-force limit', () => {
  let sigil: TestSigil;
  beforeAll(async () => {
    sigil = await startSigil({ rateLimits: { maxFailures: 3, windowSeconds: 60 } });
  });
  afterAll(async () => sigil.close());

  const attempt = (secret: string, remoteAddress: string) =>
    sigil.app.inject({
      method: 'POST',
      url: '/connect/token',
      remoteAddress,
      headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: basic('m2m', secret) },
      payload: form(CC),
    });

  it('answers 429 with Retry-After after maxFailures from one address, even for the right secret; another address is not blocked', async () => {
    for (let i = 0; i < 3; i++) {
      const res = await attempt('wrong', '10.0.0.1');
      expect(res.statusCode).toBe(401);
    }
    const blocked = await attempt('wrong', '10.0.0.1');
    expect(blocked.statusCode).toBe(429);
    expect(Number(blocked.headers['retry-after'])).toBeGreaterThan(0);
    expect(Number(blocked.headers['retry-after'])).toBeLessThanOrEqual(60);
    expect(blocked.headers['content-type']).toMatch(/^application\/json/);
    expect(blocked.json()).toHaveProperty('error');

    const right = await attempt('m2m-secret', '10.0.0.1');
    expect(right.statusCode).toBe(429);
    expect(right.headers['retry-after']).toBeDefined();
    // Failures from one address never lock the client out elsewhere (issue 9, item 4).
    const elsewhere = await attempt('m2m-secret', '10.0.0.2');
    expect(elsewhere.statusCode).toBe(200);
  });

  it('does not block other clients from another address', async () => {
    const res = await sigil.app.inject({
      method: 'POST',
      url: '/connect/token',
      remoteAddress: '10.0.0.3',
      headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: basic('m2m-ref', 'm2m-secret') },
      payload: form(CC),
    });
    expect(res.statusCode).toBe(200);
  });
});
