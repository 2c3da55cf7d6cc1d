/**
 * `sigil backup FILE`: SQLite's online backup of the store of a running server,
 * taken while it answers token requests, restored into a new folder, and a server started on the
 * copy still honours what was issued before the backup: the reference access token introspects as
 * active, the refresh token redeems, a JWT access token verifies against the restored keys.
 */
import { execFile, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  copyFileSync,
  existsSync,
  lstatSync,
  readdirSync,
  readFileSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import SQLite from 'better-sqlite3';
import { createRemoteJWKSet, jwtVerify } from 'jose';
import { afterEach, describe, expect, it } from 'vitest';
import { basic, form, type ServerProcess, startProcess, tempDir, testConfig } from '../helpers.js';
import { freePort } from './ports.js';

const CLI = resolve(import.meta.dirname, '../../dist/cli/main.js');
const execFileAsync = promisify(execFile);

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

function dir(): string {
  const { dir, cleanup } = tempDir();
  cleanups.push(cleanup);
  return dir;
}

async function started(config: ReturnType<typeof testConfig>, port: number, at: string): Promise<ServerProcess> {
  const server = await startProcess(config, port, { dir: at });
  cleanups.push(() => server.stop());
  return server;
}

async function token(url: string, params: Record<string, string>, client: [string, string]): Promise<Response> {
  return fetch(`${url}/connect/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: basic(...client) },
    body: form(params),
  });
}

async function introspect(url: string, accessToken: string): Promise<{ active: boolean; client_id?: string }> {
  const res = await fetch(`${url}/connect/introspect`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: basic('api1', 'api1-secret') },
    body: form({ token: accessToken }),
  });
  expect(res.status).toBe(200);
  return (await res.json()) as { active: boolean; client_id?: string };
}

describe('sigil backup', () => {
  it("copies a running server's SQLite store under load; a server on the restored copy honours the tokens issued before", async () => {
    const port = await freePort();
    const live = dir();
    const config = testConfig();
    const server = await started(config, port, live);

    const reference = await token(server.url, { grant_type: 'client_credentials', scope: 'api1' }, [
      'm2m-ref',
      'm2m-secret',
    ]);
    expect(reference.status).toBe(200);
    const referenceToken = ((await reference.json()) as { access_token: string }).access_token;
    const password = await token(
      server.url,
      { grant_type: 'password', username: 'alice', password: 'alice', scope: 'openid api1 offline_access' },
      ['ropc', 'ropc-secret'],
    );
    expect(password.status).toBe(200);
    const { access_token: jwt, refresh_token: refreshToken } = (await password.json()) as {
      access_token: string;
      refresh_token: string;
    };
    expect(refreshToken).toBeTruthy();

    // A little load: reference tokens (one insert each) requested four at a time while the backup runs.
    let loading = true;
    let served = 0;
    const load = Promise.all(
      Array.from({ length: 4 }, async () => {
        while (loading) {
          const res = await token(server.url, { grant_type: 'client_credentials', scope: 'api1' }, [
            'm2m-ref',
            'm2m-secret',
          ]);
          expect(res.status).toBe(200);
          await res.arrayBuffer();
          served++;
        }
      }),
    );
    while (served < 20) await new Promise((r) => setTimeout(r, 10));
    const backupFile = join(dir(), 'nested', 'sigil-backup.db');
    // Spawned without blocking this process, so the load goes on while the backup runs.
    const before = served;
    const backup = await execFileAsync(
      process.execPath,
      [CLI, 'backup', backupFile, '--config', join(live, 'sigil.json')],
      { encoding: 'utf8', timeout: 20_000 },
    );
    const duringBackup = served - before;
    loading = false;
    await load;
    expect(duringBackup).toBeGreaterThan(0);
    // This server runs without a data key: the copy's signing keys are in clear, and stderr says so.
    expect(backup.stderr).toMatch(
      /^sigil: warning: SIGIL_DATA_KEY is not set, so the signing keys in \S+sigil-backup\.db are not encrypted/,
    );
    expect(backup.stdout).toMatch(
      /^sigil: backup of sqlite:\S+sigil\.db written to \S+sigil-backup\.db \(\d+ pages\)\n$/,
    );

    // The copy is a whole database on its own: no WAL beside it, integrity intact.
    expect(existsSync(`${backupFile}-wal`)).toBe(false);
    const check = new SQLite(backupFile, { readonly: true });
    expect(check.pragma('integrity_check', { simple: true })).toBe('ok');
    check.close();

    // Restore: the copy becomes the store of a server in a new folder, on the same issuer.
    await server.stop();
    const restored = dir();
    copyFileSync(backupFile, join(restored, 'sigil.db'));
    const again = await started(config, port, restored);

    expect(await introspect(again.url, referenceToken)).toMatchObject({ active: true, client_id: 'm2m-ref' });
    await expect(
      jwtVerify(jwt, createRemoteJWKSet(new URL(`${again.url}/.well-known/openid-configuration/jwks`))),
    ).resolves.toBeTruthy();
    const refreshed = await token(again.url, { grant_type: 'refresh_token', refresh_token: refreshToken }, [
      'ropc',
      'ropc-secret',
    ]);
    expect(refreshed.status).toBe(200);
    expect(
      await introspect(again.url, ((await refreshed.json()) as { access_token: string }).access_token),
    ).toMatchObject({ active: true });
  });

  it('refuses PostgreSQL and memory stores, pointing to pg_dump, and a missing FILE, with exit code 2', () => {
    const at = dir();
    const file = join(at, 'sigil.json');
    writeFileSync(file, JSON.stringify(testConfig({ storage: 'postgres://sigil@db.internal:5432/sigil' })));
    const pg = spawnSync(process.execPath, [CLI, 'backup', join(at, 'b.db'), '--config', file], { encoding: 'utf8' });
    expect(pg.status).toBe(2);
    expect(pg.stderr).toMatch(/pg_dump/);
    const memory = spawnSync(
      process.execPath,
      [CLI, 'backup', join(at, 'b.db'), '--config', file, '--storage', 'memory'],
      { encoding: 'utf8' },
    );
    expect(memory.status).toBe(2);
    expect(memory.stderr).toMatch(/memory/);
    const missing = spawnSync(process.execPath, [CLI, 'backup', '--config', file], { encoding: 'utf8' });
    expect(missing.status).toBe(2);
    expect(missing.stderr).toMatch(/FILE/);
    expect(existsSync(join(at, 'b.db'))).toBe(false);
  });

  it('writes a copy only its owner can read under umask 022, over a world-readable file or a link at FILE; warns without SIGIL_DATA_KEY', () => {
    const at = dir();
    const config = join(at, 'sigil.json');
    writeFileSync(config, JSON.stringify(testConfig({ storage: `sqlite:${join(at, 'sigil.db')}` })));
    expect(spawnSync(process.execPath, [CLI, 'migrate', '--config', config], { encoding: 'utf8' }).status).toBe(0);
    const { SIGIL_DATA_KEY: _none, ...withoutKey } = process.env;
    const withKey = { ...withoutKey, SIGIL_DATA_KEY: randomBytes(32).toString('hex') };
    // The real CLI from a shell whose umask leaves new files readable by everyone.
    const inShell = (args: string[], env: NodeJS.ProcessEnv) =>
      spawnSync('sh', ['-c', 'umask 022; exec "$0" "$@"', ...args], { encoding: 'utf8', env });
    const backup = (file: string, env: NodeJS.ProcessEnv) =>
      inShell([process.execPath, CLI, 'backup', file, '--config', config], env);
    const mode = (file: string) => statSync(file).mode & 0o777;
    const out = dir();
    expect(inShell(['touch', join(out, 'control')], withoutKey).status).toBe(0);
    expect(mode(join(out, 'control'))).toBe(0o644);

    const fresh = backup(join(out, 'fresh.db'), withoutKey);
    expect(fresh.status, fresh.stderr).toBe(0);
    expect(mode(join(out, 'fresh.db'))).toBe(0o600);
    expect(fresh.stderr).toContain('sigil: warning: SIGIL_DATA_KEY is not set');

    // An earlier backup left readable by everyone is replaced by one that is not; with the key, no warning.
    writeFileSync(join(out, 'daily.db'), 'an older backup', { mode: 0o644 });
    const over = backup(join(out, 'daily.db'), withKey);
    expect(over.status, over.stderr).toBe(0);
    expect(over.stderr).toBe('');
    expect(mode(join(out, 'daily.db'))).toBe(0o600);

    // A link planted at FILE is replaced, not written through: its target keeps its contents.
    writeFileSync(join(out, 'target'), 'not a backup', { mode: 0o644 });
    symlinkSync(join(out, 'target'), join(out, 'linked.db'));
    expect(backup(join(out, 'linked.db'), withKey).status).toBe(0);
    expect(lstatSync(join(out, 'linked.db')).isSymbolicLink()).toBe(false);
    expect(mode(join(out, 'linked.db'))).toBe(0o600);
    expect(readFileSync(join(out, 'target'), 'utf8')).toBe('not a backup');
    // Nothing else left behind (no partial copy, no journal); the copy is whole.
    expect(readdirSync(out).sort()).toEqual(['control', 'daily.db', 'fresh.db', 'linked.db', 'target']);
    const check = new SQLite(join(out, 'linked.db'), { readonly: true });
    expect(check.pragma('integrity_check', { simple: true })).toBe('ok');
    check.close();
  });
});
