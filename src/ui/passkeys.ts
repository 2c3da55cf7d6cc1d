/**
 * Passkeys and security keys in the browser (ceremonies in `mfa/webauthn.ts`, their
 * limits, pending step and events in `mfa/passkey-ceremonies.ts`, `ctx.passkeys`):
 * - `/account/passkeys`: the signed-in user's credentials, added (passkey or security key) and
 *   removed there; changes need what every factor change needs (`MfaService.mayChangeFactors`:
 *   a recent sign-in that used the strongest kind the user holds).
 * - "Sign in with a passkey" on the login page: a passwordless sign-in (`/account/passkeys/login`),
 *   with conditional mediation (autofill) where the browser supports it.
 * - The security key step after the password (`securityKeyStep`, `/account/passkeys/second-factor`)
 *   for users who registered one.
 * The ceremonies' options come from POST endpoints that answer JSON (`.../options`); the results
 * come back as the hidden form field `response` of an ordinary form POST. Every POST carries the
 * CSRF token and a same-origin `Origin` when the browser sends one.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Services } from '../services.js';
import { browserOf, sessionOf } from '../interaction/browser.js';
import { single } from '../http/fields.js';
import { expiredPage } from './error-page.js';
import { language } from './language.js';
import type { Interaction } from '../stores/records/interactions.js';
import { OAuthError } from '../protocol/errors.js';
import type { Params } from '../protocol/params.js';
import { originOf, sendOAuthError } from '../http/request.js';
import { clearSecurityKeyStepCookie, securityKeyStepCookie, setSecurityKeyStepCookie } from '../http/cookies.js';
import type { WebAuthnPending } from '../mfa/passkey-ceremonies.js';
import type { User } from '../users/users.js';
import { continueAfterSignIn, loginPage } from './sign-in.js';
import { formOf, formRoute } from './forms.js';
import { PASSKEYS_SCRIPT } from '../page-kit/passkeys-pages.js';
import { refused } from './attempts.js';
import { DirectoryUnavailable } from '../users/directory.js';
import type { SignInPageServices } from './sign-in.js';
import type { ErrorPageServices } from './error-page.js';
import type { BrowserServices } from '../interaction/browser.js';

/** The services this module uses. */
export type PasskeysPageServices = Pick<
  Services,
  'basePath' | 'config' | 'interactions' | 'issuer' | 'mfa' | 'pages' | 'passkeys' | 'users'
> &
  BrowserServices &
  ErrorPageServices &
  SignInPageServices;

/** The UMD bundle of `@simplewebauthn/browser`, read once from node_modules. */
function browserBundle(): string {
  const entry = createRequire(import.meta.url).resolve('@simplewebauthn/browser');
  // entry: <package>/script/index.js; the bundle: <package>/dist/bundle/index.umd.min.js
  return readFileSync(join(dirname(dirname(entry)), 'dist', 'bundle', 'index.umd.min.js'), 'utf8');
}

/**
 * The security key step after a right password, or as the step-up of a live session: when the
 * step applies (`PasskeyCeremonies.startStep`: WebAuthn enabled and the user has a credential),
 * sets its cookie and sends its page. The session starts only after the key.
 * @param options.codeLink where the page offers a one-time code instead (the user also has TOTP
 *   or recovery codes); `returnTo`: the account page to continue at afterwards
 * @returns true when the step page was sent (the caller returns), false to sign in at once.
 */
export async function securityKeyStep(
  ctx: PasskeysPageServices,
  request: FastifyRequest,
  reply: FastifyReply,
  user: User,
  interactionId: string | undefined,
  lang: string,
  options: { codeLink?: string; returnTo?: string } = {},
): Promise<boolean> {
  const started = await ctx.passkeys.startStep(user, browserOf(ctx, request, reply), interactionId, options);
  if (!started) return false;
  setSecurityKeyStepCookie(reply, ctx.issuer, started.cookie);
  await stepPage(ctx, reply, started.pending, lang, undefined);
  return true;
}

async function stepPage(
  ctx: PasskeysPageServices,
  reply: FastifyReply,
  pending: WebAuthnPending,
  lang: string,
  error: string | undefined,
  status = 200,
): Promise<FastifyReply> {
  const interaction = pending.interaction
    ? await ctx.interactions.get(pending.interaction, pending.browser)
    : undefined;
  return ctx.pages.send(
    reply,
    'passkey-step',
    lang,
    { csrf: reply.generateCsrf(), uiLocales: interaction?.request.uiLocales, error, codeLink: pending.codeLink },
    status,
    interaction?.request.target !== undefined,
  );
}

/** Registers the passkey routes, the page script and the browser bundle. */
export function passkeyPages(app: FastifyInstance, ctx: PasskeysPageServices): void {
  const bundle = browserBundle();
  const asset = (reply: FastifyReply, body: string) =>
    reply.header('cache-control', 'public, max-age=3600').type('text/javascript; charset=utf-8').send(body);
  app.get('/assets/webauthn-browser.js', async (_request, reply) => asset(reply, bundle));
  app.get('/assets/passkeys.js', async (_request, reply) => asset(reply, PASSKEYS_SCRIPT));
  if (!ctx.config.webauthn.enabled) return;

  // A refused form: JSON for the routes the page's script fetches, else the error page (in the
  // language of the `ui_locales` the sign-in forms carry).
  const scriptPost = formRoute(app, ctx, 'json');
  const accountPost = formRoute(app, ctx);
  const signInPost = formRoute(app, ctx, 'page-in-form-locales');
  const json = (reply: FastifyReply, body: unknown) => reply.header('cache-control', 'no-store').send(body);
  /**
   * A route the page's script fetches as JSON (the ceremonies' options): a user directory that
   * cannot answer is a JSON 503 here (the script shows its own error), not the page every other
   * route renders for it.
   */
  const jsonRoute =
    (handler: (request: FastifyRequest, reply: FastifyReply) => Promise<FastifyReply>) =>
    async (request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> => {
      try {
        return await handler(request, reply);
      } catch (err) {
        if (!(err instanceof DirectoryUnavailable)) throw err;
        request.log.error({ err, directory: err.directory, reason: err.reason }, 'user directory unavailable');
        return sendOAuthError(reply, err);
      }
    };
  const parseResponse = (body: Params): unknown => {
    const raw = single(body, 'response') ?? '';
    if (raw.length === 0) return undefined;
    try {
      return JSON.parse(raw) as unknown;
    } catch {
      return null;
    }
  };

  /**
   * The signed-in user of the request and whether the session may change credentials
   * (`MfaService.mayChangeFactors`).
   */
  const signedIn = async (request: FastifyRequest) => {
    const session = await sessionOf(ctx, request);
    if (!session) return undefined;
    const user = await ctx.users.findBySubject(session.subjectId);
    if (!user?.isActive) return undefined;
    return { session, user, canChange: await ctx.mfa.mayChangeFactors(session) };
  };

  const listPage = async (
    request: FastifyRequest,
    reply: FastifyReply,
    notice?: 'passkeyRegistered' | 'passkeyRemoved',
    error?: 'passkeyFailed' | 'passkeyNeedsScript',
    status = 200,
  ) => {
    const lang = language(request);
    const current = await signedIn(request);
    if (!current)
      return ctx.pages.send(reply, 'message', lang, { titleKey: 'passkeysTitle', textKey: 'notSignedIn' }, 401);
    const day = (t: number) => new Date(t * 1000).toISOString().slice(0, 10);
    const credentials = (await ctx.passkeys.list(current.user.subjectId)).map((c) => ({
      id: c.id,
      name: c.name,
      details: [
        ctx.pages.text(lang, c.kind === 'passkey' ? 'passkeyKindPasskey' : 'passkeyKindSecurityKey'),
        ctx.pages.text(lang, 'passkeyCreated').replace('{date}', day(c.createdAt)),
        ...(c.lastUsedAt ? [ctx.pages.text(lang, 'passkeyLastUsed').replace('{date}', day(c.lastUsedAt))] : []),
      ].join(' · '),
      removeLabel: ctx.pages.text(lang, 'removeCredentialNamed').replace('{name}', c.name),
    }));
    return ctx.pages.send(
      reply,
      'passkeys',
      lang,
      {
        csrf: reply.generateCsrf(),
        credentials,
        canChange: current.canChange,
        notice: notice ? ctx.pages.text(lang, notice) : undefined,
        error: error ? ctx.pages.text(lang, error) : undefined,
      },
      status,
    );
  };

  app.get('/account/passkeys', async (request, reply) => {
    const done = (request.query as Record<string, unknown>).done;
    return listPage(
      request,
      reply,
      done === 'added' ? 'passkeyRegistered' : done === 'removed' ? 'passkeyRemoved' : undefined,
    );
  });

  // Registration options (JSON): a session that may change credentials, a CSRF token, and the kind.
  app.post(
    '/account/passkeys/options',
    scriptPost,
    jsonRoute(async (request, reply) => {
      const current = await signedIn(request);
      if (!current?.canChange)
        return sendOAuthError(reply, new OAuthError('login_required', 'sign in again to change credentials', 403));
      const kind = single(formOf(request), 'kind');
      if (kind !== 'passkey' && kind !== 'security-key')
        return sendOAuthError(reply, new OAuthError('invalid_request', 'kind must be passkey or security-key'));
      return json(
        reply,
        await ctx.passkeys.registrationOptions(current.user, kind, browserOf(ctx, request, reply), request.ip),
      );
    }),
  );

  app.post('/account/passkeys/register', accountPost, async (request, reply) => {
    const current = await signedIn(request);
    if (!current?.canChange) return listPage(request, reply, undefined, undefined, current ? 403 : 401);
    const body = formOf(request);
    const kind = single(body, 'kind') === 'security-key' ? 'security-key' : 'passkey';
    const response = parseResponse(body);
    if (response === undefined) return listPage(request, reply, undefined, 'passkeyNeedsScript', 400);
    if (
      !(await ctx.passkeys.register(
        current.user.subjectId,
        kind,
        response,
        browserOf(ctx, request, reply),
        single(body, 'name') ?? '',
        originOf(request),
      ))
    )
      return listPage(request, reply, undefined, 'passkeyFailed', 400);
    return reply.redirect(`${ctx.basePath}/account/passkeys?done=added`, 303);
  });

  app.post('/account/passkeys/remove', accountPost, async (request, reply) => {
    const current = await signedIn(request);
    if (!current?.canChange) return listPage(request, reply, undefined, undefined, current ? 403 : 401);
    if (!(await ctx.passkeys.remove(current.user.subjectId, single(formOf(request), 'id') ?? '', originOf(request))))
      return listPage(request, reply, undefined, 'passkeyFailed', 404);
    return reply.redirect(`${ctx.basePath}/account/passkeys?done=removed`, 303);
  });

  // Passkey sign-in options (JSON): anyone with the login page's CSRF token.
  app.post(
    '/account/passkeys/login/options',
    scriptPost,
    jsonRoute(async (request, reply) => {
      return json(reply, await ctx.passkeys.passkeyOptions(browserOf(ctx, request, reply), request.ip));
    }),
  );

  app.post('/account/passkeys/login', signInPost, async (request, reply) => {
    const body = formOf(request);
    const lang = language(request, single(body, 'ui_locales'));
    const id = single(body, 'interaction');
    const browser = browserOf(ctx, request, reply);
    const interaction = id === undefined ? undefined : await ctx.interactions.get(id, browser);
    if (id !== undefined && !interaction) return expiredPage(ctx, request, reply);
    const response = parseResponse(body);
    if (response === undefined) return loginPage(ctx, request, reply, id, interaction, '', 'passkeyNeedsScript', 400);
    const tenant = interaction ? interaction.request.tenant : null;
    const signIn = await ctx.passkeys.signIn(response, browser, tenant, {
      origin: originOf(request),
      ...(interaction ? { clientId: interaction.request.clientId } : {}),
    });
    if (signIn.outcome === 'refused') {
      refused(reply, signIn.refusal);
      return loginPage(ctx, request, reply, id, interaction, '', 'tooManyAttempts', 429);
    }
    if (signIn.outcome === 'failed') return loginPage(ctx, request, reply, id, interaction, '', 'passkeyFailed', 400);
    return continueAfterSignIn(
      ctx,
      request,
      reply,
      signIn.user,
      signIn.amr,
      id && interaction ? { id, interaction } : undefined,
      lang,
    );
  });

  /** The live security key step of the request's cookie, started in this browser, and that cookie. */
  const stepOf = async (request: FastifyRequest, reply: FastifyReply) => {
    const cookie = securityKeyStepCookie(request);
    const pending = await ctx.passkeys.step(cookie, () => browserOf(ctx, request, reply));
    return cookie !== undefined && pending ? { cookie, pending } : undefined;
  };

  app.post(
    '/account/passkeys/second-factor/options',
    scriptPost,
    jsonRoute(async (request, reply) => {
      const step = await stepOf(request, reply);
      if (!step) return sendOAuthError(reply, new OAuthError('login_required', 'the sign-in has expired', 403));
      return json(reply, await ctx.passkeys.stepOptions(step.pending, request.ip));
    }),
  );

  app.post('/account/passkeys/second-factor', signInPost, async (request, reply) => {
    const body = formOf(request);
    const lang = language(request, single(body, 'ui_locales'));
    const step = await stepOf(request, reply);
    if (!step) return expiredPage(ctx, request, reply);
    const { cookie, pending } = step;
    const interaction: Interaction | undefined = pending.interaction
      ? await ctx.interactions.get(pending.interaction, pending.browser)
      : undefined;
    if (pending.interaction && !interaction) return expiredPage(ctx, request, reply);
    const id = pending.interaction || undefined;
    if (single(body, 'button') === 'cancel') {
      await ctx.passkeys.cancelStep(cookie);
      clearSecurityKeyStepCookie(reply, ctx.issuer);
      return reply.redirect(`${ctx.basePath}/account/login${id ? `?interaction=${encodeURIComponent(id)}` : ''}`, 303);
    }
    const response = parseResponse(body);
    if (response === undefined)
      return stepPage(ctx, reply, pending, lang, ctx.pages.text(lang, 'passkeyNeedsScript'), 400);
    const done = await ctx.passkeys.completeStep(cookie, pending, response, {
      origin: originOf(request),
      ...(interaction ? { clientId: interaction.request.clientId } : {}),
    });
    if (done.outcome === 'refused') {
      refused(reply, done.refusal);
      return stepPage(ctx, reply, pending, lang, ctx.pages.text(lang, 'tooManyAttempts'), 429);
    }
    if (done.outcome === 'failed')
      return stepPage(ctx, reply, pending, lang, ctx.pages.text(lang, 'passkeyFailed'), 400);
    if (done.outcome === 'used') return expiredPage(ctx, request, reply);
    clearSecurityKeyStepCookie(reply, ctx.issuer);
    if (done.outcome === 'ended') return expiredPage(ctx, request, reply);
    return continueAfterSignIn(
      ctx,
      request,
      reply,
      done.user,
      done.amr,
      id && interaction ? { id, interaction } : undefined,
      lang,
      pending.returnTo,
    );
  });
}
