/**
 * The console of an organization's own admins over HTTP (on SQLite and PostgreSQL): alice, a
 * member of `acme` holding the organization role `admin` (and no admin role of Sigil's), signs in
 * to the console with her second factor and gets a console of `acme` only: a home page listing it,
 * its members (with their usernames and names) and invitations (mailed to a real SMTP server),
 * audited with the console client and her subject. The attacker's tries: `globex`'s pages and an
 * organization that does not exist (the same 403 page), forms posted there (nothing changes, no
 * mail), every page of the full console (403, nothing changed, none linked), her own roles (403),
 * adding a subject directly (no route), a POST without the CSRF token (403), and the role taken away
 * while her console session lives (the next request refused). A user who administers nothing gets
 * the "not allowed" page; a full admin keeps the full console.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SigilEvent } from '../../src/events/events.js';
import { Browser, input, type Step, startAuthorizeSigil, unescapeHtml } from '../authorize-helpers.js';
import { consoleBrowser } from '../console-helpers.js';
import { dropSchema, POSTGRES_URL, testConfig, type TestSigil, uniqueSchema } from '../helpers.js';
import { enrollTotp, submitCode, totpCode } from '../mfa-helpers.js';
import { SmtpReceiver } from '../smtp-receiver.js';

/** The full console's admin: a config-file user with the admin role. */
const ROOT = { subjectId: 'adm-1', username: 'root', password: 'root', claims: { role: 'sigil-admin' } };
/** Where alice's console begins. */
const HOME = '/admin/my-organizations';
/** alice's organization's pages. */
const ACME = `${HOME}/acme`;

/** The pages of the full console, none of which an organization admin may open. */
const FULL_PAGES = [
  '/admin/users',
  '/admin/users/2',
  '/admin/clients',
  '/admin/clients/m2m',
  '/admin/clients/new',
  '/admin/clients/m2m/delete',
  '/admin/resources',
  '/admin/resources/new/api-scopes',
  '/admin/keys',
  '/admin/events',
  '/admin/organizations',
  '/admin/organizations/acme',
  '/admin/organizations/acme/members',
  '/admin/organizations/acme/invitations',
];

/** Forms of the full console, each a change an organization admin must not make. */
const FULL_FORMS: [string, Record<string, string>][] = [
  ['/admin/users', { username: 'mallory', password: 'orchard-lantern-58' }],
  ['/admin/users/2/claims', { claims: '{"role":"sigil-admin"}' }],
  ['/admin/users/2/active', { active: 'false' }],
  ['/admin/groups', { displayName: 'forged' }],
  ['/admin/clients/new', { clientId: 'forged', clientName: 'Forged', allowedGrantTypes: 'client_credentials' }],
  ['/admin/clients/m2m', { clientName: 'Forged', etag: '*' }],
  ['/admin/clients/m2m/delete', { etag: '*' }],
  ['/admin/keys/rotate', { button: 'rotate' }],
  ['/admin/organizations', { name: 'forged', displayName: 'Forged' }],
  ['/admin/organizations/acme', { displayName: 'Forged', etag: '*' }],
  ['/admin/organizations/acme/members', { user: 'alice', roles: 'admin owner' }],
  ['/admin/organizations/acme/members/roles', { subject: '1', roles: 'admin owner' }],
  ['/admin/organizations/acme/members/remove', { subject: '2' }],
  ['/admin/organizations/globex/members', { user: 'alice', roles: 'admin' }],
  ['/admin/organizations/acme/invitations', { email: 'forged@example.net', roles: 'admin' }],
];

describe.each(['sqlite', 'postgres'] as const)("an organization admin's console on %s", (dialect) => {
  const schema = uniqueSchema('orgconsole');
  let smtp: SmtpReceiver;
  let sigil: TestSigil;
  /** alice's console. */
  let alice: Browser;
  const events: SigilEvent[] = [];

  const members = async (org: string) =>
    (await sigil.context.management.organizations.members(org, { limit: 50 })).members;

  /** Everything a forbidden request might have changed. */
  const state = async () => ({
    organizations: await sigil.context.management.organizations.list(),
    acme: await members('acme'),
    globex: await members('globex'),
    users: await sigil.context.management.users.list(),
    pending: [
      ...(await sigil.context.invitations.pending('acme')),
      ...(await sigil.context.invitations.pending('globex')),
    ],
  });

  /** A page of alice's console, which must answer 200 and show only what it has. */
  async function page(url: string): Promise<Step> {
    const res = await alice.get(url);
    expect(res.status, res.body).toBe(200);
    expect(res.headers['cache-control']).toContain('no-store');
    expect(res.body).not.toContain('undefined');
    return res;
  }

  /** Posts `fields` as alice with the CSRF token of a page of her console. */
  async function submit(url: string, fields: Record<string, string>): Promise<Step> {
    return alice.post(url, { csrf_token: input((await page(HOME)).body, 'csrf_token'), ...fields });
  }

  /** The `admin_changed` events of `action` that alice made in the console. */
  const aliceChanges = (action: string) =>
    events.filter(
      (e) =>
        e.name === 'admin_changed' &&
        e.action === action &&
        e.clientId === 'sigil-console' &&
        e.subjectId === '1' &&
        e.endpoint === '/admin',
    );

  beforeAll(async () => {
    smtp = await new SmtpReceiver().start();
    const base = testConfig();
    sigil = await startAuthorizeSigil([], {
      users: [...base.users!, ROOT],
      organizations: [
        { name: 'acme', displayName: 'Acme Corporation' },
        { name: 'globex', displayName: 'Globex' },
      ],
      email: { smtpUrl: smtp.url, from: 'id@sigil.example' },
      ...(dialect === 'postgres' ? { storage: `${POSTGRES_URL}?schema=${schema}` } : {}),
    });
    sigil.subscribe((e) => void events.push(e));
    const organizations = sigil.context.management.organizations;
    await organizations.putMember('acme', '1', ['admin']);
    await organizations.putMember('acme', '2', ['viewer']);
    await organizations.putMember('globex', '3', ['admin']);
    await organizations.putMember('globex', 'adm-1', ['viewer']);
    alice = await consoleBrowser(sigil, 'alice', 'alice', 'Your organizations');
  });
  afterAll(async () => {
    await sigil?.close();
    await smtp?.close();
    if (dialect === 'postgres') await dropSchema(schema);
  });

  it('begins at a home page listing the organizations she administers, with no link to the rest of the console', async () => {
    const start = await alice.get('/admin');
    expect(start.status).toBe(303);
    expect(start.location).toBe(HOME);
    const home = await page(HOME);
    expect(home.body).toContain('<h1>Your organizations</h1>');
    expect(home.body).toContain('<code>acme</code>');
    expect(home.body).toContain('Acme Corporation');
    expect(home.body).toContain(`href="${ACME}/members"`);
    expect(home.body).toContain(`href="${ACME}/invitations"`);
    // globex, where she is no member, is not listed.
    expect(home.body).not.toContain('globex');
    expect(home.body).not.toContain('Globex');
    expect(home.body).toContain(`<a href="${HOME}" aria-current="page">Your organizations</a>`);
    for (const path of ['users', 'organizations', 'clients', 'resources', 'keys', 'events'])
      expect(home.body, path).not.toContain(`href="/admin/${path}`);
    // A stored organization she is made admin of is listed from the next page on (by display
    // name), and gone with it once it is deleted.
    const organizations = sigil.context.management.organizations;
    await organizations.create({ name: 'initech', displayName: 'Initech' });
    await organizations.putMember('initech', '1', ['billing', 'admin']);
    const listed = (await page(HOME)).body;
    expect(listed.indexOf('Acme Corporation')).toBeLessThan(listed.indexOf('Initech'));
    expect(listed).toContain(`href="${HOME}/initech/members"`);
    await organizations.delete('initech');
    expect((await page(HOME)).body).not.toContain('initech');
  });

  it("shows her organization's members with their usernames and names, and no add form", async () => {
    const shown = await page(`${ACME}/members`);
    expect(shown.body).toContain('Members of Acme Corporation');
    // Her own row shows her roles and no form to change them.
    expect(shown.body).toContain(
      '<td><code>1</code></td><td>alice</td><td>Alice Smith</td><td>admin</td><td>Your own membership: another admin changes it</td>',
    );
    expect(shown.body).not.toContain('name="subject" value="1"');
    expect(shown.body).toContain('<td><code>2</code></td><td>bob</td><td>Bob</td>');
    // No member of globex, and no settings page, add form or link into the full console.
    expect(shown.body).not.toContain('carol');
    expect(shown.body).not.toContain('name="user"');
    expect(shown.body).not.toContain('href="/admin/organizations');
    expect(shown.body).toContain(`<a href="${HOME}">Back to organizations</a>`);
  });

  it("refuses another organization's pages and forms alike whether it exists or not, changing nothing", async () => {
    const before = await state();
    const sent = smtp.mails.length;
    const answers = new Set<string>();
    for (const org of ['globex', 'no-such']) {
      for (const path of ['members', 'invitations']) {
        const res = await alice.get(`${HOME}/${org}/${path}`);
        expect(res.status, `${org}/${path}`).toBe(403);
        expect(res.body).not.toContain('Globex');
        answers.add(res.body);
      }
      for (const [path, fields] of [
        ['members/roles', { subject: '3', roles: 'viewer' }],
        ['members/remove', { subject: '3' }],
        ['invitations', { email: 'mallory@example.net', roles: 'admin' }],
        ['invitations/revoke', { id: 'x' }],
      ] as const) {
        const res = await submit(`${HOME}/${org}/${path}`, fields);
        expect(res.status, `${org}/${path}`).toBe(403);
        answers.add(res.body);
      }
    }
    // One answer for all of them: nothing tells whether globex exists.
    expect(answers.size).toBe(1);
    // No route adds a member by subject, for any organization.
    for (const org of ['globex', 'no-such'])
      expect((await submit(`${HOME}/${org}/members`, { user: 'alice', roles: 'admin' })).status).toBe(404);
    expect(unescapeHtml([...answers][0] ?? '')).toContain(
      'As an organization admin, you manage the members and invitations of the organizations you administer',
    );
    expect(await state()).toEqual(before);
    expect(smtp.mails).toHaveLength(sent);
    expect(events.filter((e) => e.name === 'admin_changed')).toEqual([]);
  });

  it('refuses every page and form of the full console with 403, changing nothing', async () => {
    const before = await state();
    for (const url of FULL_PAGES) {
      const res = await alice.get(url);
      expect(res.status, url).toBe(403);
      expect(res.body, url).not.toContain('Bob');
      expect(res.body, url).not.toContain('m2m');
      expect(res.body, url).toContain(`href="${HOME}"`);
    }
    for (const [url, fields] of FULL_FORMS) {
      const res = await submit(url, fields);
      expect(res.status, url).toBe(403);
    }
    expect(await state()).toEqual(before);
    expect(events.filter((e) => e.name === 'admin_changed')).toEqual([]);
  });

  it('never changes or ends her own membership, and adds no one by subject', async () => {
    const before = await members('acme');
    for (const [path, fields] of [
      ['members/roles', { subject: '1', roles: 'admin owner' }],
      ['members/remove', { subject: '1' }],
    ] as const) {
      const res = await submit(`${ACME}/${path}`, fields);
      expect(res.status, path).toBe(403);
      expect(res.body).toContain('an organization admin cannot change or remove their own membership');
    }
    // No route adds a member by username or subject; the roles form gives none to a non-member.
    expect((await submit(`${ACME}/members`, { user: 'carol', roles: 'admin' })).status).toBe(404);
    expect((await submit(`${ACME}/members`, { user: '3', roles: 'admin' })).status).toBe(404);
    const outsider = await submit(`${ACME}/members/roles`, { subject: '3', roles: 'admin' });
    expect(outsider.status).toBe(404);
    expect(outsider.body).not.toContain('Carol');
    expect(await members('acme')).toEqual(before);
  });

  it('refuses a POST without the CSRF token, or with a wrong one, with 403', async () => {
    const before = await state();
    for (const [path, fields] of [
      ['members/roles', { subject: '2', roles: 'admin' }],
      ['members/remove', { subject: '2' }],
      ['invitations', { email: 'forged@example.net', roles: 'admin' }],
    ] as const)
      for (const csrf of [{}, { csrf_token: 'not-a-token' }] as Record<string, string>[]) {
        const res = await alice.post(`${ACME}/${path}`, { ...csrf, ...fields });
        expect(res.status, path).toBe(403);
      }
    expect(await state()).toEqual(before);
  });

  it("changes another member's roles and invites an address by mail, audited with the console client and her subject", async () => {
    const changed = await submit(`${ACME}/members/roles`, { subject: '2', roles: 'viewer billing' });
    expect(changed.status, changed.body).toBe(303);
    expect(changed.location).toBe(`${ACME}/members?done=consoleMemberRolesSaved`);
    expect((await page(changed.location ?? '')).body).toContain('The member&#39;s roles have been saved.');
    expect(await members('acme')).toContainEqual({ subject: '2', roles: ['viewer', 'billing'] });
    expect(aliceChanges('organization.member_update')).toHaveLength(1);

    const sent = smtp.mails.length;
    const invited = await submit(`${ACME}/invitations`, { email: 'vera@example.net', roles: 'viewer' });
    expect(invited.status, invited.body).toBe(303);
    expect(invited.location).toBe(`${ACME}/invitations?done=consoleInvitationSent`);
    const mail = await smtp.waitFor(sent + 1);
    expect(mail.to).toEqual(['vera@example.net']);
    expect(mail.subject).toContain('Acme Corporation');
    expect((await page(invited.location ?? '')).body).toContain('<td>vera@example.net</td><td>viewer</td>');
    expect(events.find((e) => e.action === 'organization.invitation_create')).toMatchObject({
      clientId: 'sigil-console',
      subjectId: '1',
      endpoint: '/admin',
    });
    const [pending] = await sigil.context.invitations.pending('acme');
    const revoked = await submit(`${ACME}/invitations/revoke`, { id: pending?.id ?? '' });
    expect(revoked.status, revoked.body).toBe(303);
    expect(await sigil.context.invitations.pending('acme')).toEqual([]);
  });

  it('lets a full admin keep the full console, and not act as the admin of an organization they do not administer', async () => {
    const root = await consoleBrowser(sigil, 'root');
    const users = await root.get('/admin/users');
    expect(users.status).toBe(200);
    expect(users.body).toContain('href="/admin/clients"');
    expect((await root.get('/admin/organizations/acme/members')).status).toBe(200);
    // root is a member of globex, but no admin of it: the organization admin's pages refuse.
    const refused = await root.get(`${HOME}/globex/members`);
    expect(refused.status).toBe(403);
    expect(refused.body).toContain('You are not an admin of this organization.');
  });

  it('refuses her next request once her role admin is taken away, while her console session lives', async () => {
    expect((await alice.get(`${ACME}/members`)).status).toBe(200);
    const csrf = input((await page(HOME)).body, 'csrf_token');
    await sigil.context.management.organizations.updateMember('acme', '1', ['viewer']);
    const before = await state();
    expect((await alice.get(`${ACME}/members`)).status).toBe(403);
    expect((await alice.get(`${ACME}/invitations`)).status).toBe(403);
    const post = await alice.post(`${ACME}/members/roles`, { csrf_token: csrf, subject: '2', roles: 'admin' });
    expect(post.status).toBe(403);
    const invite = await alice.post(`${ACME}/invitations`, { csrf_token: csrf, email: 'late@example.net' });
    expect(invite.status).toBe(403);
    expect(await state()).toEqual(before);
    // Her home page lists nothing now.
    const home = await page(HOME);
    expect(home.body).not.toContain('<code>acme</code>');
    expect(home.body).toContain('You administer no organization at present.');
  });
});

/** Follows redirects, the console's callback at the issuer's absolute URL too. */
async function through(b: Browser, step: Step): Promise<Step> {
  for (let i = 0; i < 10 && step.status === 303 && step.location; i++) step = await b.get(step.location);
  return step;
}

describe('the console for a user who administers nothing', () => {
  let sigil: TestSigil;
  beforeAll(async () => {
    sigil = await startAuthorizeSigil([], { organizations: [{ name: 'acme', displayName: 'Acme' }] });
    await sigil.context.management.organizations.putMember('acme', '2', ['viewer', 'Admin']);
  });
  afterAll(async () => sigil?.close());

  it('shows the "not allowed" page naming both roles, and nothing of the organization', async () => {
    const bob = new Browser(sigil);
    const enrol = new Browser(sigil);
    await enrol.signIn('bob');
    const { secret } = await enrollTotp(enrol);
    let step = await through(bob, await bob.get(HOME));
    step = await bob.follow(await bob.submitLogin(step, 'bob', 'bob'));
    step = await through(bob, await submitCode(bob, step, totpCode(secret, 1)));
    expect(step.status, step.body).toBe(403);
    expect(unescapeHtml(step.body)).toContain('It needs the role sigil-admin, or the role admin in an organization');
    // Signed in to Sigil with the second factor, each console page goes the same way.
    const again = await through(bob, await bob.get(`${HOME}/acme/members`));
    expect(again.status).toBe(403);
    expect(again.body).not.toContain('Acme');
  });
});
