/**
 * Dynamic Client Registration (RFC 7591, RFC 7592) of CIBA clients (OpenID CIBA Core 1.0 §4):
 * `backchannel_token_delivery_mode` poll or ping, `backchannel_client_notification_endpoint` under
 * the ping's SSRF rule, no signed requests and no user code; registered, read back, and used: a
 * registered ping client is pinged on its loopback endpoint (the development setting) and redeems.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashHandle } from '../../src/crypto/handles.js';
import { Browser, input } from '../authorize-helpers.js';
import { postForm, settled, startSigil, type TestSigil, tokenRequest } from '../helpers.js';
import { registrationConfig } from '../registration-helpers.js';

const GRANT = 'urn:openid:params:grant-type:ciba';
type Json = Record<string, unknown>;

let sigil: TestSigil;
/** Registration of CIBA clients where the ping's guard refuses loopback (the default). */
let strict: TestSigil;
let receiver: Server;
let notify = '';
const pings: { authorization?: string; body: string }[] = [];

beforeAll(async () => {
  receiver = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      pings.push({ ...(req.headers.authorization ? { authorization: req.headers.authorization } : {}), body });
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((ok) => receiver.listen(0, '127.0.0.1', ok));
  notify = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/ciba`;
  sigil = await startSigil({
    ...registrationConfig({
      open: true,
      registrationsPerAddress: 1000,
      allowedGrantTypes: ['authorization_code', 'refresh_token', GRANT],
    }),
    // The ping's guard lets loopback pass (development): the registration accepts the same.
    clientIdMetadataDocuments: { allowLoopback: true },
  });
  strict = await startSigil(
    registrationConfig({
      open: true,
      registrationsPerAddress: 1000,
      allowedGrantTypes: ['authorization_code', 'refresh_token', GRANT],
    }),
  );
});
afterAll(async () => {
  await sigil?.close();
  await strict?.close();
  receiver?.closeAllConnections();
  await new Promise((ok) => receiver?.close(ok));
});

/** `POST /connect/register` (open registration). */
function register(body: Json, on = sigil) {
  return on.app.inject({
    method: 'POST',
    url: '/connect/register',
    headers: { 'content-type': 'application/json' },
    payload: JSON.stringify(body),
  });
}

/** RFC 7592 §2.1: reads the registration back. */
async function readBack(on: TestSigil, registered: Json): Promise<Json> {
  const res = await on.app.inject({
    method: 'GET',
    url: new URL(registered.registration_client_uri as string).pathname,
    headers: { authorization: `Bearer ${registered.registration_access_token as string}` },
  });
  expect(res.statusCode, res.body).toBe(200);
  return res.json<Json>();
}

/** Registers, expecting `invalid_client_metadata` whose description mentions `about`. */
async function refused(body: Json, about: string, on = sigil): Promise<void> {
  const res = await register(body, on);
  expect(res.statusCode, res.body).toBe(400);
  expect(res.json<Json>().error).toBe('invalid_client_metadata');
  expect(String(res.json<Json>().error_description)).toContain(about);
}

const ciba = (extra: Json = {}): Json => ({
  client_name: 'Registered Agent',
  grant_types: [GRANT],
  scope: 'openid profile',
  backchannel_token_delivery_mode: 'poll',
  ...extra,
});

/** Alice approves the registered client's request of `authReqId` on /account/requests. */
async function approve(on: TestSigil, authReqId: string): Promise<void> {
  const alice = new Browser(on);
  await alice.signIn('alice');
  const page = await alice.get('/account/requests');
  const res = await alice.post('/account/requests', {
    csrf_token: input(page.body, 'csrf_token'),
    request: hashHandle(authReqId),
    button: 'approve',
  });
  expect(res.status, res.body).toBe(200);
}

describe('registering a CIBA client', () => {
  it('poll: registered with the grant type and the mode, read back, and used', async () => {
    const res = await register(ciba({ backchannel_user_code_parameter: false }));
    expect(res.statusCode, res.body).toBe(201);
    const registered = res.json<Json>();
    expect(registered.grant_types).toEqual([GRANT]);
    expect(registered.backchannel_token_delivery_mode).toBe('poll');
    expect(registered.backchannel_user_code_parameter).toBe(false);
    expect(registered).not.toHaveProperty('backchannel_client_notification_endpoint');
    const read = await readBack(sigil, registered);
    expect(read.grant_types).toEqual([GRANT]);
    expect(read.backchannel_token_delivery_mode).toBe('poll');
    expect(read.backchannel_user_code_parameter).toBe(false);

    const auth: [string, string] = [registered.client_id as string, registered.client_secret as string];
    const started = await postForm(sigil, '/connect/ciba', { scope: 'openid', login_hint: 'alice' }, auth);
    expect(started.statusCode, started.body).toBe(200);
    const id = started.json<{ auth_req_id: string }>().auth_req_id;
    await approve(sigil, id);
    const tokens = await tokenRequest(sigil, { grant_type: GRANT, auth_req_id: id }, auth);
    expect(tokens.statusCode, tokens.body).toBe(200);
  });

  it('ping: its notification endpoint is returned, read back and pinged', async () => {
    const res = await register(
      ciba({ backchannel_token_delivery_mode: 'ping', backchannel_client_notification_endpoint: notify }),
    );
    expect(res.statusCode, res.body).toBe(201);
    const registered = res.json<Json>();
    expect(registered.backchannel_token_delivery_mode).toBe('ping');
    expect(registered.backchannel_client_notification_endpoint).toBe(notify);
    const read = await readBack(sigil, registered);
    expect(read.backchannel_client_notification_endpoint).toBe(notify);

    const auth: [string, string] = [registered.client_id as string, registered.client_secret as string];
    const started = await postForm(
      sigil,
      '/connect/ciba',
      { scope: 'openid', login_hint: 'alice', client_notification_token: 'registered-ping' },
      auth,
    );
    expect(started.statusCode, started.body).toBe(200);
    const id = started.json<{ auth_req_id: string }>().auth_req_id;
    const before = pings.length;
    await approve(sigil, id);
    await settled(
      async () => pings.length,
      (n) => n > before,
    );
    expect(pings[before]).toEqual({
      authorization: 'Bearer registered-ping',
      body: JSON.stringify({ auth_req_id: id }),
    });
    const tokens = await tokenRequest(sigil, { grant_type: GRANT, auth_req_id: id }, auth);
    expect(tokens.statusCode, tokens.body).toBe(200);
  });

  it('refuses push, ping without an endpoint, signed requests, a user code and a public client', async () => {
    await refused(ciba({ backchannel_token_delivery_mode: 'push' }), 'push');
    await refused(ciba({ backchannel_token_delivery_mode: 'carrier-pigeon' }), 'not supported');
    await refused(ciba({ backchannel_token_delivery_mode: 'ping' }), 'backchannel_client_notification_endpoint');
    await refused(ciba({ backchannel_token_delivery_mode: undefined }), 'required');
    await refused(ciba({ backchannel_client_notification_endpoint: notify }), 'ping mode only');
    await refused(ciba({ backchannel_authentication_request_signing_alg: 'PS256' }), 'not supported');
    await refused(ciba({ backchannel_user_code_parameter: true }), 'false only');
    await refused(ciba({ backchannel_user_code_parameter: 'no' }), 'true or false');
    await refused(ciba({ token_endpoint_auth_method: 'none' }), 'confidential');
    // The members without the grant type.
    await refused(
      { redirect_uris: ['https://app.example/cb'], backchannel_token_delivery_mode: 'poll' },
      'need the grant type',
    );
  });

  it('refuses a notification endpoint the ping would not reach under its SSRF guard', async () => {
    const ping = (endpoint: unknown) =>
      ciba({ backchannel_token_delivery_mode: 'ping', backchannel_client_notification_endpoint: endpoint });
    await refused(ping('http://agent.example/ciba'), 'https');
    await refused(ping('https://10.0.0.8/ciba'), 'special-use');
    await refused(ping('https://169.254.169.254/latest/meta-data'), 'special-use');
    await refused(ping('https://[::ffff:127.0.0.1]/ciba'), 'special-use');
    await refused(ping('https://[fd00::1]/ciba'), 'special-use');
    await refused(ping('https://agent.example/ciba#frag'), 'without fragment');
    await refused(ping('https://user:pw@agent.example/ciba'), 'user info');
    await refused(ping(`https://agent.example/${'x'.repeat(2100)}`), 'at most');
    await refused(ping(['https://agent.example/ciba']), 'string');
    // Where the ping's guard refuses loopback, so does the registration.
    await refused(ping(notify), 'https', strict);
    await refused(ping('https://127.0.0.1/ciba'), 'loopback', strict);
    await refused(ping('https://localhost/ciba'), 'loopback', strict);
    await refused(ping('https://[::1]/ciba'), 'loopback', strict);
    // A control: a public https endpoint is accepted.
    expect((await register(ping('https://agent.example/ciba'))).statusCode).toBe(201);
    expect((await register(ping('https://agent.example/ciba'), strict)).statusCode).toBe(201);
  });
});
