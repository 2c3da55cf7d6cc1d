/**
 * SAML service providers managed at run time through /admin/v1/saml-service-providers, over HTTP
 * on SQLite and PostgreSQL: an SP registered from its metadata alone signs a user in through
 * /saml/sso at once; ETags and If-Match (412, 428); the config file's SP is read-only (409); every
 * change audited `saml_service_provider.*`; `metadataUrl` fetched once from a loopback server (the
 * tests' `clientIdMetadataDocuments.allowLoopback`), never from a private or link-local address;
 * and the refusals of hostile or broken input (a DTD, oversized metadata, an ACS URL that is not
 * http(s), a NUL), each a problem answer naming its field, with nothing stored.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SigilEvent } from '../../src/index.js';
import { dropSchema, type TestSigil } from '../helpers.js';
import { Browser } from '../authorize-helpers.js';
import { ISSUER, ssoThrough } from '../saml-admin-helpers.js';
import {
  authnRequest,
  element,
  redirectPath,
  SP_ACS,
  SP_ENTITY,
  spKeys,
  spMetadata,
  statusCodes,
} from '../saml-helpers.js';
import { type Api, DIALECTS, startWebhookSigil } from '../webhook-helpers.js';

const NEW_SP = 'https://stored.example/sp';
const NEW_ACS = 'https://stored.example/acs';
const SUCCESS = 'urn:oasis:names:tc:SAML:2.0:status:Success';
const path = (entityId: string) => `/saml-service-providers/${encodeURIComponent(entityId)}`;

/** A loopback server answering every GET with `body` (its metadata) as XML. */
async function metadataServer(body: () => string): Promise<{ url: string; hits: () => number; server: Server }> {
  let hits = 0;
  const server = createServer((_req, res) => {
    hits++;
    res.writeHead(200, { 'content-type': 'application/samlmetadata+xml' }).end(body());
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/metadata`, hits: () => hits, server };
}

describe.each(DIALECTS)('/admin/v1/saml-service-providers on %s', (dialect, storage) => {
  const url = storage();
  let sigil: TestSigil;
  let api: Api;
  const events: SigilEvent[] = [];

  beforeAll(async () => {
    ({ sigil, api } = await startWebhookSigil(url, {
      saml: { enabled: true },
      samlServiceProviders: [{ entityId: SP_ENTITY, metadataXml: spMetadata(SP_ENTITY, [SP_ACS]) }],
      clientIdMetadataDocuments: { allowLoopback: true },
    }));
    sigil.subscribe((e) => void events.push(e));
  });
  afterAll(async () => {
    await sigil?.close();
    if (url) await dropSchema(new URL(url).searchParams.get('schema') ?? '');
  });

  it('registers an SP from its metadata alone, and signs a user in through it at once', async () => {
    const keys = await spKeys();
    const created = await api('POST', '/saml-service-providers', {
      metadataXml: spMetadata(NEW_SP, [NEW_ACS], keys.certificate),
    });
    expect(created.status, created.text).toBe(201);
    expect(created.etag).toMatch(/^"[\w-]+"$/);
    const sp = created.body.serviceProvider as Record<string, unknown>;
    expect(sp).toMatchObject({
      entityId: NEW_SP,
      source: 'store',
      nameIdFormat: 'persistent',
      effective: { acsUrls: [NEW_ACS], signingCertificates: 1, sloUrl: null },
    });
    const posted = await ssoThrough(sigil, NEW_SP, NEW_ACS);
    expect(posted.action).toBe(NEW_ACS);
    expect(statusCodes(posted.doc)[0]).toBe(SUCCESS);
    expect(element(posted.doc, 'Audience')?.textContent).toBe(NEW_SP);

    const list = await api('GET', '/saml-service-providers');
    expect(
      (list.body.serviceProviders as { entityId: string; source: string }[]).map((s) => [s.entityId, s.source]),
    ).toEqual([
      [SP_ENTITY, 'config'],
      [NEW_SP, 'store'],
    ]);
    const one = await api('GET', path(NEW_SP));
    expect(one.status).toBe(200);
    expect(one.etag).toBe(created.etag);
  });

  it("checks a stored SP's signed requests with the certificate of its metadata", async () => {
    const keys = await spKeys();
    const signer = 'https://signer.example/sp';
    const acs = 'https://signer.example/acs';
    const created = await api('POST', '/saml-service-providers', {
      metadataXml: spMetadata(signer, [acs], keys.certificate, { authnRequestsSigned: true }),
    });
    expect(created.status, created.text).toBe(201);
    expect(created.body.serviceProvider).toMatchObject({
      effective: { requireSignedAuthnRequests: true, signingCertificates: 1 },
    });
    const unsigned = await new Browser(sigil).get(redirectPath(authnRequest(ISSUER, { issuer: signer, acs })));
    expect(unsigned.status).toBe(400);
    const stranger = await spKeys();
    const forged = await new Browser(sigil).get(
      redirectPath(authnRequest(ISSUER, { issuer: signer, acs }), undefined, stranger),
    );
    expect(forged.status).toBe(400);
    const signed = await new Browser(sigil).get(
      redirectPath(authnRequest(ISSUER, { issuer: signer, acs }), undefined, keys),
    );
    expect(signed.status).toBe(303);
  });

  it('changes with If-Match only (428 without, 412 when stale), deletes, and audits each change', async () => {
    events.length = 0;
    const entityId = 'https://versioned.example/sp';
    const created = await api('POST', '/saml-service-providers', {
      entityId,
      acsUrls: ['https://versioned.example/acs'],
      attributes: { mail: 'email' },
    });
    expect(created.status, created.text).toBe(201);
    expect((await api('PATCH', path(entityId), { nameIdFormat: 'emailAddress' })).status).toBe(428);
    const changed = await api(
      'PATCH',
      path(entityId),
      { nameIdFormat: 'emailAddress' },
      { 'if-match': created.etag ?? '' },
    );
    expect(changed.status, changed.text).toBe(200);
    expect(changed.body.serviceProvider).toMatchObject({ nameIdFormat: 'emailAddress' });
    expect(changed.etag).not.toBe(created.etag);
    // New metadata of another entity is refused, not taken as a rename.
    const other = await api(
      'PATCH',
      path(entityId),
      { metadataXml: spMetadata('https://else.example/sp', [NEW_ACS]) },
      { 'if-match': changed.etag ?? '' },
    );
    expect(other.status).toBe(422);
    expect((other.body.errors as { path: string }[])[0]?.path).toBe('metadataXml');
    const renamed = await api('PATCH', path(entityId), { entityId: NEW_SP }, { 'if-match': changed.etag ?? '' });
    expect(renamed.status).toBe(422);
    const stale = await api('PATCH', path(entityId), { displayName: 'Late' }, { 'if-match': created.etag ?? '' });
    expect(stale.status).toBe(412);
    expect(stale.body).toMatchObject({ status: 412 });
    expect((await api('DELETE', path(entityId), undefined, { 'if-match': created.etag ?? '' })).status).toBe(412);
    expect((await api('DELETE', path(entityId), undefined, { 'if-match': changed.etag ?? '' })).status).toBe(204);
    expect((await api('GET', path(entityId))).status).toBe(404);

    const audited = events.filter((e) => e.name === 'admin_changed');
    expect(audited.map((e) => [e.action, e.target])).toEqual([
      ['saml_service_provider.create', { type: 'saml_service_provider', id: entityId }],
      ['saml_service_provider.update', { type: 'saml_service_provider', id: entityId }],
      ['saml_service_provider.delete', { type: 'saml_service_provider', id: entityId }],
    ]);
    expect(audited[1]?.changes).toEqual({ nameIdFormat: 'emailAddress' });
    expect(audited.every((e) => e.clientId === 'automation' && e.endpoint === '/admin/v1')).toBe(true);
  });

  it("answers 409 to any change of the config file's SP, and to a second SP of an entity ID taken", async () => {
    const config = await api('GET', path(SP_ENTITY));
    expect(config.body.serviceProvider).toMatchObject({ source: 'config' });
    const patch = await api('PATCH', path(SP_ENTITY), { displayName: 'X' }, { 'if-match': config.etag ?? '' });
    expect(patch.status).toBe(409);
    expect(patch.body.title).toBe('Managed by the config file');
    expect((await api('DELETE', path(SP_ENTITY))).status).toBe(409);
    const again = await api('POST', '/saml-service-providers', { metadataXml: spMetadata(SP_ENTITY, [SP_ACS]) });
    expect(again.status).toBe(409);
    const twice = await api('POST', '/saml-service-providers', { metadataXml: spMetadata(NEW_SP, [NEW_ACS]) });
    expect(twice.status).toBe(409);
  });

  it('fetches metadataUrl once from a loopback server and stores the metadata; a refresh is a change', async () => {
    const entityId = 'https://fetched.example/sp';
    let acs = 'https://fetched.example/acs';
    const served = await metadataServer(() => spMetadata(entityId, [acs]));
    try {
      const created = await api('POST', '/saml-service-providers', { metadataUrl: served.url });
      expect(created.status, created.text).toBe(201);
      expect(served.hits()).toBe(1);
      expect(created.body.serviceProvider).toMatchObject({
        entityId,
        metadataXml: spMetadata(entityId, [acs]),
        effective: { acsUrls: [acs] },
      });
      expect(created.body.serviceProvider).not.toHaveProperty('metadataUrl');
      acs = 'https://fetched.example/acs-moved';
      const refreshed = await api(
        'PATCH',
        path(entityId),
        { metadataUrl: served.url },
        { 'if-match': created.etag ?? '' },
      );
      expect(refreshed.status, refreshed.text).toBe(200);
      expect(refreshed.body.serviceProvider).toMatchObject({ effective: { acsUrls: [acs] } });
      expect(served.hits()).toBe(2);
    } finally {
      served.server.close();
    }
  });

  it('refuses hostile or broken input with a problem naming the field, and stores nothing', async () => {
    const refused = async (body: unknown, field: string, status = 422) => {
      const res = await api('POST', '/saml-service-providers', body);
      expect(res.status, res.text).toBe(status);
      if (status !== 413) expect(res.body).toMatchObject({ status });
      if (status === 422) expect((res.body.errors as { path: string }[]).map((e) => e.path)).toContain(field);
    };
    const entityId = 'https://hostile.example/sp';
    // SSRF: link-local (cloud metadata), private, and plain http off loopback.
    await refused({ metadataUrl: 'https://169.254.169.254/latest/meta-data' }, 'metadataUrl');
    await refused({ metadataUrl: 'https://10.0.0.1/metadata' }, 'metadataUrl');
    await refused({ metadataUrl: 'https://[fe80::1]/metadata' }, 'metadataUrl');
    await refused({ metadataUrl: 'http://sp.example/metadata' }, 'metadataUrl');
    // A DTD or an entity, however harmless it looks.
    const dtd = `<?xml version="1.0"?><!DOCTYPE x [<!ENTITY e SYSTEM "file:///etc/passwd">]>${spMetadata(entityId, ['https://hostile.example/acs'])}`;
    await refused({ metadataXml: dtd }, 'metadataXml');
    // Encryption asked for without an encryption certificate: none in the metadata, or no metadata.
    await refused(
      { metadataXml: spMetadata(entityId, ['https://hostile.example/acs']), encryptAssertion: true },
      'metadataXml',
    );
    await refused({ entityId, acsUrls: ['https://hostile.example/acs'], encryptAssertion: true }, 'encryptAssertion');
    // Oversized: beyond the API's JSON bound (400), beyond every body's bound (413), and a fetched
    // document beyond the metadata bound.
    const xml = spMetadata(entityId, ['https://hostile.example/acs']);
    await refused({ metadataXml: `${xml}<!--${'x'.repeat(55_000)}-->` }, '', 400);
    const padding = `<!--${'x'.repeat(120_000)}-->`;
    await refused({ metadataXml: xml + padding }, '', 413);
    const big = await metadataServer(() => spMetadata(entityId, ['https://hostile.example/acs']) + padding);
    try {
      await refused({ metadataUrl: big.url }, 'metadataUrl');
    } finally {
      big.server.close();
    }
    // ACS URLs that are not http(s), given or in the metadata.
    await refused({ entityId, acsUrls: ['javascript:alert(1)'] }, 'acsUrls.0');
    await refused({ entityId, acsUrls: ['ftp://hostile.example/acs'] }, 'acsUrls.0');
    await refused({ metadataXml: spMetadata(entityId, ['javascript:alert(1)']) }, 'metadataXml');
    // Metadata of another entity, or no ACS at all; a NUL in an entity ID.
    await refused({ entityId, metadataXml: spMetadata('https://else.example/sp', [NEW_ACS]) }, 'metadataXml');
    await refused({ entityId }, 'acsUrls');
    await refused({ entityId: 'https://nul.example/\u0000', acsUrls: [NEW_ACS] }, 'entityId');
    await refused({ entityId, acsUrls: [NEW_ACS], unknown: true }, '');
    expect((await api('GET', path('https://nul.example/\u0000'))).status).toBe(404);
    expect((await api('GET', path(entityId))).status).toBe(404);
    const list = await api('GET', '/saml-service-providers');
    expect((list.body.serviceProviders as { entityId: string }[]).map((s) => s.entityId)).not.toContain(entityId);
  });

  it('documents the routes in the OpenAPI document', async () => {
    const doc = (await sigil.app.inject({ method: 'GET', url: '/admin/v1/openapi.json' })).json();
    expect(Object.keys(doc.paths)).toEqual(
      expect.arrayContaining(['/admin/v1/saml-service-providers', '/admin/v1/saml-service-providers/{id}']),
    );
    expect(dialect).toBeTruthy();
  });
});

describe('metadataUrl without clientIdMetadataDocuments.allowLoopback', () => {
  it('refuses a loopback URL, which only development allows', async () => {
    const served = await metadataServer(() => spMetadata('https://loopback.example/sp', [NEW_ACS]));
    const { sigil, api } = await startWebhookSigil(undefined, {});
    try {
      const res = await api('POST', '/saml-service-providers', { metadataUrl: served.url });
      expect(res.status).toBe(422);
      expect((res.body.errors as { path: string }[])[0]?.path).toBe('metadataUrl');
      expect(served.hits()).toBe(0);
    } finally {
      served.server.close();
      await sigil.close();
    }
  });
});
