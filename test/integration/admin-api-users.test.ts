/**
 * The users of the management API (/admin/v1/users) over HTTP on a real SQLite store: create
 * (the password policy, usernames a stored, config-file or directory user holds refused with 409),
 * read without the password, the listing a page at a time, JSON Merge Patch with If-Match,
 * deactivation signing the user out everywhere, delete; config-file users read-only; tokens
 * without `sigil:admin` refused; every change audited with its actor.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verify } from '@node-rs/argon2';
import type { SigilEvent } from '../../src/events/events.js';
import type { UserDirectory } from '../../src/users/directory.js';
import { Browser } from '../authorize-helpers.js';
import {
  clientTokens,
  introspect,
  passwordTokens,
  startSigil,
  testConfig,
  tokenRequest,
  type TestSigil,
  userinfo,
} from '../helpers.js';

const PASSWORD = 'harbour-violet-lantern-19';

/** A user directory that holds the username "rita" (and answers no password). */
const directory: UserDirectory = {
  name: 'hr',
  authenticate: async () => undefined,
  findBySubject: async () => undefined,
  findByUsername: async (username) =>
    username.toLowerCase() === 'rita'
      ? { subjectId: 'hr-1', username: 'rita', tenant: null, isActive: true, claims: {} }
      : undefined,
};

let sigil: TestSigil;
let admin: string;
let reader: string;
let other: string;
const events: SigilEvent[] = [];

beforeAll(async () => {
  sigil = await startSigil(
    {
      clients: [
        ...testConfig().clients!,
        {
          clientId: 'automation',
          clientSecrets: ['automation-secret'],
          allowedGrantTypes: ['client_credentials'],
          allowedScopes: ['sigil:admin', 'sigil:admin:read', 'api1'],
        },
      ],
      rateLimits: { maxFailures: 1000, windowSeconds: 60 },
    },
    { userDirectories: [directory] },
  );
  sigil.subscribe((e) => void events.push(e));
  admin = (await clientTokens(sigil, 'sigil:admin', ['automation', 'automation-secret'])).access_token;
  reader = (await clientTokens(sigil, 'sigil:admin:read', ['automation', 'automation-secret'])).access_token;
  other = (await clientTokens(sigil, 'api1', ['automation', 'automation-secret'])).access_token;
});
afterAll(async () => sigil?.close());

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
    ...(body !== undefined ? { payload: JSON.stringify(body) } : {}),
  });
}

/** Creates a stored user through the API; their subject. */
async function created(user: Record<string, unknown>): Promise<string> {
  const res = await call('POST', '/users', user);
  expect(res.statusCode, res.body).toBe(201);
  return res.json().subjectId as string;
}

const storedNamed = async (username: string) =>
  (await sigil.context.store.users.listUsers()).filter((u) => u.username.toLowerCase() === username.toLowerCase());

describe('/admin/v1/users access', () => {
  it('refuses a token without sigil:admin (403 insufficient_scope) and one with sigil:admin:read for changes, and no token (401)', async () => {
    for (const [method, path, body] of [
      ['GET', '/users'],
      ['GET', '/users/1'],
      ['POST', '/users', { username: 'intruder' }],
      ['PATCH', '/users/1', { active: false }],
      ['DELETE', '/users/1'],
    ] as const) {
      const refused = await call(method, path, body, { 'if-match': '*' }, other);
      expect(refused.statusCode, `${method} ${path}`).toBe(403);
      expect(refused.headers['www-authenticate']).toContain('insufficient_scope');
    }
    expect((await call('GET', '/users', undefined, {}, '')).statusCode).toBe(401);
    expect((await call('GET', '/users', undefined, {}, reader)).statusCode).toBe(200);
    const byReader = await call('POST', '/users', { username: 'by-reader' }, {}, reader);
    expect(byReader.statusCode).toBe(403);
    expect(byReader.headers['www-authenticate']).toContain('scope="sigil:admin"');
    expect(await storedNamed('intruder')).toEqual([]);
    expect(await storedNamed('by-reader')).toEqual([]);
  });
});

describe('/admin/v1/users', () => {
  it('creates a user with an argon2id password who signs in; reads never show the password; the change is audited with its actor', async () => {
    const res = await call('POST', '/users', {
      username: 'nadia',
      password: PASSWORD,
      claims: { name: 'Nadia' },
      email: 'nadia@example.org',
    });
    expect(res.statusCode, res.body).toBe(201);
    const user = res.json();
    expect(user).toMatchObject({
      username: 'nadia',
      tenant: null,
      active: true,
      source: 'store',
      claims: { name: 'Nadia' },
      email: 'nadia@example.org',
      emailVerified: false,
      hasPassword: true,
      passwordChangeRequired: false,
      groups: [],
    });
    expect(res.headers.etag).toMatch(/^"[\w-]+"$/);
    expect(res.body).not.toContain(PASSWORD);
    expect(res.body).not.toContain('$argon2');
    const got = await call('GET', `/users/${user.subjectId}`, undefined, {}, reader);
    expect(got.json()).toEqual(user);
    expect(got.headers.etag).toBe(res.headers.etag);
    expect(
      await verify((await sigil.context.store.users.findUserBySubject(user.subjectId))?.passwordHash ?? '', PASSWORD),
    ).toBe(true);
    expect(
      (await passwordTokens(sigil, { username: 'nadia', password: PASSWORD, scope: 'openid' })).access_token,
    ).toBeTruthy();
    expect(
      events.find((e) => e.name === 'admin_changed' && e.action === 'user.create' && e.target?.id === user.subjectId),
    ).toMatchObject({
      endpoint: '/admin/v1',
      clientId: 'automation',
      changes: { username: 'nadia', claims: ['name'], password: '(set)' },
    });
    expect(JSON.stringify(events)).not.toContain(PASSWORD);
  });

  it("refuses a password the policy refuses (422 naming password, in the policy's words) on create and change, storing nothing", async () => {
    const res = await call('POST', '/users', { username: 'weakling', password: 'password' });
    expect(res.statusCode, res.body).toBe(422);
    expect(res.headers['content-type']).toContain('application/problem+json');
    expect(res.json()).toMatchObject({
      errors: [{ path: 'password', message: 'the password is a common or breached password' }],
    });
    expect(await storedNamed('weakling')).toEqual([]);
    const id = await created({ username: 'sturdy', password: PASSWORD });
    const { etag } = (await call('GET', `/users/${id}`)).headers;
    const patched = await call('PATCH', `/users/${id}`, { password: 'sturdy-1' }, { 'if-match': String(etag) });
    expect(patched.statusCode, patched.body).toBe(422);
    expect(patched.json().detail).toContain('the password contains the username');
    expect(
      (
        await tokenRequest(sigil, { grant_type: 'password', username: 'sturdy', password: PASSWORD, scope: 'openid' }, [
          'ropc',
          'ropc-secret',
        ])
      ).statusCode,
    ).toBe(200);
  });

  it('refuses (409) a username a config-file user, a user directory or a stored user holds, in any case, storing nothing', async () => {
    await created({ username: 'otto' });
    for (const username of ['alice', 'ALICE', 'rita', 'Rita', 'OTTO']) {
      const res = await call('POST', '/users', { username, password: PASSWORD });
      expect(res.statusCode, `${username}: ${res.body}`).toBe(409);
      expect(res.json()).toMatchObject({ status: 409, errors: [{ path: 'username' }] });
    }
    expect(await storedNamed('alice')).toEqual([]);
    expect(await storedNamed('rita')).toEqual([]);
    expect(await storedNamed('otto')).toHaveLength(1);
    // A config-file user's subject is refused too.
    expect((await call('POST', '/users', { username: 'bobby', subjectId: '2' })).statusCode).toBe(409);
    // A client's id is no user's subject (RFC 9068 §5).
    expect((await call('POST', '/users', { username: 'mimic', subjectId: 'm2m' })).statusCode).toBe(422);
  });

  it('addresses a user by a subject of the longest length (255, percent-encoded in the path)', async () => {
    const subjectId = `é-${'s'.repeat(253)}`;
    const res = await call('POST', '/users', { username: 'longsub', password: 'orchard-lantern-58', subjectId });
    expect(res.statusCode, res.body).toBe(201);
    const read = await call('GET', `/users/${encodeURIComponent(subjectId)}`);
    expect(read.statusCode, read.body).toBe(200);
    expect(read.json<{ subjectId: string }>().subjectId).toBe(subjectId);
    expect((await call('DELETE', `/users/${encodeURIComponent(subjectId)}`)).statusCode).toBe(204);
  });

  it('refuses bad input with field paths (422); an unknown subject is 404', async () => {
    expect((await call('POST', '/users', { username: 'u'.repeat(101) })).json()).toMatchObject({
      status: 422,
      errors: [{ path: 'username' }],
    });
    expect((await call('POST', '/users', { username: '  ' })).json()).toMatchObject({
      status: 422,
      errors: [{ path: 'username' }],
    });
    expect((await call('POST', '/users', { username: 'nul\u0000name' })).json()).toMatchObject({
      status: 422,
      errors: [{ path: 'username' }],
    });
    expect((await call('POST', '/users', { username: 'mailer', email: 'not an address' })).json()).toMatchObject({
      status: 422,
      errors: [{ path: 'email' }],
    });
    expect((await call('POST', '/users', { username: 'extra', role: 'admin' })).statusCode).toBe(422);
    expect((await call('GET', '/users/nobody')).statusCode).toBe(404);
    // A body over the server's limit is refused before any handler, as a problem detail too.
    const huge = await call('POST', '/users', { username: 'huge', claims: { note: 'x'.repeat(2 ** 20) } });
    expect(huge.statusCode).toBe(413);
    expect(huge.headers['content-type']).toContain('application/problem+json');
    expect(huge.json()).toMatchObject({ status: 413, title: 'Content too large' });
    expect(await storedNamed('huge')).toEqual([]);
  });

  it('keeps one source of truth for an email: claims may not hold email or email_verified, the address field sets it', async () => {
    for (const claims of [{ email: 'eve@example.org' }, { name: 'Eve', email_verified: true }]) {
      const refused = await call('POST', '/users', { username: 'eve', claims });
      expect(refused.json()).toMatchObject({ status: 422, errors: [{ path: 'claims' }] });
    }
    // Nothing was stored by the refusals; the control with the address field succeeds.
    expect(await storedNamed('eve')).toEqual([]);
    const id = await created({
      username: 'eve',
      claims: { name: 'Eve' },
      email: 'eve@example.org',
      emailVerified: true,
    });
    const read = await call('GET', `/users/${id}`);
    expect(read.json()).toMatchObject({ email: 'eve@example.org', emailVerified: true });
    const patched = await call(
      'PATCH',
      `/users/${id}`,
      { claims: { email: 'other@example.org' } },
      {
        'if-match': String(read.headers.etag),
      },
    );
    expect(patched.json()).toMatchObject({ status: 422, errors: [{ path: 'claims' }] });
  });

  it("lists the config file's users, then the stored ones by username, a page at a time, each once", async () => {
    await created({ username: 'aaron' });
    const seen: string[] = [];
    let cursor: string | undefined;
    for (let pages = 0; pages < 50; pages++) {
      const res = await call('GET', `/users?limit=2${cursor ? `&cursor=${cursor}` : ''}`, undefined, {}, reader);
      expect(res.statusCode, res.body).toBe(200);
      const { users, next } = res.json() as { users: { username: string; source: string }[]; next?: string };
      expect(users.length).toBeLessThanOrEqual(2);
      seen.push(...users.map((u) => `${u.source}:${u.username}`));
      if (next === undefined) break;
      cursor = next;
    }
    const config = testConfig().users!.map((u) => `config:${u.username}`);
    const stored = (await sigil.context.store.users.listUsers()).map((u) => `store:${u.username}`).sort();
    expect(seen).toEqual([...config, ...stored]);
    expect(new Set(seen).size).toBe(seen.length);
    expect((await call('GET', '/users?cursor=bm90LWEtY3Vyc29y')).json()).toMatchObject({
      status: 422,
      errors: [{ path: 'cursor' }],
    });
    expect((await call('GET', '/users?limit=0')).statusCode).toBe(422);
  });

  it('changes claims (merged), address and activation by a JSON Merge Patch that needs the current ETag (428 without, 412 when stale)', async () => {
    const id = await created({ username: 'petra', claims: { name: 'Petra', locale: 'de' } });
    const first = await call('GET', `/users/${id}`);
    expect((await call('PATCH', `/users/${id}`, { claims: { locale: null, nickname: 'Pet' } })).statusCode).toBe(428);
    const patched = await call(
      'PATCH',
      `/users/${id}`,
      { claims: { locale: null, nickname: 'Pet' }, email: 'petra@example.org', emailVerified: true },
      { 'if-match': String(first.headers.etag) },
    );
    expect(patched.statusCode, patched.body).toBe(200);
    expect(patched.json()).toMatchObject({
      claims: { name: 'Petra', nickname: 'Pet' },
      email: 'petra@example.org',
      emailVerified: true,
    });
    expect(patched.json().claims.locale).toBeUndefined();
    expect(patched.headers.etag).not.toBe(first.headers.etag);
    expect(
      (await call('PATCH', `/users/${id}`, { claims: { name: 'Other' } }, { 'if-match': String(first.headers.etag) }))
        .statusCode,
    ).toBe(412);
    expect((await call('PATCH', `/users/${id}`, { username: 'renamed' }, { 'if-match': '*' })).statusCode).toBe(422);
    expect(events.filter((e) => e.name === 'admin_changed' && e.target?.id === id).map((e) => e.action)).toEqual([
      'user.create',
      'user.claims',
      'user.update',
    ]);
  });

  it('deactivation signs the user out everywhere: sessions end, tokens are revoked, sign-in is refused; activation brings none of it back', async () => {
    const id = await created({ username: 'leona', password: PASSWORD });
    const tokens = await passwordTokens(sigil, {
      username: 'leona',
      password: PASSWORD,
      scope: 'openid api1 offline_access',
    });
    const browser = new Browser(sigil);
    await browser.signIn('leona', PASSWORD);
    expect((await call('GET', `/users/${id}/sessions`)).json().sessions).toHaveLength(1);
    const { etag } = (await call('GET', `/users/${id}`)).headers;
    const res = await call('PATCH', `/users/${id}`, { active: false }, { 'if-match': String(etag) });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().active).toBe(false);
    expect((await call('GET', `/users/${id}/sessions`)).json().sessions).toEqual([]);
    expect((await userinfo(sigil, tokens.access_token)).statusCode).toBe(401);
    expect((await introspect(sigil, tokens.refresh_token ?? '', ['ropc', 'ropc-secret'])).json()).toEqual({
      active: false,
    });
    const refused = await tokenRequest(
      sigil,
      { grant_type: 'password', username: 'leona', password: PASSWORD, scope: 'openid' },
      ['ropc', 'ropc-secret'],
    );
    expect(refused.statusCode).toBe(400);
    expect(refused.json().error).toBe('invalid_grant');
    const deactivated = events.find(
      (e) => e.name === 'admin_changed' && e.action === 'user.deactivate' && e.target?.id === id,
    );
    expect(deactivated).toMatchObject({
      endpoint: '/admin/v1',
      clientId: 'automation',
      changes: { active: false, endedSessions: 1 },
    });
    expect(Number(deactivated?.changes?.revokedTokens)).toBeGreaterThan(0);

    const again = await call('PATCH', `/users/${id}`, { active: true }, { 'if-match': String(res.headers.etag) });
    expect(again.statusCode, again.body).toBe(200);
    expect((await introspect(sigil, tokens.refresh_token ?? '', ['ropc', 'ropc-secret'])).json()).toEqual({
      active: false,
    });
    expect(
      (
        await tokenRequest(sigil, { grant_type: 'password', username: 'leona', password: PASSWORD, scope: 'openid' }, [
          'ropc',
          'ropc-secret',
        ])
      ).statusCode,
    ).toBe(200);
  });

  it('deletes a stored user (If-Match honoured when sent), signed out first; config-file users are read-only (409)', async () => {
    const id = await created({ username: 'dora', password: PASSWORD });
    const tokens = await passwordTokens(sigil, {
      username: 'dora',
      password: PASSWORD,
      scope: 'openid api1 offline_access',
    });
    expect((await call('DELETE', `/users/${id}`, undefined, { 'if-match': '"stale"' })).statusCode).toBe(412);
    expect((await call('DELETE', `/users/${id}`)).statusCode).toBe(204);
    expect((await call('GET', `/users/${id}`)).statusCode).toBe(404);
    expect((await call('DELETE', `/users/${id}`)).statusCode).toBe(404);
    expect((await introspect(sigil, tokens.refresh_token ?? '', ['ropc', 'ropc-secret'])).json()).toEqual({
      active: false,
    });
    expect(
      events.find((e) => e.name === 'admin_changed' && e.action === 'user.remove' && e.target?.id === id),
    ).toMatchObject({ endpoint: '/admin/v1', clientId: 'automation' });

    const alice = await call('GET', '/users/1', undefined, {}, reader);
    expect(alice.json()).toMatchObject({ username: 'alice', source: 'config', hasPassword: true });
    expect(alice.body).not.toContain('"password"');
    const patch = await call('PATCH', '/users/1', { active: false }, { 'if-match': String(alice.headers.etag) });
    expect(patch.statusCode).toBe(409);
    expect(patch.json().detail).toContain('config file');
    expect((await call('DELETE', '/users/1')).statusCode).toBe(409);
    expect(
      (await passwordTokens(sigil, { username: 'alice', password: 'alice', scope: 'openid' })).access_token,
    ).toBeTruthy();
  });
});
