/**
 * `sigil start --workers 2`: two processes on one port and one SQLite file. Requests on
 * fresh connections are spread over both workers (the primary hands connections out in turn), and
 * tokens, refresh, introspection and revocation agree across them; a revocation is seen by every
 * worker within the access-token cache bound; SIGTERM stops every worker; `memory` is refused.
 * Without Redis the failure limits and request quotas are the deployment's, not each worker's,
 * a DPoP proof's replay is refused by either worker, and a worker accepts the JWTs of a sibling's
 * brand-new signing key. An LDAP account's budgets of wrong binds (strangers'
 * and known browsers') are the deployment's too, against a real slapd. Failed client authentications from one
 * address, then
 * a password grant with offline_access, then userinfo on a new connection each time: every worker
 * accepts the token, on a fresh store, after a key rotation, after a restart, and for a client
 * created through /admin/v1 a moment before on the sibling worker.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { decodeJwt, decodeProtectedHeader } from 'jose';
import { request } from 'undici';
import { afterAll, describe, expect, it } from 'vitest';
import { input } from '../authorize-helpers.js';
import { proof, proofKey } from '../dpop-helpers.js';
import { basic, form, type ServerProcess, sleep, startProcess, tempDir, testConfig } from '../helpers.js';
import { LDAP_USERS, PEOPLE, startSlapd } from '../ldap-server.mjs';
import { freePort } from './ports.js';

const BOUND_MS = 100;
const config = testConfig({ logLevel: 'warn', accessTokenCache: { maxAgeMilliseconds: BOUND_MS, maxEntries: 1000 } });
let server: ServerProcess | undefined;
const started: ServerProcess[] = [];
afterAll(async () => {
  for (const s of started) await s.stop();
});

/** Starts `sigil start --workers 2` on `cfg`; `post` then talks to it. */
async function startWorkers(cfg: typeof config): Promise<ServerProcess> {
  server = await startProcess(cfg, await freePort(), { args: ['--workers', '2'] });
  started.push(server);
  return server;
}

/**
 * POSTs a form on a connection of its own, so that successive calls reach the workers in turn;
 * with `auth` as `client_secret_basic`, and `headers`.
 */
async function post(
  path: string,
  params: Record<string, string>,
  auth?: [string, string],
  headers: Record<string, string> = {},
): Promise<{ status: number; body: Record<string, unknown>; headers: Record<string, unknown> }> {
  const res = await request(`${server?.url}${path}`, {
    method: 'POST',
    reset: true,
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      ...(auth ? { authorization: basic(...auth) } : {}),
      ...headers,
    },
    body: form(params),
  });
  const text = await res.body.text();
  return {
    status: res.statusCode,
    body: (text ? JSON.parse(text) : {}) as Record<string, unknown>,
    headers: res.headers,
  };
}
/** The statuses of `n` calls of `send`, one after the other. */
async function statuses(n: number, send: () => Promise<{ status: number }>): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) out.push((await send()).status);
  return out;
}
const API1: [string, string] = ['api1', 'api1-secret'];
const M2M: [string, string] = ['m2m', 'm2m-secret'];
const ROPC: [string, string] = ['ropc', 'ropc-secret'];
const REF: [string, string] = ['m2m-ref', 'm2m-secret'];

/**
 * A browser's request on a connection of its own (so that the workers take turns), with the
 * cookies of `jar`, which takes the cookies the answer sets.
 */
async function browserRequest(
  jar: Map<string, string>,
  path: string,
  fields?: Record<string, string>,
): Promise<{ status: number; body: string; set: string[] }> {
  const res = await request(`${server?.url}${path}`, {
    method: fields ? 'POST' : 'GET',
    reset: true,
    headers: {
      cookie: [...jar].map(([k, v]) => `${k}=${v}`).join('; '),
      ...(fields ? { 'content-type': 'application/x-www-form-urlencoded' } : {}),
    },
    ...(fields ? { body: form(fields) } : {}),
  });
  const set = [res.headers['set-cookie'] ?? []].flat();
  for (const cookie of set) {
    const pair = cookie.split(';')[0]!;
    const [name, value] = [pair.slice(0, pair.indexOf('=')), pair.slice(pair.indexOf('=') + 1)];
    if (value === '' || /max-age=0/i.test(cookie)) jar.delete(name);
    else jar.set(name, value);
  }
  return { status: res.statusCode, body: await res.body.text(), set };
}

/** Signs in on the login page with the browser of `jar`: 'signed in', 'wrong' or the status. */
async function loginWith(
  jar: Map<string, string>,
  username: string,
  password: string,
): Promise<'signed in' | 'wrong' | number> {
  const page = await browserRequest(jar, '/account/login');
  const answer = await browserRequest(jar, '/account/login', {
    csrf_token: input(page.body, 'csrf_token'),
    username,
    password,
    button: 'login',
  });
  if (answer.set.some((c) => c.startsWith('sigil.session=') && !c.startsWith('sigil.session=;'))) return 'signed in';
  if (answer.status === 200 && answer.body.includes('The username or password is incorrect.')) return 'wrong';
  return answer.status;
}

/** The pids of a process's children (Linux). */
function childrenOf(pid: number): number[] {
  return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
}
const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe('sigil start --workers 2', () => {
  it('runs two workers that agree on tokens, refresh, introspection and revocation; SIGTERM stops them all', async () => {
    server = await startWorkers(config);
    const workers = childrenOf(server.child.pid!);
    expect(workers).toHaveLength(2);

    // Reference tokens: each issued on one connection, introspected on the next ones (both workers).
    const tokens: string[] = [];
    for (let i = 0; i < 6; i++) {
      const issued = await post('/connect/token', { grant_type: 'client_credentials', scope: 'api1' }, REF);
      expect(issued.status).toBe(200);
      tokens.push(issued.body.access_token as string);
    }
    for (const token of tokens)
      for (let i = 0; i < 2; i++) expect((await post('/connect/introspect', { token }, API1)).body.active).toBe(true);

    // Refresh token rotation across workers: each refresh on a new connection; the used one is dead.
    const first = await post(
      '/connect/token',
      { grant_type: 'password', username: 'alice', password: 'alice', scope: 'openid api1 offline_access' },
      ROPC,
    );
    expect(first.status).toBe(200);
    let refresh = first.body.refresh_token as string;
    for (let i = 0; i < 3; i++) {
      const next = await post('/connect/token', { grant_type: 'refresh_token', refresh_token: refresh }, ROPC);
      expect(next.status).toBe(200);
      expect((await post('/connect/introspect', { token: next.body.access_token as string }, API1)).body.active).toBe(
        true,
      );
      refresh = next.body.refresh_token as string;
    }
    expect((await post('/connect/introspect', { token: refresh }, ROPC)).body.active).toBe(true);

    // Revocation on one worker is seen by every worker within the bound.
    for (const token of tokens.slice(0, 3))
      expect((await post('/connect/revocation', { token }, REF)).status).toBe(200);
    expect((await post('/connect/revocation', { token: refresh }, ROPC)).status).toBe(200);
    await sleep(BOUND_MS + 5); // a timer may fire a millisecond early
    for (const token of tokens.slice(0, 3))
      for (let i = 0; i < 2; i++) expect((await post('/connect/introspect', { token }, API1)).body.active).toBe(false);
    for (const token of tokens.slice(3))
      for (let i = 0; i < 2; i++) expect((await post('/connect/introspect', { token }, API1)).body.active).toBe(true);
    for (let i = 0; i < 2; i++)
      expect(
        (await post('/connect/token', { grant_type: 'refresh_token', refresh_token: refresh }, ROPC)).body.error,
      ).toBe('invalid_grant');

    const exited = new Promise<number | null>((ok) => server?.child.once('exit', (code) => ok(code)));
    server.child.kill('SIGTERM');
    expect(await exited).toBe(0);
    expect(workers.filter(alive)).toEqual([]);
  }, 90_000);

  it('a client and an API scope created through /admin/v1 on one worker are in force on both within 2 s (the version poll)', async () => {
    const admin: [string, string] = ['workers-admin', 'workers-admin-secret'];
    server = await startWorkers({
      ...config,
      clients: [
        ...(config.clients ?? []),
        {
          clientId: 'workers-admin',
          clientSecrets: ['workers-admin-secret'],
          allowedGrantTypes: ['client_credentials'],
          allowedScopes: ['sigil:admin'],
        },
      ],
    });
    const token = (await post('/connect/token', { grant_type: 'client_credentials', scope: 'sigil:admin' }, admin)).body
      .access_token as string;
    const create = async (path: string, body: unknown) => {
      const res = await request(`${server?.url}/admin/v1${path}`, {
        method: 'POST',
        reset: true,
        headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
        body: JSON.stringify(body),
      });
      return { status: res.statusCode, body: (await res.body.json()) as Record<string, unknown> };
    };
    expect((await create('/api-scopes', { name: 'reports.read' })).status).toBe(201);
    expect((await create('/api-resources', { name: 'reports', scopes: ['reports.read'] })).status).toBe(201);
    const client = await create('/clients', {
      clientId: 'reporter',
      allowedGrantTypes: ['client_credentials'],
      allowedScopes: ['reports.read'],
    });
    expect(client.status).toBe(201);
    const reporter: [string, string] = ['reporter', client.body.secret as string];
    // Both workers (fresh connections alternate between them) issue for the new client and scope,
    // with the new API resource as audience, within 2 s of the change: the one that made it at
    // once, the other at its next poll. A poll may fall between the three changes, so for up to a
    // poll the other worker can know the scope and client but not yet the API resource: the test
    // waits for the whole change, as a caller would.
    const inForce = (a: { status: number; body: Record<string, unknown> }) =>
      a.status === 200 &&
      a.body.scope === 'reports.read' &&
      [decodeJwt(a.body.access_token as string).aud].flat().includes('reports');
    const deadline = Date.now() + 2000;
    let answers: { status: number; body: Record<string, unknown> }[] = [];
    do {
      answers = [];
      for (let i = 0; i < 4; i++)
        answers.push(
          await post('/connect/token', { grant_type: 'client_credentials', scope: 'reports.read' }, reporter),
        );
      if (answers.every(inForce)) break;
      await sleep(100);
    } while (Date.now() < deadline);
    expect(
      answers.map((a) => [
        a.status,
        a.body.scope,
        a.status === 200 ? [decodeJwt(a.body.access_token as string).aud].flat() : a.body.error,
      ]),
    ).toEqual(answers.map(() => [200, 'reports.read', expect.arrayContaining(['reports'])]));
  }, 90_000);

  it('without Redis, wrong client secrets, wrong passwords and device authorizations from one address are limited for the deployment, not per worker', async () => {
    const limit = 4;
    await startWorkers(
      testConfig({
        logLevel: 'warn',
        // Only the identity-and-address counter and the address quota are in play.
        rateLimits: { maxFailures: limit, windowSeconds: 60, addressMaxFailures: 1000, identitySlowDownAfter: 1000 },
        pendingLimits: { deviceAuthorizationsPerAddress: limit },
        clients: [
          ...(config.clients ?? []),
          {
            clientId: 'tv',
            requireClientSecret: false,
            allowedGrantTypes: ['urn:ietf:params:oauth:grant-type:device_code'],
            allowedScopes: ['openid'],
          },
        ],
      }),
    );
    const refused = (n: number) => Array<number>(n).fill(429);
    // Each call on a fresh connection: the two workers take turns, so each sees half of them.
    expect(
      await statuses(2 * limit + 2, () =>
        post('/connect/token', { grant_type: 'client_credentials' }, ['m2m', 'wrong']),
      ),
    ).toEqual([...Array<number>(limit).fill(401), ...refused(limit + 2)]);
    expect(
      await statuses(2 * limit + 2, () =>
        post('/connect/token', { grant_type: 'password', username: 'bob', password: 'wrong' }, ROPC),
      ),
    ).toEqual([...Array<number>(limit).fill(400), ...refused(limit + 2)]);
    // Refused even with the right credential, on every worker, until the window ends.
    for (let i = 0; i < 2; i++) {
      const right = await post('/connect/token', { grant_type: 'client_credentials' }, M2M);
      expect(right.status).toBe(429);
      expect(Number(right.headers['retry-after'])).toBeGreaterThan(0);
    }
    expect(
      await statuses(2 * limit + 2, () => post('/connect/deviceauthorization', { client_id: 'tv', scope: 'openid' })),
    ).toEqual([...Array<number>(limit).fill(200), ...refused(limit + 2)]);
  }, 60_000);

  it("without Redis, an LDAP account's wrong binds are budgeted for the deployment: strangers share theirs, a browser the account knows keeps its own on either worker, the server never locks", async () => {
    // The directory locks an account after 5 wrong binds; Sigil binds at most 4, 2 of them kept for known browsers.
    const slapd = await startSlapd(LDAP_USERS, { lockoutAfter: 5 });
    try {
      await startWorkers(
        testConfig({
          logLevel: 'warn',
          users: [],
          rateLimits: { maxFailures: 1000, windowSeconds: 60, addressMaxFailures: 1000, identitySlowDownAfter: 1000 },
          userDirectories: [slapd.directoryConfig({ maxFailedBinds: 4, knownBrowserBinds: 2 })] as never,
        }),
      );
      const strangers = () =>
        statuses(8, () =>
          post('/connect/token', { grant_type: 'password', username: 'alice', password: 'wrong' }, ROPC),
        );
      const failedBinds = async () => {
        const admin = await slapd.admin();
        try {
          const value = (await admin.search(`uid=alice,${PEOPLE}`, { scope: 'base', attributes: ['pwdFailureTime'] }))
            .searchEntries[0]?.pwdFailureTime;
          return value === undefined ? 0 : Array.isArray(value) ? value.length : 1;
        } finally {
          await admin.unbind();
        }
      };
      const known = new Map<string, string>();
      expect(await loginWith(known, 'alice', 'alice-pw')).toBe('signed in');
      known.delete('sigil.session');
      // Password grants, the workers taking turns: the strangers' share (2) is the deployment's.
      expect(await strangers()).toEqual([400, 400, 429, 429, 429, 429, 429, 429]);
      // The known browser: a typo on one worker, the right password on the other.
      expect(await loginWith(known, 'alice', 'typo')).toBe('wrong');
      expect(await loginWith(known, 'alice', 'alice-pw')).toBe('signed in');
      known.delete('sigil.session');
      // The right password cleared both shares everywhere; spent again, the known share holds across workers too.
      expect(await strangers()).toEqual([400, 400, 429, 429, 429, 429, 429, 429]);
      expect(await loginWith(known, 'alice', 'typo-1')).toBe('wrong');
      expect(await loginWith(known, 'alice', 'typo-2')).toBe('wrong');
      expect(await loginWith(known, 'alice', 'alice-pw')).toBe(429);
      expect(await failedBinds()).toBe(4);
    } finally {
      // Stopped here, not in afterAll: the later tests' servers start on a machine less busy.
      await server?.stop();
      await slapd.close();
    }
  }, 60_000);

  it('right after start, every worker accepts the JWTs every worker signs, also while the workers add signing keys at the same moments', async () => {
    // Keys replaced every second with no propagation: each worker adds a signing key at start and
    // at every reload, about when its sibling does, and signs at once with it.
    await startWorkers(
      testConfig({ logLevel: 'warn', signingKeys: { propagationSeconds: 0, rotationSeconds: 1, reloadSeconds: 1 } }),
    );
    const rejected: string[] = [];
    let checked = 0;
    // For at least 4 s (several reloads, each adding keys) and at least 24 checks, however slow
    // the machine: the count is a precondition, not a speed the test asserts.
    for (const until = Date.now() + 4000; Date.now() < until || checked < 24; ) {
      const issued = await post('/connect/token', { grant_type: 'client_credentials', scope: 'api1' }, M2M);
      expect(issued.status).toBe(200);
      const token = issued.body.access_token as string;
      // The next two connections: the other worker and the issuing one.
      for (let i = 0; i < 2; i++, checked++)
        if ((await post('/connect/introspect', { token }, API1)).body.active !== true)
          rejected.push(String(decodeProtectedHeader(token).kid));
    }
    expect(checked).toBeGreaterThan(20);
    expect(rejected).toEqual([]);
  }, 60_000);

  it('failed client authentications, a password grant with offline_access, then userinfo on new connections: both workers accept the token, on a fresh store, after a key rotation, after a restart, and for a client just created on the sibling', async () => {
    const { dir, cleanup } = tempDir();
    const admin: [string, string] = ['workers-admin', 'workers-admin-secret'];
    const cfg = testConfig({
      logLevel: 'warn',
      // Rotation signs with the new key at once; both workers re-read the keys every second.
      signingKeys: { propagationSeconds: 0, retentionSeconds: 3600, rotationSeconds: 7776000, reloadSeconds: 1 },
      // The failed authentications of every round stay under the limits: they are counted, never refused.
      rateLimits: { maxFailures: 1000, windowSeconds: 60, addressMaxFailures: 1000, identitySlowDownAfter: 1000 },
      clients: [
        ...(config.clients ?? []),
        {
          clientId: admin[0],
          clientSecrets: [admin[1]],
          allowedGrantTypes: ['client_credentials'],
          allowedScopes: ['sigil:admin'],
        },
      ],
    });
    const port = await freePort();
    const get = async (path: string, token: string) => {
      const res = await request(`${server?.url}${path}`, {
        reset: true,
        headers: { authorization: `Bearer ${token}` },
      });
      return { status: res.statusCode, body: await res.body.text() };
    };
    /** The reviewer's sequence, `rounds` times; the refusals, each with its round and answer. */
    const sequence = async (client: [string, string], rounds: number) => {
      const refused: string[] = [];
      for (let i = 0; i < 4; i++)
        expect((await post('/connect/token', { grant_type: 'client_credentials' }, ['m2m', 'wrong'])).status).toBe(401);
      for (let round = 0; round < rounds; round++) {
        const issued = await post(
          '/connect/token',
          { grant_type: 'password', username: 'alice', password: 'alice', scope: 'openid profile offline_access' },
          client,
        );
        if (issued.status !== 200) {
          refused.push(`${round} token: ${issued.status} ${JSON.stringify(issued.body)}`);
          continue;
        }
        for (let i = 0; i < 4; i++) {
          const info = await get('/connect/userinfo', issued.body.access_token as string);
          if (info.status !== 200) refused.push(`${round} userinfo ${i}: ${info.status} ${info.body}`);
        }
      }
      return refused;
    };
    try {
      server = await startProcess(cfg, port, { dir, args: ['--workers', '2'] });
      started.push(server);
      expect(await sequence(ROPC, 4)).toEqual([]);

      execFileSync(process.execPath, [
        resolve(import.meta.dirname, '../../dist/cli/main.js'),
        'keys',
        'rotate',
        '--config',
        join(dir, 'sigil.json'),
      ]);
      // Across a reload of each worker: one signs with the new key before the other knows it.
      for (const until = Date.now() + 2500; Date.now() < until; ) expect(await sequence(ROPC, 1)).toEqual([]);

      await server.stop();
      server = await startProcess(cfg, port, { dir, args: ['--workers', '2'] });
      started.push(server);
      expect(await sequence(ROPC, 4)).toEqual([]);

      // A client created through /admin/v1 on one worker, used at once: the sibling has not polled
      // the change yet when the first requests reach it.
      const adminToken = (
        await post('/connect/token', { grant_type: 'client_credentials', scope: 'sigil:admin' }, admin)
      ).body.access_token as string;
      for (let n = 0; n < 3; n++) {
        const res = await request(`${server.url}/admin/v1/clients`, {
          method: 'POST',
          reset: true,
          headers: { 'content-type': 'application/json', authorization: `Bearer ${adminToken}` },
          body: JSON.stringify({
            clientId: `fresh-${n}`,
            allowedGrantTypes: ['password'],
            allowedScopes: ['openid', 'profile', 'offline_access'],
            allowOfflineAccess: true,
          }),
        });
        const created = (await res.body.json()) as { secret: string };
        expect(res.statusCode).toBe(201);
        expect(await sequence([`fresh-${n}`, created.secret], 2)).toEqual([]);
      }
    } finally {
      await server?.stop();
      cleanup();
    }
  }, 120_000);

  it('a DPoP proof is used once for the deployment: replayed to either worker it is refused', async () => {
    await startWorkers(config);
    const dpop = await proof(await proofKey(), `${server?.url}/connect/token`);
    const answers = [];
    for (let i = 0; i < 4; i++)
      answers.push(await post('/connect/token', { grant_type: 'client_credentials', scope: 'api1' }, M2M, { dpop }));
    expect(answers.map((a) => a.status)).toEqual([200, 400, 400, 400]);
    expect(answers.slice(1).map((a) => a.body.error)).toEqual(Array(3).fill('invalid_dpop_proof'));
  }, 60_000);

  it('refuses more than one worker with memory storage, naming --workers (exit code 2)', async () => {
    const started = startProcess(config, await freePort(), { args: ['--workers', '2', '--storage', 'memory'] });
    await expect(started).rejects.toThrow(/exited with 2[\s\S]*--workers: "memory" storage/);
  }, 30_000);
});
