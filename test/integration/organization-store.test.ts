/**
 * The organization store (src/stores/sql-organizations.ts, migration 0018_organizations) on every
 * backend, as the store contract runs (store.test.ts): `memory`, a SQLite file and PostgreSQL in a
 * schema of its own; where the database is shared, also across two store instances as two nodes.
 * Names are unique, a domain has one owner even under concurrent writers, writes are conditional
 * on the version, every write of an organization raises its change counter, members are paged by
 * subject, roles are replaced for members only and found by exact name across memberships, and
 * removing an organization or a user removes their memberships.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStore } from '../../src/stores/sql.js';
import type { OrganizationSettings, Store } from '../../src/stores/types.js';
import { dropSchema, POSTGRES_URL, tempDir, uniqueSchema } from '../helpers.js';

const sqliteDir = tempDir();
const pgSchema = uniqueSchema('orgstore');

const backends = [
  { name: 'memory', url: 'memory', shared: false },
  { name: 'SQLite file', url: `sqlite:${join(sqliteDir.dir, 'store.db')}`, shared: true },
  { name: 'PostgreSQL', url: `${POSTGRES_URL}?schema=${pgSchema}&poolSize=20`, shared: true },
];

afterAll(async () => {
  sqliteDir.cleanup();
  await dropSchema(pgSchema);
});

let counter = 0;
/** A fresh organization of its own name and id. */
function fresh(domains: string[] = []): { id: string; name: string; settings: OrganizationSettings } {
  counter++;
  return {
    id: `org_test${counter}`,
    name: `org-${counter}`,
    settings: { displayName: `Org ${counter}`, domains, identityProviders: [], membership: 'invite' },
  };
}

describe.each(backends)('organization store on $name', (backend) => {
  let store: Store;
  /** A second store on the same database (another node), or the same store for `memory`. */
  let other: Store;

  beforeAll(async () => {
    store = await openStore(backend.url);
    other = backend.shared ? await openStore(backend.url) : store;
  });
  afterAll(async () => {
    if (other !== store) await other.close();
    await store.close();
  });

  it('adds, reads, lists by name, updates at the version read, removes; each write raises the counter', async () => {
    const before = await store.organizations.version();
    const org = fresh([`a${counter}.example`]);
    expect(await store.organizations.add(org)).toBeUndefined();
    expect(await other.organizations.get(org.name)).toEqual({ ...org, version: 1 });
    expect((await other.organizations.list()).map((o) => o.name)).toContain(org.name);
    expect(await other.organizations.version()).toBe(before + 1);

    const settings = { ...org.settings, displayName: 'Renamed', membership: 'open' };
    expect(await store.organizations.update(org.id, 2, settings)).toEqual({ reason: 'changed' });
    expect(await store.organizations.update(org.id, 1, settings)).toBeUndefined();
    expect(await other.organizations.get(org.name)).toEqual({ ...org, settings, version: 2 });
    expect(await store.organizations.remove(org.id, 1)).toBe(false);
    expect(await store.organizations.remove(org.id, 2)).toBe(true);
    expect(await other.organizations.get(org.name)).toBeUndefined();
    // A refused write changes nothing, not even the counter.
    expect(await store.organizations.version()).toBe(before + 3);
    expect(await store.organizations.update(org.id, 2, settings)).toEqual({ reason: 'changed' });
    expect(await store.organizations.version()).toBe(before + 3);
  });

  it('refuses a taken name and a domain another organization holds, naming it; an update may keep its own', async () => {
    const first = fresh([`x${counter}.example`, `y${counter}.example`]);
    expect(await store.organizations.add(first)).toBeUndefined();
    const sameName = { ...fresh(), name: first.name };
    expect(await other.organizations.add(sameName)).toEqual({ reason: 'name_taken' });
    const second = fresh(['other.example', first.settings.domains[1] as string]);
    expect(await other.organizations.add(second)).toEqual({
      reason: 'domain_taken',
      domain: first.settings.domains[1],
      organization: first.name,
    });
    expect(await other.organizations.get(second.name)).toBeUndefined();
    // Its own domains again, one dropped: accepted; then the dropped one is free for another.
    const kept = { ...first.settings, domains: [first.settings.domains[0] as string] };
    expect(await store.organizations.update(first.id, 1, kept)).toBeUndefined();
    expect(await other.organizations.add(second)).toBeUndefined();
    const third = fresh();
    expect(await store.organizations.add(third)).toBeUndefined();
    expect(
      await store.organizations.update(third.id, 1, { ...third.settings, domains: [...second.settings.domains] }),
    ).toEqual({ reason: 'domain_taken', domain: 'other.example', organization: second.name });
  });

  it('of 10 concurrent writers claiming one domain exactly one wins (on PostgreSQL, from two nodes)', async () => {
    const domain = `race${counter}.example`;
    const orgs = Array.from({ length: 10 }, () => fresh([domain]));
    // Two SQLite connections in one thread cannot wait for each other (better-sqlite3 blocks the
    // thread that holds the other's transaction): there, nodes are processes, and one store races.
    const node = (i: number) => (backend.name === 'PostgreSQL' && i % 2 ? other : store);
    const outcomes = await Promise.all(orgs.map((o, i) => node(i).organizations.add(o)));
    expect(outcomes.filter((o) => o === undefined)).toHaveLength(1);
    expect(outcomes.filter((o) => o?.reason === 'domain_taken')).toHaveLength(9);
  });

  it('puts, pages and removes members; removing an organization removes its members', async () => {
    const org = fresh();
    expect(await store.organizations.add(org)).toBeUndefined();
    expect(await store.organizations.putMember(org.id, 'sub-b', ['admin'])).toBe('added');
    expect(await other.organizations.putMember(org.id, 'sub-a', [])).toBe('added');
    expect(await store.organizations.putMember(org.id, 'sub-c', ['x', 'y'])).toBe('added');
    expect(await other.organizations.putMember(org.id, 'sub-b', ['billing'])).toBe('replaced');
    expect(await store.organizations.members(org.id, { limit: 2 })).toEqual([
      { subject: 'sub-a', roles: [] },
      { subject: 'sub-b', roles: ['billing'] },
    ]);
    expect(await store.organizations.members(org.id, { after: 'sub-b', limit: 2 })).toEqual([
      { subject: 'sub-c', roles: ['x', 'y'] },
    ]);
    expect(await store.organizations.removeMember(org.id, 'sub-a')).toBe(true);
    expect(await store.organizations.removeMember(org.id, 'sub-a')).toBe(false);
    // Members of another organization (a config-file one: no row of its own) are apart.
    expect(await store.organizations.putMember('org_configured', 'sub-b', [])).toBe('added');
    expect(await store.organizations.remove(org.id, 1)).toBe(true);
    expect(await store.organizations.members(org.id, { limit: 10 })).toEqual([]);
    expect(await store.organizations.members('org_configured', { limit: 10 })).toEqual([
      { subject: 'sub-b', roles: [] },
    ]);
  });

  it('adds a member only if absent: an existing member keeps their roles', async () => {
    const org = fresh();
    expect(await store.organizations.add(org)).toBeUndefined();
    expect(await store.organizations.addMember(org.id, 'sub-a', [])).toBe(true);
    await other.organizations.putMember(org.id, 'sub-a', ['admin']);
    expect(await store.organizations.addMember(org.id, 'sub-a', [])).toBe(false);
    expect(await other.organizations.member(org.id, 'sub-a')).toEqual({ subject: 'sub-a', roles: ['admin'] });
    expect(await store.organizations.remove(org.id, 1)).toBe(true);
  });

  it('replaces the roles of a member only, never making one', async () => {
    const org = fresh();
    expect(await store.organizations.addMember(org.id, 'sub-a', ['viewer'])).toBe(true);
    expect(await other.organizations.replaceRoles(org.id, 'sub-a', ['admin'])).toBe(true);
    expect(await store.organizations.member(org.id, 'sub-a')).toEqual({ subject: 'sub-a', roles: ['admin'] });
    expect(await other.organizations.replaceRoles(org.id, 'sub-b', ['admin'])).toBe(false);
    expect(await store.organizations.member(org.id, 'sub-b')).toBeUndefined();
  });

  it('says whether a subject holds a role in any membership, and which, exactly, past many look-alikes', async () => {
    const subject = `holder-${counter++}`;
    expect(await store.organizations.holdsRole(subject, 'admin')).toBe(false);
    // Roles whose JSON text holds "admin" in quotes, or that differ in case only: none is the role.
    await store.organizations.putMember('org_case', subject, ['Admin', 'ADMIN', 'admins']);
    for (let i = 0; i < 101; i++)
      await store.organizations.putMember(`org_fp${String(i).padStart(3, '0')}`, subject, ['x"admin', 'a%min']);
    expect(await other.organizations.holdsRole(subject, 'admin')).toBe(false);
    expect(await other.organizations.holdsRole(subject, 'x"admin')).toBe(true);
    expect(await other.organizations.holdsRole(subject, 'a_min')).toBe(false);
    await store.organizations.putMember('org_zz', subject, ['billing', 'admin']);
    expect(await other.organizations.holdsRole(subject, 'admin')).toBe(true);
    expect(await other.organizations.holdsRole('someone-else', 'admin')).toBe(false);
    // The memberships holding it, past the look-alikes, by organization id and up to the limit.
    await store.organizations.putMember('org_aa', subject, ['admin']);
    expect(await other.organizations.membershipsWithRole(subject, 'admin', 10)).toEqual([
      { organizationId: 'org_aa' },
      { organizationId: 'org_zz' },
    ]);
    expect(await other.organizations.membershipsWithRole(subject, 'admin', 1)).toEqual([{ organizationId: 'org_aa' }]);
    expect(await other.organizations.membershipsWithRole(subject, 'x"admin', 200)).toHaveLength(101);
    expect(await other.organizations.membershipsWithRole('someone-else', 'admin', 10)).toEqual([]);
  });

  it("removing a user removes their memberships, in every organization, in the user's transaction", async () => {
    const subjectId = `member-${counter++}`;
    await store.users.addUser({
      subjectId,
      username: subjectId,
      tenant: null,
      passwordHash: null,
      claims: {},
      isActive: true,
    });
    const org = fresh();
    expect(await store.organizations.add(org)).toBeUndefined();
    await store.organizations.putMember(org.id, subjectId, ['admin']);
    await store.organizations.putMember('org_elsewhere', subjectId, []);
    await store.organizations.putMember(org.id, 'someone-else', []);
    expect(await other.users.removeUser(subjectId)).toBe(true);
    expect(await store.organizations.members(org.id, { limit: 10 })).toEqual([{ subject: 'someone-else', roles: [] }]);
    expect(await store.organizations.members('org_elsewhere', { limit: 10 })).toEqual([]);
  });
});
