/**
 * Two nodes on one store (a PostgreSQL schema of this run's own; a SQLite file shared as
 * `--workers` share it), each with its own deliverer polling the one outbox: every event written on
 * either node is delivered exactly once (by `webhook-id`), whichever node sends it; and a webhook
 * created through /admin/v1 on node A gets the events written on node B once B's change poll saw
 * it (within about a second).
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dropSchema, settled, tempDir, type TestSigil } from '../helpers.js';
import { type Api, CONFIG_SECRET, DIALECTS, startWebhookSigil } from '../webhook-helpers.js';
import { type Receiver, startReceiver } from '../webhook-receiver.js';

describe.each(DIALECTS)('two nodes on %s', (dialect, storage) => {
  const dir = tempDir();
  const url = storage() ?? `sqlite:${join(dir.dir, 'shared.db')}`;
  let receiver: Receiver;
  let a: { sigil: TestSigil; api: Api };
  let b: { sigil: TestSigil; api: Api };

  beforeAll(async () => {
    receiver = await startReceiver([CONFIG_SECRET]);
    const webhooks = [
      { name: 'shared', url: `${receiver.url}/shared`, events: ['user.created' as const], secret: CONFIG_SECRET },
    ];
    a = await startWebhookSigil(url, { webhooks });
    b = await startWebhookSigil(url, { webhooks });
  });
  afterAll(async () => {
    await a?.sigil.close();
    await b?.sigil.close();
    await receiver?.close();
    dir.cleanup();
    if (dialect === 'PostgreSQL') await dropSchema(new URL(url).searchParams.get('schema') ?? '');
  });

  it('deliver each event once, whichever node wrote it', async () => {
    const created = await Promise.all(
      Array.from({ length: 40 }, (_, i) => (i % 2 === 0 ? a : b).api('POST', '/users', { username: `member-${i}` })),
    );
    expect(created.map((c) => c.status)).toEqual(Array(40).fill(201));
    const got = await settled(
      async () => receiver.verified().length,
      (n) => n >= 40,
    );
    expect(got).toBe(40);
    // A second more: no node sends one again.
    await new Promise((r) => setTimeout(r, 1500));
    const ids = receiver.received.map((r) => r.id);
    expect(ids).toHaveLength(40);
    expect(new Set(ids).size).toBe(40);
    const usernames = receiver.verified().map((v) => v.data.username);
    expect(new Set(usernames).size).toBe(40);
  });

  it('route events written on node B to a webhook created on node A', async () => {
    const other = await startReceiver();
    try {
      const hook = await a.api('POST', '/webhooks', {
        name: 'fresh',
        url: `${other.url}/fresh`,
        events: ['client.created'],
      });
      expect(hook.status, hook.text).toBe(201);
      other.secrets.push(String(hook.body.secret));
      // Node B's change poll runs every second; a client created on B after it saw the webhook is told.
      await settled(
        async () => (await b.api('GET', '/webhooks/fresh')).status,
        (s) => s === 200,
      );
      await new Promise((r) => setTimeout(r, 1200));
      const client = await b.api('POST', '/clients', {
        clientId: `from-b-${dialect}`,
        allowedGrantTypes: ['client_credentials'],
        allowedScopes: ['api1'],
      });
      expect(client.status).toBe(201);
      const bodies = await settled(
        async () => other.verified(),
        (v) => v.length >= 1,
      );
      expect(bodies.map((x) => x.data.clientId)).toEqual([`from-b-${dialect}`]);
    } finally {
      await other.close();
    }
  });
});
