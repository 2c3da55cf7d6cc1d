/**
 * The Dockerfile's recipe, run without Docker (this machine has no Docker daemon):
 * the test reads the Dockerfile and carries out its steps in a temporary folder, one folder per
 * stage standing for that stage's file system: WORKDIR, ENV, COPY (from the repository or from an
 * earlier stage) and the RUN commands of the stages the image copies from, then starts the image's
 * CMD with its ENV, a config where SIGIL_CONFIG points, and runs its HEALTHCHECK. So the recipe
 * (`npm ci --omit=dev` plus the bundle) cannot rot unnoticed.
 *
 * What stands in for the image: this machine's Node.js (the Dockerfile must name a `node:20` base,
 * and the test runs on Node.js 20), the user's npm cache (`prefer-offline`, so no network is needed
 * for packages CI has installed), and for better-sqlite3's install step a local prebuilt binary
 * made from the one in node_modules (prebuild-install's `local_prebuilds`; in a Docker build it
 * downloads the same file). The final stage's RUN steps need root (they create the volume's
 * folder for the `node` user); the test creates the volume's folder itself and checks that those
 * steps touch nothing else.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { basename, dirname, join, posix, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { form, basic, tempDir, testConfig } from '../helpers.js';
import { freePort } from './ports.js';

const ROOT = resolve(import.meta.dirname, '../..');
/** Longest a RUN step may take: a fresh `npm ci` from the cache takes seconds, a network fetch more. */
const RUN_STEP_CAP_MS = 150_000;

interface Instruction {
  op: string;
  args: string;
}
interface Stage {
  name: string;
  image: string;
  steps: Instruction[];
}

/** Splits a Dockerfile into stages of instructions (continuation lines joined, comments dropped). */
function parseDockerfile(text: string): Stage[] {
  const stages: Stage[] = [];
  const lines = text.replace(/\\\n/g, ' ').split('\n');
  for (const line of lines.map((l) => l.trim()).filter((l) => l && !l.startsWith('#'))) {
    const [, op, args] = /^(\w+)\s+(.*)$/.exec(line) ?? [];
    if (!op || args === undefined) throw new Error(`unreadable Dockerfile line: ${line}`);
    if (op.toUpperCase() === 'FROM') {
      const [image, as, name] = args.split(/\s+/);
      stages.push({ image: image!, name: as?.toUpperCase() === 'AS' ? name! : String(stages.length), steps: [] });
    } else {
      if (!stages.length) throw new Error(`${op} before FROM`);
      stages.at(-1)!.steps.push({ op: op.toUpperCase(), args: args.trim() });
    }
  }
  return stages;
}

/** The JSON (exec) form of CMD or HEALTHCHECK CMD. */
function execForm(args: string): string[] {
  const json = args.replace(/^(--\S+\s+)*CMD\s+/, '');
  return JSON.parse(json) as string[];
}

/** The environment of a step: the test's own, without npm's and vitest's variables. */
function cleanEnv(): Record<string, string> {
  return Object.fromEntries(
    Object.entries(process.env).filter(
      (e): e is [string, string] =>
        e[1] !== undefined && !/^(npm_|VITEST|NODE_ENV$|NODE_OPTIONS$|PORT$|SIGIL_)/.test(e[0]),
    ),
  );
}

/** A folder holding better-sqlite3's prebuilt binary as prebuild-install names its download. */
function localPrebuilds(dir: string): string {
  const require = createRequire(join(ROOT, 'package.json'));
  const pkgDir = dirname(require.resolve('better-sqlite3/package.json'));
  const { version } = JSON.parse(readFileSync(join(pkgDir, 'package.json'), 'utf8')) as { version: string };
  mkdirSync(dir, { recursive: true });
  const file = `better-sqlite3-v${version}-node-v${process.versions.modules}-${process.platform}-${process.arch}.tar.gz`;
  execFileSync('tar', ['czf', join(dir, file), 'build/Release/better_sqlite3.node'], { cwd: pkgDir });
  return dir;
}

/** A stage's file system, built by carrying out its steps. */
interface BuiltStage {
  root: string;
  workdir: string;
  env: Record<string, string>;
  skippedRuns: string[];
}

const work = tempDir();
// The stages' folders hold three node_modules trees; removing them takes longer than the test on a
// loaded disk, so a detached `rm -rf` does it after the test, instead of the test waiting for it.
afterAll(() => spawn('rm', ['-rf', work.dir], { detached: true, stdio: 'ignore' }).unref());

const dockerfile = readFileSync(join(ROOT, 'Dockerfile'), 'utf8');
const stages = parseDockerfile(dockerfile);
const finalStage = stages.at(-1)!;

function stageNamed(name: string): Stage {
  const stage = stages.find((s) => s.name === name);
  if (!stage) throw new Error(`COPY --from=${name}: no such stage`);
  return stage;
}

/** Instructions that describe the image without changing its files; the test reads them where it needs them. */
const DESCRIPTIVE = new Set(['USER', 'VOLUME', 'EXPOSE', 'HEALTHCHECK', 'CMD', 'LABEL']);

/** Rewrites absolute paths (also after `sqlite:` or `=`) into the stage's folder. */
function rooted(root: string, value: string): string {
  return value.replace(/(^|[:=\s])\/(?!\/)/g, `$1${root}/`);
}

function runStep(command: string, cwd: string, env: Record<string, string>): Promise<void> {
  return new Promise((ok, fail) => {
    const child = spawn('sh', ['-c', command], {
      cwd,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
      timeout: RUN_STEP_CAP_MS,
    });
    let out = '';
    child.stdout.on('data', (b: Buffer) => (out += b.toString()));
    child.stderr.on('data', (b: Buffer) => (out += b.toString()));
    child.on('exit', (code, signal) =>
      code === 0 ? ok() : fail(new Error(`RUN ${command}: ${signal ?? `exit ${code}`}\n${out}`)),
    );
  });
}

const built = new Map<string, Promise<BuiltStage>>();
const prebuilds = localPrebuilds(join(work.dir, 'prebuilds'));

/** Builds a stage once; the stages it copies from are built first. */
function build(stage: Stage): Promise<BuiltStage> {
  let done = built.get(stage.name);
  if (!done) {
    done = buildStage(stage);
    built.set(stage.name, done);
  }
  return done;
}

async function buildStage(stage: Stage): Promise<BuiltStage> {
  const root = join(work.dir, 'stages', stage.name);
  const state: BuiltStage = { root, workdir: '/', env: {}, skippedRuns: [] };
  const path = (p: string) => join(root, posix.resolve(state.workdir, p));
  mkdirSync(root, { recursive: true });
  // The stages this one copies from start at once, side by side (as BuildKit builds them).
  for (const from of stage.steps.flatMap((s) => /--from=(\S+)/.exec(s.op === 'COPY' ? s.args : '')?.[1] ?? []))
    build(stageNamed(from)).catch(() => {});
  for (const { op, args } of stage.steps) {
    if (op === 'WORKDIR') {
      state.workdir = posix.resolve(state.workdir, args);
      mkdirSync(path('.'), { recursive: true });
    } else if (op === 'ENV') {
      const [, key, value] = /^(\w+)=(\S+)$/.exec(args) ?? [];
      if (!key || value === undefined) throw new Error(`ENV: write one KEY=value per line: ${args}`);
      state.env[key] = value;
    } else if (op === 'COPY') {
      const words = args.split(/\s+/);
      const flags = words.filter((w) => w.startsWith('--'));
      const [dest, ...sources] = words.filter((w) => !w.startsWith('--')).reverse();
      const from = flags.find((f) => f.startsWith('--from='))?.slice('--from='.length);
      const source = from === undefined ? undefined : await build(stageNamed(from));
      for (const src of sources.reverse()) {
        if (/[*?[]/.test(src)) throw new Error(`COPY: no globs, the test copies plain paths: ${src}`);
        const origin = source ? join(source.root, posix.resolve(source.workdir, src)) : join(ROOT, src);
        // As in Docker: a folder's contents go to dest; a file goes into dest when dest ends with "/".
        const target =
          dest!.endsWith('/') && !statSync(origin).isDirectory() ? join(path(dest!), basename(src)) : path(dest!);
        mkdirSync(dirname(target), { recursive: true });
        cpSync(origin, target, { recursive: true, verbatimSymlinks: true });
      }
    } else if (op === 'RUN') {
      if (stage === finalStage) {
        state.skippedRuns.push(args);
        continue;
      }
      const env: Record<string, string> = {
        ...cleanEnv(),
        ...state.env,
        npm_config_prefer_offline: 'true',
        npm_config_better_sqlite3_local_prebuilds: prebuilds,
      };
      await runStep(args, path('.'), env);
    } else if (!DESCRIPTIVE.has(op)) {
      // ARG, ADD, SHELL, ENTRYPOINT...: teach the test first, else the recipe could drift from what it checks.
      throw new Error(`${op}: an instruction this test does not carry out`);
    }
  }
  return state;
}

function startImage(
  image: BuiltStage,
  env: Record<string, string>,
): { child: ChildProcess; output: () => string; exited: Promise<number | null> } {
  const [command, ...args] = execForm(finalStage.steps.filter((s) => s.op === 'CMD').at(-1)!.args);
  expect(command).toBe('node');
  const child = spawn(process.execPath, args, {
    cwd: join(image.root, image.workdir),
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout?.on('data', (b: Buffer) => (out += b.toString()));
  child.stderr?.on('data', (b: Buffer) => (out += b.toString()));
  return { child, output: () => out, exited: new Promise((ok) => child.on('exit', ok)) };
}

function healthcheck(env: Record<string, string>, cwd: string): Promise<number | null> {
  const [command, ...args] = execForm(finalStage.steps.find((s) => s.op === 'HEALTHCHECK')!.args);
  expect(command).toBe('node');
  return new Promise((ok) => spawn(process.execPath, args, { cwd, env, stdio: 'ignore' }).on('exit', ok));
}

describe('Dockerfile', () => {
  it('is multi-stage on Node.js 20, runs as a non-root user with the data folder a volume, and checks /healthz with Node.js itself', () => {
    expect(stages.length).toBeGreaterThanOrEqual(2);
    for (const s of stages) expect(s.image).toMatch(/^node:20[.-]/);
    const final = (op: string) => finalStage.steps.filter((s) => s.op === op).map((s) => s.args);
    expect(final('USER').at(-1)).toMatch(/^(?!root$|0$)\w+$/);
    const storage = final('ENV').find((e) => e.startsWith('SIGIL_STORAGE='))!;
    const volumes = final('VOLUME').flatMap((v) => (v.startsWith('[') ? (JSON.parse(v) as string[]) : v.split(/\s+/)));
    expect(volumes.some((v) => storage.startsWith(`SIGIL_STORAGE=sqlite:${v}/`))).toBe(true);
    // Sigil listens on 127.0.0.1 by default; the image on its every interface, where a published port arrives.
    expect(final('ENV')).toContain('HOST=0.0.0.0');
    const check = final('HEALTHCHECK').join(' ');
    expect(check).toMatch(/\/healthz/);
    expect(check).not.toMatch(/\b(curl|wget)\b/);
    // Only the production dependencies reach the image: the dev ones stay in the build stage.
    expect(
      finalStage.steps
        .filter((s) => s.op === 'COPY')
        .map((s) => s.args)
        .join('\n'),
    ).not.toMatch(/src|scripts/);
  });

  it('its steps build an image that serves tokens from its volume and passes its own HEALTHCHECK', async () => {
    expect(process.versions.node.split('.')[0]).toBe('20');
    const image = await build(finalStage);
    const volumes = finalStage.steps.filter((s) => s.op === 'VOLUME').flatMap((s) => JSON.parse(s.args) as string[]);
    // The final stage's RUN steps prepare the volume's folder for the unprivileged user, nothing else.
    for (const run of image.skippedRuns) expect(volumes.some((v) => run.endsWith(` ${v}`))).toBe(true);
    for (const v of volumes) mkdirSync(join(image.root, v), { recursive: true });

    const app = join(image.root, image.workdir);
    expect(existsSync(join(app, 'dist/cli/main.js'))).toBe(true);
    for (const dev of ['typescript', 'esbuild', 'vitest', 'dependency-cruiser'])
      expect(existsSync(join(app, 'node_modules', dev))).toBe(false);

    const port = await freePort();
    const env: Record<string, string> = {
      ...cleanEnv(),
      ...Object.fromEntries(Object.entries(image.env).map(([k, v]) => [k, rooted(image.root, v)])),
      PORT: String(port),
    };
    const { issuer: _issuer, storage: _storage, ...config } = testConfig();
    mkdirSync(dirname(env.SIGIL_CONFIG!), { recursive: true });
    writeFileSync(
      env.SIGIL_CONFIG!,
      JSON.stringify({ ...config, issuer: `http://127.0.0.1:${port}`, host: '127.0.0.1' }),
    );

    const server = startImage(image, env);
    try {
      await new Promise<void>((ok, fail) => {
        const timer = setTimeout(() => fail(new Error(`no "listening on":\n${server.output()}`)), 20_000);
        server.child.stdout?.on('data', () => {
          if (!/listening on http/.test(server.output())) return;
          clearTimeout(timer);
          ok();
        });
        void server.exited.then((code) => {
          clearTimeout(timer);
          fail(new Error(`exited with ${code}:\n${server.output()}`));
        });
      });
      expect(await healthcheck(env, app)).toBe(0);
      // A password grant: argon2 (native) checks the password, better-sqlite3 (native) stores the refresh token.
      const res = await fetch(`http://127.0.0.1:${port}/connect/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: basic('ropc', 'ropc-secret') },
        body: form({ grant_type: 'password', username: 'alice', password: 'alice', scope: 'openid offline_access' }),
      });
      expect(res.status).toBe(200);
      expect(existsSync(env.SIGIL_STORAGE!.slice('sqlite:'.length))).toBe(true);
    } finally {
      server.child.kill('SIGTERM');
    }
    expect(await server.exited).toBe(0);
    expect(await healthcheck(env, app)).not.toBe(0);
  }, 300_000);
});
