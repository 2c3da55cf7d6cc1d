/**
 * Scale-out: two real `sigil start` processes on one PostgreSQL database (a schema of
 * this run's own, dropped afterwards) with one issuer, as two nodes behind a load balancer. Tokens,
 * refresh tokens, sessions and signing keys issued on one node are honoured by the other; single
 * use holds across nodes; `sigil keys rotate` reaches both nodes without a restart.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { createLocalJWKSet, decodeProtectedHeader, type JSONWebKeySet, jwtVerify } from 'jose';
import pg from 'pg';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ConfigInput } from '../../src/index.js';
import { basic, form, sleep, tempDir, testConfig } from '../helpers.js';
import { LogoutReceiver } from '../logout-receiver.js';
import { freePort } from './ports.js';

/** The PostgreSQL database of the tests (CI and here: trust auth, database `test`). */
const POSTGRES_URL = process.env.SIGIL_TEST_POSTGRES ?? 'postgres://postgres@127.0.0.1:5432/test';
const CLI = resolve(import.meta.dirname, '../../dist/cli/main.js');
const CB = 'https://rp.example/cb';
const JWKS_PATH = '/.well-known/openid-configuration/jwks';

interface Node {
  name: string;
  url: string;
  child: ChildProcess;
  output: () => string;
}

interface Reply {
  status: number;
  body: string;
  headers: Record<string, string | string[] | undefined>;
  json: <T = Record<string, unknown>>() => T;
}

/** The environment without the variables that would override the config file. */
function cleanEnv(): NodeJS.ProcessEnv {
  return Object.fromEntries(
    Object.entries(process.env).filter(
      ([k]) => !['PORT', 'SIGIL_CONFIG', 'SIGIL_ISSUER', 'SIGIL_STORAGE', 'SIGIL_DATA_KEY'].includes(k),
    ),
  );
}

/** `node dist/cli/main.js start --config FILE --port PORT`, resolved once it listens. */
async function startNode(name: string, configFile: string, port: number): Promise<Node> {
  const child = spawn(
    process.execPath,
    [CLI, 'start', '--config', configFile, '--port', String(port), '--host', '127.0.0.1'],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: cleanEnv(),
    },
  );
  let out = '';
  child.stdout?.on('data', (b: Buffer) => (out += b.toString()));
  child.stderr?.on('data', (b: Buffer) => (out += b.toString()));
  await new Promise<void>((ok, fail) => {
    const timer = setTimeout(() => fail(new Error(`node ${name} did not start:\n${out}`)), 30_000);
    child.stdout?.on('data', () => {
      if (/listening on http/.test(out)) {
        clearTimeout(timer);
        ok();
      }
    });
    child.on('exit', (code) => {
      clearTimeout(timer);
      fail(new Error(`node ${name} exited with ${code}:\n${out}`));
    });
  });
  return { name, url: `http://127.0.0.1:${port}`, child, output: () => out };
}

async function stopNode(node: Node | undefined): Promise<void> {
  if (!node || node.child.exitCode !== null || node.child.signalCode !== null) return;
  const exited = new Promise((r) => node.child.once('exit', r));
  node.child.kill('SIGTERM');
  await exited;
}

/** Runs `node dist/cli/main.js ...args` to its end. */
function cli(args: string[]): Promise<{ code: number | null; output: string }> {
  const child = spawn(process.execPath, [CLI, ...args], { stdio: ['ignore', 'pipe', 'pipe'], env: cleanEnv() });
  let out = '';
  child.stdout?.on('data', (b: Buffer) => (out += b.toString()));
  child.stderr?.on('data', (b: Buffer) => (out += b.toString()));
  return new Promise((ok) => child.on('exit', (code) => ok({ code, output: out })));
}

async function send(
  method: 'GET' | 'POST',
  url: string,
  opts: { body?: string; headers?: Record<string, string> } = {},
): Promise<Reply> {
  const res = await request(url, {
    method,
    headers: {
      ...(opts.body !== undefined ? { 'content-type': 'application/x-www-form-urlencoded' } : {}),
      ...opts.headers,
    },
    ...(opts.body !== undefined ? { body: opts.body } : {}),
  });
  const body = await res.body.text();
  return { status: res.statusCode, body, headers: res.headers, json: <T>() => JSON.parse(body) as T };
}

function post(
  node: Node,
  path: string,
  params: Record<string, string>,
  auth?: readonly [string, string],
): Promise<Reply> {
  return send('POST', node.url + path, {
    body: form(params),
    headers: auth ? { authorization: basic(auth[0], auth[1]) } : {},
  });
}

const API1 = ['api1', 'api1-secret'] as const;
const ROPC = ['ropc', 'ropc-secret'] as const;

interface Tokens {
  access_token: string;
  refresh_token?: string;
  id_token?: string;
}

async function tokens(node: Node, params: Record<string, string>, auth: readonly [string, string]): Promise<Tokens> {
  const res = await post(node, '/connect/token', params, auth);
  expect(res.status, `${node.name}: ${res.body}`).toBe(200);
  return res.json<Tokens>();
}

const clientToken = (node: Node, clientId = 'm2m') =>
  tokens(node, { grant_type: 'client_credentials', scope: 'api1' }, [clientId, 'm2m-secret']);
const passwordToken = (node: Node) =>
  tokens(
    node,
    { grant_type: 'password', username: 'alice', password: 'alice', scope: 'openid api1 offline_access' },
    ROPC,
  );
const refresh = (node: Node, refreshToken: string) =>
  post(node, '/connect/token', { grant_type: 'refresh_token', refresh_token: refreshToken }, ROPC);

async function introspect(node: Node, token: string): Promise<Record<string, unknown>> {
  const res = await post(node, '/connect/introspect', { token }, API1);
  expect(res.status, res.body).toBe(200);
  return res.json();
}

async function jwks(node: Node): Promise<JSONWebKeySet> {
  const res = await send('GET', node.url + JWKS_PATH);
  expect(res.status).toBe(200);
  return res.json<JSONWebKeySet>();
}

const kids = (set: JSONWebKeySet) => set.keys.map((k) => k.kid!).sort();

/** A cookie-keeping client over real HTTP: the cookies of one browser, sent to any node. */
class CookieBrowser {
  readonly cookies = new Map<string, string>();

  async get(url: string): Promise<Reply> {
    return this.keep(await send('GET', url, { headers: this.header() }));
  }

  async post(url: string, fields: Record<string, string>): Promise<Reply> {
    return this.keep(await send('POST', url, { body: form(fields), headers: this.header() }));
  }

  private header(): Record<string, string> {
    return this.cookies.size === 0 ? {} : { cookie: [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ') };
  }

  private keep(reply: Reply): Reply {
    const raw = reply.headers['set-cookie'];
    for (const line of raw === undefined ? [] : Array.isArray(raw) ? raw : [raw]) {
      const [pair = '', ...attributes] = line.split(';').map((s) => s.trim());
      const eq = pair.indexOf('=');
      const name = pair.slice(0, eq);
      const value = pair.slice(eq + 1);
      const gone = attributes.some(
        (a) => /^max-age=(0|-)/i.test(a) || (/^expires=/i.test(a) && Date.parse(a.slice(8)) < Date.now()),
      );
      if (value === '' || gone) this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
    return reply;
  }
}

/** A new browser signed in as alice on `node`'s login page. */
async function signIn(node: Node): Promise<CookieBrowser> {
  const browser = new CookieBrowser();
  const page = await browser.get(`${node.url}/account/login`);
  expect(page.status).toBe(200);
  const csrf = /name="csrf_token" value="([^"]*)"/.exec(page.body)?.[1];
  expect(csrf).toBeTruthy();
  const signedIn = await browser.post(`${node.url}/account/login`, {
    csrf_token: csrf!,
    username: 'alice',
    password: 'alice',
    button: 'login',
  });
  expect(signedIn.status, signedIn.body).toBe(200);
  expect(browser.cookies.has('sigil.session')).toBe(true);
  return browser;
}

function authorizeQuery(extra: Record<string, string> = {}): { query: string; verifier: string } {
  const verifier = randomBytes(48).toString('base64url');
  const challenge = createHash('sha256').update(verifier).digest('base64url');
  const params = {
    client_id: 'web',
    response_type: 'code',
    redirect_uri: CB,
    scope: 'openid profile',
    state: 'st',
    code_challenge: challenge,
    code_challenge_method: 'S256',
    ...extra,
  };
  return { query: new URLSearchParams(params).toString(), verifier };
}

describe('two Sigil nodes on one PostgreSQL database', () => {
  // A schema of this run's own, so that runs cannot collide.
  const schema = `sigil_e2e_${process.pid}_${randomBytes(4).toString('hex')}`;
  const storage = `${POSTGRES_URL}?schema=${schema}`;
  const work = tempDir();
  const configFile = join(work.dir, 'sigil.json');
  let a: Node;
  let b: Node;
  let issuer: string;

  beforeAll(async () => {
    const [portA, portB] = [await freePort(), await freePort()];
    issuer = `http://127.0.0.1:${portA}`;
    const base = testConfig();
    const config: ConfigInput = {
      ...base,
      issuer,
      storage,
      signingKeys: { propagationSeconds: 0, reloadSeconds: 1 },
      clients: [
        ...(base.clients ?? []),
        {
          clientId: 'web',
          clientSecrets: ['web-secret'],
          allowedGrantTypes: ['authorization_code'],
          allowedScopes: ['openid', 'profile', 'api1'],
          redirectUris: [CB],
        },
      ],
    };
    writeFileSync(configFile, JSON.stringify(config));
    // One after the other, as a rolling deployment does: B finds A's keys in the store.
    a = await startNode('A', configFile, portA);
    b = await startNode('B', configFile, portB);
  });

  afterAll(async () => {
    await Promise.all([stopNode(a), stopNode(b)]);
    const db = new pg.Client({ connectionString: POSTGRES_URL });
    await db.connect();
    await db.query(`drop schema if exists ${schema} cascade`).finally(() => db.end());
    work.cleanup();
  });

  it('both nodes publish the same keys, created once', async () => {
    expect(await jwks(b)).toEqual(await jwks(a));
    expect(kids(await jwks(a))).toHaveLength(2);
  });

  it('an access token issued by A introspects as active on B (JWT and reference); a revocation on B is seen by A', async () => {
    const jwt = await clientToken(a);
    expect(await introspect(b, jwt.access_token)).toMatchObject({ active: true, client_id: 'm2m', iss: issuer });
    const jwtB = await clientToken(b);
    expect(await introspect(a, jwtB.access_token)).toMatchObject({ active: true, client_id: 'm2m' });

    const ref = await clientToken(a, 'm2m-ref');
    expect(ref.access_token).not.toContain('.');
    expect(await introspect(b, ref.access_token)).toMatchObject({ active: true, client_id: 'm2m-ref' });
    const revoked = await post(b, '/connect/revocation', { token: ref.access_token }, ['m2m-ref', 'm2m-secret']);
    expect(revoked.status).toBe(200);
    expect(await introspect(a, ref.access_token)).toEqual({ active: false });
  });

  it('a refresh token from A refreshes on B; a second use on A is refused and ends the grant', async () => {
    const first = await passwordToken(a);
    const onB = await refresh(b, first.refresh_token!);
    expect(onB.status, onB.body).toBe(200);
    const rotated = onB.json<Tokens>();
    expect(rotated.refresh_token).toBeTruthy();
    expect(rotated.refresh_token).not.toBe(first.refresh_token);

    const again = await refresh(a, first.refresh_token!);
    expect(again.status).toBe(400);
    expect(again.json()).toMatchObject({ error: 'invalid_grant' });
    // Reuse revoked the whole family (RFC 9700 §4.14.2): B's new tokens are dead on both nodes.
    expect((await refresh(b, rotated.refresh_token!)).status).toBe(400);
    expect(await introspect(a, rotated.access_token)).toEqual({ active: false });
  });

  it('20 concurrent uses of one refresh token, 10 on A and 10 on B: exactly one succeeds', async () => {
    const { refresh_token: token } = await passwordToken(b);
    const results = await Promise.all(Array.from({ length: 20 }, (_, i) => refresh(i % 2 === 0 ? a : b, token!)));
    const winners = results.filter((r) => r.status === 200);
    expect(winners).toHaveLength(1);
    for (const r of results.filter((x) => x.status !== 200)) {
      expect(r.status).toBe(400);
      expect(r.json()).toMatchObject({ error: 'invalid_grant' });
    }
    // The losers' reuse revoked the family, including what the winner got.
    const won = winners[0]!.json<Tokens>();
    expect((await refresh(a, won.refresh_token!)).status).toBe(400);
    expect(await introspect(b, won.access_token)).toEqual({ active: false });
  });

  it("a session started on A is honoured by B's authorize endpoint (prompt=none)", async () => {
    const browser = await signIn(a);

    // The same browser (cookies are per host, not per port) on node B, without any prompt.
    const { query, verifier } = authorizeQuery({ prompt: 'none' });
    const step = await browser.get(`${b.url}/connect/authorize?${query}`);
    expect(step.status, step.body).toBe(303);
    const location = new URL(String(step.headers.location));
    expect(location.origin + location.pathname).toBe(CB);
    expect(location.searchParams.get('error')).toBeNull();
    expect(location.searchParams.get('state')).toBe('st');
    expect(location.searchParams.get('iss')).toBe(issuer);
    const code = location.searchParams.get('code');
    expect(code).toBeTruthy();

    // Without the session cookie, B asks for a login.
    const anonymous = await send('GET', `${b.url}/connect/authorize?${authorizeQuery({ prompt: 'none' }).query}`);
    expect(new URL(String(anonymous.headers.location)).searchParams.get('error')).toBe('login_required');

    // The code issued by B is redeemed on A; the identity token is alice's, for her session.
    const redeemed = await tokens(
      a,
      { grant_type: 'authorization_code', code: code!, redirect_uri: CB, code_verifier: verifier },
      ['web', 'web-secret'],
    );
    const { payload } = await jwtVerify(redeemed.id_token!, createLocalJWKSet(await jwks(b)), {
      issuer,
      audience: 'web',
    });
    expect(payload.sub).toBe('1');
    expect(payload.sid).toBeTruthy();
  });

  it('after `sigil keys rotate` both nodes publish the same JWKS, sign with the new keys, and still accept tokens signed before', async () => {
    // Tokens and keys of before the rotation.
    const oldJwks = await jwks(a);
    const before = [await clientToken(a), await clientToken(b), await passwordToken(a)];
    const oldKid = decodeProtectedHeader(before[0]!.access_token).kid;
    expect(kids(oldJwks)).toContain(oldKid);

    // Keys created in one second cannot be ordered (the store keeps seconds): rotate in a later one.
    const db = new pg.Client({ connectionString: POSTGRES_URL });
    await db.connect();
    try {
      const { rows } = await db.query<{ t: string }>(`select max(created_at) as t from ${schema}.signing_keys`);
      while (Math.floor(Date.now() / 1000) <= Number(rows[0]!.t)) await sleep(100);
    } finally {
      await db.end();
    }

    const rotated = await cli(['keys', 'rotate', '--config', configFile]);
    expect(rotated.code, rotated.output).toBe(0);
    const added = [...rotated.output.matchAll(/added (\w+) key (\S+):/g)].map((m) => ({ alg: m[1]!, kid: m[2]! }));
    expect(added.map((k) => k.alg).sort()).toEqual(['ES256', 'RS256']);
    const newRs256 = added.find((k) => k.alg === 'RS256')!.kid;

    // Both nodes re-read the keys every second; wait until both publish the new ones.
    let setA = oldJwks;
    let setB = oldJwks;
    for (let i = 0; i < 100; i++) {
      [setA, setB] = await Promise.all([jwks(a), jwks(b)]);
      if (added.every((k) => kids(setA).includes(k.kid) && kids(setB).includes(k.kid))) break;
      await sleep(200);
    }
    expect(setB).toEqual(setA);
    expect(kids(setA)).toEqual([...kids(oldJwks), ...added.map((k) => k.kid)].sort());

    const listed = await cli(['keys', 'list', '--config', configFile]);
    expect(listed.code, listed.output).toBe(0);
    expect(listed.output).toMatch(new RegExp(`${oldKid}\\s+RS256\\s+retired`));
    expect(listed.output).toMatch(new RegExp(`${newRs256}\\s+RS256\\s+active`));

    // New tokens, from either node, carry the new kid (RS256 is the first configured algorithm).
    const after = [await clientToken(a), await clientToken(b), await passwordToken(b)];
    for (const t of after) {
      expect(decodeProtectedHeader(t.access_token).kid).toBe(newRs256);
      if (t.id_token) expect(decodeProtectedHeader(t.id_token).kid).toBe(newRs256);
    }
    // Tokens signed before the rotation still validate: introspection on both nodes, and the
    // published keys of either node.
    const keySet = createLocalJWKSet(setB);
    for (const t of before) {
      expect(decodeProtectedHeader(t.access_token).kid).toBe(oldKid);
      expect(await introspect(a, t.access_token)).toMatchObject({ active: true });
      expect(await introspect(b, t.access_token)).toMatchObject({ active: true });
      await expect(jwtVerify(t.access_token, keySet, { issuer })).resolves.toBeTruthy();
      if (t.id_token) await expect(jwtVerify(t.id_token, keySet, { issuer, audience: 'ropc' })).resolves.toBeTruthy();
    }
    for (const t of after) {
      expect(await introspect(a, t.access_token)).toMatchObject({ active: true });
      expect(await introspect(b, t.access_token)).toMatchObject({ active: true });
    }
    // A refresh token issued before the rotation still refreshes, now with the new key.
    const refreshed = await refresh(b, before[2]!.refresh_token!);
    expect(refreshed.status, refreshed.body).toBe(200);
    expect(decodeProtectedHeader(refreshed.json<Tokens>().access_token).kid).toBe(newRs256);
  });
});

/** A PostgreSQL schema of this run's own, dropped by the returned function. */
function ownSchema(): { schema: string; drop: () => Promise<void> } {
  const schema = `sigil_e2e_${process.pid}_${randomBytes(4).toString('hex')}`;
  const drop = async () => {
    const db = new pg.Client({ connectionString: POSTGRES_URL });
    await db.connect();
    await db.query(`drop schema if exists ${schema} cascade`).finally(() => db.end());
  };
  return { schema, drop };
}

/**
 * OIDC Back-Channel Logout 1.0 with durable delivery on a cluster: logout tokens are queued in the
 * store with the session's end and sent by whichever node claims them first, once; a delivery
 * under way when every node is killed (SIGKILL) is sent after the restart.
 */
describe('back-channel logout across two nodes on one PostgreSQL database', () => {
  const { schema, drop } = ownSchema();
  const work = tempDir();
  const configFile = join(work.dir, 'sigil.json');
  const BYE = 'https://rp.example/bye';
  let receiver: LogoutReceiver;
  let ports: number[];
  let c: Node;
  let d: Node;
  let issuer: string;

  beforeAll(async () => {
    receiver = await LogoutReceiver.start();
    ports = [await freePort(), await freePort()];
    issuer = `http://127.0.0.1:${ports[0]}`;
    const base = testConfig();
    const config: ConfigInput = {
      ...base,
      issuer,
      storage: `${POSTGRES_URL}?schema=${schema}`,
      logLevel: 'warn',
      signingKeys: { propagationSeconds: 0, reloadSeconds: 1 },
      // A receiver answering later than timeoutSeconds counts as a failed attempt though it took
      // the token (it records on arrival): the retry 1 s later is a second receipt, which the
      // "delivered once" checks below would see. 1 s was within reach of a loaded machine.
      backChannelLogout: { pollSeconds: 1, timeoutSeconds: 3, retrySeconds: 120 },
      clients: [
        ...(base.clients ?? []),
        {
          clientId: 'web',
          clientSecrets: ['web-secret'],
          allowedGrantTypes: ['authorization_code'],
          allowedScopes: ['openid', 'profile'],
          redirectUris: [CB],
          postLogoutRedirectUris: [BYE],
          backChannelLogoutUri: `${receiver.url}/bc`,
        },
      ],
    };
    writeFileSync(configFile, JSON.stringify(config));
    c = await startNode('C', configFile, ports[0]!);
    d = await startNode('D', configFile, ports[1]!);
  });

  afterAll(async () => {
    await Promise.all([stopNode(c), stopNode(d)]);
    await receiver.close();
    await drop();
    work.cleanup();
  });

  /** A session of alice signed in on `node`, with an identity token of client `web` from it. */
  async function session(node: Node): Promise<{ browser: CookieBrowser; idToken: string; sid: string }> {
    const browser = await signIn(node);
    const { query, verifier } = authorizeQuery({ scope: 'openid' });
    const step = await browser.get(`${node.url}/connect/authorize?${query}`);
    const code = new URL(String(step.headers.location)).searchParams.get('code');
    expect(code, step.body).toBeTruthy();
    const { id_token: idToken } = await tokens(
      node,
      { grant_type: 'authorization_code', code: code!, redirect_uri: CB, code_verifier: verifier },
      ['web', 'web-secret'],
    );
    const { payload } = await jwtVerify(idToken!, createLocalJWKSet(await jwks(node)), { issuer, audience: 'web' });
    return { browser, idToken: idToken!, sid: String(payload.sid) };
  }

  it('RP-initiated logout on D of a session from C: one valid logout token, delivered once though both nodes poll', async () => {
    const { browser, idToken, sid } = await session(c);
    const step = await browser.get(
      `${d.url}/connect/endsession?${new URLSearchParams({ id_token_hint: idToken, post_logout_redirect_uri: BYE })}`,
    );
    expect(step.status).toBe(303);
    expect(step.headers.location).toBe(BYE);
    await receiver.waitFor(() => receiver.delivered.length, 1);
    const { payload, protectedHeader } = await jwtVerify(
      receiver.delivered[0]!.token,
      createLocalJWKSet(await jwks(c)),
      { issuer, audience: 'web', typ: 'logout+jwt' },
    );
    expect(protectedHeader.typ).toBe('logout+jwt');
    expect(payload).toMatchObject({
      sub: '1',
      sid,
      events: { 'http://schemas.openid.net/event/backchannel-logout': {} },
    });
    await sleep(3000);
    expect(receiver.received).toHaveLength(1);
  });

  it('`sigil users sessions revoke alice` ends her sessions; each logout token reaches the client once', async () => {
    receiver.received.length = 0;
    const sids: string[] = [];
    for (let i = 0; i < 6; i++) sids.push((await session(i % 2 === 0 ? c : d)).sid);
    const revoked = await cli(['users', 'sessions', 'revoke', 'alice', '--config', configFile]);
    expect(revoked.code, revoked.output).toBe(0);
    expect(revoked.output).toContain('ended 6 sessions of alice');
    await receiver.waitFor(() => receiver.delivered.length, 6);
    await sleep(3000);
    expect(receiver.received.map((r) => r.sid).sort()).toEqual(sids.sort());
    expect(receiver.received.every((r) => r.answer === 'ok')).toBe(true);
  });

  it('kill -9 of every node while a logout token is being sent, then a restart: it is still delivered', async () => {
    receiver.received.length = 0;
    const { sid } = await session(c);
    receiver.script.push('hang');
    const hung = receiver.nextHang();
    const revoked = await cli(['users', 'sessions', 'revoke', 'alice', '--config', configFile]);
    expect(revoked.code, revoked.output).toBe(0);
    await hung;
    const exits = [c, d].map((node) => new Promise((ok) => node.child.once('exit', ok)));
    c.child.kill('SIGKILL');
    d.child.kill('SIGKILL');
    await Promise.all(exits);
    expect(receiver.delivered).toHaveLength(0);
    c = await startNode('C', configFile, ports[0]!);
    d = await startNode('D', configFile, ports[1]!);
    await receiver.waitFor(() => receiver.delivered.length, 1, 30_000);
    expect(receiver.delivered[0]!.sid).toBe(sid);
    await sleep(3000);
    expect(receiver.delivered).toHaveLength(1);
  });
});
