/**
 * A client deleted through /admin/v1 and created again with the same client_id is another client:
 * the self-contained JWT access tokens (client_credentials, no stored row to revoke) issued to the
 * old one stay refused, at introspection and at Sigil's own protected resources (/admin/v1), while
 * the new client's tokens work (RFC 7592 §2.3); a user's tokens too, should the revocation at the
 * deletion have been missed, and as a token exchange's subject_token. Real SQLite and PostgreSQL, over HTTP (inject).
 */
import { decodeJwt } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAuthorizeSigil } from '../authorize-helpers.js';
import { clientTokens, dropSchema, introspect, passwordTokens, POSTGRES_URL, testConfig, tokenRequest, type TestSigil, uniqueSchema, userinfo } from '../helpers.js';

const TOKEN_EXCHANGE = 'urn:ietf:params:oauth:grant-type:token-exchange';

describe.each(['sqlite', 'postgres'] as const)('a client re-created with the same id on %s', (dialect) => {
  const schema = uniqueSchema('recreated');
  let sigil: TestSigil;
  let admin: string;

  beforeAll(async () => {
    sigil = await startAuthorizeSigil(
      [
        { clientId: 'automation', clientSecrets: ['automation-secret'], allowedGrantTypes: ['client_credentials'], allowedScopes: ['sigil:admin'] },
        ...testConfig().clients!.filter((c) => c.clientId === 'm2m'),
        { clientId: 'exchanger', clientSecrets: ['exchanger-secret'], allowedGrantTypes: [TOKEN_EXCHANGE], allowedScopes: ['api1'], tokenExchangeSubjectAudiences: ['api1'] },
      ],
      dialect === 'postgres' ? { storage: `${POSTGRES_URL}?schema=${schema}` } : {},
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
      headers: { authorization: `Bearer ${token}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
      ...(body !== undefined ? { payload: JSON.stringify(body) } : {}),
    });
  const client = { clientId: 'reborn', allowedGrantTypes: ['client_credentials'], allowedScopes: ['api1', 'sigil:admin:read'] };
  const create = async (body: unknown = client) => {
    const res = await call('POST', '/clients', admin, body);
    expect(res.statusCode, res.body).toBe(201);
    return res.json<{ secret: string }>().secret;
  };
  /** Waits (with a deadline) until the clock has left the second `iat`, so a creation now is later. */
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

    expect((await call('DELETE', '/clients/reborn', admin)).statusCode).toBe(204);
    expect((await introspect(sigil, old)).json()).toEqual({ active: false });
    await afterSecond(Number(decodeJwt(old).iat));
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
    const ropc = { clientId: 'reborn-ropc', allowedGrantTypes: ['password'], allowedScopes: ['openid', 'api1', 'offline_access'], allowOfflineAccess: true };
    const first = await create(ropc);
    const old = await passwordTokens(sigil, { client: ['reborn-ropc', first], scope: 'openid api1 offline_access' });
    // Removed around ClientAdmin (as a crash between the deletion and its revocation would leave it).
    expect(await sigil.context.store.clients.removeClient('reborn-ropc')).toBe(true);
    await afterSecond(Number(decodeJwt(old.access_token).iat));
    const second = await create(ropc);

    const refresh = await tokenRequest(sigil, { grant_type: 'refresh_token', refresh_token: old.refresh_token! }, ['reborn-ropc', second]);
    expect(refresh.statusCode).toBe(400);
    expect(refresh.json().error).toBe('invalid_grant');
    expect((await introspect(sigil, old.access_token)).json()).toEqual({ active: false });
    expect((await userinfo(sigil, old.access_token)).statusCode).toBe(401);
    const fresh = await passwordTokens(sigil, { client: ['reborn-ropc', second], scope: 'openid api1 offline_access' });
    expect((await userinfo(sigil, fresh.access_token)).statusCode).toBe(200);
    expect((await tokenRequest(sigil, { grant_type: 'refresh_token', refresh_token: fresh.refresh_token! }, ['reborn-ropc', second])).statusCode).toBe(200);
  });

  it("refuses a removed client's user JWT (no stored row) as another client's token exchange subject_token", async () => {
    const ropc = { clientId: 'gone-ropc', allowedGrantTypes: ['password'], allowedScopes: ['openid', 'api1'] };
    const first = await create(ropc);
    const old = (await passwordTokens(sigil, { client: ['gone-ropc', first], scope: 'openid api1' })).access_token;
    const exchange = () =>
      tokenRequest(sigil, { grant_type: TOKEN_EXCHANGE, subject_token: old, subject_token_type: 'urn:ietf:params:oauth:token-type:access_token' }, ['exchanger', 'exchanger-secret']);
    expect((await exchange()).statusCode).toBe(200);
    expect((await call('DELETE', '/clients/gone-ropc', admin)).statusCode).toBe(204);
    expect((await exchange()).json().error).toBe('invalid_request');
    await afterSecond(Number(decodeJwt(old).iat));
    await create(ropc);
    expect((await exchange()).json().error).toBe('invalid_request');
  });
});
