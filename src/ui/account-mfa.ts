/**
 * The pages of multi-factor sign-in:
 * - `/account/mfa`: the second step after the password (input `code`, button `name="button"`
 *   `value="verify"`), also the step-up of a live session that lacks MFA;
 * - `/account/totp`: adding an authenticator app (QR code rendered on the server, the key as
 *   text, confirmed by one valid code), at a forced enrollment after the password or from
 *   /account; the first factor added also creates the ten recovery codes, shown once;
 * - `/account`: the signed-in user's second factors, removable; new recovery codes. Every change
 *   needs a sign-in within `mfa.freshSignInSeconds` that used the strongest kind of factor the
 *   user holds (`MfaService.mayChangeFactors`).
 * Every form is CSRF-checked before its route runs (ui/forms.ts). What is decided and stored is the services':
 * the second step and its code checks (`ctx.secondStep`, src/mfa/second-step.ts), enrollment and
 * removal (`ctx.enrollment`, src/mfa/enrollment.ts); these routes read the request, call them and
 * the interaction outcomes, and render.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Services } from '../services.js';
import { browserOf, sessionOf, upgradeSession } from '../interaction/browser.js';
import { single, queryString } from '../http/fields.js';
import { expiredPage } from './error-page.js';
import { language, pendingLanguage } from './language.js';
import { finishSignIn, resumePath } from '../interaction/outcomes.js';
import type { Interaction } from '../stores/records/interactions.js';
import type { TotpSetup } from '../mfa/enrollment.js';
import { amrWith, FACTOR_KINDS, type PendingSignIn } from '../mfa/factors.js';
import { RECOVERY_KIND } from '../mfa/recovery.js';
import { subjectOf, type Who } from '../mfa/second-step.js';
import type { Session } from '../users/sessions.js';
import { denyPage, signInDeniedPage } from './outcome-pages.js';
import { formOf, formRoute } from './forms.js';
import { ACCOUNT_TEMPLATES } from '../page-kit/account-pages.js';
import type { Messages } from '../page-kit/i18n.js';
import { securityKeyStep } from './passkeys.js';
import { refused } from './attempts.js';
import { originOf } from '../http/request.js';
import type { OutcomesServices } from '../interaction/outcomes.js';
import type { PasskeysPageServices } from './passkeys.js';
import type { ErrorPageServices } from './error-page.js';
import type { BrowserServices } from '../interaction/browser.js';
import { ACCOUNT_PATH, returnPath, signInReturningTo } from './return-path.js';

/** The services this module uses. */
export type AccountMfaPageServices = Pick<
  Services,
  'account' | 'basePath' | 'email' | 'enrollment' | 'interactions' | 'issuer' | 'mfa' | 'pages' | 'secondStep' | 'users'
> &
  BrowserServices &
  ErrorPageServices &
  OutcomesServices &
  PasskeysPageServices;

/** Where a sign-in continues once complete. */
type Next = { interaction: string } | { returnTo: string } | { done: string };

/** Registers `/account`, `/account/mfa`, `/account/totp`, `/account/recovery`, `/account/factors/remove`. */
export function accountMfaPages(app: FastifyInstance, ctx: AccountMfaPageServices): void {
  for (const [name, template] of Object.entries(ACCOUNT_TEMPLATES)) ctx.pages.register(name, template);
  // The second step's forms name the pending request: a refusal speaks its language.
  const stepForm = formRoute(app, ctx, 'page-in-pending-language');
  const accountForm = formRoute(app, ctx);

  app.get('/account/mfa', async (request, reply) => {
    const browser = browserOf(ctx, request, reply);
    const who = await ctx.secondStep.who(browser, () => sessionOf(ctx, request));
    if (!who) return expiredPage(ctx, request, reply);
    const id = who.pending ? who.pending.interaction : queryString(request, 'interaction');
    // A live session's step-up asked for by one of Sigil's own account pages (an approval on
    // /account/requests) goes back there afterwards.
    const returnTo = who.session && !id ? returnPath(queryString(request, 'return')) : undefined;
    // Step-up of a live session whose user has a WebAuthn credential: the security key step,
    // unless the user chose the code instead (its link). A pending sign-in got the key step at once.
    if (who.session && queryString(request, 'use') !== 'code') {
      const sent = await keyStep(
        ctx,
        request,
        reply,
        who.session.subjectId,
        await liveInteraction(ctx, id, browser),
        returnTo,
      );
      if (sent) return reply;
    }
    return mfaPage(ctx, request, reply, { interaction: id, returnTo }, undefined);
  });

  app.post('/account/mfa', stepForm, async (request, reply) => {
    const body = formOf(request);
    const browser = browserOf(ctx, request, reply);
    const who = await ctx.secondStep.who(browser, () => sessionOf(ctx, request));
    if (!who) return expiredPage(ctx, request, reply);
    const id = who.pending ? who.pending.interaction : single(body, 'interaction');
    const interaction = id ? await ctx.interactions.get(id, browser) : undefined;
    if (id && !interaction) return expiredPage(ctx, request, reply);
    const returnTo = who.session && !id ? returnPath(single(body, 'return')) : undefined;
    if (single(body, 'button') === 'cancel') {
      if (who.pending) await ctx.mfa.finishPending(browser);
      if (id && interaction) return denyPage(ctx, request, reply, { id, interaction });
      return reply.redirect(`${ctx.basePath}/account/login`, 303);
    }
    const check = await ctx.secondStep.verifyCode(subjectOf(who), single(body, 'code') ?? '', {
      origin: originOf(request),
      ...(interaction ? { clientId: interaction.request.clientId } : {}),
    });
    if (check.outcome === 'refused') {
      refused(reply, check.refusal);
      return mfaPage(ctx, request, reply, { interaction: id, returnTo }, 'tooManyAttempts', 429);
    }
    if (check.outcome === 'invalid')
      return mfaPage(ctx, request, reply, { interaction: id, returnTo }, 'invalidOneTimeCode');
    return completeSecondFactor(
      ctx,
      request,
      reply,
      browser,
      who,
      check.kind,
      id && interaction ? { interaction: id } : returnTo ? { returnTo } : undefined,
    );
  });

  app.get('/account/totp', async (request, reply) => {
    const browser = browserOf(ctx, request, reply);
    const who = await enrollmentWho(ctx, request, reply, browser);
    if (!who) return reply;
    const id = who.pending
      ? who.pending.interaction
      : await liveInteraction(ctx, queryString(request, 'interaction'), browser);
    return totpPage(ctx, request, reply, who, id, await ctx.enrollment.begin(browser, subjectOf(who)), undefined);
  });

  app.post('/account/totp', stepForm, async (request, reply) => {
    const body = formOf(request);
    const browser = browserOf(ctx, request, reply);
    const who = await enrollmentWho(ctx, request, reply, browser);
    if (!who) return reply;
    const id = who.pending ? who.pending.interaction : await liveInteraction(ctx, single(body, 'interaction'), browser);
    const confirmed = await ctx.enrollment.confirm(
      browser,
      subjectOf(who),
      single(body, 'code') ?? '',
      originOf(request),
    );
    if (confirmed.outcome === 'expired') return expiredPage(ctx, request, reply);
    if (confirmed.outcome === 'refused') {
      refused(reply, confirmed.refusal);
      return totpPage(ctx, request, reply, who, id, confirmed.setup, 'tooManyAttempts', 429);
    }
    if (confirmed.outcome === 'invalid')
      return totpPage(ctx, request, reply, who, id, confirmed.setup, 'invalidOneTimeCode');
    const codes = confirmed.recoveryCodes;
    const stepUpNext = !who.pending && id ? { interaction: id } : undefined;
    if (!codes) return completeSecondFactor(ctx, request, reply, browser, who, 'totp', stepUpNext);
    // The recovery codes are shown once, before continuing.
    const done = await completeSecondFactor(ctx, request, reply, browser, who, 'totp', stepUpNext, true);
    if (typeof done !== 'string') return done;
    return ctx.pages.send(reply, 'recovery', await pendingLanguage(ctx, request, reply, id), { codes, next: done });
  });

  app.get('/account', async (request, reply) => {
    const session = await sessionOf(ctx, request);
    if (!session)
      return reply
        .header('cache-control', 'no-store')
        .redirect(`${ctx.basePath}${signInReturningTo(ACCOUNT_PATH)}`, 303);
    return accountPage(ctx, request, reply, session, undefined);
  });

  app.post('/account/factors/remove', accountForm, async (request, reply) => {
    const body = formOf(request);
    const session = await changeAllowed(ctx, request, reply);
    if (!session) return reply;
    if (!(await ctx.enrollment.removeFactor(session.subjectId, single(body, 'factor') ?? '', originOf(request))))
      return accountPage(ctx, request, reply, session, 'unknownFactor', 404);
    return accountPage(ctx, request, reply, session, 'factorRemoved');
  });

  app.post('/account/recovery', accountForm, async (request, reply) => {
    const session = await changeAllowed(ctx, request, reply);
    if (!session) return reply;
    const codes = await ctx.enrollment.renewRecoveryCodes(session.subjectId, originOf(request));
    if (!codes) return accountPage(ctx, request, reply, session, 'unknownFactor', 404);
    return ctx.pages.send(reply, 'recovery', language(request), { codes, next: '/account' });
  });
}

/**
 * After the first factor (password at the login page): the second step the service decides
 * (`SecondStepService.afterFirstFactor`): the security key step, the code form, or the enrollment
 * of an authenticator app.
 * @returns true when the step answered (its page or a redirect to it); false when no second step
 *   is needed (the caller starts the session). A boolean, not the reply: a reply is a thenable that
 *   resolves to undefined once sent, so a caller awaiting it could not tell the two apart.
 */
export async function secondStepAfterPassword(
  ctx: AccountMfaPageServices,
  request: FastifyRequest,
  reply: FastifyReply,
  pending: PendingSignIn,
  interaction: Interaction | undefined,
): Promise<boolean> {
  // Saved for the key step too: its page links to the code form, which continues this sign-in.
  const step = await ctx.secondStep.afterFirstFactor(browserOf(ctx, request, reply), pending, interaction);
  if (step === 'none') return false;
  if (
    step === 'security-key' &&
    (await keyStep(ctx, request, reply, pending.subjectId, pending.interaction, pending.returnTo))
  )
    return true;
  const page = step === 'enroll' ? '/account/totp' : '/account/mfa';
  reply.header('cache-control', 'no-store').redirect(`${ctx.basePath}${page}`, 303);
  return true;
}

/**
 * Sends the security key step (src/ui/passkeys.ts) for a user with a WebAuthn credential, with a
 * link to the one-time code form when the user also has TOTP or unused recovery codes.
 * @returns false when the step does not apply (WebAuthn off, no credential, unknown user).
 */
async function keyStep(
  ctx: AccountMfaPageServices,
  request: FastifyRequest,
  reply: FastifyReply,
  subjectId: string,
  interaction: string | undefined,
  returnTo: string | undefined,
): Promise<boolean> {
  const user = await ctx.users.findBySubject(subjectId);
  if (!user?.isActive) return false;
  const codeLink = (await ctx.secondStep.offersCode(subjectId))
    ? `/account/mfa?use=code${interaction ? `&interaction=${encodeURIComponent(interaction)}` : ''}${
        returnTo ? `&return=${encodeURIComponent(returnTo)}` : ''
      }`
    : undefined;
  const lang = await pendingLanguage(ctx, request, reply, interaction);
  return securityKeyStep(ctx, request, reply, user, interaction, lang, {
    ...(codeLink ? { codeLink } : {}),
    ...(returnTo ? { returnTo } : {}),
  });
}

/**
 * Finishes the second step once a factor of `kind` was proved (also for factor kinds of other
 * modules, e.g. WebAuthn): a pending sign-in becomes a session whose `amr` has the kind's values
 * and `mfa` (RFC 8176); a live session gets them added (step-up). Then continues the
 * authorization request, /account, or shows "signed in".
 * @param who from `SecondStepService.who`
 * @param stepUpNext the pending request, or the account page, a step-up continues (a pending
 *   sign-in knows its own); absent: /account
 * @param asLink return where to continue (a path) instead of answering
 * @returns the reply, or the path when `asLink`; the expired page when the pending sign-in was
 *   finished by another request first.
 */
export async function completeSecondFactor(
  ctx: AccountMfaPageServices,
  request: FastifyRequest,
  reply: FastifyReply,
  browser: string,
  who: Who,
  kind: string,
  stepUpNext: { interaction: string } | { returnTo: string } | undefined,
  asLink = false,
): Promise<FastifyReply | string> {
  const lang = language(request);
  let next: Next;
  if (who.pending) {
    const p = who.pending;
    const finished = await ctx.secondStep.finishPending(browser, p, kind);
    if (!finished) return expiredPage(ctx, request, reply);
    const { user, amr } = finished;
    const interaction = p.interaction ? await ctx.interactions.get(p.interaction, browser) : undefined;
    const pending = p.interaction && interaction ? { id: p.interaction, interaction } : undefined;
    const how = { amr, idp: p.idp, tenant: p.tenant, endpoint: 'login' } as const;
    const signedIn = await finishSignIn(ctx, request, reply, user, how, pending);
    if ('denied' in signedIn) return signInDeniedPage(ctx, request, reply, pending, signedIn);
    if (pending) next = { interaction: pending.id };
    else next = p.returnTo ? { returnTo: p.returnTo } : { done: user.username };
  } else {
    if (!(await upgradeSession(ctx, request, reply, amrWith(who.session.amr, kind))))
      return expiredPage(ctx, request, reply);
    next = stepUpNext ?? { returnTo: ACCOUNT_PATH };
  }
  if ('interaction' in next) {
    const interaction = await ctx.interactions.get(next.interaction, browser);
    if (!interaction) return expiredPage(ctx, request, reply);
    const path = resumePath(next.interaction, interaction);
    return asLink ? path : reply.header('cache-control', 'no-store').redirect(`${ctx.basePath}${path}`, 303);
  }
  if ('returnTo' in next || asLink) {
    const path = 'returnTo' in next ? next.returnTo : ACCOUNT_PATH;
    return asLink ? path : reply.redirect(`${ctx.basePath}${path}`, 303);
  }
  return ctx.pages.send(reply, 'message', lang, {
    titleKey: 'signedInTitle',
    textKey: 'signedInAs',
    values: { user: next.done },
  });
}

/**
 * Who may add an authenticator app: this browser's pending sign-in when it may
 * (`FactorEnrollment.pendingMayEnroll`), else a live session allowed to change factors. Answers
 * the reply itself (expired page, or the account page's notice) and returns undefined otherwise.
 */
async function enrollmentWho(
  ctx: AccountMfaPageServices,
  request: FastifyRequest,
  reply: FastifyReply,
  browser: string,
): Promise<Who | undefined> {
  const pending = await ctx.mfa.pending(browser);
  if (pending) {
    if (await ctx.enrollment.pendingMayEnroll(pending)) return { pending };
    expiredPage(ctx, request, reply);
    return undefined;
  }
  const session = await changeAllowed(ctx, request, reply);
  return session ? { session } : undefined;
}

/**
 * The live session when it may change factors (`MfaService.mayChangeFactors`: recent, and using
 * the strongest kind the user holds). Otherwise answers with /account (its notice asks to sign in
 * again) or the login page, and returns undefined.
 */
async function changeAllowed(
  ctx: AccountMfaPageServices,
  request: FastifyRequest,
  reply: FastifyReply,
): Promise<Session | undefined> {
  const session = await sessionOf(ctx, request);
  if (!session) {
    reply.header('cache-control', 'no-store').redirect(`${ctx.basePath}${signInReturningTo(ACCOUNT_PATH)}`, 303);
    return undefined;
  }
  if (!(await ctx.mfa.mayChangeFactors(session))) {
    await accountPage(ctx, request, reply, session, undefined, 403);
    return undefined;
  }
  return session;
}

async function accountPage(
  ctx: AccountMfaPageServices,
  request: FastifyRequest,
  reply: FastifyReply,
  session: Session,
  notice: keyof Messages | undefined,
  status = 200,
): Promise<FastifyReply> {
  const lang = language(request);
  const user = await ctx.users.findBySubject(session.subjectId);
  const all = await ctx.mfa.listFactors(session.subjectId);
  const date = (t: number) => new Date(t * 1000).toISOString().slice(0, 10);
  // One list of every kind (authenticator apps, security keys, passkeys): "name (kind)" when named.
  const kindName = (kind: string) => ctx.pages.text(lang, (FACTOR_KINDS[kind] as { nameKey: keyof Messages }).nameKey);
  const factors = all
    .filter((f) => f.kind !== RECOVERY_KIND && FACTOR_KINDS[f.kind])
    .map((f) => ({
      id: f.id,
      name: f.label ? `${f.label} (${kindName(f.kind)})` : kindName(f.kind),
      date: date(f.createdAt),
    }));
  return ctx.pages.send(
    reply,
    'account',
    lang,
    {
      csrf: reply.generateCsrf(),
      username: user?.username ?? session.subjectId,
      factors,
      adds: Object.entries(FACTOR_KINDS).flatMap(([kind, k]) =>
        k.add && ctx.mfa.hasKind(kind) ? [{ path: k.add.path, label: ctx.pages.text(lang, k.add.labelKey) }] : [],
      ),
      recoveryLeft: all.filter((f) => f.kind === RECOVERY_KIND && f.counter === 0).length,
      hasSecond: all.some((f) => FACTOR_KINDS[f.kind]?.secondFactor),
      canChange: await ctx.mfa.mayChangeFactors(session),
      reauth: signInReturningTo(ACCOUNT_PATH),
      notice: notice ? ctx.pages.text(lang, notice) : undefined,
      ...(await addressOf(ctx, session.subjectId, user?.claims)),
    },
    status,
  );
}

/**
 * The user's address as the account page shows it: `email` and whether it is confirmed, and
 * `verifyEmail` when a new confirmation link can be asked for (a stored user's unconfirmed
 * address, with config `email`: `/account/email/verify`).
 */
async function addressOf(
  ctx: AccountMfaPageServices,
  subjectId: string,
  claims: Record<string, unknown> | undefined,
): Promise<{ email?: string; emailVerified?: boolean; verifyEmail?: boolean }> {
  const email = claims?.email;
  if (typeof email !== 'string') return {};
  const emailVerified = claims?.email_verified === true;
  const verifyEmail = !emailVerified && ctx.email !== undefined && (await ctx.account.kind(subjectId)) === 'stored';
  return { email, emailVerified, verifyEmail };
}

/**
 * The one-time code form of the second step.
 * @param step the pending request it continues, or the account page a live session's step-up
 *   returns to (`returnPath`)
 */
async function mfaPage(
  ctx: AccountMfaPageServices,
  request: FastifyRequest,
  reply: FastifyReply,
  step: { interaction: string | undefined; returnTo: string | undefined },
  error: 'invalidOneTimeCode' | 'tooManyAttempts' | undefined,
  status = 200,
): Promise<FastifyReply> {
  const { interaction, returnTo } = step;
  const lang = await pendingLanguage(ctx, request, reply, interaction);
  return ctx.pages.send(
    reply,
    'mfa',
    lang,
    { csrf: reply.generateCsrf(), interaction, returnTo, error: error ? ctx.pages.text(lang, error) : undefined },
    status,
    interaction !== undefined,
  );
}

async function totpPage(
  ctx: AccountMfaPageServices,
  request: FastifyRequest,
  reply: FastifyReply,
  who: Who,
  interaction: string | undefined,
  setup: TotpSetup,
  error: 'invalidOneTimeCode' | 'tooManyAttempts' | undefined,
  status = 200,
): Promise<FastifyReply> {
  const lang = await pendingLanguage(ctx, request, reply, interaction);
  return ctx.pages.send(
    reply,
    'totp',
    lang,
    {
      csrf: reply.generateCsrf(),
      qr: setup.qr,
      // Grouped by four for reading and typing; apps ignore the spaces.
      secret: setup.secret.replace(/(.{4})(?=.)/g, '$1 '),
      interaction,
      required: who.pending !== undefined || interaction !== undefined,
      error: error ? ctx.pages.text(lang, error) : undefined,
    },
    status,
    interaction !== undefined,
  );
}

/** The id when it names a live pending request of this browser, else undefined. */
async function liveInteraction(
  ctx: AccountMfaPageServices,
  id: string | undefined,
  browser: string,
): Promise<string | undefined> {
  return id !== undefined && (await ctx.interactions.get(id, browser)) ? id : undefined;
}
