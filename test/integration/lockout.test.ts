/**
 * Failure limits without lockout (OWASP ASVS 5.0 V6.3.1, v4 2.2.1;
 * RFC 8628 §5.1): wrong credentials from one address never block the right credential from
 * another, one address guessing is still stopped (429), the identity-wide count only slows down,
 * and a caller-written X-Forwarded-For does not escape the per-address limits.
 */
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { Browser } from '../authorize-helpers.js';
import { InjectBrowser } from '../browser-helpers.js';
import { type BasicCredentials, basic, clientTokens, form, startSigil, type TestSigil } from '../helpers.js';

/** A form POST with Basic credentials from `remoteAddress`. */
function postFrom(
  sigil: TestSigil,
  remoteAddress: string,
  url: string,
  params: Record<string, string>,
  auth: BasicCredentials,
  headers: Record<string, string> = {},
): Promise<LightMyRequestResponse> {
  return sigil.app.inject({
    method: 'POST',
    url,
    remoteAddress,
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      authorization: basic(auth[0], auth[1]),
      ...headers,
    },
    payload: form(params),
  });
}

const CC = { grant_type: 'client_credentials', scope: 'api1' };
const GUESSES = 25;

describe('default limits: 25 wrong credentials from one address', () => {
  let sigil: TestSigil;
  beforeAll(async () => {
    sigil = await startSigil(); // the default rateLimits: 20 per (identity, address) per 60 s
  });
  afterAll(async () => sigil.close());

  /** The statuses of `GUESSES` wrong attempts; the first 20 fail plainly, the rest are blocked. */
  async function guess(attempt: () => Promise<number>): Promise<void> {
    const statuses: number[] = [];
    for (let i = 0; i < GUESSES; i++) statuses.push(await attempt());
    expect(
      statuses.slice(20).every((s) => s === 429),
      statuses.join(' '),
    ).toBe(true);
    expect(
      statuses.slice(0, 20).every((s) => s !== 429),
      statuses.join(' '),
    ).toBe(true);
  }

  it('a client at the token endpoint: address A is stopped (429), the right secret from address B gets a token', async () => {
    await guess(async () => (await postFrom(sigil, '10.4.0.1', '/connect/token', CC, ['m2m', 'wrong'])).statusCode);
    const fromA = await postFrom(sigil, '10.4.0.1', '/connect/token', CC, ['m2m', 'm2m-secret']);
    expect(fromA.statusCode).toBe(429);
    expect(Number(fromA.headers['retry-after'])).toBeGreaterThan(0);
    const fromB = await postFrom(sigil, '10.4.0.2', '/connect/token', CC, ['m2m', 'm2m-secret']);
    expect(fromB.statusCode, fromB.body).toBe(200);
  });

  it('an API resource at introspection: address A is stopped (429), the right secret from address B introspects', async () => {
    const { access_token } = await clientTokens(sigil, 'api1');
    await guess(
      async () =>
        (await postFrom(sigil, '10.4.1.1', '/connect/introspect', { token: access_token }, ['api1', 'wrong']))
          .statusCode,
    );
    expect(
      (await postFrom(sigil, '10.4.1.1', '/connect/introspect', { token: access_token }, ['api1', 'api1-secret']))
        .statusCode,
    ).toBe(429);
    const fromB = await postFrom(sigil, '10.4.1.2', '/connect/introspect', { token: access_token }, [
      'api1',
      'api1-secret',
    ]);
    expect(fromB.statusCode, fromB.body).toBe(200);
    expect(fromB.json()).toMatchObject({ active: true });
  });

  it('a user with the password grant: address A is stopped (429), the right password from address B gets a token', async () => {
    const grant = (password: string) => ({ grant_type: 'password', username: 'bob', password, scope: 'api1' });
    await guess(
      async () =>
        (await postFrom(sigil, '10.4.2.1', '/connect/token', grant('wrong'), ['ropc', 'ropc-secret'])).statusCode,
    );
    expect(
      (await postFrom(sigil, '10.4.2.1', '/connect/token', grant('bob'), ['ropc', 'ropc-secret'])).statusCode,
    ).toBe(429);
    const fromB = await postFrom(sigil, '10.4.2.2', '/connect/token', grant('bob'), ['ropc', 'ropc-secret']);
    expect(fromB.statusCode, fromB.body).toBe(200);
  });

  it('a user on the login page: address A is stopped (429), the right password from address B signs in', async () => {
    const login = async (address: string, password: string) => {
      const b = new Browser(sigil, address);
      return b.submitLogin(await b.get('/account/login'), 'alice', password);
    };
    await guess(async () => (await login('10.4.3.1', 'wrong')).status);
    const fromA = await login('10.4.3.1', 'alice');
    expect(fromA.status).toBe(429);
    expect(fromA.body).toContain('Too many failed attempts');
    const fromB = await login('10.4.3.2', 'alice');
    expect(fromB.status).toBe(200);
    expect(fromB.body).toContain('You are signed in as alice.');
  });

  it('one address spraying many identities is stopped by the per-address limit (100)', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 101; i++)
      statuses.push((await postFrom(sigil, '10.4.4.1', '/connect/token', CC, [`nobody-${i}`, 'x'])).statusCode);
    expect(statuses.slice(0, 100).every((s) => s === 401)).toBe(true);
    expect(statuses[100]).toBe(429);
    expect((await postFrom(sigil, '10.4.4.2', '/connect/token', CC, ['m2m', 'm2m-secret'])).statusCode).toBe(200);
  });
});

describe('the identity-wide count only slows down', () => {
  let sigil: TestSigil;
  const long = 'k'.repeat(32);
  beforeAll(async () => {
    sigil = await startSigil({
      rateLimits: { maxFailures: 3, windowSeconds: 60, identitySlowDownAfter: 4, maxDelaySeconds: 1 },
      clients: [
        {
          clientId: 'short',
          clientSecrets: ['short-secret'],
          allowedGrantTypes: ['client_credentials'],
          allowedScopes: ['api1'],
        },
        { clientId: 'long', clientSecrets: [long], allowedGrantTypes: ['client_credentials'], allowedScopes: ['api1'] },
      ],
    });
  });
  afterAll(async () => sigil.close());

  /** The delays (ms) the limiter waited before each check while `run` ran. */
  async function delays(run: () => Promise<void>): Promise<number[]> {
    const spy = vi.spyOn(sigil.context.limiter, 'before');
    try {
      await run();
      return Promise.all(spy.mock.results.map((r) => r.value as Promise<number>));
    } finally {
      spy.mockRestore();
    }
  }

  it('wrong secrets from 6 addresses delay the next checks (growing), and the right secret from a 7th still succeeds', async () => {
    const waited = await delays(async () => {
      for (let i = 1; i <= 6; i++)
        expect((await postFrom(sigil, `10.5.0.${i}`, '/connect/token', CC, ['short', 'wrong'])).statusCode).toBe(401);
      expect((await postFrom(sigil, '10.5.0.7', '/connect/token', CC, ['short', 'short-secret'])).statusCode).toBe(200);
    });
    expect(waited).toEqual([0, 0, 0, 0, 100, 200, 400]);
  });

  it('a client whose secrets are all long has no identity-wide count: no delay', async () => {
    const waited = await delays(async () => {
      for (let i = 1; i <= 6; i++)
        expect((await postFrom(sigil, `10.5.1.${i}`, '/connect/token', CC, ['long', 'wrong'])).statusCode).toBe(401);
      expect((await postFrom(sigil, '10.5.1.7', '/connect/token', CC, ['long', long])).statusCode).toBe(200);
    });
    expect(waited).toEqual([0, 0, 0, 0, 0, 0, 0]);
  });
});

const PROXY = '10.6.0.1';
// With a hop count any peer is taken for the proxy: rotating the peer address too shows that the
// address limited is the one the proxy appended, not the socket's.
describe.each([
  ['naming the proxy', [PROXY], () => PROXY],
  ['as a hop count', 1, (i: number) => `10.6.1.${i + 1}`],
])('trustProxy %s: a caller-written X-Forwarded-For does not escape the limits', (_name, trustProxy, peer) => {
  let sigil: TestSigil;
  beforeAll(async () => {
    sigil = await startSigil({ trustProxy, rateLimits: { maxFailures: 5, windowSeconds: 60 } });
  });
  afterAll(async () => sigil.close());

  it('30 wrong user codes, each with a new caller-written X-Forwarded-For through the proxy, reach 429', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 30; i++) {
      // A fresh browser each time. The caller writes the first entry; the proxy appends the address it saw.
      const xff = { 'x-forwarded-for': `198.51.100.${i + 1}, 203.0.113.9` };
      const page = await sigil.app.inject({
        method: 'GET',
        url: '/device',
        remoteAddress: peer(i),
        headers: { ...xff },
      });
      const res = await sigil.app.inject({
        method: 'POST',
        url: '/device',
        remoteAddress: peer(i),
        headers: {
          ...xff,
          'content-type': 'application/x-www-form-urlencoded',
          cookie: page.cookies.map((c) => `${c.name}=${c.value}`).join('; '),
        },
        payload: form({
          csrf_token: InjectBrowser.input(page.body, 'csrf_token'),
          userCode: 'BBBB-BBBB',
          button: 'submit',
        }),
      });
      statuses.push(res.statusCode);
    }
    expect(statuses.slice(0, 5)).toEqual([200, 200, 200, 200, 200]);
    expect(
      statuses.slice(5).every((s) => s === 429),
      statuses.join(' '),
    ).toBe(true);
  });
});
