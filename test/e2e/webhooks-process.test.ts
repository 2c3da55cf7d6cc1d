/**
 * Webhook deliveries survive a crash: a real `sigil start` process on SQLite and on PostgreSQL
 * posts a user's `user.created` to a receiver that never answers, a `user.updated` of the same user
 * waits behind it in the outbox, and the process is killed with SIGKILL mid-send. Started again on
 * the same store, it sends both once the dead process's lease has run out, in order, with the same
 * `webhook-id` as before (at least once: the receiver sees the first message twice). A user added
 * by `sigil users add` is told too, by a running node.
 */
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { pino } from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { createSigil } from '../../src/index.js';
import {
  dropSchema,
  POSTGRES_URL,
  type ServerProcess,
  settled,
  startProcess,
  tempDir,
  testConfig,
  uniqueSchema,
} from '../helpers.js';
import { ADMIN_CLIENT, CONFIG_SECRET } from '../webhook-helpers.js';
import { startReceiver } from '../webhook-receiver.js';
import { freePort } from './ports.js';

const run = promisify(execFile);
const CLI = resolve(import.meta.dirname, '../../dist/cli/main.js');

const DIALECTS: [string, string | undefined][] = [
  ['SQLite', undefined],
  ['PostgreSQL', `${POSTGRES_URL}?schema=${uniqueSchema('webhookskill')}`],
];

describe.each(DIALECTS)('webhooks after SIGKILL on %s', (_dialect, storage) => {
  const dir = tempDir();
  const running: ServerProcess[] = [];
  afterAll(async () => {
    for (const p of running) await p.stop();
    dir.cleanup();
    const schema = storage === undefined ? undefined : new URL(storage).searchParams.get('schema');
    if (schema) await dropSchema(schema);
  });

  it('delivers what was pending or in flight once started again', async () => {
    const receiver = await startReceiver([CONFIG_SECRET]);
    try {
      const base = testConfig();
      const config = testConfig({
        logLevel: 'warn',
        clients: [...(base.clients ?? []), ADMIN_CLIENT],
        webhooks: [
          { name: 'crm', url: `${receiver.url}/crm`, events: ['user.created', 'user.updated'], secret: CONFIG_SECRET },
        ],
        // A lease of 2 × 2 s + 5 s: the restarted process takes over the dead one's after 9 s.
        webhookDelivery: { timeoutSeconds: 2, firstRetrySeconds: 1, maxRetrySeconds: 2, pollSeconds: 1 },
      });
      const port = await freePort();
      const options = { dir: dir.dir, ...(storage ? { storage } : {}) };
      const first = await startProcess(config, port, options);
      running.push(first);
      const api = await adminApi(first.url);
      receiver.replies = ['hang'];
      const created = await api('POST', '/users', { username: 'kim' });
      expect(created.status).toBe(201);
      const { subjectId } = (await created.json()) as { subjectId: string };
      const etag = created.headers.get('etag') ?? '';
      expect((await api('PATCH', `/users/${subjectId}`, { claims: { name: 'Kim' } }, etag)).status).toBe(200);
      // The first delivery is in flight (the receiver holds it); the second waits behind it.
      await settled(
        async () => receiver.received.length,
        (n) => n === 1,
      );
      first.child.kill('SIGKILL');
      await new Promise((r) => first.child.once('exit', r));

      receiver.otherwise = 204;
      const second = await startProcess(config, port, options);
      running.push(second);
      const bodies = await settled(
        async () => receiver.verified(),
        (v) => v.length === 3,
        30_000,
      );
      expect(bodies.map((b) => b.type)).toEqual(['user.created', 'user.created', 'user.updated']);
      expect(receiver.received[0]?.id).toBe(receiver.received[1]?.id);
      expect(bodies[2]?.data).toMatchObject({ subject: subjectId, claims: { name: 'Kim' } });
      const log = await (await adminApi(second.url))('GET', '/webhooks/crm/deliveries');
      const { deliveries } = (await log.json()) as { deliveries: { type: string; status: string }[] };
      expect(deliveries.map((d) => [d.type, d.status])).toEqual([
        ['user.updated', 'delivered'],
        ['user.created', 'delivered'],
      ]);
    } finally {
      await receiver.close();
    }
  }, 90_000);
});

describe('webhooks of the command line', () => {
  it('tells a user added by sigil users add, delivered by a running node', async () => {
    const { dir, cleanup } = tempDir();
    const receiver = await startReceiver([CONFIG_SECRET]);
    const storage = `sqlite:${join(dir, 'sigil.db')}`;
    const config = testConfig({
      storage,
      logLevel: 'silent',
      webhooks: [{ name: 'crm', url: `${receiver.url}/crm`, events: ['user.created'], secret: CONFIG_SECRET }],
      webhookDelivery: { timeoutSeconds: 2, firstRetrySeconds: 1, maxRetrySeconds: 2, pollSeconds: 1 },
    });
    const configFile = join(dir, 'sigil.json');
    writeFileSync(configFile, JSON.stringify(config));
    const node = await createSigil(config, { logger: pino({ level: 'silent' }) });
    try {
      await run(process.execPath, [
        CLI,
        'users',
        'add',
        'lee',
        '--password',
        'harbour-violet-1959',
        '--config',
        configFile,
      ]);
      const bodies = await settled(
        async () => receiver.verified(),
        (v) => v.length === 1,
      );
      expect(bodies[0]).toMatchObject({ type: 'user.created', data: { username: 'lee' } });
      expect(receiver.received[0]?.body).not.toContain('harbour-violet-1959');
    } finally {
      await node.close();
      await receiver.close();
      cleanup();
    }
  });
});

/** The management API of a running process, as the admin client. */
async function adminApi(url: string) {
  const token = await fetch(`${url}/connect/token`, {
    method: 'POST',
    headers: {
      authorization: `Basic ${Buffer.from('automation:automation-secret').toString('base64')}`,
      'content-type': 'application/x-www-form-urlencoded',
    },
    body: new URLSearchParams({ grant_type: 'client_credentials', scope: 'sigil:admin' }),
  });
  const { access_token } = (await token.json()) as { access_token: string };
  return (method: string, path: string, body?: unknown, ifMatch?: string) =>
    fetch(`${url}/admin/v1${path}`, {
      method,
      headers: {
        authorization: `Bearer ${access_token}`,
        ...(body === undefined
          ? {}
          : { 'content-type': method === 'PATCH' ? 'application/merge-patch+json' : 'application/json' }),
        ...(ifMatch ? { 'if-match': ifMatch } : {}),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
}
