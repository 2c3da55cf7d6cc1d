// The preToken hook's cost on token issuance: client_credentials (JWT ES256, scope api1) on two
// real `sigil start` processes (SQLite), one with `hooks.preToken` to a loopback receiver in this
// process and one without, in one run.
//
//   npm run build && node bench/hooks.mjs
//   env: BENCH_DURATION (seconds measured per server, default 10), BENCH_ROUNDS (default 5),
//        BENCH_CONNECTIONS (default 16)
//
// The receiver (node:http on 127.0.0.1, in a worker thread) verifies every call's Standard Webhooks signature with the
// `standardwebhooks` package, as a receiver should, and answers one added claim, signed. Rounds
// alternate (with, without, without, with, ...) so that a slow spell of the shared machine weighs
// on both. Reported apart: the hook's own time, as Sigil measured each call
// (`sigil_hook_duration_seconds` on its management listener: signing, a new connection, the
// request, reading and checking the answer) and as the receiver spent on it (verifying, signing
// the answer), means over the measured rounds.
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import autocannon from 'autocannon';
import { Webhook } from 'standardwebhooks';
import { cleanUp, freePort, HOST, startSigil, stopSigil } from './scale-kit.mjs';

const DURATION = Number(process.env.BENCH_DURATION ?? 10);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 16);
const SECRET = `whsec_${randomBytes(32).toString('base64')}`;
const BASIC = `Basic ${Buffer.from('bench-jwt:bench-secret').toString('base64')}`;

function config(hookUrl) {
  return {
    logLevel: 'warn',
    signingAlgorithms: ['ES256'],
    apiScopes: [{ name: 'api1' }],
    apiResources: [{ name: 'api1', scopes: ['api1'] }],
    clients: [
      {
        clientId: 'bench-jwt',
        clientSecrets: ['bench-secret'],
        allowedGrantTypes: ['client_credentials'],
        allowedScopes: ['api1'],
        accessTokenLifetime: 3600,
      },
    ],
    ...(hookUrl ? { hooks: { preToken: { url: hookUrl, secret: SECRET, onFailure: 'deny' } } } : {}),
  };
}

/**
 * The receiver, in a worker thread of its own (autocannon's load on this thread must not delay its
 * answers): verifies each call, answers `{"accessToken":{"claims":{"tier":"gold"}}}` signed, and
 * times its own work. `stats()` asks the worker for its counts.
 */
function receiverThread() {
  const hook = new Webhook(workerData.secret);
  const state = { calls: 0, bad: 0, busyNs: 0n };
  const server = createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const started = process.hrtime.bigint();
      state.calls++;
      try {
        hook.verify(Buffer.concat(chunks).toString(), req.headers);
      } catch {
        state.bad++;
      }
      const answer = '{"accessToken":{"claims":{"tier":"gold"}}}';
      const id = req.headers['webhook-id'];
      const at = new Date();
      res.writeHead(200, {
        'content-type': 'application/json',
        'webhook-id': id,
        'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
        'webhook-signature': hook.sign(id, at, answer),
      });
      res.end(answer);
      state.busyNs += process.hrtime.bigint() - started;
    });
  });
  server.listen(0, HOST, () => parentPort.postMessage({ port: server.address().port }));
  parentPort.on('message', () => parentPort.postMessage({ ...state, busyNs: Number(state.busyNs) }));
}

async function startReceiver() {
  const worker = new Worker(new URL(import.meta.url), { workerData: { secret: SECRET } });
  const next = () => new Promise((resolve) => worker.once('message', resolve));
  const { port } = await next();
  return {
    url: `http://${HOST}:${port}/pre-token`,
    stats: () => {
      const answer = next();
      worker.postMessage('stats');
      return answer;
    },
    close: () => worker.terminate(),
  };
}

/** The preToken calls' count and summed seconds, from the management listener. */
async function hookTime(metricsPort) {
  const text = await (await fetch(`http://${HOST}:${metricsPort}/metrics`)).text();
  const read = (name) => Number(new RegExp(`^${name}\\{hook="preToken"\\} (\\S+)$`, 'm').exec(text)?.[1] ?? 0);
  return { count: read('sigil_hook_duration_seconds_count'), sum: read('sigil_hook_duration_seconds_sum') };
}

async function start(dir, name, hookUrl) {
  const file = join(dir, `${name}.json`);
  writeFileSync(file, JSON.stringify(config(hookUrl)));
  const [port, metricsPort] = [await freePort(), await freePort()];
  const node = await startSigil(file, `sqlite:${join(dir, `${name}.db`)}`, port, metricsPort);
  return { ...node, name, metricsPort, rounds: [] };
}

function load(node, duration) {
  return autocannon({
    url: `${node.base}/connect/token`,
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: BASIC },
    body: 'grant_type=client_credentials&scope=api1',
    connections: CONNECTIONS,
    duration,
  });
}

/** A probe: 200 with a JWT that carries the hook's claim exactly when `hooked`. */
async function probe(node, hooked) {
  const res = await fetch(`${node.base}/connect/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: BASIC },
    body: 'grant_type=client_credentials&scope=api1',
  });
  const body = await res.json();
  const claims = JSON.parse(Buffer.from(String(body.access_token).split('.')[1], 'base64url').toString());
  if (res.status !== 200 || (claims.tier === 'gold') !== hooked)
    throw new Error(`${node.name}: unexpected answer ${res.status} ${JSON.stringify(body)}`);
}

async function main() {
  const dir = mkdtempSync(join(tmpdir(), 'sigil-bench-hooks-'));
  const receiver = await startReceiver();
  try {
    const without = await start(dir, 'without', undefined);
    const withHook = await start(dir, 'with', receiver.url);
    await probe(without, false);
    await probe(withHook, true);
    for (const node of [withHook, without]) await load(node, 2); // warm-up, discarded
    const before = await hookTime(withHook.metricsPort);
    const receiverBefore = await receiver.stats();
    for (let round = 0; round < ROUNDS; round++) {
      const order = round % 2 === 0 ? [withHook, without] : [without, withHook];
      for (const node of order) node.rounds.push(await load(node, DURATION / ROUNDS));
    }
    const after = await hookTime(withHook.metricsPort);
    const row = (node) => {
      const total = node.rounds.reduce((n, r) => n + r.requests.total, 0);
      const errors = node.rounds.reduce((n, r) => n + r.errors + r.non2xx + r.timeouts, 0);
      const p50 = node.rounds.reduce((s, r) => s + r.latency.p50, 0) / node.rounds.length;
      const p99 = Math.max(...node.rounds.map((r) => r.latency.p99));
      return { rps: total / DURATION, p50, p99, errors };
    };
    const a = row(withHook);
    const b = row(without);
    const calls = after.count - before.count;
    const receiverAfter = await receiver.stats();
    const receiverCalls = receiverAfter.calls - receiverBefore.calls;
    const receiverNs = receiverAfter.busyNs - receiverBefore.busyNs;
    console.log(
      `node ${process.version}, ${cpus().length} CPUs, load ${loadavg()[0].toFixed(1)}; ${ROUNDS} rounds of ${DURATION / ROUNDS} s per server, ${CONNECTIONS} connections`,
    );
    console.log('| client_credentials (JWT ES256) | req/s | p50 ms | p99 ms | errors |');
    console.log('|---|---|---|---|---|');
    console.log(`| without hook | ${b.rps.toFixed(0)} | ${b.p50.toFixed(1)} | ${b.p99} | ${b.errors} |`);
    console.log(`| with preToken | ${a.rps.toFixed(0)} | ${a.p50.toFixed(1)} | ${a.p99} | ${a.errors} |`);
    console.log(`with ÷ without: ${(a.rps / b.rps).toFixed(2)}`);
    console.log(
      `the hook's own time: ${((1000 * (after.sum - before.sum)) / Math.max(1, calls)).toFixed(2)} ms per call as Sigil measured it (${calls} calls), of which the receiver spent ${(receiverNs / 1e6 / Math.max(1, receiverCalls)).toFixed(3)} ms (verifying, signing its answer); ${receiverAfter.bad} calls failed verification`,
    );
    await Promise.all([stopSigil(without.child), stopSigil(withHook.child)]);
  } finally {
    await cleanUp(undefined, []);
    await receiver.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

if (isMainThread) await main();
else receiverThread();
