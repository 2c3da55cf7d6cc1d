// Organizations at scale: with 100,000 stored organizations and 1,000,000 memberships, what does
// an organization cost a token, and how fast is the membership lookup behind it?
//
//   npm run build && node bench/organizations-scale.mjs      (part of `npm run bench:scale`)
//   node bench/organizations-scale.mjs --stores sqlite --organizations 10000 --memberships 100000
//   env: BENCH_ORG_REQUESTS (measured requests per scenario, default 3000; 300 more warm up first),
//        BENCH_CONNECTIONS (concurrent requests of the throughput runs, default 8),
//        SIGIL_BENCH_POSTGRES (default postgres://postgres@127.0.0.1:5432/test; the database is a
//        schema of its own, created by `sigil migrate` and dropped at the end)
//
// For each store it creates the tables with `sigil migrate` and bulk-inserts the organizations
// (settings shaped as the admin API stores them) and the memberships: the config user alice
// (subject 1) is a member of 1,000 organizations, the rest are members of one each. It starts a
// real `sigil start` process (its cold start includes reading every stored organization into the
// registry) and measures, over HTTP, one request at a time, then BENCH_CONNECTIONS at once:
//   refresh       refresh_token grant of a one-time refresh token, no organization
//   refresh+org   the same with an organization: Sigil reads the membership again and puts
//                 org_id, org_name and org_roles into the new access token
// The two alternate in slices (100 requests one at a time, 500 at once; A B B A), so that a shared machine's load weighs on both
// alike; every request presents its own refresh token, inserted before the run as Sigil stores it
// (the SHA-256 of the handle). Then the lookup alone: Sigil's own store code (dist/stores/sql.js,
// `organizations.member`) in this process, at random (organization, subject) pairs, target p99
// <= 5 ms; and what a change costs at this size: one organization created through /admin/v1, whose
// answer waits for this node's registry to read the stored organizations again.
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import Database from 'better-sqlite3';
import pg from 'pg';
import { Pool } from 'undici';
import { cleanUp, freePort, percentile, runCli, startSigil, stopSigil } from './scale-kit.mjs';

const SECRET = 'bench-org-secret';
const LOOKUP_TARGET_MS = 5;
const ALICE_ORGANIZATIONS = 1000;
const SLICE = 100;
const THROUGHPUT_CHUNK = 500;

const sha256 = (s) => createHash('sha256').update(s).digest('base64url');
const organizationId = (i) => `org_${createHash('sha256').update(`bench-${i}`).digest('base64url').slice(0, 22)}`;
const organizationName = (i) => `org-${String(i).padStart(6, '0')}`;
const randomInt = (n) => Math.floor(Math.random() * n);

function config() {
  return {
    logLevel: 'warn',
    signingAlgorithms: ['ES256'],
    identityResources: [{ name: 'openid', userClaims: ['sub'] }],
    apiScopes: [{ name: 'api1' }, { name: 'roles' }],
    apiResources: [{ name: 'api1', scopes: ['api1'] }],
    clients: [
      {
        clientId: 'bench-rt',
        clientSecrets: [SECRET],
        allowedGrantTypes: ['authorization_code'],
        allowedScopes: ['openid', 'api1', 'roles', 'offline_access'],
        redirectUris: ['https://rp.example/cb'],
        allowOfflineAccess: true,
        refreshTokenUsage: 'oneTime',
        organizationUsage: 'allow',
      },
      {
        clientId: 'bench-admin',
        clientSecrets: [SECRET],
        allowedGrantTypes: ['client_credentials'],
        allowedScopes: ['sigil:admin'],
      },
    ],
    users: [{ subjectId: '1', username: 'alice', password: 'alice', claims: { name: 'Alice' } }],
  };
}

/** The organization rows [from, to), as the admin API stores them. */
function organizationRows(from, to, now) {
  const rows = [];
  for (let i = from; i < to; i++) {
    const settings = { displayName: `Organization ${i}`, domains: [], identityProviders: [], membership: 'invite' };
    rows.push([organizationId(i), organizationName(i), JSON.stringify(settings), 1, now, now]);
  }
  return rows;
}

/** Membership j: the first ALICE_ORGANIZATIONS are alice's, the others one member each. */
function membershipRow(j, organizations, now) {
  if (j < ALICE_ORGANIZATIONS) return [organizationId(j), '1', '["member"]', now];
  return [organizationId(j % organizations), `sub-${j}`, '["member"]', now];
}

/** A one-time refresh token of bench-rt for alice, with `organization` or without, as TokenService stores it. */
function refreshRow(handle, organization, now) {
  const subject = { subjectId: '1', authTime: now - 60, amr: ['pwd'], idp: 'local' };
  if (organization !== undefined)
    subject.organization = { id: organizationId(organization), name: organizationName(organization), roles: [] };
  const data = { scopes: ['openid', 'api1', 'roles', 'offline_access'], subject, absoluteExpiresAt: now + 86400 };
  const family = randomBytes(16).toString('base64url');
  return [sha256(handle), 'refresh_token', 'bench-rt', '1', family, null, JSON.stringify(data), now, now + 86400];
}

const GRANT_COLUMNS = 'key, type, client_id, subject_id, family_id, session_id, data, created_at, expires_at';

/** The bench's own connection to a SQLite file: bulk inserts. */
class SqliteDb {
  constructor(file) {
    this.db = new Database(file);
    this.db.pragma('journal_mode = WAL');
    this.db.pragma('busy_timeout = 10000');
  }
  insert(table, columns, rows) {
    const marks = columns
      .split(',')
      .map(() => '?')
      .join(', ');
    const statement = this.db.prepare(`insert into ${table} (${columns}) values (${marks})`);
    this.db.transaction((all) => {
      for (const r of all) statement.run(r);
    })(rows);
  }
  async analyze() {
    this.db.exec('analyze');
  }
  async close() {
    this.db.close();
  }
}

/** The bench's own connection to a PostgreSQL schema: bulk inserts by unnested arrays. */
class PostgresDb {
  constructor(url, schema) {
    this.client = new pg.Client({ connectionString: url, options: `-c search_path=${schema}` });
  }
  async open() {
    await this.client.connect();
    return this;
  }
  async insert(table, columns, rows, types) {
    const arrays = types.map((_, i) => rows.map((r) => r[i]));
    const list = types.map((t, i) => `$${i + 1}::${t}[]`).join(', ');
    await this.client.query(`insert into ${table} (${columns}) select * from unnest(${list})`, arrays);
  }
  async analyze() {
    await this.client.query('vacuum analyze organizations');
    await this.client.query('vacuum analyze organization_members');
    await this.client.query('vacuum analyze grants');
  }
  async close() {
    await this.client.end();
  }
}

const TYPES = {
  organizations: ['text', 'text', 'text', 'int', 'bigint', 'bigint'],
  organization_members: ['text', 'text', 'text', 'bigint'],
  grants: ['text', 'text', 'text', 'text', 'text', 'text', 'text', 'bigint', 'bigint'],
};

async function fill(db, organizations, memberships) {
  const now = Math.floor(Date.now() / 1000);
  for (let from = 0; from < organizations; from += 20_000) {
    const rows = organizationRows(from, Math.min(organizations, from + 20_000), now);
    await db.insert('organizations', 'id, name, settings, version, created_at, updated_at', rows, TYPES.organizations);
  }
  for (let from = 0; from < memberships; from += 50_000) {
    const rows = [];
    for (let j = from; j < Math.min(memberships, from + 50_000); j++) rows.push(membershipRow(j, organizations, now));
    await db.insert(
      'organization_members',
      'organization_id, subject, roles, created_at',
      rows,
      TYPES.organization_members,
    );
  }
  await db.analyze();
}

/** Inserts `count` refresh tokens of each kind; their handles. */
async function preIssue(db, count) {
  const now = Math.floor(Date.now() / 1000);
  const tokens = { refresh: [], 'refresh+org': [] };
  for (const [name, list] of Object.entries(tokens)) {
    for (let from = 0; from < count; from += 5000) {
      const rows = [];
      for (let i = from; i < Math.min(count, from + 5000); i++) {
        const handle = randomBytes(32).toString('base64url');
        list.push(handle);
        rows.push(refreshRow(handle, name === 'refresh' ? undefined : randomInt(ALICE_ORGANIZATIONS), now));
      }
      await db.insert('grants', GRANT_COLUMNS, rows, TYPES.grants);
    }
  }
  return tokens;
}

const basic = `Basic ${Buffer.from(`bench-rt:${SECRET}`).toString('base64')}`;

/** One refresh request; its milliseconds. Fails on anything but 200, and on a token without the organization. */
async function refresh(http, handle, withOrganization) {
  const started = performance.now();
  const res = await http.request({
    method: 'POST',
    path: '/connect/token',
    headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: basic },
    body: `grant_type=refresh_token&refresh_token=${handle}`,
  });
  const body = await res.body.text();
  const ms = performance.now() - started;
  if (res.statusCode !== 200) throw new Error(`refresh answered ${res.statusCode}: ${body}`);
  const payload = JSON.parse(Buffer.from(JSON.parse(body).access_token.split('.')[1], 'base64url').toString());
  if (withOrganization !== (payload.org_id !== undefined))
    throw new Error(`unexpected token: ${JSON.stringify(payload)}`);
  return ms;
}

/**
 * The scenarios in the order of turn `turn`: forwards, then backwards (A B B A ...). The one that
 * follows the other pays for its writes (SQLite's checkpoints, PostgreSQL's flushes): measured here,
 * whichever ran second lost a quarter of its throughput, so each goes second as often.
 */
function inTurn(names, turn) {
  return turn % 2 === 0 ? names : [...names].reverse();
}

/** Sequential latency, alternating slices; then throughput with `connections` at once. */
async function measureRefresh(http, tokens, requests, connections) {
  const times = { refresh: [], 'refresh+org': [] };
  const warm = 300;
  for (let done = 0; done < requests + warm; done += SLICE)
    for (const name of inTurn(Object.keys(times), done / SLICE))
      for (let i = done; i < Math.min(requests + warm, done + SLICE); i++) {
        const ms = await refresh(http, tokens[name][i], name !== 'refresh');
        if (i >= warm) times[name].push(ms);
      }
  // Throughput in alternating chunks too, the seconds of each scenario summed.
  const seconds = { refresh: 0, 'refresh+org': 0 };
  const left = Object.fromEntries(Object.keys(times).map((name) => [name, tokens[name].slice(requests + warm)]));
  for (let from = 0; from < left.refresh.length; from += THROUGHPUT_CHUNK)
    for (const name of inTurn(Object.keys(times), from / THROUGHPUT_CHUNK)) {
      const chunk = left[name].slice(from, from + THROUGHPUT_CHUNK);
      let next = 0;
      const started = performance.now();
      await Promise.all(
        Array.from({ length: connections }, async () => {
          while (next < chunk.length) await refresh(http, chunk[next++], name !== 'refresh');
        }),
      );
      seconds[name] += (performance.now() - started) / 1000;
    }
  const throughput = Object.fromEntries(Object.entries(seconds).map(([name, s]) => [name, left[name].length / s]));
  return Object.fromEntries(
    Object.entries(times).map(([name, list]) => {
      const sorted = list.sort((a, b) => a - b);
      return [name, { p50: percentile(sorted, 50), p99: percentile(sorted, 99), perSecond: throughput[name] }];
    }),
  );
}

/** Sigil's own `organizations.member` at random pairs (half members, half not); p50 and p99 in ms. */
async function measureLookup(storage, organizations, memberships, requests) {
  const { openStore } = await import('../dist/stores/sql.js');
  const store = await openStore(storage);
  try {
    const times = [];
    for (let i = 0; i < requests + 300; i++) {
      const j = randomInt(memberships);
      const [id, subject] =
        i % 2 ? membershipRow(j, organizations, 0) : [organizationId(randomInt(organizations)), `sub-${j}`];
      const started = performance.now();
      await store.organizations.member(id, subject);
      if (i >= 300) times.push(performance.now() - started);
    }
    const sorted = times.sort((a, b) => a - b);
    return { p50: percentile(sorted, 50), p99: percentile(sorted, 99) };
  } finally {
    await store.close();
  }
}

/** One organization created through /admin/v1 (the answer waits for this node's reload); its milliseconds. */
async function measureCreate(http) {
  const tokenRes = await http.request({
    method: 'POST',
    path: '/connect/token',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      authorization: `Basic ${Buffer.from(`bench-admin:${SECRET}`).toString('base64')}`,
    },
    body: 'grant_type=client_credentials&scope=sigil%3Aadmin',
  });
  const { access_token } = JSON.parse(await tokenRes.body.text());
  const started = performance.now();
  const res = await http.request({
    method: 'POST',
    path: '/admin/v1/organizations',
    headers: { authorization: `Bearer ${access_token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name: `bench-new-${randomInt(1e9)}`, displayName: 'New' }),
  });
  await res.body.text();
  if (res.statusCode !== 201) throw new Error(`create answered ${res.statusCode}`);
  return performance.now() - started;
}

async function benchStore(kind, opts, configFile, dir) {
  let storage;
  let db;
  if (kind === 'sqlite') {
    storage = `sqlite:${join(dir, 'organizations.db')}`;
    runCli(['migrate', '--config', configFile, '--storage', storage]);
    db = new SqliteDb(join(dir, 'organizations.db'));
  } else {
    const schema = `sigil_bench_org_${process.pid}_${randomBytes(3).toString('hex')}`;
    opts.schemas.push(schema);
    storage = `${opts.pgUrl}?schema=${schema}&poolSize=10`;
    runCli(['migrate', '--config', configFile, '--storage', storage]);
    db = await new PostgresDb(opts.pgUrl, schema).open();
  }
  const filledAt = performance.now();
  await fill(db, opts.organizations, opts.memberships);
  console.log(`${kind}: filled in ${((performance.now() - filledAt) / 1000).toFixed(1)} s`);
  const tokens = await preIssue(db, opts.requests + 300 + opts.requests);
  await db.close();
  const { child, base, startMs } = await startSigil(configFile, storage, await freePort(), await freePort());
  const http = new Pool(base, { connections: opts.connections, pipelining: 1 });
  try {
    const refreshes = await measureRefresh(http, tokens, opts.requests, opts.connections);
    const lookup = await measureLookup(storage, opts.organizations, opts.memberships, opts.requests);
    const createMs = await measureCreate(http);
    return { startMs, refreshes, lookup, createMs };
  } finally {
    await http.close();
    await stopSigil(child);
  }
}

function report(kind, r) {
  const f = (n) => n.toFixed(2);
  console.log(`\n${kind}: cold start ${Math.round(r.startMs)} ms (every stored organization read)`);
  console.log('scenario      p50 ms   p99 ms   req/s');
  for (const [name, m] of Object.entries(r.refreshes))
    console.log(
      `${name.padEnd(12)} ${f(m.p50).padStart(7)} ${f(m.p99).padStart(8)} ${Math.round(m.perSecond).toString().padStart(7)}`,
    );
  const ratio = r.refreshes['refresh+org'].perSecond / r.refreshes.refresh.perSecond;
  console.log(`with / without an organization: ${ratio.toFixed(2)}x the requests per second`);
  const verdict = r.lookup.p99 <= LOOKUP_TARGET_MS ? 'within' : 'OVER';
  console.log(
    `membership lookup: p50 ${f(r.lookup.p50)} ms, p99 ${f(r.lookup.p99)} ms (${verdict} the ${LOOKUP_TARGET_MS} ms target)`,
  );
  console.log(`one organization created through /admin/v1: ${Math.round(r.createMs)} ms`);
}

async function main() {
  const { values } = parseArgs({
    options: {
      stores: { type: 'string', default: 'sqlite,postgres' },
      organizations: { type: 'string', default: '100000' },
      memberships: { type: 'string', default: '1000000' },
    },
  });
  const opts = {
    organizations: Number(values.organizations),
    memberships: Number(values.memberships),
    requests: Number(process.env.BENCH_ORG_REQUESTS ?? 3000),
    connections: Number(process.env.BENCH_CONNECTIONS ?? 8),
    pgUrl: process.env.SIGIL_BENCH_POSTGRES ?? 'postgres://postgres@127.0.0.1:5432/test',
    schemas: [],
  };
  if (opts.memberships < ALICE_ORGANIZATIONS || opts.organizations < ALICE_ORGANIZATIONS)
    throw new Error(`at least ${ALICE_ORGANIZATIONS} organizations and memberships`);
  console.log(
    `organizations-scale: ${opts.organizations} organizations, ${opts.memberships} memberships, ${opts.requests} requests per scenario, node ${process.version}, ${cpus().length} CPUs`,
  );
  const dir = mkdtempSync(join(tmpdir(), 'sigil-bench-org-'));
  const configFile = join(dir, 'sigil.json');
  writeFileSync(configFile, JSON.stringify(config()));
  try {
    for (const kind of values.stores.split(',')) report(kind, await benchStore(kind, opts, configFile, dir));
  } finally {
    await cleanUp(opts.pgUrl, opts.schemas);
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
