/**
 * The console's SAML service provider pages over HTTP with a console session (on SQLite and
 * PostgreSQL): the list shows every SP with its ACS URLs and source under its own navigation entry;
 * an SP is registered by pasting its metadata (and signs a user in at once), or from its metadata
 * URL (a loopback server, fetched once), or from its settings; a refused field is marked on the
 * field (`aria-invalid`, `aria-describedby`) with a 4xx page, nothing stored; a config-file SP is
 * read-only (no edit or delete form; a forged one is 409); a stored one is changed by its edit
 * form and deleted, each with the version its page was read at (412 when stale). Every POST without the CSRF token is a 403 that changes
 * nothing; every change is an `admin_changed` event naming the console client and the admin.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SigilEvent } from '../../src/events/events.js';
import { type Browser, input, type Step, startAuthorizeSigil } from '../authorize-helpers.js';
import {
  CONSOLE_ROOT,
  consoleBrowser,
  consoleChanges,
  consolePage,
  consoleSubmit,
  postFields,
} from '../console-helpers.js';
import { dropSchema, POSTGRES_URL, testConfig, type TestSigil, uniqueSchema } from '../helpers.js';
import { ssoThrough } from '../saml-admin-helpers.js';
import { SP_ACS, SP_ENTITY, spMetadata } from '../saml-helpers.js';

const LIST = '/admin/saml-service-providers';
const PASTED = 'https://pasted.example/sp';
const PASTED_ACS = 'https://pasted.example/acs';
const at = (entityId: string) => `${LIST}/${encodeURIComponent(entityId)}`;

describe.each(['sqlite', 'postgres'] as const)('the console SAML pages on %s', (dialect) => {
  const schema = uniqueSchema('consolesaml');
  let sigil: TestSigil;
  let admin: Browser;
  const events: SigilEvent[] = [];

  beforeAll(async () => {
    const base = testConfig();
    sigil = await startAuthorizeSigil([], {
      users: [...base.users!, CONSOLE_ROOT],
      saml: { enabled: true },
      samlServiceProviders: [{ entityId: SP_ENTITY, metadataXml: spMetadata(SP_ENTITY, [SP_ACS]) }],
      clientIdMetadataDocuments: { allowLoopback: true },
      ...(dialect === 'postgres' ? { storage: `${POSTGRES_URL}?schema=${schema}` } : {}),
    });
    sigil.subscribe((e) => void events.push(e));
    admin = await consoleBrowser(sigil, 'root');
  });
  afterAll(async () => {
    await sigil?.close();
    if (dialect === 'postgres') await dropSchema(schema);
  });

  const page = (url: string): Promise<Step> => consolePage(admin, url);
  const submit = (from: string, url: string, fields: [string, string][]): Promise<Step> =>
    consoleSubmit(admin, from, url, fields);

  it('lists every SP with its ACS URLs and source, under its own navigation entry', async () => {
    const list = await page(LIST);
    expect(list.headers['cache-control']).toContain('no-store');
    expect(list.body).toContain(`<a href="${LIST}" aria-current="page">SAML</a>`);
    expect(list.body).toContain(`<a href="${at(SP_ENTITY)}">${SP_ENTITY}</a>`);
    expect(list.body).toContain(`<code>${SP_ACS}</code>`);
    expect(list.body).toContain('Config file (read-only)');
    expect(list.body).toContain('name="metadataXml"');
    expect(list.body).toContain('name="metadataUrl"');
  });

  it('registers an SP from its pasted metadata, which signs a user in at once; audited', async () => {
    const created = await submit(LIST, LIST, [
      ['metadataXml', spMetadata(PASTED, [PASTED_ACS])],
      ['signResponse', 'yes'],
      ['signAssertion', 'yes'],
      ['button', 'create'],
    ]);
    expect(created.status, created.body).toBe(303);
    expect(created.location).toBe(`${at(PASTED)}?done=consoleSamlCreated`);
    const shown = await page(created.location ?? '');
    expect(shown.body).toContain('The service provider has been registered');
    expect(shown.body).toContain(`<code>${PASTED_ACS}</code>`);
    expect(shown.body).toContain('value="delete"');
    expect((await ssoThrough(sigil, PASTED, PASTED_ACS)).action).toBe(PASTED_ACS);
    const audited = consoleChanges(events, 'saml_service_provider.create');
    expect(audited).toHaveLength(1);
    expect(audited[0]?.target).toEqual({ type: 'saml_service_provider', id: PASTED });
    expect(audited[0]?.changes).toMatchObject({ metadataXml: '(set)' });
  });

  it('registers an SP from its metadata URL, and from its settings', async () => {
    const fetched = 'https://fetched.example/sp';
    const server = createServer((_req, res) => res.end(spMetadata(fetched, ['https://fetched.example/acs'])));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const metadataUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/metadata`;
      const created = await submit(LIST, LIST, [
        ['metadataUrl', metadataUrl],
        ['signAssertion', 'yes'],
      ]);
      expect(created.status, created.body).toBe(303);
      expect(created.location).toBe(`${at(fetched)}?done=consoleSamlCreated`);
    } finally {
      server.close();
    }
    const typed = await submit(LIST, LIST, [
      ['entityId', 'https://typed.example/sp'],
      ['acsUrls', 'https://typed.example/acs\r\nhttps://typed.example/acs2'],
      ['displayName', 'Typed App'],
      ['nameIdFormat', 'emailAddress'],
      ['attributes', 'mail = email\r\nrole=role'],
      ['signAssertion', 'yes'],
      ['requireConsent', 'yes'],
    ]);
    expect(typed.status, typed.body).toBe(303);
    const shown = await page(typed.location ?? '');
    expect(shown.body).toContain('<h1>Typed App</h1>');
    expect(shown.body).toContain('<code>https://typed.example/acs2</code>');
    expect(shown.body).toContain('<code>mail = email</code>');
    expect(shown.body).toContain('<code>emailAddress</code>');
  });

  it('marks a refused field on the field, with a 4xx page, storing nothing', async () => {
    const refused = await submit(LIST, LIST, [
      ['entityId', 'https://refused.example/sp'],
      ['acsUrls', 'javascript:alert(1)'],
      ['signAssertion', 'yes'],
    ]);
    expect(refused.status).toBe(400);
    expect(refused.body).toMatch(/id="sp-acs-urls"[^>]*aria-describedby="sp-acs-urls-error" aria-invalid="true"/);
    expect(refused.body).toContain('<p class="alert" id="sp-acs-urls-error">');
    // What was typed is kept.
    expect(refused.body).toContain('value="https://refused.example/sp"');
    const dtd = await submit(LIST, LIST, [
      ['metadataXml', `<!DOCTYPE x [<!ENTITY e "e">]>${spMetadata('https://dtd.example/sp', [PASTED_ACS])}`],
    ]);
    expect(dtd.status).toBe(400);
    expect(dtd.body).toMatch(/id="sp-metadata-xml"[^>]*aria-describedby="sp-metadata-xml-error" aria-invalid="true"/);
    const ssrf = await submit(LIST, LIST, [['metadataUrl', 'https://169.254.169.254/metadata']]);
    expect(ssrf.status).toBe(400);
    expect(ssrf.body).toMatch(/id="sp-metadata-url"[^>]*aria-invalid="true"/);
    const unsigned = await submit(LIST, LIST, [
      ['entityId', 'https://unsigned.example/sp'],
      ['acsUrls', 'https://unsigned.example/acs'],
    ]);
    expect(unsigned.status).toBe(400);
    expect(unsigned.body).toMatch(
      /id="sp-signAssertion"[^>]*aria-describedby="sp-signAssertion-error" aria-invalid="true"/,
    );
    const list = await page(LIST);
    for (const sp of ['refused', 'dtd', 'unsigned']) expect(list.body).not.toContain(`https://${sp}.example/sp`);
  });

  it('shows a config-file SP read-only and refuses its deletion with 409', async () => {
    const shown = await page(at(SP_ENTITY));
    expect(shown.body).toContain('defined in the config file');
    expect(shown.body).not.toContain('value="delete"');
    expect(shown.body).not.toContain('value="save"');
    const edit = await submit(at(SP_ENTITY), at(SP_ENTITY), [
      ['etag', '*'],
      ['displayName', 'Forged'],
    ]);
    expect(edit.status).toBe(409);
    expect(sigil.context.saml.serviceProviders.get(SP_ENTITY)?.displayName).toBe(SP_ENTITY);
    const forged = await submit(at(SP_ENTITY), `${at(SP_ENTITY)}/delete`, [['etag', '*']]);
    expect(forged.status).toBe(409);
    expect((await admin.get(at('https://nowhere.example/sp'))).status).toBe(404);
  });

  it('changes a stored SP by its edit form at the version its page was read at; 412 when stale', async () => {
    const shown = await page(at(PASTED));
    expect(input(shown.body, 'etag')).toBeTruthy();
    const fields = (etag: string, displayName: string): [string, string][] => [
      ['etag', etag],
      ['metadataXml', spMetadata(PASTED, [PASTED_ACS])],
      ['displayName', displayName],
      ['nameIdFormat', 'transient'],
      ['attributes', 'mail = email'],
      ['signAssertion', 'yes'],
    ];
    const saved = await submit(at(PASTED), at(PASTED), fields(input(shown.body, 'etag'), 'Edited'));
    expect(saved.status, saved.body).toBe(303);
    expect(saved.location).toBe(`${at(PASTED)}?done=consoleSamlSaved`);
    expect(sigil.context.saml.serviceProviders.get(PASTED)).toMatchObject({
      displayName: 'Edited',
      nameIdFormat: 'transient',
      attributes: { mail: 'email' },
      signResponse: false,
    });
    expect(consoleChanges(events, 'saml_service_provider.update')).toHaveLength(1);
    // The etag of the page read before that change is stale now.
    const stale = await submit(at(PASTED), at(PASTED), fields(input(shown.body, 'etag'), 'Stale'));
    expect(stale.status).toBe(412);
    expect(stale.body).toContain('Someone changed this service provider');
    expect(stale.body).toContain('value="Edited"');
    expect(sigil.context.saml.serviceProviders.get(PASTED)?.displayName).toBe('Edited');
  });

  it('deletes a stored SP with the version its page was read at; 412 when stale', async () => {
    const stale = await submit(at(PASTED), `${at(PASTED)}/delete`, [['etag', '"stale"']]);
    expect(stale.status).toBe(412);
    const etag = input((await page(at(PASTED))).body, 'etag');
    const gone = await submit(at(PASTED), `${at(PASTED)}/delete`, [['etag', etag]]);
    expect(gone.status, gone.body).toBe(303);
    expect(gone.location).toBe(`${LIST}?done=consoleSamlDeleted`);
    expect((await page(gone.location ?? '')).body).toContain('The service provider has been deleted.');
    expect((await admin.get(at(PASTED))).status).toBe(404);
    expect(consoleChanges(events, 'saml_service_provider.delete')).toHaveLength(1);
  });

  it('refuses every POST without the CSRF token with 403, changing nothing', async () => {
    const before = events.length;
    for (const [url, fields] of [
      [LIST, [['metadataXml', spMetadata('https://csrf.example/sp', [PASTED_ACS])]]],
      [`${at('https://typed.example/sp')}/delete`, [['etag', '*']]],
      [
        at('https://typed.example/sp'),
        [
          ['etag', '*'],
          ['displayName', 'CSRF'],
        ],
      ],
    ] as [string, [string, string][]][])
      for (const csrf of [[], [['csrf_token', 'not-a-token']]] as [string, string][][]) {
        const res = await postFields(admin, url, [...csrf, ...fields]);
        expect(res.status, url).toBe(403);
      }
    expect(events.length).toBe(before);
    const list = await page(LIST);
    expect(list.body).not.toContain('https://csrf.example/sp');
    expect(list.body).toContain('https://typed.example/sp');
  });
});
