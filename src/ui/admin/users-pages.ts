/**
 * The console's user pages: search and create (the SCIM service, as `/scim/v2/Users`; config-file
 * users are listed read-only), and one user's page: disable or enable (SCIM `active`: disabling
 * ends their sessions and revokes their tokens), claims (`UserAdmin.setClaims`, as `sigil users`),
 * group memberships (SCIM group PATCH), second factors reset (`UserAdmin.resetSecondFactors`) and
 * live sessions (`ctx.management.sessions`, as `/admin/v1/users/:subject/sessions`). The users
 * page also lists the groups, and creates and deletes them (SCIM, as `/scim/v2/Groups`).
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { AdminError } from '../../admin/errors.js';
import { queryString, single } from '../../http/fields.js';
import { GROUP_SCHEMA, PATCH_OP, USER_SCHEMA } from '../../scim/schemas.js';
import { format } from '../../page-kit/i18n.js';
import type { Console } from './console-page.js';
import type { ConsoleCaller } from './console-session.js';

/** Users listed per search. */
const PAGE_SIZE = 50;
/** The longest claims document, characters. */
const MAX_CLAIMS = 16_000;
/** The longest subject, as in the config file. */
const MAX_SUBJECT = 255;
/** The most groups offered on a user's page. */
const MAX_GROUPS = 200;

type Json = Record<string, unknown>;

/** A SCIM filter string literal (RFC 7644 §3.4.2.2: a JSON string). */
function scimString(value: string): string {
  return JSON.stringify(value);
}

/** The display name of a SCIM user resource. */
function nameOf(resource: Json): string {
  const name = resource.name as { formatted?: unknown } | undefined;
  return typeof name?.formatted === 'string' ? name.formatted : typeof resource.displayName === 'string' ? resource.displayName : '';
}

/** Registers `/admin/users` and the pages of one user. */
export function userPages(admin: Console): void {
  const { ctx, app } = admin;
  const { scim, users } = ctx.management;
  const actor = (caller: ConsoleCaller) => ({ clientId: caller.clientId, sub: caller.sub });
  const userPath = (sub: string) => `/admin/users/${encodeURIComponent(sub)}`;

  /** The groups, by name, with their member counts. */
  const groupList = async () =>
    (((await scim.listGroups({ count: MAX_GROUPS, sortBy: 'displayName' })) as { Resources?: Json[] }).Resources ?? []).map((g) => ({
      id: String(g.id),
      name: String(g.displayName),
      members: Array.isArray(g.members) ? g.members.length : 0,
    }));

  const listPage = async (request: FastifyRequest, reply: FastifyReply, form: Json, error?: string, status = 200) => {
    // Control characters never match a username (and PostgreSQL refuses a NUL): left out.
    const q = (queryString(request, 'q') ?? '').replace(/[\u0000-\u001f\u007f]/g, '').trim().slice(0, 100);
    let list: { Resources?: Json[] };
    try {
      list = (await scim.listUsers({ ...(q ? { filter: `userName co ${scimString(q)}` } : {}), count: PAGE_SIZE, sortBy: 'userName' })) as { Resources?: Json[] };
    } catch (err) {
      const refusal = admin.refused(request, err);
      if (!refusal) throw err;
      return admin.render(request, reply, 'console-users', 'users', { q, users: [], groups: await groupList(), form, error: refusal.message }, 400);
    }
    const stored = (list.Resources ?? []).map((r) => ({ subjectId: String(r.id), username: String(r.userName), name: nameOf(r), active: r.active !== false, source: 'store' }));
    const fromConfig = ctx.config.users
      .filter((u) => u.username.toLowerCase().includes(q.toLowerCase()))
      .map((u) => ({ subjectId: u.subjectId, username: u.username, name: typeof u.claims.name === 'string' ? u.claims.name : '', active: u.isActive, source: 'config' }));
    return admin.render(request, reply, 'console-users', 'users', { q, users: [...fromConfig, ...stored], groups: await groupList(), form, error }, status);
  };

  /** The user of a page: a config-file one, else a stored (SCIM) one; undefined after the 404 page. */
  const find = async (reply: FastifyReply, sub: string) => {
    if (sub.length > MAX_SUBJECT) {
      reply.callNotFound();
      return undefined;
    }
    const configUser = ctx.config.users.find((u) => u.subjectId === sub);
    if (configUser) return { subjectId: sub, username: configUser.username, tenant: configUser.tenant ?? null, active: configUser.isActive, source: 'config' as const, groups: [] as { value: string; display: string }[] };
    try {
      const { resource } = await scim.getUser(sub);
      const stored = await ctx.users.findBySubject(sub);
      const groups = Array.isArray(resource.groups) ? (resource.groups as { value: string; display: string }[]) : [];
      return { subjectId: sub, username: String(resource.userName), tenant: stored?.tenant ?? null, active: resource.active !== false, source: 'store' as const, groups };
    } catch (err) {
      if (!admin.refused(reply.request, err)) throw err;
      reply.callNotFound();
      return undefined;
    }
  };

  const userPage = async (request: FastifyRequest, reply: FastifyReply, sub: string, error?: string, status = 200, claimsText?: string) => {
    const user = await find(reply, sub);
    if (!user) return reply;
    const { factors } = await users.secondFactors(user.username, user.tenant);
    const stored = await ctx.users.findBySubject(sub);
    const memberOf = new Set(user.groups.map((g) => g.value));
    const allGroups =
      user.source === 'store'
        ? (((await scim.listGroups({ count: MAX_GROUPS, sortBy: 'displayName', excludedAttributes: 'members' })) as { Resources?: Json[] }).Resources ?? []).map((g) => ({
            id: String(g.id),
            name: String(g.displayName),
            member: memberOf.has(String(g.id)),
          }))
        : [];
    return admin.render(
      request,
      reply,
      'console-user',
      'users',
      {
        user,
        groups: user.groups.map((g) => g.display),
        allGroups,
        factors: factors.length > 0 ? [...new Set(factors.map((f) => f.kind))].join(', ') : admin.text(request, 'consoleNone'),
        claims: claimsText ?? JSON.stringify(stored?.claims ?? {}, null, 2),
        sessions: await ctx.management.sessions.sessionsOf(sub),
        error,
      },
      status,
    );
  };

  app.get('/admin/users', async (request, reply) => ((await admin.reader(request, reply)) ? listPage(request, reply, {}) : reply));

  app.post('/admin/users', async (request, reply) => {
    const w = await admin.writer(request, reply);
    if (!w) return reply;
    const field = (name: string) => single(w.form, name)?.trim() ?? '';
    const form = { username: field('username'), name: field('name'), email: field('email') };
    const password = single(w.form, 'password') ?? '';
    try {
      const { resource } = await scim.createUser(
        {
          schemas: [USER_SCHEMA],
          userName: form.username,
          ...(form.name ? { name: { formatted: form.name } } : {}),
          ...(form.email ? { emails: [{ value: form.email, primary: true }] } : {}),
          ...(password ? { password } : {}),
        },
        actor(w.caller),
      );
      return admin.done(reply, userPath(String(resource.id)), 'consoleUserCreated');
    } catch (err) {
      const refusal = admin.refused(request, err);
      if (!refusal) throw err;
      return listPage(request, reply, form, refusal.message, refusal.status);
    }
  });

  app.post('/admin/groups', async (request, reply) => {
    const w = await admin.writer(request, reply);
    if (!w) return reply;
    const displayName = (single(w.form, 'displayName') ?? '').trim().slice(0, 200);
    try {
      await scim.createGroup({ schemas: [GROUP_SCHEMA], displayName }, actor(w.caller));
    } catch (err) {
      const refusal = admin.refused(request, err);
      if (!refusal) throw err;
      return listPage(request, reply, { displayName }, format(admin.text(request, 'consoleChangeRefused'), { message: refusal.message }), refusal.status);
    }
    return admin.done(reply, '/admin/users', 'consoleGroupCreated');
  });

  app.post('/admin/groups/:id/delete', async (request, reply) => {
    const w = await admin.writer(request, reply);
    if (!w) return reply;
    const { id } = request.params as { id: string };
    try {
      await scim.deleteGroup(id.slice(0, MAX_SUBJECT), undefined, actor(w.caller));
    } catch (err) {
      const refusal = admin.refused(request, err);
      if (!refusal) throw err;
      return listPage(request, reply, {}, format(admin.text(request, 'consoleChangeRefused'), { message: refusal.message }), refusal.status);
    }
    return admin.done(reply, '/admin/users', 'consoleGroupDeleted');
  });

  app.get('/admin/users/:sub', async (request, reply) => {
    if (!(await admin.reader(request, reply))) return reply;
    const { sub } = request.params as { sub: string };
    return userPage(request, reply, sub);
  });

  app.post('/admin/users/:sub/active', async (request, reply) => {
    const w = await admin.writer(request, reply);
    if (!w) return reply;
    const { sub } = request.params as { sub: string };
    const active = single(w.form, 'active') === 'true';
    try {
      await scim.patchUser(sub, { schemas: [PATCH_OP], Operations: [{ op: 'replace', path: 'active', value: active }] }, undefined, actor(w.caller));
    } catch (err) {
      const refusal = admin.refused(request, err);
      if (!refusal) throw err;
      return userPage(request, reply, sub, refusal.message, refusal.status);
    }
    return admin.done(reply, userPath(sub), active ? 'consoleUserEnabled' : 'consoleUserDisabled');
  });

  app.post('/admin/users/:sub/claims', async (request, reply) => {
    const w = await admin.writer(request, reply);
    if (!w) return reply;
    const { sub } = request.params as { sub: string };
    const text = single(w.form, 'claims') ?? '';
    const user = await find(reply, sub);
    if (!user) return reply;
    let claims: unknown;
    try {
      if (text.length > MAX_CLAIMS) throw new Error('too long');
      claims = JSON.parse(text);
      if (claims === null || typeof claims !== 'object' || Array.isArray(claims)) throw new Error('not an object');
    } catch {
      return userPage(request, reply, sub, admin.text(request, 'consoleClaimsInvalid'), 400, text);
    }
    try {
      await users.setClaims(user.username, user.tenant, claims);
    } catch (err) {
      const refusal = admin.refused(request, err);
      if (!refusal) throw err;
      return userPage(request, reply, sub, refusal.message, refusal.status, text);
    }
    // Claim names only: their values are personal data (as profile_updated events).
    admin.audit(w.caller, 'user.claims', { type: 'user', id: sub }, { claims: Object.keys(claims as Json) });
    return admin.done(reply, userPath(sub), 'consoleClaimsSaved');
  });

  app.post('/admin/users/:sub/groups', async (request, reply) => {
    const w = await admin.writer(request, reply);
    if (!w) return reply;
    const { sub } = request.params as { sub: string };
    const user = await find(reply, sub);
    if (!user) return reply;
    const wanted = new Set(w.form.getAll('group').slice(0, MAX_GROUPS));
    const current = new Set(user.groups.map((g) => g.value));
    try {
      for (const id of wanted)
        if (!current.has(id)) await scim.patchGroup(id, { schemas: [PATCH_OP], Operations: [{ op: 'add', path: 'members', value: [{ value: sub }] }] }, undefined, actor(w.caller));
      for (const id of current)
        if (!wanted.has(id)) await scim.patchGroup(id, { schemas: [PATCH_OP], Operations: [{ op: 'remove', path: `members[value eq ${scimString(sub)}]` }] }, undefined, actor(w.caller));
    } catch (err) {
      const refusal = admin.refused(request, err);
      if (!refusal) throw err;
      return userPage(request, reply, sub, refusal.message, refusal.status);
    }
    return admin.done(reply, userPath(sub), 'consoleGroupsSaved');
  });

  app.post('/admin/users/:sub/mfa', async (request, reply) => {
    const w = await admin.writer(request, reply);
    if (!w) return reply;
    const { sub } = request.params as { sub: string };
    const user = await find(reply, sub);
    if (!user) return reply;
    const { removed } = await users.resetSecondFactors(user.username, user.tenant, { events: ctx.events, endpoint: '/admin' });
    admin.audit(w.caller, 'user.reset_mfa', { type: 'user', id: sub }, { removed });
    return admin.done(reply, userPath(sub), 'consoleMfaReset');
  });

  app.post('/admin/users/:sub/sessions/revoke', async (request, reply) => {
    const w = await admin.writer(request, reply);
    if (!w) return reply;
    const { sub } = request.params as { sub: string };
    const sid = single(w.form, 'sid') ?? '';
    try {
      if (sid.length === 0 || sid.length > 200 || sub.length > MAX_SUBJECT) throw new AdminError('not_found', 'no such session');
      await admin.changes(w.caller).revokeSession(sub, sid);
    } catch (err) {
      const refusal = admin.refused(request, err);
      if (!refusal) throw err;
      return userPage(request, reply, sub, refusal.message, refusal.status);
    }
    return admin.done(reply, userPath(sub), 'consoleSessionRevoked');
  });
}
