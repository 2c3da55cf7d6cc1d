/**
 * The login page (`/account/login`) and the logout confirmation (`/account/logout`) of DESIGN §6.
 * Login checks the password against the user store (equal time and equal text for unknown users
 * and wrong passwords; failures rate-limited per user and address), starts a new session and
 * resumes the pending authorization request by its interaction id.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { SigilContext } from '../context.js';
import { sendErrorToClient } from '../http/authorization-response.js';
import { queryString, single } from '../http/fields.js';
import { expiredPage, sendErrorPage } from './error-page.js';
import { language } from './language.js';
import { resumePath } from '../interaction/outcomes.js';
import type { Interaction } from '../stores/records/interactions.js';
import { OAuthError } from '../protocol/errors.js';
import { userAttempt } from '../limits/failure-limiter.js';
import { Params } from '../protocol/params.js';
import { matchRedirectUri } from '../validation/redirect-uri.js';
import { type LogoutRequest, logoutRedirect, validateLogoutRequest } from '../logout/logout-request.js';
import { sendLoggedOut } from './signed-out.js';
import { checkCsrf } from './csrf.js';
import { answerDevice } from './device.js';
import { secondStepAfterPassword } from './account-mfa.js';
import type { User } from '../users/users.js';
import { limiterAllows } from './attempts.js';

/** Registers the login and logout pages. */
export function accountPages(app: FastifyInstance, ctx: SigilContext): void {
  const origin = new URL(ctx.issuer).origin;

  app.get('/account/login', async (request, reply) => {
    const id = queryString(request, 'interaction');
    const browser = ctx.sessions.browserId(request, reply);
    const interaction = id === undefined ? undefined : await ctx.interactions.get(id, browser);
    if (id !== undefined && !interaction) return expiredPage(ctx, request, reply);
    return loginPage(ctx, request, reply, id, interaction, interaction?.request.loginHint ?? '', undefined);
  });

  app.post('/account/login', async (request, reply) => {
    const body = request.body instanceof Params ? request.body : Params.empty();
    const lang = language(request, single(body, 'ui_locales'));
    if (!checkCsrf(app, request, reply, origin))
      return sendErrorPage(ctx, reply, new OAuthError('invalid_request', 'the form has expired, please try again'), lang, 403);
    const id = single(body, 'interaction');
    const browser = ctx.sessions.browserId(request, reply);
    const interaction = id === undefined ? undefined : await ctx.interactions.get(id, browser);
    if (id !== undefined && !interaction) return expiredPage(ctx, request, reply);
    if (single(body, 'button') === 'cancel') {
      if (id && interaction) return denyToClient(ctx, request, reply, id, interaction);
      return loginPage(ctx, request, reply, id, interaction, '', undefined);
    }
    const username = single(body, 'username') ?? '';
    const password = single(body, 'password') ?? '';
    const tenant = interaction ? interaction.request.tenant : null;
    const attempt = userAttempt(request.ip, tenant, username);
    if (!(await limiterAllows(ctx, reply, attempt))) return loginPage(ctx, request, reply, id, interaction, username, 'tooManyAttempts', 429);
    const user = username.length > 0 && username.length <= 100 ? await ctx.users.checkPassword(username, password, tenant) : undefined;
    if (!user || !user.isActive) {
      await ctx.limiter.failed(attempt);
      ctx.events.emit({
        name: 'user_login_failed',
        endpoint: 'login',
        ...(interaction ? { clientId: interaction.request.clientId } : {}),
        remoteAddress: request.ip,
        ...(user ? { subjectId: user.subjectId, errorDescription: 'inactive user' } : {}),
      });
      return loginPage(ctx, request, reply, id, interaction, username, 'invalidCredentials');
    }
    // A user with a second factor (a one-time code or a security key), or a client or request
    // needing one: the second step first (src/mfa/factors.ts, MfaService.nextStep).
    const toAccount = !id && single(body, 'return') === 'account';
    const first = { subjectId: user.subjectId, tenant: user.tenant, amr: ['pwd'], idp: 'local', ...(id ? { interaction: id } : {}), ...(toAccount ? { toAccount } : {}) };
    const second = await secondStepAfterPassword(ctx, request, reply, first, interaction);
    if (second) return second;
    return finishSignIn(ctx, request, reply, user, ['pwd'], id, interaction, lang, toAccount);
  });

  app.get('/account/logout', async (request, reply) => {
    // Nobody signed in: nothing to confirm (RP-Initiated Logout §4, checklist LO-11).
    if (!(await ctx.sessions.current(request)))
      return ctx.pages.send(reply, 'message', language(request), { titleKey: 'signedOutTitle', textKey: 'signedOut' });
    return sendLogoutPrompt(ctx, reply, language(request), {});
  });

  app.post('/account/logout', async (request, reply) => {
    const body = request.body instanceof Params ? request.body : Params.empty();
    const lang = language(request, single(body, 'ui_locales'));
    if (!checkCsrf(app, request, reply, origin))
      return sendErrorPage(ctx, reply, new OAuthError('invalid_request', 'the form has expired, please try again'), lang, 403);
    // The form carries the end-session request along (client_id, post_logout_redirect_uri, state): checked again.
    let req: LogoutRequest;
    try {
      req = await validateLogoutRequest(ctx, body);
    } catch (err) {
      if (!(err instanceof OAuthError)) throw err;
      return sendErrorPage(ctx, reply, err, lang, 400);
    }
    const ended = await ctx.sessions.end(request, reply);
    return sendLoggedOut(ctx, reply, lang, ended, logoutRedirect(req));
  });
}

/**
 * Sends the logout confirmation (DESIGN §6), carrying a validated end-session request's client,
 * post-logout redirect URI and state in hidden fields.
 */
export function sendLogoutPrompt(ctx: SigilContext, reply: FastifyReply, lang: string, req: LogoutRequest): FastifyReply {
  const fields: Record<string, string> = {};
  if (req.client) fields.client_id = req.client.clientId;
  if (req.postLogoutRedirectUri !== undefined) fields.post_logout_redirect_uri = req.postLogoutRedirectUri;
  if (req.state !== undefined) fields.state = req.state;
  if (req.uiLocales !== undefined) fields.ui_locales = req.uiLocales;
  // A confirmation that ends in a redirect to the client carries no CSP form-action (see Pages.send).
  return ctx.pages.send(reply, 'logout', lang, { csrf: reply.generateCsrf(), fields }, 200, req.postLogoutRedirectUri !== undefined);
}

/**
 * Ends a successful sign-in (password, or a WebAuthn step): starts a new session with `amr`
 * (RFC 8176), records `user_login_succeeded`, then resumes the pending authorization request
 * `id` (303 to its resume path) or, without one, goes to /account (`toAccount`: the sign-in
 * started there) or says who is signed in.
 */
export async function finishSignIn(
  ctx: SigilContext,
  request: FastifyRequest,
  reply: FastifyReply,
  user: User,
  amr: string[],
  id: string | undefined,
  interaction: Interaction | undefined,
  lang: string,
  toAccount = false,
): Promise<FastifyReply> {
  const session = await ctx.sessions.create(request, reply, user, { amr, idp: 'local', tenant: user.tenant });
  ctx.events.emit({ name: 'user_login_succeeded', endpoint: 'login', subjectId: user.subjectId, ...(interaction ? { clientId: interaction.request.clientId } : {}) });
  if (id && interaction) {
    await ctx.interactions.update(id, { ...interaction, loginAt: session.authTime });
    return reply.redirect(resumePath(id, interaction), 303);
  }
  if (toAccount) return reply.redirect('/account', 303);
  return ctx.pages.send(reply, 'message', lang, { titleKey: 'signedInTitle', textKey: 'signedInAs', values: { user: user.username } });
}

/** Answers a pending request with `access_denied` (RFC 6749 §4.1.2.1) after cancel or "no". */
export async function denyToClient(
  ctx: SigilContext,
  request: FastifyRequest,
  reply: FastifyReply,
  id: string,
  interaction: Interaction,
): Promise<FastifyReply> {
  // A device's request (RFC 8628 §3.3) has no redirect URI: the device learns of the denial by polling.
  if (interaction.device) return answerDevice(ctx, request, reply, id, interaction, undefined);
  if (!(await ctx.interactions.finish(id))) return expiredPage(ctx, request, reply);
  // The request was validated when it started; the client or its redirect URI may have gone since.
  const { clientId, target } = interaction.request;
  const client = ctx.clients.get(clientId);
  if (!client || !target || !matchRedirectUri(target.redirectUri, client.redirectUris)) return expiredPage(ctx, request, reply);
  ctx.events.emit({ name: 'token_issue_failed', endpoint: 'authorize', clientId, error: 'access_denied' });
  return sendErrorToClient(ctx, reply, target, new OAuthError('access_denied', 'the user denied the request'));
}

/** Renders the login page (DESIGN §6), with an error text when a sign-in failed. */
export function loginPage(
  ctx: SigilContext,
  request: FastifyRequest,
  reply: FastifyReply,
  id: string | undefined,
  interaction: Interaction | undefined,
  username: string,
  error: 'invalidCredentials' | 'tooManyAttempts' | 'passkeyFailed' | 'passkeyNeedsScript' | undefined,
  status = 200,
): FastifyReply {
  const pending = interaction?.request;
  const client = pending ? ctx.clients.get(pending.clientId) : undefined;
  const lang = language(request, pending?.uiLocales);
  return ctx.pages.send(
    reply,
    'login',
    lang,
    {
      csrf: reply.generateCsrf(),
      interaction: id,
      uiLocales: pending?.uiLocales,
      // Continue at /account after signing in (its "sign in again" link); a fixed value, no URL.
      toAccount: id === undefined && (queryString(request, 'return') === 'account' || (request.body instanceof Params && single(request.body, 'return') === 'account')),
      username,
      clientName: client ? (client.clientName ?? client.clientId) : undefined,
      tenant: pending?.tenant ?? null,
      // The upstream providers the client may use (federation), as links that keep the request.
      providers:
        id && client
          ? ctx.upstream.allowedFor(client.identityProviderRestrictions).map((p) => ({
              label: p.displayName ?? p.name,
              href: `/federation/${encodeURIComponent(p.name)}/login?interaction=${encodeURIComponent(id)}`,
            }))
          : [],
      error: error ? ctx.pages.text(lang, error) : undefined,
      passkeys: ctx.config.webauthn.enabled, // "Sign in with a passkey" (issue 12, src/ui/passkeys.ts)
    },
    status,
    pending?.target !== undefined,
  );
}
