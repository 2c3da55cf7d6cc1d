/**
 * The users of the management API (/admin/v1/users, `admin-api.ts`): list (a page at a time, as
 * the audit events), read, create, change by a JSON Merge Patch (RFC 7396) with `If-Match`,
 * delete; and a user's sessions and grants. Thin routes over `UserAdmin`, which holds the rules
 * (username bounds, usernames held by stored, config-file and directory users, the password
 * policy) and makes the change, its sign-out and its `admin_changed` audit event; config-file
 * users are shown and read-only (409).
 */
import { z } from 'zod';
import { AdminError } from '../admin/errors.js';
import type { AdminAudit, UserChange } from '../admin/user-types.js';
import type { UserView } from '../admin/user-views.js';
import { MAX_SUBJECT_LENGTH, MAX_USERNAME_LENGTH } from '../config/schema.js';
import { MAX_EMAIL_LENGTH } from '../users/email-address.js';
import { applyMergePatch } from '../protocol/merge-patch.js';
import {
  ADMIN_API_PATH,
  type AdminApiServices,
  type Answer,
  changes,
  clientIdParam,
  ifMatch,
  requiredIfMatch,
  MERGE_PATCH,
  name,
  parsed,
  paging,
  type Route,
} from './admin-api-kit.js';
import type { Caller } from './protected-resource.js';

const subject = name(MAX_SUBJECT_LENGTH).meta({ description: "The user's subject (sub)" });
const sid = name(200);
/** A string of a body without control characters (PostgreSQL refuses a NUL in text). */
const text = (description: string) =>
  z
    .string()
    .regex(/^[^\u0000-\u001f\u007f]*$/, 'control characters are not allowed')
    .meta({ description });

const userOut = z.object({
  subjectId: z.string(),
  username: z.string(),
  tenant: z.string().nullable(),
  active: z.boolean(),
  source: z.enum(['config', 'store']),
  claims: z.record(z.string(), z.unknown()),
  email: z.string().nullable().meta({ description: 'The primary address (the email claim)' }),
  emailVerified: z.boolean(),
  hasPassword: z.boolean().meta({ description: 'Whether the user has a password; the password itself is never shown' }),
  passwordChangeRequired: z.boolean().meta({
    description:
      'Whether the password is a temporary one an administrator set (in the console): the next sign-in with it must choose a new one before any session or code is issued',
  }),
  groups: z
    .array(z.object({ id: z.string(), displayName: z.string() }))
    .meta({ description: 'The SCIM groups the user is a member of (their role claim)' }),
});
const userCreate = z.strictObject({
  username: text(
    `The sign-in name: 1 to ${MAX_USERNAME_LENGTH} characters, unique (case-insensitive) among the stored, config-file and directory users`,
  ),
  subjectId: text('The subject (sub); default: a new random id; never a client id (RFC 9068 §5)').optional(),
  tenant: text('The tenant (acr_values=tenant:<name>); default none').optional(),
  claims: z
    .record(z.string(), z.unknown())
    .optional()
    .meta({ description: "The user's claims by name (OIDC Core §5.1)" }),
  password: z
    .string()
    .optional()
    .meta({ description: 'Checked by the password policy and stored as an argon2id hash; none: no password sign-in' }),
  email: text(`The primary address, at most ${MAX_EMAIL_LENGTH} characters`).optional(),
  emailVerified: z
    .boolean()
    .optional()
    .meta({ description: "Whether the address is known to be the user's (default false)" }),
  active: z.boolean().optional().meta({ description: 'Default true' }),
});
const userPatch = z
  .strictObject({
    claims: z.record(z.string(), z.unknown()).nullable().optional().meta({
      description: 'Merged into the claims (RFC 7396: a null member removes that claim); null removes every claim',
    }),
    email: text("A new primary address; null removes the user's addresses").nullable().optional(),
    emailVerified: z
      .boolean()
      .optional()
      .meta({ description: "Whether the primary address is known to be the user's" }),
    active: z
      .boolean()
      .optional()
      .meta({ description: 'false signs the user out everywhere: sessions end, tokens are revoked' }),
    password: z.string().optional().meta({ description: 'A new password, checked by the password policy; write-only' }),
  })
  .meta({ description: 'A JSON Merge Patch (RFC 7396) of the user; username, subjectId and tenant cannot change' });
const usersQuery = z.strictObject(paging('Users'));

/** Who changes a user through the API, for the audit events of `UserAdmin`. */
function auditOf(ctx: AdminApiServices, caller: Caller): AdminAudit {
  return {
    events: ctx.events,
    endpoint: ADMIN_API_PATH,
    clientId: caller.clientId,
    ...(caller.sub !== undefined ? { sub: caller.sub } : {}),
  };
}

/** A user's answer: the view without its ETag, which goes in the header. */
function userAnswer(view: UserView, status = 200): Answer {
  const { etag, ...body } = view;
  return { status, etag, body };
}

/**
 * The change a merge patch of the user `before` asks for. @throws AdminError `invalid` for `emailVerified`
 * without an address.
 */
function changeOf(before: UserView, patch: z.output<typeof userPatch>): UserChange {
  const claims =
    patch.claims === undefined ? undefined : patch.claims === null ? {} : applyMergePatch(before.claims, patch.claims);
  const address = patch.email === undefined ? before.email : patch.email;
  if (patch.emailVerified !== undefined && address === null)
    throw new AdminError('invalid', 'emailVerified: the user has no address', 'emailVerified', [
      { path: 'emailVerified', message: 'the user has no address' },
    ]);
  const sameAddress = address !== null && address.toLowerCase() === before.email?.toLowerCase();
  const email =
    address === null || (patch.email === undefined && patch.emailVerified === undefined)
      ? undefined
      : { value: address, verified: patch.emailVerified ?? (sameAddress && before.emailVerified) };
  return {
    ...(claims !== undefined ? { claims } : {}),
    ...(patch.email === null ? { emails: [] } : email ? { email } : {}),
    ...(patch.active !== undefined ? { active: patch.active } : {}),
    ...(patch.password !== undefined ? { password: patch.password } : {}),
  };
}

/** The routes of /admin/v1/users. */
export const USER_ROUTES: Route[] = [
  {
    method: 'GET',
    url: '/users',
    summary: "Users, a page at a time: the config file's (read-only) first, then the stored ones by username",
    query: usersQuery,
    response: z.object({
      users: z.array(userOut),
      next: z.string().optional().meta({ description: 'The cursor of the next page; absent on the last' }),
    }),
    handle: async (ctx, _c, _p, _b, request) => {
      const q = parsed(usersQuery, request.query);
      const { users, next } = await ctx.management.users.page({ cursor: q.cursor, limit: q.limit });
      return { status: 200, body: { users: users.map((u) => userAnswer(u).body), ...(next ? { next } : {}) } };
    },
  },
  {
    method: 'POST',
    url: '/users',
    summary: 'Create a stored user; 409 for a username a stored, config-file or directory user holds',
    created: true,
    body: userCreate,
    response: userOut,
    handle: async (ctx, caller, _p, body) => {
      const input = parsed(userCreate, body);
      const { subjectId } = await ctx.management.users.create(input, {
        audit: auditOf(ctx, caller),
        strictNames: true,
      });
      return userAnswer(await ctx.management.users.get(subjectId), 201);
    },
  },
  {
    method: 'GET',
    url: '/users/:subject',
    summary: 'One user, config-file or stored, never their password',
    params: { subject },
    response: userOut,
    handle: async (ctx, _c, p) => userAnswer(await ctx.management.users.get(p.subject ?? '')),
  },
  {
    method: 'PATCH',
    url: '/users/:subject',
    summary:
      "Change a stored user's claims, address, password or activation by a JSON Merge Patch (RFC 7396); If-Match is required",
    params: { subject },
    body: userPatch,
    mediaType: MERGE_PATCH,
    response: userOut,
    handle: async (ctx, caller, p, body, request) => {
      const etag = requiredIfMatch(request);
      const patch = parsed(userPatch, body);
      const id = p.subject ?? '';
      await ctx.management.users.update(id, changeOf(await ctx.management.users.get(id), patch), {
        audit: auditOf(ctx, caller),
        ifMatch: etag,
      });
      return userAnswer(await ctx.management.users.get(id));
    },
  },
  {
    method: 'DELETE',
    url: '/users/:subject',
    summary: 'Delete a stored user, signed out everywhere first',
    params: { subject },
    handle: async (ctx, caller, p, _b, request) => {
      await ctx.management.users.delete(p.subject ?? '', auditOf(ctx, caller), ifMatch(request));
      return { status: 204 };
    },
  },
  {
    method: 'GET',
    url: '/users/:subject/sessions',
    summary: "A user's live sessions (their sid)",
    params: { subject },
    response: z.object({ sessions: z.array(z.object({ sid: z.string() })) }),
    handle: async (ctx, _c, p) => ({
      status: 200,
      body: { sessions: (await ctx.management.sessions.sessionsOf(p.subject ?? '')).map((s) => ({ sid: s })) },
    }),
  },
  {
    method: 'DELETE',
    url: '/users/:subject/sessions',
    summary: 'End every live session of a user (back-channel logout to their clients)',
    params: { subject },
    response: z.object({ ended: z.number().int() }),
    handle: async (ctx, caller, p) => {
      const ended = await changes(ctx, caller).revokeAllSessions(p.subject ?? '');
      return { status: 200, body: { ended } };
    },
  },
  {
    method: 'DELETE',
    url: '/users/:subject/sessions/:sid',
    summary: 'End one live session of a user (back-channel logout to its clients)',
    params: { subject, sid },
    handle: async (ctx, caller, p) => {
      await changes(ctx, caller).revokeSession(p.subject ?? '', p.sid ?? '');
      return { status: 204 };
    },
  },
  {
    method: 'GET',
    url: '/users/:subject/grants',
    summary: "A user's remembered consents and refresh token grants",
    params: { subject },
    response: z.object({
      grants: z.array(
        z.object({
          clientId: z.string(),
          type: z.enum(['consent', 'refresh_token']),
          scopes: z.array(z.string()),
          createdAt: z.number().int(),
          expiresAt: z.number().int(),
        }),
      ),
    }),
    handle: async (ctx, _c, p) => ({
      status: 200,
      body: { grants: await ctx.management.grants.list(p.subject ?? '') },
    }),
  },
  {
    method: 'DELETE',
    url: '/users/:subject/grants/:clientId',
    summary: "Revoke a user's consent and refresh token grants for one client",
    params: { subject, clientId: clientIdParam },
    response: z.object({ revoked: z.number().int() }),
    handle: async (ctx, caller, p) => {
      const revoked = await changes(ctx, caller).revokeGrants(p.subject ?? '', p.clientId ?? '');
      return { status: 200, body: { revoked } };
    },
  },
];
