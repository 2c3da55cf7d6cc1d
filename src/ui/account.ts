/**
 * The login page (`/account/login`) and the logout confirmation (`/account/logout`).
 * Login checks the password against the user store (equal time and equal text for unknown users
 * and wrong passwords; failures rate-limited per user and address), starts a new session and
 * resumes the pending authorization request by its interaction id. A temporary password an
 * administrator set is replaced first (`password-change-required.ts`).
 */
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { Services } from '../services.js';
import { browserOf, passwordCheckContext, rememberKnownBrowser, sessionOf, signOut } from '../interaction/browser.js';
import { queryString, single } from '../http/fields.js';
import { expiredPage, sendErrorPage } from './error-page.js';
import { language } from './language.js';
import { OAuthError } from '../protocol/errors.js';
import { userAttempt } from '../limits/failure-limiter.js';
import { type LogoutRequest, logoutRedirect, validateLogoutRequest } from '../logout/logout-request.js';
import { type SignedOutPageServices, sendLoggedOut } from './signed-out.js';
import { formOf, formRoute } from './forms.js';
import { secondStepAfterPassword } from './account-mfa.js';
import { denyPage } from './outcome-pages.js';
import { continueAfterSignIn, homeRealmRedirect, loginPage } from './sign-in.js';
import { limiterAllows, refused } from './attempts.js';
import { originOf } from '../http/request.js';
import { DirectoryUnavailable } from '../users/directory.js';
import { MAX_USERNAME_LENGTH } from '../config/schema.js';
import type { LogoutRequestServices } from '../logout/logout-request.js';
import type { SignInPageServices } from './sign-in.js';
import type { AccountMfaPageServices } from './account-mfa.js';
import type { ErrorPageServices } from './error-page.js';
import type { BrowserServices } from '../interaction/browser.js';
import { returnPath } from './return-path.js';
import {
  passwordChangeRequiredPages,
  type PasswordChangeRequiredServices,
  passwordChangeStep,
} from './password-change-required.js';

/** The services this module uses. */
export type AccountPageServices = Pick<Services, 'events' | 'interactions' | 'issuer' | 'limiter' | 'pages' | 'users'> &
  AccountMfaPageServices &
  BrowserServices &
  ErrorPageServices &
  LogoutRequestServices &
  PasswordChangeRequiredServices &
  SignedOutPageServices &
  SignInPageServices;

/** Registers the login and logout pages. */
export function accountPages(app: FastifyInstance, ctx: AccountPageServices): void {
  const form = formRoute(app, ctx, 'page-in-form-locales');
  passwordChangeRequiredPages(app, ctx);

  app.get('/account/login', async (request, reply) => {
    const id = queryString(request, 'interaction');
    const browser = browserOf(ctx, request, reply);
    const interaction = id === undefined ? undefined : await ctx.interactions.get(id, browser);
    if (id !== undefined && !interaction) return expiredPage(ctx, request, reply);
    // A login_hint at an organization's domain goes to its provider as a typed address would.
    const hint = interaction?.request.loginHint ?? '';
    return (
      homeRealmRedirect(ctx, reply, id, interaction, hint) ??
      loginPage(ctx, request, reply, id, interaction, hint, undefined)
    );
  });

  app.post('/account/login', form, async (request, reply) => {
    const body = formOf(request);
    const lang = language(request, single(body, 'ui_locales'));
    const id = single(body, 'interaction');
    const browser = browserOf(ctx, request, reply);
    const interaction = id === undefined ? undefined : await ctx.interactions.get(id, browser);
    if (id !== undefined && !interaction) return expiredPage(ctx, request, reply);
    if (single(body, 'button') === 'cancel') {
      if (id && interaction) return denyPage(ctx, request, reply, { id, interaction });
      return loginPage(ctx, request, reply, id, interaction, '', undefined);
    }
    // Identity-first: the password step's way back to the first step, for another username.
    if (single(body, 'button') === 'back') return loginPage(ctx, request, reply, id, interaction, '', undefined);
    const username = single(body, 'username') ?? '';
    // Identity-first: the address alone, to its organization's provider or on to the password step.
    if (single(body, 'button') === 'next')
      return (
        homeRealmRedirect(ctx, reply, id, interaction, username) ??
        loginPage(ctx, request, reply, id, interaction, username, undefined)
      );
    const password = single(body, 'password') ?? '';
    const tenant = interaction ? interaction.request.tenant : null;
    const attempt = userAttempt(request.ip, tenant, username);
    if (!(await limiterAllows(ctx, reply, attempt)))
      return loginPage(ctx, request, reply, id, interaction, username, 'tooManyAttempts', 429);
    let user;
    try {
      user =
        username.length > 0 && username.length <= MAX_USERNAME_LENGTH && password.length <= 1024
          ? await ctx.users.checkPassword(username, password, tenant, await passwordCheckContext(ctx, request))
          : undefined;
    } catch (err) {
      // An LDAP directory's cap of wrong passwords (maxFailedBinds): the limiter's answer.
      if (err instanceof OAuthError && err.status === 429) {
        refused(reply, err);
        return loginPage(ctx, request, reply, id, interaction, username, 'tooManyAttempts', 429);
      }
      // A user directory that cannot answer: no failure counted, nothing stored.
      if (!(err instanceof DirectoryUnavailable)) throw err;
      request.log.error({ err, directory: err.directory, reason: err.reason }, 'user directory unavailable');
      return loginPage(ctx, request, reply, id, interaction, username, 'signInUnavailable', 503);
    }
    if (!user?.isActive) {
      await ctx.limiter.failed(attempt);
      ctx.events.emit({
        name: 'user_login_failed',
        endpoint: 'login',
        method: 'password',
        ...(interaction ? { clientId: interaction.request.clientId } : {}),
        ...originOf(request),
        ...(user ? { subjectId: user.subjectId, errorDescription: 'inactive user' } : {}),
      });
      return loginPage(ctx, request, reply, id, interaction, username, 'invalidCredentials');
    }
    // The browser proved the password: from now on it has its own share of the account's wrong
    // passwords at a directory that caps them (knownBrowserBinds), whatever the next step brings.
    await rememberKnownBrowser(ctx, reply, user);
    // A user with a second factor (a one-time code or a security key), or a client or request
    // needing one: the second step first (src/mfa/factors.ts, MfaService.nextStep).
    const returnTo = id ? undefined : returnPath(single(body, 'return'));
    const first = {
      subjectId: user.subjectId,
      tenant: user.tenant,
      amr: ['pwd'],
      idp: 'local',
      ...(id ? { interaction: id } : {}),
      ...(returnTo ? { returnTo } : {}),
    };
    // A temporary password an administrator set: a new one first, before anything else is issued.
    if (await passwordChangeStep(ctx, request, reply, first, user)) return reply;
    if (await secondStepAfterPassword(ctx, request, reply, first, interaction)) return reply;
    return continueAfterSignIn(
      ctx,
      request,
      reply,
      user,
      ['pwd'],
      id && interaction ? { id, interaction } : undefined,
      lang,
      returnTo,
    );
  });

  app.get('/account/logout', async (request, reply) => {
    // Nobody signed in: nothing to confirm (RP-Initiated Logout §4).
    if (!(await sessionOf(ctx, request)))
      return ctx.pages.send(reply, 'message', language(request), { titleKey: 'signedOutTitle', textKey: 'signedOut' });
    return sendLogoutPrompt(ctx, reply, language(request), {});
  });

  app.post('/account/logout', form, async (request, reply) => {
    const body = formOf(request);
    const lang = language(request, single(body, 'ui_locales'));
    // The form carries the end-session request along (client_id, post_logout_redirect_uri, state): checked again.
    let req: LogoutRequest;
    try {
      req = await validateLogoutRequest(ctx, body);
    } catch (err) {
      if (!(err instanceof OAuthError)) throw err;
      return sendErrorPage(ctx, reply, err, lang, 400);
    }
    const ended = await signOut(ctx, request, reply);
    return sendLoggedOut(ctx, reply, lang, ended, logoutRedirect(req));
  });
}

/**
 * Sends the logout confirmation, carrying a validated end-session request's client,
 * post-logout redirect URI and state in hidden fields.
 */
export function sendLogoutPrompt(
  ctx: AccountPageServices,
  reply: FastifyReply,
  lang: string,
  req: LogoutRequest,
): FastifyReply {
  const fields: Record<string, string> = {};
  if (req.client) fields.client_id = req.client.clientId;
  if (req.postLogoutRedirectUri !== undefined) fields.post_logout_redirect_uri = req.postLogoutRedirectUri;
  if (req.state !== undefined) fields.state = req.state;
  if (req.uiLocales !== undefined) fields.ui_locales = req.uiLocales;
  // A confirmation that ends in a redirect to the client carries no CSP form-action (see Pages.send).
  return ctx.pages.send(
    reply,
    'logout',
    lang,
    { csrf: reply.generateCsrf(), fields },
    200,
    req.postLogoutRedirectUri !== undefined,
  );
}
