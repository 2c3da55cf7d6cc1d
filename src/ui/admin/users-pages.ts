/**
 * The console's user pages: search and create (`UserAdmin`, as /admin/v1/users; config-file users
 * are listed read-only), and one user's page: disable or enable (disabling ends their sessions and
 * revokes their tokens), a temporary password to be changed at the next sign-in, claims, second factors reset (`UserAdmin.resetSecondFactors`) and live
 * sessions (`ctx.management.sessions`, as `/admin/v1/users/:subject/sessions`). Groups exist only
 * in the SCIM service: the users page lists, creates and deletes them, and a user's page sets
 * their memberships, through its group operations (as `/scim/v2/Groups`).
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { AdminError } from '../../admin/errors.js';
import { MAX_SUBJECT_LENGTH } from '../../config/schema.js';
import { queryString, single } from '../../http/fields.js';
import type { FormField } from '../../page-kit/form-fields.js';
import { format } from '../../page-kit/i18n.js';
import { type Console, shownTime } from './console-page.js';
import type { ConsoleCaller } from './console-session.js';

/** Users listed per search. */
const PAGE_SIZE = 50;
/** The longest claims document, characters. */
const MAX_CLAIMS = 16_000;
/** The longest password a form takes, characters (the sign-in page's bound). */
const MAX_PASSWORD = 256;
/** The most groups whose memberships one form sets. */
const MAX_GROUPS = 200;

type Json = Record<string, unknown>;

/** The display name of a user: their `name` claim, else `display_name`. */
function nameOf(claims: Json): string {
  if (typeof claims.name === 'string') return claims.name;
  return typeof claims.display_name === 'string' ? claims.display_name : '';
}

/** Registers `/admin/users` and the pages of one user. */
export function userPages(admin: Console): void {
  const { ctx, app } = admin;
  const { scim, users } = ctx.management;
  const actor = (caller: ConsoleCaller) => ({ clientId: caller.clientId, sub: caller.sub });
  const userPath = (sub: string) => `/admin/users/${encodeURIComponent(sub)}`;

  const listPage = async (request: FastifyRequest, reply: FastifyReply, form: Json, error?: string, status = 200) => {
    // Control characters never match a username (and PostgreSQL refuses a NUL): left out.
    const q = (queryString(request, 'q') ?? '')
      .replace(/[\u0000-\u001f\u007f]/g, '')
      .trim()
      .slice(0, 100);
    const groups = await scim.groupChoices();
    let listed;
    try {
      listed = await users.page({ ...(q ? { contains: q } : {}), limit: PAGE_SIZE });
    } catch (err) {
      const refusal = admin.refused(request, err);
      if (!refusal) throw err;
      const data = { q, users: [], groups, form, error: refusal.message };
      return admin.render(request, reply, 'console-users', 'users', data, 400);
    }
    const shown = listed.users.map((u) => ({
      subjectId: u.subjectId,
      username: u.username,
      name: nameOf(u.claims),
      active: u.active,
      source: u.source,
    }));
    return admin.render(request, reply, 'console-users', 'users', { q, users: shown, groups, form, error }, status);
  };

  /** The user of a page, config-file or stored; undefined after the 404 page. */
  const find = async (reply: FastifyReply, sub: string) => {
    try {
      if (sub.length > MAX_SUBJECT_LENGTH) throw new AdminError('not_found', 'no such user');
      return await users.get(sub);
    } catch (err) {
      if (!admin.refused(reply.request, err)) throw err;
      reply.callNotFound();
      return undefined;
    }
  };

  const userPage = async (
    request: FastifyRequest,
    reply: FastifyReply,
    sub: string,
    error?: string,
    status = 200,
    claimsText?: string,
    passwordError?: string,
  ) => {
    const user = await find(reply, sub);
    if (!user) return reply;
    const { factors } = await users.secondFactors(user.username, user.tenant);
    const memberOf = new Set(user.groups.map((g) => g.id));
    const choices = user.source === 'store' ? await scim.groupChoices() : [];
    const allGroups = choices.map((g) => ({ id: g.id, name: g.name, member: memberOf.has(g.id) }));
    return admin.render(
      request,
      reply,
      'console-user',
      'users',
      {
        user,
        groups: user.groups.map((g) => g.displayName),
        allGroups,
        factors:
          factors.length > 0 ? [...new Set(factors.map((f) => f.kind))].join(', ') : admin.text(request, 'consoleNone'),
        claims: claimsText ?? JSON.stringify(user.claims, null, 2),
        sessions: (await ctx.management.sessions.listedSessionsOf(sub)).map((s) => ({
          sid: s.sid,
          time: shownTime(s.authTime),
          browser: s.browser,
          clients: s.clients,
        })),
        // Mail only with `email` configured, for a stored user (a config-file user has no address to confirm).
        mail: ctx.email !== undefined && user.source === 'store',
        // The temporary password's form (`@form-fields`): never shown back.
        fields: [
          {
            name: 'password',
            type: 'password',
            label: admin.text(request, 'consoleTemporaryPassword'),
            hint: `${admin.text(request, 'consoleTemporaryPasswordHint')} ${admin.text(request, 'passwordHint')}`,
            max: MAX_PASSWORD,
            required: true,
            value: '',
            error: passwordError,
          },
        ] satisfies FormField[],
        error,
      },
      status,
    );
  };

  app.get('/admin/users', async (request, reply) =>
    (await admin.reader(request, reply)) ? listPage(request, reply, {}) : reply,
  );

  app.post('/admin/users', async (request, reply) => {
    const w = await admin.writer(request, reply);
    if (!w) return reply;
    const field = (name: string) => single(w.form, name)?.trim() ?? '';
    const form = { username: field('username'), name: field('name'), email: field('email') };
    const password = single(w.form, 'password') ?? '';
    try {
      const { subjectId } = await users.create(
        {
          username: form.username,
          claims: form.name ? { name: form.name } : {},
          ...(form.email ? { email: form.email } : {}),
          ...(password ? { password } : {}),
        },
        { audit: admin.userAudit(w.caller), strictNames: true },
      );
      return admin.done(reply, userPath(subjectId), 'consoleUserCreated');
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
      await scim.createNamedGroup(displayName, actor(w.caller));
    } catch (err) {
      const refusal = admin.refused(request, err);
      if (!refusal) throw err;
      return listPage(
        request,
        reply,
        { displayName },
        format(admin.text(request, 'consoleChangeRefused'), { message: refusal.message }),
        refusal.status,
      );
    }
    return admin.done(reply, '/admin/users', 'consoleGroupCreated');
  });

  app.post('/admin/groups/:id/delete', async (request, reply) => {
    const w = await admin.writer(request, reply);
    if (!w) return reply;
    const { id } = request.params as { id: string };
    try {
      await scim.deleteGroup(id.slice(0, MAX_SUBJECT_LENGTH), undefined, actor(w.caller));
    } catch (err) {
      const refusal = admin.refused(request, err);
      if (!refusal) throw err;
      return listPage(
        request,
        reply,
        {},
        format(admin.text(request, 'consoleChangeRefused'), { message: refusal.message }),
        refusal.status,
      );
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
      await users.setActive(sub, active, admin.userAudit(w.caller));
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
      await users.update(user.subjectId, { claims }, { audit: admin.userAudit(w.caller) });
    } catch (err) {
      const refusal = admin.refused(request, err);
      if (!refusal) throw err;
      return userPage(request, reply, sub, refusal.message, refusal.status, text);
    }
    return admin.done(reply, userPath(sub), 'consoleClaimsSaved');
  });

  // A temporary password (checked by the policy), which the user must replace at the next sign-in
  // (ui/password-change-required.ts); whoever knew the old one is signed out, as by a reset.
  app.post('/admin/users/:sub/password', async (request, reply) => {
    const w = await admin.writer(request, reply);
    if (!w) return reply;
    const { sub } = request.params as { sub: string };
    const user = await find(reply, sub);
    if (!user) return reply;
    const password = (single(w.form, 'password') ?? '').slice(0, MAX_PASSWORD);
    try {
      await users.update(
        user.subjectId,
        { password, passwordChangeRequired: true },
        { audit: admin.userAudit(w.caller), signOut: true },
      );
    } catch (err) {
      const refusal = admin.refused(request, err);
      if (!refusal) throw err;
      return userPage(request, reply, sub, refusal.message, refusal.status, undefined, refusal.fields.password);
    }
    return admin.done(reply, userPath(sub), 'consoleTemporaryPasswordSet');
  });

  app.post('/admin/users/:sub/groups', async (request, reply) => {
    const w = await admin.writer(request, reply);
    if (!w) return reply;
    const { sub } = request.params as { sub: string };
    const user = await find(reply, sub);
    if (!user) return reply;
    try {
      await scim.setGroupsOf(user.subjectId, w.form.getAll('group').slice(0, MAX_GROUPS), actor(w.caller));
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
    const { removed } = await users.resetSecondFactors(user.username, user.tenant, {
      events: ctx.events,
      endpoint: '/admin',
    });
    admin.audit(w.caller, 'user.reset_mfa', { type: 'user', id: sub }, { removed });
    return admin.done(reply, userPath(sub), 'consoleMfaReset');
  });

  // A reset link or a new confirmation link, mailed as the user's own request would be: to the
  // primary address (a reset only to a confirmed one), within the per-account mail cap. The link is
  // the user's to follow; the administrator never sees it. Audited.
  app.post('/admin/users/:sub/mail', async (request, reply) => {
    const w = await admin.writer(request, reply);
    if (!w) return reply;
    const { sub } = request.params as { sub: string };
    const user = await find(reply, sub);
    if (!user) return reply;
    const kind = single(w.form, 'button');
    if (!ctx.email || user.source !== 'store' || (kind !== 'reset' && kind !== 'verify'))
      return userPage(request, reply, sub, admin.text(request, 'consoleMailNotSent'), 400);
    const lang = typeof user.claims.locale === 'string' ? user.claims.locale : 'en';
    const sent =
      kind === 'reset' ? await ctx.email.sendReset(sub, lang) : await ctx.email.requestVerification(sub, lang);
    admin.audit(
      w.caller,
      kind === 'reset' ? 'user.send_reset' : 'user.send_verification',
      { type: 'user', id: sub },
      {
        sent,
      },
    );
    return admin.done(
      reply,
      userPath(sub),
      !sent ? 'consoleMailNotSent' : kind === 'reset' ? 'consoleResetMailSent' : 'consoleVerifyMailSent',
    );
  });

  app.post('/admin/users/:sub/sessions/revoke', async (request, reply) => {
    const w = await admin.writer(request, reply);
    if (!w) return reply;
    const { sub } = request.params as { sub: string };
    const sid = single(w.form, 'sid') ?? '';
    try {
      if (sid.length === 0 || sid.length > 200 || sub.length > MAX_SUBJECT_LENGTH)
        throw new AdminError('not_found', 'no such session');
      await admin.changes(w.caller).revokeSession(sub, sid);
    } catch (err) {
      const refusal = admin.refused(request, err);
      if (!refusal) throw err;
      return userPage(request, reply, sub, refusal.message, refusal.status);
    }
    return admin.done(reply, userPath(sub), 'consoleSessionRevoked');
  });
}
