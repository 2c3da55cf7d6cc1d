/**
 * A config file's SAML SP named by `metadataUrl`: its metadata is fetched once at start, through
 * the admin API's fetcher and SSRF guard, and its ACS (and encryption certificate) come from it; a
 * loopback server serves it, which the guard allows only with
 * `clientIdMetadataDocuments.allowLoopback`. A fetch refused (loopback without that switch, a
 * private address) or failed stops the start with the SP's field and URL, before the store is
 * opened; metadataXml and metadataUrl together are refused.
 */
import { existsSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSigil } from '../../src/index.js';
import { authorizeClients, Browser, isLoginPage } from '../authorize-helpers.js';
import { startSigil, tempDir, testConfig } from '../helpers.js';
import {
  attributes,
  authnRequest,
  element,
  postedResponse,
  redirectPath,
  SP_ACS,
  SP_ENTITY,
  spKeys,
  spMetadata,
} from '../saml-helpers.js';

const ISSUER = 'http://127.0.0.1:5999';

let server: Server;
let metadataUrl: string;
let hits = 0;
let metadata = '';

beforeAll(async () => {
  metadata = spMetadata(SP_ENTITY, [SP_ACS], undefined, { encryptionCertificate: (await spKeys()).certificate });
  server = createServer((_req, res) => {
    hits++;
    res.writeHead(200, { 'content-type': 'application/samlmetadata+xml' }).end(metadata);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  metadataUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/metadata`;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

/**
 * Starting with `sp` as the one config SP fails with `reason`; a refusal before the metadata is
 * read (`beforeStore`) leaves no store behind.
 */
async function startRefused(
  sp: Record<string, unknown>,
  allowLoopback: boolean,
  reason: RegExp,
  beforeStore = true,
): Promise<void> {
  const { dir, cleanup } = tempDir();
  try {
    const config = testConfig({
      storage: `sqlite:${join(dir, 'sigil.db')}`,
      saml: { enabled: true },
      samlServiceProviders: [sp as never],
      clientIdMetadataDocuments: { allowLoopback },
    });
    await expect(createSigil(config)).rejects.toThrow(reason);
    if (beforeStore) expect(existsSync(join(dir, 'sigil.db'))).toBe(false);
  } finally {
    cleanup();
  }
}

describe('a config SP by metadataUrl', () => {
  it('is fetched once at start; its ACS and encryption certificate come from it', async () => {
    const before = hits;
    const sigil = await startSigil({
      clients: authorizeClients(),
      saml: { enabled: true },
      samlServiceProviders: [
        { entityId: SP_ENTITY, metadataUrl, encryptAssertion: true, attributes: { mail: 'email' } },
      ],
      clientIdMetadataDocuments: { allowLoopback: true },
    });
    try {
      expect(hits - before).toBe(1);
      const b = new Browser(sigil);
      let step = await b.follow(await b.get(redirectPath(authnRequest(ISSUER))));
      if (isLoginPage(step)) step = await b.follow(await b.submitLogin(step, 'alice', 'alice'));
      const posted = postedResponse(step.body);
      expect(posted.action).toBe(SP_ACS);
      expect(element(posted.doc, 'EncryptedAssertion')).toBeDefined();
      expect(attributes(posted.doc)).toEqual({});
      // Signing in fetches nothing more.
      expect(hits - before).toBe(1);
    } finally {
      await sigil.close();
    }
  });

  it('stops the start, naming the SP and the URL, when the guard refuses the fetch', async () => {
    const before = hits;
    const field = /samlServiceProviders\[0\]\.metadataUrl: /;
    // Loopback only with clientIdMetadataDocuments.allowLoopback.
    await startRefused({ entityId: SP_ENTITY, metadataUrl }, false, field);
    await startRefused(
      { entityId: SP_ENTITY, metadataUrl },
      false,
      new RegExp(`${metadataUrl.replace(/[.]/g, '\\.')}: the metadata was not fetched`),
    );
    expect(hits).toBe(before);
    // A private address and a link-local one, loopback allowed or not.
    await startRefused({ entityId: SP_ENTITY, metadataUrl: 'https://10.0.0.1/metadata' }, true, field);
    await startRefused({ entityId: SP_ENTITY, metadataUrl: 'https://169.254.169.254/metadata' }, true, field);
    // A server that answers something else than metadata: the metadata is refused as metadataXml would be.
    metadata = '<html>not metadata</html>';
    try {
      await startRefused({ entityId: SP_ENTITY, metadataUrl }, true, /samlServiceProviders\[0\]: /, false);
    } finally {
      metadata = spMetadata(SP_ENTITY, [SP_ACS]);
    }
  });

  it('is refused with metadataXml beside it', async () => {
    await startRefused(
      { entityId: SP_ENTITY, metadataUrl, metadataXml: spMetadata(SP_ENTITY, [SP_ACS]) },
      true,
      /metadataUrl.*not both/s,
    );
  });
});
