// SCIM at scale: with 1,000,000 stored users, how fast do the indexed SCIM
// filters and a page of users answer, over HTTP, on SQLite and on PostgreSQL?
//
//   npm run build && node bench/scim-scale.mjs      (part of `npm run bench:scale`)
//   node bench/scim-scale.mjs --stores sqlite --users 100000
//   env: BENCH_SCIM_REQUESTS (measured requests per scenario, default 300; 30 more warm up first),
//        SIGIL_BENCH_POSTGRES (default postgres://postgres@127.0.0.1:5432/test; the database is a
//        schema of its own, created by `sigil migrate` and dropped at the end)
//
// For each store it creates the tables with `sigil migrate`, bulk-inserts the users (each with a
// userName, an externalId and one email row, shaped as the SCIM service writes them) in large
// transactions, starts a real `sigil start` process, takes a client_credentials token with the
// scope `scim`, and sends requests one at a time (undici, keep-alive):
//   userName     GET /scim/v2/Users?filter=userName eq "<random existing>"      target p99 < 20 ms
//   emails       GET /scim/v2/Users?filter=emails.value eq "<random existing>"  target p99 < 20 ms
//   externalId   GET /scim/v2/Users?filter=externalId eq "<random existing>"    target p99 < 20 ms
//   page         GET /scim/v2/Users?count=100&startIndex=<1..901>               target p99 < 50 ms
//   sw           GET /scim/v2/Users?filter=userName sw "<random 6-char prefix>" (for the docs)
//   co           GET /scim/v2/Users?filter=userName co "<random 5 chars>"       (a scan: the bound)
//   deep         GET /scim/v2/Users?count=100&startIndex=<near the last user>   (what deep paging costs)
// and prints p50 / p99 in milliseconds per scenario. A scan is bounded (docs/managing.md, SCIM): on SQLite above
// 250,000 users `co` is refused at once with 400 tooMany, which the co row counts ("refused").
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import Database from 'better-sqlite3';
import pg from 'pg';
import { Client } from 'undici';
import { CLI, freePort, HOST, percentile, runCli, startSigil, stopSigil } from './scale-kit.mjs';

const SECRET = 'bench-scim-secret';
const TARGETS = { userName: 20, emails: 20, externalId: 20, page: 50 };

const userName = (i) => `user${String(i).padStart(7, '0')}`;
const email = (i) => `${userName(i)}@example.org`;
const externalId = (i) => `ext-${i.toString(36)}`;
const subject = (i) => `sub-${i}`;

function config() {
  return {
    logLevel: 'warn',
    metrics: false,
    signingAlgorithms: ['ES256'],
    clients: [
      {
        clientId: 'bench-scim',
        clientSecrets: [SECRET],
        allowedGrantTypes: ['client_credentials'],
        allowedScopes: ['scim'],
        accessTokenLifetime: 3600,
      },
    ],
  };
}

/** The user and email rows of users [from, to), as the SCIM service writes them. */
function rows(from, to, now) {
  const users = [];
  const emails = [];
  for (let i = from; i < to; i++) {
    const name = userName(i);
    users.push([
      subject(i),
      name,
      name,
      '',
      null,
      JSON.stringify({ email: email(i), email_verified: false, name: `User ${i}` }),
      1,
      now,
      externalId(i),
      1,
      now,
    ]);
    emails.push([subject(i), email(i), email(i), 'work', 1, 0]);
  }
  return { users, emails };
}

const USER_COLUMNS =
  'subject_id, username, username_normalized, tenant, password_hash, claims, is_active, created_at, external_id, version, updated_at';
const EMAIL_COLUMNS = 'subject_id, value, value_normalized, type, is_primary, verified';

async function fillSqlite(file, count) {
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  const insertUser = db.prepare(`insert into users (${USER_COLUMNS}) values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`);
  const insertEmail = db.prepare(`insert into user_emails (${EMAIL_COLUMNS}) values (?, ?, ?, ?, ?, ?)`);
  const batch = db.transaction((r) => {
    for (const u of r.users) insertUser.run(u);
    for (const e of r.emails) insertEmail.run(e);
  });
  const now = Math.floor(Date.now() / 1000);
  for (let from = 0; from < count; from += 50_000) batch(rows(from, Math.min(count, from + 50_000), now));
  db.exec('analyze');
  db.close();
}

async function fillPostgres(url, schema, count) {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  await client.query(`set search_path to ${schema}`);
  const now = Math.floor(Date.now() / 1000);
  for (let from = 0; from < count; from += 20_000) {
    const { users, emails } = rows(from, Math.min(count, from + 20_000), now);
    const col = (list, i) => list.map((r) => r[i]);
    await client.query('begin');
    // One statement per batch: arrays of columns unnested into rows (bound parameters only).
    await client.query(
      `insert into users (${USER_COLUMNS}) select * from unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::int[], $8::bigint[], $9::text[], $10::bigint[], $11::bigint[])`,
      Array.from({ length: 11 }, (_, i) => col(users, i)),
    );
    await client.query(
      `insert into user_emails (${EMAIL_COLUMNS}) select * from unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::int[], $6::int[])`,
      Array.from({ length: 6 }, (_, i) => col(emails, i)),
    );
    await client.query('commit');
  }
  // As a directory of a million users is in production: vacuumed (the visibility map lets index-only
  // scans skip the table), analysed and written out. Otherwise autovacuum starts on the fresh
  // tables during the first scenarios, and the checkpoint writes the load's pages, competing with
  // the measured requests for the CPUs and the disk. (CHECKPOINT needs a superuser or, from
  // PostgreSQL 15, pg_checkpoint; without either the bench goes on.)
  await client.query('vacuum analyze users');
  await client.query('vacuum analyze user_emails');
  await client
    .query('checkpoint')
    .catch((err) => console.log(`postgres: no CHECKPOINT after the load (${err.message})`));
  await client.end();
}

/** `bounded`: a 400 tooMany (the bound of a scan) is an answer too, counted as refused. */
async function measure(http, token, makePath, requests, bounded = false) {
  const times = [];
  let refused = 0;
  for (let i = 0; i < requests + 30; i++) {
    const path = makePath();
    const t0 = performance.now();
    const res = await http.request({ method: 'GET', path, headers: { authorization: `Bearer ${token}` } });
    const body = await res.body.json();
    const ms = performance.now() - t0;
    const tooMany = bounded && res.statusCode === 400 && body.scimType === 'tooMany';
    if (res.statusCode !== 200 && !tooMany) throw new Error(`${path}: ${res.statusCode} ${JSON.stringify(body)}`);
    if (i >= 30) {
      times.push(ms);
      if (tooMany) refused++;
    }
  }
  times.sort((a, b) => a - b);
  return { p50: percentile(times, 50), p99: percentile(times, 99), ...(bounded ? { refused, of: requests } : {}) };
}

async function benchStore(kind, count, work, configFile, pgUrl, requests) {
  let storage;
  let schema;
  const t0 = Date.now();
  if (kind === 'sqlite') {
    const file = join(work, 'scim.db');
    storage = `sqlite:${file}`;
    runCli(['migrate', '--config', configFile, '--storage', storage]);
    await fillSqlite(file, count);
  } else {
    schema = `sigil_scim_bench_${process.pid}_${randomBytes(3).toString('hex')}`;
    storage = `${pgUrl}?schema=${schema}&poolSize=10`;
    runCli(['migrate', '--config', configFile, '--storage', storage]);
    await fillPostgres(pgUrl, schema, count);
  }
  const fillSeconds = (Date.now() - t0) / 1000;
  console.log(
    `${kind}: ${count.toLocaleString('en')} users with one email each inserted in ${fillSeconds.toFixed(1)} s`,
  );
  const port = await freePort();
  const { child } = await startSigil(configFile, storage, port);
  const http = new Client(`http://${HOST}:${port}`, { pipelining: 1 });
  const out = { fillSeconds, scenarios: {} };
  try {
    const tokenRes = await http.request({
      method: 'POST',
      path: '/connect/token',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        authorization: `Basic ${Buffer.from(`bench-scim:${SECRET}`).toString('base64')}`,
      },
      body: 'grant_type=client_credentials&scope=scim',
    });
    const { access_token: token } = await tokenRes.body.json();
    const any = () => Math.floor(Math.random() * count);
    const q = (filter) => `/scim/v2/Users?filter=${encodeURIComponent(filter)}`;
    const scenarios = {
      userName: () => q(`userName eq "${userName(any())}"`),
      emails: () => q(`emails.value eq "${email(any())}"`),
      externalId: () => q(`externalId eq "${externalId(any())}"`),
      page: () => `/scim/v2/Users?count=100&startIndex=${1 + 100 * Math.floor(Math.random() * 10)}`,
      sw: () => q(`userName sw "${userName(any()).slice(0, 10)}"`),
    };
    for (const [name, path] of Object.entries(scenarios))
      out.scenarios[name] = await measure(http, token, path, requests);
    // A substring filter scans: a few requests show its bound.
    out.scenarios.co = await measure(
      http,
      token,
      () => q(`userName co "${String(any()).padStart(7, '0').slice(2)}"`),
      10,
      true,
    );
    // A page near the end: OFFSET walks the index up to it (what deep paging costs).
    out.scenarios.deep = await measure(
      http,
      token,
      () => `/scim/v2/Users?count=100&startIndex=${count - 199 - Math.floor(Math.random() * 100)}`,
      10,
      true,
    );
  } finally {
    await http.close();
    await stopSigil(child);
    if (schema) {
      const c = new pg.Client({ connectionString: pgUrl });
      await c.connect();
      await c.query(`drop schema if exists ${schema} cascade`);
      await c.end();
    }
  }
  return out;
}

async function main() {
  const { values } = parseArgs({
    options: { stores: { type: 'string', default: 'sqlite,postgres' }, users: { type: 'string', default: '1000000' } },
  });
  const stores = values.stores.split(',');
  const count = Number(values.users);
  const requests = Number(process.env.BENCH_SCIM_REQUESTS ?? 300);
  if (!existsSync(CLI)) throw new Error('dist/cli/main.js not found: run `npm run build` first');
  const pgUrl = process.env.SIGIL_BENCH_POSTGRES ?? 'postgres://postgres@127.0.0.1:5432/test';
  console.log(
    `scim-scale: node ${process.version}, ${cpus().length} CPUs (${cpus()[0]?.model}); ${requests} requests one at a time per scenario after 30 warm-up`,
  );
  const work = mkdtempSync(join(tmpdir(), 'sigil-scim-scale-'));
  const configFile = join(work, 'sigil.json');
  writeFileSync(configFile, JSON.stringify(config()));
  let failed = false;
  try {
    for (const kind of stores) {
      const result = await benchStore(kind, count, work, configFile, pgUrl, requests);
      console.log(`\n  ${kind}, ${count.toLocaleString('en')} users     p50 ms    p99 ms   target p99`);
      for (const [name, { p50, p99, refused, of }] of Object.entries(result.scenarios)) {
        const target = TARGETS[name];
        const verdict =
          target === undefined
            ? refused
              ? `${refused} of ${of} refused (tooMany)`
              : ''
            : p99 < target
              ? `< ${target} ok`
              : `< ${target} MISSED`;
        if (target !== undefined && p99 >= target) failed = true;
        console.log(`  ${name.padEnd(24)} ${p50.toFixed(2).padStart(8)} ${p99.toFixed(2).padStart(9)}   ${verdict}`);
      }
    }
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
  return failed ? 1 : 0;
}

main().then(
  (code) => process.exit(code),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
