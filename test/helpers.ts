/**
 * Test fixtures: a config with the clients, users and APIs most suites share, an in-process
 * provider on a real SQLite file, and the real `sigil start` process on a socket.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { LightMyRequestResponse } from 'fastify';
import { createLocalJWKSet, type JSONWebKeySet } from 'jose';
import pg from 'pg';
import { pino } from 'pino';
import { createSigil, type ConfigInput, type Sigil, type SigilOptions } from '../src/index.js';

/** A fixture config; `overrides` replace top-level fields. */
export function testConfig(overrides: Partial<ConfigInput> = {}): ConfigInput {
  return {
    issuer: 'http://127.0.0.1:5999',
    storage: 'memory',
    logLevel: 'silent',
    // Any free port: processes started from this config run side by side (`sigil start` prints it).
    metrics: { host: '127.0.0.1', port: 0 },
    signingAlgorithms: ['RS256', 'ES256'],
    identityResources: [
      { name: 'openid', userClaims: ['sub'], required: true },
      { name: 'profile', userClaims: ['name', 'given_name', 'family_name'] },
      { name: 'email', userClaims: ['email', 'email_verified'] },
      { name: 'roles', userClaims: ['role'] },
    ],
    apiScopes: [{ name: 'api1' }, { name: 'api2', userClaims: ['email'] }],
    apiResources: [
      { name: 'api1', scopes: ['api1'], secrets: ['api1-secret'], userClaims: ['role'] },
      {
        name: 'api2',
        scopes: ['api2'],
        secrets: [`sha256:${createHash('sha256').update('api2-secret').digest('base64')}`],
      },
    ],
    clients: [
      {
        clientId: 'm2m',
        clientSecrets: ['m2m-secret'],
        allowedGrantTypes: ['client_credentials'],
        allowedScopes: ['api1', 'api2'],
      },
      {
        clientId: 'm2m-ref',
        clientSecrets: ['m2m-secret'],
        allowedGrantTypes: ['client_credentials'],
        allowedScopes: ['api1'],
        accessTokenType: 'reference',
      },
      {
        clientId: 'ropc',
        clientSecrets: ['ropc-secret'],
        allowedGrantTypes: ['password', 'urn:ietf:params:oauth:grant-type:token-exchange'],
        allowedScopes: ['openid', 'profile', 'email', 'roles', 'api1', 'api2', 'offline_access'],
        allowOfflineAccess: true,
      },
      {
        clientId: 'ropc-ref',
        clientSecrets: ['ropc-secret'],
        allowedGrantTypes: ['password'],
        allowedScopes: ['openid', 'profile', 'api1', 'offline_access'],
        allowOfflineAccess: true,
        accessTokenType: 'reference',
        refreshTokenUsage: 'reuse',
        refreshTokenExpiration: 'sliding',
      },
      {
        clientId: 'spa',
        requireClientSecret: false,
        allowedGrantTypes: ['password'],
        allowedScopes: ['openid', 'api1', 'offline_access'],
        allowOfflineAccess: true,
        absoluteRefreshTokenLifetime: 20,
        allowedCorsOrigins: ['https://spa.example'],
      },
      { clientId: 'c:1', clientSecrets: ['s+/%'], allowedGrantTypes: ['client_credentials'], allowedScopes: ['api1'] },
      {
        clientId: 'other',
        clientSecrets: ['other-secret'],
        allowedGrantTypes: ['password'],
        allowedScopes: ['openid', 'api1', 'offline_access'],
        allowOfflineAccess: true,
      },
    ],
    users: [
      {
        subjectId: '1',
        username: 'alice',
        password: 'alice',
        claims: {
          name: 'Alice Smith',
          given_name: 'Alice',
          family_name: 'Smith',
          email: 'alice@example.com',
          email_verified: true,
          role: ['admin'],
        },
      },
      { subjectId: '2', username: 'bob', password: 'bob', claims: { name: 'Bob', role: ['user', 'dev'] } },
      { subjectId: '3', username: 'carol', password: 'carol', tenant: 'acme', claims: { name: 'Carol of Acme' } },
      { subjectId: '4', username: 'dave', password: 'dave', isActive: false, claims: {} },
    ],
    ...overrides,
  };
}

/** The PostgreSQL database of the tests (CI and here: trust auth, database `test`). */
export const POSTGRES_URL = process.env.SIGIL_TEST_POSTGRES ?? 'postgres://postgres@127.0.0.1:5432/test';

/** A PostgreSQL schema name no other run uses. */
export function uniqueSchema(prefix: string): string {
  return `${prefix}_${process.pid}_${randomBytes(4).toString('hex')}`;
}

/** Drops a test schema with everything in it. */
export async function dropSchema(schema: string): Promise<void> {
  const client = new pg.Client({ connectionString: POSTGRES_URL });
  await client.connect();
  try {
    await client.query(`drop schema if exists ${schema} cascade`);
  } finally {
    await client.end();
  }
}

/** A fresh temporary directory, removed by the returned `cleanup`. */
export function tempDir(): { dir: string; cleanup: () => void } {
  const dir = mkdtempSync(join(tmpdir(), 'sigil-test-'));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/** An in-process provider on a real SQLite file in a temp dir (use `app.inject`). */
export async function startSigil(
  overrides: Partial<ConfigInput> = {},
  options: SigilOptions = {},
): Promise<Sigil & { dir: string }> {
  const { dir, cleanup } = tempDir();
  const sigil = await createSigil(testConfig({ storage: `sqlite:${join(dir, 'sigil.db')}`, ...overrides }), {
    logger: pino({ level: 'silent' }),
    ...options,
  });
  const close = sigil.close;
  return {
    ...sigil,
    dir,
    close: async () => {
      await close();
      cleanup();
    },
  };
}

/** The real `sigil start` process on a free port, as `npm start` runs it. */
export interface ServerProcess {
  url: string;
  child: ChildProcess;
  output: () => string;
  stop: () => Promise<void>;
}

const CLI = resolve(import.meta.dirname, '../dist/cli/main.js');

/**
 * Writes `config` to a temp file and runs `node dist/cli/main.js start --config FILE --port PORT`,
 * resolving once it prints `listening on <url>`. The issuer is set to that URL via a fixed port
 * (host `options.issuerHost`, default 127.0.0.1; the process listens on 127.0.0.1).
 * `options.dir`: a folder of the caller's holding the SQLite file `sigil.db`, kept on `stop` (to
 * start again on the same store); `options.args`: more `sigil start` flags (e.g. `--workers 2`);
 * `options.env`: more environment variables (e.g. `NODE_EXTRA_CA_CERTS` for a test's own CA);
 * `options.storage`: another store than the SQLite file (a PostgreSQL schema).
 */
export async function startProcess(
  config: ConfigInput,
  port: number,
  options: { dir?: string; args?: string[]; issuerHost?: string; env?: Record<string, string>; storage?: string } = {},
): Promise<ServerProcess> {
  const issuerHost = options.issuerHost ?? '127.0.0.1';
  const { dir, cleanup } = options.dir ? { dir: options.dir, cleanup: () => {} } : tempDir();
  const file = join(dir, 'sigil.json');
  // issuerHost: `localhost` for WebAuthn, whose RP ID must be a domain name, not an IP address.
  const issuer = `http://${issuerHost}:${port}`;
  const storage = options.storage ?? `sqlite:${join(dir, 'sigil.db')}`;
  writeFileSync(file, JSON.stringify({ ...config, issuer, storage }));
  const child = spawn(
    process.execPath,
    [CLI, 'start', '--config', file, '--port', String(port), '--host', '127.0.0.1', ...(options.args ?? [])],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
      ...(options.env ? { env: { ...process.env, ...options.env } } : {}),
    },
  );
  let out = '';
  child.stdout?.on('data', (b: Buffer) => (out += b.toString()));
  child.stderr?.on('data', (b: Buffer) => (out += b.toString()));
  await new Promise<void>((ok, fail) => {
    const timer = setTimeout(() => fail(new Error(`server did not start:\n${out}`)), 20_000);
    const check = () => {
      if (/listening on http/.test(out)) {
        clearTimeout(timer);
        ok();
      }
    };
    child.stdout?.on('data', check);
    child.on('exit', (code) => {
      clearTimeout(timer);
      fail(new Error(`server exited with ${code}:\n${out}`));
    });
  });
  return {
    url: issuer,
    child,
    output: () => out,
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) {
        const exited = new Promise((r) => child.once('exit', r));
        child.kill('SIGTERM');
        await exited;
      }
      cleanup();
    },
  };
}

/** Form-encodes parameters. */
export function form(params: Record<string, string>): string {
  return new URLSearchParams(params).toString();
}

/** An `Authorization: Basic` value with form-url-encoded id and secret (RFC 6749 §2.3.1). */
export function basic(id: string, secret: string): string {
  const enc = (s: string) => encodeURIComponent(s).replace(/%20/g, '+');
  return `Basic ${Buffer.from(`${enc(id)}:${enc(secret)}`).toString('base64')}`;
}

/** A provider started by `startSigil`. */
export type TestSigil = Awaited<ReturnType<typeof startSigil>>;

/** Client credentials for `client_secret_basic`: `[clientId, secret]`. */
export type BasicCredentials = readonly [id: string, secret: string];

/** POSTs a form to `url`, with `Authorization: Basic` when `auth` is given, plus extra headers. */
export function postForm(
  sigil: TestSigil,
  url: string,
  params: Record<string, string>,
  auth?: BasicCredentials,
  headers: Record<string, string> = {},
): Promise<LightMyRequestResponse> {
  return sigil.app.inject({
    method: 'POST',
    url,
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      ...(auth ? { authorization: basic(auth[0], auth[1]) } : {}),
      ...headers,
    },
    payload: form(params),
  });
}

/** A token request (`POST /connect/token`). */
export function tokenRequest(
  sigil: TestSigil,
  params: Record<string, string>,
  auth?: BasicCredentials,
): Promise<LightMyRequestResponse> {
  return postForm(sigil, '/connect/token', params, auth);
}

/** The successful token response of RFC 6749 §5.1 as the tests read it. */
export interface TokenBody {
  access_token: string;
  token_type: string;
  expires_in: number;
  scope: string;
  refresh_token?: string;
  id_token?: string;
  issued_token_type?: string;
}

/**
 * A password grant for a user (default: `alice` at client `ropc`); fails the test unless it is 200.
 */
export async function passwordTokens(
  sigil: TestSigil,
  opts: {
    client?: BasicCredentials;
    username?: string;
    password?: string;
    scope?: string;
    extra?: Record<string, string>;
  } = {},
): Promise<TokenBody> {
  const res = await tokenRequest(
    sigil,
    {
      grant_type: 'password',
      username: opts.username ?? 'alice',
      password: opts.password ?? opts.username ?? 'alice',
      ...(opts.scope !== undefined ? { scope: opts.scope } : {}),
      ...opts.extra,
    },
    opts.client ?? ['ropc', 'ropc-secret'],
  );
  if (res.statusCode !== 200) throw new Error(`password grant failed: ${res.statusCode} ${res.body}`);
  return res.json<TokenBody>();
}

/** A client_credentials token (default client `m2m`); fails the test unless it is 200. */
export async function clientTokens(
  sigil: TestSigil,
  scope?: string,
  client: BasicCredentials = ['m2m', 'm2m-secret'],
): Promise<TokenBody> {
  const res = await tokenRequest(sigil, { grant_type: 'client_credentials', ...(scope ? { scope } : {}) }, client);
  if (res.statusCode !== 200) throw new Error(`client_credentials failed: ${res.statusCode} ${res.body}`);
  return res.json<TokenBody>();
}

/** Introspects `token` (default caller: API resource `api1`) and returns the response. */
export function introspect(
  sigil: TestSigil,
  token: string,
  caller: BasicCredentials = ['api1', 'api1-secret'],
  extra: Record<string, string> = {},
): Promise<LightMyRequestResponse> {
  return postForm(sigil, '/connect/introspect', { token, ...extra }, caller);
}

/** `GET /connect/userinfo` with `Authorization: Bearer <accessToken>`. */
export function userinfo(sigil: TestSigil, accessToken: string): Promise<LightMyRequestResponse> {
  return sigil.app.inject({
    method: 'GET',
    url: '/connect/userinfo',
    headers: { authorization: `Bearer ${accessToken}` },
  });
}

/** The provider's published keys, fetched over HTTP, for `jwtVerify`. */
export async function fetchJwks(sigil: TestSigil): Promise<ReturnType<typeof createLocalJWKSet>> {
  const res = await sigil.app.inject({ method: 'GET', url: '/.well-known/openid-configuration/jwks' });
  return createLocalJWKSet(res.json<JSONWebKeySet>());
}

/** Resolves after `ms` milliseconds (only for waiting out token lifetimes). */
export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** Asserts a response is no server error and leaks no stack trace, path or SQL text. */
export function expectNoLeak(res: LightMyRequestResponse): void {
  if (res.statusCode >= 500) throw new Error(`server error ${res.statusCode}: ${res.body}`);
  const leak = /\bat \S+ \(|\.ts:\d|\.js:\d|node_modules|SQLITE|syntax error|Error:/.exec(res.body);
  if (leak) throw new Error(`response leaks internals (${leak[0]}): ${res.body}`);
}

/**
 * Calls `probe` every 100 ms until `done(answer)` holds or `ms` milliseconds have passed, and
 * returns the last answer either way, for the caller to assert on (a failure then shows what was
 * last seen). For what another process or a background poll does in its own time: a fixed sleep
 * before the assertion races that poll on a slow machine.
 */
export async function settled<T>(probe: () => Promise<T>, done: (answer: T) => boolean, ms = 10_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const answer = await probe();
    if (done(answer) || Date.now() >= deadline) return answer;
    await sleep(100);
  }
}
