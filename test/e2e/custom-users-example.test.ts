/**
 * examples/custom-users.mjs as a user runs it: a custom user directory over a SQLite
 * table and a profile service, through the built package (`import 'sigil'`), over HTTP.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { join, resolve } from 'node:path';
import Database from 'better-sqlite3';
import { decodeJwt } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { basic, form, tempDir } from '../helpers.js';
import { freePort } from './ports.js';

const EXAMPLE = resolve(import.meta.dirname, '../../examples/custom-users.mjs');
const APP = basic('app', 'app-secret');

describe('examples/custom-users.mjs', () => {
  let child: ChildProcess;
  let url = '';
  let dbFile = '';
  const temp = tempDir();

  const post = async (path: string, fields: Record<string, string>, authorization = APP) => {
    const res = await fetch(url + path, {
      method: 'POST',
      headers: { authorization, 'content-type': 'application/x-www-form-urlencoded' },
      body: form(fields),
    });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  };
  const password = (username: string, pw: string, scope = 'openid profile email department orders offline_access') =>
    post('/connect/token', { grant_type: 'password', username, password: pw, scope });

  beforeAll(async () => {
    const port = await freePort();
    dbFile = join(temp.dir, 'people.db');
    child = spawn(process.execPath, [EXAMPLE], {
      env: { ...process.env, PORT: String(port), CUSTOM_USERS_DB: dbFile },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    await new Promise<void>((ok, fail) => {
      const timer = setTimeout(() => fail(new Error(`example did not start:\n${out}`)), 20_000);
      const seen = (b: Buffer) => {
        out += b.toString();
        if (/listening on/.test(out)) {
          clearTimeout(timer);
          ok();
        }
      };
      child.stdout?.on('data', seen);
      child.stderr?.on('data', seen);
      child.once('exit', (code) => fail(new Error(`example exited with ${code}:\n${out}`)));
    });
    url = `http://127.0.0.1:${port}`;
  });
  afterAll(async () => {
    if (child && child.exitCode === null) {
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await exited;
    }
    temp.cleanup();
  });

  it('signs in a user of the table; the profile service decides the claims per caller', async () => {
    const res = await password('ADA', 'ada-password');
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const at = decodeJwt(res.body.access_token as string);
    expect(at).toMatchObject({
      sub: '7f3c2a4e-1b65-4c1e-9a0e-5d1c3e7b9a10',
      department: 'engineering',
      department_source: 'people:7f3c2a4e',
    });
    const info = await fetch(`${url}/connect/userinfo`, {
      headers: { authorization: `Bearer ${res.body.access_token as string}` },
    });
    expect(await info.json()).toEqual({
      sub: '7f3c2a4e-1b65-4c1e-9a0e-5d1c3e7b9a10',
      name: 'Ada Lovelace',
      email: 'ada@example.org',
      email_verified: true,
      department: 'engineering',
      department_source: 'people:7f3c2a4e',
    });
  });

  it('answers a wrong password, an unknown user and an empty password alike', async () => {
    for (const [u, p] of [
      ['ada', 'wrong'],
      ['nobody', 'ada-password'],
      ['ada', ''],
    ] as const) {
      const res = await password(u, p);
      expect(res.status).toBe(400);
      expect(res.body.error).toMatch(/invalid_grant|invalid_request/);
      expect(res.body.access_token).toBeUndefined();
    }
  });

  it('stops refresh, introspection and userinfo once the table marks the user inactive (isActive)', async () => {
    const res = await password('grace', 'grace-password');
    expect(res.status).toBe(200);
    const db = new Database(dbFile);
    try {
      db.prepare("update people set active = 0 where login = 'grace'").run();
    } finally {
      db.close();
    }
    const refresh = await post('/connect/token', {
      grant_type: 'refresh_token',
      refresh_token: res.body.refresh_token as string,
    });
    expect(refresh).toEqual({
      status: 400,
      body: { error: 'invalid_grant', error_description: 'the user is no longer active' },
    });
    const intro = await post(
      '/connect/introspect',
      { token: res.body.access_token as string },
      basic('orders-api', 'orders-api-secret'),
    );
    expect(intro.body).toEqual({ active: false });
    const info = await fetch(`${url}/connect/userinfo`, {
      headers: { authorization: `Bearer ${res.body.access_token as string}` },
    });
    expect(info.status).toBe(401);
    expect((await password('grace', 'grace-password')).body.error).toBe('invalid_grant');
  });
});
