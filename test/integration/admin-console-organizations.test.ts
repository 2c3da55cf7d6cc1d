/**
 * The console's organization pages over HTTP with a console session (on SQLite and PostgreSQL):
 * the list shows every organization with its source; one is created (a refused field marked on
 * the field, nothing stored), its settings saved with the version the form was read at (a stale
 * form refused with the current settings shown, nothing changed), and deleted; a config-file
 * organization's settings are read-only, a forged change refused. Members are added by username
 * or subject (an existing member's roles merged), paged, their roles replaced, removed;
 * invitations go out by mail to a real SMTP server and are revoked, and without config `email` the
 * page says so and an invitation is a 409 page. Every POST without the CSRF token is a 403 that
 * changes nothing; no input yields a 500; a user without the admin role reaches none of it; every
 * change is an `admin_changed` event naming the console client and the admin.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SigilEvent } from '../../src/events/events.js';
import { Browser, input, type Step, startAuthorizeSigil, unescapeHtml } from '../authorize-helpers.js';
import {
  CONSOLE_ROOT,
  consoleBrowser,
  consoleChanges,
  consolePage,
  consoleSubmit,
  postFields,
} from '../console-helpers.js';
import { dropSchema, POSTGRES_URL, testConfig, type TestSigil, uniqueSchema } from '../helpers.js';
import { enrollTotp, submitCode, totpCode } from '../mfa-helpers.js';
import { SmtpReceiver } from '../smtp-receiver.js';

const ROOT = CONSOLE_ROOT;

/** The config: one config-file organization with a provider, the admin, and `extra`. */
function config(extra: Record<string, unknown> = {}) {
  const base = testConfig();
  return {
    users: [...base.users!, ROOT],
    identityProviders: [
      { name: 'acme-sso', displayName: 'Acme SSO', authority: 'https://sso.acme.example', clientId: 'sigil' },
      { name: 'partner', authority: 'https://partner.example', clientId: 'sigil' },
    ],
    organizations: [{ name: 'acme', displayName: 'Acme', domains: ['acme.example'], identityProviders: ['acme-sso'] }],
    ...extra,
  };
}

describe.each(['sqlite', 'postgres'] as const)('the console organization pages on %s', (dialect) => {
  const schema = uniqueSchema('consoleorg');
  let smtp: SmtpReceiver;
  let sigil: TestSigil;
  let admin: Browser;
  const events: SigilEvent[] = [];

  beforeAll(async () => {
    smtp = await new SmtpReceiver().start();
    sigil = await startAuthorizeSigil(
      [],
      config({
        email: { smtpUrl: smtp.url, from: 'id@sigil.example' },
        ...(dialect === 'postgres' ? { storage: `${POSTGRES_URL}?schema=${schema}` } : {}),
      }),
    );
    sigil.subscribe((e) => void events.push(e));
    admin = await consoleBrowser(sigil, 'root');
  });
  afterAll(async () => {
    await sigil?.close();
    await smtp?.close();
    if (dialect === 'postgres') await dropSchema(schema);
  });

  const page = (url: string): Promise<Step> => consolePage(admin, url);
  const submit = (from: string, url: string, fields: [string, string][]): Promise<Step> =>
    consoleSubmit(admin, from, url, fields);

  it('lists every organization with its source, under its own navigation entry', async () => {
    const list = await page('/admin/organizations');
    expect(list.headers['cache-control']).toContain('no-store');
    expect(list.body).toContain('<a href="/admin/organizations" aria-current="page">Organizations</a>');
    expect(list.body).toContain('<code>acme</code>');
    expect(list.body).toContain('acme.example');
    expect(list.body).toContain('Config file (read-only)');
    // The create form offers the providers in force.
    expect(list.body).toContain('value="acme-sso"');
    expect(list.body).toContain('value="partner"');
  });

  it('creates a stored organization, audited, and escapes what it shows', async () => {
    const created = await submit('/admin/organizations', '/admin/organizations', [
      ['name', 'globex'],
      ['displayName', 'Globex <b>&</b> Co'],
      ['domains', 'globex.example\nGLOBEX.test'],
      ['identityProviders', 'partner'],
      ['membership', 'domain'],
      ['button', 'create'],
    ]);
    expect(created.status, created.body).toBe(303);
    expect(created.location).toBe('/admin/organizations/globex?done=consoleOrganizationCreated');
    const shown = await page(created.location ?? '');
    expect(shown.body).toContain('The organization has been created.');
    expect(shown.body).toContain('Globex &lt;b&gt;&amp;&lt;/b&gt; Co');
    expect(shown.body).not.toContain('<b>&</b>');
    const view = await sigil.context.management.organizations.get('globex');
    expect(view).toMatchObject({
      source: 'store',
      domains: ['globex.example', 'globex.test'],
      identityProviders: ['partner'],
      membership: 'domain',
    });
    expect(input(shown.body, 'etag')).toBe(view.etag);
    expect(consoleChanges(events, 'organization.create')).toHaveLength(1);
    expect((await page('/admin/organizations')).body).toContain('Stored');
  });

  it('refuses a bad organization on the field at fault, keeping the form and storing nothing', async () => {
    const bad = await submit('/admin/organizations', '/admin/organizations', [
      ['name', 'Not Valid'],
      ['displayName', 'Kept as typed'],
      ['domains', ''],
      ['membership', 'invite'],
    ]);
    expect(bad.status).toBe(400);
    expect(bad.body).toContain('id="org-name" name="name" value="Not Valid"');
    expect(bad.body).toMatch(
      /id="org-name"[^>]*aria-describedby="org-name-hint org-name-error"[^>]*aria-invalid="true"/,
    );
    expect(bad.body).toContain('id="org-name-error"');
    expect(bad.body).toContain('value="Kept as typed"');
    expect(bad.body).toContain('The change was not made:');
    // A domain of the config-file organization: 409, on the domains field.
    const taken = await submit('/admin/organizations', '/admin/organizations', [
      ['name', 'initech'],
      ['displayName', 'Initech'],
      ['domains', 'acme.example'],
    ]);
    expect(taken.status).toBe(409);
    expect(taken.body).toMatch(/id="org-domains"[^>]*aria-invalid="true"/);
    expect(unescapeHtml(taken.body)).toContain('a domain of organization "acme"');
    // A provider not in force (a forged checkbox): 400.
    const provider = await submit('/admin/organizations', '/admin/organizations', [
      ['name', 'initech'],
      ['displayName', 'Initech'],
      ['identityProviders', 'nowhere'],
    ]);
    expect(provider.status).toBe(400);
    expect(unescapeHtml(provider.body)).toContain('unknown identity provider "nowhere"');
    const names = (await sigil.context.management.organizations.list()).map((o) => o.name);
    expect(names).not.toContain('initech');
    expect(names).not.toContain('Not Valid');
  });

  it('never answers a 500 for odd input, and changes nothing with it', async () => {
    const before = await sigil.context.management.organizations.list();
    for (const value of ['\u0000', 'x'.repeat(5000), '"><script>', '../acme', '%00', ' ', 'a\nb'])
      for (const url of ['/admin/organizations', '/admin/organizations/globex', '/admin/organizations/globex/delete']) {
        const res = await submit('/admin/organizations', url, [
          ['name', value],
          ['displayName', value],
          ['domains', value],
          ['identityProviders', value],
          ['membership', value],
          ['etag', value],
        ]);
        expect(res.status, `${url} ${JSON.stringify(value)}`).toBeGreaterThanOrEqual(400);
        expect(res.status, `${url} ${JSON.stringify(value)}`).toBeLessThan(500);
      }
    for (const url of [
      '/admin/organizations/%00',
      `/admin/organizations/${'a'.repeat(64)}`,
      '/admin/organizations/no-such',
      '/admin/organizations/no-such/members',
      '/admin/organizations/no-such/invitations',
      '/admin/organizations/NoSuch/members',
      '/admin/organizations/acme/members?cursor=%00',
      '/admin/organizations/acme/members?cursor=not-a-cursor',
    ]) {
      const res = await admin.get(url);
      expect(res.status, url).toBeGreaterThanOrEqual(400);
      expect(res.status, url).toBeLessThan(500);
    }
    expect(await sigil.context.management.organizations.list()).toEqual(before);
  });

  it('saves settings with the version read; a stale form is refused and shows the current settings', async () => {
    const first = await page('/admin/organizations/globex');
    const stale = input(first.body, 'etag');
    const saved = await submit('/admin/organizations/globex', '/admin/organizations/globex', [
      ['etag', stale],
      ['displayName', 'Globex Corporation'],
      ['domains', 'globex.example'],
      ['membership', 'invite'],
      ['button', 'save'],
    ]);
    expect(saved.status, saved.body).toBe(303);
    expect(saved.location).toBe('/admin/organizations/globex?done=consoleOrganizationSaved');
    expect(await sigil.context.management.organizations.get('globex')).toMatchObject({
      displayName: 'Globex Corporation',
      domains: ['globex.example'],
      identityProviders: [],
      membership: 'invite',
    });
    const update = consoleChanges(events, 'organization.update').at(-1);
    expect(Object.keys(update?.changes ?? {})).toEqual(
      expect.arrayContaining(['displayName', 'domains', 'identityProviders', 'membership']),
    );

    // The first form again: its version is gone.
    for (const etag of [stale, '']) {
      const refused = await submit('/admin/organizations/globex', '/admin/organizations/globex', [
        ['etag', etag],
        ['displayName', 'Overwritten'],
        ['membership', 'open'],
      ]);
      expect(refused.status).toBe(412);
      expect(unescapeHtml(refused.body)).toContain(
        'Organization "globex" has changed since this page was loaded; reload the page and try again.',
      );
      expect(refused.body).toContain('value="Globex Corporation"');
      expect(refused.body).not.toContain('value="Overwritten"');
    }
    expect((await sigil.context.management.organizations.get('globex')).displayName).toBe('Globex Corporation');
  });

  it("shows a config-file organization's settings read-only and refuses a forged change", async () => {
    const shown = await page('/admin/organizations/acme');
    expect(shown.body).toContain('This organization is defined in the config file');
    expect(shown.body).not.toContain('name="etag"');
    expect(shown.body).toContain('acme-sso');
    const before = await sigil.context.management.organizations.get('acme');
    for (const url of ['/admin/organizations/acme', '/admin/organizations/acme/delete']) {
      const forged = await submit('/admin/organizations/acme', url, [
        ['etag', before.etag],
        ['displayName', 'Forged'],
      ]);
      expect(forged.status, url).toBe(409);
      expect(unescapeHtml(forged.body)).toContain('Organization "acme" is managed by the config file');
    }
    expect(await sigil.context.management.organizations.get('acme')).toEqual(before);
    // Its members and invitations are managed here all the same.
    expect((await page('/admin/organizations/acme/members')).body).toContain('Add a member');
  });

  it('adds members by username or subject, merges roles of an existing one, changes and removes them', async () => {
    const at = '/admin/organizations/acme/members';
    const added = await submit(at, at, [
      ['user', 'bob'],
      ['roles', 'billing viewer'],
    ]);
    expect(added.status, added.body).toBe(303);
    expect(added.location).toBe(`${at}?done=consoleMemberAdded`);
    const bySubject = await submit(at, at, [
      ['user', '3'],
      ['roles', ''],
    ]);
    expect(bySubject.status, bySubject.body).toBe(303);
    const listed = await page(at);
    expect(listed.body).toContain('<td><code>2</code></td><td>bob</td><td>Bob</td>');
    expect(listed.body).toContain('<td><code>3</code></td><td>carol</td><td>Carol of Acme</td>');
    expect(listed.body).toContain('value="billing viewer"');
    expect(listed.body).toContain('aria-label="Remove bob from the organization"');

    const merged = await submit(at, at, [
      ['user', 'BOB'],
      ['roles', 'admin viewer'],
    ]);
    expect(merged.location).toBe(`${at}?done=consoleMemberRolesMerged`);
    expect((await page(merged.location ?? '')).body).toContain('the roles given have been added to theirs');
    const members = async () => (await sigil.context.management.organizations.members('acme', { limit: 50 })).members;
    expect((await members()).find((m) => m.subject === '2')?.roles).toEqual(['billing', 'viewer', 'admin']);

    const changed = await submit(at, `${at}/roles`, [
      ['subject', '2'],
      ['roles', 'viewer'],
    ]);
    expect(changed.location).toBe(`${at}?done=consoleMemberRolesSaved`);
    expect((await members()).find((m) => m.subject === '2')?.roles).toEqual(['viewer']);

    const removed = await submit(at, `${at}/remove`, [['subject', '2']]);
    expect(removed.location).toBe(`${at}?done=consoleMemberRemoved`);
    expect((await members()).map((m) => m.subject)).toEqual(['3']);

    for (const action of ['member_add', 'member_update', 'member_remove'])
      expect(consoleChanges(events, `organization.${action}`).length, action).toBeGreaterThan(0);
  });

  it('refuses an unknown user on the user field, bad roles, and odd subjects, never with a 500', async () => {
    const at = '/admin/organizations/acme/members';
    const before = (await sigil.context.management.organizations.members('acme', { limit: 50 })).members;
    const unknown = await submit(at, at, [
      ['user', 'nobody-here'],
      ['roles', 'x'],
    ]);
    expect(unknown.status).toBe(404);
    expect(unescapeHtml(unknown.body)).toContain('User "nobody-here" does not exist.');
    expect(unknown.body).toMatch(/id="member-user"[^>]*aria-invalid="true"/);
    expect(unknown.body).toContain('value="nobody-here"');
    for (const roles of ['dup dup', Array.from({ length: 51 }, (_, i) => `r${i}`).join(' '), 'x'.repeat(101)]) {
      const res = await submit(at, at, [
        ['user', 'alice'],
        ['roles', roles],
      ]);
      expect(res.status, roles).toBe(400);
      expect(res.body).toMatch(/id="member-roles"[^>]*aria-invalid="true"/);
    }
    // '4' is a user but no member: a row's roles form never adds anyone.
    for (const subject of ['', '\u0000', 'x'.repeat(300), 'no-such-member', '4'])
      for (const url of [`${at}/roles`, `${at}/remove`]) {
        const res = await submit(at, url, [
          ['subject', subject],
          ['roles', 'a'],
        ]);
        // A NUL never gets past the form parser (400); any other odd subject is no member (404).
        expect(res.status, `${url} ${JSON.stringify(subject)}`).toBe(subject === '\u0000' ? 400 : 404);
      }
    for (const user of ['\u0000', 'x'.repeat(300), ' ']) {
      const res = await submit(at, at, [
        ['user', user],
        ['roles', ''],
      ]);
      expect(res.status, JSON.stringify(user)).toBeGreaterThanOrEqual(400);
      expect(res.status, JSON.stringify(user)).toBeLessThan(500);
    }
    expect((await sigil.context.management.organizations.members('acme', { limit: 50 })).members).toEqual(before);
  });

  it('pages the members, 50 at a time', async () => {
    const org = sigil.context.management.organizations;
    await org.create({ name: 'big', displayName: 'Big' });
    for (let i = 0; i < 52; i++) {
      const { subjectId } = await sigil.context.management.users.create({
        username: `member-${String(i).padStart(2, '0')}`,
        claims: {},
      });
      await org.putMember('big', subjectId, []);
    }
    const first = await page('/admin/organizations/big/members');
    expect(first.body.match(/name="subject"/g)).toHaveLength(100);
    const next = /href="([^"]+)" rel="next"/.exec(first.body)?.[1];
    expect(next).toBeDefined();
    const second = await page(unescapeHtml(next ?? ''));
    expect(second.body.match(/name="subject"/g)).toHaveLength(4);
    expect(second.body).not.toContain('rel="next"');
    // A stored user is found by username too.
    const byName = await submit('/admin/organizations/acme/members', '/admin/organizations/acme/members', [
      ['user', 'Member-07'],
      ['roles', 'auditor'],
    ]);
    expect(byName.status, byName.body).toBe(303);
    const stored = await sigil.context.store.users.findUserByUsername('member-07', null);
    const acme = (await org.members('acme', { limit: 50 })).members;
    expect(acme.find((m) => m.subject === stored?.subjectId)?.roles).toEqual(['auditor']);
  });

  it('sends an invitation by mail, lists it pending and revokes it, audited', async () => {
    const at = '/admin/organizations/globex/invitations';
    const sent = smtp.mails.length;
    const invited = await submit(at, at, [
      ['email', 'vera@example.net'],
      ['roles', 'viewer billing'],
    ]);
    expect(invited.status, invited.body).toBe(303);
    expect(invited.location).toBe(`${at}?done=consoleInvitationSent`);
    const mail = await smtp.waitFor(sent + 1);
    expect(mail.to).toEqual(['vera@example.net']);
    expect(mail.subject).toContain('Globex Corporation');
    const link = /https?:\/\/\S+\/account\/invitations\/[A-Za-z0-9_%-]+/.exec(mail.text)?.[0] ?? '';
    expect(link).not.toBe('');
    const listed = await page(invited.location ?? '');
    expect(listed.body).toContain('The invitation has been sent.');
    expect(listed.body).toContain('<td>vera@example.net</td><td>viewer billing</td>');
    // The page never shows the link's token.
    expect(listed.body).not.toContain(link.split('/').at(-1));
    expect(consoleChanges(events, 'organization.invitation_create')).toHaveLength(1);

    const bad = await submit(at, at, [
      ['email', 'not an address'],
      ['roles', ''],
    ]);
    expect(bad.status).toBe(400);
    expect(bad.body).toMatch(/id="invite-email"[^>]*aria-invalid="true"/);
    expect(smtp.mails).toHaveLength(sent + 1);

    const id = input(listed.body, 'id');
    const revoked = await submit(at, `${at}/revoke`, [['id', id]]);
    expect(revoked.location).toBe(`${at}?done=consoleInvitationRevoked`);
    expect(await sigil.context.invitations.pending('globex')).toEqual([]);
    expect((await new Browser(sigil).get(link)).status).toBe(400);
    expect(consoleChanges(events, 'organization.invitation_revoke')).toHaveLength(1);
    for (const odd of [id, '\u0000', 'x'.repeat(100)]) {
      const again = await submit(at, `${at}/revoke`, [['id', odd]]);
      expect(again.status, JSON.stringify(odd)).toBe(odd === '\u0000' ? 400 : 404);
    }
  });

  it('deletes a stored organization with the version read; a stale form is refused', async () => {
    const shown = await page('/admin/organizations/globex');
    const etag = input(shown.body, 'etag');
    const stale = await submit('/admin/organizations/globex', '/admin/organizations/globex/delete', [
      ['etag', etag.replace(/.$/, '0"')],
    ]);
    expect(stale.status).toBe(412);
    const deleted = await submit('/admin/organizations/globex', '/admin/organizations/globex/delete', [['etag', etag]]);
    expect(deleted.status, deleted.body).toBe(303);
    expect(deleted.location).toBe('/admin/organizations?done=consoleOrganizationDeleted');
    expect((await page('/admin/organizations')).body).not.toContain('globex');
    expect(consoleChanges(events, 'organization.delete')).toHaveLength(1);
    expect((await admin.get('/admin/organizations/globex/members')).status).toBe(404);
  });

  it('refuses every POST without the CSRF token with 403, changing nothing', async () => {
    const before = {
      organizations: await sigil.context.management.organizations.list(),
      members: await sigil.context.management.organizations.members('acme', { limit: 50 }),
    };
    const fields: [string, string][] = [
      ['name', 'forged'],
      ['displayName', 'Forged'],
      ['user', 'alice'],
      ['subject', '3'],
      ['roles', 'forged'],
      ['email', 'forged@example.net'],
      ['etag', '*'],
    ];
    for (const url of [
      '/admin/organizations',
      '/admin/organizations/big',
      '/admin/organizations/big/delete',
      '/admin/organizations/acme/members',
      '/admin/organizations/acme/members/roles',
      '/admin/organizations/acme/members/remove',
      '/admin/organizations/acme/invitations',
      '/admin/organizations/acme/invitations/revoke',
    ]) {
      // With the console session, but without the token, and with a wrong one.
      for (const csrf of [[], [['csrf_token', 'not-a-token']]] as [string, string][][]) {
        const res = await postFields(admin, url, [...csrf, ...fields]);
        expect(res.status, url).toBe(403);
      }
    }
    expect(await sigil.context.management.organizations.list()).toEqual(before.organizations);
    expect(await sigil.context.management.organizations.members('acme', { limit: 50 })).toEqual(before.members);
    expect(await sigil.context.invitations.pending('acme')).toEqual([]);
  });
});

describe('an invitation whose mail the SMTP server does not take', () => {
  let sigil: TestSigil;
  let admin: Browser;
  beforeAll(async () => {
    // A port that no longer listens.
    const closed = await new SmtpReceiver().start();
    const smtpUrl = closed.url;
    await closed.close();
    sigil = await startAuthorizeSigil([], config({ email: { smtpUrl, from: 'id@sigil.example' } }));
    admin = await consoleBrowser(sigil, 'root');
  });
  afterAll(async () => sigil?.close());

  it('is a 503 page saying so, keeping the form, with nothing pending', async () => {
    const at = '/admin/organizations/acme/invitations';
    const shown = await admin.get(at);
    expect(shown.body).not.toContain('Mail is not configured');
    const failed = await postFields(admin, at, [
      ['csrf_token', input(shown.body, 'csrf_token')],
      ['email', 'vera@example.net'],
      ['roles', 'viewer'],
    ]);
    expect(failed.status).toBe(503);
    expect(failed.body).toContain('The invitation mail could not be sent, so nothing was kept. Try again later.');
    expect(failed.body).toContain('value="vera@example.net"');
    expect(await sigil.context.invitations.pending('acme')).toEqual([]);
  });
});

describe('the console organization pages without config email, and for a user without the admin role', () => {
  let sigil: TestSigil;
  let admin: Browser;
  const events: SigilEvent[] = [];
  beforeAll(async () => {
    sigil = await startAuthorizeSigil([], config());
    sigil.subscribe((e) => void events.push(e));
    admin = await consoleBrowser(sigil, 'root');
  });
  afterAll(async () => sigil?.close());

  it('says that mail is off and answers an invitation with the 409 refusal on the page, never a 500', async () => {
    const at = '/admin/organizations/acme/invitations';
    const shown = await admin.get(at);
    expect(shown.status).toBe(200);
    expect(shown.body).toContain('Mail is not configured on this server');
    const refused = await postFields(admin, at, [
      ['csrf_token', input(shown.body, 'csrf_token')],
      ['email', 'vera@example.net'],
      ['roles', 'viewer'],
    ]);
    expect(refused.status).toBe(409);
    expect(unescapeHtml(refused.body)).toContain(
      'The change was not made: The request is not accepted. (mail is not configured: set config "email" to send invitations)',
    );
    expect(refused.body).toContain('value="vera@example.net"');
    expect(await sigil.context.invitations.pending('acme')).toEqual([]);
    expect(events.some((e) => e.action === 'organization.invitation_create')).toBe(false);
  });

  it('shows a user without the admin role the "not allowed" page, and lets them change nothing', async () => {
    const bob = new Browser(sigil);
    // bob signs in to the console with a second factor but lacks the role.
    const step = await consoleSignInWithoutRole(sigil, bob);
    expect(step.status).toBe(403);
    for (const url of ['/admin/organizations', '/admin/organizations/acme', '/admin/organizations/acme/members']) {
      const res = await bob.get(url);
      expect(res.body, url).not.toContain('Add a member');
      expect(res.body, url).not.toContain('<code>acme</code>');
    }
    const csrf = input((await bob.get('/account/login')).body, 'csrf_token');
    const before = await sigil.context.management.organizations.members('acme', { limit: 50 });
    for (const [url, fields] of [
      ['/admin/organizations/acme/members', { user: 'bob', roles: 'admin' }],
      ['/admin/organizations', { name: 'bobs', displayName: 'Bobs' }],
    ] as const) {
      // Sent to sign in again (the console session is not theirs to have), never to the changed page.
      const res = await bob.post(url, { csrf_token: csrf, ...fields });
      expect(res.status, url).toBe(303);
      expect(res.location, url).toMatch(/^\/connect\/authorize\?/);
    }
    expect(await sigil.context.management.organizations.members('acme', { limit: 50 })).toEqual(before);
    expect((await sigil.context.management.organizations.list()).map((o) => o.name)).toEqual(['acme']);
  });
});

/** Signs `b` in to the console as bob (no admin role), with a second factor; the console's answer. */
async function consoleSignInWithoutRole(sigil: TestSigil, b: Browser): Promise<Step> {
  const enrol = new Browser(sigil);
  await enrol.signIn('bob', 'bob');
  const { secret } = await enrollTotp(enrol);
  let step = await b.get('/admin/organizations');
  for (let i = 0; i < 10 && step.status === 303 && step.location; i++) step = await b.get(step.location);
  step = await b.follow(await b.submitLogin(step, 'bob', 'bob'));
  step = await submitCode(b, step, totpCode(secret, 1));
  for (let i = 0; i < 10 && step.status === 303 && step.location; i++) step = await b.get(step.location);
  return step;
}
