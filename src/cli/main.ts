#!/usr/bin/env node
/**
 * The `sigil` command: `sigil start` runs the server, `sigil migrate` brings the store's
 * schema up to date, `sigil keys|users|clients` administer the store (see `admin.ts`), `sigil config
 * schema` prints the config file's JSON Schema, `sigil config check FILE` validates a config file. `sigil
 * --version`; `sigil <command> --help` prints that
 * command's usage. Flags: --config FILE (without it and SIGIL_CONFIG, `sigil start` serves the demo
 * config, says so, and refuses under NODE_ENV=production unless --demo), --port N, --host H, --issuer URL, --storage URL,
 * --metrics-port N, --workers N|auto (`sigil start`: N processes on one port, see `workers.ts`); environment:
 * SIGIL_CONFIG, PORT, HOST, SIGIL_ISSUER, SIGIL_STORAGE, SIGIL_METRICS_PORT (flags win).
 * An unknown command or option is named, with the closest known one when there is one.
 * Exit codes: 0 success, 1 runtime failure, 2 invalid usage or configuration.
 */
import { readFileSync, realpathSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import {
  ConfigError,
  type ConfigOverrides,
  overridesFromEnv,
  parsePort,
  readConfigFile,
  resolveConfig,
} from '../config/loader.js';
import { configJsonSchema } from '../config/reference.js';
import { closest } from '../config/suggest.js';
import { isWorker, parseWorkers, reportListening, runPrimary } from './workers.js';

/** The package's root: dist/cli/ is two levels below it, in the bundle as in tsc's output. */
const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const DEMO_CONFIG = resolve(ROOT, 'examples/sigil.json');

/** Each command's usage; continuation lines are indented under the command. */
const COMMANDS: Record<string, string> = {
  start:
    'sigil start   [--config FILE | --demo] [--port N] [--host H] [--issuer URL] [--storage URL] [--metrics-port N] [--workers N|auto]',
  migrate: 'sigil migrate [--config FILE] [--storage URL]',
  backup: 'sigil backup FILE [--config FILE] [--storage URL]',
  keys: 'sigil keys list | rotate [--alg ALG] | retire KID   [--config FILE] [--storage URL]',
  users: `sigil users list | add USERNAME [--subject ID] [--tenant T] [--claims JSON] [--password P | --password-stdin]
               [--email ADDRESS [--email-verified]]
           | set-password USERNAME [--password P | --password-stdin] | remove USERNAME|SUBJECT
           | set-email USERNAME ADDRESS [--email-verified]
           | disable USERNAME | enable USERNAME | set-claims USERNAME --claims JSON [--tenant T]
           | mfa list|reset USERNAME [--tenant T]
           | sessions revoke USERNAME [--tenant T]`,
  clients: `sigil clients list | add (--json JSON | --file FILE) | update CLIENT_ID (--json PATCH | --file FILE)
           | remove CLIENT_ID | initial-token [--max-registrations N] [--lifetime SECONDS]`,
  config: 'sigil config schema | check FILE',
};

const OPTIONS = {
  config: { type: 'string' },
  port: { type: 'string' },
  host: { type: 'string' },
  issuer: { type: 'string' },
  storage: { type: 'string' },
  'metrics-port': { type: 'string' },
  workers: { type: 'string' },
  demo: { type: 'boolean' },
  alg: { type: 'string' },
  subject: { type: 'string' },
  tenant: { type: 'string' },
  claims: { type: 'string' },
  password: { type: 'string' },
  'password-stdin': { type: 'boolean' },
  email: { type: 'string' },
  'email-verified': { type: 'boolean' },
  json: { type: 'string' },
  file: { type: 'string' },
  'max-registrations': { type: 'string' },
  lifetime: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
  version: { type: 'boolean', short: 'v' },
} as const;

/** The usage of `command`, or of every command when it is none of them. */
function usage(command?: string): string {
  const text = command !== undefined && command in COMMANDS ? COMMANDS[command]! : Object.values(COMMANDS).join('\n');
  return `usage: ${text.replace(/\n/g, '\n       ')}`;
}

/** Wrong use of the command line: printed with the usage of `command` (all commands if none), exit code 2. */
class UsageError extends Error {
  constructor(
    message: string,
    readonly command?: string,
  ) {
    super(message);
    this.name = 'UsageError';
  }
}

/** `sigil start` without a config where the demo must not run: one line, exit code 2. */
class DemoRefused extends Error {}

/** `unknown <what> "<name>"`, with the closest known name when one is near enough to be a typo. */
function unknown(what: string, name: string, known: Iterable<string>): string {
  const near = closest(name, known);
  return `unknown ${what} "${name}"${near ? `; did you mean "${near}"?` : ''}`;
}

/** Parses the arguments; an unknown option is a `UsageError` naming it. */
function parse(argv: string[]) {
  try {
    return parseArgs({ args: argv, allowPositionals: true, options: OPTIONS });
  } catch (err) {
    const command = argv.find((a) => !a.startsWith('-'));
    const option = /^Unknown option '([^']+)'/.exec((err as Error).message)?.[1];
    if ((err as NodeJS.ErrnoException).code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION' && option !== undefined)
      throw new UsageError(
        unknown(
          'option',
          option,
          Object.keys(OPTIONS).map((o) => `--${o}`),
        ),
        command,
      );
    throw new UsageError((err as Error).message, command);
  }
}

async function main(argv: string[]): Promise<number> {
  const { positionals, values } = parse(argv);
  const command = positionals[0];
  if (values.version) {
    console.log((JSON.parse(readFileSync(resolve(ROOT, 'package.json'), 'utf8')) as { version: string }).version);
    return 0;
  }
  if (values.help) {
    console.log(usage(command));
    return 0;
  }
  if (command === undefined) throw new UsageError('no command given');
  if (!(command in COMMANDS)) throw new UsageError(unknown('command', command, Object.keys(COMMANDS)));
  if (command === 'config') return configCommand(positionals.slice(1));

  const configGiven = values.config ?? process.env.SIGIL_CONFIG;
  const configPath = configGiven ?? DEMO_CONFIG;
  const demo = isDemo(configPath);
  if (command === 'start' && configGiven === undefined) {
    // The demo's client secrets and passwords are in the README: a production host that lost its
    // --config must not quietly serve them.
    if (values.demo !== true && process.env.NODE_ENV === 'production')
      throw new DemoRefused(
        'no config given (--config FILE or SIGIL_CONFIG) and NODE_ENV is production: refusing to serve the demo config, whose secrets are published (pass --demo to run the demo anyway)',
      );
    console.error(
      `sigil: no config given: serving the demo config ${DEMO_CONFIG}, whose secrets are published (pass --config FILE for your own)`,
    );
  }
  const overrides: ConfigOverrides = { ...overridesFromEnv(process.env) };
  if (values.port !== undefined) overrides.port = parsePort(values.port, '--port');
  if (values.host !== undefined) overrides.host = values.host;
  if (values.issuer !== undefined) overrides.issuer = values.issuer;
  if (values.storage !== undefined) overrides.storage = values.storage;
  if (values['metrics-port'] !== undefined) overrides.metricsPort = parsePort(values['metrics-port'], '--metrics-port');
  // The demo config's issuer names port 5000; another port (`npm start -- --port 6000`) moves it along.
  if (demo && overrides.port !== undefined && overrides.port !== 0 && overrides.issuer === undefined)
    overrides.issuer = `http://localhost:${overrides.port}`;
  const raw = readConfigFile(configPath);

  // Each command imports what it uses when it runs (the bundle is split at these imports), so
  // that `sigil --help` or `sigil users list` does not load the server, its pages and Fastify.
  if (command === 'migrate') {
    const { openStore } = await import('../stores/sql.js');
    const store = await openStore(resolveConfig(raw, overrides).storage);
    await store.close();
    console.log('migrations are up to date');
    return 0;
  }
  if (command === 'backup') {
    const { backupCommand } = await import('./backup.js');
    return backupCommand(resolveConfig(raw, overrides).storage, positionals.slice(1));
  }
  if (command === 'keys' || command === 'users' || command === 'clients') {
    const cfg = resolveConfig(raw, overrides);
    const { clientsCommand, keysCommand, usersCommand } = await import('./admin.js');
    const args = positionals.slice(1);
    if (command === 'keys') return keysCommand(cfg, args, values.alg);
    if (command === 'users') return usersCommand(cfg, args, values);
    return clientsCommand(cfg, raw, overrides, args, values);
  }

  const workers = parseWorkers(values.workers);
  const { createSigil } = await import('../index.js');
  if (workers > 1 && !isWorker) {
    if (resolveConfig(raw, overrides).storage === 'memory')
      throw new ConfigError([
        '--workers: "memory" storage lives in one process; use sqlite: or postgres: with more than one worker',
      ]);
    // The store is prepared once, here: migrations and the first signing keys, before any worker.
    const prepared = await createSigil(raw, { overrides });
    const cfg = prepared.context.config;
    await prepared.close();
    const code = await runPrimary(workers, (address, metricsUrl) =>
      printStart(cfg, demo, address, workers, metricsUrl),
    );
    console.log('sigil: stopped');
    return code;
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
    const stop = (signal: NodeJS.Signals) => {
      if (stopping) return;
      stopping = true;
      if (!isWorker) console.log(`sigil: stopping (${signal})`);
      void sigil.close().finally(done);
    };
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
  });
  if (isWorker) reportListening(address, metricsUrl);
  else printStart(cfg, demo, address, 1, metricsUrl);

  await stopped;
  if (!isWorker) console.log('sigil: stopped');
  return 0;
}

/**
 * `sigil config schema` prints the config file's JSON Schema (as shipped in dist/sigil.schema.json);
 * `sigil config check FILE` reads and validates a config file as `sigil start` would (references
 * to the environment and files included), printing every problem with its field path.
 * @returns 0 when done, or when the file is valid.
 * @throws ConfigError (exit code 2) listing every problem; UsageError for anything else.
 */
function configCommand(args: string[]): number {
  const [action, file, ...rest] = args;
  if (action === 'schema' && file === undefined) {
    console.log(JSON.stringify(configJsonSchema(), null, 2));
    return 0;
  }
  if (action !== 'check' || file === undefined || rest.length > 0)
    throw new UsageError(
      action === 'check'
        ? 'config check needs one FILE'
        : action === 'schema'
          ? 'config schema takes no argument'
          : action === undefined
            ? 'config needs schema or check'
            : unknown('config action', action, ['schema', 'check']),
      'config',
    );
  resolveConfig(readConfigFile(file));
  console.log(`${file}: valid`);
  return 0;
}

/** The port a URL names, explicit or its scheme's default. */
function portOf(url: URL): number {
  return url.port !== '' ? Number(url.port) : url.protocol === 'https:' ? 443 : 80;
}

/**
 * Prints the start lines, the last one `listening on <url>`; before them, on stderr, a
 * warning when the issuer names another port than the one Sigil listens on and no proxy is
 * configured (`trustProxy`), since clients would then be sent where nothing answers. The line
 * names where Sigil listens: the address it is bound to, and for a wildcard host (`0.0.0.0`,
 * `::`), which the socket reports as a loopback URL, a URL on this machine followed by
 * `(every interface)`.
 */
function printStart(
  cfg: {
    issuer: string;
    host: string;
    trustProxy: unknown;
    clients: { clientId: string }[];
    users: { username: string }[];
    admin: { console: boolean; userRole: string };
  },
  demo: boolean,
  address: string,
  workers: number,
  metricsUrl: string | null,
): void {
  const url = new URL(address);
  const everyInterface = WILDCARD_HOSTS.has(cfg.host);
  if (url.hostname === '0.0.0.0' || url.hostname === '[::]') url.hostname = 'localhost';
  const issuerPort = portOf(new URL(cfg.issuer));
  if (!demo && cfg.trustProxy === false && issuerPort !== portOf(url))
    console.error(
      `sigil: warning: the issuer ${cfg.issuer} names port ${issuerPort}, but Sigil listens on port ${portOf(url)}; ` +
        'set "issuer" (or --issuer) to the URL clients reach, and "trustProxy" when a proxy forwards to Sigil',
    );
  console.log(`sigil: issuer ${cfg.issuer}`);
  console.log(`sigil: discovery ${cfg.issuer}/.well-known/openid-configuration`);
  console.log(`sigil: clients ${cfg.clients.map((c) => c.clientId).join(', ') || '(none)'}`);
  console.log(`sigil: users ${cfg.users.map((u) => u.username).join(', ') || '(none)'}`);
  // The two pages a newcomer looks for first: their own account, and the console.
  console.log(`sigil: account ${cfg.issuer}/account`);
  if (cfg.admin.console)
    console.log(`sigil: console ${cfg.issuer}/admin (users with the role ${cfg.admin.userRole}, with a second factor)`);
  // With workers, each scrape of the shared metrics port is answered by one worker, for its own requests.
  console.log(`sigil: metrics ${metricsUrl ? `${metricsUrl}/metrics` : 'off'}${workers > 1 ? ' (per worker)' : ''}`);
  if (workers > 1) console.log(`sigil: workers ${workers}`);
  if (demo)
    console.log(
      'sigil: demo credentials: client "demo" with secret "demo-secret", user "alice" with password "alice" (see README)',
    );
  console.log(`sigil: listening on ${url.origin}${everyInterface ? ' (every interface)' : ''}`);
}

/** Hosts that bind every interface of the machine. */
const WILDCARD_HOSTS = new Set(['0.0.0.0', '::', '[::]', '::0', '0:0:0:0:0:0:0:0']);

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
    if (err instanceof ConfigError || err instanceof DemoRefused) {
      console.error(`sigil: ${err.message}`);
      process.exit(2);
    }
    if (err instanceof UsageError) {
      console.error(`sigil: ${err.message}\n${usage(err.command)}`);
      process.exit(2);
    }
    console.error(`sigil: ${err instanceof Error ? err.message : String(err)}`);
    process.exit(1);
  },
);
