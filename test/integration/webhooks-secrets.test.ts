/**
 * A stored webhook's secret at rest: with `SIGIL_DATA_KEY` (the `dataKey` option) the store holds
 * a JWE (`dir`, `A256GCM`) that does not contain the secret, and the provider still signs with it
 * (the secret must be recoverable, unlike a client's), also once started again.
 */
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { decodeProtectedHeader } from 'jose';
import { pino } from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { createSigil } from '../../src/index.js';
import { clientTokens, tempDir, testConfig } from '../helpers.js';
import { ADMIN_CLIENT, adminApi, SHORT_DELIVERY } from '../webhook-helpers.js';
import { startReceiver } from '../webhook-receiver.js';

describe('a stored webhook secret under the data key', () => {
  const { dir, cleanup } = tempDir();
  afterAll(() => cleanup());
  const config = testConfig({
    storage: `sqlite:${join(dir, 'sigil.db')}`,
    clients: [...(testConfig().clients ?? []), ADMIN_CLIENT],
    webhookDelivery: SHORT_DELIVERY,
  });

  it('is sealed at rest, signs, and is not used under another key', async () => {
    const receiver = await startReceiver();
    const dataKey = new Uint8Array(randomBytes(32));
    const sigil = await createSigil(config, { logger: pino({ level: 'silent' }), dataKey });
    let secret = '';
    try {
      const token = (await clientTokens({ ...sigil, dir }, 'sigil:admin', ['automation', 'automation-secret']))
        .access_token;
      const api = adminApi({ ...sigil, dir }, token);
      const created = await api('POST', '/webhooks', { name: 'sealed', url: `${receiver.url}/s`, events: ['*'] });
      expect(created.status, created.text).toBe(201);
      secret = String(created.body.secret);
      receiver.secrets.push(secret);
      const db = new Database(join(dir, 'sigil.db'), { readonly: true });
      const row = db.prepare('select secrets from webhooks where name = ?').get('sealed') as { secrets: string };
      db.close();
      expect(row.secrets).not.toContain(secret);
      expect(row.secrets).not.toContain('whsec_');
      expect(decodeProtectedHeader(row.secrets)).toMatchObject({ alg: 'dir', enc: 'A256GCM' });
      const ping = await api('POST', '/webhooks/sealed/ping');
      expect(ping.body.delivery).toMatchObject({ status: 'delivered' });
      expect(receiver.received.at(-1)?.verified).toBeDefined();
    } finally {
      await sigil.close();
    }

    // Started again with the same key, the node opens the secret and signs with it.
    const again = await createSigil(config, { logger: pino({ level: 'silent' }), dataKey });
    try {
      const token = (await clientTokens({ ...again, dir }, 'sigil:admin', ['automation', 'automation-secret']))
        .access_token;
      const ping = await adminApi({ ...again, dir }, token)('POST', '/webhooks/sealed/ping');
      expect(ping.body.delivery).toMatchObject({ status: 'delivered' });
      expect(receiver.received.at(-1)?.verified).toBeDefined();
    } finally {
      await again.close();
      await receiver.close();
    }
  });
});
