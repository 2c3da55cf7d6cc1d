/**
 * End session, `GET`/`POST /connect/endsession` (OpenID Connect RP-Initiated Logout 1.0). A
 * request that is wrong (unknown or mismatched `client_id`, a `post_logout_redirect_uri` not
 * registered for the client or without a way to tell the client) ends on the error page naming
 * the problem, changes nothing and never redirects (§3). A fully valid request (a genuine
 * `id_token_hint` of the signed-in session, or no session at all) signs out at once and goes on to
 * the registered `post_logout_redirect_uri` (with `state`) through the signed-out page; anything
 * else asks the user first on the logout page (§2, ASVS 10.6.2), which carries the request along.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { sessionOf, signOut } from '../interaction/browser.js';
import { OAuthError } from '../protocol/errors.js';
import type { Params } from '../protocol/params.js';
import { logoutRedirect, validateLogoutRequest } from '../logout/logout-request.js';
import { sendLoggedOut } from '../ui/signed-out.js';
import { sendLogoutPrompt } from '../ui/account.js';
import { sendErrorPage } from '../ui/error-page.js';
import { language } from '../ui/language.js';
import { single } from '../http/fields.js';
import { browserEndpoint } from './browser-endpoint.js';
import type { LogoutRequestServices } from '../logout/logout-request.js';
import type { SignedOutPageServices } from '../ui/signed-out.js';
import type { AccountPageServices } from '../ui/account.js';
import type { ErrorPageServices } from '../ui/error-page.js';
import type { BrowserServices } from '../interaction/browser.js';

/** The end session endpoint (OIDC RP-Initiated Logout §2). */
export const END_SESSION_PATH = '/connect/endsession';

/** The services this module uses. */
export type EndSessionEndpointServices = AccountPageServices &
  BrowserServices &
  ErrorPageServices &
  LogoutRequestServices &
  SignedOutPageServices;

/** Registers `/connect/endsession`. */
export function endSessionEndpoint(app: FastifyInstance, ctx: EndSessionEndpointServices): void {
  browserEndpoint(app, ctx, END_SESSION_PATH, (request, reply, params) => endSession(ctx, request, reply, params));
}

async function endSession(
  ctx: EndSessionEndpointServices,
  request: FastifyRequest,
  reply: FastifyReply,
  params: Params,
): Promise<FastifyReply> {
  const lang = language(request, single(params, 'ui_locales'));
  let req;
  try {
    req = await validateLogoutRequest(ctx, params);
  } catch (err) {
    if (!(err instanceof OAuthError)) throw err;
    return sendErrorPage(ctx, reply, err, lang, 400);
  }
  const session = await sessionOf(ctx, request);
  if (!session) return sendLoggedOut(ctx, reply, lang, undefined, logoutRedirect(req));
  const hint = req.hint;
  // The hint must be of the current session: its `sid` when it has one (as Duende v8), else its `sub`.
  const ofThisSession =
    hint !== undefined && (hint.sid !== undefined ? session.sid === hint.sid : session.subjectId === hint.sub);
  if (!ofThisSession) return sendLogoutPrompt(ctx, reply, lang, req);
  const ended = await signOut(ctx, request, reply);
  return sendLoggedOut(ctx, reply, lang, ended, logoutRedirect(req));
}
