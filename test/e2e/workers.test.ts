/**
 * `sigil start --workers 2` (DESIGN §5): two processes on one port and one SQLite file. Requests on
 * fresh connections are spread over both workers (the primary hands connections out in turn), and
 * tokens, refresh, introspection and revocation agree across them; a revocation is seen by every
 * worker within the access-token cache bound; SIGTERM stops every worker; `memory` is refused.
 */
import { readFileSync } from 'node:fs';
import { request } from 'undici';
import { afterAll, describe, expect, it } from 'vitest';
import { basic, form, type ServerProcess, sleep, startProcess, testConfig } from '../helpers.js';
import { freePort } from './ports.js';

const BOUND_MS = 100;
const config = testConfig({ logLevel: 'warn', accessTokenCache: { maxAgeMilliseconds: BOUND_MS, maxEntries: 1000 } });
let server: ServerProcess | undefined;
afterAll(async () => server?.stop());

/** POSTs a form on a connection of its own, so that successive calls reach the workers in turn. */
async function post(path: string, params: Record<string, string>, auth: [string, string]): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await request(`${server?.url}${path}`, {
    method: 'POST',
    reset: true,
    headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: basic(...auth) },
    body: form(params),
  });
  const text = await res.body.text();
  return { status: res.statusCode, body: (text ? JSON.parse(text) : {}) as Record<string, unknown> };
}
const API1: [string, string] = ['api1', 'api1-secret'];
const ROPC: [string, string] = ['ropc', 'ropc-secret'];
const REF: [string, string] = ['m2m-ref', 'm2m-secret'];

/** The pids of a process's children (Linux). */
function childrenOf(pid: number): number[] {
  return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
}
const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe('sigil start --workers 2', () => {
  it('runs two workers that agree on tokens, refresh, introspection and revocation; SIGTERM stops them all', async () => {
    server = await startProcess(config, await freePort(), { args: ['--workers', '2'] });
    const workers = childrenOf(server.child.pid!);
    expect(workers).toHaveLength(2);

    // Reference tokens: each issued on one connection, introspected on the next ones (both workers).
    const tokens: string[] = [];
    for (let i = 0; i < 6; i++) {
      const issued = await post('/connect/token', { grant_type: 'client_credentials', scope: 'api1' }, REF);
      expect(issued.status).toBe(200);
      tokens.push(issued.body.access_token as string);
    }
    for (const token of tokens) for (let i = 0; i < 2; i++) expect((await post('/connect/introspect', { token }, API1)).body.active).toBe(true);

    // Refresh token rotation across workers: each refresh on a new connection; the used one is dead.
    const first = await post('/connect/token', { grant_type: 'password', username: 'alice', password: 'alice', scope: 'openid api1 offline_access' }, ROPC);
    expect(first.status).toBe(200);
    let refresh = first.body.refresh_token as string;
    for (let i = 0; i < 3; i++) {
      const next = await post('/connect/token', { grant_type: 'refresh_token', refresh_token: refresh }, ROPC);
      expect(next.status).toBe(200);
      expect((await post('/connect/introspect', { token: next.body.access_token as string }, API1)).body.active).toBe(true);
      refresh = next.body.refresh_token as string;
    }
    expect((await post('/connect/introspect', { token: refresh }, ROPC)).body.active).toBe(true);

    // Revocation on one worker is seen by every worker within the bound.
    for (const token of tokens.slice(0, 3)) expect((await post('/connect/revocation', { token }, REF)).status).toBe(200);
    expect((await post('/connect/revocation', { token: refresh }, ROPC)).status).toBe(200);
    await sleep(BOUND_MS + 5); // a timer may fire a millisecond early
    for (const token of tokens.slice(0, 3)) for (let i = 0; i < 2; i++) expect((await post('/connect/introspect', { token }, API1)).body.active).toBe(false);
    for (const token of tokens.slice(3)) for (let i = 0; i < 2; i++) expect((await post('/connect/introspect', { token }, API1)).body.active).toBe(true);
    for (let i = 0; i < 2; i++) expect((await post('/connect/token', { grant_type: 'refresh_token', refresh_token: refresh }, ROPC)).body.error).toBe('invalid_grant');

    const exited = new Promise<number | null>((ok) => server?.child.once('exit', (code) => ok(code)));
    server.child.kill('SIGTERM');
    expect(await exited).toBe(0);
    expect(workers.filter(alive)).toEqual([]);
  }, 90_000);

  it('refuses more than one worker with memory storage, naming --workers (exit code 2)', async () => {
    const started = startProcess(config, await freePort(), { args: ['--workers', '2', '--storage', 'memory'] });
    await expect(started).rejects.toThrow(/exited with 2[\s\S]*--workers: "memory" storage/);
  }, 30_000);
});
