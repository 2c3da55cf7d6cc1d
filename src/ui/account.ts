/**
 * The login page (`/account/login`) and the logout confirmation (`/account/logout`) of DESIGN §6.
 * Login checks the password against the user store (equal time and equal text for unknown users
 * and wrong passwords; failures rate-limited per user and address), starts a new session and
 * resumes the pending authorization request by its interaction id.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { SigilContext } from '../context.js';
import { expiredPage, language } from '../endpoints/authorize.js';
import { sendErrorPage, sendErrorToClient } from '../endpoints/authorize-response.js';
import { type Interaction, resumePath } from '../endpoints/interactions.js';
import { OAuthError } from '../errors.js';
import { userAttempt } from '../validation/failure-limiter.js';
import { Params } from '../http/form.js';
import { parseAcrValues } from '../validation/acr-values.js';
import { AuthorizeError, validateAuthorizeRequest } from '../validation/authorize-request.js';
import { checkCsrf } from './csrf.js';
import { answerDevice } from './device.js';
import { secondStepAfterPassword } from './account-mfa.js';

/** Registers the login and logout pages. */
export function accountPages(app: FastifyInstance, ctx: SigilContext): void {
  const origin = new URL(ctx.issuer).origin;

  app.get('/account/login', async (request, reply) => {
    const id = queryString(request, 'interaction');
    const browser = ctx.sessions.browserId(request, reply);
    const interaction = id === undefined ? undefined : await ctx.interactions.get(id, browser);
    if (id !== undefined && !interaction) return expiredPage(ctx, request, reply);
    return loginPage(ctx, request, reply, id, interaction, interaction?.params.login_hint ?? '', undefined);
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
    const tenant = interaction ? parseAcrValues(interaction.params.acr_values).tenant : null;
    const attempt = userAttempt(request.ip, tenant, username);
    try {
      await ctx.limiter.before(attempt);
    } catch (err) {
      if (!(err instanceof OAuthError)) throw err;
      reply.headers(err.headers);
      return loginPage(ctx, request, reply, id, interaction, username, 'tooManyAttempts', 429);
    }
    const user = username.length > 0 && username.length <= 100 ? await ctx.users.checkPassword(username, password, tenant) : undefined;
    if (!user || !user.isActive) {
      await ctx.limiter.failed(attempt);
      ctx.events.emit({
        name: 'user_login_failed',
        endpoint: 'login',
        ...(interaction ? { clientId: interaction.params.client_id } : {}),
        remoteAddress: request.ip,
        ...(user ? { subjectId: user.subjectId, errorDescription: 'inactive user' } : {}),
      });
      return loginPage(ctx, request, reply, id, interaction, username, 'invalidCredentials');
    }
    // A user with a second factor, or a client or request needing one: the second step first.
    const toAccount = !id && single(body, 'return') === 'account';
    const first = { subjectId: user.subjectId, tenant: user.tenant, amr: ['pwd'], idp: 'local', ...(id ? { interaction: id } : {}), ...(toAccount ? { toAccount } : {}) };
    const second = await secondStepAfterPassword(ctx, request, reply, first, interaction);
    if (second) return second;
    const session = await ctx.sessions.create(request, reply, user, { amr: ['pwd'], idp: 'local', tenant: user.tenant });
    ctx.events.emit({ name: 'user_login_succeeded', endpoint: 'login', subjectId: user.subjectId, ...(interaction ? { clientId: interaction.params.client_id } : {}) });
    if (id && interaction) {
      await ctx.interactions.update(id, { ...interaction, loginAt: session.authTime });
      return reply.redirect(resumePath(id, interaction), 303);
    }
    if (toAccount) return reply.redirect('/account', 303);
    return ctx.pages.send(reply, 'message', lang, { titleKey: 'signedInTitle', textKey: 'signedInAs', values: { user: user.username } });
  });

  app.get('/account/logout', async (request, reply) => {
    // Nobody signed in: nothing to confirm (RP-Initiated Logout §4, checklist LO-11).
    if (!(await ctx.sessions.current(request)))
      return ctx.pages.send(reply, 'message', language(request), { titleKey: 'signedOutTitle', textKey: 'signedOut' });
    return ctx.pages.send(reply, 'logout', language(request), { csrf: reply.generateCsrf() });
  });

  app.post('/account/logout', async (request, reply) => {
    const lang = language(request);
    if (!checkCsrf(app, request, reply, origin))
      return sendErrorPage(ctx, reply, new OAuthError('invalid_request', 'the form has expired, please try again'), lang, 403);
    await ctx.sessions.end(request, reply);
    return ctx.pages.send(reply, 'message', lang, { titleKey: 'signedOutTitle', textKey: 'signedOut' });
  });
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
  try {
    const req = await validateAuthorizeRequest(ctx, Params.fromRecord(interaction.params));
    ctx.events.emit({ name: 'token_issue_failed', endpoint: 'authorize', clientId: req.client.clientId, error: 'access_denied' });
    return sendErrorToClient(ctx, reply, req, new OAuthError('access_denied', 'the user denied the request'));
  } catch (err) {
    if (err instanceof AuthorizeError && err.target) return sendErrorToClient(ctx, reply, err.target, new OAuthError('access_denied', 'the user denied the request'));
    return expiredPage(ctx, request, reply);
  }
}

function loginPage(
  ctx: SigilContext,
  request: FastifyRequest,
  reply: FastifyReply,
  id: string | undefined,
  interaction: Interaction | undefined,
  username: string,
  error: 'invalidCredentials' | 'tooManyAttempts' | undefined,
  status = 200,
): FastifyReply {
  const params = interaction?.params ?? {};
  const client = params.client_id ? ctx.clients.get(params.client_id) : undefined;
  const lang = language(request, params.ui_locales);
  return ctx.pages.send(
    reply,
    'login',
    lang,
    {
      csrf: reply.generateCsrf(),
      interaction: id,
      uiLocales: params.ui_locales,
      // Continue at /account after signing in (its "sign in again" link); a fixed value, no URL.
      toAccount: id === undefined && (queryString(request, 'return') === 'account' || (request.body instanceof Params && single(request.body, 'return') === 'account')),
      username,
      clientName: client ? (client.clientName ?? client.clientId) : undefined,
      tenant: parseAcrValues(params.acr_values).tenant,
      // The upstream providers the client may use (federation), as links that keep the request.
      providers:
        id && client
          ? ctx.upstream.allowedFor(client.identityProviderRestrictions).map((p) => ({
              label: p.displayName ?? p.name,
              href: `/federation/${encodeURIComponent(p.name)}/login?interaction=${encodeURIComponent(id)}`,
            }))
          : [],
      error: error ? ctx.pages.text(lang, error) : undefined,
    },
    status,
    params.redirect_uri !== undefined,
  );
}

/** One value of a form field, or undefined (absent or repeated). */
export function single(params: Params, name: string): string | undefined {
  try {
    return params.get(name);
  } catch {
    return undefined;
  }
}

/** One string value of a query parameter, or undefined. */
export function queryString(request: FastifyRequest, name: string): string | undefined {
  const v = (request.query as Record<string, unknown> | undefined)?.[name];
  return typeof v === 'string' ? v : undefined;
}
