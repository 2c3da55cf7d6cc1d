/**
 * Webhook delivery against real receivers on SQLite and PostgreSQL, with a short schedule (first
 * retry after 1 s, then 2 s; 2 s timeout): retries with back-off until a 2xx, in order per subject
 * (a later event waits while an earlier one is retried), 410 disables the webhook, the delivery log
 * pages, a delivery is retried, a ping is sent; a receiver that hangs times out and one that
 * answers 50 MB is not read; URLs of special-use addresses are refused; the secret is shown once
 * and never in a GET answer or an audit event, and a rotation signs with both secrets during its
 * grace; If-Match, read-only config-file webhooks and problem+json.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clientTokens, dropSchema, settled, sleep, type TestSigil } from '../helpers.js';
import { type Api, adminApi, CONFIG_SECRET, DIALECTS, startWebhookSigil } from '../webhook-helpers.js';
import { type Receiver, startReceiver } from '../webhook-receiver.js';

interface Delivery {
  id: string;
  type: string;
  status: string;
  attempts: number;
  lastStatusCode: number | null;
  lastAttemptAt: number | null;
  lastError?: string;
}

describe.each(DIALECTS)('webhook delivery on %s', (_dialect, storage) => {
  const url = storage();
  const receivers: Receiver[] = [];
  let sigil: TestSigil;
  let api: Api;
  let metrics: string;
  const scrape = async () => (await fetch(`${metrics}/metrics`)).text();

  const receiver = async (secrets: string[] = []) => {
    const r = await startReceiver(secrets);
    receivers.push(r);
    return r;
  };
  /** Creates a stored webhook to `r` for `events`; the receiver verifies with its secret. */
  const hook = async (name: string, r: Receiver, events: string[]) => {
    const created = await api('POST', '/webhooks', { name, url: `${r.url}/${name}`, events });
    expect(created.status, created.text).toBe(201);
    r.secrets.push(String(created.body.secret));
    return created;
  };
  const log = async (name: string, query = '') =>
    (await api('GET', `/webhooks/${name}/deliveries${query}`)).body as { deliveries: Delivery[]; next?: string };
  let clients = 0;
  const newClient = async (clientId = `client-${++clients}`) => {
    const res = await api('POST', '/clients', {
      clientId,
      allowedGrantTypes: ['client_credentials'],
      allowedScopes: ['api1'],
    });
    expect(res.status, res.text).toBe(201);
    return res;
  };

  beforeAll(async () => {
    const configured = await receiver([CONFIG_SECRET]);
    ({ sigil, api } = await startWebhookSigil(url, {
      webhooks: [
        {
          name: 'configured',
          url: `${configured.url}/c`,
          events: ['organization.member_added'],
          secret: CONFIG_SECRET,
        },
        // A private address: refused by the SSRF guard before any connection.
        { name: 'private', url: 'https://192.168.7.7/hook', events: ['client.deleted'], secret: CONFIG_SECRET },
      ],
      metrics: { host: '127.0.0.1', port: 0 },
    }));
    metrics = (await sigil.listenMetrics()) as string;
  });
  afterAll(async () => {
    await sigil?.close();
    for (const r of receivers) await r.close();
    const schema = url === undefined ? undefined : new URL(url).searchParams.get('schema');
    if (schema) await dropSchema(schema);
  });

  it('retries with back-off until a 2xx, and a later event of the subject waits for the earlier one', async () => {
    const r = await receiver();
    await hook('retrying', r, ['client.created', 'client.updated']);
    r.replies = [500, 503];
    const created = await newClient('ordered');
    const patched = await api(
      'PATCH',
      '/clients/ordered',
      { clientName: 'Ordered' },
      { 'if-match': created.etag ?? '' },
    );
    expect(patched.status).toBe(200);
    await settled(
      async () => r.verified().map((b) => b.type),
      (types) => types.includes('client.updated'),
    );
    expect(r.verified().map((b) => b.type)).toEqual([
      'client.created',
      'client.created',
      'client.created',
      'client.updated',
    ]);
    // One message, three attempts: the same webhook-id, later timestamps (1 s, then 1 to 2 s, apart).
    const [first, second, third] = r.received;
    expect(new Set([first?.id, second?.id, third?.id]).size).toBe(1);
    expect(Number(second?.timestamp) - Number(first?.timestamp)).toBeGreaterThanOrEqual(1);
    expect(Number(third?.timestamp) - Number(second?.timestamp)).toBeGreaterThanOrEqual(1);
    // The receiver has the request before the deliverer records its answer: wait for the record.
    const { deliveries } = await settled(
      () => log('retrying'),
      (l) => l.deliveries.every((d) => d.status === 'delivered'),
    );
    expect(deliveries.map((d) => [d.type, d.status, d.attempts, d.lastStatusCode])).toEqual([
      ['client.updated', 'delivered', 1, 204],
      ['client.created', 'delivered', 3, 204],
    ]);
    const counted = await scrape();
    expect(counted).toContain('sigil_webhook_deliveries_total{webhook="retrying",outcome="delivered"} 2');
    expect(counted).toContain('sigil_webhook_deliveries_total{webhook="retrying",outcome="retried"} 2');
  });

  it('disables a webhook whose receiver answers 410, until an admin enables it again', async () => {
    const r = await receiver();
    await hook('gone', r, ['client.created']);
    r.replies = [410];
    await newClient();
    const failed = await settled(
      () => log('gone'),
      (l) => l.deliveries[0]?.status === 'failed',
    );
    expect(failed.deliveries[0]).toMatchObject({ status: 'failed', attempts: 1, lastStatusCode: 410 });
    const disabled = await api('GET', '/webhooks/gone');
    expect(disabled.body.webhook).toMatchObject({
      enabled: false,
      disabled: { reason: 'the receiver answered 410 Gone' },
    });
    await newClient();
    await sleep(1500);
    expect((await log('gone')).deliveries).toHaveLength(1);
    expect(r.received).toHaveLength(1);

    const enabled = await api('PATCH', '/webhooks/gone', { enabled: true }, { 'if-match': disabled.etag ?? '' });
    expect(enabled.status, enabled.text).toBe(200);
    expect(enabled.body.webhook).toMatchObject({ enabled: true });
    await newClient();
    await settled(
      async () => r.verified().length,
      (n) => n === 2,
    );
    expect(r.verified()).toHaveLength(2);
  });

  it('pages the delivery log, retries a delivery, and pings', async () => {
    const r = await receiver();
    await hook('logged', r, ['client.created']);
    await newClient();
    await newClient();
    await settled(
      async () => r.verified().length,
      (n) => n === 2,
    );
    const page = await log('logged', '?limit=1');
    expect(page.deliveries).toHaveLength(1);
    expect(page.next).toBeDefined();
    const rest = await log('logged', `?limit=1&cursor=${page.next}`);
    expect(rest.deliveries).toHaveLength(1);
    expect(rest.deliveries[0]?.id).not.toBe(page.deliveries[0]?.id);
    expect((await log('logged', `?limit=1&cursor=${rest.next ?? 'x'}`)).deliveries ?? []).toHaveLength(0);
    expect((await api('GET', '/webhooks/logged/deliveries?cursor=AA')).status).toBe(422);
    expect((await log('logged', '?status=failed')).deliveries).toHaveLength(0);

    const id = page.deliveries[0]?.id ?? '';
    const retried = await api('POST', `/webhooks/logged/deliveries/${id}/retry`);
    expect(retried.status, retried.text).toBe(200);
    expect(retried.body.delivery).toMatchObject({ id, status: 'pending' });
    await settled(
      async () => r.received.filter((x) => x.id === id).length,
      (n) => n === 2,
    );
    expect(r.received.filter((x) => x.id === id && x.verified)).toHaveLength(2);
    expect((await api('POST', '/webhooks/logged/deliveries/msg_nothing/retry')).status).toBe(404);
    expect((await api('POST', '/webhooks/nothing/deliveries/x/retry')).status).toBe(404);

    const ping = await api('POST', '/webhooks/logged/ping');
    expect(ping.status, ping.text).toBe(200);
    expect(ping.body.delivery).toMatchObject({
      type: 'webhook.ping',
      status: 'delivered',
      attempts: 1,
      lastStatusCode: 204,
    });
    expect(r.verified().at(-1)).toMatchObject({ type: 'webhook.ping', data: { webhook: 'logged' } });
  });

  it('times out a receiver that hangs, and does not read a huge answer', async () => {
    const r = await receiver();
    await hook('slow', r, ['client.created']);
    r.replies = ['hang', 'huge'];
    await newClient();
    const retried = await settled(
      () => log('slow'),
      (l) => (l.deliveries[0]?.attempts ?? 0) >= 1,
    );
    expect(retried.deliveries[0]).toMatchObject({ status: 'pending', attempts: 1, lastStatusCode: null });
    expect(retried.deliveries[0]?.lastError).toMatch(/no complete answer within 2 s/);
    const pending = await scrape();
    expect(pending).toContain('sigil_webhook_pending{webhook="slow"} 1');
    expect(pending).toMatch(/sigil_webhook_oldest_pending_age_seconds\{webhook="slow"\} \d/);
    const delivered = await settled(
      () => log('slow'),
      (l) => l.deliveries[0]?.status === 'delivered',
    );
    expect(delivered.deliveries[0]).toMatchObject({ status: 'delivered', attempts: 2, lastStatusCode: 200 });
  });

  it('bounds a body: past 256 KiB an event keeps its plain members and says it is truncated', async () => {
    const r = await receiver();
    await hook('bounded', r, ['user.updated']);
    const created = await api('POST', '/users', { username: 'long-claims' });
    let etag = created.etag ?? '';
    const subject = String(created.body.subjectId);
    for (let i = 0; i < 6; i++) {
      const patched = await api(
        'PATCH',
        `/users/${subject}`,
        { claims: { [`c${i}`]: 'x'.repeat(48_000) } },
        { 'if-match': etag },
      );
      expect(patched.status, patched.text).toBe(200);
      etag = patched.etag ?? '';
    }
    const bodies = await settled(
      async () => r.verified(),
      (v) => v.length === 6,
    );
    expect(bodies[0]?.data).toMatchObject({ subject, username: 'long-claims', claims: { c0: 'x'.repeat(48_000) } });
    expect(bodies[5]?.data).toEqual({
      subject,
      username: 'long-claims',
      tenant: null,
      externalId: null,
      active: true,
      truncated: true,
    });
    expect(Math.max(...r.received.map((x) => x.body.length))).toBeLessThanOrEqual(256 * 1024);
  });

  it('refuses URLs of special-use addresses, and never connects to a private one', async () => {
    for (const target of [
      'https://169.254.169.254/latest/meta-data',
      'https://10.0.0.5/hook',
      'https://[fd00::1]/hook',
      'https://[::ffff:10.0.0.1]/hook',
      'http://hooks.example/hook',
      'ftp://127.0.0.1/hook',
    ]) {
      const res = await api('POST', '/webhooks', { name: 'ssrf', url: target, events: ['*'] });
      expect(res.status, target).toBe(422);
      expect(res.text).toContain('url');
    }
    // The config file's webhook to 192.168.7.7: the guard refuses it at each attempt.
    await newClient();
    expect((await api('DELETE', `/clients/client-${clients}`)).status).toBe(204);
    const refused = await settled(
      () => log('private'),
      (l) => (l.deliveries[0]?.attempts ?? 0) >= 1,
    );
    expect(refused.deliveries[0]).toMatchObject({ status: 'pending', lastStatusCode: null });
    expect(refused.deliveries[0]?.lastError).toMatch(/private, loopback or other special-use address/);
  });

  it('shows a secret once, never in a GET answer or an audit event, and signs with both during a rotation', async () => {
    const r = await receiver();
    const created = await hook('rotating', r, ['client.created']);
    const first = String(created.body.secret);
    expect(first).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(Buffer.from(first.slice(6), 'base64')).toHaveLength(32);
    const rotated = await api('POST', '/webhooks/rotating/secret', { graceSeconds: 3600 });
    expect(rotated.status, rotated.text).toBe(200);
    const second = String(rotated.body.secret);
    expect(second).not.toBe(first);
    expect((rotated.body.webhook as { retiringSecretsExpireAt: number[] }).retiringSecretsExpireAt).toHaveLength(1);

    // During the grace period both secrets sign: a receiver holding either one accepts.
    r.secrets = [first];
    await api('POST', '/webhooks/rotating/ping');
    expect(r.received.at(-1)?.signature.split(' ')).toHaveLength(2);
    expect(r.received.at(-1)?.verified).toBeDefined();
    r.secrets = [second];
    await api('POST', '/webhooks/rotating/ping');
    expect(r.received.at(-1)?.verified).toBeDefined();

    // Without a grace period the replaced secret stops signing at once (the first one keeps its grace).
    const third = String((await api('POST', '/webhooks/rotating/secret', { graceSeconds: 0 })).body.secret);
    r.secrets = [second];
    await api('POST', '/webhooks/rotating/ping');
    expect(r.received.at(-1)?.signature.split(' ')).toHaveLength(2);
    expect(r.received.at(-1)?.verified).toBeUndefined();
    r.secrets = [third];
    await api('POST', '/webhooks/rotating/ping');
    expect(r.received.at(-1)?.verified).toBeDefined();

    const answers = [
      (await api('GET', '/webhooks')).text,
      (await api('GET', '/webhooks/rotating')).text,
      (await api('GET', '/webhooks/configured')).text,
      (await api('GET', '/webhooks/rotating/deliveries')).text,
      // Audit events are stored a second at a time.
      await settled(
        async () => (await api('GET', '/events?type=admin_changed&limit=200')).text,
        (text) => text.includes('webhook.rotate_secret'),
      ),
    ];
    for (const text of answers) {
      for (const secret of [first, second, third, CONFIG_SECRET]) expect(text).not.toContain(secret);
      expect(text).not.toContain('whsec_');
    }
    expect(answers[4]).toContain('webhook.rotate_secret');
  });

  it('needs If-Match, keeps config-file webhooks read-only but for enabled, and answers problem+json', async () => {
    const r = await receiver();
    const created = await hook('managed', r, ['user.created']);
    expect((await api('PATCH', '/webhooks/managed', { events: ['*'] })).status).toBe(428);
    expect((await api('PATCH', '/webhooks/managed', { events: ['*'] }, { 'if-match': '"stale"' })).status).toBe(412);
    const changed = await api('PATCH', '/webhooks/managed', { events: ['*'] }, { 'if-match': created.etag ?? '' });
    expect(changed.status, changed.text).toBe(200);
    expect(changed.body.webhook).toMatchObject({ events: ['*'], source: 'store', enabled: true });
    expect((await api('DELETE', '/webhooks/managed', undefined, { 'if-match': created.etag ?? '' })).status).toBe(412);
    expect((await api('DELETE', '/webhooks/managed', undefined, { 'if-match': changed.etag ?? '' })).status).toBe(204);
    expect((await api('GET', '/webhooks/managed')).status).toBe(404);
    // A name no webhook can have is not found by the service itself, whoever calls it (PostgreSQL refuses a NUL).
    await expect(sigil.context.management.webhooks.get('a\u0000b')).rejects.toMatchObject({ code: 'not_found' });

    const configured = await api('GET', '/webhooks/configured');
    expect(configured.body.webhook).toMatchObject({ source: 'config', enabled: true });
    const readOnly = await api(
      'PATCH',
      '/webhooks/configured',
      { url: 'https://elsewhere.example/' },
      { 'if-match': configured.etag ?? '' },
    );
    expect(readOnly.status).toBe(409);
    const off = await api('PATCH', '/webhooks/configured', { enabled: false }, { 'if-match': configured.etag ?? '' });
    expect(off.status, off.text).toBe(200);
    expect(off.body.webhook).toMatchObject({ enabled: false });
    expect((await api('PATCH', '/webhooks/configured', { enabled: true }, { 'if-match': off.etag ?? '' })).status).toBe(
      200,
    );
    expect((await api('DELETE', '/webhooks/configured')).status).toBe(409);
    expect((await api('POST', '/webhooks/configured/secret', {})).status).toBe(409);

    const refusals = [
      await api('POST', '/webhooks', { name: 'configured', url: `${r.url}/x`, events: ['*'] }),
      await api('POST', '/webhooks', { name: 'with-secret', url: `${r.url}/x`, events: ['*'], secret: CONFIG_SECRET }),
      await api('POST', '/webhooks', { name: 'bad-events', url: `${r.url}/x`, events: ['user.exploded'] }),
      await api('POST', '/webhooks', { name: 'Bad Name', url: `${r.url}/x`, events: ['*'] }),
      await api('GET', '/webhooks/nothing'),
    ];
    expect(refusals.map((x) => x.status)).toEqual([409, 422, 422, 422, 404]);
    for (const x of refusals) expect(x.body).toMatchObject({ type: 'about:blank', status: x.status });
    // A read-only token reads webhooks (never a secret) and changes none; no token gets nothing.
    const reader = adminApi(
      sigil,
      (await clientTokens(sigil, 'sigil:admin:read', ['auditor', 'auditor-secret'])).access_token,
    );
    expect((await reader('GET', '/webhooks')).status).toBe(200);
    expect((await reader('GET', '/webhooks/configured/deliveries')).status).toBe(200);
    for (const [method, path] of [
      ['POST', '/webhooks'],
      ['PATCH', '/webhooks/configured'],
      ['POST', '/webhooks/configured/ping'],
      ['POST', '/webhooks/configured/secret'],
      ['POST', '/webhooks/configured/deliveries/x/retry'],
    ] as const)
      expect((await reader(method, path, {}, { 'if-match': '*' })).status, path).toBe(403);
    expect((await adminApi(sigil, 'not-a-token')('GET', '/webhooks')).status).toBe(401);
    const document = await sigil.app.inject({ method: 'GET', url: '/admin/v1/openapi.json' });
    const paths = Object.keys((document.json() as { paths: Record<string, unknown> }).paths);
    for (const path of [
      '/admin/v1/webhooks',
      '/admin/v1/webhooks/{name}',
      '/admin/v1/webhooks/{name}/secret',
      '/admin/v1/webhooks/{name}/deliveries',
      '/admin/v1/webhooks/{name}/deliveries/{id}/retry',
      '/admin/v1/webhooks/{name}/ping',
    ])
      expect(paths).toContain(path);
  });
});
