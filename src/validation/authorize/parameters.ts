/**
 * The authorization request's parameters as Sigil reads and keeps them: each one sent once
 * (RFC 6749 §3.1) and within its length limit, and the set a pending request keeps.
 */
import { invalidRequest } from '../../protocol/errors.js';
import type { Params } from '../../protocol/params.js';
import { MAX_ORGANIZATION_NAME } from '../../config/schema.js';
import { MAX_CLAIMS_LENGTH } from '../claims-parameter.js';

/**
 * Most characters of each authorization request parameter Sigil reads or keeps (OWASP API4:2023).
 * Duende IdentityServer's input limits where it has one; `state` is ours: 2,000 characters, because
 * Sigil echoes it in the redirect's `Location`, where even percent-encoded (three times as long)
 * it keeps the header under 8 KB, the request-line limit of common proxies and servers; values
 * that pack the client's own state into `state` fit many times over. A longer `state` is not
 * echoed: the error page answers. The parameter set is bounded too: names not listed here are
 * never stored. `request` and `request_uri` have their own errors (RFC 9101 §6.3): a request
 * object over `MAX_REQUEST_OBJECT` is `invalid_request_object`, a `request_uri` that is not one of
 * the client's registered ones is `invalid_request_uri`. `claims` (OIDC Core §5.5) is also held to
 * `CLAIMS_JSON_BOUNDS` (depth) when parsed. `authorization_details` (RFC 9396) has its own bounds
 * and error (`AUTHORIZATION_DETAILS_BOUNDS`, `invalid_authorization_details`).
 */
export const PARAM_MAX_LENGTH: Readonly<Record<string, number>> = {
  client_id: 100,
  redirect_uri: 400,
  state: 2000,
  response_type: 50,
  response_mode: 20,
  scope: 300,
  nonce: 300,
  prompt: 100,
  max_age: 10,
  login_hint: 100,
  ui_locales: 100,
  acr_values: 300,
  code_challenge: 128,
  code_challenge_method: 10,
  id_token_hint: 4000,
  claims: MAX_CLAIMS_LENGTH,
  dpop_jkt: 100,
  organization: MAX_ORGANIZATION_NAME,
};

/**
 * The parameter `name` if within its length limit.
 * @throws OAuthError `invalid_request` when longer than `PARAM_MAX_LENGTH[name]`, or repeated.
 */
export function bounded(params: Params, name: string): string | undefined {
  const value = params.get(name);
  const max = PARAM_MAX_LENGTH[name];
  if (value !== undefined && max !== undefined && value.length > max) throw invalidRequest(`${name} is too long`);
  return value;
}

/**
 * Checks every parameter of `PARAM_MAX_LENGTH`, in its order: afterwards each reads without error.
 * @throws OAuthError `invalid_request` for the first one too long or repeated.
 */
export function checkParameterLengths(params: Params): void {
  for (const name of Object.keys(PARAM_MAX_LENGTH)) bounded(params, name);
}

/** Whether `name` was sent more than once (RFC 6749 §3.1). */
export function isRepeated(params: Params, name: string): boolean {
  try {
    params.get(name);
    return false;
  } catch {
    return true;
  }
}

/** The single value of `name`, or undefined when absent or repeated. */
export function safeGet(params: Params, name: string): string | undefined {
  try {
    return params.get(name);
  } catch {
    return undefined;
  }
}

/** The parameters a pending request keeps to be resumed after login and consent. */
const PARAMS_KEPT = [
  'client_id',
  'redirect_uri',
  'response_type',
  'response_mode',
  'scope',
  'state',
  'nonce',
  'prompt',
  'max_age',
  'login_hint',
  'ui_locales',
  'acr_values',
  'code_challenge',
  'code_challenge_method',
  'id_token_hint',
  'claims',
  'dpop_jkt',
  'organization',
  'authorization_details',
];

/**
 * The parameters of a valid request that a pending request keeps (`AuthorizeRequest.params`):
 * those of `PARAMS_KEPT`, and every `resource` value space-separated in one (a resource indicator
 * has no spaces, RFC 8707 §2).
 * @throws OAuthError `invalid_request` when a kept parameter is repeated (never after `checkParameterLengths`).
 */
export function keptParameters(params: Params): Record<string, string> {
  const kept: Record<string, string> = {};
  for (const name of PARAMS_KEPT) {
    const v = params.get(name);
    if (v !== undefined) kept[name] = v;
  }
  if (params.has('resource')) kept.resource = params.getAll('resource').join(' ');
  return kept;
}
