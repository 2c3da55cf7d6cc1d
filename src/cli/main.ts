#!/usr/bin/env node
/**
 * The `sigil` command (DESIGN §5): `sigil start` runs the server, `sigil migrate` brings the store's
 * schema up to date. Flags: --config FILE, --port N, --host H, --issuer URL, --storage URL;
 * environment: SIGIL_CONFIG, PORT, SIGIL_ISSUER, SIGIL_STORAGE (flags win).
 * Exit codes: 0 success, 1 runtime failure, 2 invalid usage or configuration.
 */
import { realpathSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { ConfigError, type ConfigOverrides, overridesFromEnv, parsePort, readConfigFile, resolveConfig } from '../config/loader.js';
import { createSigil } from '../index.js';
import { openStore } from '../stores/sql.js';

const DEMO_CONFIG = resolve(dirname(fileURLToPath(import.meta.url)), '../../examples/sigil.json');
const USAGE = `usage: sigil <start|migrate> [--config FILE] [--port N] [--host H] [--issuer URL] [--storage URL]`;

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
      help: { type: 'boolean', short: 'h' },
    },
  });
  const command = positionals[0];
  if (values.help || (command !== 'start' && command !== 'migrate')) {
    console.error(USAGE);
    return values.help ? 0 : 2;
  }
  const configPath = values.config ?? process.env.SIGIL_CONFIG ?? DEMO_CONFIG;
  const overrides: ConfigOverrides = { ...overridesFromEnv(process.env) };
  if (values.port !== undefined) overrides.port = parsePort(values.port, '--port');
  if (values.host !== undefined) overrides.host = values.host;
  if (values.issuer !== undefined) overrides.issuer = values.issuer;
  if (values.storage !== undefined) overrides.storage = values.storage;
  const raw = readConfigFile(configPath);

  if (command === 'migrate') {
    const store = await openStore(resolveConfig(raw, overrides).storage);
    await store.close();
    console.log('migrations are up to date');
    return 0;
  }

  const sigil = await createSigil(raw, { overrides });
  const cfg = sigil.context.config;
  const address = await sigil.app.listen({ port: cfg.port, host: cfg.host });
  const url = new URL(address);
  if (url.hostname === '0.0.0.0' || url.hostname === '[::]') url.hostname = 'localhost';
  console.log(`sigil: issuer ${cfg.issuer}`);
  console.log(`sigil: discovery ${cfg.issuer}/.well-known/openid-configuration`);
  console.log(`sigil: clients ${cfg.clients.map((c) => c.clientId).join(', ') || '(none)'}`);
  console.log(`sigil: users ${cfg.users.map((u) => u.username).join(', ') || '(none)'}`);
  if (isDemo(configPath))
    console.log('sigil: demo credentials: client "demo" with secret "demo-secret", user "alice" with password "alice" (see README)');
  console.log(`sigil: listening on ${url.origin}`);

  await new Promise<void>((done) => {
    const stop = () => {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      void sigil.close().finally(done);
    };
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
  });
  return 0;
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
