/**
 * Delegated organization administration (DESIGN §6b "Organization admins") over HTTP on a real
 * SQLite file and on PostgreSQL: a member with the organization role `admin` who signed in with a
 * second factor gets `sigil:org:admin` in a token acting for them, and with it manages the members
 * and invitations (mailed to a real SMTP server on loopback) of that organization and of no other;
 * the attacker's tries: another organization (existing or not, the same 403), every other
 * /admin/v1 route, drafting users by subject, their own membership, a role taken away or an
 * organization deleted and created again under its name while the token lives, a client's own
 * token with the scope, roles that merely look like `admin`.
 */
import { decodeJwt } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SigilEvent } from '../../src/events/events.js';
import {
  authorizeUrl,
  Browser,
  codeParams,
  isLoginPage,
  pkce,
  readResponse,
  redeem,
  webLike,
} from '../authorize-helpers.js';
import {
  clientTokens,
  dropSchema,
  POSTGRES_URL,
  startSigil,
  testConfig,
  type TestSigil,
  uniqueSchema,
} from '../helpers.js';
import { enrollTotp, isMfaPage, submitCode, totpCode } from '../mfa-helpers.js';
import { SmtpReceiver } from '../smtp-receiver.js';

type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

const ACR_MFA = 'urn:sigil:acr:mfa';
const PASSWORD = 'orchard-lantern-58';

let smtp: SmtpReceiver;
beforeAll(async () => {
  smtp = await new SmtpReceiver().start();
});
afterAll(async () => {
  await smtp?.close();
});

describe.each(['sqlite', 'postgres'] as const)('organization admins on %s', (dialect) => {
  const schema = uniqueSchema('orgadmins');
  let sigil: TestSigil;
  /** A Sigil admin's token (client_credentials, sigil:admin). */
  let admin: string;
  const events: SigilEvent[] = [];
  /** Subjects of the stored users by username. */
  const sub: Record<string, string> = {};
  /** Tokens of the org-web client by user: with MFA (`mfa`) or a password only (`password`). */
  const tokens: Record<string, { access_token: string; scope: string }> = {};

  function call(method: Method, path: string, body?: unknown, token = admin) {
    return sigil.app.inject({
      method,
      url: `/admin/v1${path}`,
      headers: {
        ...(token ? { authorization: `Bearer ${token}` } : {}),
        ...(body !== undefined
          ? { 'content-type': method === 'PATCH' ? 'application/merge-patch+json' : 'application/json' }
          : {}),
        ...(method === 'PATCH' ? { 'if-match': '"any"' } : {}),
      },
      ...(body !== undefined ? { payload: JSON.stringify(body) } : {}),
    });
  }
  const as = (user: string) => (method: Method, path: string, body?: unknown) =>
    call(method, path, body, tokens[user]?.access_token ?? '');
  const members = async (org: string) =>
    (await call('GET', `/organizations/${org}/members`)).json<{ members: { subject: string; roles: string[] }[] }>()
      .members;

  /** A code flow at org-web as `username`, with a TOTP step when `totp` is given; the token response. */
  async function codeFlow(username: string, totp?: string): Promise<{ access_token: string; scope: string }> {
    const b = new Browser(sigil);
    const { challenge, verifier } = pkce();
    const params = codeParams(challenge, {
      client_id: 'org-web',
      scope: 'openid sigil:org:admin',
      ...(totp ? { acr_values: ACR_MFA } : {}),
    });
    const login = await b.follow(await b.get(authorizeUrl(params)));
    expect(isLoginPage(login), login.body).toBe(true);
    let step = await b.follow(await b.submitLogin(login, username, PASSWORD));
    if (totp) {
      expect(isMfaPage(step), step.body).toBe(true);
      step = await submitCode(b, step, totpCode(totp, 1));
    }
    const code = readResponse(step).params.get('code') ?? '';
    const res = await redeem(sigil, code, { client: 'org-web', verifier });
    expect(res.statusCode, res.body).toBe(200);
    return res.json();
  }

  /** Enrolls TOTP for `username` from /account, then runs the code flow with it. */
  async function mfaTokens(username: string): Promise<{ access_token: string; scope: string }> {
    const b = new Browser(sigil);
    await b.signIn(username, PASSWORD);
    return codeFlow(username, (await enrollTotp(b)).secret);
  }

  beforeAll(async () => {
    const base = testConfig();
    sigil = await startSigil({
      ...(dialect === 'postgres' ? { storage: `${POSTGRES_URL}?schema=${schema}` } : {}),
      clients: [
        ...(base.clients ?? []),
        webLike('org-web', { allowedScopes: ['openid', 'sigil:org:admin'], accessTokenLifetime: 3600 }),
        {
          clientId: 'automation',
          clientSecrets: ['automation-secret'],
          allowedGrantTypes: ['client_credentials'],
          allowedScopes: ['sigil:admin', 'sigil:org:admin'],
        },
      ],
      organizations: [{ name: 'acme', displayName: 'Acme Corp' }],
      email: { smtpUrl: smtp.url, from: 'id@acme.example' },
    });
    sigil.subscribe((e) => void events.push(e));
    admin = (await clientTokens(sigil, 'sigil:admin', ['automation', 'automation-secret'])).access_token;
    for (const username of ['olga', 'mira', 'nils', 'lena', 'tom', 'xavier']) {
      const res = await call('POST', '/users', { username, password: PASSWORD, email: `${username}@example.net` });
      expect(res.statusCode, res.body).toBe(201);
      sub[username] = res.json().subjectId;
    }
    for (const name of ['globex', 'initech'])
      expect((await call('POST', '/organizations', { name, displayName: name })).statusCode).toBe(201);
    // olga administers acme (a config-file organization) and initech (stored); mira is a plain
    // member of acme and an admin of globex; nils and lena are plain members of acme; tom holds
    // roles that only look like admin; xavier belongs to no organization.
    const memberships: [string, string, string[]][] = [
      ['acme', 'olga', ['admin', 'billing']],
      ['initech', 'olga', ['admin']],
      ['acme', 'mira', ['viewer']],
      ['globex', 'mira', ['admin']],
      ['acme', 'nils', ['viewer']],
      ['acme', 'lena', ['viewer']],
      ['acme', 'tom', ['x"admin', 'Admin', 'admins']],
    ];
    for (const [org, username, roles] of memberships) {
      const res = await call('PUT', `/organizations/${org}/members/${sub[username]}`, { roles });
      expect(res.statusCode, res.body).toBe(201);
    }
    // A password-only sign-in first: once a user has a second factor, sign-in asks for it.
    tokens.olgaPassword = await codeFlow('olga');
    for (const username of ['olga', 'mira', 'tom', 'xavier']) tokens[username] = await mfaTokens(username);
  });
  afterAll(async () => {
    await sigil?.close();
    if (dialect === 'postgres') await dropSchema(schema);
  });

  describe('the scope sigil:org:admin', () => {
    it('is in a token of an organization admin after a multi-factor sign-in, with aud sigil', () => {
      expect(tokens.olga?.scope.split(' ').sort()).toEqual(['openid', 'sigil:org:admin']);
      expect(decodeJwt(tokens.olga?.access_token ?? '')).toMatchObject({
        aud: 'sigil',
        sub: sub.olga,
        amr: expect.arrayContaining(['mfa']),
      });
    });

    it('is dropped silently without MFA, for an admin of no organization, and for roles that only look like admin', () => {
      expect(tokens.olgaPassword?.scope).toBe('openid');
      expect(tokens.xavier?.scope).toBe('openid');
      expect(tokens.tom?.scope).toBe('openid');
    });

    it('is listed in discovery like the other management scopes', async () => {
      const doc = (await sigil.app.inject({ method: 'GET', url: '/.well-known/openid-configuration' })).json();
      expect(doc.scopes_supported).toEqual(expect.arrayContaining(['sigil:admin', 'sigil:org:admin']));
    });

    it('is an alternative in the OpenAPI security of the member and invitation routes only', async () => {
      const doc = (await sigil.app.inject({ method: 'GET', url: '/admin/v1/openapi.json' })).json();
      const alternatives = (read: boolean) => [
        { bearer: [read ? 'sigil:admin:read' : 'sigil:admin'] },
        { bearer: ['sigil:org:admin'] },
      ];
      const { paths } = doc;
      expect(paths['/admin/v1/organizations/{name}/members'].get.security).toEqual(alternatives(true));
      expect(paths['/admin/v1/organizations/{name}/members/{subject}'].put.security).toEqual(alternatives(false));
      expect(paths['/admin/v1/organizations/{name}/members/{subject}'].delete.security).toEqual(alternatives(false));
      expect(paths['/admin/v1/organizations/{name}/invitations'].get.security).toEqual(alternatives(true));
      expect(paths['/admin/v1/organizations/{name}/invitations'].post.security).toEqual(alternatives(false));
      expect(paths['/admin/v1/organizations/{name}/invitations/{id}'].delete.security).toEqual(alternatives(false));
      expect(paths['/admin/v1/organizations'].get.security).toEqual([{ bearer: ['sigil:admin:read'] }]);
      expect(paths['/admin/v1/organizations/{name}'].patch.security).toEqual([{ bearer: ['sigil:admin'] }]);
      expect(paths['/admin/v1/users'].get.security).toEqual([{ bearer: ['sigil:admin:read'] }]);
      const scopes = doc.components.securitySchemes.bearer.flows.authorizationCode.scopes;
      expect(scopes['sigil:org:admin']).toBeTruthy();
    });
  });

  describe('an organization admin in their organization', () => {
    const olga = (method: Method, path: string, body?: unknown) => as('olga')(method, path, body);

    it("lists the members, changes a member's roles and removes a member, audited with the user and the client", async () => {
      const list = await olga('GET', '/organizations/acme/members');
      expect(list.statusCode, list.body).toBe(200);
      expect(list.json().members.map((m: { subject: string }) => m.subject)).toContain(sub.nils);
      const put = await olga('PUT', `/organizations/acme/members/${sub.nils}`, { roles: ['editor'] });
      expect(put.statusCode, put.body).toBe(200);
      expect(put.json()).toEqual({ member: { subject: sub.nils, roles: ['editor'] } });
      expect((await members('acme')).find((m) => m.subject === sub.nils)?.roles).toEqual(['editor']);
      const removed = await olga('DELETE', `/organizations/acme/members/${sub.nils}`);
      expect(removed.statusCode, removed.body).toBe(204);
      expect((await members('acme')).some((m) => m.subject === sub.nils)).toBe(false);
      const changes = events.filter(
        (e) => e.name === 'admin_changed' && e.subjectId === sub.olga && e.target?.id === 'acme',
      );
      expect(changes.map((e) => e.action)).toEqual(['organization.member_update', 'organization.member_remove']);
      for (const e of changes) expect(e).toMatchObject({ clientId: 'org-web', endpoint: '/admin/v1' });
      expect(changes[0]?.changes).toEqual({ subject: sub.nils, roles: ['editor'] });
    });

    it('invites by mail, lists and revokes invitations', async () => {
      const sent = smtp.mails.length;
      const invited = await olga('POST', '/organizations/acme/invitations', {
        email: 'newcomer@example.net',
        roles: ['viewer'],
      });
      expect(invited.statusCode, invited.body).toBe(201);
      const mail = await smtp.waitFor(sent + 1);
      expect(mail.to).toEqual(['newcomer@example.net']);
      expect(mail.text).toMatch(/\/account\/invitations\//);
      const { id } = invited.json().invitation;
      const pending = await olga('GET', '/organizations/acme/invitations');
      expect(pending.statusCode, pending.body).toBe(200);
      expect(pending.json().invitations.map((i: { id: string }) => i.id)).toContain(id);
      const revoked = await olga('DELETE', `/organizations/acme/invitations/${id}`);
      expect(revoked.statusCode, revoked.body).toBe(204);
      expect(
        events.some(
          (e) =>
            e.name === 'admin_changed' &&
            e.action === 'organization.invitation_create' &&
            e.subjectId === sub.olga &&
            e.clientId === 'org-web',
        ),
      ).toBe(true);
    });

    it('cannot add a user by subject: 404 for anyone not a member yet, alike whether a user has the subject', async () => {
      const user = await olga('PUT', `/organizations/acme/members/${sub.xavier}`, { roles: ['admin'] });
      const nobody = await olga('PUT', '/organizations/acme/members/no-such-subject', { roles: ['admin'] });
      expect(user.statusCode).toBe(404);
      expect(nobody.statusCode).toBe(404);
      expect(user.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(user.body.replace(sub.xavier ?? '', '<s>')).toBe(nobody.body.replace('no-such-subject', '<s>'));
      expect((await members('acme')).some((m) => m.subject === sub.xavier)).toBe(false);
      // A Sigil admin still may.
      const drafted = await call('PUT', `/organizations/acme/members/${sub.xavier}`, { roles: [] });
      expect(drafted.statusCode, drafted.body).toBe(201);
      expect((await call('DELETE', `/organizations/acme/members/${sub.xavier}`)).statusCode).toBe(204);
    });

    it('cannot change or end their own membership (403); a Sigil admin can', async () => {
      const demote = await olga('PUT', `/organizations/acme/members/${sub.olga}`, { roles: [] });
      expect(demote.statusCode).toBe(403);
      expect(demote.json().title).toBe('Forbidden');
      expect((await olga('DELETE', `/organizations/acme/members/${sub.olga}`)).statusCode).toBe(403);
      expect((await members('acme')).find((m) => m.subject === sub.olga)?.roles).toEqual(['admin', 'billing']);
      const byAdmin = await call('PUT', `/organizations/acme/members/${sub.olga}`, { roles: ['admin', 'billing'] });
      expect(byAdmin.statusCode, byAdmin.body).toBe(200);
    });

    it('may make another member an admin', async () => {
      const res = await olga('PUT', `/organizations/acme/members/${sub.lena}`, { roles: ['admin'] });
      expect(res.statusCode, res.body).toBe(200);
      const back = await olga('PUT', `/organizations/acme/members/${sub.lena}`, { roles: ['viewer'] });
      expect(back.statusCode, back.body).toBe(200);
    });
  });

  describe('an organization admin outside their organization', () => {
    it('gets the same 403 for another organization as for one that does not exist, changing nothing', async () => {
      const before = await members('globex');
      const answers = [];
      for (const org of ['globex', 'no-such-org', 'NOT-A-NAME', 'x'.repeat(80)])
        for (const [method, path, body] of [
          ['GET', '/members', undefined],
          ['PUT', `/members/${sub.mira}`, { roles: [] }],
          ['DELETE', `/members/${sub.mira}`, undefined],
          ['GET', '/invitations', undefined],
          ['POST', '/invitations', { email: 'spam@example.net', roles: ['admin'] }],
          ['DELETE', '/invitations/some-id', undefined],
        ] as const) {
          const res = await as('olga')(method, `/organizations/${org}${path}`, body);
          expect(res.statusCode, `${method} ${org}${path}`).toBe(403);
          answers.push({ type: res.headers['content-type'], body: res.body.replaceAll(org, '<org>') });
        }
      expect(new Set(answers.map((a) => JSON.stringify(a))).size).toBe(1);
      expect(answers[0]?.type).toMatch(/^application\/problem\+json/);
      expect(await members('globex')).toEqual(before);
    });

    it("cannot revoke another organization's invitation through their own", async () => {
      const invited = await as('mira')('POST', '/organizations/globex/invitations', {
        email: 'guest@example.net',
        roles: [],
      });
      expect(invited.statusCode, invited.body).toBe(201);
      const { id } = invited.json().invitation;
      const res = await as('olga')('DELETE', `/organizations/acme/invitations/${id}`);
      expect(res.statusCode).toBe(404);
      const pending = await call('GET', '/organizations/globex/invitations');
      expect(pending.json().invitations.map((i: { id: string }) => i.id)).toContain(id);
    });

    it('gets 403 insufficient_scope on every other route of /admin/v1', async () => {
      for (const [method, path, body] of [
        ['GET', '/users', undefined],
        ['GET', `/users/${sub.xavier}`, undefined],
        ['GET', '/clients', undefined],
        ['GET', '/organizations', undefined],
        ['POST', '/organizations', { name: 'mine', displayName: 'Mine' }],
        ['GET', '/organizations/acme', undefined],
        ['PATCH', '/organizations/acme', { displayName: 'Pwned' }],
        ['PATCH', '/organizations/initech', { displayName: 'Pwned' }],
        ['DELETE', '/organizations/initech', undefined],
        ['GET', '/events', undefined],
        ['GET', '/keys', undefined],
      ] as const) {
        const res = await as('olga')(method, path, body);
        expect(res.statusCode, `${method} ${path}`).toBe(403);
        expect(res.headers['www-authenticate'], `${method} ${path}`).toContain('error="insufficient_scope"');
      }
      expect((await call('GET', '/organizations/initech')).json().organization.displayName).toBe('initech');
    });

    it('a member of the organization without the role admin gets 403', async () => {
      // mira's token holds the scope: she administers globex, and is a viewer in acme.
      expect(tokens.mira?.scope.split(' ')).toContain('sigil:org:admin');
      expect((await as('mira')('GET', '/organizations/globex/members')).statusCode).toBe(200);
      for (const [method, path, body] of [
        ['GET', '/organizations/acme/members', undefined],
        ['PUT', `/organizations/acme/members/${sub.lena}`, { roles: ['admin'] }],
        ['GET', '/organizations/acme/invitations', undefined],
      ] as const)
        expect((await as('mira')(method, path, body)).statusCode, `${method} ${path}`).toBe(403);
    });

    it("a client's own token with the scope is no organization admin (403)", async () => {
      const { access_token, scope } = await clientTokens(sigil, 'sigil:org:admin', ['automation', 'automation-secret']);
      expect(scope).toBe('sigil:org:admin');
      for (const path of ['/organizations/acme/members', '/organizations/acme/invitations']) {
        const res = await call('GET', path, undefined, access_token);
        expect(res.statusCode, path).toBe(403);
      }
      expect(
        (await call('PUT', `/organizations/acme/members/${sub.lena}`, { roles: [] }, access_token)).statusCode,
      ).toBe(403);
    });
  });

  describe('the power of a token is read at each request', () => {
    it('a role taken away counts from the next request with the same token', async () => {
      expect((await as('mira')('GET', '/organizations/globex/members')).statusCode).toBe(200);
      const demoted = await call('PUT', `/organizations/globex/members/${sub.mira}`, { roles: ['viewer'] });
      expect(demoted.statusCode, demoted.body).toBe(200);
      expect((await as('mira')('GET', '/organizations/globex/members')).statusCode).toBe(403);
      expect((await as('mira')('GET', '/organizations/globex/invitations')).statusCode).toBe(403);
      const restored = await call('PUT', `/organizations/globex/members/${sub.mira}`, { roles: ['admin'] });
      expect(restored.statusCode, restored.body).toBe(200);
      expect((await as('mira')('GET', '/organizations/globex/members')).statusCode).toBe(200);
    });

    it('an organization deleted and created again under its name is not the admin’s', async () => {
      expect((await as('olga')('GET', '/organizations/initech/members')).statusCode).toBe(200);
      expect((await call('DELETE', '/organizations/initech')).statusCode).toBe(204);
      expect((await as('olga')('GET', '/organizations/initech/members')).statusCode).toBe(403);
      expect((await call('POST', '/organizations', { name: 'initech', displayName: 'Initech again' })).statusCode).toBe(
        201,
      );
      const res = await as('olga')('GET', '/organizations/initech/members');
      expect(res.statusCode).toBe(403);
      expect(await members('initech')).toEqual([]);
    });
  });
});
