/**
 * What a registrant chooses is fetched under the SSRF guard (RFC 7591 §5; `http/outbound.ts`):
 * with open registration anyone can name `sector_identifier_uri`, `jwks_uri` and `request_uris`,
 * so none of them may reach a loopback listener unless `clientIdMetadataDocuments.allowLoopback`
 * (development) is on. The listener counts TCP connections: zero must arrive, over http or https.
 */
import { createServer, type Server } from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { guardedPostForm, OutboundRefused } from '../../src/http/outbound.js';
import { assertionFields, clientKey, signAssertion } from '../assertion-helpers.js';
import { form, startSigil, type TestSigil } from '../helpers.js';
import { registrationConfig } from '../registration-helpers.js';

const ISSUER = 'http://127.0.0.1:5999';
type Json = Record<string, unknown>;

describe('registrant-chosen URLs under the SSRF guard (allowLoopback off)', () => {
  let sigil: TestSigil;
  let listener: Server;
  let connections = 0;
  let port = 0;
  beforeAll(async () => {
    sigil = await startSigil(
      registrationConfig({
        open: true,
        registrationsPerAddress: 1000,
        allowedTokenEndpointAuthMethods: ['private_key_jwt', 'none', 'client_secret_basic'],
      }),
    );
    listener = createServer((socket) => {
      connections += 1;
      socket.destroy();
    });
    await new Promise<void>((r) => listener.listen(0, '127.0.0.1', r));
    port = (listener.address() as AddressInfo).port;
  });
  afterAll(async () => {
    listener.close();
    await sigil.close();
  });

  const register = (body: Json) =>
    sigil.app.inject({
      method: 'POST',
      url: '/connect/register',
      headers: { 'content-type': 'application/json' },
      payload: JSON.stringify(body),
    });
  const web = { redirect_uris: ['https://rp.example/cb'] };

  it('refuses a sector_identifier_uri on a loopback address (https and http) without connecting to it', async () => {
    for (const scheme of ['https', 'http']) {
      const res = await register({ ...web, sector_identifier_uri: `${scheme}://127.0.0.1:${port}/sector.json` });
      expect(res.statusCode, res.body).toBe(400);
      expect(res.json<Json>().error).toBe('invalid_client_metadata');
    }
    expect(connections).toBe(0);
  });

  it('never fetches a registered jwks_uri on a loopback address: the client assertion fails with invalid_client', async () => {
    const res = await register({
      ...web,
      token_endpoint_auth_method: 'private_key_jwt',
      jwks_uri: `https://127.0.0.1:${port}/jwks`,
    });
    expect(res.statusCode, res.body).toBe(201);
    const clientId = String(res.json<Json>().client_id);
    const key = await clientKey('ES256', 'k1');
    const assertion = await signAssertion(key, clientId, `${ISSUER}/connect/token`);
    const token = await sigil.app.inject({
      method: 'POST',
      url: '/connect/token',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: form({
        grant_type: 'authorization_code',
        code: 'x',
        redirect_uri: 'https://rp.example/cb',
        code_verifier: 'v'.repeat(43),
        ...assertionFields(assertion, clientId),
      }),
    });
    expect(token.statusCode).toBe(401);
    expect(token.json<Json>().error).toBe('invalid_client');
    expect(connections).toBe(0);
  });

  it('never fetches a registered request_uri on a loopback address: invalid_request_uri', async () => {
    const requestUri = `https://127.0.0.1:${port}/request.jwt`;
    const res = await register({ ...web, token_endpoint_auth_method: 'none', request_uris: [requestUri] });
    expect(res.statusCode, res.body).toBe(201);
    const clientId = String(res.json<Json>().client_id);
    const query = new URLSearchParams({
      client_id: clientId,
      request_uri: requestUri,
      redirect_uri: 'https://rp.example/cb',
      response_type: 'code',
    });
    const authorize = await sigil.app.inject({ method: 'GET', url: `/connect/authorize?${query}` });
    expect(authorize.statusCode).toBe(303);
    expect(new URL(String(authorize.headers.location)).searchParams.get('error')).toBe('invalid_request_uri');
    expect(connections).toBe(0);
  });

  it('marks the stored client as registered dynamically, so every node guards its URLs', async () => {
    const res = await register(web);
    expect(sigil.context.clients.get(String(res.json<Json>().client_id))?.registeredDynamically).toBe(true);
  });

  it("refuses the back-channel logout POST to a loopback address (the deliverer's guarded send) without connecting", async () => {
    for (const scheme of ['https', 'http']) {
      await expect(
        guardedPostForm(new URL(`${scheme}://127.0.0.1:${port}/bcl`), 'logout_token=x', {
          timeoutMs: 2000,
          maxBytes: 0,
          allowLoopback: false,
        }),
      ).rejects.toBeInstanceOf(OutboundRefused);
    }
    expect(connections).toBe(0);
  });
});
