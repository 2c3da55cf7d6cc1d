/**
 * The console's webhook pages over HTTP with a console session and a real receiver (on SQLite and
 * PostgreSQL): the list shows every webhook with its events, state and source; one is created (its
 * signing secret shown on the answer page once, never again, never in an event), pinged (the
 * receiver verifies the signed ping), a delivery retried (the receiver gets the same message id
 * again; a pending one is refused on the page), its secret rotated (shown once; old and new both
 * sign through the grace period), disabled and enabled with the version the page
 * was read at, and deleted; a config-file webhook is read-only but for `enabled`. The delivery log
 * is paged. Every POST without the CSRF token is a 403 that changes nothing; bad input is a 4xx
 * page naming the field, never a 500; every change is an `admin_changed` event naming the console
 * client and the admin.
 */
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SigilEvent } from '../../src/events/events.js';
import { Browser, input, type Step, startAuthorizeSigil, unescapeHtml } from '../authorize-helpers.js';
import { enrollTotp, submitCode, totpCode } from '../mfa-helpers.js';
import {
  CONSOLE_ROOT,
  consoleBrowser,
  consoleChanges,
  consolePage,
  consoleSubmit,
  postFields,
} from '../console-helpers.js';
import { dropSchema, POSTGRES_URL, settled, testConfig, type TestSigil, uniqueSchema } from '../helpers.js';
import { CONFIG_SECRET, SHORT_DELIVERY } from '../webhook-helpers.js';
import { type Receiver, startReceiver } from '../webhook-receiver.js';

const ROOT = CONSOLE_ROOT;

/** The table row of delivery `id` on a webhook's page. */
function deliveryRow(html: string, id: string): string {
  return /<tr>.*?<\/tr>/gs.exec(html.slice(html.indexOf(`<td><code>${id}</code>`) - 4))?.[0] ?? '';
}

describe.each(['sqlite', 'postgres'] as const)('the console webhook pages on %s', (dialect) => {
  const schema = uniqueSchema('consolewh');
  let receiver: Receiver;
  let sigil: TestSigil;
  let admin: Browser;
  const events: SigilEvent[] = [];
  let secret = '';

  beforeAll(async () => {
    receiver = await startReceiver([CONFIG_SECRET]);
    const base = testConfig();
    sigil = await startAuthorizeSigil([], {
      users: [...base.users!, ROOT],
      webhookDelivery: SHORT_DELIVERY,
      webhooks: [
        { name: 'audit-sink', url: `${receiver.url}/config`, events: ['user.created'], secret: CONFIG_SECRET },
      ],
      ...(dialect === 'postgres' ? { storage: `${POSTGRES_URL}?schema=${schema}` } : {}),
    });
    sigil.subscribe((e) => void events.push(e));
    admin = await consoleBrowser(sigil, 'root');
  });
  afterAll(async () => {
    await sigil?.close();
    await receiver?.close();
    if (dialect === 'postgres') await dropSchema(schema);
  });

  const page = (url: string): Promise<Step> => consolePage(admin, url);
  const submit = (from: string, url: string, fields: [string, string][]): Promise<Step> =>
    consoleSubmit(admin, from, url, fields);

  /** The version a webhook's page holds in its forms. */
  async function etagOf(name: string): Promise<string> {
    return input((await page(`/admin/webhooks/${name}`)).body, 'etag');
  }

  it('lists every webhook with its events, state and source, under its own navigation entry', async () => {
    const list = await page('/admin/webhooks');
    expect(list.headers['cache-control']).toContain('no-store');
    expect(list.body).toContain('<a href="/admin/webhooks" aria-current="page">Webhooks</a>');
    expect(list.body).toContain('<a href="/admin/webhooks/audit-sink">audit-sink</a>');
    expect(list.body).toContain(`<code>${receiver.url}/config</code>`);
    expect(list.body).toContain('<td>user.created</td><td>Enabled</td><td>Config file (read-only)</td>');
    // The create form offers every event of the catalogue, and "*".
    expect(list.body).toContain('name="events" value="*"');
    expect(list.body).toContain('name="events" value="user.deleted"');
  });

  it('creates a stored webhook, showing its secret on the answer page once, audited without it', async () => {
    const created = await submit('/admin/webhooks', '/admin/webhooks', [
      ['name', 'hooky'],
      ['url', `${receiver.url}/hooky`],
      ['events', 'user.created'],
      ['events', 'user.deleted'],
      ['button', 'create'],
    ]);
    expect(created.status, created.body).toBe(201);
    expect(created.headers['cache-control']).toContain('no-store');
    expect(created.body).toContain('The webhook has been created.');
    secret = /<code id="webhook-secret">(whsec_[^<]+)<\/code>/.exec(created.body)?.[1] ?? '';
    expect(secret).toMatch(/^whsec_/);
    receiver.secrets.push(unescapeHtml(secret));
    secret = unescapeHtml(secret);
    // Never again: not on its page, not in the list, not in any event.
    const shown = await page('/admin/webhooks/hooky');
    expect(shown.body).not.toContain('webhook-secret');
    expect(shown.body).not.toContain(secret);
    expect(shown.body).toContain('user.created, user.deleted');
    expect((await page('/admin/webhooks')).body).not.toContain(secret);
    const audited = consoleChanges(events, 'webhook.create');
    expect(audited).toHaveLength(1);
    expect(audited[0]?.target).toEqual({ type: 'webhook', id: 'hooky' });
    expect(audited[0]?.changes).toMatchObject({ secret: '(generated)' });
    expect(JSON.stringify(events)).not.toContain(secret.slice('whsec_'.length));
  });

  it('pings: the receiver verifies the signed ping, and the log shows its delivery', async () => {
    const before = receiver.received.length;
    const pinged = await submit('/admin/webhooks/hooky', '/admin/webhooks/hooky/ping', [['button', 'ping']]);
    expect(pinged.status, pinged.body).toBe(303);
    expect(pinged.location).toBe('/admin/webhooks/hooky?done=consoleWebhookPinged');
    const got = receiver.received.slice(before);
    expect(got).toHaveLength(1);
    expect(got[0]?.path).toBe('/hooky');
    expect(got[0]?.verified?.type).toBe('webhook.ping');
    const shown = await page(pinged.location ?? '');
    expect(shown.body).toContain('A ping has been sent');
    const row = deliveryRow(shown.body, got[0]?.id ?? '');
    expect(row).toContain('<code>webhook.ping</code>');
    expect(row).toContain('<td>delivered</td><td>1</td><td>204</td>');
    expect(row).toMatch(/<td>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC<\/td>/);
    expect(row).toContain(`/admin/webhooks/hooky/deliveries/${got[0]?.id}/retry`);
    expect(consoleChanges(events, 'webhook.ping')).toHaveLength(1);
  });

  it("rotates a stored webhook's secret: the new one shown once, both signing through the grace period", async () => {
    const rotated = await submit('/admin/webhooks/hooky', '/admin/webhooks/hooky/secret', [
      ['etag', await etagOf('hooky')],
      ['button', 'rotate'],
    ]);
    expect(rotated.status, rotated.body).toBe(200);
    expect(rotated.headers['cache-control']).toContain('no-store');
    const fresh = unescapeHtml(/<code id="webhook-secret">(whsec_[^<]+)<\/code>/.exec(rotated.body)?.[1] ?? '');
    expect(fresh).toMatch(/^whsec_/);
    expect(fresh).not.toBe(secret);
    expect((await page('/admin/webhooks/hooky')).body).not.toContain(fresh);
    const before = receiver.received.length;
    await submit('/admin/webhooks/hooky', '/admin/webhooks/hooky/ping', [['button', 'ping']]);
    const [ping] = receiver.received.slice(before);
    // A receiver holding either secret alone verifies the delivery: it carries a signature by each.
    const headers = {
      'webhook-id': ping?.id ?? '',
      'webhook-timestamp': ping?.timestamp ?? '',
      'webhook-signature': ping?.signature ?? '',
    };
    for (const s of [secret, fresh])
      expect(new Webhook(s).verify(ping?.body ?? '', headers)).toMatchObject({ type: 'webhook.ping' });
    const audited = consoleChanges(events, 'webhook.rotate_secret');
    expect(audited).toHaveLength(1);
    expect(JSON.stringify(events)).not.toContain(fresh.slice('whsec_'.length));
    // A stale version changes nothing.
    const stale = await submit('/admin/webhooks/hooky', '/admin/webhooks/hooky/secret', [['etag', '"0"']]);
    expect(stale.status).toBe(412);
    expect(stale.body).not.toContain('webhook-secret');
    receiver.secrets.push(fresh);
    secret = fresh;
  });

  it('retries a delivered one (the same message again); a pending one is refused on the page', async () => {
    const id = receiver.received.at(-1)?.id ?? '';
    const retried = await submit('/admin/webhooks/hooky', `/admin/webhooks/hooky/deliveries/${id}/retry`, [
      ['button', 'retry'],
    ]);
    expect(retried.status, retried.body).toBe(303);
    expect(retried.location).toBe('/admin/webhooks/hooky?done=consoleDeliveryRetried');
    const again = await settled(
      async () => receiver.received.filter((r) => r.id === id),
      (got) => got.length === 2,
    );
    expect(again).toHaveLength(2);
    expect(again[1]?.verified?.type).toBe('webhook.ping');
    expect(consoleChanges(events, 'webhook.retry')[0]?.changes).toEqual({ delivery: id });

    // A receiver that fails keeps the next ping pending: no Retry button, and a forged retry is a 409 page.
    receiver.replies = [500, 500, 500, 500, 500, 500];
    await submit('/admin/webhooks/hooky', '/admin/webhooks/hooky/ping', [['button', 'ping']]);
    const pendingId = receiver.received.at(-1)?.id ?? '';
    const shown = await page('/admin/webhooks/hooky');
    expect(deliveryRow(shown.body, pendingId)).toContain('<td>pending (HTTP 500)</td>');
    expect(deliveryRow(shown.body, pendingId)).not.toContain('/retry');
    const refused = await submit('/admin/webhooks/hooky', `/admin/webhooks/hooky/deliveries/${pendingId}/retry`, []);
    expect(refused.status).toBe(409);
    expect(unescapeHtml(refused.body)).toContain(`delivery "${pendingId}" is pending`);
    const unknown = await submit('/admin/webhooks/hooky', '/admin/webhooks/hooky/deliveries/msg_nope/retry', []);
    expect(unknown.status).toBe(404);
    expect(consoleChanges(events, 'webhook.retry')).toHaveLength(1);
  });

  it('disables (pending deliveries fail, ping refused) and enables, with the version the page was read at', async () => {
    const pendingId = receiver.received.at(-1)?.id ?? '';
    const stale = await etagOf('hooky');
    const disabled = await submit('/admin/webhooks/hooky', '/admin/webhooks/hooky/enabled', [
      ['etag', stale],
      ['enabled', 'false'],
    ]);
    expect(disabled.status, disabled.body).toBe(303);
    expect(disabled.location).toBe('/admin/webhooks/hooky?done=consoleWebhookDisabled');
    receiver.replies = [];
    const shown = await page(disabled.location ?? '');
    expect(shown.body).toContain('Disabled (disabled by an admin)');
    expect(shown.body).toContain('value="ping" disabled');
    expect(deliveryRow(shown.body, pendingId)).toContain('<td>failed');
    expect(deliveryRow(shown.body, pendingId)).toContain('/retry');
    expect((await page('/admin/webhooks')).body).toContain('<td>user.created, user.deleted</td><td>Disabled</td>');

    const ping = await submit('/admin/webhooks/hooky', '/admin/webhooks/hooky/ping', []);
    expect(ping.status).toBe(409);
    expect(unescapeHtml(ping.body)).toContain('webhook "hooky" is disabled: enable it first');
    // The form read before the change is refused, nothing changed.
    const staleEnable = await submit('/admin/webhooks/hooky', '/admin/webhooks/hooky/enabled', [
      ['etag', stale],
      ['enabled', 'true'],
    ]);
    expect(staleEnable.status).toBe(412);
    expect((await sigil.context.management.webhooks.get('hooky')).enabled).toBe(false);

    const enabled = await submit('/admin/webhooks/hooky', '/admin/webhooks/hooky/enabled', [
      ['etag', await etagOf('hooky')],
      ['enabled', 'true'],
    ]);
    expect(enabled.location).toBe('/admin/webhooks/hooky?done=consoleWebhookEnabled');
    expect((await sigil.context.management.webhooks.get('hooky')).enabled).toBe(true);
    expect(consoleChanges(events, 'webhook.update').map((e) => e.changes)).toEqual([
      { enabled: false },
      { enabled: true },
    ]);
  });

  it('keeps a config-file webhook read-only but for enabled', async () => {
    const shown = await page('/admin/webhooks/audit-sink');
    expect(shown.body).toContain('defined in the config file');
    expect(shown.body).not.toContain('/admin/webhooks/audit-sink/delete');
    const etag = await etagOf('audit-sink');
    const forged = await submit('/admin/webhooks/audit-sink', '/admin/webhooks/audit-sink/delete', [['etag', etag]]);
    expect(forged.status).toBe(409);
    expect(unescapeHtml(forged.body)).toContain('read-only');
    const off = await submit('/admin/webhooks/audit-sink', '/admin/webhooks/audit-sink/enabled', [
      ['etag', etag],
      ['enabled', 'false'],
    ]);
    expect(off.status).toBe(303);
    expect((await sigil.context.management.webhooks.get('audit-sink')).enabled).toBe(false);
    const on = await submit('/admin/webhooks/audit-sink', '/admin/webhooks/audit-sink/enabled', [
      ['etag', await etagOf('audit-sink')],
      ['enabled', 'true'],
    ]);
    expect(on.status).toBe(303);
    expect((await sigil.context.management.webhooks.list()).map((w) => w.name)).toEqual(['audit-sink', 'hooky']);
  });

  it('pages the delivery log, newest first', async () => {
    await submit('/admin/webhooks', '/admin/webhooks', [
      ['name', 'busy'],
      ['url', `${receiver.url}/busy`],
      ['events', '*'],
    ]);
    const ids: string[] = [];
    for (let i = 0; i < 22; i++) ids.push((await sigil.context.management.webhooks.ping('busy')).id);
    const first = await page('/admin/webhooks/busy');
    expect(first.body).toContain(`<code>${ids[21]}</code>`);
    expect(first.body).not.toContain(`<code>${ids[1]}</code>`);
    const next = unescapeHtml(/<a href="([^"]+)" rel="next">Older deliveries<\/a>/.exec(first.body)?.[1] ?? '');
    expect(next).toMatch(/^\/admin\/webhooks\/busy\?cursor=/);
    const second = await page(next);
    expect(second.body).toContain(`<code>${ids[0]}</code>`);
    expect(second.body).toContain(`<code>${ids[1]}</code>`);
    expect(second.body).not.toContain(`<code>${ids[21]}</code>`);
    expect(second.body).not.toContain('rel="next"');
    // A cursor of no page is refused on the page, never a 500.
    for (const cursor of ['nope', '%00', 'x'.repeat(500)]) {
      const res = await admin.get(`/admin/webhooks/busy?cursor=${cursor}`);
      expect(res.status, cursor).toBe(400);
      expect(unescapeHtml(res.body)).toContain('cursor: not the next of a page');
    }
  });

  it('deletes a stored webhook with its log, audited', async () => {
    const deleted = await submit('/admin/webhooks/busy', '/admin/webhooks/busy/delete', [
      ['etag', await etagOf('busy')],
    ]);
    expect(deleted.status, deleted.body).toBe(303);
    expect(deleted.location).toBe('/admin/webhooks?done=consoleWebhookDeleted');
    const list = await page(deleted.location ?? '');
    expect(list.body).toContain('The webhook has been deleted');
    expect(list.body).not.toContain('/admin/webhooks/busy');
    expect((await admin.get('/admin/webhooks/busy')).status).toBe(404);
    expect(consoleChanges(events, 'webhook.delete').map((e) => e.target)).toEqual([{ type: 'webhook', id: 'busy' }]);
  });

  it('refuses bad input with a 4xx page naming the field, storing nothing, never a 500', async () => {
    const cases: [[string, string][], number, string][] = [
      [
        [
          ['name', 'Bad Name'],
          ['url', `${receiver.url}/x`],
          ['events', '*'],
        ],
        400,
        'name',
      ],
      [
        [
          ['name', 'plain'],
          ['url', 'http://example.com/x'],
          ['events', '*'],
        ],
        400,
        'url',
      ],
      [
        [
          ['name', 'private'],
          ['url', 'https://10.0.0.1/x'],
          ['events', '*'],
        ],
        400,
        'url',
      ],
      [
        [
          ['name', 'noevents'],
          ['url', `${receiver.url}/x`],
        ],
        400,
        'events',
      ],
      [
        [
          ['name', 'odd'],
          ['url', `${receiver.url}/x`],
          ['events', 'no.such'],
        ],
        400,
        'events',
      ],
      [
        [
          ['name', 'starred'],
          ['url', `${receiver.url}/x`],
          ['events', '*'],
          ['events', 'user.created'],
        ],
        400,
        'events',
      ],
      [
        [
          ['name', 'hooky'],
          ['url', `${receiver.url}/x`],
          ['events', '*'],
        ],
        409,
        'name',
      ],
      [
        [
          ['name', 'audit-sink'],
          ['url', `${receiver.url}/x`],
          ['events', '*'],
        ],
        409,
        'name',
      ],
    ];
    for (const [fields, status, field] of cases) {
      const res = await submit('/admin/webhooks', '/admin/webhooks', fields);
      expect(res.status, JSON.stringify(fields)).toBe(status);
      expect(res.body, JSON.stringify(fields)).toContain('role="alert"');
      if (status === 400) expect(res.body).toContain(`id="webhook-${field}-error"`);
      expect(res.body).not.toContain('whsec_');
    }
    expect((await sigil.context.management.webhooks.list()).map((w) => w.name)).toEqual(['audit-sink', 'hooky']);
    for (const value of ['\u0000', 'x'.repeat(5000), '"><script>', '../hooky', '%00', ' ']) {
      const res = await submit('/admin/webhooks', '/admin/webhooks', [
        ['name', value],
        ['url', value],
        ['events', value],
      ]);
      expect(res.status, JSON.stringify(value)).toBeGreaterThanOrEqual(400);
      expect(res.status, JSON.stringify(value)).toBeLessThan(500);
      expect(res.body).not.toContain('"><script>');
    }
    for (const url of ['/admin/webhooks/%00', `/admin/webhooks/${'x'.repeat(500)}`, '/admin/webhooks/nope'])
      for (const action of ['', '/ping', '/enabled', '/delete', '/deliveries/x/retry']) {
        const res = action === '' ? await admin.get(url) : await submit('/admin/webhooks', `${url}${action}`, []);
        expect(res.status, `${url}${action}`).toBeGreaterThanOrEqual(400);
        expect(res.status, `${url}${action}`).toBeLessThan(500);
      }
    for (const id of ['%00', 'x'.repeat(500), 'a%0Ab']) {
      const res = await submit('/admin/webhooks', `/admin/webhooks/hooky/deliveries/${id}/retry`, []);
      expect(res.status, id).toBe(404);
    }
  });

  it('refuses every POST without the CSRF token with 403, changing nothing', async () => {
    const before = await sigil.context.management.webhooks.list();
    const received = receiver.received.length;
    const changed = events.length;
    const id = receiver.received.at(-1)?.id ?? '';
    const fields: [string, string][] = [
      ['name', 'forged'],
      ['url', `${receiver.url}/forged`],
      ['events', '*'],
      ['etag', '*'],
      ['enabled', 'false'],
    ];
    for (const url of [
      '/admin/webhooks',
      '/admin/webhooks/hooky/ping',
      `/admin/webhooks/hooky/deliveries/${id}/retry`,
      '/admin/webhooks/hooky/enabled',
      '/admin/webhooks/hooky/delete',
    ])
      for (const csrf of [[], [['csrf_token', 'not-a-token']]] as [string, string][][]) {
        const res = await postFields(admin, url, [...csrf, ...fields]);
        expect(res.status, url).toBe(403);
      }
    expect(await sigil.context.management.webhooks.list()).toEqual(before);
    expect(receiver.received.length).toBe(received);
    expect(events.slice(changed).filter((e) => e.name === 'admin_changed')).toEqual([]);
  });
});

describe('the console webhook pages for a user without the admin role', () => {
  let sigil: TestSigil;
  beforeAll(async () => {
    const base = testConfig();
    sigil = await startAuthorizeSigil([], { users: [...base.users!, ROOT], webhookDelivery: SHORT_DELIVERY });
  });
  afterAll(async () => sigil?.close());

  it('shows them the "not allowed" page, and lets them create or ping nothing', async () => {
    await sigil.context.management.webhooks.create({ name: 'kept', url: 'https://hooks.example/x', events: ['*'] });
    const bob = new Browser(sigil);
    const enrol = new Browser(sigil);
    await enrol.signIn('bob', 'bob');
    const { secret } = await enrollTotp(enrol);
    let step = await bob.get('/admin/webhooks');
    for (let i = 0; i < 10 && step.status === 303 && step.location; i++) step = await bob.get(step.location);
    step = await bob.follow(await bob.submitLogin(step, 'bob', 'bob'));
    step = await submitCode(bob, step, totpCode(secret, 1));
    for (let i = 0; i < 10 && step.status === 303 && step.location; i++) step = await bob.get(step.location);
    expect(step.status).toBe(403);
    for (const url of ['/admin/webhooks', '/admin/webhooks/kept']) {
      const res = await bob.get(url);
      expect(res.body, url).not.toContain('hooks.example');
    }
    const csrf = input((await bob.get('/account/login')).body, 'csrf_token');
    for (const [url, fields] of [
      ['/admin/webhooks', { name: 'bobs', url: 'https://hooks.example/b', events: '*' }],
      ['/admin/webhooks/kept/delete', { etag: '*' }],
      ['/admin/webhooks/kept/ping', {}],
    ] as const) {
      const res = await bob.post(url, { csrf_token: csrf, ...fields });
      expect(res.status, url).toBe(303);
      expect(res.location, url).toMatch(/^\/connect\/authorize\?/);
    }
    expect((await sigil.context.management.webhooks.list()).map((w) => w.name)).toEqual(['kept']);
  });
});
