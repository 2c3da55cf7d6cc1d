/**
 * End session, `GET`/`POST /connect/endsession` (OpenID Connect RP-Initiated Logout 1.0). With a
 * genuine `id_token_hint` for the signed-in user (or no session at all), the session ends at once
 * and the browser goes to `post_logout_redirect_uri` (with `state`) when it is registered exactly
 * for the hint's client; otherwise the signed-out page. Without such a hint nothing happens
 * without the user: the logout page asks for confirmation (§2, ASVS 10.6.2).
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { SigilContext } from '../context.js';
import type { Params } from '../http/form.js';
import { single } from '../ui/account.js';
import { matchRedirectUri } from '../validation/redirect-uri.js';
import { language } from './authorize.js';
import { asciiUri, browserEndpoint } from './authorize-response.js';

/** Registers `/connect/endsession`. */
export function endSessionEndpoint(app: FastifyInstance, ctx: SigilContext): void {
  browserEndpoint(app, ctx, '/connect/endsession', (request, reply, params) => endSession(ctx, request, reply, params));
}

async function endSession(ctx: SigilContext, request: FastifyRequest, reply: FastifyReply, params: Params): Promise<FastifyReply> {
  const hintValue = single(params, 'id_token_hint');
  const hint = hintValue === undefined ? undefined : await ctx.tokens.verifyIdTokenHint(hintValue);
  const clientId = single(params, 'client_id');
  const hintClient = hint?.aud[0];
  const session = await ctx.sessions.current(request);
  const trusted =
    hint !== undefined &&
    (clientId === undefined || clientId === hintClient) &&
    // The hint must be of the current session: its `sid` when it has one (as Duende v8), else its `sub`.
    (!session || (hint.sid !== undefined ? session.sid === hint.sid : session.subjectId === hint.sub));
  if (!trusted) return reply.header('cache-control', 'no-store').redirect('/account/logout', 303);

  await ctx.sessions.end(request, reply);
  const client = hintClient ? ctx.clients.get(hintClient) : undefined;
  const target = single(params, 'post_logout_redirect_uri');
  if (client && target !== undefined && matchRedirectUri(target, client.postLogoutRedirectUris)) {
    const state = single(params, 'state');
    const base = asciiUri(target);
    const location = state === undefined ? base : `${base}${base.includes('?') ? '&' : '?'}${new URLSearchParams({ state })}`;
    return reply.header('cache-control', 'no-store').redirect(location, 303);
  }
  return ctx.pages.send(reply, 'message', language(request, single(params, 'ui_locales')), { titleKey: 'signedOutTitle', textKey: 'signedOut' });
}
