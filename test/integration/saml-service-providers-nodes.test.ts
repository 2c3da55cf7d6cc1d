/**
 * SAML service providers on two nodes sharing one store (a PostgreSQL schema of this run's own; a
 * SQLite file shared as `--workers` share it): an SP registered through /admin/v1 on node A is
 * taken by node B's /saml/sso within 2 s (B's change poll), and refused there within 2 s of its
 * deletion on A.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Browser } from '../authorize-helpers.js';
import { dropSchema, tempDir, type TestSigil } from '../helpers.js';
import { authnRequest, redirectPath, spMetadata } from '../saml-helpers.js';
import { type Api, DIALECTS, startWebhookSigil } from '../webhook-helpers.js';
import { ISSUER, ssoThrough } from '../saml-admin-helpers.js';

const SP = 'https://nodes.example/sp';
const ACS = 'https://nodes.example/acs';

/** Whether `sigil` takes an AuthnRequest of SP now (303 to its pages) rather than refusing it (400). */
async function takes(sigil: TestSigil): Promise<boolean> {
  const res = await new Browser(sigil).get(redirectPath(authnRequest(ISSUER, { issuer: SP, acs: ACS })));
  return res.status === 303;
}

/** Milliseconds until `sigil` takes (or refuses, `want` false) SP's requests; fails after 5 s. */
async function msUntil(sigil: TestSigil, want: boolean): Promise<number> {
  const start = Date.now();
  while (Date.now() - start < 5000) {
    if ((await takes(sigil)) === want) return Date.now() - start;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`node did not ${want ? 'take' : 'refuse'} the SP within 5 s`);
}

describe.each(DIALECTS)('two nodes on %s', (dialect, storage) => {
  const dir = tempDir();
  const url = storage() ?? `sqlite:${join(dir.dir, 'shared.db')}`;
  let a: { sigil: TestSigil; api: Api };
  let b: { sigil: TestSigil; api: Api };

  beforeAll(async () => {
    a = await startWebhookSigil(url, { saml: { enabled: true } });
    b = await startWebhookSigil(url, { saml: { enabled: true } });
  });
  afterAll(async () => {
    await a?.sigil.close();
    await b?.sigil.close();
    dir.cleanup();
    if (dialect === 'PostgreSQL') await dropSchema(new URL(url).searchParams.get('schema') ?? '');
  });

  it('puts an SP created on node A in force on node B within 2 s, and its deletion too', async () => {
    expect(await takes(b.sigil)).toBe(false);
    const created = await a.api('POST', '/saml-service-providers', { metadataXml: spMetadata(SP, [ACS]) });
    expect(created.status, created.text).toBe(201);
    // Node A has it at once; node B once its change poll (every second) saw it.
    expect(await takes(a.sigil)).toBe(true);
    const seen = await msUntil(b.sigil, true);
    expect(seen).toBeLessThan(2000);
    const posted = await ssoThrough(b.sigil, SP, ACS);
    expect(posted.action).toBe(ACS);

    const gone = await a.api('DELETE', `/saml-service-providers/${encodeURIComponent(SP)}`, undefined, {
      'if-match': created.etag ?? '',
    });
    expect(gone.status).toBe(204);
    const forgotten = await msUntil(b.sigil, false);
    expect(forgotten).toBeLessThan(2000);
    console.info(`${dialect}: node B took the new SP after ${seen} ms, refused it ${forgotten} ms after its deletion`);
  });
});
