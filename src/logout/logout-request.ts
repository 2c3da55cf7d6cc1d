/**
 * Validation of a logout request (OpenID Connect RP-Initiated Logout 1.0 §2, §3): `id_token_hint`,
 * `client_id`, `post_logout_redirect_uri`, `state`, `ui_locales`. The same checks run on
 * `/connect/endsession` and again when the user confirms on the logout page, whose form carries
 * the parameters back.
 */
import { invalidRequest } from '../protocol/errors.js';
import type { Params } from '../protocol/params.js';
import type { IdTokenHint, TokenService } from '../tokens/tokens.js';
import type { Client, ClientRegistry } from '../clients/registry.js';
import { matchRedirectUri } from '../validation/redirect-uri.js';

/** What `validateLogoutRequest` needs of a Sigil instance (the services, `Services`, have it). */
export interface LogoutRequestServices {
  tokens: Pick<TokenService, 'verifyIdTokenHint'>;
  clients: Pick<ClientRegistry, 'get'>;
}

/** A validated logout request. */
export interface LogoutRequest {
  /** The genuine `id_token_hint`, if one was sent (an unverifiable hint counts as none). */
  hint?: IdTokenHint;
  /** The client, named by `client_id` or the hint's audience. */
  client?: Client;
  /** `post_logout_redirect_uri` as sent, registered for `client`. */
  postLogoutRedirectUri?: string;
  state?: string;
  uiLocales?: string;
}

/**
 * Checks a logout request. An unknown `client_id`, a `client_id` that is not the hint's audience
 * (§2), or a `post_logout_redirect_uri` that is not registered, string for string, for the client,
 * or that comes without `client_id` or a genuine hint to tell the client (§3), is refused.
 * @throws OAuthError `invalid_request` naming the problem (never echoing the input); also for a
 *   repeated parameter.
 */
export async function validateLogoutRequest(ctx: LogoutRequestServices, params: Params): Promise<LogoutRequest> {
  const hintValue = params.get('id_token_hint');
  const clientId = params.get('client_id');
  const target = params.get('post_logout_redirect_uri');
  const state = params.get('state');
  const uiLocales = params.get('ui_locales');
  const hint = hintValue === undefined ? undefined : await ctx.tokens.verifyIdTokenHint(hintValue);
  if (clientId !== undefined && hint !== undefined && !hint.aud.includes(clientId))
    throw invalidRequest('client_id is not the client the id_token_hint was issued to');
  const id = clientId ?? hint?.aud[0];
  const client = id === undefined ? undefined : ctx.clients.get(id);
  if (clientId !== undefined && !client) throw invalidRequest('client_id names no registered client');
  if (target !== undefined) {
    if (!client)
      throw invalidRequest('post_logout_redirect_uri needs a valid id_token_hint or client_id to identify the client');
    if (!matchRedirectUri(target, client.postLogoutRedirectUris))
      throw invalidRequest('post_logout_redirect_uri is not registered for the client');
  }
  return {
    ...(hint ? { hint } : {}),
    ...(client ? { client } : {}),
    ...(target !== undefined ? { postLogoutRedirectUri: target } : {}),
    ...(state !== undefined ? { state } : {}),
    ...(uiLocales !== undefined ? { uiLocales } : {}),
  };
}

/** The redirect after logout: the registered URI with `state` added (§3), or undefined. */
export function logoutRedirect(req: LogoutRequest): string | undefined {
  if (req.postLogoutRedirectUri === undefined) return undefined;
  if (req.state === undefined) return req.postLogoutRedirectUri;
  const base = req.postLogoutRedirectUri;
  return `${base}${base.includes('?') ? '&' : '?'}${new URLSearchParams({ state: req.state })}`;
}
