/**
 * Organizations managed through /admin/v1 over HTTP on a real SQLite file: create, read,
 * merge-patch with If-Match (428 without, 412 stale), delete; a config-file organization's own
 * settings are read-only (409) while its members are managed; a domain belongs to one
 * organization at most (409, config against stored and stored against stored); identity providers
 * must be in force, and a stored one an organization names cannot be deleted; members are users
 * (config-file, stored or a directory's: an unknown subject is 404, a directory that cannot answer
 * 503), paged, and leave with a deleted user; tokens without `sigil:admin` are refused; bounded
 * inputs answer 4xx, never 500; every change is audited and in force on this node when the call
 * returns.
 */
import { join } from 'node:path';
import fc from 'fast-check';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SigilEvent } from '../../src/events/events.js';
import { createSigil, DirectoryUnavailable, type User, type UserDirectory } from '../../src/index.js';
import { configOrganizationId } from '../../src/organizations/organization.js';
import { clientTokens, startSigil, tempDir, testConfig, type TestSigil } from '../helpers.js';

type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

/** A user directory of one user (`hr-1`) that can be taken down. */
class OneUserDirectory implements UserDirectory {
  readonly name = 'hr';
  down = false;
  async authenticate(): Promise<User | undefined> {
    return undefined;
  }
  findBySubject(subjectId: string): Promise<User | undefined> {
    return this.lookUp(subjectId === 'hr-1');
  }
  findByUsername(username: string): Promise<User | undefined> {
    return this.lookUp(username === 'harriet');
  }
  private async lookUp(found: boolean): Promise<User | undefined> {
    if (this.down) throw new DirectoryUnavailable(this.name, 'down for the test');
    return found ? { subjectId: 'hr-1', username: 'harriet', tenant: null, isActive: true, claims: {} } : undefined;
  }
}
const directory = new OneUserDirectory();

let sigil: TestSigil;
let admin: string;
let reader: string;
let other: string;
const events: SigilEvent[] = [];

beforeAll(async () => {
  const base = testConfig();
  sigil = await startSigil(
    {
      clients: [
        ...(base.clients ?? []),
        {
          clientId: 'automation',
          clientSecrets: ['automation-secret'],
          allowedGrantTypes: ['client_credentials'],
          allowedScopes: ['sigil:admin', 'sigil:admin:read'],
        },
      ],
      identityProviders: [{ name: 'acme-sso', authority: 'https://sso.acme.example', clientId: 'sigil' }],
      organizations: [
        { name: 'acme', displayName: 'Acme', domains: ['acme.example'], identityProviders: ['acme-sso'] },
      ],
    },
    { userDirectories: [directory] },
  );
  sigil.subscribe((e) => void events.push(e));
  admin = (await clientTokens(sigil, 'sigil:admin', ['automation', 'automation-secret'])).access_token;
  reader = (await clientTokens(sigil, 'sigil:admin:read', ['automation', 'automation-secret'])).access_token;
  other = (await clientTokens(sigil, 'api1')).access_token;
});
afterAll(async () => {
  await sigil?.close();
});

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
const created = async (body: Record<string, unknown>) => {
  const res = await call('POST', '/organizations', body);
  expect(res.statusCode, res.body).toBe(201);
  return res;
};
const inForce = (name: string) => sigil.context.organizations.byName(name);
const members = async (name: string) =>
  (await call('GET', `/organizations/${name}/members`)).json<{ members: { subject: string }[] }>().members;

describe('/admin/v1/organizations', () => {
  it('answers 401 without a token, 403 to a token without sigil:admin, and lets sigil:admin:read read only', async () => {
    expect((await call('GET', '/organizations', undefined, {}, '')).statusCode).toBe(401);
    for (const [method, path, body] of [
      ['GET', '/organizations', undefined],
      ['POST', '/organizations', { name: 'x', displayName: 'X' }],
      ['PUT', '/organizations/acme/members/1', { roles: [] }],
    ] as const) {
      const res = await call(method, path, body, {}, other);
      expect(res.statusCode, `${method} ${path}`).toBe(403);
      expect(res.headers['www-authenticate']).toContain('insufficient_scope');
    }
    expect((await call('GET', '/organizations', undefined, {}, reader)).statusCode).toBe(200);
    expect((await call('GET', '/organizations/acme/members', undefined, {}, reader)).statusCode).toBe(200);
    for (const [method, path, body] of [
      ['POST', '/organizations', { name: 'by-reader', displayName: 'X' }],
      ['PATCH', '/organizations/acme', { displayName: 'X' }],
      ['DELETE', '/organizations/acme', undefined],
      ['PUT', '/organizations/acme/members/1', { roles: [] }],
      ['DELETE', '/organizations/acme/members/1', undefined],
    ] as const)
      expect((await call(method, path, body, { 'if-match': '*' }, reader)).statusCode, `${method} ${path}`).toBe(403);
  });

  it("shows the config file's organization with its derived id; its settings are read-only (409), its members not", async () => {
    const list = await call('GET', '/organizations');
    const acme = {
      id: configOrganizationId('acme'),
      name: 'acme',
      displayName: 'Acme',
      domains: ['acme.example'],
      identityProviders: ['acme-sso'],
      membership: 'invite',
      source: 'config',
    };
    expect(list.json().organizations).toContainEqual(acme);
    const one = await call('GET', '/organizations/acme');
    expect(one.json()).toEqual({ organization: acme });
    expect(one.headers.etag).toMatch(/^"[\w-]+"$/);
    const patched = await call('PATCH', '/organizations/acme', { displayName: 'X' }, { 'if-match': '*' });
    expect(patched.statusCode).toBe(409);
    expect(patched.headers['content-type']).toContain('application/problem+json');
    expect(patched.json().title).toBe('Managed by the config file');
    expect((await call('DELETE', '/organizations/acme')).statusCode).toBe(409);

    const put = await call('PUT', '/organizations/acme/members/1', { roles: ['admin', 'billing'] });
    expect(put.statusCode, put.body).toBe(201);
    expect(put.json()).toEqual({ member: { subject: '1', roles: ['admin', 'billing'] } });
    const again = await call('PUT', '/organizations/acme/members/1', { roles: ['admin'] });
    expect(again.statusCode).toBe(200);
    expect((await call('GET', '/organizations/acme/members')).json()).toEqual({
      members: [{ subject: '1', roles: ['admin'] }],
    });
    expect((await call('DELETE', '/organizations/acme/members/1')).statusCode).toBe(204);
    expect((await call('DELETE', '/organizations/acme/members/1')).statusCode).toBe(404);
    expect(await members('acme')).toEqual([]);
  });

  it('creates, reads, changes with If-Match (428 without, 412 stale) and deletes a stored organization, in force at once', async () => {
    const res = await created({ name: 'globex', displayName: 'Globex', domains: ['Globex.example'] });
    const { organization } = res.json();
    expect(organization).toEqual({
      id: expect.stringMatching(/^org_[\w-]{22}$/),
      name: 'globex',
      displayName: 'Globex',
      domains: ['globex.example'],
      identityProviders: [],
      membership: 'invite',
      source: 'store',
    });
    expect(organization.id).not.toBe(configOrganizationId('globex'));
    expect(inForce('globex')).toMatchObject({ id: organization.id, source: 'store' });
    expect(sigil.context.organizations.byDomain('globex.example')?.name).toBe('globex');
    const etag = res.headers.etag as string;
    expect((await call('GET', '/organizations/globex')).headers.etag).toBe(etag);
    expect((await call('POST', '/organizations', { name: 'globex', displayName: 'Again' })).statusCode).toBe(409);
    expect((await call('POST', '/organizations', { name: 'acme', displayName: 'Shadow' })).statusCode).toBe(409);

    const patch = { displayName: 'Globex Corp', membership: 'domain', domains: ['globex.example', 'gx.example'] };
    const missing = await call('PATCH', '/organizations/globex', patch);
    expect(missing.statusCode).toBe(428);
    expect(missing.headers['content-type']).toContain('application/problem+json');
    expect((await call('PATCH', '/organizations/globex', patch, { 'if-match': '"stale"' })).statusCode).toBe(412);
    const changed = await call('PATCH', '/organizations/globex', patch, { 'if-match': etag });
    expect(changed.statusCode, changed.body).toBe(200);
    expect(changed.json().organization).toMatchObject({ ...patch, id: organization.id });
    expect(changed.headers.etag).not.toBe(etag);
    expect(inForce('globex')?.displayName).toBe('Globex Corp');
    expect(sigil.context.organizations.byDomain('gx.example')?.name).toBe('globex');
    // The old ETag is stale now, for a change and for a deletion.
    expect((await call('PATCH', '/organizations/globex', { displayName: 'X' }, { 'if-match': etag })).statusCode).toBe(
      412,
    );
    const rename = await call('PATCH', '/organizations/globex', { name: 'other' }, { 'if-match': '*' });
    expect(rename.statusCode).toBe(422);
    expect(rename.json().errors).toEqual([{ path: 'name', message: 'a name cannot change' }]);
    const removal = await call('PATCH', '/organizations/globex', { displayName: null }, { 'if-match': '*' });
    expect(removal.statusCode).toBe(422);
    expect(removal.json().errors[0].path).toBe('displayName');
    expect((await call('DELETE', '/organizations/globex', undefined, { 'if-match': etag })).statusCode).toBe(412);

    await call('PUT', '/organizations/globex/members/2', { roles: [] });
    const deleted = await call('DELETE', '/organizations/globex', undefined, {
      'if-match': changed.headers.etag as string,
    });
    expect(deleted.statusCode).toBe(204);
    expect(inForce('globex')).toBeUndefined();
    expect((await call('GET', '/organizations/globex')).statusCode).toBe(404);
    expect((await call('GET', '/organizations/globex/members')).statusCode).toBe(404);
    expect((await call('DELETE', '/organizations/globex')).statusCode).toBe(404);
    // A new organization of that name starts without the old one's members, under a new id.
    const again = (await created({ name: 'globex', displayName: 'Globex' })).json().organization;
    expect(again.id).not.toBe(organization.id);
    expect(await members('globex')).toEqual([]);
  });

  it('refuses a domain another organization holds (409): config against stored, stored against stored', async () => {
    const config = await call('POST', '/organizations', {
      name: 'copycat',
      displayName: 'C',
      domains: ['ACME.example'],
    });
    expect(config.statusCode).toBe(409);
    expect(config.json().detail).toContain('"acme.example" is a domain of organization "acme"');
    expect(config.json().errors).toEqual([{ path: 'domains.0', message: 'a domain of organization "acme"' }]);
    const first = await created({ name: 'initech', displayName: 'Initech', domains: ['initech.example'] });
    const second = await call('POST', '/organizations', {
      name: 'initrode',
      displayName: 'Initrode',
      domains: ['initrode.example', 'initech.example'],
    });
    expect(second.statusCode).toBe(409);
    expect(second.json().errors).toEqual([{ path: 'domains.1', message: 'a domain of organization "initech"' }]);
    expect(inForce('initrode')).toBeUndefined();
    const third = await created({ name: 'initrode', displayName: 'Initrode', domains: ['initrode.example'] });
    const grab = await call(
      'PATCH',
      '/organizations/initrode',
      { domains: ['initrode.example', 'initech.example'] },
      { 'if-match': third.headers.etag as string },
    );
    expect(grab.statusCode).toBe(409);
    expect(sigil.context.organizations.byDomain('initech.example')?.name).toBe('initech');
    // Freed by its owner, the domain may move.
    const freed = await call(
      'PATCH',
      '/organizations/initech',
      { domains: [] },
      { 'if-match': first.headers.etag as string },
    );
    expect(freed.statusCode, freed.body).toBe(200);
    const moved = await call(
      'PATCH',
      '/organizations/initrode',
      { domains: ['initrode.example', 'initech.example'] },
      { 'if-match': third.headers.etag as string },
    );
    expect(moved.statusCode, moved.body).toBe(200);
    expect(sigil.context.organizations.byDomain('initech.example')?.name).toBe('initrode');
  });

  it('takes identity providers in force only; a stored provider an organization names cannot be deleted', async () => {
    const unknown = await call('POST', '/organizations', { name: 'u', displayName: 'U', identityProviders: ['nope'] });
    expect(unknown.statusCode).toBe(422);
    expect(unknown.json().errors).toEqual([
      { path: 'identityProviders.0', message: 'unknown identity provider "nope"' },
    ]);
    await created({ name: 'hooli', displayName: 'Hooli', identityProviders: ['acme-sso'] });
    const provider = await call('POST', '/identity-providers', {
      name: 'hooli-sso',
      authority: 'https://sso.hooli.example',
      clientId: 'sigil',
    });
    expect(provider.statusCode, provider.body).toBe(201);
    const changed = await call(
      'PATCH',
      '/organizations/hooli',
      { identityProviders: ['acme-sso', 'hooli-sso'] },
      { 'if-match': '*' },
    );
    expect(changed.statusCode, changed.body).toBe(200);
    const inUse = await call('DELETE', '/identity-providers/hooli-sso');
    expect(inUse.statusCode).toBe(409);
    expect(inUse.json().detail).toContain('organization "hooli"');
    expect((await call('DELETE', '/organizations/hooli')).statusCode).toBe(204);
    expect((await call('DELETE', '/identity-providers/hooli-sso')).statusCode).toBe(204);
  });

  it('members are users: config-file, stored or a directory’s; an unknown subject is 404, a directory down 503', async () => {
    await created({ name: 'members', displayName: 'Members' });
    const unknown = await call('PUT', '/organizations/members/members/nobody', { roles: [] });
    expect(unknown.statusCode).toBe(404);
    expect(unknown.json().detail).toBe('no user with subject "nobody"');
    expect((await call('PUT', '/organizations/nowhere/members/1', { roles: [] })).statusCode).toBe(404);
    expect((await call('PUT', '/organizations/members/members/hr-1', {})).statusCode).toBe(201);
    const user = await call('POST', '/users', { username: 'stored-member', subjectId: 'stored-member' });
    expect(user.statusCode, user.body).toBe(201);
    expect((await call('PUT', '/organizations/members/members/stored-member', { roles: ['x'] })).statusCode).toBe(201);
    expect((await call('PUT', '/organizations/acme/members/stored-member', { roles: [] })).statusCode).toBe(201);
    for (const subject of ['1', '2', '3'])
      expect((await call('PUT', `/organizations/members/members/${subject}`, { roles: [] })).statusCode).toBe(201);

    const first = await call('GET', '/organizations/members/members?limit=2');
    expect(first.json()).toEqual({
      members: [
        { subject: '1', roles: [] },
        { subject: '2', roles: [] },
      ],
      next: expect.any(String),
    });
    const rest = await call('GET', `/organizations/members/members?limit=10&cursor=${first.json().next}`);
    expect(rest.json().members.map((m: { subject: string }) => m.subject)).toEqual(['3', 'hr-1', 'stored-member']);
    expect(rest.json().next).toBeUndefined();
    expect((await call('GET', '/organizations/members/members?cursor=%2B%2B')).statusCode).toBe(422);
    // "AA" is a NUL in base64url: a cursor no page gives.
    expect((await call('GET', '/organizations/members/members?cursor=AA')).statusCode).toBe(422);

    // A deleted user's memberships go with them.
    expect((await call('DELETE', '/users/stored-member')).statusCode).toBe(204);
    expect((await members('members')).map((m) => m.subject)).toEqual(['1', '2', '3', 'hr-1']);
    expect(await members('acme')).toEqual([]);

    directory.down = true;
    try {
      const down = await call('PUT', '/organizations/members/members/somebody', { roles: [] });
      expect(down.statusCode).toBe(503);
      expect(down.headers['retry-after']).toBe('30');
    } finally {
      directory.down = false;
    }
  });

  it('bounded inputs are refused with 4xx, never 500', async () => {
    const long = 'a'.repeat(64);
    expect((await call('GET', `/organizations/${long}`)).statusCode).toBe(404);
    expect((await call('GET', '/organizations/a%00b')).statusCode).toBe(404);
    expect((await call('PUT', '/organizations/acme/members/a%00b', { roles: [] })).statusCode).toBe(404);
    // A subject past 255 characters is no user's; past the router's bound (765), 414 URI Too Long.
    expect((await call('PUT', `/organizations/acme/members/${'s'.repeat(256)}`, { roles: [] })).statusCode).toBe(404);
    expect((await call('PUT', `/organizations/acme/members/${'s'.repeat(800)}`, { roles: [] })).statusCode).toBe(414);
    const refused = [
      { name: long, displayName: 'X' },
      { name: 'a\u0000b', displayName: 'X' },
      { name: 'ok', displayName: 'x'.repeat(201) },
      { name: 'ok', displayName: 'X', domains: Array.from({ length: 51 }, (_, i) => `d${i}.example`) },
      { name: 'ok', displayName: 'X', domains: ['x'.repeat(300)] },
      { name: 'ok', displayName: 'X', identityProviders: Array(21).fill('acme-sso') },
      { name: 'ok', displayName: 'X', extra: true },
      ['not', 'an', 'object'],
    ];
    for (const body of refused) {
      const res = await call('POST', '/organizations', body);
      expect(res.statusCode, JSON.stringify(body).slice(0, 80)).toBe(422);
      expect(res.headers['content-type']).toContain('application/problem+json');
    }
    const deep = `${'['.repeat(2000)}${']'.repeat(2000)}`;
    expect((await call('POST', '/organizations', deep)).statusCode).toBe(400);
    expect((await call('PUT', '/organizations/acme/members/1', deep)).statusCode).toBe(400);
    expect((await call('POST', '/organizations', '{"name":')).statusCode).toBe(400);
    for (const roles of [Array.from({ length: 51 }, (_, i) => `r${i}`), ['r'.repeat(101)], ['a b'], ['x', 'x'], 'x'])
      expect((await call('PUT', '/organizations/acme/members/1', { roles })).statusCode).toBe(422);
    expect((await call('GET', '/organizations/acme/members?limit=100000')).statusCode).toBe(422);
  });

  it('gives no 500 for any body on an organization write route', async () => {
    await created({ name: 'fuzzed', displayName: 'Fuzzed' });
    const routes = [
      ['POST', '/organizations'],
      ['PATCH', '/organizations/fuzzed'],
      ['PUT', '/organizations/fuzzed/members/2'],
    ] as const;
    const plausible = fc.record(
      {
        name: fc.string({ maxLength: 8 }),
        displayName: fc.jsonValue({ maxDepth: 1 }),
        domains: fc.oneof(fc.array(fc.string({ maxLength: 20 }), { maxLength: 3 }), fc.jsonValue({ maxDepth: 2 })),
        identityProviders: fc.jsonValue({ maxDepth: 2 }),
        membership: fc.oneof(fc.constantFrom('invite', 'domain', 'open'), fc.jsonValue({ maxDepth: 1 })),
        roles: fc.oneof(fc.array(fc.string({ maxLength: 10 }), { maxLength: 3 }), fc.jsonValue({ maxDepth: 2 })),
      },
      { requiredKeys: [] },
    );
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...routes),
        fc.oneof(fc.jsonValue({ maxDepth: 3 }), plausible),
        async ([method, path], body) => {
          const res = await call(method, path, body, { 'if-match': '*' });
          expect(res.statusCode, res.body).toBeLessThan(500);
        },
      ),
      { numRuns: 100 },
    );
  });

  it('audits every change as admin_changed with the item; the OpenAPI document lists the routes', async () => {
    events.length = 0;
    const org = (await created({ name: 'audited', displayName: 'Audited', domains: ['audited.example'] })).json()
      .organization;
    await call('PATCH', '/organizations/audited', { displayName: 'Audited Inc.' }, { 'if-match': '*' });
    await call('PUT', '/organizations/audited/members/2', { roles: ['admin'] });
    await call('PUT', '/organizations/audited/members/2', { roles: [] });
    await call('DELETE', '/organizations/audited/members/2');
    await call('DELETE', '/organizations/audited');
    const changes = events.filter((e) => e.name === 'admin_changed');
    expect(changes.map((e) => [e.action, e.target, e.changes])).toEqual([
      ['organization.create', { type: 'organization', id: 'audited' }, { ...org }],
      ['organization.update', { type: 'organization', id: 'audited' }, { displayName: 'Audited Inc.' }],
      ['organization.member_add', { type: 'organization', id: 'audited' }, { subject: '2', roles: ['admin'] }],
      ['organization.member_update', { type: 'organization', id: 'audited' }, { subject: '2', roles: [] }],
      ['organization.member_remove', { type: 'organization', id: 'audited' }, { subject: '2' }],
      ['organization.delete', { type: 'organization', id: 'audited' }, {}],
    ]);
    expect(changes.every((e) => e.clientId === 'automation' && e.endpoint === '/admin/v1')).toBe(true);

    const doc = (await sigil.app.inject({ method: 'GET', url: '/admin/v1/openapi.json' })).json();
    expect(Object.keys(doc.paths)).toEqual(
      expect.arrayContaining([
        '/admin/v1/organizations',
        '/admin/v1/organizations/{name}',
        '/admin/v1/organizations/{name}/members',
        '/admin/v1/organizations/{name}/members/{subject}',
      ]),
    );
    // An organization's admins may change its members too (organization-admins.test.ts).
    expect(doc.paths['/admin/v1/organizations/{name}/members/{subject}'].put.security).toEqual([
      { bearer: ['sigil:admin'] },
      { bearer: ['sigil:org:admin'] },
    ]);
    expect(doc.paths['/admin/v1/organizations/{name}'].get.security).toEqual([{ bearer: ['sigil:admin:read'] }]);
  });
});

describe('a stored organization the config file came to contradict', () => {
  it('is skipped with a warning at the next start, never half-used; the config wins', async () => {
    const { dir, cleanup } = tempDir();
    const storage = `sqlite:${join(dir, 'sigil.db')}`;
    try {
      const first = await createSigil(testConfig({ storage }), { logger: pino({ level: 'silent' }) });
      const made = await first.context.management.organizations.create({
        name: 'later',
        displayName: 'Later',
        domains: ['later.example'],
      });
      await first.close();
      const warnings: Record<string, unknown>[] = [];
      const log = pino({ level: 'warn' }, { write: (line: string) => void warnings.push(JSON.parse(line)) });
      const second = await createSigil(
        testConfig({ storage, organizations: [{ name: 'now', displayName: 'Now', domains: ['later.example'] }] }),
        { logger: log },
      );
      try {
        expect(second.context.organizations.byName('later')).toBeUndefined();
        expect(second.context.organizations.byId(made.id)).toBeUndefined();
        expect(second.context.organizations.byDomain('later.example')?.name).toBe('now');
        expect(warnings).toContainEqual(
          expect.objectContaining({ organization: 'later', problem: expect.stringContaining('"later.example"') }),
        );
        // Still listed (source store), so that it can be changed or deleted.
        expect((await second.context.management.organizations.get('later')).source).toBe('store');
      } finally {
        await second.close();
      }
    } finally {
      cleanup();
    }
  });
});
