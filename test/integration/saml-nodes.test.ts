/**
 * The SAML identity provider on two nodes sharing one store, on PostgreSQL and SQLite: the same
 * signing certificate in both metadata documents, the same persistent NameID for a user whichever
 * node answers (its key is a server secret created once, also when two nodes create it at once),
 * and a request ID used at one node refused at the other; single logout across nodes (a session's
 * SAML participant recorded at one node ends it at the other, and a logout chain started at one
 * node goes on at the other).
 */
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSigil } from '../../src/index.js';
import { openStore } from '../../src/stores/sql.js';
import { Browser, input, isLoginPage, unescapeHtml } from '../authorize-helpers.js';
import { dropSchema, POSTGRES_URL, type TestSigil, tempDir, testConfig, uniqueSchema } from '../helpers.js';
import {
  authnRequest,
  element,
  logoutRequest,
  logoutResponse,
  metadataCertificates,
  postedResponse,
  redirectedMessage,
  redirectPath,
  SP_ACS,
  SP_ENTITY,
  type SpKeys,
  spKeys,
  spMetadata,
} from '../saml-helpers.js';

const ISSUER = 'http://127.0.0.1:5999';
const SP_SLO = 'https://sp.example/slo';
const SLO = { path: '/saml/slo', field: 'SAMLRequest' } as const;
const SLO_RESPONSE = { path: '/saml/slo', field: 'SAMLResponse' } as const;
let keys: SpKeys;

beforeAll(async () => {
  keys = await spKeys();
});

async function node(storage: string): Promise<TestSigil> {
  const metadataXml = spMetadata(SP_ENTITY, [SP_ACS], keys.certificate, { slo: { url: SP_SLO, binding: 'redirect' } });
  const sigil = await createSigil(
    testConfig({
      storage,
      saml: { enabled: true },
      samlServiceProviders: [{ entityId: SP_ENTITY, metadataXml }],
    }),
    { logger: pino({ level: 'silent' }) },
  );
  return { ...sigil, dir: '' };
}

/** Signs alice in at `sigil` through a fresh SP-initiated request (in browser `b`); returns her NameID. */
async function nameIdAt(sigil: TestSigil, b = new Browser(sigil)): Promise<string> {
  let step = await b.follow(await b.get(redirectPath(authnRequest(ISSUER))));
  if (isLoginPage(step)) step = await b.follow(await b.submitLogin(step, 'alice', 'alice'));
  return element(postedResponse(step.body).doc, 'NameID')?.textContent ?? '';
}

/** A browser whose cookies go to `sigil` (another node of the same store). */
function sameBrowserAt(sigil: TestSigil, b: Browser): Browser {
  const moved = new Browser(sigil);
  for (const [name, value] of b.cookies) moved.cookies.set(name, value);
  return moved;
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

  it('ends at one node a session whose SP joined at the other, and goes on with a logout chain at the other', async () => {
    // SP-initiated at b: the participant (recorded at a, twice: the second assertion's upsert) ends the session.
    const first = new Browser(a);
    const nameId = await nameIdAt(a, first);
    expect(await nameIdAt(a, first)).toBe(nameId);
    const atB = sameBrowserAt(b, first);
    const ended = await atB.get(redirectPath(logoutRequest(ISSUER, { nameId }), undefined, keys, SLO));
    expect(ended.status, ended.body).toBe(303);
    expect(redirectedMessage(ended.location ?? '').location).toBe(SP_SLO);
    expect((await first.get('/account')).status).toBe(303);
    // IdP-initiated at a, the SP's LogoutResponse at b.
    const second = new Browser(a);
    await nameIdAt(a, second);
    const prompt = await second.get('/account/logout');
    const out = await second.post('/account/logout', { csrf_token: input(prompt.body, 'csrf_token') });
    const request = redirectedMessage(unescapeHtml(/id="continue" href="([^"]+)"/.exec(out.body)?.[1] ?? ''));
    const answer = logoutResponse(ISSUER, { inResponseTo: request.doc.documentElement.getAttribute('ID') ?? '' });
    const done = await sameBrowserAt(b, second).get(redirectPath(answer, request.relayState, keys, SLO_RESPONSE));
    expect(done.status, done.body).toBe(200);
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
