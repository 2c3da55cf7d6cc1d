/**
 * SCIM 2.0 per organization (/scim/v2/organizations/{name}) over HTTP, on SQLite and on PostgreSQL
 * (a schema of its own), with a second node on the same database: the guard (a client of
 * organization acme reaches acme's endpoint only: globex's, an unknown name and /scim/v2 itself are
 * 403, the same answer whether the other organization exists; a deployment-wide client is 403 at
 * an organization's endpoint), discovery under the organization's prefix, Users (create makes a
 * provisioned member in one step, or nothing; a userName anyone holds is 409; list, filter, paging
 * and ETags over the members only; a member acme did not provision is read-only, and DELETE ends
 * only that membership; a provisioned user is deactivated and deleted as at /scim/v2), Groups (the
 * organization's roles: stable ids through a rename, members that are acme's only, the
 * deployment's admin role refused, deployment groups untouched), a deleted organization, the
 * config's rules for `organization`, audit events naming the organization, bad input never a
 * 500, and the migration that makes Groups of the roles held before it.
 */
import { join } from 'node:path';
import SQLite from 'better-sqlite3';
import fc from 'fast-check';
import type { LightMyRequestResponse } from 'fastify';
import { Kysely, type MigrationProvider, Migrator, SqliteDialect, sql } from 'kysely';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SigilEvent } from '../../src/events/events.js';
import { ConfigError, createSigil } from '../../src/index.js';
import { migrationProvider } from '../../src/stores/migrations.js';
import { openStore } from '../../src/stores/sql.js';
import {
  clientTokens,
  dropSchema,
  expectNoLeak,
  POSTGRES_URL,
  startSigil,
  tempDir,
  testConfig,
  tokenRequest,
  type TestSigil,
  uniqueSchema,
} from '../helpers.js';

const USER = 'urn:ietf:params:scim:schemas:core:2.0:User';
const GROUP = 'urn:ietf:params:scim:schemas:core:2.0:Group';
const PATCH = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';
const ERROR = 'urn:ietf:params:scim:api:messages:2.0:Error';
const PASSWORD = 'a long enough passphrase 42';

const base = testConfig();
const scimClient = (clientId: string, organization?: string) => ({
  clientId,
  clientSecrets: [`${clientId}-secret`],
  allowedGrantTypes: ['client_credentials'],
  allowedScopes: ['scim'],
  ...(organization ? { organization } : {}),
});
const config = {
  clients: [
    ...base.clients!,
    scimClient('acme-scim', 'acme'),
    scimClient('globex-scim', 'globex'),
    scimClient('scim-bot'),
    {
      clientId: 'automation',
      clientSecrets: ['automation-secret'],
      allowedGrantTypes: ['client_credentials'],
      allowedScopes: ['sigil:admin'],
    },
  ],
  organizations: [
    { name: 'acme', displayName: 'Acme' },
    { name: 'globex', displayName: 'Globex' },
  ],
};

type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
// biome-ignore lint/suspicious/noExplicitAny: the tests read nested SCIM attributes.
type Resource = Record<string, any>;

const schemaName = uniqueSchema('sigil_orgscim');
const sqliteDir = tempDir();
afterAll(() => sqliteDir.cleanup());
describe.each([
  ['SQLite', `sqlite:${sqliteDir.dir}/sigil.db`],
  ['PostgreSQL', `${POSTGRES_URL}?schema=${schemaName}`],
])('SCIM per organization on %s', (dialect, storage) => {
  let sigil: TestSigil;
  let nodeB: TestSigil;
  const tokens: Record<string, string> = {};
  const events: SigilEvent[] = [];

  beforeAll(async () => {
    sigil = await startSigil({ ...config, storage });
    sigil.subscribe((e) => void events.push(e));
    // A second node on the same store (the SQLite file, the PostgreSQL schema).
    nodeB = {
      ...(await createSigil(testConfig({ ...config, storage }), { logger: pino({ level: 'silent' }) })),
      dir: '',
    };
    for (const id of ['acme-scim', 'globex-scim', 'scim-bot'])
      tokens[id] = (await clientTokens(sigil, 'scim', [id, `${id}-secret`])).access_token;
    tokens.automation = (await clientTokens(sigil, 'sigil:admin', ['automation', 'automation-secret'])).access_token;
  });
  afterAll(async () => {
    await nodeB?.close();
    await sigil?.close();
    if (dialect === 'PostgreSQL') await dropSchema(schemaName);
  });

  function call(
    as: string,
    method: Method,
    url: string,
    body?: unknown,
    headers: Record<string, string> = {},
    node: TestSigil = sigil,
  ): Promise<LightMyRequestResponse> {
    return node.app.inject({
      method,
      url,
      headers: {
        authorization: `Bearer ${tokens[as] ?? as}`,
        ...(body !== undefined ? { 'content-type': 'application/scim+json' } : {}),
        ...headers,
      },
      ...(body !== undefined ? { payload: typeof body === 'string' ? body : JSON.stringify(body) } : {}),
    });
  }
  /** A request of acme's client to acme's endpoint. */
  const acme = (method: Method, path: string, body?: unknown, headers: Record<string, string> = {}) =>
    call('acme-scim', method, `/scim/v2/organizations/acme${path}`, body, headers);
  const globex = (method: Method, path: string, body?: unknown, headers: Record<string, string> = {}) =>
    call('globex-scim', method, `/scim/v2/organizations/globex${path}`, body, headers);
  const admin = (method: Method, path: string, body?: unknown) =>
    sigil.app.inject({
      method,
      url: `/admin/v1${path}`,
      headers: {
        authorization: `Bearer ${tokens.automation}`,
        ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
      },
      ...(body !== undefined ? { payload: JSON.stringify(body) } : {}),
    });
  const membersOf = async (org: string): Promise<{ subject: string; roles: string[] }[]> => {
    const res = await admin('GET', `/organizations/${org}/members`);
    expect(res.statusCode, res.body).toBe(200);
    return res.json().members;
  };
  const rolesIn = async (org: string, subject: string) =>
    (await membersOf(org)).find((m) => m.subject === subject)?.roles;

  function expectError(res: LightMyRequestResponse, status: number, scimType?: string): Resource {
    expectNoLeak(res);
    expect(res.statusCode, res.body).toBe(status);
    expect(res.headers['content-type']).toContain('application/scim+json');
    const body = res.json();
    expect(body.schemas).toEqual([ERROR]);
    expect(body.status).toBe(String(status));
    if (scimType) expect(body.scimType).toBe(scimType);
    return body;
  }
  async function created(send: typeof acme, userName: string, extra: Record<string, unknown> = {}): Promise<Resource> {
    const res = await send('POST', '/Users', { schemas: [USER], userName, password: PASSWORD, ...extra });
    expect(res.statusCode, res.body).toBe(201);
    return res.json();
  }
  async function group(send: typeof acme, displayName: string, members: string[] = []): Promise<Resource> {
    const res = await send('POST', '/Groups', {
      schemas: [GROUP],
      displayName,
      members: members.map((value) => ({ value })),
    });
    expect(res.statusCode, res.body).toBe(201);
    return res.json();
  }
  const patchOp = (...Operations: unknown[]) => ({ schemas: [PATCH], Operations });
  const userNames = async (send: typeof acme, query = '') => {
    const res = await send('GET', `/Users?sortBy=userName${query}`);
    expect(res.statusCode, res.body).toBe(200);
    return res.json().Resources.map((r: Resource) => r.userName);
  };

  describe('the guard', () => {
    it("lets a client of acme reach acme's endpoint only: globex's, an unknown name and /scim/v2 are 403", async () => {
      expect((await acme('GET', '/Users')).statusCode).toBe(200);
      const other = expectError(await call('acme-scim', 'GET', '/scim/v2/organizations/globex/Users'), 403);
      const none = expectError(await call('acme-scim', 'GET', '/scim/v2/organizations/no-such-org/Users'), 403);
      // Never says whether the other organization exists.
      expect(none.detail).toBe(other.detail);
      for (const [method, path, body] of [
        ['GET', '/Users', undefined],
        ['POST', '/Users', { schemas: [USER], userName: 'by-acme-at-globex' }],
        ['PUT', '/Users/x', { schemas: [USER], userName: 'x' }],
        ['PATCH', '/Users/x', patchOp({ op: 'replace', path: 'active', value: false })],
        ['DELETE', '/Users/x', undefined],
        ['GET', '/Groups', undefined],
        ['POST', '/Groups', { schemas: [GROUP], displayName: 'x' }],
        ['GET', '/ServiceProviderConfig', undefined],
      ] as const) {
        expectError(await call('acme-scim', method, `/scim/v2/organizations/globex${path}`, body), 403);
        expectError(await call('acme-scim', method, `/scim/v2${path}`, body), 403);
      }
      expect(await userNames(globex)).not.toContain('by-acme-at-globex');
      expect(
        (await call('scim-bot', 'GET', '/scim/v2/Users?filter=userName eq "by-acme-at-globex"')).json(),
      ).toMatchObject({ totalResults: 0 });
    });

    it('keeps /scim/v2 for a client of no organization and refuses it every organization', async () => {
      expect((await call('scim-bot', 'GET', '/scim/v2/Users')).statusCode).toBe(200);
      expectError(await call('scim-bot', 'GET', '/scim/v2/organizations/acme/Users'), 403);
      expectError(
        await call('scim-bot', 'POST', '/scim/v2/organizations/acme/Groups', { schemas: [GROUP], displayName: 'x' }),
        403,
      );
    });

    it('answers 401 without a token and 403 insufficient_scope without the scope scim', async () => {
      const none = await sigil.app.inject({ method: 'GET', url: '/scim/v2/organizations/acme/Users' });
      expectError(none, 401);
      const api = (await clientTokens(sigil, 'api1')).access_token;
      const res = await call(api, 'GET', '/scim/v2/organizations/acme/Users');
      expectError(res, 403);
      expect(res.headers['www-authenticate']).toContain('error="insufficient_scope"');
    });
  });

  it("describes itself under the organization's prefix", async () => {
    const prefix = `${sigil.context.issuer}/scim/v2/organizations/acme`;
    const spc = (await acme('GET', '/ServiceProviderConfig')).json();
    expect(spc).toMatchObject({ patch: { supported: true }, etag: { supported: true } });
    expect(spc.meta.location).toBe(`${prefix}/ServiceProviderConfig`);
    const types = (await acme('GET', '/ResourceTypes')).json();
    expect(types.Resources.map((t: Resource) => t.meta.location)).toEqual([
      `${prefix}/ResourceTypes/User`,
      `${prefix}/ResourceTypes/Group`,
    ]);
    expect((await acme('GET', `/Schemas/${USER}`)).json().meta.location).toBe(`${prefix}/Schemas/${USER}`);
    expectError(await acme('GET', '/Schemas/urn:nope'), 404);
  });

  describe('Users', () => {
    it('creates a user as a provisioned member in one step, seen on every node, audited with the organization', async () => {
      const user = await created(acme, 'wile', { emails: [{ value: 'wile@acme.example', primary: true }] });
      expect(user.meta.location).toBe(`${sigil.context.issuer}/scim/v2/organizations/acme/Users/${user.id}`);
      expect(user.password).toBeUndefined();
      expect(await rolesIn('acme', user.id)).toEqual([]);
      expect(await rolesIn('globex', user.id)).toBeUndefined();
      // The other node reads it at once: memberships live in the database only.
      const onB = await call('acme-scim', 'GET', `/scim/v2/organizations/acme/Users/${user.id}`, undefined, {}, nodeB);
      expect(onB.statusCode, onB.body).toBe(200);
      expect(onB.json().userName).toBe('wile');
      // Not globex's: the same 404 as for no user at all.
      const there = expectError(await globex('GET', `/Users/${user.id}`), 404);
      expect(there.detail).toBe(
        expectError(await globex('GET', '/Users/nobody'), 404).detail.replace('nobody', user.id),
      );
      expect((await call('scim-bot', 'GET', `/scim/v2/Users/${user.id}`)).statusCode).toBe(200);
      expect(events).toContainEqual(
        expect.objectContaining({
          name: 'resource_created',
          clientId: 'acme-scim',
          organization: 'acme',
          target: { type: 'User', id: user.id },
        }),
      );
      expect(events).toContainEqual(
        expect.objectContaining({
          name: 'admin_changed',
          action: 'organization.member_add',
          target: { type: 'organization', id: 'acme' },
          changes: { subject: user.id },
        }),
      );
    });

    it('refuses a userName anyone holds (409 uniqueness, no link to that user) and a bad create stores nothing', async () => {
      const theirs = await created(globex, 'gadget');
      for (const userName of ['gadget', 'GADGET', 'alice']) {
        const body = expectError(
          await acme('POST', '/Users', { schemas: [USER], userName, password: PASSWORD }),
          409,
          'uniqueness',
        );
        expect(JSON.stringify(body)).not.toContain(theirs.id);
      }
      expect((await membersOf('acme')).map((m) => m.subject)).not.toContain(theirs.id);
      const before = await membersOf('acme');
      expectError(
        await acme('POST', '/Users', { schemas: [USER], userName: 'weak', password: 'weak' }),
        400,
        'invalidValue',
      );
      expectError(await acme('POST', '/Users', { schemas: [USER], userName: 'x'.repeat(101) }), 400, 'invalidValue');
      expectError(
        await acme('POST', '/Users', { schemas: [USER], userName: 'bad-email', emails: [{ value: 'no' }] }),
        400,
      );
      expect(await membersOf('acme')).toEqual(before);
      expect((await call('scim-bot', 'GET', '/scim/v2/Users?filter=userName eq "weak"')).json().totalResults).toBe(0);
    });

    it("lists, filters, sorts and pages the organization's members only", async () => {
      for (const n of ['page-a', 'page-b', 'page-c']) await created(acme, n);
      await created(globex, 'page-globex');
      const all = await userNames(acme);
      expect(all).toEqual(expect.arrayContaining(['page-a', 'page-b', 'page-c', 'wile']));
      expect(all).not.toContain('page-globex');
      expect(all).not.toContain('gadget');
      const filtered = (
        await acme('GET', `/Users?filter=${encodeURIComponent('userName sw "page-"')}&sortBy=userName`)
      ).json();
      expect(filtered).toMatchObject({ totalResults: 3, startIndex: 1, itemsPerPage: 3 });
      expect(filtered.Resources.map((r: Resource) => r.userName)).toEqual(['page-a', 'page-b', 'page-c']);
      const page = (
        await acme(
          'GET',
          `/Users?filter=${encodeURIComponent('userName sw "page-"')}&sortBy=userName&startIndex=2&count=1`,
        )
      ).json();
      expect(page).toMatchObject({ totalResults: 3, startIndex: 2, itemsPerPage: 1 });
      expect(page.Resources[0].userName).toBe('page-b');
      const unfiltered = (await acme('GET', '/Users?count=1')).json();
      expect(unfiltered.totalResults).toBe(all.length);
      expect(unfiltered.Resources).toHaveLength(1);
      expect(
        (await acme('GET', `/Users?filter=${encodeURIComponent('userName eq "page-globex"')}`)).json().totalResults,
      ).toBe(0);
      const search = await acme('POST', '/Users/.search', {
        schemas: ['urn:ietf:params:scim:api:messages:2.0:SearchRequest'],
        filter: 'userName eq "page-a"',
        attributes: ['userName'],
      });
      expect(search.json().Resources).toEqual([{ schemas: [USER], id: expect.any(String), userName: 'page-a' }]);
      expectError(
        await acme('GET', `/Users?filter=${encodeURIComponent('groups.value eq "x"')}`),
        400,
        'invalidFilter',
      );
      expectError(await acme('GET', '/Users?sortBy=password'), 400, 'invalidValue');
    });

    it('replaces and patches a provisioned user, with ETags (304, 412)', async () => {
      const user = await created(acme, 'roadrunner');
      const read = await acme('GET', `/Users/${user.id}`);
      const etag = String(read.headers.etag);
      expect(read.json().meta.version).toBe(etag);
      expect((await acme('GET', `/Users/${user.id}`, undefined, { 'if-none-match': etag })).statusCode).toBe(304);
      const patched = await acme(
        'PATCH',
        `/Users/${user.id}`,
        patchOp({ op: 'replace', path: 'displayName', value: 'Road Runner' }),
        { 'if-match': etag },
      );
      expect(patched.statusCode, patched.body).toBe(200);
      expect(patched.json().displayName).toBe('Road Runner');
      expectError(
        await acme('PATCH', `/Users/${user.id}`, patchOp({ op: 'replace', path: 'displayName', value: 'x' }), {
          'if-match': etag,
        }),
        412,
      );
      const put = await acme('PUT', `/Users/${user.id}`, {
        schemas: [USER],
        userName: 'roadrunner',
        emails: [{ value: 'beep@acme.example' }],
      });
      expect(put.statusCode, put.body).toBe(200);
      expect(put.json().emails).toEqual([{ value: 'beep@acme.example', primary: false }]);
      expectError(
        await acme('PATCH', `/Users/${user.id}`, patchOp({ op: 'add', path: 'groups', value: [{ value: 'x' }] })),
        400,
        'mutability',
      );
    });

    it('makes any member it did not provision read-only (403), and DELETE ends only the membership', async () => {
      // Provisioned by globex, then made a member of acme too through the management API.
      const shared = await created(globex, 'coyote', { emails: [{ value: 'coyote@globex.example' }] });
      // A stored user of the deployment, added to acme by an operator.
      const deployment = (
        await call('scim-bot', 'POST', '/scim/v2/Users', { schemas: [USER], userName: 'operator-added' })
      ).json();
      for (const id of [shared.id, deployment.id])
        expect((await admin('PUT', `/organizations/acme/members/${id}`, { roles: ['viewer'] })).statusCode).toBe(201);
      const seen = await acme('GET', `/Users/${shared.id}`);
      expect(seen.statusCode, seen.body).toBe(200);
      for (const id of [shared.id, deployment.id]) {
        expectError(
          await acme(
            'PATCH',
            `/Users/${id}`,
            patchOp({ op: 'replace', path: 'emails', value: [{ value: 'evil@acme.example' }] }),
          ),
          403,
        );
        expectError(await acme('PUT', `/Users/${id}`, { schemas: [USER], userName: 'taken-over' }), 403);
        expectError(await acme('PATCH', `/Users/${id}`, patchOp({ op: 'replace', path: 'active', value: false })), 403);
      }
      const after = (await globex('GET', `/Users/${shared.id}`)).json();
      expect(after).toMatchObject({ userName: 'coyote', active: true, emails: [{ value: 'coyote@globex.example' }] });
      // globex provisioned them: it may change them, and acme's membership does not change that.
      expect(
        (await globex('PATCH', `/Users/${shared.id}`, patchOp({ op: 'replace', path: 'displayName', value: 'W. E.' })))
          .statusCode,
      ).toBe(200);
      // DELETE at acme: the membership ends, the user stays.
      expect((await acme('DELETE', `/Users/${shared.id}`)).statusCode).toBe(204);
      expect(await rolesIn('acme', shared.id)).toBeUndefined();
      expect(await rolesIn('globex', shared.id)).toEqual([]);
      expect((await globex('GET', `/Users/${shared.id}`)).statusCode).toBe(200);
      expect(events).toContainEqual(
        expect.objectContaining({
          name: 'admin_changed',
          action: 'organization.member_remove',
          changes: { subject: shared.id },
        }),
      );
      expectError(await acme('GET', `/Users/${shared.id}`), 404);
    });

    it('does not show a config-file user who is a member (as /scim/v2 shows none): 404, and not listed', async () => {
      expect((await admin('PUT', '/organizations/acme/members/2', { roles: [] })).statusCode).toBe(201);
      expectError(await acme('GET', '/Users/2'), 404);
      expectError(await acme('PATCH', '/Users/2', patchOp({ op: 'replace', path: 'active', value: false })), 404);
      expectError(await acme('DELETE', '/Users/2'), 404);
      expect(await userNames(acme)).not.toContain('bob');
      expect(await rolesIn('acme', '2')).toEqual([]);
    });

    it('deactivates a provisioned user (sign-in refused) and deletes them everywhere', async () => {
      const user = await created(acme, 'marvin');
      const signIn = () =>
        tokenRequest(sigil, { grant_type: 'password', username: 'marvin', password: PASSWORD, scope: 'openid' }, [
          'ropc',
          'ropc-secret',
        ]);
      expect((await signIn()).statusCode).toBe(200);
      const off = await acme('PATCH', `/Users/${user.id}`, patchOp({ op: 'replace', path: 'active', value: false }));
      expect(off.json().active).toBe(false);
      expect((await signIn()).json().error).toBe('invalid_grant');
      expect((await acme('DELETE', `/Users/${user.id}`)).statusCode).toBe(204);
      expectError(await call('scim-bot', 'GET', `/scim/v2/Users/${user.id}`), 404);
      expect(await rolesIn('acme', user.id)).toBeUndefined();
      expect(events).toContainEqual(
        expect.objectContaining({
          name: 'resource_deleted',
          organization: 'acme',
          target: { type: 'User', id: user.id },
        }),
      );
    });
  });

  describe('Groups', () => {
    it("are the organization's roles: created, shown on the member, renamed under a stable id, deleted", async () => {
      const user = await created(acme, 'engineer');
      const eng = await group(acme, 'engineers', [user.id]);
      expect(eng).toMatchObject({
        displayName: 'engineers',
        members: [{ value: user.id, display: 'engineer', type: 'User' }],
      });
      expect(eng.meta.location).toBe(`${sigil.context.issuer}/scim/v2/organizations/acme/Groups/${eng.id}`);
      expect(await rolesIn('acme', user.id)).toEqual(['engineers']);
      const shown = (await acme('GET', `/Users/${user.id}`)).json();
      expect(shown.groups).toEqual([
        {
          value: eng.id,
          display: 'engineers',
          $ref: `${sigil.context.issuer}/scim/v2/organizations/acme/Groups/${eng.id}`,
        },
      ]);
      // Not a deployment group, and not in the user's role claim groups.
      expect((await call('scim-bot', 'GET', '/scim/v2/Groups')).json().Resources).not.toContainEqual(
        expect.objectContaining({ displayName: 'engineers' }),
      );
      expect((await call('scim-bot', 'GET', `/scim/v2/Users/${user.id}`)).json().groups).toBeUndefined();
      const renamed = await acme(
        'PATCH',
        `/Groups/${eng.id}`,
        patchOp({ op: 'replace', path: 'displayName', value: 'builders' }),
      );
      expect(renamed.statusCode, renamed.body).toBe(200);
      expect(renamed.json()).toMatchObject({ id: eng.id, displayName: 'builders' });
      expect(await rolesIn('acme', user.id)).toEqual(['builders']);
      expect((await acme('GET', `/Groups/${eng.id}`)).json().displayName).toBe('builders');
      // Another organization's Group id is no Group here.
      expectError(await globex('GET', `/Groups/${eng.id}`), 404);
      expectError(
        await globex('PATCH', `/Groups/${eng.id}`, patchOp({ op: 'replace', path: 'displayName', value: 'x' })),
        404,
      );
      expectError(await globex('DELETE', `/Groups/${eng.id}`), 404);
      expect((await acme('DELETE', `/Groups/${eng.id}`)).statusCode).toBe(204);
      expect(await rolesIn('acme', user.id)).toEqual([]);
      expectError(await acme('GET', `/Groups/${eng.id}`), 404);
    });

    it('adds and removes members by PATCH, only members of the organization', async () => {
      const a = await created(acme, 'member-a');
      const b = await created(acme, 'member-b');
      const outsider = await created(globex, 'outsider');
      const team = await group(acme, 'team', [a.id]);
      const added = await acme(
        'PATCH',
        `/Groups/${team.id}`,
        patchOp({ op: 'add', path: 'members', value: [{ value: b.id }] }),
      );
      expect(added.statusCode, added.body).toBe(200);
      expect(
        added
          .json()
          .members.map((m: Resource) => m.value)
          .sort(),
      ).toEqual([a.id, b.id].sort());
      const removed = await acme(
        'PATCH',
        `/Groups/${team.id}`,
        patchOp({ op: 'remove', path: `members[value eq "${a.id}"]` }),
      );
      expect(removed.json().members.map((m: Resource) => m.value)).toEqual([b.id]);
      expect(await rolesIn('acme', a.id)).toEqual([]);
      // globex's user, and no user at all: the same refusal; nothing changes.
      const etag = String((await acme('GET', `/Groups/${team.id}`)).headers.etag);
      const stranger = expectError(
        await acme(
          'PATCH',
          `/Groups/${team.id}`,
          patchOp({ op: 'add', path: 'members', value: [{ value: outsider.id }] }),
        ),
        400,
        'invalidValue',
      );
      expect(stranger.detail).toContain('not a user of this organization');
      expectError(
        await acme('POST', '/Groups', {
          schemas: [GROUP],
          displayName: 'with-outsider',
          members: [{ value: outsider.id }],
        }),
        400,
      );
      expect(await rolesIn('globex', outsider.id)).toEqual([]);
      expect(String((await acme('GET', `/Groups/${team.id}`)).headers.etag)).toBe(etag);
      const names = (await acme('GET', '/Groups')).json().Resources.map((g: Resource) => g.displayName);
      expect(names).not.toContain('with-outsider');
    });

    it("refuses the deployment's admin role in any case, allows the organization's own admin role", async () => {
      for (const displayName of ['sigil-admin', 'SIGIL-ADMIN'])
        expectError(await acme('POST', '/Groups', { schemas: [GROUP], displayName }), 400, 'invalidValue');
      const team = await group(acme, 'renamable');
      expectError(
        await acme(
          'PATCH',
          `/Groups/${team.id}`,
          patchOp({ op: 'replace', path: 'displayName', value: 'Sigil-Admin' }),
        ),
        400,
      );
      expectError(await acme('POST', '/Groups', { schemas: [GROUP], displayName: 'has spaces' }), 400, 'invalidValue');
      const boss = await created(acme, 'boss');
      await group(acme, 'admin', [boss.id]);
      expect(await rolesIn('acme', boss.id)).toEqual(['admin']);
      expectError(await acme('POST', '/Groups', { schemas: [GROUP], displayName: 'ADMIN' }), 409, 'uniqueness');
      // The deployment's role claim groups are not touched.
      const deploymentGroups = (await call('scim-bot', 'GET', '/scim/v2/Groups')).json().Resources;
      expect(deploymentGroups.map((g: Resource) => g.displayName)).not.toContain('admin');
      // An organization role of that name an operator gave is read-only here.
      expect(
        (await admin('PUT', `/organizations/acme/members/${boss.id}`, { roles: ['admin', 'sigil-admin'] })).statusCode,
      ).toBe(200);
      const [operators] = (
        await acme('GET', `/Groups?filter=${encodeURIComponent('displayName eq "sigil-admin"')}`)
      ).json().Resources;
      expect(operators.members).toEqual([expect.objectContaining({ value: boss.id })]);
      const other = await created(acme, 'would-be-admin');
      expectError(
        await acme(
          'PATCH',
          `/Groups/${operators.id}`,
          patchOp({ op: 'add', path: 'members', value: [{ value: other.id }] }),
        ),
        403,
      );
      expectError(await acme('PUT', `/Groups/${operators.id}`, { schemas: [GROUP], displayName: 'sigil-admin' }), 403);
      expectError(await acme('DELETE', `/Groups/${operators.id}`), 403);
      expect(await rolesIn('acme', other.id)).toEqual([]);
      expect(await rolesIn('acme', boss.id)).toEqual(['admin', 'sigil-admin']);
      // Nor can a user be created with roles or groups: they are read-only attributes here.
      const sneaky = await created(acme, 'sneaky', {
        roles: [{ value: 'sigil-admin' }],
        groups: [{ value: operators.id }],
      });
      expect(await rolesIn('acme', sneaky.id)).toEqual([]);
      expect((await admin('GET', `/users/${sneaky.id}`)).json().claims.role).toBeUndefined();
    });

    it('shows roles given through the management API as Groups, filtered and sorted', async () => {
      const member = await created(acme, 'auditor-user');
      expect((await admin('PUT', `/organizations/acme/members/${member.id}`, { roles: ['auditors'] })).statusCode).toBe(
        200,
      );
      const res = await acme('GET', `/Groups?filter=${encodeURIComponent('displayName eq "AUDITORS"')}`);
      expect(res.json()).toMatchObject({
        totalResults: 1,
        Resources: [{ displayName: 'auditors', members: [{ value: member.id }] }],
      });
      const slim = (
        await acme(
          'GET',
          `/Groups?filter=${encodeURIComponent(`members[value eq "${member.id}"]`)}&excludedAttributes=members`,
        )
      ).json();
      expect(slim.Resources.map((g: Resource) => [g.displayName, g.members])).toEqual([['auditors', undefined]]);
      const sorted = (await acme('GET', '/Groups?sortBy=displayName&sortOrder=descending'))
        .json()
        .Resources.map((g: Resource) => g.displayName);
      expect(sorted).toEqual([...sorted].sort().reverse());
      expectError(await acme('GET', '/Groups?sortBy=members'), 400, 'invalidValue');
      // globex sees none of acme's roles.
      expect((await globex('GET', '/Groups')).json().Resources.map((g: Resource) => g.displayName)).not.toContain(
        'auditors',
      );
    });
  });

  it('refuses a client whose organization was deleted, and shows a new organization of that name only its own members', async () => {
    expect((await admin('POST', '/organizations', { name: 'initech', displayName: 'Initech' })).statusCode).toBe(201);
    const { clientSecrets: _generated, ...settings } = scimClient('initech-scim', 'initech');
    const stored = await admin('POST', '/clients', settings);
    expect(stored.statusCode, stored.body).toBe(201);
    const secret = stored.json().secret;
    const initech = (await clientTokens(sigil, 'scim', ['initech-scim', secret])).access_token;
    const at = (method: Method, path: string, body?: unknown) =>
      call(initech, method, `/scim/v2/organizations/initech${path}`, body);
    const user = (await at('POST', '/Users', { schemas: [USER], userName: 'milton' })).json();
    expect((await at('GET', '/Users')).json().totalResults).toBe(1);
    expect((await admin('DELETE', '/organizations/initech')).statusCode).toBe(204);
    expectError(await at('GET', '/Users'), 403);
    expectError(await at('GET', `/Users/${user.id}`), 403);
    expectError(await at('POST', '/Users', { schemas: [USER], userName: 'after-delete' }), 403);
    expect((await admin('POST', '/organizations', { name: 'initech', displayName: 'Initech again' })).statusCode).toBe(
      201,
    );
    expect((await at('GET', '/Users')).json().totalResults).toBe(0);
    expectError(await at('GET', `/Users/${user.id}`), 404);
    // A stored client names an organization in force.
    const { clientSecrets: _none, ...nowhere } = scimClient('nowhere-scim', 'nowhere');
    const unknown = await admin('POST', '/clients', nowhere);
    expect(unknown.statusCode, unknown.body).toBe(422);
    expect(unknown.body).toContain('unknown organization');
  });

  it('answers bad input with SCIM errors, never a 500, and a failed request changes nothing', async () => {
    const user = await created(acme, 'fuzzed');
    const team = await group(acme, 'fuzzers', [user.id]);
    // A subject's longest (255), percent-encoded, the router takes; longer ones are 414 before any route runs.
    expectError(await acme('GET', `/Users/${'x'.repeat(100)}`), 404);
    expectError(await acme('GET', `/Users/${'%C3%A9'.repeat(127)}`), 404);
    expectError(await acme('GET', '/Users/a%00b'), 404);
    expectError(await acme('GET', '/Groups/a%00b'), 404);
    expectError(await acme('GET', `/Groups/${'x'.repeat(100)}`), 404);
    expectError(await acme('POST', '/Users', '{not json'), 400, 'invalidSyntax');
    expectError(
      await acme(
        'POST',
        '/Groups',
        JSON.stringify({
          schemas: [GROUP],
          displayName: 'x',
          members: Array.from({ length: 1001 }, (_, i) => ({ value: `${i}` })),
        }),
      ),
      400,
    );
    const userTag = String((await acme('GET', `/Users/${user.id}`)).headers.etag);
    const groupTag = String((await acme('GET', `/Groups/${team.id}`)).headers.etag);
    await fc.assert(
      fc.asyncProperty(fc.jsonValue({ maxDepth: 3 }), fc.boolean(), async (value, onGroup) => {
        const res = onGroup
          ? await acme('PATCH', `/Groups/${team.id}`, patchOp({ op: 'replace', path: 'displayName', value }))
          : await acme('PATCH', `/Users/${user.id}`, patchOp({ op: 'add', value }));
        expectNoLeak(res);
        if (res.statusCode !== 200) expect(res.json().schemas).toEqual([ERROR]);
      }),
      { numRuns: 40 },
    );
    // Whatever succeeded, the ids still answer; a failed PATCH left its ETag.
    expect((await acme('GET', `/Users/${user.id}`)).statusCode).toBe(200);
    expect((await acme('GET', `/Groups/${team.id}`)).statusCode).toBe(200);
    expect(typeof userTag).toBe('string');
    expect(typeof groupTag).toBe('string');
  });
});

describe("the config's rules for a client's organization", () => {
  const start = (clients: Record<string, unknown>[]) =>
    createSigil(testConfig({ clients: clients as never, organizations: [{ name: 'acme', displayName: 'Acme' }] }), {
      logger: pino({ level: 'silent' }),
    });

  it('refuses an organization the config file does not have, and a deployment-wide management scope', async () => {
    const unknown = start([scimClient('x', 'nowhere')]);
    await expect(unknown).rejects.toThrow(ConfigError);
    await expect(unknown).rejects.toThrow(/clients\[0\]\.organization: unknown organization "nowhere"/);
    await expect(start([{ ...scimClient('x', 'acme'), allowedScopes: ['scim', 'sigil:admin'] }])).rejects.toThrow(
      /clients\[0\]\.allowedScopes\[1\]: "sigil:admin" reaches every organization/,
    );
    await expect(start([scimClient('x', 'Not A Name')])).rejects.toThrow(/must be an organization name/);
    const ok = await start([scimClient('x', 'acme')]);
    await ok.close();
  });
});

describe('migration 0019_organization_scim', () => {
  it('makes Groups of the roles members already hold, and marks no existing member provisioned', async () => {
    const { dir, cleanup } = tempDir();
    try {
      const file = join(dir, 'sigil.db');
      const db = new Kysely<unknown>({ dialect: new SqliteDialect({ database: new SQLite(file) }) });
      const before0019: MigrationProvider = {
        getMigrations: async () =>
          Object.fromEntries(Object.entries(await migrationProvider.getMigrations()).filter(([name]) => name < '0019')),
      };
      expect((await new Migrator({ db, provider: before0019 }).migrateToLatest()).error).toBeUndefined();
      const member = (org: string, subject: string, roles: string[]) =>
        sql`insert into organization_members (organization_id, subject, roles, created_at)
          values (${org}, ${subject}, ${JSON.stringify(roles)}, 0)`.execute(db);
      await member('org_a', '1', ['admin', 'billing']);
      await member('org_a', '2', ['billing']);
      await member('org_b', '1', ['billing']);
      await db.destroy();

      const store = await openStore(`sqlite:${file}`);
      try {
        expect((await store.organizationGroups.list('org_a')).map((g) => g.name)).toEqual(['admin', 'billing']);
        expect((await store.organizationGroups.list('org_b')).map((g) => g.name)).toEqual(['billing']);
        const [a] = await store.organizationGroups.named('org_a', ['billing']);
        const [b] = await store.organizationGroups.named('org_b', ['billing']);
        expect(a?.id).not.toBe(b?.id);
        expect(await store.organizationGroups.memberships('org_a', ['1', '2'])).toEqual(
          new Map([
            ['1', { roles: ['admin', 'billing'], provisioned: false }],
            ['2', { roles: ['billing'], provisioned: false }],
          ]),
        );
      } finally {
        await store.close();
      }
    } finally {
      cleanup();
    }
  });
});
