/**
 * The console's client pages in a real Chromium, on SQLite and on PostgreSQL: the list, the
 * creation page and a client's page are separate pages; creating without a grant type is refused
 * on that field (`aria-invalid`, its message by `aria-describedby`), what was typed kept; a
 * created client's page edits every setting (the CIBA ones, `authorizationDetailsTypes`,
 * `idJagAudiences` as JSON, `organizationUsage`, lifetimes in seconds), each with the schema's
 * description as help; a refused setting is marked on its field, JSON that does not parse too;
 * a stale form is refused and the page then shows the current values; the client is deleted after
 * a confirmation page; each change is audited as `admin_changed` with the admin as actor; a
 * config-file client is read-only. Every page is axe-clean and none scrolls sideways at 390 px.
 */
import type { Browser, Page, Response } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SigilEvent } from '../../src/events/events.js';
import { dropSchema, POSTGRES_URL, startSigil, testConfig, type TestSigil, uniqueSchema } from '../helpers.js';
import { audit } from './accessibility.js';
import { launchChromium, newPage, screenshot, signInEnrollingTotp } from './browser-fixture.js';
import { freePort } from './ports.js';

const CIBA = 'urn:openid:params:grant-type:ciba';

/** A console page's checks: uncached, unframeable, axe-clean with the basics; its screenshot. */
async function check(page: Page, response: Response | null, name: string): Promise<void> {
  await page.locator('h1').waitFor();
  if (response) {
    expect(response.headers()['cache-control'], name).toContain('no-store');
    expect(response.headers()['content-security-policy'], name).toContain("frame-ancestors 'none'");
  }
  expect(await audit(page), name).toEqual([]);
  await screenshot(page, `console-${name}`);
}

/** Whether the page scrolls sideways. */
function scrollsSideways(page: Page): Promise<boolean> {
  return page.evaluate(() => document.documentElement.scrollWidth > document.documentElement.clientWidth);
}

describe.each(['sqlite', 'postgres'] as const)('the console client pages on %s', (dialect) => {
  const schema = uniqueSchema('consoleclients');
  let browser: Browser;
  let sigil: TestSigil;
  let url: string;
  let admin: Page;
  const events: SigilEvent[] = [];

  beforeAll(async () => {
    const port = await freePort();
    url = `http://127.0.0.1:${port}`;
    const base = testConfig();
    [browser, sigil] = await Promise.all([
      launchChromium(),
      startSigil({
        issuer: url,
        ...(dialect === 'postgres' ? { storage: `${POSTGRES_URL}?schema=${schema}` } : {}),
        users: (base.users ?? []).map((u) =>
          u.username === 'alice' ? { ...u, claims: { ...u.claims, role: ['admin', 'sigil-admin'] } } : u,
        ),
        apiResources: [
          ...(base.apiResources ?? []),
          {
            name: 'payments',
            scopes: ['payments'],
            authorizationDetailsTypes: [{ type: 'payment_initiation', schema: { type: 'object' } }],
          },
        ],
        apiScopes: [...(base.apiScopes ?? []), { name: 'payments' }],
      }),
    ]);
    sigil.subscribe((e) => void events.push(e));
    await sigil.app.listen({ host: '127.0.0.1', port });
    admin = (await newPage(browser, { viewport: { width: 1000, height: 700 } })).page;
    admin.setDefaultTimeout(10_000);
    await admin.goto(`${url}/admin`);
    await signInEnrollingTotp(admin);
    await admin.waitForURL(/\/admin\/users$/);
  }, 60_000);
  afterAll(async () => {
    await Promise.allSettled([browser?.close(), sigil?.close()]);
    if (dialect === 'postgres') await dropSchema(schema);
  });

  /** The `admin_changed` actions on client `id`, in order. */
  const actions = (id: string) =>
    events.filter((e) => e.name === 'admin_changed' && e.target?.id === id).map((e) => e.action);

  it('lists the clients and leads to the creation page, which refuses a missing grant type on its field', async () => {
    const list = await admin.goto(`${url}/admin/clients`);
    await check(admin, list, `clients-${dialect}`);
    expect(await admin.locator('table').textContent()).toContain('sigil-console');
    await admin.getByRole('link', { name: 'New client' }).click();
    await admin.waitForURL(`${url}/admin/clients/new`);
    const created = await admin.reload();
    await check(admin, created, `client-new-${dialect}`);

    await admin.getByLabel('clientId').fill('console-made');
    await admin.getByLabel('Redirect URIs').fill('https://app.example/cb');
    await admin.getByRole('button', { name: 'Create', exact: true }).click();
    await admin.locator('#f-allowedGrantTypes-error').waitFor();
    const box = admin.getByLabel('authorization_code', { exact: true });
    expect(await box.getAttribute('aria-invalid')).toBe('true');
    expect(await box.getAttribute('aria-describedby')).toContain('f-allowedGrantTypes-error');
    // Only the refused field is marked.
    expect(await admin.locator('#f-redirectUris').getAttribute('aria-invalid')).toBeNull();
    expect(await admin.locator('#f-redirectUris').inputValue()).toBe('https://app.example/cb');
    expect(await admin.locator('#form-error').textContent()).toContain('The change was not made:');
    expect(await audit(admin)).toEqual([]);
    expect(await sigil.context.management.clients.list()).not.toContainEqual(
      expect.objectContaining({ clientId: 'console-made' }),
    );

    await box.check();
    await admin.getByLabel(CIBA).check();
    await admin.getByLabel('Scopes').fill('openid payments');
    await admin.getByRole('button', { name: 'Create', exact: true }).click();
    await admin.getByText('The client has been created.').waitFor();
    expect(((await admin.locator('#client-secret').textContent()) ?? '').length).toBeGreaterThanOrEqual(32);
    await check(admin, null, `client-${dialect}`);
    expect(actions('console-made')).toEqual(['client.create']);
  });

  it("edits every kind of setting, each refused one marked on its field, with the schema's help", async () => {
    const page = await admin.goto(`${url}/admin/clients/console-made`);
    await check(admin, page, `client-edit-${dialect}`);
    // The help is the config schema's description, not a copy.
    expect(await admin.locator('#f-backchannelTokenDeliveryMode-help').textContent()).toContain(
      'How a CIBA client learns',
    );
    expect(await admin.locator('#f-backchannelTokenDeliveryMode').getAttribute('aria-describedby')).toBe(
      'f-backchannelTokenDeliveryMode-help',
    );

    // The ping mode needs a notification endpoint: refused on that field, what was typed kept.
    await admin.locator('#f-backchannelTokenDeliveryMode').selectOption('ping');
    await admin.locator('#f-organizationUsage').selectOption('allow');
    await admin.locator('#f-accessTokenLifetime').fill('600');
    await admin.locator('#f-authorizationDetailsTypes').fill('payment_initiation');
    await admin.locator('#f-idJagAudiences').fill('[{"issuer": "https://as.example", "clientId": "at-as"}]');
    await admin.getByRole('button', { name: 'Save' }).click();
    const endpoint = admin.locator('#f-backchannelClientNotificationEndpoint');
    await admin.locator('#f-backchannelClientNotificationEndpoint-error').waitFor();
    expect(await endpoint.getAttribute('aria-invalid')).toBe('true');
    expect(await endpoint.getAttribute('aria-describedby')).toContain('f-backchannelClientNotificationEndpoint-error');
    expect(await admin.locator('#f-accessTokenLifetime').inputValue()).toBe('600');
    expect(await admin.locator('#f-backchannelTokenDeliveryMode').inputValue()).toBe('ping');
    expect(await audit(admin)).toEqual([]);

    // JSON that does not parse is refused on its field, before the service is asked.
    await endpoint.fill('https://client.example/ping');
    await admin.locator('#f-idJagAudiences').fill('[{"issuer": ');
    await admin.getByRole('button', { name: 'Save' }).click();
    await admin.locator('#f-idJagAudiences-error').waitFor();
    expect(await admin.locator('#f-idJagAudiences').getAttribute('aria-invalid')).toBe('true');
    expect(await endpoint.getAttribute('aria-invalid')).toBeNull();

    await admin.locator('#f-idJagAudiences').fill('[{"issuer": "https://as.example", "clientId": "at-as"}]');
    await admin.getByRole('button', { name: 'Save' }).click();
    await admin.getByText('The client has been saved.').waitFor();
    expect(admin.url()).toBe(`${url}/admin/clients/console-made?done=consoleClientSaved`);
    const { client } = await sigil.context.management.clients.get('console-made');
    expect(client).toMatchObject({
      backchannelTokenDeliveryMode: 'ping',
      backchannelClientNotificationEndpoint: 'https://client.example/ping',
      organizationUsage: 'allow',
      accessTokenLifetime: 600,
      authorizationDetailsTypes: ['payment_initiation'],
      idJagAudiences: [{ issuer: 'https://as.example', clientId: 'at-as' }],
      allowedGrantTypes: ['authorization_code', CIBA],
      allowedScopes: ['openid', 'payments'],
    });
    // Settings left as shown are not written (their defaults stay defaults).
    expect(client).not.toHaveProperty('requirePkce');
    const update = [...events].reverse().find((e) => e.name === 'admin_changed' && e.action === 'client.update');
    expect(update).toMatchObject({
      target: { type: 'client', id: 'console-made' },
      subjectId: '1',
      clientId: 'sigil-console',
    });
    expect(Object.keys((update as { changes: object }).changes).sort()).toEqual(
      [
        'accessTokenLifetime',
        'authorizationDetailsTypes',
        'backchannelClientNotificationEndpoint',
        'backchannelTokenDeliveryMode',
        'idJagAudiences',
        'organizationUsage',
      ].sort(),
    );

    // An emptied lifetime goes back to the default.
    await admin.locator('#f-accessTokenLifetime').fill('');
    await admin.getByRole('button', { name: 'Save' }).click();
    // The page before showed the same notice: the new one is told by its value.
    await admin.locator('#f-accessTokenLifetime[value="3600"]').waitFor();
    expect((await sigil.context.management.clients.get('console-made')).client).not.toHaveProperty(
      'accessTokenLifetime',
    );
  });

  it('refuses a stale form and shows the current values', async () => {
    await admin.goto(`${url}/admin/clients/console-made`);
    // Another admin renames the client meanwhile, through the same service.
    const { etag } = await sigil.context.management.clients.get('console-made');
    await sigil.context.management.clients.update('console-made', { clientName: 'Renamed elsewhere' }, etag);
    await admin.locator('#f-clientName').fill('Mine');
    await admin.getByRole('button', { name: 'Save' }).click();
    await admin.getByText('has changed since this page was loaded').waitFor();
    expect(await admin.locator('#f-clientName').inputValue()).toBe('Renamed elsewhere');
    expect((await sigil.context.management.clients.get('console-made')).client.clientName).toBe('Renamed elsewhere');
    // Saved again from the page now shown, it goes through.
    await admin.locator('#f-clientName').fill('Mine');
    await admin.getByRole('button', { name: 'Save' }).click();
    await admin.getByText('The client has been saved.').waitFor();
    expect((await sigil.context.management.clients.get('console-made')).client.clientName).toBe('Mine');
  });

  it('does not scroll sideways at 390 px', async () => {
    await admin.setViewportSize({ width: 390, height: 844 });
    try {
      for (const path of [
        '/admin/clients',
        '/admin/clients/new',
        '/admin/clients/console-made',
        '/admin/clients/console-made/delete',
      ]) {
        await admin.goto(`${url}${path}`);
        expect(await scrollsSideways(admin), path).toBe(false);
        expect(await audit(admin), path).toEqual([]);
      }
    } finally {
      await admin.setViewportSize({ width: 1000, height: 700 });
    }
  });

  it('deletes the client after a confirmation page', async () => {
    await admin.goto(`${url}/admin/clients/console-made`);
    await admin.getByRole('link', { name: 'Delete this client' }).click();
    await admin.waitForURL(`${url}/admin/clients/console-made/delete`);
    const confirm = await admin.reload();
    await check(admin, confirm, `client-delete-${dialect}`);
    // Reaching the confirmation changed nothing.
    expect((await sigil.context.management.clients.get('console-made')).source).toBe('store');
    await admin.getByRole('button', { name: 'Delete the client' }).click();
    await admin.getByText('The client has been deleted.').waitFor();
    expect(admin.url()).toBe(`${url}/admin/clients?done=consoleClientDeleted`);
    expect(await admin.locator('table').textContent()).not.toContain('console-made');
    await expect(sigil.context.management.clients.get('console-made')).rejects.toThrow();
    expect(actions('console-made').at(-1)).toBe('client.delete');
  });

  it('shows a config-file client read-only, every setting listed, with no form and no delete', async () => {
    const page = await admin.goto(`${url}/admin/clients/sigil-console`);
    await check(admin, page, `client-config-${dialect}`);
    await admin.getByText('This client is defined in the config file').waitFor();
    await expect(admin.locator('form[action*="/admin/clients/"]').count()).resolves.toBe(0);
    expect(await admin.locator('main dl').last().textContent()).toContain('redirectUris');
    // Its delete page is its read-only page, and a forged delete is refused.
    await admin.goto(`${url}/admin/clients/sigil-console/delete`);
    await admin.getByText('This client is defined in the config file').waitFor();
  });
});
