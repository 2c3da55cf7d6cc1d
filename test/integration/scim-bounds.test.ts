/**
 * How SCIM lists stay bounded (stores/directory.ts): a filter that reads a whole table answers
 * 400 tooMany (RFC 7644 §3.12) instead of running unbounded: on SQLite above `sqliteScanUsers`
 * users, before it runs; on PostgreSQL when the statement timeout stops it. Small bounds over real
 * SQLite and PostgreSQL stores (no timings asserted), and the default SQLite bound over HTTP.
 */
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { Kysely, PostgresDialect, SqliteDialect, sql } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseFilter, ScimError } from '../../src/protocol/scim-filter.js';
import { SQLITE_SCAN_USERS, SqlDirectory, type ListQuery } from '../../src/stores/directory.js';
import { openStore } from '../../src/stores/sql.js';
import type { Database as StoreTables } from '../../src/stores/tables.js';
import type { Store } from '../../src/stores/types.js';
import {
  clientTokens,
  dropSchema,
  expectNoLeak,
  POSTGRES_URL,
  startSigil,
  tempDir,
  uniqueSchema,
  type TestSigil,
} from '../helpers.js';

const list = (filter: string): ListQuery => ({ filter: parseFilter(filter), offset: 0, limit: 100 });

/** The ScimError `run` throws, or fails. */
async function scimError(run: Promise<unknown>): Promise<ScimError> {
  const err = await run.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ScimError);
  return err as ScimError;
}

async function addUsers(directory: SqlDirectory, names: string[]): Promise<void> {
  for (const name of names)
    await directory.addUser(
      `sub-${name}`,
      {
        username: name,
        externalId: `ext-${name}`,
        isActive: true,
        claims: {},
        emails: [{ value: `${name}@example.org`, type: 'work', primary: true, verified: false }],
      },
      1764000000,
    );
}

describe('SCIM list bounds on SQLite: a scanning filter above sqliteScanUsers users is tooMany', () => {
  const { dir, cleanup } = tempDir();
  const file = join(dir, 'sigil.db');
  let store: Store;
  let db: Kysely<StoreTables>;
  let bounded: SqlDirectory;
  beforeAll(async () => {
    store = await openStore(`sqlite:${file}`);
    db = new Kysely<StoreTables>({ dialect: new SqliteDialect({ database: new Database(file) }) });
    bounded = new SqlDirectory(db, 'sqlite', { sqliteScanUsers: 3 });
    await addUsers(store.directory, ['alice', 'bob', 'carol']);
  });
  afterAll(async () => {
    await db?.destroy();
    await store?.close();
    cleanup();
  });

  it('answers every filter while the users are within the bound', async () => {
    expect((await bounded.listUsers(list('userName co "o"'))).total).toBe(2);
    expect((await bounded.listUsers(list('active eq true'))).total).toBe(3);
  });

  it('refuses co, ew, not, active and emails.type above it, with the error of §3.12, and still answers indexed filters', async () => {
    await addUsers(store.directory, ['dave']);
    for (const filter of [
      'userName co "o"',
      'userName ew "e"',
      'emails.value co "example"',
      'not (userName eq "bob")',
      'active eq true',
      'emails[type eq "work"]',
      'userName eq "bob" or userName co "a"',
    ]) {
      const err = await scimError(bounded.listUsers(list(filter)));
      expect(err.status, filter).toBe(400);
      expect(err.toJSON()).toMatchObject({
        schemas: ['urn:ietf:params:scim:api:messages:2.0:Error'],
        status: '400',
        scimType: 'tooMany',
      });
      expect(err.detail).toMatch(/more than 3 users/);
    }
    // eq and sw are index lookups and ranges; co after "and" filters what the index found.
    const answered: [string, string[]][] = [
      ['userName eq "BOB"', ['bob']],
      ['externalId eq "ext-carol"', ['carol']],
      ['emails.value eq "dave@example.org"', ['dave']],
      ['userName sw "ca"', ['carol']],
      ['emails.value sw "al"', ['alice']],
      ['userName sw "d" and userName co "av"', ['dave']],
      ['meta.lastModified ge "2025-01-01T00:00:00Z"', ['alice', 'bob', 'carol', 'dave']],
    ];
    for (const [filter, names] of answered)
      expect((await bounded.listUsers(list(filter))).users.map((u) => u.username).sort(), filter).toEqual(names);
  });

  it('counts and pages few matches, past the end and count=0', async () => {
    const page = async (filter: string, offset: number, limit: number) => {
      const r = await bounded.listUsers({
        filter: parseFilter(filter),
        offset,
        limit,
        sortBy: { attr: 'userName' },
        descending: true,
      });
      return { total: r.total, names: r.users.map((u) => u.username) };
    };
    expect(await page('userName sw "a" or userName sw "d"', 0, 1)).toEqual({ total: 2, names: ['dave'] });
    expect(await page('userName sw "a" or userName sw "d"', 1, 5)).toEqual({ total: 2, names: ['alice'] });
    expect(await page('userName sw "a" or userName sw "d"', 2, 5)).toEqual({ total: 2, names: [] });
    expect(await page('userName sw "a" or userName sw "d"', 0, 0)).toEqual({ total: 2, names: [] });
    expect(await page('userName eq "nobody"', 0, 5)).toEqual({ total: 0, names: [] });
  });

  it('refuses a group filter that scans the memberships above it', async () => {
    await store.directory.addGroup(
      'g1',
      { displayName: 'auditors', externalId: null, members: ['sub-alice'] },
      1764000000,
    );
    const err = await scimError(bounded.listGroups(list('members.value co "alice"')));
    expect(err.scimType).toBe('tooMany');
    expect((await bounded.listGroups(list('members.value eq "sub-alice"'))).groups.map((g) => g.displayName)).toEqual([
      'auditors',
    ]);
  });
});

describe('SCIM list bounds on PostgreSQL: the statement timeout answers tooMany', () => {
  const schema = uniqueSchema('sigil_scim_bounds');
  let store: Store;
  let db: Kysely<StoreTables>;
  beforeAll(async () => {
    store = await openStore(`${POSTGRES_URL}?schema=${schema}`);
    db = new Kysely<StoreTables>({
      dialect: new PostgresDialect({
        pool: new pg.Pool({ connectionString: POSTGRES_URL, max: 1, options: `-c search_path=${schema}` }),
      }),
    });
    // Enough users that reading all of them outlasts a 1 ms timeout on any machine.
    await sql`insert into users (subject_id, username, username_normalized, tenant, claims, is_active, created_at, external_id, version, updated_at)
      select 'sub-' || i, 'user' || i, 'user' || i, '', '{}', 1, 1764000000, 'ext-' || i, 1, 1764000000 from generate_series(1, 200000) as i`.execute(
      db,
    );
  });
  afterAll(async () => {
    await db?.destroy();
    await store?.close();
    await dropSchema(schema);
  });

  it('stops a scan at listTimeoutMs with 400 tooMany, and the pooled connections keep no timeout', async () => {
    const bounded = new SqlDirectory(db, 'postgres', { listTimeoutMs: 1 });
    const err = await scimError(bounded.listUsers(list('userName co "99999"')));
    expect(err.toJSON()).toMatchObject({ status: '400', scimType: 'tooMany' });
    expect(err.detail).toMatch(/longer than 1 ms/);
    // SET LOCAL ended with the transaction: the pool's one connection answers, without a timeout.
    expect((await sql<{ statement_timeout: string }>`show statement_timeout`.execute(db)).rows).toEqual([
      { statement_timeout: '0' },
    ]);
    // The default bound answers the same scan; an eq and an sw are index lookups.
    expect((await store.directory.listUsers(list('userName co "99999"'))).users.map((u) => u.username).sort()).toEqual([
      'user199999',
      'user99999',
    ]);
    expect((await store.directory.listUsers(list('userName eq "USER4242"'))).users.map((u) => u.subjectId)).toEqual([
      'sub-4242',
    ]);
    expect((await store.directory.listUsers(list('userName sw "user19999"'))).total).toBe(11);
  });

  it('counts and pages every way a list is answered: few matches, many, past the end, count=0', async () => {
    const page = async (filter: string, offset: number, limit: number) => {
      const r = await store.directory.listUsers({ filter: parseFilter(filter), offset, limit });
      return { total: r.total, ids: r.users.map((u) => u.subjectId) };
    };
    // Ids sort as text: sub-1, sub-10, sub-100, ...
    expect(await page('userName sw "user1999"', 0, 3)).toEqual({
      total: 111,
      ids: ['sub-1999', 'sub-19990', 'sub-199900'],
    });
    expect(await page('userName sw "user1999"', 110, 5)).toEqual({ total: 111, ids: ['sub-199999'] });
    expect(await page('userName sw "user1999"', 111, 5)).toEqual({ total: 111, ids: [] });
    expect(await page('userName sw "user1999"', 0, 0)).toEqual({ total: 111, ids: [] });
    expect(await page('userName eq "nobody"', 0, 5)).toEqual({ total: 0, ids: [] });
    // More matches than are found before sorting (10,000): counted, then paged in order.
    expect(await page('userName sw "user1"', 0, 2)).toEqual({ total: 111111, ids: ['sub-1', 'sub-10'] });
    expect(await page('userName sw "user1"', 20000, 2)).toEqual({ total: 111111, ids: ['sub-117999', 'sub-118'] });
  });
});

describe('SCIM over HTTP with more than 250,000 users on SQLite', () => {
  let sigil: TestSigil;
  let token: string;
  beforeAll(async () => {
    sigil = await startSigil({
      clients: [
        {
          clientId: 'scim-bot',
          clientSecrets: ['scim-bot-secret'],
          allowedGrantTypes: ['client_credentials'],
          allowedScopes: ['scim'],
        },
      ],
    });
    const raw = new Database(join(sigil.dir, 'sigil.db'));
    raw
      .prepare(`with recursive n(i) as (select 1 union all select i + 1 from n where i < ?)
      insert into users (subject_id, username, username_normalized, tenant, claims, is_active, created_at, external_id, version, updated_at)
      select 'sub-' || i, 'user' || i, 'user' || i, '', '{}', 1, 1764000000, 'ext-' || i, 1, 1764000000 from n`)
      .run(SQLITE_SCAN_USERS + 1);
    raw.close();
    token = (await clientTokens(sigil, 'scim', ['scim-bot', 'scim-bot-secret'])).access_token;
  });
  afterAll(async () => {
    await sigil?.close();
  });
  const get = (filter: string) =>
    sigil.app.inject({
      method: 'GET',
      url: `/scim/v2/Users?filter=${encodeURIComponent(filter)}`,
      headers: { authorization: `Bearer ${token}` },
    });

  it('answers co with 400 tooMany in the SCIM error schema, and eq as before', async () => {
    const res = await get('userName co "12345"');
    expectNoLeak(res);
    expect(res.statusCode, res.body).toBe(400);
    expect(res.headers['content-type']).toContain('application/scim+json');
    expect(res.json()).toMatchObject({
      schemas: ['urn:ietf:params:scim:api:messages:2.0:Error'],
      status: '400',
      scimType: 'tooMany',
    });
    const found = await get('userName eq "user250001"');
    expect(found.statusCode, found.body).toBe(200);
    expect(found.json()).toMatchObject({ totalResults: 1, Resources: [{ id: 'sub-250001', userName: 'user250001' }] });
  });
});
