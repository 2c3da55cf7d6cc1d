/**
 * Self-service pages of the signed-in user, linked from /account:
 * - `/account/password`: a new password, twice, checked by the policy; needs the current password
 *   unless the session is a recent strong sign-in (`MfaService.recentStrongSignIn`);
 * - `/account/sessions`: the user's live sessions (device, address, sign-in time, this browser
 *   marked), each other one can be ended: a logout of that session (back-channel logout tokens,
 *   and the front-channel logout iframes of its clients loaded in this page);
 * - `/account/apps`: the clients holding a consent or refresh tokens, each revocable;
 * - `/account/profile`: the claims of config `account.editableClaims`.
 * Config-file and external users see their password and profile read-only, with the reason.
 * Every form is CSRF-checked before its route runs (ui/forms.ts); what is decided and stored is `AccountService`'s
 * (src/users/account.ts): these routes read the request, call it and render.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Services } from '../services.js';
import { sessionOf } from '../interaction/browser.js';
import { single } from '../http/fields.js';
import { originOf } from '../http/request.js';
import { frameSources, frontChannelFrames } from '../logout/front-channel.js';
import type { AccountKind, PasswordChange, ProfileProblem } from '../users/account.js';
import { PASSWORD_PROBLEM_TEXTS } from '../users/password-policy.js';
import type { Session } from '../users/sessions.js';
import { refused } from './attempts.js';
import { formOf, formRoute } from './forms.js';
import { format, type Messages } from '../page-kit/i18n.js';
import { language } from './language.js';
import { allowFrames } from '../page-kit/pages.js';
import { SELF_SERVICE_TEMPLATES } from '../page-kit/self-service-pages.js';
import { describeUserAgent } from '../users/user-agent.js';
import { notFoundPage, type ErrorPageServices } from './error-page.js';
import type { BrowserServices } from '../interaction/browser.js';

import type { FormServices } from './forms.js';
import { ACCOUNT_PATH, signInReturningTo } from './return-path.js';
/** The services this module uses. */
export type AccountSelfServicePageServices = Pick<
  Services,
  'account' | 'basePath' | 'email' | 'issuer' | 'mfa' | 'pages' | 'users'
> &
  BrowserServices &
  ErrorPageServices &
  FormServices;

/** The label of each editable claim, and the browser's autofill hint (HTML §4.10.18.7) where one exists. */
const CLAIM_FIELDS: Record<string, { label: keyof Messages; autocomplete?: string }> = {
  name: { label: 'claimName', autocomplete: 'name' },
  given_name: { label: 'claimGivenName', autocomplete: 'given-name' },
  family_name: { label: 'claimFamilyName', autocomplete: 'family-name' },
  middle_name: { label: 'claimMiddleName', autocomplete: 'additional-name' },
  nickname: { label: 'claimNickname', autocomplete: 'nickname' },
  gender: { label: 'claimGender', autocomplete: 'sex' },
  birthdate: { label: 'claimBirthdate', autocomplete: 'bday' },
  zoneinfo: { label: 'claimZoneinfo' },
  locale: { label: 'claimLocale', autocomplete: 'language' },
};

const PROFILE_PROBLEM_TEXTS: Record<ProfileProblem, keyof Messages> = {
  too_long: 'profileTooLong',
  control_characters: 'profileControlCharacters',
  not_a_date: 'profileNotADate',
  not_a_locale: 'profileNotALocale',
  not_a_zone: 'profileNotAZone',
};

/** Why a kind of user sees the password and profile read-only. */
const READ_ONLY_TEXTS: Record<Exclude<AccountKind, 'stored'>, keyof Messages> = {
  config: 'accountReadOnlyConfig',
  external: 'accountReadOnlyExternal',
};

/**
 * Registers `/account/password`, `/account/sessions` (and `/end`), `/account/apps` (and `/revoke`),
 * `/account/profile`.
 */
export function accountSelfServicePages(app: FastifyInstance, ctx: AccountSelfServicePageServices): void {
  for (const [name, template] of Object.entries(SELF_SERVICE_TEMPLATES)) ctx.pages.register(name, template);
  const form = formRoute(app, ctx);

  /** The signed-in session for a page, or undefined after answering with a redirect to the login page. */
  const signedIn = async (request: FastifyRequest, reply: FastifyReply): Promise<Session | undefined> => {
    const session = await sessionOf(ctx, request);
    if (!session)
      reply.header('cache-control', 'no-store').redirect(`${ctx.basePath}${signInReturningTo(ACCOUNT_PATH)}`, 303);
    return session;
  };

  app.get('/account/password', async (request, reply) => {
    const session = await signedIn(request, reply);
    return session && passwordPage(ctx, request, reply, session, undefined);
  });

  app.post('/account/password', form, async (request, reply) => {
    const session = await signedIn(request, reply);
    if (!session) return reply;
    const body = formOf(request);
    const change = await ctx.account.changePassword(
      session,
      {
        current: single(body, 'current_password'),
        password: single(body, 'new_password') ?? '',
        confirm: single(body, 'confirm_password') ?? '',
      },
      await ctx.mfa.recentStrongSignIn(session),
      originOf(request),
    );
    if (change.outcome === 'refused') refused(reply, change.refusal);
    return passwordPage(ctx, request, reply, session, change);
  });

  // A new link that confirms the user's address, asked for from /account (which offers it for a
  // stored user's unconfirmed address): an expired link no longer leaves only the CLI.
  app.post('/account/email/verify', form, async (request, reply) => {
    const session = await signedIn(request, reply);
    if (!session) return reply;
    const lang = language(request);
    if (!ctx.email) return notFoundPage(ctx, request, reply);
    let sent: boolean;
    try {
      sent = await ctx.email.requestVerification(session.subjectId, lang);
    } catch (err) {
      request.log.warn({ err }, 'confirmation link: the mail could not be sent');
      return ctx.pages.send(reply, 'message', lang, { titleKey: 'errorTitle', textKey: 'mailNotSent' }, 503);
    }
    const textKey = sent ? 'accountEmailLinkSent' : 'accountEmailLinkNotSent';
    const next = { path: ACCOUNT_PATH, textKey: 'accountTitle' };
    return ctx.pages.send(reply, 'message', lang, { titleKey: 'accountTitle', textKey, next }, sent ? 200 : 429);
  });

  app.get('/account/sessions', async (request, reply) => {
    const session = await signedIn(request, reply);
    return session && sessionsPage(ctx, request, reply, session, undefined, []);
  });

  app.post('/account/sessions/end', form, async (request, reply) => {
    const session = await signedIn(request, reply);
    if (!session) return reply;
    const sid = single(formOf(request), 'sid') ?? '';
    // The current session is ended by signing out (its cookie goes with it), not here.
    const ended =
      sid !== session.sid && sid.length <= 64
        ? await ctx.account.endSession(session, sid, originOf(request))
        : undefined;
    if (!ended) return sessionsPage(ctx, request, reply, session, 'sessionNotFound', [], 404);
    return sessionsPage(
      ctx,
      request,
      reply,
      session,
      'sessionEnded',
      frontChannelFrames(ctx.issuer, ended.sid, ended.clients),
    );
  });

  app.get('/account/apps', async (request, reply) => {
    const session = await signedIn(request, reply);
    return session && appsPage(ctx, request, reply, session, undefined);
  });

  app.post('/account/apps/revoke', form, async (request, reply) => {
    const session = await signedIn(request, reply);
    if (!session) return reply;
    const clientId = single(formOf(request), 'client_id') ?? '';
    const revoked =
      clientId.length > 0 &&
      clientId.length <= 200 &&
      (await ctx.account.revokeApp(session.subjectId, clientId, originOf(request)));
    return appsPage(ctx, request, reply, session, revoked ? 'appRevoked' : 'appNotFound', revoked ? 200 : 404);
  });

  app.get('/account/profile', async (request, reply) => {
    const session = await signedIn(request, reply);
    return session && profilePage(ctx, request, reply, session, undefined, {});
  });

  app.post('/account/profile', form, async (request, reply) => {
    const session = await signedIn(request, reply);
    if (!session) return reply;
    const body = formOf(request);
    const values = Object.fromEntries(ctx.account.editableClaims.map((name) => [name, single(body, name)]));
    const edit = await ctx.account.updateProfile(session.subjectId, values, originOf(request));
    if (edit.outcome === 'invalid')
      return profilePage(ctx, request, reply, session, undefined, { errors: edit.errors, values }, 400);
    if (edit.outcome === 'read_only') return profilePage(ctx, request, reply, session, undefined, {}, 403);
    return profilePage(ctx, request, reply, session, 'profileSaved', {});
  });
}

/** The read-only reason for this user's password and profile, or undefined when they may change. */
async function readOnlyReason(
  ctx: AccountSelfServicePageServices,
  lang: string,
  subjectId: string,
): Promise<string | undefined> {
  const kind = (await ctx.account.kind(subjectId)) ?? 'external';
  return kind === 'stored' ? undefined : ctx.pages.text(lang, READ_ONLY_TEXTS[kind]);
}

async function passwordPage(
  ctx: AccountSelfServicePageServices,
  request: FastifyRequest,
  reply: FastifyReply,
  session: Session,
  change: PasswordChange | undefined,
): Promise<FastifyReply> {
  const lang = language(request);
  const t = (key: keyof Messages) => ctx.pages.text(lang, key);
  const outcome = change?.outcome;
  const errors: Partial<Record<NonNullable<typeof outcome>, string>> = {
    refused: t('tooManyAttempts'),
    wrong_current: t('wrongCurrentPassword'),
    mismatch: t('passwordMismatch'),
  };
  const error =
    change?.outcome === 'weak'
      ? change.problems.map((p) => t(PASSWORD_PROBLEM_TEXTS[p])).join(' ')
      : outcome
        ? errors[outcome]
        : undefined;
  const status = { refused: 429, read_only: 403, changed: 200, wrong_current: 400, mismatch: 400, weak: 400 }[
    outcome ?? 'changed'
  ];
  return ctx.pages.send(
    reply,
    'account-password',
    lang,
    {
      csrf: reply.generateCsrf(),
      readOnly: await readOnlyReason(ctx, lang, session.subjectId),
      recent: await ctx.mfa.recentStrongSignIn(session),
      error,
      notice: outcome === 'changed' ? t('passwordChanged') : undefined,
    },
    status,
  );
}

async function sessionsPage(
  ctx: AccountSelfServicePageServices,
  request: FastifyRequest,
  reply: FastifyReply,
  session: Session,
  notice: keyof Messages | undefined,
  frames: string[],
  status = 200,
): Promise<FastifyReply> {
  const lang = language(request);
  const t = (key: keyof Messages) => ctx.pages.text(lang, key);
  const f = (key: keyof Messages, values: Record<string, string>) => format(t(key), values);
  const sessions = (await ctx.account.sessions(session)).map((s) => {
    const ua = describeUserAgent(s.userAgent);
    const device =
      ua?.browser && ua.system
        ? f('deviceOn', { browser: ua.browser, system: ua.system })
        : (ua?.browser ?? ua?.system ?? t('unknownDevice'));
    const time = dateTime(s.authTime);
    const when = s.address ? f('sessionSignedInFrom', { time, address: s.address }) : f('sessionSignedIn', { time });
    return { sid: s.sid, current: s.current, device, when, label: f('endSessionLabel', { device, time }) };
  });
  // The ended session's front-channel logout iframes (OIDC Front-Channel Logout 1.0 §3), allowed by name.
  if (frames.length > 0) allowFrames(reply, frameSources(frames));
  return ctx.pages.send(
    reply,
    'account-sessions',
    lang,
    { csrf: reply.generateCsrf(), sessions, frames, notice: notice ? t(notice) : undefined },
    status,
  );
}

async function appsPage(
  ctx: AccountSelfServicePageServices,
  request: FastifyRequest,
  reply: FastifyReply,
  session: Session,
  notice: keyof Messages | undefined,
  status = 200,
): Promise<FastifyReply> {
  const lang = language(request);
  const t = (key: keyof Messages) => ctx.pages.text(lang, key);
  const apps = (await ctx.account.connectedApps(session.subjectId)).map((a) => ({
    clientId: a.clientId,
    name: a.name,
    detail: format(t('appDetail'), { scopes: a.scopes.join(', '), date: dateTime(a.since).slice(0, 10) }),
    label: format(t('revokeAppLabel'), { app: a.name }),
  }));
  return ctx.pages.send(
    reply,
    'account-apps',
    lang,
    { csrf: reply.generateCsrf(), apps, notice: notice ? t(notice) : undefined },
    status,
  );
}

async function profilePage(
  ctx: AccountSelfServicePageServices,
  request: FastifyRequest,
  reply: FastifyReply,
  session: Session,
  notice: keyof Messages | undefined,
  failed: { errors?: Record<string, ProfileProblem>; values?: Record<string, string | undefined> },
  status = 200,
): Promise<FastifyReply> {
  const lang = language(request);
  const t = (key: keyof Messages) => ctx.pages.text(lang, key);
  const user = await ctx.users.findBySubject(session.subjectId);
  const fields = ctx.account.editableClaims.map((name) => {
    const field = CLAIM_FIELDS[name] ?? { label: 'claimName' as const };
    const stored = user?.claims[name];
    const problem = failed.errors?.[name];
    return {
      name,
      label: t(field.label),
      autocomplete: field.autocomplete,
      value: failed.values?.[name] ?? (typeof stored === 'string' ? stored : ''),
      error: problem ? t(PROFILE_PROBLEM_TEXTS[problem]) : undefined,
    };
  });
  return ctx.pages.send(
    reply,
    'account-profile',
    lang,
    {
      csrf: reply.generateCsrf(),
      fields,
      readOnly: await readOnlyReason(ctx, lang, session.subjectId),
      error: failed.errors ? t('profileInvalid') : undefined,
      notice: notice ? t(notice) : undefined,
    },
    status,
  );
}

/** Unix seconds as `YYYY-MM-DD HH:MM UTC`. */
function dateTime(seconds: number): string {
  return `${new Date(seconds * 1000).toISOString().slice(0, 16).replace('T', ' ')} UTC`;
}
