/**
 * Client ID Metadata Documents over real HTTP: two `sigil start` processes (loopback documents
 * allowed, the development setting; and not allowed, as in production) fetch documents from an
 * https server of the test's own on 127.0.0.1. The fetch bounds (size, time, redirects), the
 * document checks (client_id, JSON), caching by HTTP headers, the SSRF refusals and the
 * per-address quota, and that no client_id at all gives a 500.
 */
import fc from 'fast-check';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ServerProcess, startProcess, testConfig } from '../helpers.js';
import { DocumentServer, json } from './document-server.js';
import { freePort } from './ports.js';

const docs = new DocumentServer();
/** Loopback documents allowed (development). */
let dev: ServerProcess;
/** Production: loopback refused, 5 fetches per address. */
let prod: ServerProcess;
/** A second listener only `prod` is pointed at: it must see no connection. */
const untouched = new DocumentServer();

const REDIRECT = 'http://127.0.0.1:7777/cb';
const url = (path: string) => `${docs.origin}${path}`;
const document = (path: string, extra: Record<string, unknown> = {}) => ({
  client_id: url(path),
  client_name: 'Test Agent',
  redirect_uris: [REDIRECT],
  ...extra,
});

async function authorize(sigil: ServerProcess, clientId: string): Promise<Response> {
  const query = new URLSearchParams({
    client_id: clientId,
    redirect_uri: REDIRECT,
    response_type: 'code',
    scope: 'openid',
    code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
    code_challenge_method: 'S256',
  });
  return fetch(`${sigil.url}/connect/authorize?${query}`, { redirect: 'manual' });
}

/** The error page's status and text. */
async function refusal(sigil: ServerProcess, clientId: string): Promise<{ status: number; text: string }> {
  const res = await authorize(sigil, clientId);
  return { status: res.status, text: await res.text() };
}

beforeAll(async () => {
  await Promise.all([docs.start(), untouched.start()]);
  const env = { NODE_EXTRA_CA_CERTS: docs.certFile };
  [dev, prod] = await Promise.all([
    freePort().then((port) =>
      startProcess(
        testConfig({ clientIdMetadataDocuments: { allowLoopback: true, fetchesPerAddress: 100_000 } }),
        port,
        { env },
      ),
    ),
    freePort().then((port) =>
      startProcess(testConfig({ clientIdMetadataDocuments: { fetchesPerAddress: 5 } }), port, { env }),
    ),
  ]);
});

afterAll(async () => {
  await Promise.allSettled([dev?.stop(), prod?.stop(), docs.close(), untouched.close()]);
});

describe('client ID metadata documents', () => {
  it('takes a valid document as the client: the login page follows, discovery says it is supported', async () => {
    docs.routes.set('/ok', json(document('/ok')));
    const res = await authorize(dev, url('/ok'));
    expect(res.status).toBe(303);
    expect(res.headers.get('location')).toMatch(/^\/account\/login\?interaction=/);
    const discovery = (await (await fetch(`${dev.url}/.well-known/openid-configuration`)).json()) as Record<
      string,
      unknown
    >;
    expect(discovery.client_id_metadata_document_supported).toBe(true);
  });

  it('refuses loopback addresses without the development setting, and connects to nothing', async () => {
    untouched.routes.set('/client', json({ client_id: `${untouched.origin}/client`, redirect_uris: [REDIRECT] }));
    const { status, text } = await refusal(prod, `${untouched.origin}/client`);
    expect(status).toBe(400);
    expect(text).toContain('invalid_client');
    expect(text).toContain('special-use address');
    // Four more: the address's quota of 5 fetches is then used up (the next test relies on it).
    // A name is resolved and its addresses checked too: localhost is loopback.
    for (const host of [
      '169.254.169.254',
      '[::ffff:7f00:1]',
      '100.64.0.1',
      `localhost:${new URL(untouched.origin).port}`,
    ]) {
      const r = await refusal(prod, `https://${host}/client`);
      expect(r.text, host).toContain('special-use address');
    }
    expect(untouched.connections).toBe(0);
  });

  it('refuses a document larger than 64 KB', async () => {
    docs.routes.set('/large', json(document('/large', { padding: 'x'.repeat(70 * 1024) })));
    expect((await refusal(dev, url('/large'))).text).toContain('larger than 64 KB');
    docs.routes.set('/large-chunked', (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      for (let i = 0; i < 80; i++) res.write('x'.repeat(1024));
      res.end();
    });
    expect((await refusal(dev, url('/large-chunked'))).text).toContain('larger than 64 KB');
  });

  it('gives up on a document that does not arrive within 5 s', async () => {
    docs.routes.set('/slow', (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{"client_id":');
      // ...and never more: a slow body.
    });
    // The refusal names the time bound, so it is the bound that ended the fetch; a fetch that
    // waited for the body for ever would fail on the test's own timeout. (No duration is asserted:
    // on a loaded machine the answer may come well after the 5 s.)
    const { status, text } = await refusal(dev, url('/slow'));
    expect(status).toBe(400);
    expect(text).toContain('within 5 s');
  }, 30_000);

  it('follows no redirect', async () => {
    docs.routes.set('/moved', (_req, res) => {
      res.writeHead(302, { location: url('/ok') });
      res.end();
    });
    const before = docs.count('/ok');
    expect((await refusal(dev, url('/moved'))).text).toContain('redirects are not followed');
    expect(docs.count('/ok')).toBe(before);
  });

  it('refuses a document naming another client_id, bad JSON, a shared secret, and a redirect URI it may not have', async () => {
    docs.routes.set('/other', json(document('/other', { client_id: url('/ok') })));
    expect((await refusal(dev, url('/other'))).text).toContain('client_id other than its URL');
    docs.routes.set('/bad-json', json('{"client_id": '));
    expect((await refusal(dev, url('/bad-json'))).text).toContain('not JSON');
    docs.routes.set(
      '/secret',
      json(document('/secret', { client_secret: 's', token_endpoint_auth_method: 'client_secret_basic' })),
    );
    expect((await refusal(dev, url('/secret'))).text).toContain('client_secret');
    docs.routes.set('/http-redirect', json(document('/http-redirect', { redirect_uris: ['http://app.example/cb'] })));
    expect((await refusal(dev, url('/http-redirect'))).text).toContain('redirect_uri');
    docs.routes.set('/html', (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end(JSON.stringify(document('/html')));
    });
    expect((await refusal(dev, url('/html'))).text).toContain('application/json');
  });

  it('treats only https URLs as documents, in normalized form with a path', async () => {
    const http = await refusal(dev, `http://127.0.0.1:${new URL(docs.origin).port}/ok`);
    expect(http.text).toContain('unauthorized_client');
    for (const [id, why] of [
      [`${docs.origin}/`, 'a path other than /'],
      [`${docs.origin}/a/../ok`, '. or .. path segments'],
      [`${docs.origin}/a/%2e%2E/ok`, '. or .. path segments'],
      [`https://user:pw@127.0.0.1:${new URL(docs.origin).port}/ok`, 'user name or password'],
      [`${docs.origin}/ok#x`, 'not have a fragment'],
      [`https://127.0.0.1:443/ok`, 'normalized form'],
    ]) {
      const r = await refusal(dev, id as string);
      expect(r.status, id).toBe(400);
      expect(r.text, id).toContain(why);
    }
  });

  it('caches as the caching headers say: max-age serves many requests, no-store none', async () => {
    docs.routes.set('/cached', json(document('/cached'), { 'cache-control': 'public, max-age=300' }));
    docs.routes.set('/no-store', json(document('/no-store'), { 'cache-control': 'no-store' }));
    for (let i = 0; i < 3; i++) {
      expect((await authorize(dev, url('/cached'))).status).toBe(303);
      expect((await authorize(dev, url('/no-store'))).status).toBe(303);
    }
    expect(docs.count('/cached')).toBe(1);
    expect(docs.count('/no-store')).toBe(3);
  });

  it('answers invalid_client at the token endpoint for a refused document, and never fetches keys from a private address', async () => {
    const token = (body: Record<string, string>) =>
      fetch(`${dev.url}/connect/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams(body),
      });
    const refused = await token({
      grant_type: 'authorization_code',
      code: 'x',
      redirect_uri: REDIRECT,
      code_verifier: 'v'.repeat(43),
      client_id: url('/other'),
    });
    expect(refused.status).toBe(401);
    expect(((await refused.json()) as { error: string }).error).toBe('invalid_client');

    const { privateKey, publicKey } = await generateKeyPair('ES256');
    docs.routes.set(
      '/keys',
      json(document('/keys', { token_endpoint_auth_method: 'private_key_jwt', jwks_uri: 'https://10.1.2.3/jwks' })),
    );
    docs.routes.set(
      '/inline-keys',
      json(
        document('/inline-keys', {
          token_endpoint_auth_method: 'private_key_jwt',
          jwks: { keys: [{ ...(await exportJWK(publicKey)), kid: 'k1' }] },
        }),
      ),
    );
    const assertion = async (id: string) =>
      new SignJWT({ jti: crypto.randomUUID() })
        .setProtectedHeader({ alg: 'ES256', kid: 'k1' })
        .setIssuer(id)
        .setSubject(id)
        .setAudience(dev.url)
        .setIssuedAt()
        .setExpirationTime('1m')
        .sign(privateKey);
    const withKeys = async (id: string) =>
      token({
        grant_type: 'authorization_code',
        code: 'x',
        redirect_uri: REDIRECT,
        code_verifier: 'v'.repeat(43),
        client_assertion_type: 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer',
        client_assertion: await assertion(id),
      });
    const privateKeys = await withKeys(url('/keys'));
    expect(privateKeys.status).toBe(401);
    expect(((await privateKeys.json()) as { error_description: string }).error_description).toContain(
      'could not be fetched',
    );
    // The same assertion against keys in the document, or at a jwks_uri Sigil may reach,
    // authenticates: the code is what fails then.
    const inline = await withKeys(url('/inline-keys'));
    expect(((await inline.json()) as { error: string }).error).toBe('invalid_grant');
    docs.routes.set('/jwks', json({ keys: [{ ...(await exportJWK(publicKey)), kid: 'k1' }] }));
    docs.routes.set(
      '/remote-keys',
      json(document('/remote-keys', { token_endpoint_auth_method: 'private_key_jwt', jwks_uri: url('/jwks') })),
    );
    const remote = await withKeys(url('/remote-keys'));
    expect(((await remote.json()) as { error: string }).error).toBe('invalid_grant');
    expect(docs.count('/jwks')).toBe(1);
  });

  it('limits the fetches one address may cause: past 5 per window, 429 with Retry-After and no fetch', async () => {
    // The test before used this address's 5 fetches.
    untouched.routes.set('/late', json({ client_id: `${untouched.origin}/late`, redirect_uris: [REDIRECT] }));
    for (const id of ['https://10.9.9.9/client', `${untouched.origin}/late`]) {
      const res = await authorize(prod, id);
      expect(res.status).toBe(429);
      expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0);
      expect(await res.text()).toContain('temporarily_unavailable');
    }
    expect(untouched.connections).toBe(0);
  });

  it('answers every client_id with a page or a redirect, never a 500', async () => {
    const port = new URL(docs.origin).port;
    const special = fc.constantFrom(
      '10.0.0.1',
      '169.254.169.254',
      '[::1]',
      '[fe80::1]',
      '192.168.1.1',
      '[::ffff:10.0.0.1]',
      '0.0.0.0',
      '100.64.0.1',
      '[fc00::1]',
      '224.0.0.1',
      '192.0.2.1',
      `127.0.0.1:${port}`,
    );
    const clientId = fc.oneof(
      fc.string({ maxLength: 120 }),
      fc.string({ unit: 'binary', maxLength: 60 }).map((s) => `https://${s}`),
      fc
        .tuple(special, fc.webPath(), fc.webQueryParameters(), fc.webFragments())
        .map(([host, path, query, fragment]) => `https://${host}${path}?${query}#${fragment}`),
      fc.tuple(special, fc.webPath()).map(([host, path]) => `https://${host}${path}`),
    );
    await fc.assert(
      fc.asyncProperty(clientId, async (id) => {
        const res = await authorize(dev, id);
        expect(res.status, id).toBeLessThan(500);
        expect([303, 400], id).toContain(res.status);
      }),
      { numRuns: 100 },
    );
  }, 60_000);
});
