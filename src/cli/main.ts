#!/usr/bin/env node
/**
 * The `sigil` command (DESIGN §5): `sigil start` runs the server, `sigil migrate` brings the store's
 * schema up to date, `sigil keys|users|clients` administer the store (see `admin.ts`). Flags: --config FILE, --port N, --host H, --issuer URL, --storage URL,
 * --metrics-port N, --workers N|auto (`sigil start`: N processes on one port, see `workers.ts`); environment: SIGIL_CONFIG, PORT, SIGIL_ISSUER, SIGIL_STORAGE, SIGIL_METRICS_PORT (flags win).
 * Exit codes: 0 success, 1 runtime failure, 2 invalid usage or configuration.
 */
import { realpathSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { ConfigError, type ConfigOverrides, overridesFromEnv, parsePort, readConfigFile, resolveConfig } from '../config/loader.js';
import { clientsCommand, keysCommand, usersCommand } from './admin.js';
import { backupCommand } from './backup.js';
import { createSigil } from '../index.js';
import { openStore } from '../stores/sql.js';
import { isWorker, parseWorkers, reportListening, runPrimary } from './workers.js';

const DEMO_CONFIG = resolve(dirname(fileURLToPath(import.meta.url)), '../../examples/sigil.json');
const USAGE = `usage: sigil start   [--config FILE] [--port N] [--host H] [--issuer URL] [--storage URL] [--metrics-port N] [--workers N|auto]
       sigil migrate [--config FILE] [--storage URL]
       sigil backup FILE [--config FILE] [--storage URL]
       sigil keys list | rotate [--alg ALG] | retire KID   [--config FILE] [--storage URL]
       sigil users list | add USERNAME [--subject ID] [--tenant T] [--claims JSON] [--password P | --password-stdin]
                  | set-password USERNAME [--password P | --password-stdin] | remove USERNAME|SUBJECT
                  | mfa list|reset USERNAME [--tenant T]
                  | sessions revoke USERNAME [--tenant T]
       sigil clients list | add (--json JSON | --file FILE) | remove CLIENT_ID`;

async function main(argv: string[]): Promise<number> {
  const { positionals, values } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      config: { type: 'string' },
      port: { type: 'string' },
      host: { type: 'string' },
      issuer: { type: 'string' },
      storage: { type: 'string' },
      'metrics-port': { type: 'string' },
      workers: { type: 'string' },
      alg: { type: 'string' },
      subject: { type: 'string' },
      tenant: { type: 'string' },
      claims: { type: 'string' },
      password: { type: 'string' },
      'password-stdin': { type: 'boolean' },
      json: { type: 'string' },
      file: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  const command = positionals[0];
  if (values.help || !['start', 'migrate', 'backup', 'keys', 'users', 'clients'].includes(command ?? '')) {
    console.error(USAGE);
    return values.help ? 0 : 2;
  }
  const configPath = values.config ?? process.env.SIGIL_CONFIG ?? DEMO_CONFIG;
  const overrides: ConfigOverrides = { ...overridesFromEnv(process.env) };
  if (values.port !== undefined) overrides.port = parsePort(values.port, '--port');
  if (values.host !== undefined) overrides.host = values.host;
  if (values.issuer !== undefined) overrides.issuer = values.issuer;
  if (values.storage !== undefined) overrides.storage = values.storage;
  if (values['metrics-port'] !== undefined) overrides.metricsPort = parsePort(values['metrics-port'], '--metrics-port');
  const raw = readConfigFile(configPath);

  if (command === 'migrate') {
    const store = await openStore(resolveConfig(raw, overrides).storage);
    await store.close();
    console.log('migrations are up to date');
    return 0;
  }
  if (command === 'backup') return backupCommand(resolveConfig(raw, overrides).storage, positionals.slice(1));
  if (command === 'keys' || command === 'users' || command === 'clients') {
    const cfg = resolveConfig(raw, overrides);
    const args = positionals.slice(1);
    if (command === 'keys') return keysCommand(cfg, args, values.alg);
    if (command === 'users') return usersCommand(cfg, args, values);
    return clientsCommand(cfg, raw, overrides, args, values);
  }

  const workers = parseWorkers(values.workers);
  if (workers > 1 && !isWorker) {
    if (resolveConfig(raw, overrides).storage === 'memory')
      throw new ConfigError(['--workers: "memory" storage lives in one process; use sqlite: or postgres: with more than one worker']);
    // The store is prepared once, here: migrations and the first signing keys, before any worker.
    const prepared = await createSigil(raw, { overrides });
    const cfg = prepared.context.config;
    await prepared.close();
    return runPrimary(workers, (address, metricsUrl) => printStart(cfg, configPath, address, workers, metricsUrl));
  }

  // A worker's failure counters are its primary's (unless Redis holds them): see workers.ts.
  const sigil = await createSigil(raw, { overrides, countersInPrimary: isWorker });
  const cfg = sigil.context.config;
  const address = await sigil.app.listen({ port: cfg.port, host: cfg.host });
  const metricsUrl = await sigil.listenMetrics();
  // Handlers first: a supervisor may signal as soon as it reads "listening on".
  const stopped = new Promise<void>((done) => {
    let stopping = false;
    // Handlers stay installed: a second signal during shutdown (npm forwarding Ctrl-C too) is ignored.
    const stop = () => {
      if (stopping) return;
      stopping = true;
      void sigil.close().finally(done);
    };
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
  });
  if (isWorker) reportListening(address, metricsUrl);
  else printStart(cfg, configPath, address, 1, metricsUrl);

  await stopped;
  return 0;
}

/** Prints the start lines (DESIGN §5), the last one `listening on <url>`. */
function printStart(cfg: { issuer: string; clients: { clientId: string }[]; users: { username: string }[] }, configPath: string, address: string, workers: number, metricsUrl: string | null): void {
  const url = new URL(address);
  if (url.hostname === '0.0.0.0' || url.hostname === '[::]') url.hostname = 'localhost';
  console.log(`sigil: issuer ${cfg.issuer}`);
  console.log(`sigil: discovery ${cfg.issuer}/.well-known/openid-configuration`);
  console.log(`sigil: clients ${cfg.clients.map((c) => c.clientId).join(', ') || '(none)'}`);
  console.log(`sigil: users ${cfg.users.map((u) => u.username).join(', ') || '(none)'}`);
  // With workers, each scrape of the shared metrics port is answered by one worker, for its own requests.
  console.log(`sigil: metrics ${metricsUrl ? `${metricsUrl}/metrics` : 'off'}${workers > 1 ? ' (per worker)' : ''}`);
  if (workers > 1) console.log(`sigil: workers ${workers}`);
  if (isDemo(configPath))
    console.log('sigil: demo credentials: client "demo" with secret "demo-secret", user "alice" with password "alice" (see README)');
  console.log(`sigil: listening on ${url.origin}`);
}

function isDemo(path: string): boolean {
  try {
    return realpathSync(path) === realpathSync(DEMO_CONFIG);
  } catch {
    return false;
  }
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err: unknown) => {
    if (err instanceof ConfigError) {
      console.error(`sigil: ${err.message}`);
      process.exit(2);
    }
    if (err instanceof TypeError && (err as NodeJS.ErrnoException).code?.startsWith('ERR_PARSE_ARGS')) {
      console.error(`sigil: ${err.message}\n${USAGE}`);
      process.exit(2);
    }
    console.error(`sigil: ${err instanceof Error ? err.message : String(err)}`);
    process.exit(1);
  },
);
