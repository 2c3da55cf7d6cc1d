// What the store-scale benches share (grants-scale.mjs, scim-scale.mjs, organizations-scale.mjs):
// a free port, the environment without the variables that would override a config file, the CLI
// (`sigil migrate`), a `sigil start` process that resolves once it listens, the CPU time a process
// used, and the clean-up of a run: its processes killed, its PostgreSQL schemas dropped.
import { execFileSync, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';

export const ROOT = fileURLToPath(new URL('..', import.meta.url));
export const CLI = join(ROOT, 'dist/cli/main.js');
export const HOST = '127.0.0.1';

/** The `sigil start` processes still running, for a bench's exit handler. */
export const children = new Set();

/** A port nothing listens on now. */
export function freePort() {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.on('error', reject);
    srv.listen(0, HOST, () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

/** The environment without the variables that would override a config file. */
export function cleanEnv() {
  const env = { ...process.env };
  for (const name of ['SIGIL_CONFIG', 'SIGIL_ISSUER', 'SIGIL_STORAGE', 'PORT', 'SIGIL_DATA_KEY']) delete env[name];
  return env;
}

/** Runs the CLI with `args` to its end; its standard output. */
export function runCli(args) {
  return execFileSync(process.execPath, [CLI, ...args], {
    cwd: ROOT,
    env: cleanEnv(),
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

/**
 * `sigil start` on `storage`; resolves once it prints "listening on", with `startMs`: the cold
 * start, milliseconds from spawning the process to that line.
 * @param metricsPort the management listener's port (one per process), or undefined for the config's
 */
export function startSigil(configFile, storage, port, metricsPort) {
  const spawnedAt = performance.now();
  const args = ['start', '--config', configFile, '--port', String(port), '--host', HOST];
  args.push('--issuer', `http://${HOST}:${port}`, '--storage', storage);
  if (metricsPort !== undefined) args.push('--metrics-port', String(metricsPort));
  // BENCH_CPU_PROF (a directory): a CPU profile of each Sigil process, as bench/run.mjs writes them.
  const profile = process.env.BENCH_CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`] : [];
  const child = spawn(process.execPath, [...profile, CLI, ...args], {
    cwd: ROOT,
    env: cleanEnv(),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.add(child);
  let output = '';
  const keep = (chunk) => {
    output = (output + chunk).slice(-4000);
  };
  child.stdout.on('data', keep);
  child.stderr.on('data', keep);
  child.on('exit', () => children.delete(child));
  child.tail = () => output;
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`Sigil did not start:\n${output}`));
    }, 120_000);
    const onExit = (code) => {
      clearTimeout(timer);
      reject(new Error(`Sigil exited with ${code}:\n${output}`));
    };
    child.once('exit', onExit);
    child.stdout.on('data', function ready() {
      if (!/listening on/.test(output)) return;
      clearTimeout(timer);
      child.off('exit', onExit);
      child.stdout.off('data', ready);
      resolve({ child, base: `http://${HOST}:${port}`, startMs: performance.now() - spawnedAt });
    });
  });
}

/** SIGTERM, SIGKILL after 10 s; resolves once the process exited. */
export function stopSigil(child) {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
    child.kill('SIGTERM');
  });
}

const CLK_TCK = (() => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  } catch {
    return 100;
  }
})();

/** CPU seconds (user + system, all threads) process `pid` has used so far. */
export function cpuSeconds(pid) {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / CLK_TCK;
}

/** The `p`th percentile (0 to 100) of ascending `sorted` (nearest rank). */
export function percentile(sorted, p) {
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}

/** Ends a run: kills the `sigil start` processes still running and drops `schemas` at `pgUrl`. */
export async function cleanUp(pgUrl, schemas) {
  for (const child of children) child.kill('SIGKILL');
  if (schemas.length === 0) return;
  const c = new pg.Client({ connectionString: pgUrl });
  await c.connect();
  for (const schema of schemas) await c.query(`drop schema if exists ${schema} cascade`);
  await c.end();
}
