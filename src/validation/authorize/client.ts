/**
 * The client of an authorization request and where its answer goes (RFC 6749 §3.1.2, §4.1.2.1):
 * while the client or the redirect URI is not known good, errors are shown on Sigil's error page;
 * once `responseTarget` has returned, they go back to the client.
 */
import { OAuthError, invalidRequest } from '../../protocol/errors.js';
import type { Params } from '../../protocol/params.js';
import { MetadataDocumentError } from '../../clients/metadata-documents.js';
import type { Client, ClientRegistry } from '../../clients/registry.js';
import { isAbsoluteRedirectUri, matchRedirectUri } from '../redirect-uri.js';
import { normalizeResponseType, responseModeFor } from './core-parameters.js';
import { bounded, isRepeated, safeGet } from './parameters.js';
import { AuthorizeError, type ResponseTarget } from './types.js';

const MODES = new Set<string>(['query', 'fragment', 'form_post']);

/**
 * The enabled client named by `client_id` (RFC 6749 §4.1.1); for an https URL naming no
 * registered client, the client of its metadata document (fetched when not cached; the one side
 * effect of this step, counted against `address`).
 * @param address the caller's address (a fetch counts against its quota)
 * @throws AuthorizeError for the error page: `invalid_request` (missing, too long, repeated),
 *   `unauthorized_client` (unknown or disabled), `invalid_client` (a metadata document refused or
 *   not fetched, draft-ietf-oauth-client-id-metadata-document §5.1: the request is aborted),
 *   `temporarily_unavailable` (429: the address has used up its document fetches).
 */
export async function loadClient(
  clients: Pick<ClientRegistry, 'resolve'>,
  raw: Params,
  address: string,
): Promise<Client> {
  let clientId: string | undefined;
  try {
    clientId = bounded(raw, 'client_id');
  } catch (err) {
    throw new AuthorizeError(err as OAuthError);
  }
  if (clientId === undefined) throw new AuthorizeError(invalidRequest('client_id is missing'));
  let client: Client | undefined;
  try {
    client = await clients.resolve(clientId, address);
  } catch (err) {
    if (err instanceof MetadataDocumentError) throw new AuthorizeError(new OAuthError('invalid_client', err.message));
    if (err instanceof OAuthError) throw new AuthorizeError(err);
    throw err;
  }
  if (!client) throw new AuthorizeError(new OAuthError('unauthorized_client', 'unknown client'));
  return client;
}

/**
 * Where the errors of an effective request go: its registered redirect URI, its `state`, and
 * the `response_mode` it asked for, once checked (the mode itself waits for `response_type`,
 * `responseModeFor`).
 * @returns the target, in mode `query`, and the `response_mode` sent (undefined when repeated:
 *   `checkParameterLengths` then refuses it)
 * @throws AuthorizeError for the error page: `invalid_request` when `redirect_uri` is missing, too
 *   long, repeated, not absolute or not registered for the client (RFC 6749 §3.1.2.4), `state` is
 *   too long (never echoed), or `response_mode` is not supported; to the client without `state`:
 *   `invalid_request` when `state` is repeated.
 */
export function responseTarget(
  params: Params,
  client: Client,
): { target: ResponseTarget; responseMode: string | undefined } {
  let redirectUri: string | undefined;
  try {
    redirectUri = bounded(params, 'redirect_uri');
  } catch (err) {
    throw new AuthorizeError(err as OAuthError);
  }
  if (redirectUri === undefined) throw new AuthorizeError(invalidRequest('redirect_uri is missing'));
  if (!isAbsoluteRedirectUri(redirectUri) || !matchRedirectUri(redirectUri, client.redirectUris))
    throw new AuthorizeError(invalidRequest('redirect_uri is not registered for this client'));

  const target: ResponseTarget = { redirectUri, mode: 'query' };
  try {
    const state = bounded(params, 'state');
    if (state !== undefined) target.state = state;
  } catch (err) {
    // A repeated state goes back without one; an oversized one is not echoed (error page).
    if (params.has('state') && !isRepeated(params, 'state')) throw new AuthorizeError(err as OAuthError);
    throw new AuthorizeError(err as OAuthError, target);
  }
  const responseMode = safeGet(params, 'response_mode');
  if (responseMode !== undefined && !MODES.has(responseMode))
    throw new AuthorizeError(new OAuthError('invalid_request', 'response_mode is not supported'));
  return { target, responseMode };
}

/**
 * The target of the plain (unsigned) parameters, for the errors of a request object that is
 * refused: their `redirect_uri` when registered for the client, their `state` and mode.
 * @returns undefined when those parameters name no good target (the error page answers).
 */
export function fallbackTarget(raw: Params, client: Client): ResponseTarget | undefined {
  try {
    const uri = bounded(raw, 'redirect_uri');
    if (uri === undefined || !matchRedirectUri(uri, client.redirectUris)) return undefined;
    const state = bounded(raw, 'state');
    const mode = responseModeFor(normalizeResponseType(raw.get('response_type') ?? ''), raw.get('response_mode'));
    return { redirectUri: uri, mode, ...(state !== undefined ? { state } : {}) };
  } catch {
    return undefined;
  }
}

/** Whether a client may redirect to a URI that is a native app's (loopback or private-use scheme; RFC 8252). */
export function isNativeRedirect(uri: string): boolean {
  return /^http:\/\/(127\.0\.0\.1|\[::1\]|localhost)(:|\/|$)/.test(uri) || !/^https?:/.test(uri);
}
