/**
 * The SAML identity provider on two nodes sharing one store, on PostgreSQL and SQLite: the same
 * signing certificate in both metadata documents, the same persistent NameID for a user whichever
 * node answers (its key is a server secret created once, also when two nodes create it at once),
 * and a request ID used at one node refused at the other.
 */
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSigil } from '../../src/index.js';
import { openStore } from '../../src/stores/sql.js';
import { Browser, isLoginPage } from '../authorize-helpers.js';
import { dropSchema, POSTGRES_URL, type TestSigil, tempDir, testConfig, uniqueSchema } from '../helpers.js';
import {
  authnRequest,
  element,
  metadataCertificates,
  postedResponse,
  redirectPath,
  SP_ACS,
  SP_ENTITY,
  spMetadata,
} from '../saml-helpers.js';

const ISSUER = 'http://127.0.0.1:5999';

async function node(storage: string): Promise<TestSigil> {
  const sigil = await createSigil(
    testConfig({
      storage,
      saml: { enabled: true },
      samlServiceProviders: [{ entityId: SP_ENTITY, metadataXml: spMetadata(SP_ENTITY, [SP_ACS]) }],
    }),
    { logger: pino({ level: 'silent' }) },
  );
  return { ...sigil, dir: '' };
}

/** Signs alice in at `sigil` through a fresh SP-initiated request; returns her NameID. */
async function nameIdAt(sigil: TestSigil): Promise<string> {
  const b = new Browser(sigil);
  let step = await b.follow(await b.get(redirectPath(authnRequest(ISSUER))));
  expect(isLoginPage(step)).toBe(true);
  step = await b.follow(await b.submitLogin(step, 'alice', 'alice'));
  return element(postedResponse(step.body).doc, 'NameID')?.textContent ?? '';
}

describe.each(['postgres', 'sqlite'] as const)('two nodes on %s', (kind) => {
  const schema = uniqueSchema('samlnodes');
  const dir = tempDir();
  const storage = kind === 'postgres' ? `${POSTGRES_URL}?schema=${schema}` : `sqlite:${join(dir.dir, 'sigil.db')}`;
  let a: TestSigil;
  let b: TestSigil;

  beforeAll(async () => {
    a = await node(storage);
    b = await node(storage);
  });
  afterAll(async () => {
    await a?.close();
    await b?.close();
    if (kind === 'postgres') await dropSchema(schema);
    dir.cleanup();
  });

  it('publishes the same certificate and names a user alike on both nodes', async () => {
    const [ma, mb] = await Promise.all([new Browser(a).get('/saml/metadata'), new Browser(b).get('/saml/metadata')]);
    expect(metadataCertificates(ma.body)).toEqual(metadataCertificates(mb.body));
    const [fromA, fromB] = [await nameIdAt(a), await nameIdAt(b)];
    expect(fromA).toMatch(/^[\w-]{43}$/);
    expect(fromB).toBe(fromA);
  });

  it('refuses at one node a request ID used at the other', async () => {
    const xml = authnRequest(ISSUER);
    expect((await new Browser(a).get(redirectPath(xml))).status).toBe(303);
    const again = await new Browser(b).get(redirectPath(xml));
    expect(again.status).toBe(400);
    expect(again.body).toContain('used before');
  });

  it('creates a server secret once when two nodes ask at once', async () => {
    const [s1, s2] = [await openStore(storage), await openStore(storage)];
    try {
      const values = await Promise.all([
        s1.secrets.getOrCreate('test-secret', '{"key":"one"}'),
        s2.secrets.getOrCreate('test-secret', '{"key":"two"}'),
      ]);
      expect(values[0]).toBe(values[1]);
      expect(await s1.secrets.getOrCreate('test-secret', '{"key":"three"}')).toBe(values[0]);
    } finally {
      await s1.close();
      await s2.close();
    }
  });
});
