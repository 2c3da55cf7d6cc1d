/**
 * What an authorization request asks access to: its scopes (RFC 6749 §3.3; OIDC Core §3.1.2.1,
 * §11), its resource indicators (RFC 8707 §2.1) and its authorization details (RFC 9396 §2).
 */
import { invalidRequest, invalidScope } from '../../protocol/errors.js';
import type { Params } from '../../protocol/params.js';
import type { Client } from '../../clients/registry.js';
import {
  type AuthorizationDetail,
  invalidAuthorizationDetails,
  parseAuthorizationDetails,
} from '../../resources/authorization-details.js';
import { invalidTarget, requestedResources } from '../../resources/resource-indicators.js';
import { OFFLINE_ACCESS, parseScope, type Resources } from '../../resources/scopes.js';
import type { ResponseFlow } from './core-parameters.js';

/**
 * The scopes that may be granted for `scope`, in request order; `offline_access` is dropped
 * unless a code is returned (OIDC Core §11).
 * @throws OAuthError `invalid_request` (missing; `openid` absent when an identity token is
 *   returned), `invalid_scope` (malformed, unknown, not allowed for the client, identity scopes
 *   without `openid`, identity scopes for `token` or API scopes for `id_token`, nothing left).
 */
export function checkScopes(
  value: string | undefined,
  flow: ResponseFlow,
  client: Client,
  resources: Pick<Resources, 'identity' | 'apiScopes'>,
): string[] {
  if (value === undefined) throw invalidRequest('scope is missing');
  let scopes = parseScope(value);
  for (const s of scopes) {
    const known = s === OFFLINE_ACCESS || resources.identity.has(s) || resources.apiScopes.has(s);
    if (!known) throw invalidScope(`unknown scope "${s}"`);
    if (s === OFFLINE_ACCESS ? !client.allowOfflineAccess : !client.allowedScopes.includes(s))
      throw invalidScope(`scope "${s}" is not allowed for this client`);
  }
  const hasOpenid = scopes.includes('openid');
  if (flow.returnsIdToken && !hasOpenid) throw invalidRequest('the openid scope is required for an identity token');
  if (!hasOpenid && scopes.some((s) => resources.identity.has(s)))
    throw invalidScope('identity scopes need the openid scope');
  if (!flow.returnsCode) scopes = scopes.filter((s) => s !== OFFLINE_ACCESS);
  if (flow.responseType === 'token' && scopes.some((s) => resources.identity.has(s)))
    throw invalidScope('response_type token carries API scopes only');
  if (flow.responseType === 'id_token' && scopes.some((s) => resources.apiScopes.has(s)))
    throw invalidScope('response_type id_token carries identity scopes only');
  if (scopes.length === 0) throw invalidScope('no scope can be granted');
  return scopes;
}

/**
 * The API resources (names) the `resource` values name (RFC 8707 §2.1), or undefined when none
 * was sent. A pending request keeps its resources space-separated in one value (a resource
 * indicator has no spaces), so both spellings are read.
 * @throws OAuthError `invalid_target` as `requestedResources`, and when the response type
 *   returns an access token or no code (the token endpoint narrows the tokens).
 */
export function checkResourceIndicators(
  params: Params,
  flow: ResponseFlow,
  client: Client,
  resources: Resources,
): string[] | undefined {
  const names = requestedResources(
    params.getAll('resource').flatMap((v) => v.split(' ')),
    client,
    resources,
  );
  if (names !== undefined && (flow.returnsToken || !flow.returnsCode))
    throw invalidTarget(
      'resource indicators are supported with the code flow only (the token endpoint narrows the tokens)',
    );
  return names;
}

/**
 * The authorization details of `authorization_details` (RFC 9396 §2), exactly as sent, or
 * undefined when it was not sent.
 * @throws OAuthError `invalid_authorization_details` as `parseAuthorizationDetails`, and when the
 *   response type returns an access token or no code (the details reach the client with the
 *   token endpoint's response, RFC 9396 §7).
 */
export function checkAuthorizationDetails(
  params: Params,
  flow: ResponseFlow,
  client: Client,
  resources: Resources,
): AuthorizationDetail[] | undefined {
  const details = parseAuthorizationDetails(params.get('authorization_details'), client, resources);
  if (details !== undefined && (flow.returnsToken || !flow.returnsCode))
    throw invalidAuthorizationDetails('authorization_details is supported with the code flow only');
  return details;
}
