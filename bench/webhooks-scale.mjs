// Webhooks at scale: how many events per second go through the outbox, and what does writing them
// cost a change?
//
//   npm run build && node bench/webhooks-scale.mjs           (part of `npm run bench:scale`)
//   node bench/webhooks-scale.mjs --stores sqlite --events 2000
//   env: BENCH_CONNECTIONS (concurrent requests, default 8),
//        SIGIL_BENCH_POSTGRES (default postgres://postgres@127.0.0.1:5432/test; each Sigil gets a
//        schema of its own, created by `sigil migrate` and dropped at the end)
//
// The event is organization.member_added / member_removed: PUT and DELETE
// /admin/v1/organizations/bench/members/{subject} (client_credentials, sigil:admin), the cheapest
// change a user of the API causes (no password hashing, no registry reload). Its subjects are
// USERS config-file users (no password, so nothing is hashed at start), each PUT then DELETEd in
// turn, so that deliveries spread over USERS order keys (a subject's events go out one at a time).
//
// For each store it starts a receiver (node:http on 127.0.0.1, 204 to every POST, one signature in
// VERIFY_EVERY checked with the `standardwebhooks` package) and a real `sigil start` whose config
// file has a webhook for ["*"] to the receiver. After a warm-up it measures:
//   changes   --events changes of each scenario, BENCH_CONNECTIONS at once, in alternating chunks
//             (A B C C B A) so that the machine's load weighs on all alike:
//               without     the webhook disabled (PATCH enabled: false): no outbox row
//               outbox      enabled, the receiver holding its answers: the deliverer waits, and
//                           the change pays the outbox write alone
//               delivering  enabled and delivered meanwhile, as in production
//             Each turn's events are delivered before the next turn (untimed). The lag of the
//             `delivering` events: receive time minus the answer to the change that caused it
//             (and minus the event's `timestamp`, which has whole seconds: up to 1 s more).
//   drain     --events more changes while the receiver holds its answers (a backlog in the
//             outbox), then it answers: events per second received until the last.
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Webhook } from 'standardwebhooks';
import { Pool } from 'undici';
import { cleanUp, freePort, HOST, percentile, runCli, startSigil, stopSigil } from './scale-kit.mjs';

const SECRET = 'bench-webhook-secret';
const WEBHOOK_SECRET = `whsec_${randomBytes(32).toString('base64')}`;
const USERS = 200;
const CHUNK = 250;
const VERIFY_EVERY = 50;
const ORGANIZATION = 'bench';
const WEBHOOK = 'bench';
/** Warm-up changes on each node: every subject added, then removed. */
const WARM = 2 * USERS;

const subject = (i) => `u-${i % USERS}`;

function config(receiverUrl) {
  return {
    logLevel: 'warn',
    signingAlgorithms: ['ES256'],
    clients: [
      {
        clientId: 'bench-admin',
        clientSecrets: [SECRET],
        allowedGrantTypes: ['client_credentials'],
        allowedScopes: ['sigil:admin'],
      },
    ],
    users: Array.from({ length: USERS }, (_, i) => ({ subjectId: `u-${i}`, username: `user${i}` })),
    organizations: [{ name: ORGANIZATION, displayName: 'Bench' }],
    // The drain holds answers while the backlog is written: longer than the default 10 s timeout.
    webhookDelivery: { timeoutSeconds: 60 },
    ...(receiverUrl ? { webhooks: [{ name: WEBHOOK, url: receiverUrl, events: ['*'], secret: WEBHOOK_SECRET }] } : {}),
  };
}

/**
 * The receiver: counts events, records each one's receive time by subject (and the lag behind its
 * timestamp), verifies one signature in VERIFY_EVERY. While `held`, answers wait for `release()`.
 */
function startReceiver() {
  const verifier = new Webhook(WEBHOOK_SECRET);
  const state = { count: 0, verified: 0, bad: 0, times: [], held: false, waiting: [], lastAt: 0 };
  const server = createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const at = Date.now();
      const body = Buffer.concat(chunks).toString();
      const n = state.count++;
      try {
        const event = n % VERIFY_EVERY === 0 ? verifier.verify(body, req.headers) : JSON.parse(body);
        if (n % VERIFY_EVERY === 0) state.verified++;
        state.times.push({ subject: event.data.subject, at, behindTimestamp: at - Date.parse(event.timestamp) });
      } catch {
        state.bad++;
      }
      state.lastAt = at;
      if (state.held) state.waiting.push(res);
      else res.writeHead(204).end();
    });
  });
  state.release = () => {
    state.held = false;
    for (const res of state.waiting.splice(0)) res.writeHead(204).end();
  };
  return new Promise((resolve) =>
    server.listen(0, HOST, () => resolve({ server, state, url: `http://${HOST}:${server.address().port}/events` })),
  );
}

async function adminToken(http) {
  const res = await http.request({
    method: 'POST',
    path: '/connect/token',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      authorization: `Basic ${Buffer.from(`bench-admin:${SECRET}`).toString('base64')}`,
    },
    body: 'grant_type=client_credentials&scope=sigil%3Aadmin',
  });
  const body = await res.body.text();
  if (res.statusCode !== 200) throw new Error(`token answered ${res.statusCode}: ${body}`);
  return JSON.parse(body).access_token;
}

/** One admin API request on `node`; its status and parsed body, the ETag. Fails unless `expected`. */
async function api(node, method, path, expected, body, headers = {}) {
  const res = await node.http.request({
    method,
    path: `/admin/v1${path}`,
    headers: { authorization: `Bearer ${node.token}`, ...headers },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.body.text();
  if (res.statusCode !== expected) throw new Error(`${method} ${path} answered ${res.statusCode}: ${text}`);
  return { body: text ? JSON.parse(text) : undefined, etag: res.headers.etag };
}

/**
 * Enables or disables the config-file webhook (in force on this node once answered). Disabling
 * gives up its pending deliveries, so it waits until none is left.
 */
async function setWebhook(node, enabled) {
  for (;;) {
    const { body } = await api(node, 'GET', `/webhooks/${WEBHOOK}/deliveries?status=pending&limit=1`, 200);
    if (body.deliveries.length === 0) break;
    await new Promise((r) => setTimeout(r, 20));
  }
  const { etag } = await api(node, 'GET', `/webhooks/${WEBHOOK}`, 200);
  const headers = { 'content-type': 'application/merge-patch+json', 'if-match': etag };
  await api(node, 'PATCH', `/webhooks/${WEBHOOK}`, 200, { enabled }, headers);
}

/** Change `i`: PUT the member in even rounds over the users, DELETE in odd ones; its answer time. */
async function change(node, i) {
  const put = Math.floor(i / USERS) % 2 === 0;
  const res = await node.http.request({
    method: put ? 'PUT' : 'DELETE',
    path: `/admin/v1/organizations/${ORGANIZATION}/members/${subject(i)}`,
    headers: put
      ? { authorization: `Bearer ${node.token}`, 'content-type': 'application/json' }
      : { authorization: `Bearer ${node.token}` },
    body: put ? '{"roles":[]}' : undefined,
  });
  const body = await res.body.text();
  if (res.statusCode !== (put ? 201 : 204)) throw new Error(`change ${i} answered ${res.statusCode}: ${body}`);
  return Date.now();
}

/**
 * The node's next `count` changes, `connections` at once; their answers' times pushed to
 * `answered` by subject, in order (`measured`: whether their lags count), unless the webhook is
 * disabled (`delivered` false: no event).
 */
async function changes(node, count, connections, answered, measured, delivered = true) {
  const to = node.next + count;
  await Promise.all(
    Array.from({ length: connections }, async () => {
      while (node.next < to) {
        const i = node.next++;
        const at = await change(node, i);
        if (!delivered) continue;
        const list = answered[subject(i)] ?? [];
        list.push({ at, measured });
        answered[subject(i)] = list;
        node.events++;
      }
    }),
  );
}

/** Resolves once the receiver has `count` events, or rejects after `seconds`. */
async function received(state, count, seconds) {
  const until = Date.now() + seconds * 1000;
  while (state.count < count) {
    if (Date.now() > until) throw new Error(`only ${state.count} of ${count} events received`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

async function startNode(kind, opts, dir, receiverUrl) {
  const configFile = join(dir, `${kind}.json`);
  writeFileSync(configFile, JSON.stringify(config(receiverUrl)));
  let storage;
  if (kind === 'sqlite') storage = `sqlite:${join(dir, `${kind}.db`)}`;
  else {
    const schema = `sigil_bench_wh_${process.pid}_${randomBytes(3).toString('hex')}`;
    opts.schemas.push(schema);
    storage = `${opts.pgUrl}?schema=${schema}&poolSize=10`;
  }
  runCli(['migrate', '--config', configFile, '--storage', storage]);
  const { child, base } = await startSigil(configFile, storage, await freePort(), await freePort());
  const http = new Pool(base, { connections: opts.connections, pipelining: 1 });
  return { child, http, token: await adminToken(http), next: 0, events: 0 };
}

/**
 * --events changes of each scenario on one node in alternating chunks (A B C C B A ...); the
 * seconds of each. `without` runs with the webhook disabled (no outbox row), `outbox` while the
 * receiver holds its answers, so that the deliverer waits and only the outbox write is paid, and
 * `delivering` as in production. After each turn the events are delivered (untimed), so that no
 * delivery runs in another scenario's turn.
 */
async function alternate(node, state, opts, answered) {
  const seconds = { without: 0, outbox: 0, delivering: 0 };
  const names = Object.keys(seconds);
  let enabled = true;
  for (let done = 0, turn = 0; done < opts.events; done += CHUNK, turn++)
    for (const name of turn % 2 === 0 ? names : [...names].reverse()) {
      if (enabled !== (name !== 'without')) {
        enabled = name !== 'without';
        await setWebhook(node, enabled);
      }
      state.held = name === 'outbox';
      const started = performance.now();
      await changes(
        node,
        Math.min(CHUNK, opts.events - done),
        opts.connections,
        answered,
        name === 'delivering',
        enabled,
      );
      seconds[name] += (performance.now() - started) / 1000;
      state.release();
      await received(state, node.events, 120);
    }
  if (!enabled) await setWebhook(node, true);
  return seconds;
}

async function benchStore(kind, opts, dir) {
  const receiver = await startReceiver();
  const node = await startNode(kind, opts, dir, receiver.url);
  try {
    // Warm-up: every subject added and removed once, with the webhook, and without it.
    const answered = {};
    await changes(node, WARM, opts.connections, answered, false);
    await received(receiver.state, node.events, 120);
    await setWebhook(node, false);
    await changes(node, WARM, opts.connections, answered, false, false);
    await setWebhook(node, true);
    const seconds = await alternate(node, receiver.state, opts, answered);
    const lags = lagsOf(receiver.state.times, answered);
    // Drain: a backlog of --events written while the receiver holds its answers, then released.
    receiver.state.held = true;
    const before = receiver.state.count;
    await changes(node, opts.events, opts.connections, answered, false);
    const releasedAt = Date.now();
    receiver.state.release();
    await received(receiver.state, node.events, 300);
    const drainSeconds = (receiver.state.lastAt - releasedAt) / 1000;
    return {
      perSecond: Object.fromEntries(Object.entries(seconds).map(([name, s]) => [name, opts.events / s])),
      lags,
      drained: receiver.state.count - before,
      drainPerSecond: (receiver.state.count - before) / drainSeconds,
      verified: receiver.state.verified,
      bad: receiver.state.bad,
    };
  } finally {
    await node.http.close();
    await stopSigil(node.child);
    receiver.server.close();
  }
}

/**
 * The lags of the measured events, ms: each one's receive time minus the answer to its change
 * (matched by subject and order), and minus its timestamp.
 */
function lagsOf(times, answered) {
  const seen = {};
  const afterAnswer = [];
  const afterTimestamp = [];
  for (const t of times) {
    const k = (seen[t.subject] ?? -1) + 1;
    seen[t.subject] = k;
    const change = answered[t.subject]?.[k];
    if (!change?.measured) continue;
    afterAnswer.push(t.at - change.at);
    afterTimestamp.push(t.behindTimestamp);
  }
  const stats = (list) => {
    const sorted = list.sort((x, y) => x - y);
    return { p50: percentile(sorted, 50), p99: percentile(sorted, 99) };
  };
  return { afterAnswer: stats(afterAnswer), afterTimestamp: stats(afterTimestamp) };
}

function report(kind, r) {
  const base = r.perSecond.without;
  console.log(`\n${kind}`);
  console.log('scenario      changes/s   vs without');
  for (const [name, perSecond] of Object.entries(r.perSecond))
    console.log(
      `${name.padEnd(12)} ${Math.round(perSecond).toString().padStart(10)} ${(perSecond / base).toFixed(2).padStart(11)}x`,
    );
  const ms = (n) => `${Math.round(n)} ms`;
  console.log(
    `delivery lag behind the change's answer: p50 ${ms(r.lags.afterAnswer.p50)}, p99 ${ms(r.lags.afterAnswer.p99)}` +
      ` (behind the event's whole-second timestamp: p50 ${ms(r.lags.afterTimestamp.p50)}, p99 ${ms(r.lags.afterTimestamp.p99)})`,
  );
  console.log(`backlog drained: ${r.drained} events at ${Math.round(r.drainPerSecond)} events/s`);
  console.log(`signatures verified: ${r.verified}, unreadable or bad events: ${r.bad}`);
}

async function main() {
  const { values } = parseArgs({
    options: { stores: { type: 'string', default: 'sqlite,postgres' }, events: { type: 'string', default: '20000' } },
  });
  const opts = {
    events: Number(values.events),
    connections: Number(process.env.BENCH_CONNECTIONS ?? 8),
    pgUrl: process.env.SIGIL_BENCH_POSTGRES ?? 'postgres://postgres@127.0.0.1:5432/test',
    schemas: [],
  };
  console.log(
    `webhooks-scale: ${opts.events} changes per scenario, ${opts.connections} at once, node ${process.version}, ${cpus().length} CPUs, load ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}`,
  );
  const dir = mkdtempSync(join(tmpdir(), 'sigil-bench-wh-'));
  try {
    for (const kind of values.stores.split(',')) report(kind, await benchStore(kind, opts, dir));
  } finally {
    await cleanUp(opts.pgUrl, opts.schemas);
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
