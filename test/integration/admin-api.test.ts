/**
 * The management REST API /admin/v1 over HTTP on a real SQLite store:
 * clients (create with a generated secret shown once, read without secrets, JSON Merge Patch with
 * If-Match, delete, secret rotation with a grace period that ends), config-file clients
 * read-only (409), signing keys, a user's sessions, problem details (RFC 9457) with field paths,
 * 401/403/404/409/412/415/422/428, audit events without secrets, the OpenAPI 3.1 document, and a
 * property test that no write body gives a 500.
 */
import { Validator } from '@seriousme/openapi-schema-validator';
import fc from 'fast-check';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { adminRoutes } from '../../src/endpoints/admin-api.js';
import type { SigilEvent } from '../../src/events/events.js';
import { Browser, startAuthorizeSigil } from '../authorize-helpers.js';
import { clientTokens, introspect, passwordTokens, testConfig, tokenRequest, type TestSigil } from '../helpers.js';

let sigil: TestSigil;
let admin: string;
let reader: string;
let other: string;
const events: SigilEvent[] = [];

beforeAll(async () => {
  const base = testConfig();
  sigil = await startAuthorizeSigil([
    {
      clientId: 'automation',
      clientSecrets: ['automation-secret'],
      allowedGrantTypes: ['client_credentials'],
      allowedScopes: ['sigil:admin', 'sigil:admin:read', 'api1'],
    },
    ...base.clients!.filter((c) => c.clientId === 'm2m' || c.clientId === 'ropc'),
  ]);
  sigil.subscribe((e) => void events.push(e));
  admin = (await clientTokens(sigil, 'sigil:admin', ['automation', 'automation-secret'])).access_token;
  reader = (await clientTokens(sigil, 'sigil:admin:read', ['automation', 'automation-secret'])).access_token;
  other = (await clientTokens(sigil, 'api1', ['automation', 'automation-secret'])).access_token;
});
afterAll(async () => {
  await sigil.close();
});
afterEach(() => {
  vi.useRealTimers();
});

type Method = 'GET' | 'POST' | 'PATCH' | 'DELETE';
function call(method: Method, path: string, body?: unknown, headers: Record<string, string> = {}, token = admin) {
  return sigil.app.inject({
    method,
    url: `/admin/v1${path}`,
    headers: {
      ...(token ? { authorization: `Bearer ${token}` } : {}),
      ...(body !== undefined
        ? { 'content-type': method === 'PATCH' ? 'application/merge-patch+json' : 'application/json' }
        : {}),
      ...headers,
    },
    ...(body !== undefined ? { payload: typeof body === 'string' ? body : JSON.stringify(body) } : {}),
  });
}

const newClient = (id: string) => ({
  clientId: id,
  allowedGrantTypes: ['client_credentials'],
  allowedScopes: ['api1'],
});

describe('/admin/v1 access', () => {
  it('answers 401 with a Bearer challenge without a token, 403 insufficient_scope with another scope', async () => {
    const none = await call('GET', '/clients', undefined, {}, '');
    expect(none.statusCode).toBe(401);
    expect(none.headers['www-authenticate']).toMatch(/^Bearer realm="sigil"/);
    expect(none.headers['www-authenticate']).not.toContain('error=');
    const wrong = await call('GET', '/clients', undefined, {}, other);
    expect(wrong.statusCode).toBe(403);
    expect(wrong.headers['www-authenticate']).toContain('insufficient_scope');
  });

  it('lets sigil:admin:read GET but not change', async () => {
    expect((await call('GET', '/clients', undefined, {}, reader)).statusCode).toBe(200);
    const refused = await call('POST', '/clients', newClient('by-reader'), {}, reader);
    expect(refused.statusCode).toBe(403);
    expect(refused.headers['www-authenticate']).toContain('scope="sigil:admin"');
  });
});

describe('/admin/v1/clients', () => {
  it('creates a client whose secret is shown once and works at the token endpoint; reads never show a secret', async () => {
    const created = await call('POST', '/clients', newClient('robot'));
    expect(created.statusCode, created.body).toBe(201);
    const { secret, client } = created.json();
    expect(secret).toMatch(/^[\w-]{43}$/);
    expect(client.clientSecrets).toBeUndefined();
    expect((await tokenRequest(sigil, { grant_type: 'client_credentials' }, ['robot', secret])).statusCode).toBe(200);
    const read = await call('GET', '/clients/robot');
    expect(read.statusCode).toBe(200);
    expect(read.headers.etag).toBe(created.headers.etag);
    expect(read.body).not.toContain(secret);
    expect(read.body).not.toContain('sha256:');
    expect(read.json().source).toBe('store');
    expect((await call('POST', '/clients', newClient('robot'))).statusCode).toBe(409);
  });

  it('updates by merge patch with If-Match: 428 without, 412 when stale, 415 as plain JSON', async () => {
    const created = await call('POST', '/clients', newClient('patched'));
    const etag = created.headers.etag as string;
    expect((await call('PATCH', '/clients/patched', { clientName: 'Patched' })).statusCode).toBe(428);
    const plain = await sigil.app.inject({
      method: 'PATCH',
      url: '/admin/v1/clients/patched',
      headers: { authorization: `Bearer ${admin}`, 'content-type': 'application/json', 'if-match': etag },
      payload: '{}',
    });
    expect(plain.statusCode).toBe(415);
    const ok = await call(
      'PATCH',
      '/clients/patched',
      { clientName: 'Patched', allowedScopes: ['api1', 'api2'] },
      { 'if-match': etag },
    );
    expect(ok.statusCode, ok.body).toBe(200);
    expect(ok.json().client).toMatchObject({ clientName: 'Patched', allowedScopes: ['api1', 'api2'] });
    const stale = await call('PATCH', '/clients/patched', { clientName: 'Again' }, { 'if-match': etag });
    expect(stale.statusCode).toBe(412);
    expect(stale.headers['content-type']).toContain('application/problem+json');
    // null removes a member (RFC 7396 §2).
    const removed = await call(
      'PATCH',
      '/clients/patched',
      { clientName: null },
      { 'if-match': ok.headers.etag as string },
    );
    expect(removed.json().client.clientName).toBeUndefined();
  });

  it('answers 422 naming the field path of an invalid client', async () => {
    const bad = await call('POST', '/clients', { ...newClient('bad'), allowedScopes: ['no-such-scope'] });
    expect(bad.statusCode).toBe(422);
    expect(bad.headers['content-type']).toContain('application/problem+json');
    expect(bad.json().errors).toContainEqual(expect.objectContaining({ path: 'allowedScopes.0' }));
    const typed = await call('POST', '/clients', { ...newClient('bad'), allowedGrantTypes: 'client_credentials' });
    expect(typed.statusCode).toBe(422);
    expect(typed.json().errors[0].path).toBe('allowedGrantTypes');
    const secretGiven = await call('POST', '/clients', { ...newClient('bad'), clientSecrets: ['mine'] });
    expect(secretGiven.json().errors[0].path).toBe('clientSecrets');
    expect((await call('POST', '/clients', '{not json')).statusCode).toBe(400);
  });

  it('keeps config-file clients read-only: 409 saying the config file manages them', async () => {
    const read = await call('GET', '/clients/m2m');
    expect(read.json().source).toBe('config');
    expect(read.body).not.toContain('m2m-secret');
    const patch = await call('PATCH', '/clients/m2m', { clientName: 'x' }, { 'if-match': read.headers.etag as string });
    expect(patch.statusCode).toBe(409);
    expect(patch.json().detail).toContain('managed by the config file');
    expect((await call('DELETE', '/clients/m2m')).statusCode).toBe(409);
    expect((await call('POST', '/clients/m2m/secret', {})).statusCode).toBe(409);
  });

  it("keeps the web console's built-in client read-only and its id taken", async () => {
    const read = await call('GET', '/clients/sigil-console');
    expect(read.statusCode).toBe(200);
    expect(read.json()).toMatchObject({
      source: 'config',
      client: { clientId: 'sigil-console', requireClientSecret: false },
    });
    expect(
      (
        await call(
          'PATCH',
          '/clients/sigil-console',
          { redirectUris: ['https://evil.example/cb'] },
          { 'if-match': read.headers.etag as string },
        )
      ).statusCode,
    ).toBe(409);
    expect((await call('DELETE', '/clients/sigil-console')).statusCode).toBe(409);
    const taken = await call('POST', '/clients', { ...newClient('sigil-console') });
    expect(taken.statusCode).toBe(409);
  });

  it('rotates a secret: the old one works during the grace period and stops after it', async () => {
    const { secret: first } = (await call('POST', '/clients', newClient('rotating'))).json();
    const tooLong = await call('POST', '/clients/rotating/secret', { graceSeconds: 31 * 24 * 3600 });
    expect(tooLong.statusCode).toBe(422);
    expect(tooLong.json().errors[0].path).toBe('graceSeconds');
    const rotated = await call('POST', '/clients/rotating/secret', { graceSeconds: 3600 });
    expect(rotated.statusCode, rotated.body).toBe(200);
    const { secret: second } = rotated.json();
    expect(second).not.toBe(first);
    expect(rotated.json().retiringSecretsExpireAt).toHaveLength(1);
    const token = (secret: string) => tokenRequest(sigil, { grant_type: 'client_credentials' }, ['rotating', secret]);
    expect((await token(first)).statusCode).toBe(200);
    expect((await token(second)).statusCode).toBe(200);
    vi.useFakeTimers({ toFake: ['Date'], now: Date.now() + 3601 * 1000 });
    expect((await token(first)).statusCode).toBe(401);
    expect((await token(second)).statusCode).toBe(200);
  });

  it('deletes a stored client, which stops working; 404 after', async () => {
    const { secret } = (await call('POST', '/clients', newClient('doomed'))).json();
    expect((await call('DELETE', '/clients/doomed', undefined, { 'if-match': '"stale"' })).statusCode).toBe(412);
    expect((await call('DELETE', '/clients/doomed')).statusCode).toBe(204);
    expect((await tokenRequest(sigil, { grant_type: 'client_credentials' }, ['doomed', secret])).statusCode).toBe(401);
    expect((await call('GET', '/clients/doomed')).statusCode).toBe(404);
  });

  it('audits every change with the actor, action, target and new values, never a secret', async () => {
    events.length = 0;
    const created = await call('POST', '/clients', newClient('audited'));
    const { secret } = created.json();
    await call('PATCH', '/clients/audited', { clientName: 'Audited' }, { 'if-match': created.headers.etag as string });
    const { secret: rotated } = (await call('POST', '/clients/audited/secret', { graceSeconds: 0 })).json();
    const changes = events.filter((e) => e.name === 'admin_changed');
    expect(changes.map((e) => e.action)).toEqual(['client.create', 'client.update', 'client.rotate_secret']);
    expect(
      changes.every((e) => e.clientId === 'automation' && e.target?.type === 'client' && e.target.id === 'audited'),
    ).toBe(true);
    expect(changes[1]?.changes).toEqual({ clientName: 'Audited' });
    const text = JSON.stringify(events);
    for (const s of [secret, rotated, 'sha256:']) expect(text).not.toContain(s);
  });
});

describe('/admin/v1 keys and sessions', () => {
  it('lists, rotates and retires signing keys', async () => {
    const before = (await call('GET', '/keys', undefined, {}, reader)).json().keys;
    // Never a private key, sealed or not.
    for (const k of before) expect(Object.keys(k)).not.toContain('privateKey');
    const rotated = await call('POST', '/keys/rotate', { alg: 'ES256' });
    expect(rotated.statusCode, rotated.body).toBe(200);
    const [added] = rotated.json().added;
    expect((await call('GET', '/keys')).json().keys).toHaveLength(before.length + 1);
    expect((await call('POST', '/keys/rotate', { alg: 'HS256' })).statusCode).toBe(422);
    expect((await call('POST', `/keys/${added.kid}/retire`)).statusCode).toBe(204);
    expect((await call('POST', `/keys/${added.kid}/retire`)).statusCode).toBe(404);
  });

  it("lists a user's sessions and revokes one", async () => {
    const b = new Browser(sigil);
    await b.signIn('alice');
    const listed = await call('GET', '/users/1/sessions', undefined, {}, reader);
    expect(listed.statusCode).toBe(200);
    const [session] = listed.json().sessions;
    expect(session.sid).toBeTypeOf('string');
    expect((await call('DELETE', `/users/1/sessions/${session.sid}`)).statusCode).toBe(204);
    expect((await call('GET', '/users/1/sessions')).json().sessions).toEqual([]);
    expect((await call('DELETE', `/users/1/sessions/${session.sid}`)).statusCode).toBe(404);
  });
});

describe('/admin/v1 deleting a client (RFC 7592 §2.3)', () => {
  it('revokes what was issued to it: a client later made with the same id gets none of it (invalid_grant, introspection inactive)', async () => {
    const client = {
      clientId: 'gone',
      allowedGrantTypes: ['password'],
      allowedScopes: ['openid', 'api1', 'offline_access'],
      allowOfflineAccess: true,
      accessTokenType: 'reference',
    };
    const created = await call('POST', '/clients', client);
    expect(created.statusCode, created.body).toBe(201);
    const tokens = await passwordTokens(sigil, {
      client: ['gone', created.json().secret],
      username: 'bob',
      scope: 'openid api1 offline_access',
    });
    expect((await introspect(sigil, tokens.access_token)).json().active).toBe(true);
    expect((await call('DELETE', '/clients/gone')).statusCode).toBe(204);
    const again = await call('POST', '/clients', client);
    expect(again.statusCode, again.body).toBe(201);
    const refreshed = await tokenRequest(
      sigil,
      { grant_type: 'refresh_token', refresh_token: tokens.refresh_token ?? '' },
      ['gone', again.json().secret],
    );
    expect(refreshed.statusCode, refreshed.body).toBe(400);
    expect(refreshed.json().error).toBe('invalid_grant');
    expect((await introspect(sigil, tokens.access_token)).json()).toEqual({ active: false });
    // The new client's own grants work.
    const fresh = await passwordTokens(sigil, {
      client: ['gone', again.json().secret],
      username: 'bob',
      scope: 'openid api1 offline_access',
    });
    expect(
      (
        await tokenRequest(sigil, { grant_type: 'refresh_token', refresh_token: fresh.refresh_token ?? '' }, [
          'gone',
          again.json().secret,
        ])
      ).statusCode,
    ).toBe(200);
    expect((await call('DELETE', '/clients/gone')).statusCode).toBe(204);
  });

  it('ends its client_credentials JWT access tokens (no stored mark): 401 at /admin/v1, inactive at introspection', async () => {
    const created = await call('POST', '/clients', {
      clientId: 'gone-robot',
      allowedGrantTypes: ['client_credentials'],
      allowedScopes: ['sigil:admin:read', 'api1'],
    });
    expect(created.statusCode, created.body).toBe(201);
    const token = (await clientTokens(sigil, 'sigil:admin:read', ['gone-robot', created.json().secret])).access_token;
    const apiToken = (await clientTokens(sigil, 'api1', ['gone-robot', created.json().secret])).access_token;
    expect((await call('GET', '/clients', undefined, {}, token)).statusCode).toBe(200);
    expect((await introspect(sigil, apiToken)).json().active).toBe(true);
    expect((await call('DELETE', '/clients/gone-robot')).statusCode).toBe(204);
    expect((await introspect(sigil, apiToken)).json()).toEqual({ active: false });
    const after = await call('GET', '/clients', undefined, {}, token);
    expect(after.statusCode, after.body).toBe(401);
    expect(after.headers['www-authenticate']).toContain('invalid_token');
  });
});

describe("/admin/v1 a user's grants", () => {
  it('lists a refresh token grant once across rotations and revokes it: the refresh token stops working', async () => {
    const first = await passwordTokens(sigil, { username: 'bob', scope: 'openid api1 offline_access' });
    const refresh = (token: string) =>
      tokenRequest(sigil, { grant_type: 'refresh_token', refresh_token: token }, ['ropc', 'ropc-secret']);
    const rotated = (await refresh(first.refresh_token ?? '')).json();
    const subject = '2'; // bob
    const listed = await call('GET', `/users/${subject}/grants`, undefined, {}, reader);
    expect(listed.statusCode, listed.body).toBe(200);
    expect(listed.json().grants).toEqual([
      expect.objectContaining({
        clientId: 'ropc',
        type: 'refresh_token',
        scopes: expect.arrayContaining(['api1', 'offline_access']),
      }),
    ]);
    const revoked = await call('DELETE', `/users/${subject}/grants/ropc`);
    expect(revoked.json()).toEqual({ revoked: 1 });
    expect((await refresh(rotated.refresh_token)).statusCode).toBe(400);
    expect((await call('GET', `/users/${subject}/grants`)).json().grants).toEqual([]);
    expect((await call('DELETE', `/users/${subject}/grants/ropc`)).statusCode).toBe(404);
  });
});

describe('/admin/v1/events', () => {
  it('queries the stored audit events by type, client, subject and time, a page at a time, never with a secret', async () => {
    const { secret } = (await call('POST', '/clients', newClient('evented'))).json();
    await call('POST', '/clients/evented/secret', { graceSeconds: 0 });
    await sigil.context.management.audit.flush();
    const get = (query: string) => call('GET', `/events?${query}`, undefined, {}, reader);
    const changes = await get('type=admin_changed&client_id=automation&limit=200');
    expect(changes.statusCode, changes.body).toBe(200);
    const targets = changes.json().events.map((e: SigilEvent) => `${e.action} ${e.target?.type}:${e.target?.id}`);
    expect(targets.slice(0, 2)).toEqual(['client.rotate_secret client:evented', 'client.create client:evented']);
    expect(changes.body).not.toContain(secret);
    expect(changes.body).not.toContain('sha256:');
    // Pages of 2 cover the same events, newest first, with no repeats.
    const seen: string[] = [];
    let cursor: string | undefined;
    do {
      const page = (await get(`type=admin_changed&limit=2${cursor ? `&cursor=${cursor}` : ''}`)).json();
      expect(page.events.length).toBeLessThanOrEqual(2);
      seen.push(...page.events.map((e: SigilEvent) => `${e.time} ${e.action} ${e.target?.type}:${e.target?.id}`));
      cursor = page.next;
    } while (cursor);
    expect(seen).toHaveLength(changes.json().events.length);
    // (The rotation test drove the clock an hour ahead: its events are that late.)
    const future = new Date(Date.now() + 3 * 3600_000).toISOString();
    expect((await get(`from=${encodeURIComponent(future)}`)).json().events).toEqual([]);
    expect(
      (await get(`subject=1&type=user_login_succeeded`)).json().events.every((e: SigilEvent) => e.subjectId === '1'),
    ).toBe(true);
    const bad = await get('limit=1000');
    expect(bad.statusCode).toBe(422);
    expect(bad.json().errors[0].path).toBe('limit');
    expect((await get('cursor=bm90IGEgY3Vyc29y')).statusCode).toBe(422);
    expect((await get('from=yesterday')).json().errors[0].path).toBe('from');
  });

  it('removes events older than admin.auditRetentionSeconds', async () => {
    await sigil.context.management.audit.flush();
    expect((await call('GET', '/events?limit=1')).json().events).toHaveLength(1);
    const retention = sigil.context.config.admin.auditRetentionSeconds;
    await sigil.context.management.audit.prune(Date.now() + retention * 1000 + 3 * 3600_000);
    expect((await call('GET', '/events?limit=1')).json().events).toHaveLength(0);
  });
});

describe('/admin/v1/openapi.json', () => {
  it('is a valid OpenAPI 3.1 document listing every route', async () => {
    const res = await sigil.app.inject({ method: 'GET', url: '/admin/v1/openapi.json' });
    expect(res.statusCode).toBe(200);
    const doc = res.json();
    const result = await new Validator().validate(doc);
    expect(result.errors ?? [], JSON.stringify(result.errors)).toEqual([]);
    expect(result.valid).toBe(true);
    expect(doc.paths['/admin/v1/openapi.json'].get).toBeDefined();
    for (const route of adminRoutes()) {
      const path = route.url.replace(/:(\w+)/g, '{$1}');
      expect(doc.paths[path]?.[route.method.toLowerCase()], `${route.method} ${path}`).toBeDefined();
      // Registered on the server too.
      expect(sigil.app.hasRoute({ method: route.method as Method, url: route.url })).toBe(true);
    }
  });
});

describe('no request body gives a 500', () => {
  it('holds for arbitrary JSON on every write route', async () => {
    const writes = adminRoutes().filter((r) => r.method !== 'GET');
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...writes),
        fc.oneof(
          fc.jsonValue({ maxDepth: 4 }),
          fc.record({ clientId: fc.string(), allowedGrantTypes: fc.jsonValue() }, { requiredKeys: [] }),
        ),
        async (route, body) => {
          const path = route.url
            .replace('/admin/v1', '')
            .replace(':clientId', 'robot')
            .replace(':kid', 'nokid')
            .replace(':subject', '1')
            .replace(':sid', 'nosid');
          const res = await call(route.method as Method, path, JSON.stringify(body ?? null), { 'if-match': '*' });
          expect(res.statusCode).toBeLessThan(500);
        },
      ),
      { numRuns: 150 },
    );
  });
});
