/**
 * Group commit keeps durability: reference tokens from a burst of concurrent requests to
 * a real `sigil start` on a SQLite file are committed in groups, and every token answered 200 is
 * found after the process is killed with SIGKILL during the burst and started again on the file.
 */
import { request } from 'undici';
import { afterAll, describe, expect, it } from 'vitest';
import { basic, form, type ServerProcess, startProcess, tempDir, testConfig } from '../helpers.js';
import { freePort } from './ports.js';

const store = tempDir();
let server: ServerProcess | undefined;
afterAll(async () => {
  await server?.stop();
  store.cleanup();
});

async function post(
  url: string,
  params: Record<string, string>,
  auth: [string, string],
): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await request(url, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: basic(...auth) },
    body: form(params),
  });
  return { status: res.statusCode, body: (await res.body.json()) as Record<string, unknown> };
}

describe('group commit of reference tokens', () => {
  it('kill -9 during a burst of 600 concurrent requests: after restart every token answered 200 introspects as active', async () => {
    const port = await freePort();
    const config = testConfig({ logLevel: 'warn' });
    const first = await startProcess(config, port, { dir: store.dir });
    server = first;
    const answered: string[] = [];
    let killed = false;
    const burst = Array.from({ length: 600 }, () =>
      post(`${first.url}/connect/token`, { grant_type: 'client_credentials', scope: 'api1' }, [
        'm2m-ref',
        'm2m-secret',
      ]).then(
        ({ status, body }) => {
          if (status !== 200) throw new Error(`token request answered ${status}`);
          if (killed) return;
          answered.push(body.access_token as string);
          // SIGKILL as soon as the 300th token arrives, while the rest are still being committed.
          if (answered.length === 300) {
            killed = true;
            first.child.kill('SIGKILL');
          }
        },
        () => undefined,
      ),
    );
    await Promise.all(burst);
    expect(killed).toBe(true);
    expect(answered.length).toBe(300);
    await new Promise<void>((ok) =>
      first.child.exitCode !== null || first.child.signalCode !== null ? ok() : first.child.once('exit', () => ok()),
    );

    server = await startProcess(config, port, { dir: store.dir });
    const url = server.url;
    const results = await Promise.all(
      answered.map((token) => post(`${url}/connect/introspect`, { token }, ['api1', 'api1-secret'])),
    );
    expect(results.filter((r) => r.status !== 200 || r.body.active !== true)).toEqual([]);
  }, 60_000);
});
