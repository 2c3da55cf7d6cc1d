/**
 * A client deleted through /admin/v1 and created again with the same client_id is another client:
 * the self-contained JWT access tokens (client_credentials, no stored row to revoke) issued to the
 * old one stay refused, at introspection and at Sigil's own protected resources (/admin/v1), while
 * the new client's tokens work (RFC 7592 §2.3); a user's tokens too, should the revocation at the
 * deletion have been missed, and as a token exchange's subject_token. A pending sign-in of the
 * deleted client ends with it (its consent does not carry over to the new client), its queued
 * back-channel logout deliveries are dropped (a real receiver that comes up later gets nothing),
 * and while Client ID Metadata Documents are enabled no stored client may take an https:// id
 * (a deleted one's JWTs would pass for the document's). Real SQLite and PostgreSQL, over HTTP (inject).
 */
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { decodeJwt } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AdminError } from '../../src/admin/errors.js';
import {
  authorizeUrl,
  Browser,
  codeParams,
  getCode,
  input,
  isConsentPage,
  isLoginPage,
  pkce,
  redeem,
  startAuthorizeSigil,
  webLike,
} from '../authorize-helpers.js';
import {
  clientTokens,
  dropSchema,
  introspect,
  passwordTokens,
  POSTGRES_URL,
  settled,
  testConfig,
  tokenRequest,
  type TestSigil,
  uniqueSchema,
  userinfo,
} from '../helpers.js';
import { LogoutReceiver } from '../logout-receiver.js';

/** A loopback port nothing listens on (yet): a logout receiver that is down. */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  const { port } = server.address() as AddressInfo;
  await new Promise((ok) => server.close(ok));
  return port;
}

const TOKEN_EXCHANGE = 'urn:ietf:params:oauth:grant-type:token-exchange';

describe.each(['sqlite', 'postgres'] as const)('a client re-created with the same id on %s', (dialect) => {
  const schema = uniqueSchema('recreated');
  let sigil: TestSigil;
  let admin: string;
  let receiverPort: number;

  beforeAll(async () => {
    receiverPort = await freePort();
    sigil = await startAuthorizeSigil(
      [
        webLike('bc-stays', { backChannelLogoutUri: `http://127.0.0.1:${receiverPort}/stays` }),
        {
          clientId: 'automation',
          clientSecrets: ['automation-secret'],
          allowedGrantTypes: ['client_credentials'],
          allowedScopes: ['sigil:admin'],
        },
        ...testConfig().clients!.filter((c) => c.clientId === 'm2m'),
        {
          clientId: 'exchanger',
          clientSecrets: ['exchanger-secret'],
          allowedGrantTypes: [TOKEN_EXCHANGE],
          allowedScopes: ['api1'],
          tokenExchangeSubjectAudiences: ['api1'],
        },
      ],
      {
        backChannelLogout: { pollSeconds: 1, timeoutSeconds: 2, retrySeconds: 60 },
        // A client no longer known is posted to under the SSRF guard; loopback is allowed here so
        // that a deleted client's delivery left queued would reach the receiver (and fail the test).
        clientIdMetadataDocuments: { allowLoopback: true },
        ...(dialect === 'postgres' ? { storage: `${POSTGRES_URL}?schema=${schema}` } : {}),
      },
    );
    admin = (await clientTokens(sigil, 'sigil:admin', ['automation', 'automation-secret'])).access_token;
  });
  afterAll(async () => {
    await sigil?.close();
    if (dialect === 'postgres') await dropSchema(schema);
  });

  const call = (method: 'GET' | 'POST' | 'DELETE', path: string, token: string, body?: unknown) =>
    sigil.app.inject({
      method,
      url: `/admin/v1${path}`,
      headers: {
        authorization: `Bearer ${token}`,
        ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
      },
      ...(body !== undefined ? { payload: JSON.stringify(body) } : {}),
    });
  const client = {
    clientId: 'reborn',
    allowedGrantTypes: ['client_credentials'],
    allowedScopes: ['api1', 'sigil:admin:read'],
  };
  const create = async (body: unknown = client) => {
    const res = await call('POST', '/clients', admin, body);
    expect(res.statusCode, res.body).toBe(201);
    return res.json<{ secret: string }>().secret;
  };
  /**
   * Waits (with a deadline) until the clock has left the second `iat`, so a removal now falls in a
   * later second than the token (one of the removal's own second is accepted:
   * `ClientRegistry.issuedAfterRemoval`).
   */
  const afterSecond = async (iat: number) => {
    const deadline = Date.now() + 5000;
    while (Math.floor(Date.now() / 1000) <= iat) {
      if (Date.now() > deadline) throw new Error('the clock did not move on');
      await new Promise((r) => setTimeout(r, 50));
    }
  };

  it("refuses the old client's JWT at introspection and /admin/v1, and accepts the new client's", async () => {
    const first = await create();
    const old = (await clientTokens(sigil, 'api1 sigil:admin:read', ['reborn', first])).access_token;
    expect((await introspect(sigil, old)).json().active).toBe(true);
    expect((await call('GET', '/clients', old)).statusCode).toBe(200);

    await afterSecond(Number(decodeJwt(old).iat));
    expect((await call('DELETE', '/clients/reborn', admin)).statusCode).toBe(204);
    expect((await introspect(sigil, old)).json()).toEqual({ active: false });
    const second = await create();

    expect((await introspect(sigil, old)).json()).toEqual({ active: false });
    const refused = await call('GET', '/clients', old);
    expect(refused.statusCode).toBe(401);
    expect(refused.headers['www-authenticate']).toContain('invalid_token');

    const fresh = (await clientTokens(sigil, 'api1 sigil:admin:read', ['reborn', second])).access_token;
    expect((await introspect(sigil, fresh)).json()).toMatchObject({ active: true, client_id: 'reborn' });
    expect((await call('GET', '/clients', fresh)).statusCode).toBe(200);
  });

  it("refuses an earlier client's refresh and access tokens for a user even when its revocation was missed", async () => {
    const ropc = {
      clientId: 'reborn-ropc',
      allowedGrantTypes: ['password'],
      allowedScopes: ['openid', 'api1', 'offline_access'],
      allowOfflineAccess: true,
    };
    const first = await create(ropc);
    const old = await passwordTokens(sigil, { client: ['reborn-ropc', first], scope: 'openid api1 offline_access' });
    // Removed around ClientAdmin (as a crash between the deletion and its revocation would leave it).
    await afterSecond(Number(decodeJwt(old.access_token).iat));
    expect(await sigil.context.store.clients.removeClient('reborn-ropc')).toBe(true);
    const second = await create(ropc);

    const refresh = await tokenRequest(sigil, { grant_type: 'refresh_token', refresh_token: old.refresh_token! }, [
      'reborn-ropc',
      second,
    ]);
    expect(refresh.statusCode).toBe(400);
    expect(refresh.json().error).toBe('invalid_grant');
    expect((await introspect(sigil, old.access_token)).json()).toEqual({ active: false });
    expect((await userinfo(sigil, old.access_token)).statusCode).toBe(401);
    const fresh = await passwordTokens(sigil, { client: ['reborn-ropc', second], scope: 'openid api1 offline_access' });
    expect((await userinfo(sigil, fresh.access_token)).statusCode).toBe(200);
    expect(
      (
        await tokenRequest(sigil, { grant_type: 'refresh_token', refresh_token: fresh.refresh_token! }, [
          'reborn-ropc',
          second,
        ])
      ).statusCode,
    ).toBe(200);
  });

  it("refuses a removed client's user JWT (no stored row) as another client's token exchange subject_token", async () => {
    const ropc = { clientId: 'gone-ropc', allowedGrantTypes: ['password'], allowedScopes: ['openid', 'api1'] };
    const first = await create(ropc);
    const old = (await passwordTokens(sigil, { client: ['gone-ropc', first], scope: 'openid api1' })).access_token;
    const exchange = () =>
      tokenRequest(
        sigil,
        {
          grant_type: TOKEN_EXCHANGE,
          subject_token: old,
          subject_token_type: 'urn:ietf:params:oauth:token-type:access_token',
        },
        ['exchanger', 'exchanger-secret'],
      );
    expect((await exchange()).statusCode).toBe(200);
    await afterSecond(Number(decodeJwt(old).iat));
    expect((await call('DELETE', '/clients/gone-ropc', admin)).statusCode).toBe(204);
    expect((await exchange()).json().error).toBe('invalid_request');
    await create(ropc);
    expect((await exchange()).json().error).toBe('invalid_request');
  });

  /** A code-flow client as the management API takes it (Sigil generates the secret). */
  const browserClient = (clientId: string, extra: Record<string, unknown> = {}) => {
    const { clientSecrets: _secrets, clientName: _name, ...rest } = webLike(clientId);
    return { ...rest, ...extra };
  };

  it('ends a pending sign-in of a deleted client: its consent does not carry over to a client re-created with the id', async () => {
    const client = browserClient('pending-web', { requireConsent: true });
    await create(client);
    const b = new Browser(sigil);
    const { challenge } = pkce();
    const params = codeParams(challenge, { client_id: 'pending-web', scope: 'openid' });
    const login = await b.follow(await b.get(authorizeUrl(params)));
    expect(isLoginPage(login)).toBe(true);
    const consent = await b.follow(await b.submitLogin(login, 'alice', 'alice'));
    expect(isConsentPage(consent)).toBe(true);
    // Consent given: the pending request now holds it and sends the browser on to resume.
    const answered = await b.post('/consent', {
      csrf_token: input(consent.body, 'csrf_token'),
      interaction: input(consent.body, 'interaction'),
      button: 'yes',
    });
    expect(answered.status).toBe(303);
    expect(answered.location).toContain('/connect/authorize/resume?interaction=');

    expect((await call('DELETE', '/clients/pending-web', admin)).statusCode).toBe(204);
    await create(client);
    const resumed = await b.follow(answered);
    expect(resumed.status, resumed.location).toBe(400);
    expect(resumed.location).toBeUndefined();
    expect(resumed.body).not.toContain('code=');

    // The new client's request asks for consent again.
    expect(isConsentPage(await b.follow(await b.get(authorizeUrl(params))))).toBe(true);
  });

  it("drops a deleted client's queued back-channel logout deliveries: its receiver, up later, gets nothing", async () => {
    const secret = await create(
      browserClient('bc-gone', { backChannelLogoutUri: `http://127.0.0.1:${receiverPort}/gone` }),
    );
    const b = new Browser(sigil);
    await b.signIn('alice');
    const { verifier, challenge } = pkce();
    let hint = '';
    for (const [client, clientSecret] of [
      ['bc-gone', secret],
      ['bc-stays', 'bc-stays-secret'],
    ] as const) {
      const code = await getCode(b, codeParams(challenge, { client_id: client, scope: 'openid' }));
      const res = await redeem(sigil, code, { client, secret: clientSecret, verifier });
      expect(res.statusCode, res.body).toBe(200);
      hint = res.json<{ id_token: string }>().id_token;
    }
    const before = (await sigil.context.store.logout.outbox()).depth;
    // The receiver is down: both deliveries fail and stay queued for retries.
    await b.get(`/connect/endsession?${new URLSearchParams({ id_token_hint: hint })}`);
    expect((await sigil.context.store.logout.outbox()).depth).toBe(before + 2);

    expect((await call('DELETE', '/clients/bc-gone', admin)).statusCode).toBe(204);
    expect((await sigil.context.store.logout.outbox()).depth).toBe(before + 1);

    const receiver = await LogoutReceiver.start(receiverPort);
    try {
      // The remaining client's retry arrives and the queue empties: a delivery of the deleted
      // client still queued would have been sent by now.
      await receiver.waitFor(() => receiver.delivered.length, 1);
      expect(
        await settled(
          async () => (await sigil.context.store.logout.outbox()).depth,
          (d) => d === before,
        ),
      ).toBe(before);
      expect(receiver.received.map((r) => r.path)).toEqual(['/stays']);
    } finally {
      await receiver.close();
    }
  });

  it('refuses a stored client with an https:// id while metadata documents are enabled, naming the field', async () => {
    const id = 'https://agent.example/client';
    const res = await call('POST', '/clients', admin, browserClient(id, { requireClientSecret: false }));
    expect(res.statusCode, res.body).toBe(422);
    expect(res.body).toContain('clientId');
    expect(res.body).toContain('clientIdMetadataDocuments.enabled');
    expect((await call('GET', `/clients/${encodeURIComponent(id)}`, admin)).statusCode).toBe(404);
    // The command line's door (`sigil clients add`) refuses it too.
    await expect(
      sigil.context.management.clients.create({
        ...browserClient(id),
        clientSecrets: ['a-long-enough-secret-for-this-client-0123'],
      }),
    ).rejects.toThrow(AdminError);
  });
});
