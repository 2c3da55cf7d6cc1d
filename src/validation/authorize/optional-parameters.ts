/**
 * The optional parameters of an authorization request (OIDC Core §3.1.2.1, §5.5; RFC 7636 §4.3;
 * RFC 9449 §10): each read on its own and refused with `invalid_request` when malformed or
 * contradicting the response type, the scopes or the client.
 */
import { invalidRequest } from '../../protocol/errors.js';
import type { Params } from '../../protocol/params.js';
import type { Client } from '../../clients/registry.js';
import { parseAcrValues } from '../acr-values.js';
import { type ClaimsParameter, parseClaimsParameter } from '../claims-parameter.js';
import { isPkceValue } from '../pkce.js';
import type { ResponseFlow } from './core-parameters.js';
import type { IdTokenHintVerifier } from './services.js';
import type { AuthorizeRequest } from './types.js';

const PROMPTS = new Set(['none', 'login', 'consent', 'select_account']);

/** The optional parameters' part of a valid request. */
export type OptionalParameters = Pick<
  AuthorizeRequest,
  | 'nonce'
  | 'prompt'
  | 'maxAge'
  | 'loginHint'
  | 'uiLocales'
  | 'acr'
  | 'acrRequested'
  | 'claims'
  | 'essentialAcr'
  | 'claimsSubject'
  | 'codeChallenge'
  | 'codeChallengeMethod'
  | 'dpopJkt'
>;

/**
 * `prompt` (OIDC Core §3.1.2.1): its space-separated values.
 * @throws OAuthError `invalid_request` for a value not in `none login consent select_account`, or
 *   `none` with another value.
 */
export function parsePrompt(value: string | undefined): Set<string> {
  const prompt = new Set((value ?? '').split(' ').filter((p) => p !== ''));
  for (const p of prompt) if (!PROMPTS.has(p)) throw invalidRequest(`prompt "${p}" is not supported`);
  if (prompt.has('none') && prompt.size > 1) throw invalidRequest('prompt=none cannot be combined');
  return prompt;
}

/**
 * `max_age` (OIDC Core §3.1.2.1), in seconds.
 * @throws OAuthError `invalid_request` unless 1 to 10 decimal digits.
 */
export function parseMaxAge(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  if (!/^\d{1,10}$/.test(value)) throw invalidRequest('max_age must be a non-negative integer');
  return Number(value);
}

/**
 * What a parsed `claims` parameter (OIDC Core §5.5) requires of the sign-in.
 * @param hasOpenid whether the scopes include `openid`
 * @returns the values an essential `acr` accepts (§5.5.1.1) and the subject `sub` names (§3.1.2.2)
 * @throws OAuthError `invalid_request` without `openid`, with `userinfo` claims for
 *   `response_type=id_token` (no access token), an essential `acr` with an empty `values`, or a
 *   `sub` with anything but one string value.
 */
export function checkClaims(
  claims: ClaimsParameter,
  flow: ResponseFlow,
  hasOpenid: boolean,
): Pick<AuthorizeRequest, 'essentialAcr' | 'claimsSubject'> {
  if (!hasOpenid) throw invalidRequest('the claims parameter needs the openid scope');
  // OIDC Core §5.5: userinfo claims need a response type that issues an access token.
  if (claims.userinfo.size > 0 && flow.responseType === 'id_token')
    throw invalidRequest('claims.userinfo needs a response_type that returns an access token');
  const out: Pick<AuthorizeRequest, 'essentialAcr' | 'claimsSubject'> = {};
  const acrClaim = claims.id_token.get('acr');
  if (acrClaim?.essential && acrClaim.values !== undefined) {
    if (acrClaim.values.length === 0) throw invalidRequest('claims.id_token.acr asks for no value');
    out.essentialAcr = acrClaim.values;
  }
  const sub = claims.id_token.get('sub') ?? claims.userinfo.get('sub');
  if (sub?.values !== undefined) {
    const [only] = sub.values;
    if (sub.values.length !== 1 || typeof only !== 'string')
      throw invalidRequest('claims sub.value must be one string');
    out.claimsSubject = only;
  }
  return out;
}

/**
 * The PKCE challenge of a request that returns a code (RFC 7636 §4.3); none otherwise.
 * @throws OAuthError `invalid_request` when missing for a public client or one that requires
 *   PKCE, when the method is not `S256` or `plain` (`plain` only if the client allows it), or the
 *   challenge is malformed (§4.2).
 */
export function checkPkce(
  params: Params,
  flow: ResponseFlow,
  client: Client,
): Pick<AuthorizeRequest, 'codeChallenge' | 'codeChallengeMethod'> {
  if (!flow.returnsCode) return {};
  const codeChallenge = params.get('code_challenge');
  const method = params.get('code_challenge_method') ?? 'plain';
  if (codeChallenge === undefined) {
    if (client.requirePkce || client.isPublic) throw invalidRequest('code_challenge is required (PKCE)');
    return {};
  }
  if (method !== 'S256' && method !== 'plain') throw invalidRequest('code_challenge_method is not supported');
  if (method === 'plain' && !client.allowPlainTextPkce) throw invalidRequest('code_challenge_method must be S256');
  if (!isPkceValue(codeChallenge)) throw invalidRequest('code_challenge is malformed');
  return { codeChallenge, codeChallengeMethod: method };
}

/**
 * `dpop_jkt` (RFC 9449 §10): a SHA-256 JWK thumbprint, 43 base64url characters.
 * @throws OAuthError `invalid_request` for anything else.
 */
export function checkDpopJkt(value: string | undefined): string | undefined {
  if (value !== undefined && !/^[A-Za-z0-9_-]{43}$/.test(value))
    throw invalidRequest('dpop_jkt must be the base64url SHA-256 JWK thumbprint of the DPoP key');
  return value;
}

/**
 * Every optional parameter, in this order: `nonce` (required when an identity token is returned,
 * OIDC Core §3.2.2.1), `prompt`, `max_age`, `acr_values`, `claims`, PKCE, `dpop_jkt` (kept only
 * when a code is returned). `login_hint` and `ui_locales` are taken as sent.
 * @param scopes the scopes that may be granted (`checkScopes`)
 * @throws OAuthError `invalid_request` from the first parameter refused.
 */
export function checkOptionalParameters(
  params: Params,
  flow: ResponseFlow,
  scopes: readonly string[],
  client: Client,
): OptionalParameters {
  const nonce = params.get('nonce');
  if (nonce === undefined && flow.returnsIdToken)
    throw invalidRequest('nonce is required when an identity token is returned');
  const prompt = parsePrompt(params.get('prompt'));
  const maxAge = parseMaxAge(params.get('max_age'));
  const loginHint = params.get('login_hint');
  const uiLocales = params.get('ui_locales');
  const acrValues = params.get('acr_values');
  const acr = parseAcrValues(acrValues);
  const claimsParam = params.get('claims');
  const claims = claimsParam === undefined ? undefined : parseClaimsParameter(claimsParam);
  const fromClaims = claims ? checkClaims(claims, flow, scopes.includes('openid')) : {};
  const pkce = checkPkce(params, flow, client);
  const dpopJkt = checkDpopJkt(params.get('dpop_jkt'));
  return {
    prompt,
    acr,
    acrRequested: acrValues !== undefined || (claims?.id_token.has('acr') ?? false),
    ...(claims !== undefined ? { claims } : {}),
    ...fromClaims,
    ...(nonce !== undefined ? { nonce } : {}),
    ...(maxAge !== undefined ? { maxAge } : {}),
    ...(loginHint !== undefined ? { loginHint } : {}),
    ...(uiLocales !== undefined ? { uiLocales } : {}),
    ...pkce,
    ...(dpopJkt !== undefined && flow.returnsCode ? { dpopJkt } : {}),
  };
}

/**
 * The subject of a genuine `id_token_hint` (OIDC Core §3.1.2.1), or undefined when none is sent.
 * @throws OAuthError `invalid_request` when the hint is not one of Sigil's identity tokens.
 */
export async function idTokenHintSubject(
  hint: string | undefined,
  tokens: IdTokenHintVerifier,
): Promise<string | undefined> {
  if (hint === undefined) return undefined;
  const verified = await tokens.verifyIdTokenHint(hint);
  if (!verified) throw invalidRequest('id_token_hint is not valid');
  return verified.sub;
}
