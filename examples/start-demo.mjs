#!/usr/bin/env node
/**
 * `npm start`: the plain `sigil start` server (with the demo config of examples/sigil.json unless
 * --config or SIGIL_CONFIG says otherwise; every flag is passed on), plus the demo relying party
 * of examples/demo-rp.mjs on http://localhost:5001 when the config has its client `demo-web`. With the
 * demo config it first adds the stored user `carol` (once), whose password and profile can change.
 *
 * Sigil runs as a child process and prints its own lines (issuer, discovery URL, clients, users,
 * `listening on <url>`); once it listens, the demo relying party starts in this process against
 * the issuer Sigil printed. SIGINT/SIGTERM/SIGHUP stop both; the exit code is Sigil's.
 *
 * Sigil stays in this process group: whatever signals the group, a terminal's Ctrl-C
 * or a supervisor's SIGKILL, reaches Sigil too, so nothing of it outlives `npm start`. A Ctrl-C
 * reaches Sigil twice (from the terminal and forwarded from here); Sigil stops on the first and
 * ignores the rest.
 */
import { spawn } from 'node:child_process';
import { dirname, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const CLI = resolve(here, '../dist/cli/main.js');
const DEMO_CONFIG = resolve(here, 'sigil.json');

const args = process.argv.slice(2);
const hasConfig =
  args.some((a) => a === '--config' || a.startsWith('--config=')) || process.env.SIGIL_CONFIG !== undefined;

/**
 * The demo's stored user: config-file users are read-only, so without one the password change,
 * the profile and "Forgot password?" (whose mail the demo's `log` transport prints) could not be
 * shown. Added through the CLI, as an administrator would, the first time the demo's store lacks it.
 * Its password is printed with the demo's other credentials: this store is the demo's alone.
 */
const STORED_USER = { username: 'carol', password: 'paper-lantern-42', email: 'carol@example.com' };
/** The CLI adding it while it runs, stopped with the rest. */
let adding;

/**
 * Adds the stored user unless the store has it; resolves once done, never rejects. Run once Sigil
 * listens (its store migrated), beside it: the password hash and the CLI's start do not hold up
 * `npm start`.
 */
function addStoredUser() {
  const storage = args.flatMap((a, i) =>
    a === '--storage' ? ['--storage', args[i + 1]] : a.startsWith('--storage=') ? [a] : [],
  );
  const claims = { name: 'Carol Diaz', given_name: 'Carol', family_name: 'Diaz', role: ['user'] };
  const add = spawn(
    process.execPath,
    [
      CLI,
      'users',
      'add',
      STORED_USER.username,
      '--password-stdin',
      '--email',
      STORED_USER.email,
      '--email-verified',
      '--claims',
      JSON.stringify(claims),
      '--config',
      DEMO_CONFIG,
      ...storage,
    ],
    { stdio: ['pipe', 'ignore', 'pipe'] },
  );
  adding = add;
  let stderr = '';
  add.stderr.on('data', (chunk) => (stderr += chunk));
  add.stdin.end(`${STORED_USER.password}\n`);
  return new Promise((resolve) =>
    add.on('exit', (code) => {
      if (code !== 0 && !/exists already/.test(stderr))
        console.log(`sigil demo: the stored user ${STORED_USER.username} was not added: ${stderr.trim()}`);
      resolve();
    }),
  );
}

const sigil = spawn(process.execPath, [CLI, 'start', ...(hasConfig ? [] : ['--config', DEMO_CONFIG]), ...args], {
  stdio: ['ignore', 'pipe', 'inherit'],
});

/** @type {{ url: string, close: () => Promise<void> } | undefined} */
let rp;
let issuer;
let clients = [];
let stopping = false;

createInterface({ input: sigil.stdout }).on('line', (line) => {
  process.stdout.write(`${line}\n`);
  const m = /^sigil: (issuer|clients) (.*)$/.exec(line);
  if (m?.[1] === 'issuer') issuer = m[2];
  if (m?.[1] === 'clients') clients = m[2].split(', ');
  if (/^sigil: listening on http/.test(line))
    void Promise.all([startRp(), hasConfig ? undefined : addStoredUser()]).then(() => {
      if (!hasConfig && !stopping)
        console.log(
          `sigil demo: stored user ${STORED_USER.username} / ${STORED_USER.password} (${STORED_USER.email}) may change the password and profile at ${issuer}/account; mail (password reset, registration) is printed here`,
        );
    });
});

async function startRp() {
  if (!clients.includes('demo-web') || !issuer || stopping) return;
  const url = process.env.DEMO_RP_URL ?? 'http://localhost:5001';
  try {
    // openid-client is a devDependency: `npm install` brings it, a production install may not.
    const { startDemoRp } = await import('./demo-rp.mjs');
    rp = await startDemoRp({ issuer, url });
    if (stopping) return void rp.close();
    console.log(
      `sigil demo: open ${rp.url} in a browser for the demo application (client "demo-web"), sign in as alice / alice`,
    );
  } catch (err) {
    const reason =
      err?.code === 'ERR_MODULE_NOT_FOUND'
        ? 'openid-client is not installed (run npm install)'
        : err?.code === 'EADDRINUSE'
          ? `${url} is in use`
          : String(err?.message ?? err);
    console.log(`sigil demo: the demo application did not start (${reason}); Sigil itself is running`);
  }
}

function stop(signal) {
  if (stopping) return;
  stopping = true;
  if (adding?.exitCode === null) adding.kill('SIGTERM');
  if (sigil.exitCode === null && sigil.signalCode === null) sigil.kill(signal === 'SIGHUP' ? 'SIGTERM' : signal);
  void rp?.close();
}
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(signal, () => stop(signal));
// Never leave Sigil behind, even if this script fails or only this process is signalled.
process.on('exit', () => {
  if (sigil.exitCode === null && sigil.signalCode === null) sigil.kill('SIGTERM');
});

sigil.on('exit', async (code, signal) => {
  stopping = true;
  await rp?.close();
  process.exit(code ?? (signal ? 1 : 0));
});
