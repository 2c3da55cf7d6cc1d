// Store scaling benchmark: does Sigil stay as fast with 1,000,000 stored grants as with 10,000?
//
//   npm run build && npm run bench:scale      (= node bench/grants-scale.mjs)
//   node bench/grants-scale.mjs --stores sqlite --sizes 10000,100000
//   node bench/grants-scale.mjs --cleanup      (the clean-up pace at the largest size: see cleanupPace)
//   env: BENCH_DURATION (s per measured run, default 10), BENCH_WARMUP (s, default 2),
//        BENCH_CONNECTIONS (default 8), BENCH_ROUNDS (default 3), BENCH_LATENCY_SECONDS (s of
//        one-at-a-time requests per scenario and size, default 4),
//        SIGIL_BENCH_POSTGRES (default postgres://postgres@127.0.0.1:5432/test; every database of
//        the run is a schema of its own, created by `sigil migrate` and dropped at the end)
//
// For each store (SQLite files in a temp dir; PostgreSQL schemas) it fills one database per size
// (default 10,000 and 1,000,000 grants) with realistic rows (refresh tokens, JWT access-token marks,
// reference tokens, sessions, consents, codes; random keys, expiry in the future, `data` shaped as
// Sigil writes it) by bulk SQL straight into the `grants` table. Then, in rounds, it runs a real
// `sigil start` process on each database and measures each scenario on each size: throughput under
// load (autocannon, BENCH_CONNECTIONS connections), then latency of requests sent one at a time, in
// half-second slices alternating between the sizes (so that the load of a shared machine weighs on
// every size alike):
//   token       client_credentials -> reference access token (one row written)
//   refresh     refresh_token grant of a one-time (rotating) refresh token: read + consume + write;
//               every request presents its own refresh token, pre-issued just before the run by
//               inserting rows exactly as Sigil stores them (only the SHA-256 of the handle)
//   introspect  introspection of reference tokens picked at random among as many filled ones at every
//               size as the smallest table holds (a read; Sigil's cache of recent lookups is off, so
//               that every request reads the store)
// and prints median p50 / p99 latency and req/s per size over the rounds, with the ratio largest /
// smallest size.
// At the largest size it also measures, for the sizing table of docs/performance.md, client_credentials with a
// JWT and password grants (argon2id); for every scenario the Sigil process's CPU time (requests per
// CPU-second = per core) and the database rows written per request (counted by triggers, in
// separate runs of a fixed number of requests). Rows created by a run are deleted after it, so every
// run starts from the filled size. Full results: bench/results/grants-scale-<timestamp>.json.
import { execFileSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import Database from 'better-sqlite3';
import pg from 'pg';
import { Client } from 'undici';
import { CLI, children, cpuSeconds, freePort, HOST, ROOT, runCli, startSigil, stopSigil } from './scale-kit.mjs';

const SECRET = 'bench-secret';
const FORM = 'application/x-www-form-urlencoded';
const COLUMNS = [
  'key',
  'type',
  'client_id',
  'subject_id',
  'family_id',
  'session_id',
  'data',
  'created_at',
  'expires_at',
  'consumed_at',
  'revoked_at',
];
const INTROSPECTION_SAMPLE = 50_000;
/** Requests per counted run (database writes per request); fewer for argon2id logins. */
const COUNTED = { default: 400, password: 100 };

const basic = (id, secret) =>
  `Basic ${Buffer.from(`${encodeURIComponent(id)}:${encodeURIComponent(secret)}`).toString('base64')}`;
const nowSeconds = () => Math.floor(Date.now() / 1000);
const sha256 = (s) => createHash('sha256').update(s, 'utf8').digest('base64url');

// ---------------------------------------------------------------------------------------------
// Realistic rows, shaped as src/tokens/tokens.ts, src/endpoints/authorize.ts and
// src/users/sessions.ts write them.

/** Random base64url strings from a pooled buffer (randomBytes per row is the slow part of a fill). */
class Random {
  #pool = Buffer.alloc(0);
  #at = 0;
  bytes(n) {
    if (this.#at + n > this.#pool.length) {
      this.#pool = randomBytes(1 << 20);
      this.#at = 0;
    }
    const out = this.#pool.subarray(this.#at, this.#at + n);
    this.#at += n;
    return out;
  }
  handle() {
    return this.bytes(32).toString('base64url');
  }
  id() {
    return this.bytes(16).toString('base64url');
  }
  int(n) {
    return this.bytes(4).readUInt32LE() % n;
  }
}
const rnd = new Random();

/**
 * Mix of a provider with browser, mobile and machine clients: refresh tokens, the JWT access-token
 * marks issued with them, reference tokens, sessions, consents and authorization codes.
 */
const MIX = [
  ['refresh_token', 0.35],
  ['access_token', 0.25],
  ['reference_token', 0.2],
  ['session', 0.1],
  ['consent', 0.05],
  ['authorization_code', 0.05],
];

/** A filled row, as an array in COLUMNS order; `handle` is set for reference tokens. */
function fillRow(type, now, issuer) {
  const created = now - 60 - rnd.int(7 * 86400);
  const user = `user-${rnd.int(100_000)}`;
  const sid = rnd.id();
  const family = rnd.id();
  const subject = { subjectId: user, authTime: created - rnd.int(3600), amr: ['pwd'], idp: 'local', sid };
  switch (type) {
    case 'refresh_token': {
      const absolute = created + 30 * 86400;
      const data = { scopes: ['openid', 'profile', 'api1', 'offline_access'], subject, absoluteExpiresAt: absolute };
      return {
        row: [
          rnd.handle(),
          type,
          `app-${rnd.int(50)}`,
          user,
          family,
          sid,
          JSON.stringify(data),
          created,
          absolute,
          rnd.int(3) === 0 ? created + 600 : null,
          null,
        ],
      };
    }
    case 'access_token':
      return {
        row: [
          rnd.handle(),
          type,
          `app-${rnd.int(50)}`,
          user,
          family,
          sid,
          '{}',
          created,
          now + 600 + rnd.int(3600),
          null,
          null,
        ],
      };
    case 'reference_token': {
      const handle = rnd.handle();
      const exp = now + 3600 + rnd.int(86400);
      const claims = {
        iss: issuer,
        exp,
        iat: created,
        nbf: created,
        aud: 'api1',
        sub: 'bench-ref',
        client_id: 'bench-ref',
        jti: rnd.id(),
        scope: 'api1',
      };
      return {
        row: [
          sha256(handle),
          type,
          'bench-ref',
          null,
          family,
          null,
          JSON.stringify({ claims }),
          created,
          exp,
          null,
          null,
        ],
        handle,
      };
    }
    case 'session': {
      const data = { sid, subjectId: user, authTime: created, amr: ['pwd'], idp: 'local', tenant: null };
      return {
        row: [
          rnd.handle(),
          type,
          '',
          user,
          sid,
          sid,
          JSON.stringify(data),
          created,
          created + 36_000 + 8 * 86400,
          null,
          null,
        ],
      };
    }
    case 'consent': {
      const data = { scopes: ['openid', 'profile', 'api1'] };
      return {
        row: [
          sha256(`consent:${user}:${rnd.id()}`),
          type,
          `app-${rnd.int(50)}`,
          user,
          family,
          null,
          JSON.stringify(data),
          created,
          now + 365 * 86400,
          null,
          null,
        ],
      };
    }
    default: {
      const data = {
        redirectUri: 'https://app.example/signin-oidc',
        scopes: ['openid', 'profile', 'api1'],
        subject,
        nonce: rnd.id(),
        codeChallenge: rnd.handle(),
        codeChallengeMethod: 'S256',
      };
      return {
        row: [
          rnd.handle(),
          'authorization_code',
          `app-${rnd.int(50)}`,
          user,
          family,
          sid,
          JSON.stringify(data),
          created,
          now + 3600,
          created + 2,
          null,
        ],
      };
    }
  }
}

function pickType() {
  let x = rnd.int(1_000_000) / 1_000_000;
  for (const [type, share] of MIX) {
    if (x < share) return type;
    x -= share;
  }
  return MIX[0][0];
}

/** A one-time refresh token of client bench-rt for config user alice, as TokenService.issue stores it. */
function refreshRow(handle, now) {
  const data = {
    scopes: ['openid', 'api1', 'offline_access'],
    subject: { subjectId: '1', authTime: now - 60, amr: ['pwd'], idp: 'local' },
    absoluteExpiresAt: now + 30 * 86400,
  };
  return [
    sha256(handle),
    'refresh_token',
    'bench-rt',
    '1',
    rnd.id(),
    null,
    JSON.stringify(data),
    now,
    now + 30 * 86400,
    null,
    null,
  ];
}

// ---------------------------------------------------------------------------------------------
// Direct database access of the bench (bulk fill, counts, write counters).

class SqliteDb {
  constructor(file) {
    this.kind = 'sqlite';
    this.db = new Database(file);
    this.db.pragma('journal_mode = WAL');
    this.db.pragma('busy_timeout = 10000');
    // The bench's own connection only: a page cache that holds the table, for a fast bulk fill.
    this.db.pragma('cache_size = -1000000');
    const insert = this.db.prepare(
      `insert into grants (${COLUMNS.join(', ')}) values (${COLUMNS.map(() => '?').join(', ')})`,
    );
    this.insertMany = this.db.transaction((rows) => {
      for (const r of rows) insert.run(r);
    });
  }
  async insert(rows) {
    this.insertMany(rows);
  }
  async count() {
    return this.db.prepare('select count(*) as n from grants').get().n;
  }
  async countExpired(now) {
    return this.db.prepare('select count(*) as n from grants where expires_at < ?').get(now).n;
  }
  async deleteCreatedSince(t) {
    return this.db.prepare('delete from grants where created_at >= ?').run(t).changes;
  }
  async afterFill() {
    this.db.pragma('wal_checkpoint(TRUNCATE)');
  }
  async size() {
    const { n } = this.db
      .prepare('select page_count * page_size as n from pragma_page_count(), pragma_page_size()')
      .get();
    return n;
  }
  async installCounters() {
    this.db.exec('create table bench_writes (tbl text not null, op text not null)');
    for (const tbl of ['grants', 'users', 'signing_keys', 'leases'])
      for (const op of ['insert', 'update', 'delete'])
        this.db.exec(
          `create trigger bench_${tbl}_${op} after ${op} on ${tbl} begin insert into bench_writes values ('${tbl}', '${op}'); end`,
        );
  }
  async readCounters() {
    return this.db
      .prepare('select tbl, op, count(*) as n from bench_writes group by tbl, op')
      .all()
      .map((r) => ({ ...r, n: Number(r.n) }));
  }
  async resetCounters() {
    this.db.exec('delete from bench_writes');
  }
  async removeCounters() {
    for (const tbl of ['grants', 'users', 'signing_keys', 'leases'])
      for (const op of ['insert', 'update', 'delete']) this.db.exec(`drop trigger if exists bench_${tbl}_${op}`);
    this.db.exec('drop table if exists bench_writes');
  }
  async close() {
    this.db.close();
  }
}

class PostgresDb {
  constructor(connectionString, schema) {
    this.kind = 'postgres';
    this.schema = schema;
    this.pool = new pg.Pool({ connectionString, max: 4, options: `-c search_path=${schema}` });
  }
  async insert(rows) {
    // One statement per batch: every column as an array, unnested server-side.
    const columns = COLUMNS.map((_, i) => rows.map((r) => r[i]));
    const types = [
      'varchar',
      'varchar',
      'varchar',
      'varchar',
      'varchar',
      'varchar',
      'text',
      'bigint',
      'bigint',
      'bigint',
      'bigint',
    ];
    await this.pool.query(
      `insert into grants (${COLUMNS.join(', ')}) select * from unnest(${types.map((t, i) => `$${i + 1}::${t}[]`).join(', ')})`,
      columns,
    );
  }
  async count() {
    const { rows } = await this.pool.query('select count(*)::int as n from grants');
    return rows[0].n;
  }
  async countExpired(now) {
    const { rows } = await this.pool.query('select count(*)::int as n from grants where expires_at < $1', [now]);
    return rows[0].n;
  }
  async deleteCreatedSince(t) {
    const { rowCount } = await this.pool.query('delete from grants where created_at >= $1', [t]);
    await this.pool.query('vacuum analyze grants');
    return rowCount;
  }
  async afterFill() {
    // What autovacuum does after a bulk load (PostgreSQL 13+ vacuums on inserts too).
    await this.pool.query('vacuum analyze grants');
  }
  async size() {
    const { rows } = await this.pool.query(`select pg_total_relation_size('grants')::bigint as n`);
    return Number(rows[0].n);
  }
  async installCounters() {
    await this.pool.query('create table bench_writes (tbl text not null, op text not null)');
    await this.pool.query(`create function bench_count() returns trigger language plpgsql as $$
      begin insert into bench_writes values (TG_TABLE_NAME, lower(TG_OP)); return null; end $$`);
    for (const tbl of ['grants', 'users', 'signing_keys', 'leases'])
      await this.pool.query(
        `create trigger bench_writes_trigger after insert or update or delete on ${tbl} for each row execute function bench_count()`,
      );
  }
  async readCounters() {
    const { rows } = await this.pool.query('select tbl, op, count(*)::int as n from bench_writes group by tbl, op');
    return rows;
  }
  async resetCounters() {
    await this.pool.query('delete from bench_writes');
  }
  async removeCounters() {
    for (const tbl of ['grants', 'users', 'signing_keys', 'leases'])
      await this.pool.query(`drop trigger if exists bench_writes_trigger on ${tbl}`);
    await this.pool.query('drop function if exists bench_count()');
    await this.pool.query('drop table if exists bench_writes');
  }
  async close() {
    await this.pool.end();
  }
}

// ---------------------------------------------------------------------------------------------
// The Sigil process.

// ---------------------------------------------------------------------------------------------
// Scenarios.

const isToken = (body) => body.includes('"access_token"');
const isActive = (body) => body.includes('"active":true');

/**
 * The autocannon request of a scenario. `state` holds the handles: `refresh` (pre-issued one-time
 * refresh tokens, each used once) and `sample` (reference tokens to introspect).
 */
function scenarioRequest(name, base, state) {
  const token = (client, body) => ({
    url: `${base}/connect/token`,
    headers: { 'content-type': FORM, authorization: basic(client, SECRET) },
    body,
    verify: isToken,
  });
  switch (name) {
    case 'token':
      return token('bench-ref', 'grant_type=client_credentials&scope=api1');
    case 'cc-jwt':
      return token('bench-jwt', 'grant_type=client_credentials&scope=api1');
    case 'password':
      return token(
        'bench-rt',
        'grant_type=password&username=alice&password=alice&scope=openid%20api1%20offline_access',
      );
    case 'refresh':
      return {
        ...token('bench-rt', ''),
        setup: () => {
          const handle = state.refresh[state.refreshNext++];
          if (handle === undefined) throw new Error('out of pre-issued refresh tokens: raise the pool size');
          return `grant_type=refresh_token&refresh_token=${handle}`;
        },
      };
    case 'introspect':
      return {
        url: `${base}/connect/introspect`,
        headers: { 'content-type': FORM, authorization: basic('api1', 'api1-secret') },
        body: '',
        verify: isActive,
        setup: () => `token=${state.sample[rnd.int(state.sample.length)]}`,
      };
    default:
      throw new Error(`unknown scenario ${name}`);
  }
}

/** One autocannon run of `req`: for `duration` seconds, or `amount` requests. */
async function cannon(req, opts) {
  let badBody;
  let exhausted;
  const request = {
    method: 'POST',
    headers: req.headers,
    body: req.body,
    ...(req.setup
      ? {
          setupRequest: (r) => {
            try {
              return { ...r, body: req.setup() };
            } catch (err) {
              exhausted = err;
              return { ...r, body: 'grant_type=refresh_token&refresh_token=exhausted' };
            }
          },
        }
      : {}),
  };
  const r = await autocannon({
    url: req.url,
    connections: opts.connections,
    ...(opts.amount ? { amount: opts.amount } : { duration: opts.duration }),
    requests: [request],
    verifyBody: (body) => {
      if (req.verify(body)) return true;
      badBody ??= body;
      return false;
    },
  });
  if (exhausted && !opts.lenient) throw exhausted;
  return {
    rps: r.requests.average,
    total: r.requests.total,
    p50: r.latency.p50,
    p99: r.latency.p99,
    duration: r.duration,
    non2xx: r.non2xx,
    errors: r.errors,
    timeouts: r.timeouts,
    mismatches: r.mismatches,
    ...(badBody ? { firstBadBody: badBody.slice(0, 300) } : {}),
  };
}

/**
 * Latency without queueing: requests one after the other on one keep-alive connection, each timed
 * with the high-resolution clock (autocannon's histogram has 1 ms steps). `probe.slice(seconds)`
 * adds one slice of requests, so that slices on several servers can alternate.
 */
function sequentialProbe(req) {
  const url = new URL(req.url);
  const client = new Client(url.origin, { pipelining: 1 });
  const times = [];
  let bad = 0;
  let badBody;
  let exhausted = false;
  return {
    async slice(seconds) {
      const end = Date.now() + seconds * 1000;
      while (Date.now() < end && !exhausted) {
        let body;
        try {
          body = req.setup ? req.setup() : req.body;
        } catch {
          exhausted = true; // out of pre-issued refresh tokens
          break;
        }
        const t0 = process.hrtime.bigint();
        const res = await client.request({ path: url.pathname, method: 'POST', headers: req.headers, body });
        const text = await res.body.text();
        const ms = Number(process.hrtime.bigint() - t0) / 1e6;
        if (res.statusCode === 200 && req.verify(text)) times.push(ms);
        else {
          bad++;
          badBody ??= `${res.statusCode} ${text.slice(0, 300)}`;
        }
      }
    },
    async result() {
      await client.close();
      times.sort((x, y) => x - y);
      const q = (p) => times[Math.min(times.length - 1, Math.floor(p * times.length))];
      return {
        n: times.length,
        bad,
        p50: q(0.5),
        p99: q(0.99),
        mean: times.reduce((x, y) => x + y, 0) / times.length,
        ...(exhausted ? { exhausted: true } : {}),
        ...(badBody ? { firstBadBody: badBody } : {}),
      };
    },
  };
}

const fmt = (n, d = 0) => (typeof n === 'number' && Number.isFinite(n) ? n.toFixed(d) : '-');

function printTable(title, head, lines) {
  const widths = head.map((h, i) => Math.max(h.length, ...lines.map((l) => String(l[i]).length)));
  const row = (cells) =>
    cells.map((c, i) => (i === 0 ? String(c).padEnd(widths[i]) : String(c).padStart(widths[i]))).join('  ');
  console.log(`\n${title}\n${row(head)}\n${widths.map((w) => '-'.repeat(w)).join('  ')}`);
  for (const l of lines) console.log(row(l));
}

// ---------------------------------------------------------------------------------------------

async function main() {
  const { values } = parseArgs({
    options: {
      stores: { type: 'string', default: 'sqlite,postgres' },
      sizes: { type: 'string', default: '10000,1000000' },
      cleanup: { type: 'boolean', default: false },
    },
  });
  const stores = values.stores.split(',');
  const sizes = values.sizes.split(',').map(Number);
  if (stores.some((s) => !['sqlite', 'postgres'].includes(s))) throw new Error('--stores: sqlite and/or postgres');
  if (sizes.some((n) => !Number.isInteger(n) || n < 1) || sizes.some((n, i) => i > 0 && n <= sizes[i - 1]))
    throw new Error('--sizes: increasing integers');
  if (!existsSync(CLI)) throw new Error('dist/cli/main.js not found: run `npm run build` first');
  const opts = {
    duration: Number(process.env.BENCH_DURATION ?? 10),
    warmup: Number(process.env.BENCH_WARMUP ?? 2),
    connections: Number(process.env.BENCH_CONNECTIONS ?? 8),
    rounds: Number(process.env.BENCH_ROUNDS ?? 3),
    latency: Number(process.env.BENCH_LATENCY_SECONDS ?? 4),
  };
  for (const [name, n] of Object.entries(opts))
    if (!Number.isInteger(n) || n < (name === 'warmup' ? 0 : 1)) throw new Error(`invalid ${name}: ${n}`);
  const pgUrl = process.env.SIGIL_BENCH_POSTGRES ?? 'postgres://postgres@127.0.0.1:5432/test';
  const started = Date.now();
  console.log(
    `grants-scale: Sigil ${gitDescribe() ?? ''}, node ${process.version}, ${cpus().length} CPUs (${cpus()[0]?.model}) shared by Sigil, ` +
      `the database and autocannon; load average ${loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')}`,
  );
  if (!values.cleanup)
    console.log(
      `per scenario: ${opts.warmup} s warm-up (discarded), ${opts.duration} s of autocannon with ${opts.connections} connections (throughput, ` +
        `loaded latency), then ${opts.latency} s of requests one at a time (latency, in half-second slices alternating between the sizes); ` +
        `${opts.rounds} rounds on ${sizes.join(' and ')} grants; medians reported`,
    );

  const work = mkdtempSync(join(tmpdir(), 'sigil-scale-'));
  const configFile = join(work, 'sigil.json');
  writeFileSync(configFile, JSON.stringify(benchConfig()));
  const results = {
    date: new Date().toISOString(),
    node: process.version,
    git: gitDescribe(),
    cpus: cpus().map((c) => c.model),
    options: { ...opts, sizes, stores },
    loadavgStart: loadavg(),
    stores: {},
  };
  const schemas = [];
  const dbs = [];
  try {
    for (const kind of stores) {
      console.log(`\n== ${kind}`);
      // One database per size, filled once; the rounds then alternate between them, so that the
      // load of the (shared) machine weighs on every size alike.
      const targets = [];
      for (const size of sizes) {
        let storage;
        let db;
        if (kind === 'sqlite') {
          const file = join(work, `grants-${size}.db`);
          storage = `sqlite:${file}`;
          runCli(['migrate', '--config', configFile, '--storage', storage]);
          db = new SqliteDb(file);
        } else {
          const schema = `sigil_bench_${process.pid}_${randomBytes(3).toString('hex')}`;
          schemas.push(schema);
          storage = `${pgUrl}?schema=${schema}&poolSize=10`;
          runCli(['migrate', '--config', configFile, '--storage', storage]);
          db = new PostgresDb(pgUrl, schema);
        }
        dbs.push(db);
        targets.push({
          size,
          storage,
          db,
          port: await freePort(),
          metricsPort: await freePort(),
          state: { sample: [], seen: 0, refresh: [], refreshNext: 0 },
        });
      }
      results.stores[kind] = values.cleanup
        ? await cleanupPace(kind, targets.at(-1), configFile)
        : await benchStore(kind, targets, configFile, opts);
      for (const t of targets) {
        await t.db.close();
        dbs.splice(dbs.indexOf(t.db), 1);
        if (kind === 'sqlite') rmSync(t.storage.slice('sqlite:'.length), { force: true });
      }
    }
  } finally {
    for (const child of children) child.kill('SIGKILL');
    for (const db of dbs) await db.close().catch(() => {});
    if (schemas.length > 0) {
      const c = new pg.Client({ connectionString: pgUrl });
      await c.connect();
      for (const schema of schemas) await c.query(`drop schema if exists ${schema} cascade`);
      await c.end();
    }
    rmSync(work, { recursive: true, force: true });
  }
  results.loadavgEnd = loadavg();
  results.seconds = Math.round((Date.now() - started) / 1000);
  if (values.cleanup) return reportCleanup(results);
  report(results, sizes);
  const file = join(ROOT, 'bench/results', `grants-scale-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
  mkdirSync(join(ROOT, 'bench/results'), { recursive: true });
  writeFileSync(file, `${JSON.stringify(results, null, 2)}\n`);
  console.log(`\nresults written to ${file} (${results.seconds} s in all)`);
  const failed = Object.values(results.stores).some((s) =>
    s.sizes.some((z) => z.rounds.some((r) => Object.values(r).some((x) => x.error))),
  );
  return failed ? 1 : 0;
}

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

/** A copy of `items` in random order (Fisher-Yates); a random prefix of a uniform sample is one too. */
function shuffled(items) {
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = rnd.int(i + 1);
    [out[i], out[j]] = [out[j], out[i]];
  }
  return out;
}

function benchConfig() {
  return {
    logLevel: 'warn',
    // Every introspection reads the store: the in-process cache of recent lookups (on by default,
    // 1 s) would answer most of them from memory and hide how the table's size weighs on a read.
    accessTokenCache: { maxAgeMilliseconds: 0 },
    signingAlgorithms: ['ES256'],
    identityResources: [
      { name: 'openid', userClaims: ['sub'] },
      { name: 'profile', userClaims: ['name'] },
    ],
    apiScopes: [{ name: 'api1' }],
    apiResources: [{ name: 'api1', scopes: ['api1'], secrets: ['api1-secret'] }],
    clients: [
      {
        clientId: 'bench-jwt',
        clientSecrets: [SECRET],
        allowedGrantTypes: ['client_credentials'],
        allowedScopes: ['api1'],
        accessTokenLifetime: 3600,
      },
      {
        clientId: 'bench-ref',
        clientSecrets: [SECRET],
        allowedGrantTypes: ['client_credentials'],
        allowedScopes: ['api1'],
        accessTokenType: 'reference',
        accessTokenLifetime: 3600,
      },
      {
        clientId: 'bench-rt',
        clientSecrets: [SECRET],
        allowedGrantTypes: ['password'],
        allowedScopes: ['openid', 'api1', 'offline_access'],
        allowOfflineAccess: true,
        refreshTokenUsage: 'oneTime',
        accessTokenLifetime: 3600,
      },
    ],
    users: [{ subjectId: '1', username: 'alice', password: 'alice', claims: { name: 'Alice' } }],
  };
}

/** Fills `target.db` with `target.size` realistic rows by bulk inserts, sampling reference-token handles. */
async function fill(kind, target, ageSeconds = 0) {
  const { db, size, state } = target;
  const issuer = `http://${HOST}:${target.port}`;
  const t0 = Date.now();
  const batch = kind === 'sqlite' ? 20_000 : 5_000;
  const inflight = [];
  let filled = 0;
  while (filled < size) {
    const n = Math.min(batch, size - filled);
    const now = nowSeconds() - ageSeconds;
    const rows = [];
    for (let i = 0; i < n; i++) {
      const { row, handle } = fillRow(pickType(), now, issuer);
      rows.push(row);
      if (handle) {
        // Reservoir sample: uniform over every reference token of the table.
        state.seen++;
        if (state.sample.length < INTROSPECTION_SAMPLE) state.sample.push(handle);
        else if (rnd.int(state.seen) < INTROSPECTION_SAMPLE) state.sample[rnd.int(INTROSPECTION_SAMPLE)] = handle;
      }
    }
    filled += n;
    inflight.push(db.insert(rows));
    if (inflight.length >= 3) await inflight.shift();
    if (process.stdout.isTTY && filled % 100_000 === 0)
      process.stdout.write(`\r   filling ${size.toLocaleString('en')}: ${filled.toLocaleString('en')} rows`);
  }
  await Promise.all(inflight);
  await db.afterFill();
  const seconds = (Date.now() - t0) / 1000;
  const rows = await db.count();
  const bytes = await db.size();
  console.log(
    `\r   filled ${rows.toLocaleString('en')} rows in ${seconds.toFixed(1)} s (${Math.round(rows / seconds).toLocaleString('en')} rows/s); ` +
      `grants table with indexes ${(bytes / 2 ** 20).toFixed(0)} MiB`,
  );
  return { rows, seconds, bytes };
}

/** Older than every expiry fillRow gives (at most 30 days after a creation up to 7 days back). */
const EXPIRED_AGE_SECONDS = 40 * 86400;

/**
 * The clean-up pace (`--cleanup`): the largest size filled with rows that have all expired, then a
 * `sigil start` with the default `cleanup` settings (every 60 s, batches of 1,000) removes them
 * while requests for reference tokens (a row written each) go on one at a time. Reports how long
 * the store took to be emptied, rows removed per second, and the requests' latency while the
 * clean-up ran against the same requests once it was done.
 */
async function cleanupPace(kind, target, configFile) {
  const filled = await fill(kind, target, EXPIRED_AGE_SECONDS);
  const sigil = await startSigil(configFile, target.storage, target.port, target.metricsPort);
  const pid = sigil.child.pid;
  const probe = sequentialProbe(scenarioRequest('token', sigil.base, target.state));
  let firstRemoval;
  let emptied;
  const started = Date.now();
  const cpuAtStart = cpuSeconds(pid);
  try {
    const expiredLeft = () => target.db.countExpired(nowSeconds());
    for (;;) {
      await probe.slice(1);
      const left = await expiredLeft();
      if (firstRemoval === undefined && left < filled.rows) firstRemoval = Date.now();
      if (left === 0) {
        emptied = Date.now();
        break;
      }
      if (Date.now() - started > 30 * 60_000) throw new Error(`${left} expired rows still there after 30 minutes`);
    }
    const cleaning = await probe.result();
    const after = sequentialProbe(scenarioRequest('token', sigil.base, target.state));
    await after.slice(5);
    return {
      storage: kind,
      rows: filled.rows,
      fillSeconds: filled.seconds,
      firstRemovalAfterStartSeconds: (firstRemoval - started) / 1000,
      removalSeconds: (emptied - firstRemoval) / 1000,
      rowsPerSecond: Math.round(filled.rows / ((emptied - firstRemoval) / 1000)),
      sigilCpuSeconds: cpuSeconds(pid) - cpuAtStart,
      latencyWhileCleaning: cleaning,
      latencyAfter: await after.result(),
    };
  } finally {
    await stopSigil(sigil.child);
  }
}

/** The clean-up pace per store. */
function reportCleanup(results) {
  console.log(
    '\nclean-up of expired grants (default cleanup settings), reference tokens issued one at a time meanwhile',
  );
  printTable(
    '',
    [
      'store',
      'rows',
      'first removal after start s',
      'emptied in s',
      'rows/s',
      'Sigil CPU s (requests too)',
      'p50/p99 ms cleaning',
      'p50/p99 ms after',
    ],
    Object.values(results.stores).map((r) => [
      r.storage,
      r.rows.toLocaleString('en'),
      fmt(r.firstRemovalAfterStartSeconds, 1),
      fmt(r.removalSeconds, 1),
      r.rowsPerSecond.toLocaleString('en'),
      fmt(r.sigilCpuSeconds, 1),
      `${fmt(r.latencyWhileCleaning.p50, 1)} / ${fmt(r.latencyWhileCleaning.p99, 1)}`,
      `${fmt(r.latencyAfter.p50, 1)} / ${fmt(r.latencyAfter.p99, 1)}`,
    ]),
  );
  return 0;
}

const SCALE_SCENARIOS = ['token', 'refresh', 'introspect'];
const SIZING_SCENARIOS = ['cc-jwt', 'password'];

/** Fills every size, then measures in rounds that alternate the sizes. */
async function benchStore(kind, targets, configFile, opts) {
  const out = { storage: kind, sizes: [] };
  for (const t of targets) out.sizes.push({ size: t.size, fill: await fill(kind, t), rounds: [] });
  // The same number of distinct tokens to introspect at every size (as many as the smallest table
  // has), so that the sizes differ in the table alone, not in how many rows the run touches.
  const tokens = Math.min(...targets.map((t) => t.state.sample.length));
  for (const t of targets) t.state.sample = shuffled(t.state.sample).slice(0, tokens);
  console.log(
    `   introspection: ${tokens.toLocaleString('en')} distinct reference tokens per size, picked at random from each table`,
  );
  const largest = targets.at(-1);
  for (let round = 1; round <= opts.rounds; round++) {
    console.log(`   round ${round}/${opts.rounds}:`);
    const { measured, startMs } = await measureRound(targets, round === 1, opts, configFile);
    for (const [i, m] of measured.entries()) out.sizes[i].rounds.push(m);
    for (const [i, ms] of startMs.entries()) {
      out.sizes[i].startMs ??= [];
      out.sizes[i].startMs.push(ms);
    }
  }
  out.writes = await countWrites([...SCALE_SCENARIOS, ...SIZING_SCENARIOS], largest, configFile, opts);
  for (const z of out.sizes) {
    z.median = {};
    const names = Object.keys(z.rounds[0] ?? {});
    for (const name of names) {
      const runs = z.rounds.map((r) => r[name]).filter((r) => r && !r.error);
      z.median[name] = Object.fromEntries(
        [
          ['p50'],
          ['p99'],
          ['rps'],
          ['perCore'],
          ['cpuCores'],
          ['seqP50', 'sequential', 'p50'],
          ['seqP99', 'sequential', 'p99'],
        ].map(([k, a = k, b]) => [k, median(runs.map((r) => (b ? r[a]?.[b] : r[a])))]),
      );
      z.median[name].runs = runs.length;
    }
    z.median.startMs = median(z.startMs ?? []);
  }
  return out;
}

function median(values) {
  const v = values.filter((x) => typeof x === 'number' && Number.isFinite(x)).sort((a, b) => a - b);
  if (v.length === 0) return undefined;
  return v.length % 2 ? v[(v.length - 1) / 2] : (v[v.length / 2 - 1] + v[v.length / 2]) / 2;
}

/**
 * One round: a Sigil process on every size's database at once. For each scenario and size: pre-issue
 * refresh tokens when needed, warm up, measure throughput under load (autocannon; Sigil's CPU
 * time); then the latency of requests one at a time, in short slices alternating between the sizes
 * (so that a change in the machine's load weighs on every size alike); then delete every row the
 * scenario created, so each scenario starts from the filled size.
 * @returns `measured`: per target, scenario name -> result; `startMs`: per target, its cold start (ms)
 */
async function measureRound(targets, withSizing, opts, configFile) {
  const servers = [];
  try {
    for (const t of targets) servers.push(await startSigil(configFile, t.storage, t.port, t.metricsPort));
    const out = targets.map(() => ({}));
    const largest = targets.length - 1;
    for (const name of [...SCALE_SCENARIOS, ...(withSizing ? SIZING_SCENARIOS : [])]) {
      const which = SCALE_SCENARIOS.includes(name) ? targets.map((_, i) => i) : [largest];
      const since = nowSeconds();
      const reqs = new Map();
      for (const i of which) {
        const { db, state } = targets[i];
        const { child, base } = servers[i];
        let result;
        try {
          // Refresh tokens for the warm-up; the warm-up's rate then sizes the pool of the measured run.
          if (name === 'refresh') await preIssueRefreshTokens(db, state, since, 4000 * Math.max(1, opts.warmup));
          const req = scenarioRequest(name, base, state);
          const warm =
            opts.warmup > 0 ? await cannon(req, { ...opts, duration: opts.warmup, lenient: true }) : undefined;
          if (name === 'refresh')
            await preIssueRefreshTokens(
              db,
              state,
              since,
              Math.ceil((warm ? warm.total / warm.duration : 4000) * opts.duration * 1.5) + 2000,
            );
          const rows = await db.count();
          const load = loadavg()[0];
          const cpu0 = cpuSeconds(child.pid);
          result = await cannon(req, opts);
          const cpu = cpuSeconds(child.pid) - cpu0;
          Object.assign(result, {
            rowsAtStart: rows,
            cpuSeconds: cpu,
            cpuCores: cpu / result.duration,
            perCore: result.total / cpu,
            loadavg1: load,
          });
          if (result.non2xx || result.errors || result.mismatches)
            result.error = `${result.non2xx} non-2xx, ${result.errors} errors (${result.timeouts} timeouts), ${result.mismatches} unexpected bodies`;
          // Tokens for the latency slices: at most the rate under load, for the slices' total time.
          if (name === 'refresh')
            await preIssueRefreshTokens(
              db,
              state,
              since,
              Math.ceil((result.total / result.duration) * opts.latency * 1.5) + 1000,
            );
          reqs.set(i, req);
        } catch (err) {
          result = { error: err.message };
        }
        out[i][name] = result;
      }
      // Latency one request at a time, alternating between the sizes every half second.
      const probes = new Map([...reqs].map(([i, req]) => [i, sequentialProbe(req)]));
      const slices = Math.max(1, Math.round(opts.latency / 0.5));
      for (let n = 0; n < slices; n++) for (const probe of probes.values()) await probe.slice(opts.latency / slices);
      for (const [i, probe] of probes) {
        const r = out[i][name];
        r.sequential = await probe.result();
        if (r.sequential.bad)
          r.error = `${r.error ? `${r.error}; ` : ''}one at a time: ${r.sequential.bad} failed (${r.sequential.firstBadBody})`;
        if (r.sequential.exhausted)
          r.error = `${r.error ? `${r.error}; ` : ''}one at a time: ran out of pre-issued refresh tokens`;
      }
      for (const i of which) {
        const r = out[i][name];
        const created = await targets[i].db.deleteCreatedSince(since);
        console.log(
          `     ${name.padEnd(10)} ${targets[i].size.toLocaleString('en').padStart(9)}: ` +
            `${fmt(r.rps).padStart(5)} req/s, p50 ${fmt(r.p50, 0).padStart(3)} p99 ${fmt(r.p99, 0).padStart(4)} ms loaded; ` +
            `p50 ${fmt(r.sequential?.p50, 2).padStart(6)} p99 ${fmt(r.sequential?.p99, 2).padStart(6)} ms one at a time (${r.sequential?.n ?? 0}); ` +
            `Sigil CPU ${fmt(r.cpuCores, 2)}, ${fmt(r.perCore).padStart(4)} req/CPU-s (${r.rowsAtStart ?? '?'} rows at start, ${created} created and removed; ` +
            `load ${fmt(r.loadavg1, 1)})${r.error ? `  ERROR: ${r.error}` : ''}`,
        );
      }
    }
    return { measured: out, startMs: servers.map((x) => x.startMs) };
  } finally {
    for (const s of servers) await stopSigil(s.child);
  }
}

async function preIssueRefreshTokens(db, state, now, count) {
  state.refresh = [];
  state.refreshNext = 0;
  for (let done = 0; done < count; ) {
    const rows = [];
    for (let i = 0; i < 5000 && done < count; i++, done++) {
      const handle = rnd.handle();
      state.refresh.push(handle);
      rows.push(refreshRow(handle, now));
    }
    await db.insert(rows);
  }
}

/** Rows written per request: a fixed number of requests per scenario with counting triggers on. */
async function countWrites(scenarios, target, configFile, opts) {
  const { db, state } = target;
  const out = {};
  const since = nowSeconds();
  await preIssueRefreshTokens(db, state, since, COUNTED.default + 1000);
  await db.installCounters();
  const { child, base } = await startSigil(configFile, target.storage, target.port, target.metricsPort);
  try {
    for (const name of scenarios) {
      const amount = COUNTED[name] ?? COUNTED.default;
      const req = scenarioRequest(name, base, state);
      await db.resetCounters();
      const r = await cannon(req, { ...opts, amount });
      const counters = await db.readCounters();
      const rows = counters.reduce((sum, c) => sum + c.n, 0);
      const ok = r.total - r.non2xx - r.mismatches;
      out[name] = {
        requests: r.total,
        ok,
        rows,
        perRequest: rows / ok,
        detail: counters,
        ...(r.non2xx || r.mismatches ? { error: `${r.non2xx} non-2xx, ${r.mismatches} unexpected bodies` } : {}),
      };
    }
  } finally {
    await stopSigil(child);
    await db.removeCounters();
    await db.deleteCreatedSince(since);
  }
  console.log(
    `   rows written per request (${COUNTED.default} requests each, ${COUNTED.password} logins): ` +
      Object.entries(out)
        .map(
          ([k, v]) =>
            `${k} ${fmt(v.perRequest, 2)} (${v.detail.map((d) => `${d.tbl} ${d.op} ${d.n}`).join(', ') || 'none'})`,
        )
        .join('; '),
  );
  return out;
}

const LABELS = {
  token: 'client_credentials, reference token',
  refresh: 'refresh_token (one-time, rotating)',
  introspect: 'introspection of a reference token',
  'cc-jwt': 'client_credentials, JWT',
  password: 'password grant (argon2id)',
};

function report(results, sizes) {
  const k = (n) => (n >= 1e6 ? `${n / 1e6}M` : n >= 1e3 ? `${n / 1e3}k` : String(n));
  const small = k(sizes[0]);
  const large = k(sizes.at(-1));
  const rounds = results.options.rounds;
  const pairs = [];
  for (const [kind, s] of Object.entries(results.stores))
    for (const name of SCALE_SCENARIOS)
      pairs.push({ label: `${kind} ${name}`, a: s.sizes[0].median[name] ?? {}, b: s.sizes.at(-1).median[name] ?? {} });
  const ratio = ({ a, b }, p) => (a[p] && b[p] ? `${(b[p] / a[p]).toFixed(2)}x` : '-');

  printTable(
    `Latency (ms) of requests one at a time, medians of ${rounds} rounds, at ${small} and ${large} grants (ratio = ${large} / ${small}; target: within 1.5x)`,
    ['store scenario', `${small} p50`, `${small} p99`, `${large} p50`, `${large} p99`, 'p50 ratio', 'p99 ratio'],
    pairs.map((x) => [
      x.label,
      fmt(x.a.seqP50, 2),
      fmt(x.a.seqP99, 2),
      fmt(x.b.seqP50, 2),
      fmt(x.b.seqP99, 2),
      ratio(x, 'seqP50'),
      ratio(x, 'seqP99'),
    ]),
  );
  printTable(
    `Under load (autocannon, ${results.options.connections} connections, ${results.options.duration} s): latency (ms, 1 ms steps) and throughput, medians of ${rounds} rounds`,
    [
      'store scenario',
      `${small} p50`,
      'p99',
      'req/s',
      `${large} p50`,
      'p99',
      'req/s',
      'p50 ratio',
      'p99 ratio',
      'req/s ratio',
      'req/CPU-s ratio',
    ],
    pairs.map((x) => [
      x.label,
      fmt(x.a.p50),
      fmt(x.a.p99),
      fmt(x.a.rps),
      fmt(x.b.p50),
      fmt(x.b.p99),
      fmt(x.b.rps),
      ratio(x, 'p50'),
      ratio(x, 'p99'),
      ratio(x, 'rps'),
      ratio(x, 'perCore'),
    ]),
  );

  const sizing = [];
  for (const [kind, s] of Object.entries(results.stores)) {
    const m = s.sizes.at(-1).median;
    for (const name of ['cc-jwt', 'token', 'refresh', 'password', 'introspect']) {
      const r = m[name];
      const w = s.writes?.[name];
      if (!r) continue;
      sizing.push([
        `${kind}: ${LABELS[name]}`,
        fmt(r.rps),
        fmt(r.cpuCores, 2),
        fmt(r.perCore),
        fmt(r.seqP50, 2),
        fmt(r.seqP99, 2),
        w ? fmt(w.perRequest, 2) : '-',
      ]);
    }
  }
  printTable(
    `Sizing at ${large} grants: one Sigil process (one Node.js thread; argon2 also uses libuv worker threads); req/s and CPU under load, latency one at a time`,
    ['store: scenario', 'req/s', 'Sigil CPU (cores)', 'req per CPU-second', 'p50 ms', 'p99 ms', 'DB rows written/req'],
    sizing,
  );
  const starts = Object.entries(results.stores).map(
    ([kind, st]) => `${kind} ${st.sizes.map((z) => `${fmt(z.median.startMs)} ms at ${k(z.size)}`).join(', ')}`,
  );
  console.log(
    `\nCold start (spawn of \`sigil start\` to "listening on", median of ${rounds} rounds; target under 500 ms at 1M grants): ${starts.join('; ')}`,
  );
  console.log(
    `\nload average: ${results.loadavgStart.map((l) => l.toFixed(2)).join(' ')} at start, ${results.loadavgEnd.map((l) => l.toFixed(2)).join(' ')} at end`,
  );
  for (const [kind, s] of Object.entries(results.stores))
    for (const z of s.sizes)
      z.rounds.forEach((round, i) => {
        for (const [name, r] of Object.entries(round))
          if (r.error)
            console.log(
              `${kind} ${k(z.size)} round ${i + 1} ${name} ERROR: ${r.error}${r.firstBadBody ? `\n   first bad body: ${r.firstBadBody}` : ''}`,
            );
      });
  for (const [kind, s] of Object.entries(results.stores))
    for (const [name, w] of Object.entries(s.writes ?? {}))
      if (w.error) console.log(`${kind} counted ${name} ERROR: ${w.error}`);
}

process.on('SIGINT', () => {
  for (const c of children) c.kill('SIGKILL');
  process.exit(130);
});

main().then(
  (code) => {
    process.exitCode = code;
  },
  (err) => {
    console.error(`\nbench failed: ${err.stack ?? err.message}`);
    for (const c of children) c.kill('SIGKILL');
    process.exitCode = 1;
  },
);
