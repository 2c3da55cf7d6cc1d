/**
 * The member and invitation pages served for one organization behind a guard of its own
 * (`OrganizationAccess`, as the console of an organization's own admins serves them): on a bare
 * Fastify app over a running Sigil's real services, with an access that lets its caller, alice,
 * manage `acme` only, as its own admin. Every route asks the guard with the organization of its
 * path before anything is read, so the pages of `globex` (which exists) answer 404 like those of
 * an organization that does not, and a change aimed at `globex` changes nothing. For `acme` the
 * pages hold the caller to /admin/v1's rules of organization admins: no member added by username
 * or subject (no form, no route), no roles given to a user who is no member, their own membership
 * neither changed nor ended (403); another member's roles change and they can be removed, audited
 * with the guard's caller.
 */
import Fastify, { type FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AuditedChanges, AuditedWebhookChanges } from '../../src/admin/audited-changes.js';
import type { SigilEvent } from '../../src/events/events.js';
import { Params } from '../../src/protocol/params.js';
import type { Console } from '../../src/ui/admin/console-page.js';
import { refusalOf } from '../../src/ui/admin/console-page.js';
import { type OrganizationAccess, organizationPageKit } from '../../src/ui/admin/organization-access.js';
import { organizationInvitationPages } from '../../src/ui/admin/organization-invitations-pages.js';
import { organizationMemberPages } from '../../src/ui/admin/organization-members-pages.js';
import { startSigil, type TestSigil } from '../helpers.js';

const CALLER = { clientId: 'org-console', sub: '1' };

let sigil: TestSigil;
let app: FastifyInstance;
/** The organizations the guard was asked about, in order. */
const asked: string[] = [];
const events: SigilEvent[] = [];

/** A console over the real services, in English, whose guard is the access's own. */
function consoleOver(host: FastifyInstance, s: TestSigil): Console {
  const ctx = s.context;
  const text = (key: Parameters<Console['text']>[1]) => ctx.pages.text('en', key);
  const refuse = async () => undefined;
  return {
    ctx,
    app: host,
    reader: refuse,
    writer: refuse,
    sessionReader: refuse,
    sessionWriter: refuse,
    forbidden: (_request, reply) => reply.code(403).send(),
    done: (reply, path, notice) => reply.redirect(`${path}?done=${notice}`, 303),
    render: (_request, reply, name, section, data, status = 200) =>
      ctx.pages.send(reply, name, 'en', { ...data, section, csrf: 'x' }, status),
    text: (_request, key) => text(key),
    refused: (_request, err) => refusalOf(err, text),
    changes: (caller) => new AuditedChanges(ctx.management, { events: ctx.events, endpoint: '/org', actor: caller }),
    webhookChanges: (caller) =>
      new AuditedWebhookChanges(ctx.management.webhooks, { events: ctx.events, endpoint: '/org', actor: caller }),
    audit: () => {},
    userAudit: (caller) => ({ events: ctx.events, endpoint: '/org', clientId: caller.clientId, sub: caller.sub }),
  };
}

/** An access for the managers of `acme` only: any other organization is a 404, asked first. */
const acmeOnly: OrganizationAccess = {
  route: '/org/:name',
  path: (name) => `/org/${encodeURIComponent(name)}`,
  home: '/org',
  section: 'organizations',
  settingsPage: false,
  organizationAdmin: true,
  reader: async (_request, reply, name) => {
    asked.push(name);
    if (name === 'acme') return CALLER;
    reply.callNotFound();
    return undefined;
  },
  writer: async (request, reply, name) => {
    asked.push(name);
    if (name === 'acme' && request.body instanceof Params) return { caller: CALLER, form: request.body };
    reply.callNotFound();
    return undefined;
  },
};

beforeAll(async () => {
  sigil = await startSigil({
    organizations: [
      { name: 'acme', displayName: 'Acme' },
      { name: 'globex', displayName: 'Globex' },
    ],
  });
  sigil.subscribe((e) => void events.push(e));
  const organizations = sigil.context.management.organizations;
  await organizations.putMember('globex', '2', ['admin']);
  await organizations.putMember('acme', '1', ['admin']);
  await organizations.putMember('acme', '2', ['viewer']);
  app = Fastify();
  app.decorate('locales', sigil.context.pages.locales);
  app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string' }, (_r, body, done) =>
    done(null, Params.parse(body as string)),
  );
  const kit = organizationPageKit(consoleOver(app, sigil), acmeOnly);
  organizationMemberPages(kit);
  organizationInvitationPages(kit);
  await app.ready();
});
afterAll(async () => {
  await app?.close();
  await sigil?.close();
});

function post(url: string, fields: Record<string, string>) {
  return app.inject({
    method: 'POST',
    url,
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    payload: new URLSearchParams(fields).toString(),
  });
}

describe('the organization pages behind a guard for one organization', () => {
  it("never shows or changes another organization's members or invitations", async () => {
    const before = (await sigil.context.management.organizations.members('globex', { limit: 10 })).members;
    for (const url of ['/org/globex/members', '/org/globex/invitations', '/org/no-such/members']) {
      asked.length = 0;
      const res = await app.inject({ method: 'GET', url });
      expect(res.statusCode, url).toBe(404);
      expect(res.body, url).not.toContain('Globex');
      expect(asked, url).toEqual([url.split('/')[2]]);
    }
    for (const [url, fields] of [
      ['/org/globex/members', { user: 'alice', roles: 'admin' }],
      ['/org/globex/members/roles', { subject: '2', roles: 'none' }],
      ['/org/globex/members/remove', { subject: '2' }],
      ['/org/globex/invitations/revoke', { id: 'x' }],
    ] as const) {
      const res = await post(url, fields);
      expect(res.statusCode, url).toBe(404);
    }
    expect((await sigil.context.management.organizations.members('globex', { limit: 10 })).members).toEqual(before);
    expect(events.filter((e) => e.name === 'admin_changed')).toEqual([]);
  });

  it("changes another member of its own organization, never adds anyone, and leaves the caller's own membership alone", async () => {
    const members = async () => (await sigil.context.management.organizations.members('acme', { limit: 10 })).members;
    const page = await app.inject({ method: 'GET', url: '/org/acme/members' });
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('Members of Acme');
    // No settings page in this access, and no add form: an organization's admin invites.
    expect(page.body).not.toContain('href="/org/acme"');
    expect(page.body).not.toContain('name="user"');
    expect((await post('/org/acme/members', { user: 'carol', roles: 'admin' })).statusCode).toBe(404);
    // A user who is no member gets no roles (the row form never adds anyone).
    expect((await post('/org/acme/members/roles', { subject: '3', roles: 'admin' })).statusCode).toBe(404);
    for (const url of ['/org/acme/members/roles', '/org/acme/members/remove']) {
      const own = await post(url, { subject: '1', roles: 'viewer' });
      expect(own.statusCode, url).toBe(403);
      expect(own.body, url).toContain('an organization admin cannot change or remove their own membership');
    }
    expect(await members()).toEqual([
      { subject: '1', roles: ['admin'] },
      { subject: '2', roles: ['viewer'] },
    ]);
    expect(events.filter((e) => e.name === 'admin_changed')).toEqual([]);

    const changed = await post('/org/acme/members/roles', { subject: '2', roles: 'billing' });
    expect(changed.statusCode).toBe(303);
    expect(changed.headers.location).toBe('/org/acme/members?done=consoleMemberRolesSaved');
    expect(events.find((e) => e.action === 'organization.member_update')).toMatchObject({
      clientId: CALLER.clientId,
      subjectId: CALLER.sub,
      target: { type: 'organization', id: 'acme' },
    });
    expect((await post('/org/acme/members/remove', { subject: '2' })).statusCode).toBe(303);
    expect(await members()).toEqual([{ subject: '1', roles: ['admin'] }]);
    expect((await app.inject({ method: 'GET', url: '/org/acme/invitations' })).statusCode).toBe(200);
  });
});
