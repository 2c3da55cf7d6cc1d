/**
 * SCIM 2.0 at /scim/v2 against RFC 7644, over HTTP, on SQLite and on PostgreSQL (a schema of its
 * own): the guard, discovery, create/get/replace/PATCH/delete, filters with every operator of
 * §3.4.2.2 and their precedence, sorting and paging, attributes/excludedAttributes, ETags and
 * If-Match (412), every error type (§3.12), uniqueness (409), groups in the role claim at
 * userinfo, deactivation ending refresh tokens and sign-ins, audit events; and fast-check
 * properties that no filter string and no PATCH body gives a 500.
 */
import fc from 'fast-check';
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SigilEvent } from '../../src/events/events.js';
import {
  clientTokens,
  dropSchema,
  expectNoLeak,
  introspect,
  passwordTokens,
  POSTGRES_URL,
  startSigil,
  testConfig,
  tokenRequest,
  uniqueSchema,
  userinfo,
  type TestSigil,
} from '../helpers.js';

const USER = 'urn:ietf:params:scim:schemas:core:2.0:User';
const GROUP = 'urn:ietf:params:scim:schemas:core:2.0:Group';
const PATCH = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';
const ERROR = 'urn:ietf:params:scim:api:messages:2.0:Error';

const base = testConfig();
const config = {
  clients: [
    ...base.clients!,
    {
      clientId: 'scim-bot',
      clientSecrets: ['scim-bot-secret'],
      allowedGrantTypes: ['client_credentials'],
      allowedScopes: ['scim'],
    },
  ],
};

const schemaName = uniqueSchema('sigil_scim');
describe.each([
  ['SQLite', () => ({})],
  ['PostgreSQL', () => ({ storage: `${POSTGRES_URL}?schema=${schemaName}` })],
])('SCIM on %s', (_name, storage) => {
  let sigil: TestSigil;
  let token: string;
  const events: SigilEvent[] = [];
  beforeAll(async () => {
    sigil = await startSigil({ ...config, ...storage() });
    sigil.subscribe((e) => void events.push(e));
    token = (await clientTokens(sigil, 'scim', ['scim-bot', 'scim-bot-secret'])).access_token;
  });
  afterAll(async () => {
    await sigil?.close();
    if (_name === 'PostgreSQL') await dropSchema(schemaName);
  });

  function scim(
    method: string,
    url: string,
    body?: unknown,
    headers: Record<string, string> = {},
  ): Promise<LightMyRequestResponse> {
    return sigil.app.inject({
      method: method as 'GET',
      url: `/scim/v2${url}`,
      headers: {
        authorization: `Bearer ${token}`,
        ...(body !== undefined ? { 'content-type': 'application/scim+json' } : {}),
        ...headers,
      },
      ...(body !== undefined ? { payload: typeof body === 'string' ? body : JSON.stringify(body) } : {}),
    });
  }
  // biome-ignore lint/suspicious/noExplicitAny: the tests read nested SCIM attributes of the created resource.
  async function create(user: Record<string, unknown>): Promise<Record<string, any>> {
    const res = await scim('POST', '/Users', { schemas: [USER], ...user });
    expect(res.statusCode, res.body).toBe(201);
    return res.json();
  }
  function expectError(res: LightMyRequestResponse, status: number, scimType?: string): void {
    expectNoLeak(res);
    expect(res.statusCode, res.body).toBe(status);
    expect(res.headers['content-type']).toContain('application/scim+json');
    const body = res.json();
    expect(body.schemas).toEqual([ERROR]);
    expect(body.status).toBe(String(status));
    if (scimType) expect(body.scimType).toBe(scimType);
  }
  const ids = async (filter: string, extra = ''): Promise<string[]> => {
    const res = await scim('GET', `/Users?filter=${encodeURIComponent(filter)}&sortBy=userName${extra}`);
    expect(res.statusCode, res.body).toBe(200);
    return res.json().Resources.map((r: { userName: string }) => r.userName);
  };

  it('is guarded: 401 with a Bearer challenge without a token, 403 insufficient_scope without the scope', async () => {
    const none = await sigil.app.inject({ method: 'GET', url: '/scim/v2/Users' });
    expectError(none, 401);
    expect(none.headers['www-authenticate']).toMatch(/^Bearer realm="sigil"/);
    const api = (await clientTokens(sigil, 'api1')).access_token;
    const res = await scim('GET', '/Users', undefined, { authorization: `Bearer ${api}` });
    expectError(res, 403);
    expect(res.headers['www-authenticate']).toContain('error="insufficient_scope"');
    expect(res.headers['www-authenticate']).toContain('scope="scim"');
  });

  it('describes itself: ServiceProviderConfig, ResourceTypes, Schemas', async () => {
    const spc = (await scim('GET', '/ServiceProviderConfig')).json();
    expect(spc).toMatchObject({
      patch: { supported: true },
      bulk: { supported: false },
      filter: { supported: true, maxResults: 200 },
      sort: { supported: true },
      etag: { supported: true },
    });
    const types = (await scim('GET', '/ResourceTypes')).json();
    expect(types.Resources.map((t: { endpoint: string }) => t.endpoint)).toEqual(['/Users', '/Groups']);
    const user = (await scim('GET', `/Schemas/${USER}`)).json();
    expect(user.attributes.map((a: { name: string }) => a.name)).toEqual([
      'id',
      'externalId',
      'userName',
      'name',
      'displayName',
      'active',
      'password',
      'emails',
      'groups',
    ]);
    expect(user.attributes.find((a: { name: string }) => a.name === 'password')).toMatchObject({
      mutability: 'writeOnly',
      returned: 'never',
    });
    expectError(await scim('GET', '/Schemas/urn:nope'), 404);
  });

  it('refuses NUL characters and out-of-range pages with SCIM errors, never a 500 (PostgreSQL refuses NUL in text)', async () => {
    expectError(
      await scim('POST', '/Users', `{"schemas":["${USER}"],"userName":"nul\\u0000user"}`),
      400,
      'invalidValue',
    );
    expectError(
      await scim('GET', `/Users?filter=${encodeURIComponent('userName eq "a\\u0000b"')}`),
      400,
      'invalidFilter',
    );
    expectError(await scim('GET', '/Users/%00'), 404);
    expectError(await scim('GET', '/Groups/a%01b'), 404);
    const far = await scim('POST', '/Users/.search', {
      schemas: ['urn:ietf:params:scim:api:messages:2.0:SearchRequest'],
      startIndex: 1e300,
      count: 1e300,
    });
    expect(far.statusCode, far.body).toBe(200);
    expect(far.json().Resources ?? []).toEqual([]);
  });

  it('creates a user (201, Location, ETag), reads it back, keeps the OIDC claims in step, never returns the password', async () => {
    const res = await scim('POST', '/Users', {
      schemas: [USER],
      userName: 'Grace',
      externalId: 'ext-grace',
      name: { givenName: 'Grace', familyName: 'Hopper', formatted: 'Grace Hopper' },
      displayName: 'Amazing Grace',
      emails: [
        { value: 'grace@work.example', type: 'work', primary: true },
        { value: 'grace@home.example', type: 'home' },
      ],
      password: 'cobol-1959',
    });
    expect(res.statusCode, res.body).toBe(201);
    const user = res.json();
    expect(res.headers.location).toBe(`http://127.0.0.1:5999/scim/v2/Users/${user.id}`);
    expect(res.headers.etag).toBe('W/"1"');
    expect(user).toMatchObject({
      userName: 'Grace',
      active: true,
      meta: { resourceType: 'User', version: 'W/"1"', location: res.headers.location },
    });
    expect(user.password).toBeUndefined();
    const got = await scim('GET', `/Users/${user.id}`);
    expect(got.json()).toEqual(user);
    const stored = await sigil.context.users.findBySubject(user.id);
    expect(stored?.claims).toMatchObject({
      name: 'Grace Hopper',
      given_name: 'Grace',
      family_name: 'Hopper',
      email: 'grace@work.example',
      email_verified: false,
    });
    const tokens = await passwordTokens(sigil, { username: 'grace', password: 'cobol-1959', scope: 'openid profile' });
    expect(tokens.access_token).toBeTruthy();
    const created = events.find((e) => e.name === 'resource_created' && e.target?.id === user.id);
    expect(created).toMatchObject({ clientId: 'scim-bot', endpoint: 'scim', target: { type: 'User', id: user.id } });
    expect(created?.changed).toContain('password');
    expect(JSON.stringify(events)).not.toContain('cobol-1959');
    expect(JSON.stringify(events)).not.toContain('$argon2');
  });

  it("refuses a password the policy refuses (400 invalidValue naming password, in the policy's words) on create, PUT and PATCH, storing nothing", async () => {
    const refused = (res: LightMyRequestResponse, words: string) => {
      expectError(res, 400, 'invalidValue');
      expect(res.json().detail).toMatch(/^password: the password /);
      expect(res.json().detail).toContain(words);
    };
    refused(
      await scim('POST', '/Users', { schemas: [USER], userName: 'weakling', password: 'password' }),
      'the password is a common or breached password',
    );
    refused(
      await scim('POST', '/Users', { schemas: [USER], userName: 'weakling', password: 'a' }),
      'the password is shorter than 8 characters',
    );
    refused(
      await scim('POST', '/Users', { schemas: [USER], userName: 'weakling', password: 'weakling-1' }),
      'the password contains the username',
    );
    expect(await ids('userName eq "weakling"')).toEqual([]);
    const u = await create({ userName: 'steady', password: 'violet-harbour-1959' });
    refused(
      await scim('PUT', `/Users/${u.id}`, { schemas: [USER], userName: 'steady', password: 'qwertyuiop' }),
      'the password is a common or breached password',
    );
    refused(
      await scim('PATCH', `/Users/${u.id}`, {
        schemas: [PATCH],
        Operations: [{ op: 'replace', path: 'password', value: 'password' }],
      }),
      'the password is a common or breached password',
    );
    // A rename's password is checked against the new name.
    refused(
      await scim('PUT', `/Users/${u.id}`, { schemas: [USER], userName: 'harbour', password: 'violet-harbour-1959' }),
      'the password contains the username',
    );
    const after = await scim('GET', `/Users/${u.id}`);
    expect(after.json()).toMatchObject({ userName: 'steady', meta: { version: u.meta.version } });
    for (const password of ['password', 'qwertyuiop'])
      expect(
        (await tokenRequest(sigil, { grant_type: 'password', username: 'steady', password }, ['ropc', 'ropc-secret']))
          .statusCode,
      ).toBe(400);
    expect(
      (await passwordTokens(sigil, { username: 'steady', password: 'violet-harbour-1959' })).access_token,
    ).toBeTruthy();
  });

  it('answers 409 uniqueness for a taken userName (case-insensitive, config users too) and 400 for bad input', async () => {
    expectError(await scim('POST', '/Users', { schemas: [USER], userName: 'GRACE' }), 409, 'uniqueness');
    expectError(await scim('POST', '/Users', { schemas: [USER], userName: 'alice' }), 409, 'uniqueness');
    expectError(await scim('POST', '/Users', { userName: 'noschemas' }), 400, 'invalidSyntax');
    expectError(await scim('POST', '/Users', '{not json'), 400, 'invalidSyntax');
    expectError(await scim('POST', '/Users', { schemas: [USER], userName: '' }), 400, 'invalidValue');
    expectError(await scim('POST', '/Users', { schemas: [USER], userName: 'x', active: 'yes' }), 400, 'invalidValue');
    expectError(
      await scim('POST', '/Users', {
        schemas: [USER],
        userName: 'x',
        emails: [
          { value: 'a@b', primary: true },
          { value: 'c@d', primary: true },
        ],
      }),
      400,
      'invalidValue',
    );
    expectError(
      await scim('POST', '/Users', `{"schemas":["${USER}"],"userName":"deep","x":${'['.repeat(20)}${']'.repeat(20)}}`),
      400,
      'invalidSyntax',
    );
    expectError(await scim('GET', '/Users/no-such-user'), 404);
  });

  describe('filters (RFC 7644 §3.4.2.2)', () => {
    beforeAll(async () => {
      for (const [userName, externalId, email, type, active] of [
        ['ann', 'e-1', 'ann@acme.example', 'work', true],
        ['anna', 'e-2', 'anna@home.example', 'home', true],
        ['bert', 'e-3', 'bert@acme.example', 'work', false],
        ['carl', null, 'carl@other.example', 'work', true],
      ] as const)
        await create({ userName, ...(externalId ? { externalId } : {}), emails: [{ value: email, type }], active });
    });

    it('supports every operator on userName (case-insensitive), externalId (case-exact), emails and active', async () => {
      expect(await ids('userName eq "ANN"')).toEqual(['ann']);
      expect(await ids('userName ne "ann" and userName sw "an"')).toEqual(['anna']);
      expect(await ids('userName co "NN"')).toEqual(['ann', 'anna']);
      expect(await ids('userName sw "a"')).toEqual(['ann', 'anna']);
      expect(await ids('userName ew "rt"')).toEqual(['bert']);
      expect(await ids('userName gt "bert" and userName lt "d"')).toEqual(['carl']);
      expect(await ids('userName ge "bert" and userName le "carl"')).toEqual(['bert', 'carl']);
      expect(await ids('externalId eq "e-2"')).toEqual(['anna']);
      expect(await ids('externalId eq "E-2"')).toEqual([]);
      expect(await ids('externalId pr and userName sw "a"')).toEqual(['ann', 'anna']);
      expect(await ids('emails.value eq "BERT@acme.example"')).toEqual(['bert']);
      expect(await ids('emails co "@acme."')).toEqual(['ann', 'bert']);
      expect(await ids('emails[type eq "work" and value ew "acme.example"]')).toEqual(['ann', 'bert']);
      expect(await ids('active eq false')).toEqual(['bert']);
      expect(await ids('meta.created gt "2000-01-01T00:00:00Z" and userName eq "carl"')).toEqual(['carl']);
    });

    it('applies not, and before or, and grouping', async () => {
      // and binds tighter than or: ann or (bert and active) → ann only (bert is inactive).
      expect(await ids('userName eq "ann" or userName eq "bert" and active eq true')).toEqual(['ann']);
      expect(await ids('(userName eq "ann" or userName eq "bert") and active eq false')).toEqual(['bert']);
      expect(await ids('not (userName sw "a") and emails co "example" and not (userName eq "grace")')).toEqual([
        'bert',
        'carl',
      ]);
    });

    it('refuses what it cannot translate or parse with invalidFilter, and bounds length and depth', async () => {
      for (const bad of [
        'userName eq',
        'userName xx "a"',
        'name.givenName eq "x"',
        '(userName eq "a"',
        'active gt true',
        'userName eq "a" junk',
        'emails[value eq "a"',
        `userName eq "${'a'.repeat(5000)}"`,
        `${'('.repeat(12)}userName eq "a"${')'.repeat(12)}`,
        Array.from({ length: 51 }, () => 'userName eq "a"').join(' or '),
      ]) {
        const res = await scim('GET', `/Users?filter=${encodeURIComponent(bad)}`);
        expectError(res, 400, 'invalidFilter');
      }
    });

    it('sorts, pages (startIndex, count bounded to 200) and selects attributes', async () => {
      const page = (
        await scim(
          'GET',
          '/Users?filter=userName%20sw%20%22a%22%20or%20userName%20sw%20%22b%22&sortBy=userName&sortOrder=descending&startIndex=2&count=1',
        )
      ).json();
      expect(page).toMatchObject({ totalResults: 3, startIndex: 2, itemsPerPage: 1 });
      expect(page.Resources[0].userName).toBe('anna');
      const all = (await scim('GET', '/Users?count=5000')).json();
      expect(all.itemsPerPage).toBe(all.totalResults);
      const only = (
        await scim('GET', '/Users?filter=userName%20eq%20%22ann%22&attributes=userName,emails.value')
      ).json().Resources[0];
      expect(Object.keys(only).sort()).toEqual(['emails', 'id', 'schemas', 'userName']);
      expect(only.emails).toEqual([{ value: 'ann@acme.example' }]);
      const without = (
        await scim('GET', '/Users?filter=userName%20eq%20%22ann%22&excludedAttributes=emails,meta,id')
      ).json().Resources[0];
      expect(without.emails).toBeUndefined();
      expect(without.meta).toBeUndefined();
      expect(without.id).toBeTruthy();
      expectError(await scim('GET', '/Users?sortBy=name.givenName'), 400, 'invalidValue');
      const search = await scim('POST', '/Users/.search', {
        schemas: ['urn:ietf:params:scim:api:messages:2.0:SearchRequest'],
        filter: 'userName eq "carl"',
        attributes: ['userName'],
      });
      expect(search.json().Resources).toEqual([{ schemas: [USER], id: expect.any(String), userName: 'carl' }]);
    });
  });

  describe('PATCH (§3.5.2), PUT and ETags (§3.14)', () => {
    it('applies add, replace and remove with attribute paths and value filters', async () => {
      const u = await create({
        userName: 'patchy',
        emails: [
          { value: 'p@work.example', type: 'work' },
          { value: 'p@home.example', type: 'home' },
        ],
      });
      const res = await scim('PATCH', `/Users/${u.id}`, {
        schemas: [PATCH],
        Operations: [
          { op: 'replace', path: 'name.givenName', value: 'Pat' },
          { op: 'Replace', path: 'emails[type eq "work"].value', value: 'pat@work.example' },
          { op: 'remove', path: 'emails[type eq "home"]' },
          { op: 'add', path: 'emails', value: [{ value: 'pat@other.example', type: 'other', primary: true }] },
          { op: 'add', value: { displayName: 'Pat P', externalId: 'x-pat' } },
        ],
      });
      expect(res.statusCode, res.body).toBe(200);
      const body = res.json();
      expect(body.name).toEqual({ givenName: 'Pat' });
      expect(body.displayName).toBe('Pat P');
      expect(body.externalId).toBe('x-pat');
      expect(body.emails.map((e: { value: string }) => e.value).sort()).toEqual([
        'pat@other.example',
        'pat@work.example',
      ]);
      expect(res.headers.etag).toBe('W/"2"');
      expect((await sigil.context.users.findBySubject(u.id))?.claims).toMatchObject({
        given_name: 'Pat',
        email: 'pat@other.example',
      });
      const updated = events.filter((e) => e.name === 'resource_updated' && e.target?.id === u.id).at(-1);
      expect(updated?.changed?.sort()).toEqual(['displayName', 'emails', 'externalId', 'name']);
    });

    it('answers noTarget, invalidPath, mutability and invalidSyntax', async () => {
      const u = await create({ userName: 'errs', emails: [{ value: 'e@x.example', type: 'work' }] });
      const patch = (ops: unknown[]) => scim('PATCH', `/Users/${u.id}`, { schemas: [PATCH], Operations: ops });
      expectError(
        await patch([{ op: 'replace', path: 'emails[type eq "home"].value', value: 'x@y.z' }]),
        400,
        'noTarget',
      );
      expectError(await patch([{ op: 'remove' }]), 400, 'noTarget');
      expectError(await patch([{ op: 'replace', path: 'nickName', value: 'x' }]), 400, 'invalidPath');
      expectError(await patch([{ op: 'replace', path: 'emails[type eq', value: 'x' }]), 400, 'invalidPath');
      expectError(await patch([{ op: 'replace', path: 'id', value: 'x' }]), 400, 'mutability');
      expectError(await patch([{ op: 'add', path: 'groups', value: [{ value: 'g' }] }]), 400, 'mutability');
      expectError(await patch([{ op: 'remove', path: 'userName' }]), 400, 'mutability');
      expectError(await patch([{ op: 'jump', path: 'userName', value: 'x' }]), 400, 'invalidSyntax');
      expectError(await scim('PATCH', `/Users/${u.id}`, { Operations: [] }), 400, 'invalidSyntax');
      // A failed PATCH changes nothing.
      expect((await scim('GET', `/Users/${u.id}`)).headers.etag).toBe('W/"1"');
    });

    it('answers 412 for a stale If-Match, accepts the current one, 304 for If-None-Match', async () => {
      const u = await create({ userName: 'etag' });
      expectError(
        await scim(
          'PUT',
          `/Users/${u.id}`,
          { schemas: [USER], userName: 'etag', displayName: 'x' },
          { 'if-match': 'W/"7"' },
        ),
        412,
      );
      const ok = await scim(
        'PUT',
        `/Users/${u.id}`,
        { schemas: [USER], userName: 'etag', displayName: 'x' },
        { 'if-match': 'W/"1"' },
      );
      expect(ok.statusCode, ok.body).toBe(200);
      expect(ok.headers.etag).toBe('W/"2"');
      expectError(
        await scim(
          'PATCH',
          `/Users/${u.id}`,
          { schemas: [PATCH], Operations: [{ op: 'replace', path: 'displayName', value: 'y' }] },
          { 'if-match': 'W/"1"' },
        ),
        412,
      );
      expectError(await scim('DELETE', `/Users/${u.id}`, undefined, { 'if-match': 'W/"1"' }), 412);
      expect((await scim('GET', `/Users/${u.id}`, undefined, { 'if-none-match': 'W/"2"' })).statusCode).toBe(304);
      // Without If-Match, concurrent PATCHes each apply to the newest version: none is lost.
      const both = await Promise.all([
        scim('PATCH', `/Users/${u.id}`, {
          schemas: [PATCH],
          Operations: [{ op: 'replace', path: 'displayName', value: 'a' }],
        }),
        scim('PATCH', `/Users/${u.id}`, {
          schemas: [PATCH],
          Operations: [{ op: 'replace', path: 'externalId', value: 'b' }],
        }),
      ]);
      expect(both.map((r) => r.statusCode)).toEqual([200, 200]);
      const merged = await scim('GET', `/Users/${u.id}`);
      expect(merged.json()).toMatchObject({ displayName: 'a', externalId: 'b' });
      expect(merged.headers.etag).toBe('W/"4"');
      expect((await scim('DELETE', `/Users/${u.id}`, undefined, { 'if-match': 'W/"4"' })).statusCode).toBe(204);
      expectError(await scim('GET', `/Users/${u.id}`), 404);
    });
  });

  describe('groups and deactivation', () => {
    it("puts a group's displayName into its members' role claim at userinfo, and takes it out again", async () => {
      const u = await create({ userName: 'member', password: 'violet-harbour-1959' });
      const g = await scim('POST', '/Groups', {
        schemas: [GROUP],
        displayName: 'auditors',
        members: [{ value: u.id }],
      });
      expect(g.statusCode, g.body).toBe(201);
      const group = g.json();
      expect(group.members).toEqual([
        { value: u.id, $ref: `http://127.0.0.1:5999/scim/v2/Users/${u.id}`, display: 'member', type: 'User' },
      ]);
      expectError(await scim('POST', '/Groups', { schemas: [GROUP], displayName: 'AUDITORS' }), 409, 'uniqueness');
      expectError(
        await scim('POST', '/Groups', { schemas: [GROUP], displayName: 'x', members: [{ value: 'nobody' }] }),
        400,
        'invalidValue',
      );
      const { access_token } = await passwordTokens(sigil, {
        username: 'member',
        password: 'violet-harbour-1959',
        scope: 'openid roles',
      });
      expect((await userinfo(sigil, access_token)).json().role).toEqual(['auditors']);
      expect((await scim('GET', `/Users/${u.id}`)).json().groups).toEqual([
        { value: group.id, $ref: `http://127.0.0.1:5999/scim/v2/Groups/${group.id}`, display: 'auditors' },
      ]);
      expect(
        (await scim('GET', `/Groups?filter=${encodeURIComponent(`members[value eq "${u.id}"]`)}`)).json().totalResults,
      ).toBe(1);
      const removed = await scim('PATCH', `/Groups/${group.id}`, {
        schemas: [PATCH],
        Operations: [{ op: 'remove', path: `members[value eq "${u.id}"]` }],
      });
      expect(removed.statusCode, removed.body).toBe(200);
      expect(removed.json().members).toBeUndefined();
      expect((await userinfo(sigil, access_token)).json().role).toBeUndefined();
      const added = await scim('PATCH', `/Groups/${group.id}`, {
        schemas: [PATCH],
        Operations: [
          { op: 'add', path: 'members', value: [{ value: u.id }] },
          { op: 'replace', path: 'displayName', value: 'Auditors 2' },
        ],
      });
      expect(added.statusCode, added.body).toBe(200);
      expect((await userinfo(sigil, access_token)).json().role).toEqual(['Auditors 2']);
      expect((await scim('DELETE', `/Groups/${group.id}`)).statusCode).toBe(204);
      expect((await userinfo(sigil, access_token)).json().role).toBeUndefined();
    });

    it('never names a group after admin.userRole: provisioning cannot make an administrator (create, replace, PATCH)', async () => {
      const u = await create({ userName: 'climber', password: 'violet-harbour-1959' });
      for (const displayName of ['sigil-admin', 'SIGIL-Admin', ' sigil-admin '])
        expectError(
          await scim('POST', '/Groups', { schemas: [GROUP], displayName, members: [{ value: u.id }] }),
          400,
          'invalidValue',
        );
      const group = (
        await scim('POST', '/Groups', { schemas: [GROUP], displayName: 'climbers', members: [{ value: u.id }] })
      ).json();
      expectError(
        await scim('PATCH', `/Groups/${group.id}`, {
          schemas: [PATCH],
          Operations: [{ op: 'replace', path: 'displayName', value: 'sigil-admin' }],
        }),
        400,
        'invalidValue',
      );
      expectError(
        await scim('PUT', `/Groups/${group.id}`, {
          schemas: [GROUP],
          displayName: 'Sigil-Admin',
          members: [{ value: u.id }],
        }),
        400,
        'invalidValue',
      );
      expect((await scim('GET', `/Groups/${group.id}`)).json().displayName).toBe('climbers');
    });

    it('deleting a user takes them out of their groups (a new group version) and lowers the total', async () => {
      const before = (await scim('GET', '/Users?count=0')).json().totalResults;
      const u = await create({ userName: 'goner' });
      expect((await scim('GET', '/Users?count=0')).json().totalResults).toBe(before + 1);
      const group = (
        await scim('POST', '/Groups', { schemas: [GROUP], displayName: 'goners', members: [{ value: u.id }] })
      ).json();
      expect((await scim('DELETE', `/Users/${u.id}`)).statusCode).toBe(204);
      const after = await scim('GET', `/Groups/${group.id}`);
      expect(after.json().members).toBeUndefined();
      expect(after.headers.etag).toBe('W/"2"');
      expect((await scim('GET', '/Users?count=0')).json().totalResults).toBe(before);
      const deleted = events.find((e) => e.name === 'resource_deleted' && e.target?.id === u.id);
      expect(deleted).toMatchObject({ clientId: 'scim-bot', target: { type: 'User', id: u.id } });
    });

    it('active:false ends refresh tokens and access tokens, and refuses sign-in like a wrong password', async () => {
      const u = await create({ userName: 'leaver', password: 'violet-harbour-1959' });
      const tokens = await passwordTokens(sigil, {
        username: 'leaver',
        password: 'violet-harbour-1959',
        scope: 'openid offline_access',
      });
      const res = await scim('PATCH', `/Users/${u.id}`, {
        schemas: [PATCH],
        Operations: [{ op: 'replace', path: 'active', value: false }],
      });
      expect(res.statusCode, res.body).toBe(200);
      expect(res.json().active).toBe(false);
      const refreshed = await tokenRequest(
        sigil,
        { grant_type: 'refresh_token', refresh_token: tokens.refresh_token ?? '' },
        ['ropc', 'ropc-secret'],
      );
      expect(refreshed.statusCode).toBe(400);
      expect(refreshed.json().error).toBe('invalid_grant');
      expect((await userinfo(sigil, tokens.access_token)).statusCode).toBe(401);
      expect((await introspect(sigil, tokens.refresh_token ?? '', ['ropc', 'ropc-secret'])).json()).toEqual({
        active: false,
      });
      const wrong = await tokenRequest(sigil, { grant_type: 'password', username: 'leaver', password: 'not-it' }, [
        'ropc',
        'ropc-secret',
      ]);
      const inactive = await tokenRequest(
        sigil,
        { grant_type: 'password', username: 'leaver', password: 'violet-harbour-1959' },
        ['ropc', 'ropc-secret'],
      );
      expect(inactive.statusCode).toBe(wrong.statusCode);
      expect(inactive.body).toBe(wrong.body);
      // The one way users are made inactive (UserAdmin.setActiveOf, as `sigil users disable`): its audit
      // event names the actor.
      expect(events.find((e) => e.name === 'admin_changed' && e.target?.id === u.id)).toMatchObject({
        endpoint: 'scim',
        clientId: 'scim-bot',
        action: 'user.deactivate',
        target: { type: 'user', id: u.id },
        changes: { active: false, endedSessions: 0 },
      });
    });
  });

  describe('never a 500', () => {
    const filterChars = fc.constantFrom(
      'userName',
      'emails',
      '.value',
      'eq',
      'co',
      'pr',
      'and',
      'or',
      'not',
      '(',
      ')',
      '[',
      ']',
      '"a"',
      '"',
      ' ',
      'true',
      '1',
      'urn:x:y',
      '\\',
      'é',
      '-',
    );
    it('for any filter string (fast-check)', async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.oneof(
            fc.array(filterChars, { maxLength: 12 }).map((a) => a.join(' ')),
            fc.string({ maxLength: 60 }),
          ),
          async (filter) => {
            const res = await scim('GET', `/Users?filter=${encodeURIComponent(filter)}`);
            expectNoLeak(res);
            expect([200, 400]).toContain(res.statusCode);
          },
        ),
        { numRuns: 150 },
      );
    });

    it('for any PATCH body (fast-check)', async () => {
      const u = await create({ userName: 'fuzz', emails: [{ value: 'f@z.example', type: 'work' }] });
      const op = fc.record({
        op: fc.constantFrom('add', 'remove', 'replace', 'x', 1),
        path: fc.option(
          fc.constantFrom(
            'userName',
            'emails[type eq "work"].value',
            'emails',
            'name.givenName',
            'members',
            'active',
            'id',
            '[',
            'emails[',
            'a.b.c',
          ),
          { nil: undefined },
        ),
        value: fc.option(fc.jsonValue({ maxDepth: 3 }), { nil: undefined }),
      });
      await fc.assert(
        fc.asyncProperty(
          fc.oneof(
            fc.record({ schemas: fc.constant([PATCH]), Operations: fc.array(op, { maxLength: 4 }) }),
            fc.jsonValue({ maxDepth: 3 }),
          ),
          async (body) => {
            const res = await scim('PATCH', `/Users/${u.id}`, body);
            expectNoLeak(res);
            expect([200, 400, 409]).toContain(res.statusCode);
          },
        ),
        { numRuns: 150 },
      );
    });

    it('for any PATCH body against a group: success or a SCIM error, and a failed PATCH changes nothing (fast-check)', async () => {
      const [a, b] = [await create({ userName: 'gfuzz-a' }), await create({ userName: 'gfuzz-b' })];
      const created = await scim('POST', '/Groups', {
        schemas: [GROUP],
        displayName: 'gfuzz',
        members: [{ value: a.id }],
      });
      expect(created.statusCode, created.body).toBe(201);
      const id = String(created.json().id);
      const read = async () => {
        const res = await scim('GET', `/Groups/${id}`);
        expect(res.statusCode, res.body).toBe(200);
        return { etag: res.headers.etag, body: res.json() as Record<string, unknown> };
      };
      const deep = (depth: number): unknown => (depth === 0 ? 'x' : { value: deep(depth - 1) });
      const path = fc.constantFrom(
        'members',
        `members[value eq "${a.id}"]`,
        `members[value eq "${b.id}"]`,
        'members[value eq "x"]',
        `members[value eq "${a.id}"].display`,
        'members[value pr]',
        'members[display co "gfuzz"]',
        'members[',
        'members[value eq]',
        'members]',
        'members.value',
        'members[value eq "x"',
        'displayName',
        'DisplayName',
        'externalId',
        'id',
        'meta',
        'meta.version',
        'schemas',
        `${GROUP}:displayName`,
        `${GROUP}:members`,
        'urn:x:y:displayName',
        'a.b.c',
        '',
        ' ',
        'displayName[value eq "x"]',
        'members[not (value eq "x")]',
        `members[value eq "${'\u0000'}"]`,
      );
      const value = fc.oneof(
        fc.jsonValue({ maxDepth: 3 }),
        fc.constantFrom(
          [{ value: a.id }],
          [{ value: b.id }],
          [{ value: a.id }, { value: b.id }],
          [{ value: 'nobody' }],
          [{ value: b.id, display: 'x' }],
          { value: b.id },
          [{}],
          [null],
        ),
        fc.constantFrom('gfuzz renamed', 'sigil-admin', '', 'é'.repeat(300), 'x'.repeat(70_000)),
        fc.constantFrom(
          { displayName: 'gfuzz 2' },
          { members: [{ value: b.id }] },
          { displayName: 'sigil-admin' },
          { externalId: 'ext-1' },
          { id: 'other' },
        ),
        fc.integer({ min: 3, max: 40 }).map(deep),
        fc.array(fc.record({ value: fc.constantFrom(a.id, b.id, 'x') }), { maxLength: 1200 }),
      );
      const op = fc.record(
        { op: fc.constantFrom('add', 'remove', 'replace', 'Add', 'REPLACE', 'x', 1, null), path, value },
        { requiredKeys: ['op'] },
      );
      // Operations a directory sends, which mostly succeed, so that failures are tried against changed states.
      const member = fc.constantFrom(a.id, b.id);
      const validOp = fc.oneof(
        member.map((m) => ({ op: 'add', path: 'members', value: [{ value: m }] })),
        member.map((m) => ({ op: 'remove', path: `members[value eq "${m}"]` })),
        fc.constantFrom('gfuzz', 'gfuzz 2', 'GFuzz ü').map((v) => ({ op: 'replace', path: 'displayName', value: v })),
        fc.string({ maxLength: 20 }).map((v) => ({ op: 'replace', path: 'externalId', value: v })),
        member.map((m) => ({ op: 'replace', value: { displayName: 'gfuzz 3', members: [{ value: m }] } })),
        fc.constant({ op: 'remove', path: 'members' }),
      );
      const body = fc.oneof(
        {
          weight: 3,
          arbitrary: fc.record({
            schemas: fc.constant([PATCH]),
            Operations: fc.array(validOp, { minLength: 1, maxLength: 3 }),
          }),
        },
        // A valid operation followed by a bad one: the PATCH is atomic (§3.5.2), the first must not stay applied.
        fc.tuple(validOp, op).map(([good, bad]) => ({ schemas: [PATCH], Operations: [good, bad] })),
        fc.record({ schemas: fc.constant([PATCH]), Operations: fc.array(op, { maxLength: 5 }) }),
        fc.record({
          schemas: fc.constantFrom([PATCH], [GROUP], [], 'x'),
          Operations: fc.oneof(fc.array(op, { maxLength: 2 }), fc.jsonValue({ maxDepth: 2 })),
        }),
        fc.jsonValue({ maxDepth: 3 }),
        // Text that is not JSON, or is JSON cut short.
        fc.string({ maxLength: 40 }).map((t) => `{"schemas":["${PATCH}"],"Operations":[${t}`),
      );
      let before = await read();
      const seen = new Map<number, number>();
      await fc.assert(
        fc.asyncProperty(body, async (patch) => {
          const res = await scim('PATCH', `/Groups/${id}`, typeof patch === 'string' ? patch : JSON.stringify(patch));
          expectNoLeak(res);
          seen.set(res.statusCode, (seen.get(res.statusCode) ?? 0) + 1);
          if (res.statusCode === 200) {
            before = await read();
            expect(res.headers.etag).toBe(before.etag);
            expect(res.json()).toEqual(before.body);
            return;
          }
          expectError(res, res.statusCode);
          // 413: a body over the app's 64 KB limit, refused before SCIM reads it.
          expect([400, 409, 413]).toContain(res.statusCode);
          // A failed PATCH changes nothing: same version, same representation.
          expect(await read()).toEqual(before);
        }),
        { numRuns: 200 },
      );
      // Both outcomes were tried.
      expect(seen.get(200)).toBeGreaterThan(10);
      expect(seen.get(400)).toBeGreaterThan(10);
    });
  });
});
