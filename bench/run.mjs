// Side-by-side throughput benchmark: Sigil against node-oidc-provider on loopback, same run, same machine.
//
//   node bench/run.mjs [--storage sqlite|memory|postgres://...] [--scenarios a,b,c,d,e,f,g,i[,h][,j]]
// (npm run bench -- ...)
//   env: BENCH_DURATION (s, default 10), BENCH_ROUNDS (default 5), BENCH_WARMUP (s, default 2),
// BENCH_CONNECTIONS (default 32),
//        BENCH_SUSTAINED (s, default 300: scenario h, not run unless named),
//        BENCH_CPU_PROF (a directory: Sigil runs with --cpu-prof there; summarise with bench/profile-top.mjs)
//
// See bench/README.md for what is measured and how to read the ratios.
import { execFileSync, spawn } from 'node:child_process';
import { generateKeyPairSync, randomUUID, sign } from 'node:crypto';
import {
  closeSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { createServer } from 'node:net';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import { decodeJwt, decodeProtectedHeader } from 'jose';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const HOST = '127.0.0.1';
const SECRET = 'bench-secret';
const API = { id: 'api1', secret: 'api1-secret' };
const STARTUP_TIMEOUT_MS = 30_000;
const STOP_TIMEOUT_MS = 5_000;
const FETCH_TIMEOUT_MS = 10_000;
/** Node options for Sigil's processes: a CPU profile per process when BENCH_CPU_PROF names a directory. */
const SIGIL_NODE_ARGS = process.env.BENCH_CPU_PROF
  ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`]
  : [];

const SCENARIOS = [
  { id: 'a', name: 'client_credentials -> JWT ES256', alg: 'ES256', kind: 'token', client: 'bench-jwt' },
  { id: 'b', name: 'client_credentials -> JWT RS256', alg: 'RS256', kind: 'token', client: 'bench-jwt' },
  { id: 'c', name: 'client_credentials -> reference', alg: 'ES256', kind: 'token', client: 'bench-ref' },
  // a as `npm start` runs Sigil: its default config (info-level audit events on stdout, to a file).
  {
    id: 'f',
    name: 'client_credentials -> JWT ES256, Sigil default config',
    alg: 'ES256',
    kind: 'token',
    client: 'bench-jwt',
    defaultConfig: true,
  },
  { id: 'd', name: 'introspection of reference token', alg: 'ES256', kind: 'introspect', client: 'bench-ref' },
  {
    id: 'e',
    name: 'introspection of JWT (ES256)',
    alg: 'ES256',
    kind: 'introspect',
    client: 'bench-jwt',
    unsupported: { provider: 'node-oidc-provider refuses to introspect JWT access tokens (unsupported_token_type)' },
  },
  // Every request carries a fresh client assertion (RFC 7523) and a fresh DPoP proof (RFC 9449),
  // both ES256, both single-use (jti): the servers verify two signatures and record two jtis.
  {
    id: 'i',
    name: 'client_credentials, private_key_jwt + DPoP -> JWT ES256',
    alg: 'ES256',
    kind: 'token',
    client: 'bench-pkjwt',
    signed: true,
  },
  // The password grant of a user in an LDAP directory, against a local slapd started by
  // the harness (test/ldap-server.mjs). node-oidc-provider has neither the password grant nor LDAP:
  // the comparison column is Sigil's own password grant for a config user, on the same Sigil
  // process in the same rounds. Only when named (it needs Debian's slapd).
  {
    id: 'j',
    name: 'password grant, LDAP directory user -> JWT ES256',
    alg: 'ES256',
    kind: 'token',
    client: 'bench-ropc',
    directory: true,
    comparedWith:
      "Sigil's own password grant for a config user (same process, same rounds); node-oidc-provider has no password grant and no LDAP",
  },
];

/**
 * The signed-request client of scenario i, in Sigil's config shape (the harness adds it with its
 * key to a copy of bench/sigil.<alg>.json; bench/oidc-provider-server.mjs defines its own).
 */
const sigilSignedClient = (jwk) => ({
  clientId: 'bench-pkjwt',
  clientSecrets: [],
  jwks: { keys: [jwk] },
  tokenEndpointAuthMethod: 'private_key_jwt',
  requireDPoP: true,
  allowedGrantTypes: ['client_credentials'],
  allowedScopes: ['api1'],
  accessTokenType: 'jwt',
  accessTokenLifetime: 3600,
});

/** A P-256 key pair for ES256: the private KeyObject and the public JWK. */
function es256Key(kid) {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  return { privateKey, jwk: { ...publicKey.export({ format: 'jwk' }), kid, alg: 'ES256', use: 'sig' } };
}

/**
 * A compact JWS signed ES256 with `key`, synchronously (autocannon builds each request in a
 * synchronous callback; jose only signs asynchronously). node:crypto does the signing.
 */
function es256Jws(key, header, payload) {
  const input = `${Buffer.from(JSON.stringify({ ...header, alg: 'ES256' })).toString('base64url')}.${Buffer.from(JSON.stringify(payload)).toString('base64url')}`;
  return `${input}.${sign('sha256', Buffer.from(input), { key, dsaEncoding: 'ieee-p1363' }).toString('base64url')}`;
}

/** The keys of scenario i: the client's assertion key and its DPoP proof key (generated per run). */
const KEYS = { client: es256Key('bench-pkjwt-1'), dpop: es256Key('dpop') };
const { kid: _dpopKid, alg: _dpopAlg, use: _dpopUse, ...DPOP_JWK } = KEYS.dpop.jwk;

const SERVERS = {
  sigil: { label: 'Sigil', tokenPath: '/connect/token', introspectPath: '/connect/introspect' },
  provider: { label: 'oidc-provider', tokenPath: '/token', introspectPath: '/token/introspection' },
  // The measured issuance ceiling (bench/ceilings.mjs fastify --sign ES256): loaded in the same
  // rounds as the ES256 JWT scenarios, so that a slow spell of the machine weighs on it alike.
  ceiling: { label: 'bare Fastify signing ES256', tokenPath: '/token' },
};

const children = new Set();
let dataDir; // temp dir for Sigil's SQLite files, removed on every exit path

/** Returns a TCP port on 127.0.0.1 that was free a moment ago. */
function freePort() {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.on('error', reject);
    srv.listen(0, HOST, () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

/**
 * Spawns `node ...args` in the repository root and resolves once it prints "listening on".
 * Rejects (and kills the child) if it exits or stays silent for STARTUP_TIMEOUT_MS.
 */
function startChild(label, args, env = process.env) {
  const child = spawn(process.execPath, args, { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  children.add(child);
  let output = '';
  const keepTail = (chunk) => {
    output = (output + chunk).slice(-4000);
  }; // always drain the pipes
  child.stdout.on('data', keepTail);
  child.stderr.on('data', keepTail);
  child.on('exit', () => children.delete(child));
  child.tail = () => output;
  return new Promise((resolve, reject) => {
    const fail = (why) => {
      clearTimeout(timer);
      stopChild(child);
      reject(new Error(`${label} ${why}. Output:\n${output}`));
    };
    const timer = setTimeout(
      () => fail(`did not print "listening on" within ${STARTUP_TIMEOUT_MS} ms`),
      STARTUP_TIMEOUT_MS,
    );
    const onData = () => {
      if (!/listening on/i.test(output)) return;
      clearTimeout(timer);
      child.stdout.off('data', onData);
      child.stderr.off('data', onData);
      child.off('exit', onExit);
      resolve(child);
    };
    const onExit = (code, signal) => fail(`exited early (code ${code}, signal ${signal})`);
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.once('exit', onExit);
  });
}

/** Sends SIGTERM, then SIGKILL after STOP_TIMEOUT_MS; resolves when the child has exited. */
function stopChild(child) {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), STOP_TIMEOUT_MS);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
    child.kill('SIGTERM');
  });
}

/**
 * Scenario j: a local slapd with the test users (test/ldap-server.mjs) and one Sigil process whose
 * config adds the password client `bench-ropc`, a config user and the slapd as a user directory.
 * Returns its two sides: the directory user (whose CPU includes slapd's) and the config user.
 */
async function startDirectorySigil(storage, dataDir) {
  const { startSlapd } = await import('../test/ldap-server.mjs');
  const slapd = await startSlapd();
  const port = await freePort();
  const base = `http://${HOST}:${port}`;
  const config = JSON.parse(readFileSync(join(ROOT, 'bench/sigil.es256.json'), 'utf8'));
  config.clients.push({
    clientId: 'bench-ropc',
    clientSecrets: [SECRET],
    allowedGrantTypes: ['password'],
    allowedScopes: ['api1'],
    accessTokenType: 'jwt',
    accessTokenLifetime: 3600,
  });
  config.users = [{ subjectId: 'bench-local', username: 'local-user', password: 'local-password', claims: {} }];
  config.userDirectories = [slapd.directoryConfig({ timeoutSeconds: 5 })];
  const configFile = join(dataDir, 'sigil.directory.json');
  writeFileSync(configFile, JSON.stringify(config));
  const storageUrl =
    storage === 'memory'
      ? 'memory'
      : isPostgres(storage)
        ? postgresSchemaUrl(storage, 'directory')
        : `sqlite:${join(dataDir, 'sigil-directory.db')}`;
  // Killed with the other children on every exit path (cleanup), should the run be interrupted.
  const slapdHandle = {
    kill: (signal) => {
      try {
        process.kill(slapd.pid() ?? 0, signal);
      } catch {
        /* gone */
      }
    },
  };
  children.add(slapdHandle);
  let child;
  try {
    child = await startChild('Sigil (LDAP directory)', [
      ...SIGIL_NODE_ARGS,
      'dist/cli/main.js',
      'start',
      '--config',
      configFile,
      '--port',
      String(port),
      '--host',
      HOST,
      '--issuer',
      base,
      '--storage',
      storageUrl,
    ]);
  } catch (err) {
    children.delete(slapdHandle);
    await slapd.close();
    throw err;
  }
  const server = { ...SERVERS.sigil, base, child, storage: storageUrl };
  return {
    directory: {
      ...server,
      label: 'Sigil, LDAP user',
      user: { username: 'alice', password: 'alice-pw' },
      alsoPids: () => [slapd.pid()].filter(Boolean),
    },
    local: { ...server, label: 'Sigil, config user', user: { username: 'local-user', password: 'local-password' } },
    close: async () => {
      await stopChild(child);
      children.delete(slapdHandle);
      await slapd.close();
    },
  };
}

/** CPU seconds of a server's process tree, plus those of the processes it relies on (scenario j: slapd). */
const serverCpuSeconds = (server) =>
  treeCpuSeconds(server.child.pid) + (server.alsoPids?.() ?? []).reduce((n, pid) => n + treeCpuSeconds(pid), 0);

/** Starts Sigil (config for `alg`) and node-oidc-provider (signing with `alg`); returns their base URLs. */
async function startServers(alg, storage, dataDir) {
  const sigilPort = await freePort();
  const providerPort = await freePort();
  const env = { ...process.env };
  for (const name of ['SIGIL_CONFIG', 'SIGIL_ISSUER', 'SIGIL_STORAGE', 'PORT']) delete env[name];
  const storageUrl =
    storage === 'memory'
      ? 'memory'
      : isPostgres(storage)
        ? postgresSchemaUrl(storage, alg)
        : `sqlite:${join(dataDir, `sigil-${alg.toLowerCase()}.db`)}`;
  const sigilBase = `http://${HOST}:${sigilPort}`;
  // bench/sigil.<alg>.json plus the signed-request client of scenario i with this run's key.
  const config = JSON.parse(readFileSync(join(ROOT, `bench/sigil.${alg.toLowerCase()}.json`), 'utf8'));
  config.clients.push(sigilSignedClient(KEYS.client.jwk));
  const configFile = join(dataDir, `sigil.${alg.toLowerCase()}.json`);
  writeFileSync(configFile, JSON.stringify(config));
  const [sigil, provider] = await Promise.all([
    startChild(
      `Sigil (${alg})`,
      [
        ...SIGIL_NODE_ARGS,
        'dist/cli/main.js',
        'start',
        '--config',
        configFile,
        '--port',
        String(sigilPort),
        '--host',
        HOST,
        '--issuer',
        sigilBase,
        '--storage',
        storageUrl,
      ],
      env,
    ),
    startChild(`node-oidc-provider (${alg})`, [
      'bench/oidc-provider-server.mjs',
      '--port',
      String(providerPort),
      '--alg',
      alg,
      '--client-jwk',
      JSON.stringify(KEYS.client.jwk),
    ]),
  ]);
  return {
    sigil: { ...SERVERS.sigil, base: sigilBase, child: sigil, storage: storageUrl },
    provider: {
      ...SERVERS.provider,
      base: `http://${HOST}:${providerPort}`,
      child: provider,
      storage: 'in-memory adapter (LRU, 1000 entries)',
    },
  };
}

const basic = (id, secret) =>
  `Basic ${Buffer.from(`${encodeURIComponent(id)}:${encodeURIComponent(secret)}`).toString('base64')}`;
const FORM = 'application/x-www-form-urlencoded';
const isTokenResponse = (body) => body.includes('"access_token"');
const isActive = (body) => /"active"\s*:\s*true/.test(body);

/**
 * One HTTP request with the harness's fetch; returns { status, body }. A request with `fresh`
 * (scenario i) gets new headers and body first, which are kept on it as evidence.
 */
async function send(req) {
  if (req.fresh) Object.assign(req, req.fresh());
  const { url, headers, body } = req;
  const res = await fetch(url, { method: 'POST', headers, body, signal: AbortSignal.timeout(FETCH_TIMEOUT_MS) });
  return { status: res.status, body: await res.text() };
}

/**
 * The client_credentials request every token scenario sends (same shape for both servers). For a
 * `signed` scenario, `fresh()` builds each request anew: a client assertion (aud = the issuer,
 * exp in 60 s) instead of Basic, and a DPoP proof for the token endpoint, each with a new jti.
 */
function tokenRequest(server, scenario) {
  const url = server.base + server.tokenPath;
  const request = {
    url,
    headers: { 'content-type': FORM, authorization: basic(scenario.client, SECRET) },
    body: server.user
      ? `grant_type=password&username=${encodeURIComponent(server.user.username)}&password=${encodeURIComponent(server.user.password)}&scope=api1`
      : 'grant_type=client_credentials&scope=api1',
    verify: isTokenResponse,
  };
  if (!scenario.signed) return request;
  const fresh = () => {
    const now = Math.floor(Date.now() / 1000);
    const assertion = es256Jws(
      KEYS.client.privateKey,
      { kid: KEYS.client.jwk.kid, typ: 'JWT' },
      { iss: scenario.client, sub: scenario.client, aud: server.base, jti: randomUUID(), iat: now, exp: now + 60 },
    );
    const proof = es256Jws(
      KEYS.dpop.privateKey,
      { typ: 'dpop+jwt', jwk: DPOP_JWK },
      { jti: randomUUID(), htm: 'POST', htu: url, iat: now },
    );
    return {
      headers: { 'content-type': FORM, dpop: proof },
      body: `grant_type=client_credentials&scope=api1&client_assertion_type=${encodeURIComponent('urn:ietf:params:oauth:client-assertion-type:jwt-bearer')}&client_assertion=${assertion}`,
    };
  };
  return { ...request, ...fresh(), fresh };
}

/** Builds the request a scenario repeats; introspection first obtains a fresh token from the same server. */
async function scenarioRequest(server, scenario) {
  const issue = tokenRequest(server, scenario);
  if (scenario.kind === 'token') return issue;
  const res = await send(issue);
  if (res.status !== 200 || !isTokenResponse(res.body)) {
    throw Object.assign(new Error('could not obtain the token to introspect'), { request: issue, response: res });
  }
  const token = JSON.parse(res.body).access_token;
  return {
    url: server.base + server.introspectPath,
    headers: { 'content-type': FORM, authorization: basic(API.id, API.secret) },
    body: `token=${encodeURIComponent(token)}`,
    verify: isActive,
  };
}

/** Checks the probe's token response matches the scenario (JWT signed with its alg, or an opaque handle). */
function tokenProblem(scenario, body) {
  if (scenario.kind !== 'token') return undefined;
  const { access_token: token } = JSON.parse(body);
  let header;
  try {
    header = decodeProtectedHeader(token);
  } catch {
    return scenario.client === 'bench-jwt' ? 'access token is not a JWT' : undefined;
  }
  if (scenario.client === 'bench-ref') return 'reference token expected, got a JWT';
  if (header.alg !== scenario.alg) return `JWT signed with ${header.alg}, expected ${scenario.alg}`;
  if (scenario.signed) {
    const { token_type: type } = JSON.parse(body);
    const { cnf } = decodeJwt(token);
    if (type?.toLowerCase() !== 'dpop' || typeof cnf?.jkt !== 'string')
      return `a DPoP-bound token expected, got token_type ${type}, cnf ${JSON.stringify(cnf)}`;
  }
  return undefined;
}

/** A request and response, printable as evidence in a bug report. */
const evidence = (req, res) => ({
  request: `POST ${req.url}\n${Object.entries(req.headers)
    .map(([k, v]) => `${k}: ${v}`)
    .join('\n')}\n\n${req.body}`,
  response: res && `${res.status} ${res.body}`,
});

/**
 * Gets one server ready for a scenario: builds the request, sends one probe and checks its answer.
 * Returns `{ req }`, or `{ result }` when the server is not measured (skipped, or the probe failed).
 */
async function prepare(server, scenario, isSigil) {
  let req;
  try {
    req = await scenarioRequest(server, scenario);
  } catch (err) {
    return {
      result: {
        error: `${err.message}: ${err.cause?.message ?? ''}`.trim(),
        ...(err.request ? evidence(err.request, err.response) : {}),
      },
    };
  }
  const probe = await send(req).catch((err) => ({ status: 0, body: String(err.cause ?? err) }));
  const reason = scenario.unsupported?.[isSigil ? 'sigil' : 'provider'];
  if (reason) return { result: { skipped: reason, probe: `${probe.status} ${probe.body}` } };
  if (probe.status < 200 || probe.status > 299 || !req.verify(probe.body))
    return { result: { error: 'probe request failed', ...evidence(req, probe) } };
  const problem = tokenProblem(scenario, probe.body);
  if (problem) return { result: { error: `probe: ${problem}`, ...evidence(req, probe) } };
  return { req };
}

/** autocannon options repeating `req` (built anew per request for a `fresh` one, scenario i). */
function loadOptions(req, opts) {
  return req.fresh
    ? {
        url: req.url,
        connections: opts.connections,
        requests: [
          { method: 'POST', path: new URL(req.url).pathname, setupRequest: (r) => ({ ...r, ...req.fresh() }) },
        ],
      }
    : { url: req.url, method: 'POST', headers: req.headers, body: req.body, connections: opts.connections };
}

/**
 * Measures one scenario on Sigil and on node-oidc-provider (and, given `ceilingServer`, on the bare
 * Fastify server that only signs), interleaved: after a probe and a discarded warm-up of each,
 * `opts.rounds` rounds each load Sigil, then the provider (then the ceiling), for duration / rounds
 * seconds, so that a slow spell of the shared machine falls on all. Per server: req/s over all
 * rounds, p50 (mean of the rounds') and p99 (the worst round's) in ms, and the CPU time of its
 * process tree during its rounds (from /proc), as requests per CPU-second. `error` is set when
 * anything but a good 2xx answer was seen.
 */
async function measurePair(sigilServer, providerServer, scenario, opts, ceilingServer = undefined) {
  const sides = [
    { server: sigilServer, ...(await prepare(sigilServer, scenario, true)) },
    { server: providerServer, ...(await prepare(providerServer, scenario, false)) },
    ...(ceilingServer ? [{ server: ceilingServer, ...(await prepare(ceilingServer, scenario, true)) }] : []),
  ];
  const live = sides.filter((side) => side.req);
  for (const side of live) {
    side.rounds = [];
    side.cpuSeconds = 0;
    if (opts.warmup > 0) await autocannon({ ...loadOptions(side.req, opts), duration: opts.warmup });
  }
  for (let round = 0; round < opts.rounds; round++) {
    for (const side of live) {
      const before = serverCpuSeconds(side.server);
      side.rounds.push(
        await autocannon({
          ...loadOptions(side.req, opts),
          duration: opts.duration / opts.rounds,
          verifyBody: (body) => {
            if (side.req.verify(body)) return true;
            side.badBody ??= body;
            return false;
          },
        }),
      );
      side.cpuSeconds += serverCpuSeconds(side.server) - before;
    }
  }
  for (const side of live) {
    const sum = (key) => side.rounds.reduce((total, r) => total + r[key], 0);
    const total = side.rounds.reduce((n, r) => n + r.requests.total, 0);
    const result = {
      rps: total / opts.duration,
      total,
      p50: side.rounds.reduce((n, r) => n + r.latency.p50, 0) / side.rounds.length,
      p99: Math.max(...side.rounds.map((r) => r.latency.p99)),
      roundRps: side.rounds.map((r) => r.requests.total / (opts.duration / opts.rounds)),
      cpuSeconds: side.cpuSeconds,
      perCpuSecond: side.cpuSeconds > 0 ? total / side.cpuSeconds : undefined,
      non2xx: sum('non2xx'),
      errors: sum('errors'),
      timeouts: sum('timeouts'),
      mismatches: sum('mismatches'),
    };
    if (result.non2xx || result.errors || result.mismatches) {
      const last = await send(side.req).catch((err) => ({ status: 0, body: String(err.cause ?? err) }));
      Object.assign(result, {
        error: `${result.non2xx} non-2xx, ${result.errors} connection errors (${result.timeouts} timeouts), ${result.mismatches} unexpected bodies`,
        firstBadBody: side.badBody,
        retried: true,
        ...evidence(side.req, last),
      });
    }
    side.result = result;
  }
  const [sigil, provider, ceiling] = sides.map((side) => side.result);
  return { sigil, provider, ceiling };
}

const fmt = (n, digits = 0) => (typeof n === 'number' ? n.toFixed(digits) : '-');
const ratioOf = (s, p) => (s?.rps && p?.rps && !s.error && !p.error ? s.rps / p.rps : undefined);

/** Prints the results table and the errors / notes under it. */
function printTable(rows) {
  const head = [
    'scenario',
    'Sigil req/s',
    'p50 ms',
    'p99 ms',
    'req/CPU-s',
    'provider req/s',
    'p50 ms',
    'p99 ms',
    'req/CPU-s',
    'Sigil/provider',
  ];
  const lines = rows.map(({ scenario: s, sigil, provider, ratio }) => [
    `${s.id}. ${s.name}`,
    sigil.error ? 'ERROR' : fmt(sigil.rps),
    fmt(sigil.p50, 1),
    fmt(sigil.p99, 1),
    fmt(sigil.perCpuSecond),
    provider.skipped ? 'n/a' : provider.error ? 'ERROR' : fmt(provider.rps),
    fmt(provider.p50, 1),
    fmt(provider.p99, 1),
    fmt(provider.perCpuSecond),
    ratio === undefined ? '-' : `${ratio.toFixed(2)}x`,
  ]);
  const widths = head.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i].length)));
  const row = (cells) => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join('  ');
  console.log(`\n${row(head)}\n${widths.map((w) => '-'.repeat(w)).join('  ')}`);
  for (const l of lines) console.log(row(l));
  printRoundRatios(rows);
  for (const { scenario: s, sigil, provider } of rows) {
    if (s.comparedWith)
      console.log(`\n${s.id}. the provider columns are ${s.comparedWith}; Sigil's CPU includes slapd's`);
    for (const [label, r] of [
      ['Sigil', sigil],
      [s.comparedWith ? 'Sigil, config user' : 'oidc-provider', provider],
    ]) {
      if (r.skipped) console.log(`\n${s.id}. ${label}: not measured: ${r.skipped} (probe: ${r.probe})`);
      if (!r.error) continue;
      console.log(`\n${s.id}. ${label} ERROR: ${r.error}`);
      if (r.firstBadBody !== undefined) console.log(`   first bad response body: ${r.firstBadBody.slice(0, 500)}`);
      if (!r.request) continue;
      console.log(`   request:\n${r.request.replace(/^/gm, '     ')}`);
      console.log(`   ${r.retried ? 'the same request sent again after the run got' : 'response'}: ${r.response}`);
    }
  }
}

/**
 * Prints Sigil/provider per round of each scenario (a round loads both, one after the other), with
 * their spread: how far one run's ratio moves on the shared machine.
 */
function printRoundRatios(rows) {
  const lines = [];
  for (const { scenario: s, sigil, provider } of rows) {
    if (!sigil.roundRps || !provider.roundRps || sigil.error || provider.error) continue;
    const ratios = sigil.roundRps.map((rps, i) => rps / provider.roundRps[i]);
    const spread = Math.max(...ratios) - Math.min(...ratios);
    lines.push(`  ${s.id}: ${ratios.map((r) => `${r.toFixed(2)}x`).join(' ')}  (spread ${spread.toFixed(2)})`);
  }
  if (lines.length > 0) console.log(`\nSigil/provider per round:\n${lines.join('\n')}`);
}

// ---- Ceilings, the default-config scenario and workers -----------------------------------------

/**
 * Signatures for `alg` made as Sigil makes them (node:crypto, synchronous), from as many loops as
 * the bench has connections, measured alone in a child process: `{ perSecond, perCpuSecond }`.
 */
function signCeiling(alg, seconds, inFlight) {
  const out = execFileSync(
    process.execPath,
    ['bench/ceilings.mjs', 'sign', '--alg', alg, '--seconds', String(seconds), '--in-flight', String(inFlight)],
    { cwd: ROOT, encoding: 'utf8' },
  );
  const { perSecond, perCpuSecond } = JSON.parse(out);
  return { perSecond, perCpuSecond };
}

/**
 * Requests per CPU-second of a bare Fastify server answering a form POST with JSON (no signing),
 * loaded like a scenario, measured alone.
 */
async function fastifyCeiling(opts) {
  const port = await freePort();
  const child = await startChild('bare Fastify', ['bench/ceilings.mjs', 'fastify', '--port', String(port)]);
  try {
    const req = {
      url: `http://${HOST}:${port}/token`,
      headers: { 'content-type': FORM, authorization: basic('bench-jwt', SECRET) },
      body: 'grant_type=client_credentials&scope=api1',
    };
    if (opts.warmup > 0) await autocannon({ ...loadOptions(req, opts), duration: opts.warmup });
    const before = treeCpuSeconds(child.pid);
    const r = await autocannon({ ...loadOptions(req, opts), duration: opts.duration });
    return { perSecond: r.requests.average, perCpuSecond: r.requests.total / (treeCpuSeconds(child.pid) - before) };
  } finally {
    await stopChild(child);
  }
}

/** Scenarios that issue a JWT for a client secret: a, b and f, which the issuance ceilings apply to. */
const isJwtIssuance = (scenario) => scenario.kind === 'token' && scenario.client === 'bench-jwt';

/**
 * Starts the measured issuance ceiling: a bare Fastify server whose `/token` answers each form POST
 * with a JWT it signed as Sigil signs (`alg`), and nothing else. Loaded as a third server in the rounds
 * of the JWT scenarios (see `measurePair`).
 */
async function startCeilingServer(alg) {
  const port = await freePort();
  const child = await startChild(`bare Fastify signing ${alg}`, [
    'bench/ceilings.mjs',
    'fastify',
    '--port',
    String(port),
    '--sign',
    alg,
  ]);
  return { ...SERVERS.ceiling, base: `http://${HOST}:${port}`, child };
}

/** The environment for Sigil children: nothing that would override the config file. */
function sigilEnv() {
  const env = { ...process.env };
  for (const name of ['SIGIL_CONFIG', 'SIGIL_ISSUER', 'SIGIL_STORAGE', 'PORT']) delete env[name];
  return env;
}

/**
 * Starts Sigil as `npm start` runs it: the ES256 bench config without its `logLevel` (so the default,
 * info-level audit events on stdout), SQLite in the bench's temp dir, `workers` processes.
 */
async function startDefaultSigil(workers, edit = (config) => config) {
  const config = edit(JSON.parse(readFileSync(join(ROOT, 'bench/sigil.es256.json'), 'utf8')));
  delete config.logLevel;
  const file = join(dataDir, `sigil.default-${workers}.json`);
  writeFileSync(file, JSON.stringify(config));
  const port = await freePort();
  const base = `http://${HOST}:${port}`;
  const child = await startLoggingToFile(
    `Sigil (default config, ${workers} worker${workers > 1 ? 's' : ''})`,
    [
      ...SIGIL_NODE_ARGS,
      'dist/cli/main.js',
      'start',
      '--config',
      file,
      '--port',
      String(port),
      '--host',
      HOST,
      '--issuer',
      base,
      '--storage',
      `sqlite:${join(dataDir, `sigil-default-${workers}.db`)}`,
      // The management listener as by default, on a port of its own: f runs while a's Sigil holds 9464.
      '--metrics-port',
      String(await freePort()),
      ...(workers > 1 ? ['--workers', String(workers)] : []),
    ],
    join(dataDir, `sigil-default-${workers}.log`),
  );
  return {
    ...SERVERS.sigil,
    base,
    child,
    storage: 'SQLite (default config)',
    file: join(dataDir, `sigil-default-${workers}.db`),
  };
}

/**
 * As `startChild`, but the child's stdout and stderr go to the file `log`, as a supervisor keeps a
 * server's log: read through a pipe by this process, every audit line would cost the load
 * generator (autocannon runs here) CPU and make the server look slower than it is.
 */
async function startLoggingToFile(label, args, log) {
  const fd = openSync(log, 'a');
  const child = spawn(process.execPath, args, { cwd: ROOT, env: sigilEnv(), stdio: ['ignore', fd, fd] });
  closeSync(fd);
  children.add(child);
  child.on('exit', () => children.delete(child));
  const tail = () => (existsSync(log) ? readFileSync(log, 'utf8').slice(-4000) : '');
  child.tail = tail;
  const deadline = Date.now() + STARTUP_TIMEOUT_MS;
  while (!/listening on/.test(tail())) {
    if (child.exitCode !== null || child.signalCode !== null)
      throw new Error(`${label} exited early. Output:\n${tail()}`);
    if (Date.now() > deadline) {
      await stopChild(child);
      throw new Error(`${label} did not print "listening on" within ${STARTUP_TIMEOUT_MS} ms. Output:\n${tail()}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return child;
}

/**
 * Scenario h (not in the default set: it runs BENCH_SUSTAINED seconds, default 300): reference
 * tokens living 60 s issued without pause with the default config, then the grant rows and the
 * SQLite file's size (with its WAL) at the end. Clean-up (every 60 s, until none is left) must keep
 * the table near what is alive: about 60 s of issuance plus at most one clean-up interval.
 */
async function measureSustained(opts) {
  const seconds = Number(process.env.BENCH_SUSTAINED ?? 300);
  const server = await startDefaultSigil(1, (config) => ({
    ...config,
    clients: config.clients.map((c) => (c.clientId === 'bench-ref' ? { ...c, accessTokenLifetime: 60 } : c)),
  }));
  try {
    const req = tokenRequest(
      server,
      SCENARIOS.find((s) => s.id === 'c'),
    );
    const r = await autocannon({
      url: req.url,
      method: 'POST',
      headers: req.headers,
      body: req.body,
      connections: opts.connections,
      duration: seconds,
    });
    const { default: SQLite } = await import('better-sqlite3');
    const db = new SQLite(server.file, { readonly: true });
    const rows = db.prepare('select count(*) as n from grants').get().n;
    const alive = db
      .prepare('select count(*) as n from grants where expires_at >= ?')
      .get(Math.floor(Date.now() / 1000)).n;
    db.close();
    const size = ['', '-wal'].reduce(
      (sum, suffix) => sum + (existsSync(server.file + suffix) ? statSync(server.file + suffix).size : 0),
      0,
    );
    return { seconds, rps: r.requests.average, total: r.requests.total, non2xx: r.non2xx, rows, alive, bytes: size };
  } finally {
    await stopChild(server.child);
  }
}

/** CPU time (user + system, seconds) of `pid` and every process under it, from /proc (Linux). */
function treeCpuSeconds(pid) {
  const ticksPerSecond = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  const ticks = (p) => {
    let total = 0;
    try {
      const stat = readFileSync(`/proc/${p}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      total += Number(fields[11]) + Number(fields[12]); // utime, stime
      const children = readFileSync(`/proc/${p}/task/${p}/children`, 'utf8').trim().split(/\s+/).filter(Boolean);
      for (const c of children) total += ticks(c);
    } catch {
      // the process ended meanwhile
    }
    return total;
  };
  return ticks(pid) / ticksPerSecond;
}

/**
 * The CPU figures: the ceilings (Sigil's signing per core for ES256 and RS256, a bare Fastify form
 * POST), scenario f (client_credentials ES256 with Sigil's default config) and, as g, requests per
 * CPU-second of the server processes with 1 and 2 workers (default config; CPU read from /proc,
 * so the figure holds although autocannon shares the cores).
 */
async function measureExtras(wanted, opts) {
  const extras = {};
  const wantsCeilings = ['a', 'b', 'c', 'd', 'f'].some((id) => wanted.has(id));
  if (wantsCeilings) {
    process.stdout.write('ceilings: signing...');
    const seconds = Math.min(opts.duration, 5);
    extras.ceilings = {
      sign: {
        ES256: signCeiling('ES256', seconds, opts.connections),
        RS256: signCeiling('RS256', seconds, opts.connections),
      },
    };
    process.stdout.write(' bare Fastify...');
    extras.ceilings.fastify = await fastifyCeiling(opts);
    console.log(' done');
  }
  if (wanted.has('g')) {
    extras.workers = [];
    for (const workers of [1, 2]) {
      process.stdout.write(`g. ${workers} worker(s), default config, ES256 JWTs...`);
      const server = await startDefaultSigil(workers);
      try {
        const req = tokenRequest(
          server,
          SCENARIOS.find((s) => s.id === 'a'),
        );
        const base = {
          url: req.url,
          method: 'POST',
          headers: req.headers,
          body: req.body,
          connections: opts.connections,
        };
        if (opts.warmup > 0) await autocannon({ ...base, duration: opts.warmup });
        const before = treeCpuSeconds(server.child.pid);
        const r = await autocannon({ ...base, duration: opts.duration });
        const cpuSeconds = treeCpuSeconds(server.child.pid) - before;
        extras.workers.push({
          workers,
          rps: r.requests.average,
          total: r.requests.total,
          non2xx: r.non2xx,
          errors: r.errors,
          cpuSeconds,
          perCpuSecond: cpuSeconds > 0 ? r.requests.total / cpuSeconds : undefined,
        });
      } finally {
        await stopChild(server.child);
      }
      console.log(' done');
    }
  }
  if (wanted.has('h')) {
    process.stdout.write(`h. sustained reference-token issuance (60 s tokens, default config)...`);
    extras.sustained = await measureSustained(opts);
    console.log(' done');
  }
  return extras;
}

/** Prints the ceilings and each Sigil figure as a share of its ceiling, scenario f and g. */
function printExtras(extras, rows) {
  const pct = (x, ceiling) => (x && ceiling ? `${((100 * x) / ceiling).toFixed(0)}%` : '-');
  const combined = (sign, fastify) => (sign && fastify ? 1 / (1 / sign + 1 / fastify) : undefined);
  const c = extras.ceilings;
  if (c) {
    // Per CPU-second, so that the figures hold although the servers and autocannon share the cores.
    const issue = {
      ES256: combined(c.sign.ES256.perCpuSecond, c.fastify.perCpuSecond),
      RS256: combined(c.sign.RS256.perCpuSecond, c.fastify.perCpuSecond),
    };
    console.log(
      `\nCeilings per CPU-second: Sigil's signer signs ES256 ${fmt(c.sign.ES256.perCpuSecond)}, RS256 ${fmt(c.sign.RS256.perCpuSecond)} ` +
        `(${fmt(c.sign.ES256.perSecond)}/s and ${fmt(c.sign.RS256.perSecond)}/s on the whole machine); bare Fastify answers ` +
        `${fmt(c.fastify.perCpuSecond)} form POSTs with JSON (${fmt(c.fastify.perSecond)} req/s under the same autocannon load)`,
    );
    console.log(
      `combined ceiling of JWT issuance per CPU-second (1 / (1/sign + 1/Fastify)): ES256 ${fmt(issue.ES256)}, RS256 ${fmt(issue.RS256)}`,
    );
    const measured = rows.filter((r) => r.ceiling && !r.ceiling.error);
    if (measured.length > 0) {
      console.log(
        `measured ceiling (loaded in the same rounds as ${measured.map((r) => r.scenario.id).join(' and ')}): bare Fastify signing each answer's ES256 JWT ` +
          `answers ${measured.map((r) => `${fmt(r.ceiling.perCpuSecond)}`).join(' and ')} per CPU-second ` +
          `(${measured.map((r) => fmt(r.ceiling.rps)).join(' and ')} req/s); HTTP under load is in it, not in the combined figure`,
      );
    }
    for (const { scenario: s, sigil, ceiling: sameRounds } of rows) {
      if (sigil.error || !sigil.perCpuSecond) continue;
      const jwt = isJwtIssuance(s);
      const ceiling = jwt ? issue[s.alg] : c.fastify.perCpuSecond;
      const ofMeasured =
        sameRounds && !sameRounds.error
          ? `, ${pct(sigil.perCpuSecond, sameRounds.perCpuSecond)} of the measured one`
          : '';
      console.log(
        `  ${s.id}. ${s.name}: ${fmt(sigil.perCpuSecond)} req/CPU-s = ${pct(sigil.perCpuSecond, ceiling)} of ${jwt ? `the ${s.alg} issuance ceiling` : 'the bare Fastify ceiling'}${ofMeasured}`,
      );
    }
    for (const { scenario: s, ceiling: sameRounds } of rows) {
      if (sameRounds?.error) console.log(`  ${s.id}. measured ceiling ERROR: ${sameRounds.error}`);
    }
  }
  const h = extras.sustained;
  if (h) {
    console.log(
      `h. ${h.seconds} s of 60 s reference tokens at ${fmt(h.rps)} req/s (${h.total} issued${h.non2xx ? `, ${h.non2xx} non-2xx` : ''}): ` +
        `${h.rows} grant rows at the end, ${h.alive} of them alive; SQLite file and WAL ${(h.bytes / 1e6).toFixed(1)} MB`,
    );
  }
  for (const w of extras.workers ?? []) {
    console.log(
      `g. --workers ${w.workers}: ${fmt(w.rps)} req/s, ${w.cpuSeconds.toFixed(1)} CPU-s of the server processes for ${w.total} requests ` +
        `= ${fmt(w.perCpuSecond)} requests per CPU-second${w.non2xx || w.errors ? ` (ERROR: ${w.non2xx} non-2xx, ${w.errors} errors)` : ''}`,
    );
  }
}

// ---- PostgreSQL storage (`--storage postgres://...`) ----------------------------------------------

const isPostgres = (storage) => /^postgres(ql)?:\/\//.test(storage);
const benchSchemas = new Set();

/** `url` with a schema of this run's own for `alg` (dropped at the end), so runs never share rows. */
function postgresSchemaUrl(url, alg) {
  const schema = `sigil_bench_${process.pid}_${alg.toLowerCase()}`;
  benchSchemas.add(schema);
  const parsed = new URL(url);
  parsed.searchParams.set('schema', schema);
  return parsed.toString();
}

/** Drops the schemas this run created. */
async function dropPostgresSchemas(url) {
  const { default: pg } = await import('pg');
  const parsed = new URL(url);
  parsed.searchParams.delete('schema');
  parsed.searchParams.delete('poolSize');
  const client = new pg.Client({ connectionString: parsed.toString() });
  await client.connect();
  try {
    for (const schema of benchSchemas) await client.query(`drop schema if exists ${schema} cascade`);
  } finally {
    await client.end();
  }
}

/** Reads a short description of the checkout (commit, dirty) for the results file; never throws. */
function gitDescribe() {
  try {
    return execFileSync('git', ['describe', '--always', '--dirty'], {
      cwd: ROOT,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    }).trim();
  } catch {
    return undefined;
  }
}

/** Runs the selected scenarios, grouped by signing algorithm (one Sigil + one provider process per group). */
async function main() {
  const { values } = parseArgs({
    options: {
      storage: { type: 'string', default: 'sqlite' },
      scenarios: { type: 'string', default: 'a,b,c,d,e,f,g,i' },
    },
  });
  if (!['sqlite', 'memory'].includes(values.storage) && !isPostgres(values.storage))
    throw new Error('--storage must be sqlite, memory or postgres://...');
  const wanted = new Set(values.scenarios.split(','));
  const selected = SCENARIOS.filter((s) => wanted.has(s.id));
  if (!existsSync(join(ROOT, 'dist/cli/main.js')))
    throw new Error('dist/cli/main.js not found: run `npm run build` first');
  const opts = {
    duration: Number(process.env.BENCH_DURATION ?? 10),
    warmup: Number(process.env.BENCH_WARMUP ?? 2),
    connections: Number(process.env.BENCH_CONNECTIONS ?? 32),
    rounds: Number(process.env.BENCH_ROUNDS ?? 5),
  };
  for (const [name, n] of Object.entries(opts)) {
    if (!Number.isInteger(n) || n < (name === 'warmup' ? 0 : 1)) throw new Error(`invalid ${name}: ${n}`);
  }
  if (selected.length === 0 && !['g', 'h'].some((id) => wanted.has(id)))
    throw new Error('--scenarios selects none of a,b,c,d,e,f,g,h,i,j');
  const providerVersion = JSON.parse(
    readFileSync(join(ROOT, 'node_modules/oidc-provider/package.json'), 'utf8'),
  ).version;
  console.log(
    `Sigil ${gitDescribe() ?? ''} vs node-oidc-provider ${providerVersion} on ${HOST}, node ${process.version}, ` +
      `${cpus().length} CPUs shared by both servers and autocannon`,
  );
  console.log(
    `autocannon: ${opts.connections} connections, ${opts.warmup} s warm-up (discarded), ${opts.duration} s measured; ` +
      `Sigil storage: ${isPostgres(values.storage) ? values.storage.replace(/:[^:@/]*@/, ':***@') : values.storage}; oidc-provider: default in-memory adapter (LRU, 1000 entries)`,
  );

  dataDir = mkdtempSync(join(tmpdir(), 'sigil-bench-'));
  const rows = [];
  let extras = {};
  try {
    for (const alg of ['ES256', 'RS256']) {
      const group = selected.filter((s) => s.alg === alg && !s.directory);
      if (group.length === 0) continue;
      const servers = await startServers(alg, values.storage, dataDir);
      if (alg === 'ES256' && group.some(isJwtIssuance)) servers.ceiling = await startCeilingServer('ES256');
      try {
        for (const scenario of group) {
          const ceilingServer = isJwtIssuance(scenario) ? servers.ceiling : undefined;
          process.stdout.write(
            `${scenario.id}. ${scenario.name}: Sigil and oidc-provider${ceilingServer ? ' (and the measured ceiling)' : ''}, ${opts.rounds} rounds...`,
          );
          const sigilServer = scenario.defaultConfig ? await startDefaultSigil(1) : servers.sigil;
          try {
            const { sigil, provider, ceiling } = await measurePair(
              sigilServer,
              servers.provider,
              scenario,
              opts,
              ceilingServer,
            );
            rows.push({ scenario, sigil, provider, ratio: ratioOf(sigil, provider), ...(ceiling ? { ceiling } : {}) });
          } finally {
            if (scenario.defaultConfig) await stopChild(sigilServer.child);
          }
          console.log(' done');
        }
      } finally {
        await Promise.all(
          [servers.sigil, servers.provider, servers.ceiling].filter(Boolean).map((s) => stopChild(s.child)),
        );
        const crashed = [servers.sigil, servers.provider, servers.ceiling]
          .filter(Boolean)
          .filter((s) => s.child.exitCode > 0);
        for (const s of crashed)
          console.log(`\n${s.label} exited with code ${s.child.exitCode}. Output:\n${s.child.tail()}`);
      }
    }
    for (const scenario of selected.filter((s) => s.directory)) {
      process.stdout.write(`${scenario.id}. ${scenario.name}: LDAP user and config user, ${opts.rounds} rounds...`);
      const pair = await startDirectorySigil(values.storage, dataDir);
      try {
        const { sigil, provider } = await measurePair(pair.directory, pair.local, scenario, opts);
        rows.push({ scenario, sigil, provider, ratio: ratioOf(sigil, provider) });
      } finally {
        await pair.close();
      }
      console.log(' done');
    }
    extras = await measureExtras(wanted, opts);
  } finally {
    cleanup();
    if (isPostgres(values.storage)) await dropPostgresSchemas(values.storage);
  }

  rows.sort((x, y) => x.scenario.id.localeCompare(y.scenario.id));
  printTable(rows);
  printExtras(extras, rows);
  const file = join(ROOT, 'bench/results', `${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
  mkdirSync(join(ROOT, 'bench/results'), { recursive: true });
  writeFileSync(
    file,
    `${JSON.stringify(
      {
        date: new Date().toISOString(),
        node: process.version,
        cpus: cpus().map((c) => c.model),
        git: gitDescribe(),
        oidcProvider: providerVersion,
        options: { ...opts, storage: values.storage, host: HOST },
        scenarios: rows.map(({ scenario, sigil, provider, ratio, ceiling }) => ({
          ...scenario,
          sigil,
          provider,
          ratio,
          ceiling,
        })),
        ...extras,
      },
      null,
      2,
    )}\n`,
  );
  console.log(`\nresults written to ${file}`);
  return rows.some((r) => r.sigil.error || r.provider.error) ? 1 : 0;
}

/** Kills every child still running and removes the temp dir (synchronous, for every exit path). */
function cleanup() {
  for (const child of children) child.kill('SIGKILL');
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
}

process.on('SIGINT', () => {
  console.error('\ninterrupted');
  cleanup();
  process.exit(130);
});
process.on('SIGTERM', () => {
  console.error('\nterminated');
  cleanup();
  process.exit(143);
});
process.on('exit', cleanup);

main().then(
  (code) => {
    process.exitCode = code;
  },
  (err) => {
    console.error(`\nbench failed: ${err.message}`);
    cleanup();
    process.exitCode = 1;
  },
);
