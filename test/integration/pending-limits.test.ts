/**
 * What callers who have not authenticated can make Sigil store (OWASP
 * API4:2023): a length limit on every authorization parameter, quotas on pending interactions per
 * browser and per address (an IPv6 /64), on device authorizations per address and per client,
 * and a clean-up that deletes every expired row in one run. Measured on the real SQLite file;
 * the quota counters also shared by two nodes through Redis.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cleanUpExpired } from '../../src/stores/housekeeping.js';
import { newGrantRecord } from '../../src/stores/types.js';
import { nowSeconds } from '../../src/crypto/handles.js';
import { RedisFailureCounters } from '../../src/limits/failure-limiter.js';
import { takeQuota } from '../../src/limits/request-quota.js';
import { form, type TestSigil } from '../helpers.js';
import {
  authorizeUrl,
  Browser,
  codeParams,
  countGrants,
  expectClientError,
  expectErrorPage,
  getCode,
  input,
  isLoginPage,
  pkce,
  redeem,
  startAuthorizeSigil,
} from '../authorize-helpers.js';

const { verifier, challenge } = pkce();

/** Bytes of the SQLite file and its WAL after a checkpoint (what the store occupies on disk). */
function storeBytes(sigil: TestSigil): number {
  const file = join(sigil.dir, 'sigil.db');
  const db = new Database(file, { fileMustExist: true });
  try {
    db.pragma('wal_checkpoint(TRUNCATE)');
  } finally {
    db.close();
  }
  const size = (path: string) => (existsSync(path) ? statSync(path).size : 0);
  return size(file) + size(`${file}-wal`);
}

/** A cookie-less form POST to the authorization endpoint from `remoteAddress`. */
function cookielessPost(
  sigil: TestSigil,
  params: Record<string, string>,
  remoteAddress: string,
): Promise<LightMyRequestResponse> {
  return sigil.app.inject({
    method: 'POST',
    url: '/connect/authorize',
    remoteAddress,
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    payload: form(params),
  });
}

/** Asserts a real user in a browser of their own signs in at `web` and redeems the code. */
async function realUserSignsIn(sigil: TestSigil, remoteAddress: string): Promise<void> {
  const code = await getCode(new Browser(sigil, remoteAddress), codeParams(challenge));
  expect((await redeem(sigil, code, { verifier })).statusCode).toBe(200);
}

describe('1,500 cookie-less authorization requests from one address', () => {
  let sigil: TestSigil;
  beforeAll(async () => {
    sigil = await startAuthorizeSigil();
  });
  afterAll(async () => sigil.close());

  it('with a 60 KB state leave the SQLite file (main + WAL) under 5 MB larger, and a user in another browser still signs in', async () => {
    const before = storeBytes(sigil);
    const params = codeParams(challenge, { state: 'x'.repeat(60_000) });
    const statuses = new Map<number, number>();
    for (let sent = 0; sent < 1_500; sent += 50) {
      const batch = await Promise.all(Array.from({ length: 50 }, () => cookielessPost(sigil, params, '203.0.113.7')));
      for (const res of batch) statuses.set(res.statusCode, (statuses.get(res.statusCode) ?? 0) + 1);
    }
    const grown = storeBytes(sigil) - before;
    expect(grown).toBeLessThan(5 * 1024 * 1024);
    // The state is never echoed: every request ends on the error page.
    expect(Object.fromEntries(statuses)).toEqual({ 400: 1_500 });
    expectErrorPage(await cookielessPost(sigil, params, '203.0.113.7'), 'invalid_request');
    expect(countGrants(sigil, 'interaction')).toBe(0);

    await realUserSignsIn(sigil, '198.51.100.20');
  });

  it('with the longest state allowed instead, the default quota stores 300 of them, under 5 MB, and the user still signs in', async () => {
    const before = storeBytes(sigil);
    const rows = countGrants(sigil, 'interaction');
    const params = codeParams(challenge, { state: 'x'.repeat(2_000) });
    const statuses = new Map<number, number>();
    for (let sent = 0; sent < 1_500; sent += 50) {
      const batch = await Promise.all(Array.from({ length: 50 }, () => cookielessPost(sigil, params, '203.0.113.8')));
      for (const res of batch) statuses.set(res.statusCode, (statuses.get(res.statusCode) ?? 0) + 1);
    }
    const grown = storeBytes(sigil) - before;
    expect(grown).toBeLessThan(5 * 1024 * 1024);
    expect(Object.fromEntries(statuses)).toEqual({ 303: 300, 429: 1_200 });
    expect(countGrants(sigil, 'interaction') - rows).toBe(300);
    await realUserSignsIn(sigil, '198.51.100.22');
  });
});

describe('length limits on authorization parameters', () => {
  let sigil: TestSigil;
  let b: Browser;
  beforeAll(async () => {
    sigil = await startAuthorizeSigil();
    b = new Browser(sigil, '192.0.2.50');
  });
  afterAll(async () => sigil.close());

  it('state up to 2,000 characters is kept and echoed; longer gives the error page and stores nothing', async () => {
    const longest = 's'.repeat(2_000);
    const atLogin = await b.follow(await b.get(authorizeUrl(codeParams(challenge, { state: longest }))));
    expect(isLoginPage(atLogin), atLogin.body).toBe(true);
    const rows = countGrants(sigil, 'interaction');
    for (const step of [
      await b.get(authorizeUrl(codeParams(challenge, { state: `${longest}s` }))),
      await b.post('/connect/authorize', codeParams(challenge, { state: `${longest}s` })),
    ])
      expectErrorPage(step, 'invalid_request');
    expect(countGrants(sigil, 'interaction')).toBe(rows);
  });

  it('every other parameter over its limit → invalid_request to the client, with state', async () => {
    const tooLong: Record<string, string> = {
      nonce: 'n'.repeat(301),
      login_hint: 'l'.repeat(101),
      ui_locales: 'de '.repeat(34),
      acr_values: 'a'.repeat(301),
      prompt: 'login '.repeat(17).trim(),
      max_age: '1'.repeat(11),
      code_challenge: 'c'.repeat(129),
      id_token_hint: 'h'.repeat(4_001),
    };
    for (const [name, value] of Object.entries(tooLong)) {
      const r = expectClientError(
        await b.get(authorizeUrl(codeParams(challenge, { [name]: value }))),
        'invalid_request',
        { state: 'st' },
      );
      expect(r.params.get('error_description'), name).toBe(`${name} is too long`);
    }
    // client_id and redirect_uri beyond their limits never reach a redirect; nor does an unknown response_mode.
    expectErrorPage(
      await b.get(authorizeUrl(codeParams(challenge, { response_mode: 'q'.repeat(21) }))),
      'invalid_request',
    );
    expectErrorPage(
      await b.get(authorizeUrl(codeParams(challenge, { client_id: 'w'.repeat(101) }))),
      'invalid_request',
    );
    expectErrorPage(
      await b.get(authorizeUrl(codeParams(challenge, { redirect_uri: `https://rp.example/${'r'.repeat(400)}` }))),
      'invalid_request',
    );
  });
});

describe('quotas on pending interactions (interactionsPerAddress 40, interactionsPerBrowser 5)', () => {
  let sigil: TestSigil;
  beforeAll(async () => {
    sigil = await startAuthorizeSigil([], { pendingLimits: { interactionsPerAddress: 40, interactionsPerBrowser: 5 } });
  });
  afterAll(async () => sigil.close());

  it('one address is refused with the 429 page and Retry-After past its quota; its rows stay bounded; another address signs in', async () => {
    const params = codeParams(challenge, { state: 's'.repeat(2_000) });
    const answers = [];
    for (let i = 0; i < 60; i++) answers.push(await cookielessPost(sigil, params, '203.0.113.9'));
    expect(answers.slice(0, 40).every((res) => res.statusCode === 303)).toBe(true);
    for (const res of answers.slice(40)) {
      expectErrorPage(res, 'temporarily_unavailable', 429);
      expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
      expect(Number(res.headers['retry-after'])).toBeLessThanOrEqual(600);
    }
    expect(countGrants(sigil, 'interaction')).toBe(40);
    await realUserSignsIn(sigil, '198.51.100.21');
  });

  it('an IPv6 caller counts by its /64: rotating the interface identifier does not help', async () => {
    const rows = countGrants(sigil, 'interaction');
    const answers = [];
    for (let i = 1; i <= 45; i++)
      answers.push(await cookielessPost(sigil, codeParams(challenge), `2001:db8:0:7:${i.toString(16)}::1`));
    expect(answers.filter((res) => res.statusCode === 303)).toHaveLength(40);
    expectErrorPage(answers[44] as LightMyRequestResponse, 'temporarily_unavailable', 429);
    // Another /64 has its own quota.
    expect((await cookielessPost(sigil, codeParams(challenge), '2001:db8:0:8::1')).statusCode).toBe(303);
    expect(countGrants(sigil, 'interaction')).toBe(rows + 41);
  });

  it('one browser is refused past its own quota, from any address; its pending requests still complete', async () => {
    const b = new Browser(sigil, '192.0.2.60');
    const first = await b.follow(await b.get(authorizeUrl(codeParams(challenge))));
    expect(isLoginPage(first)).toBe(true);
    for (let i = 1; i < 5; i++) expect((await b.get(authorizeUrl(codeParams(challenge)))).status).toBe(303);
    expectErrorPage(await b.get(authorizeUrl(codeParams(challenge))), 'temporarily_unavailable', 429);
    const moved = new Browser(sigil, '192.0.2.61');
    for (const [name, value] of b.cookies) moved.cookies.set(name, value);
    expectErrorPage(await moved.get(authorizeUrl(codeParams(challenge))), 'temporarily_unavailable', 429);
    // The login page it already has still signs in and yields a code.
    const done = await b.follow(await b.submitLogin(first, 'alice', 'alice'));
    expect(done.status, done.body).toBe(303);
    expect(new URL(done.location ?? '').searchParams.get('code')).toBeTruthy();
  });
});

describe('quotas on device authorizations (5 per address, 8 per client)', () => {
  let sigil: TestSigil;
  beforeAll(async () => {
    sigil = await startAuthorizeSigil(
      [
        {
          clientId: 'tv',
          requireClientSecret: false,
          allowedGrantTypes: ['urn:ietf:params:oauth:grant-type:device_code'],
          allowedScopes: ['openid'],
        },
        {
          clientId: 'radio',
          requireClientSecret: false,
          allowedGrantTypes: ['urn:ietf:params:oauth:grant-type:device_code'],
          allowedScopes: ['openid'],
        },
      ],
      {
        pendingLimits: {
          deviceAuthorizationsPerAddress: 5,
          deviceAuthorizationsPerClient: 8,
          interactionsPerBrowser: 2,
        },
      },
    );
  });
  afterAll(async () => sigil.close());

  const start = (clientId: string, remoteAddress: string) =>
    sigil.app.inject({
      method: 'POST',
      url: '/connect/deviceauthorization',
      remoteAddress,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: form({ client_id: clientId, scope: 'openid' }),
    });

  const expectRefused = (res: LightMyRequestResponse) => {
    expect(res.statusCode, res.body).toBe(429);
    expect(res.json<{ error: string }>().error).toBe('temporarily_unavailable');
    expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
  };

  it('past the address quota 429 with Retry-After and nothing stored; past the client quota, from any address', async () => {
    for (let i = 0; i < 5; i++) expect((await start('tv', '203.0.113.30')).statusCode).toBe(200);
    expectRefused(await start('tv', '203.0.113.30'));
    expectRefused(await start('radio', '203.0.113.30'));
    for (let i = 0; i < 3; i++) expect((await start('tv', '203.0.113.31')).statusCode).toBe(200);
    expectRefused(await start('tv', '203.0.113.32'));
    // The client quota is the client's own: another client still starts from a fresh address.
    expect((await start('radio', '203.0.113.33')).statusCode).toBe(200);
    expect(countGrants(sigil, 'device_code')).toBe(9);
    expect(countGrants(sigil, 'user_code')).toBe(9);
  });

  it('entering a user code starts a pending request, within the browser quota too (interactionsPerBrowser 2)', async () => {
    const started = await start('radio', '203.0.113.40');
    expect(started.statusCode).toBe(200);
    const userCode = started.json<{ user_code: string }>().user_code;
    const b = new Browser(sigil, '203.0.113.41');
    const enter = async () => {
      const page = await b.get('/device');
      return b.post('/device', { csrf_token: input(page.body, 'csrf_token'), userCode, button: 'submit' });
    };
    for (let i = 0; i < 2; i++) expect((await enter()).status).toBe(303);
    const rows = countGrants(sigil, 'interaction');
    const refused = await enter();
    expect(refused.status).toBe(429);
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
    expect(refused.body).toContain('name="userCode"');
    expect(countGrants(sigil, 'interaction')).toBe(rows);
  });
});

describe('clean-up of expired rows', () => {
  let sigil: TestSigil;
  beforeAll(async () => {
    sigil = await startAuthorizeSigil();
  });
  afterAll(async () => sigil.close());

  it('one run deletes every expired row, however many batches that takes', async () => {
    const now = nowSeconds();
    for (let i = 0; i < 700; i++)
      await sigil.context.store.grants.put(
        newGrantRecord({
          key: randomBytes(32).toString('base64url'),
          type: 'interaction',
          clientId: 'web',
          data: {},
          createdAt: now - 700,
          expiresAt: now - 100,
        }),
      );
    const options = { keyReloadSeconds: 60, cleanupIntervalSeconds: 300, batchSize: 10 };
    expect(await cleanUpExpired(sigil.context.store.maintenance, 'test-node', options, now)).toBe(700);
    expect(countGrants(sigil, 'interaction')).toBe(0);
  });
});

describe('quotas shared through Redis', () => {
  it('two nodes count one quota together', async () => {
    const a = new RedisFailureCounters('redis://127.0.0.1:6379');
    const b = new RedisFailureCounters('redis://127.0.0.1:6379');
    // Counters outlive a run in Redis: each run uses keys of its own.
    const entries = [{ key: `test:${randomUUID()}`, limit: 3 }];
    try {
      await takeQuota(a, entries, 60);
      await takeQuota(b, entries, 60);
      await takeQuota(a, entries, 60);
      for (const node of [a, b]) {
        const err = await takeQuota(node, entries, 60).catch((e: unknown) => e);
        expect(err).toMatchObject({ code: 'temporarily_unavailable', status: 429 });
        expect(Number((err as { headers: Record<string, string> }).headers['retry-after'])).toBeGreaterThan(0);
      }
    } finally {
      await a.close();
      await b.close();
    }
  });
});
