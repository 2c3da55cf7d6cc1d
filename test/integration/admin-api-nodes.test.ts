/**
 * Live everywhere: two Sigil nodes on one PostgreSQL database (a schema of this
 * run's own), each with its own client registry, as two nodes behind a load balancer. A client
 * created, updated or deleted through /admin/v1 on node A is in force on node B within 2 s, with
 * the key and client reload interval left at its default (60 s): node B sees the change counter
 * move (migration 0012_admin) and re-reads the stored clients; likewise a new API scope and API
 * resource, and their deletion (migration 0014_resources). A client created on node A is known on
 * node B at once, before B's poll: a request or token naming a client id B does not know makes B
 * look at the change counter first. An organization created, changed or deleted on node A is in
 * force on node B within 2 s too (migration 0018_organizations).
 */
import { decodeJwt } from 'jose';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSigil } from '../../src/index.js';
import {
  clientTokens,
  dropSchema,
  introspect,
  POSTGRES_URL,
  sleep,
  testConfig,
  tokenRequest,
  type TestSigil,
  uniqueSchema,
  userinfo,
} from '../helpers.js';

const schema = uniqueSchema('adminnodes');
let a: TestSigil;
let b: TestSigil;
let token: string;

async function node(): Promise<TestSigil> {
  const base = testConfig();
  const sigil = await createSigil(
    testConfig({
      storage: `${POSTGRES_URL}?schema=${schema}`,
      clients: [
        ...base.clients!.filter((c) => c.clientId === 'm2m'),
        {
          clientId: 'automation',
          clientSecrets: ['automation-secret'],
          allowedGrantTypes: ['client_credentials'],
          allowedScopes: ['sigil:admin'],
        },
      ],
    }),
    { logger: pino({ level: 'silent' }) },
  );
  // No data directory: the store is the shared PostgreSQL schema.
  return { ...sigil, dir: '' };
}

beforeAll(async () => {
  a = await node();
  b = await node();
  token = (await clientTokens(a, 'sigil:admin', ['automation', 'automation-secret'])).access_token;
});
afterAll(async () => {
  await a?.close();
  await b?.close();
  await dropSchema(schema);
});

/** Polls `check` every 100 ms until it holds; returns the milliseconds it took, failing after 2 s. */
async function within2s(check: () => Promise<boolean>): Promise<number> {
  const start = Date.now();
  while (!(await check())) {
    if (Date.now() - start > 2000) throw new Error('not in force on node B within 2 s');
    await sleep(100);
  }
  return Date.now() - start;
}

function onA(method: 'POST' | 'PATCH' | 'DELETE', url: string, body?: unknown, headers: Record<string, string> = {}) {
  return a.app.inject({
    method,
    url: `/admin/v1${url}`,
    headers: {
      authorization: `Bearer ${token}`,
      ...(body ? { 'content-type': method === 'PATCH' ? 'application/merge-patch+json' : 'application/json' } : {}),
      ...headers,
    },
    ...(body ? { payload: JSON.stringify(body) } : {}),
  });
}

describe('control characters on PostgreSQL, which refuses a NUL in text', () => {
  it('answers 404 or 422, never a 500', async () => {
    const get = (url: string) =>
      a.app.inject({ method: 'GET', url: `/admin/v1${url}`, headers: { authorization: `Bearer ${token}` } });
    expect((await get('/clients/a%00b')).statusCode).toBe(404);
    expect((await get('/users/a%00b/sessions')).statusCode).toBe(404);
    expect((await get('/users/a%00b/grants')).statusCode).toBe(404);
    expect((await get('/events?client_id=a%00b')).statusCode).toBe(422);
    const created = await onA('POST', '/clients', {
      clientId: 'a\u0000b',
      allowedGrantTypes: ['client_credentials'],
      allowedScopes: ['api1'],
    });
    expect(created.statusCode, created.body).toBe(422);
    expect((await get('/organizations/a%00b')).statusCode).toBe(404);
    expect((await get('/organizations/a%00b/members')).statusCode).toBe(404);
    expect((await onA('POST', '/organizations', { name: 'nul-check', displayName: 'N' })).statusCode).toBe(201);
    // "AA" is a NUL in base64url.
    expect((await get('/organizations/nul-check/members?cursor=AA')).statusCode).toBe(422);
    const organization = await onA('POST', '/organizations', { name: 'nul', displayName: 'a\u0000b' });
    expect(organization.statusCode, organization.body).toBe(422);
    const roles = await a.app.inject({
      method: 'PUT',
      url: '/admin/v1/organizations/nul-check/members/1',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      payload: JSON.stringify({ roles: ['a\u0000'] }),
    });
    expect(roles.statusCode).toBe(422);
  });
});

describe('a change on node A is in force on node B within 2 s', () => {
  it('creates, updates and deletes a client', async () => {
    const created = await onA('POST', '/clients', {
      clientId: 'live',
      allowedGrantTypes: ['client_credentials'],
      allowedScopes: ['api1'],
    });
    expect(created.statusCode, created.body).toBe(201);
    const { secret } = created.json();
    const onB = (scope: string) => tokenRequest(b, { grant_type: 'client_credentials', scope }, ['live', secret]);
    await within2s(async () => (await onB('api1')).statusCode === 200);

    const updated = await onA(
      'PATCH',
      '/clients/live',
      { allowedScopes: ['api1', 'api2'] },
      { 'if-match': created.headers.etag as string },
    );
    expect(updated.statusCode, updated.body).toBe(200);
    await within2s(async () => (await onB('api2')).statusCode === 200);

    expect((await onA('DELETE', '/clients/live')).statusCode).toBe(204);
    await within2s(async () => (await onB('api1')).statusCode === 401);
  });
});

describe('a client created on node A is known on node B at once', () => {
  it("B authenticates it, and B's userinfo and introspection accept the token A issued it, with no wait", async () => {
    for (const clientId of ['at-once-1', 'at-once-2']) {
      const created = await onA('POST', '/clients', {
        clientId,
        allowedGrantTypes: ['password'],
        allowedScopes: ['openid', 'profile', 'api1', 'offline_access'],
        allowOfflineAccess: true,
      });
      expect(created.statusCode, created.body).toBe(201);
      const { secret } = created.json<{ secret: string }>();
      const password = {
        grant_type: 'password',
        username: 'alice',
        password: 'alice',
        scope: 'openid api1 offline_access',
      };
      // B first, right after the creation: its poll (every second) has not run since.
      const onB = await tokenRequest(b, password, [clientId, secret]);
      expect(onB.statusCode, onB.body).toBe(200);
      const issued = await tokenRequest(a, password, [clientId, secret]);
      expect(issued.statusCode, issued.body).toBe(200);
      const accessToken = issued.json<{ access_token: string }>().access_token;
      const info = await userinfo(b, accessToken);
      expect(info.statusCode, info.body).toBe(200);
      expect((await introspect(b, accessToken, ['api1', 'api1-secret'])).json<{ active: boolean }>().active).toBe(true);
    }
    // The token of a client created on A and used on B before anything else asked B about it.
    const created = await onA('POST', '/clients', {
      clientId: 'at-once-3',
      allowedGrantTypes: ['password'],
      allowedScopes: ['openid', 'api1'],
    });
    const issued = await tokenRequest(
      a,
      { grant_type: 'password', username: 'alice', password: 'alice', scope: 'openid api1' },
      ['at-once-3', created.json<{ secret: string }>().secret],
    );
    const info = await userinfo(b, issued.json<{ access_token: string }>().access_token);
    expect(info.statusCode, info.body).toBe(200);
  });
});

describe('a resource created on node A is in force on node B within 2 s', () => {
  it('an API scope and API resource: tokens for them on B carry the new aud, and B accepts the new secret at introspection', async () => {
    expect((await onA('POST', '/api-scopes', { name: 'ledger.read' })).statusCode).toBe(201);
    const api = await onA('POST', '/api-resources', { name: 'ledger', scopes: ['ledger.read'] });
    expect(api.statusCode, api.body).toBe(201);
    const created = await onA('POST', '/clients', {
      clientId: 'ledger-bot',
      allowedGrantTypes: ['client_credentials'],
      allowedScopes: ['ledger.read'],
    });
    expect(created.statusCode, created.body).toBe(201);
    const onB = () =>
      tokenRequest(b, { grant_type: 'client_credentials', scope: 'ledger.read' }, [
        'ledger-bot',
        created.json().secret,
      ]);
    const took = await within2s(async () => (await onB()).statusCode === 200);
    expect(took).toBeLessThan(2000);
    const access = (await onB()).json().access_token as string;
    expect(decodeJwt(access).aud).toBe('ledger');
    await within2s(async () => (await introspect(b, access, ['ledger', api.json().secret])).statusCode === 200);
    expect((await introspect(b, access, ['ledger', api.json().secret])).json()).toMatchObject({
      active: true,
      scope: 'ledger.read',
    });

    // Deleted on A (client first, then resource and scope): B refuses the scope.
    expect((await onA('DELETE', '/clients/ledger-bot')).statusCode).toBe(204);
    expect((await onA('DELETE', '/api-resources/ledger')).statusCode).toBe(204);
    expect((await onA('DELETE', '/api-scopes/ledger.read')).statusCode).toBe(204);
    await within2s(async () => {
      const refused = await tokenRequest(b, { grant_type: 'client_credentials', scope: 'ledger.read' }, [
        'm2m',
        'm2m-secret',
      ]);
      return refused.statusCode === 400 && refused.json().error === 'invalid_scope';
    });
  });
});

describe('an organization changed on node A is in force on node B within 2 s', () => {
  it('created, its domains changed, deleted (migration 0018_organizations): B finds it by name, id and domain', async () => {
    const created = await onA('POST', '/organizations', {
      name: 'live-org',
      displayName: 'Live',
      domains: ['live.example'],
    });
    expect(created.statusCode, created.body).toBe(201);
    const { id } = created.json<{ organization: { id: string } }>().organization;
    const took = await within2s(async () => b.context.organizations.byName('live-org')?.id === id);
    expect(took).toBeLessThan(2000);
    expect(b.context.organizations.byId(id)?.name).toBe('live-org');
    expect(b.context.organizations.byDomain('live.example')?.name).toBe('live-org');

    const changed = await onA(
      'PATCH',
      '/organizations/live-org',
      { domains: ['moved.example'] },
      { 'if-match': created.headers.etag as string },
    );
    expect(changed.statusCode, changed.body).toBe(200);
    await within2s(async () => b.context.organizations.byDomain('moved.example')?.id === id);
    expect(b.context.organizations.byDomain('live.example')).toBeUndefined();

    expect((await onA('DELETE', '/organizations/live-org')).statusCode).toBe(204);
    await within2s(async () => b.context.organizations.byId(id) === undefined);
  });
});
