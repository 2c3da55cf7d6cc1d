/**
 * Validation of authorization requests (RFC 6749 §4.1.1, §4.2.1; OIDC Core §3.1.2.1, §3.2.2.1,
 * §3.3.2.1; RFC 7636 §4.3; RFC 9101). Returns a typed request, or says where the error goes:
 * to an error page while the client or the redirect URI is not known good (RFC 6749 §4.1.2.1),
 * back to the client afterwards (D-02).
 */
import type { SigilContext } from '../context.js';
import { OAuthError, invalidRequest, invalidScope } from '../protocol/errors.js';
import { Params } from '../protocol/params.js';
import { type AcrValues, parseAcrValues } from './acr-values.js';
import { type ClaimsParameter, MAX_CLAIMS_LENGTH, parseClaimsParameter } from './claims-parameter.js';
import type { Client } from '../clients/registry.js';
import { isPkceValue, type PkceMethod } from './pkce.js';
import { isAbsoluteRedirectUri, matchRedirectUri } from './redirect-uri.js';
import { isPushedRequestUri, takePushedRequest } from './pushed-request.js';
import { fetchRequestObject, verifyRequestObject } from './request-object.js';
import { invalidTarget, requestedResources } from '../resources/resource-indicators.js';
import { OFFLINE_ACCESS, parseScope } from '../resources/scopes.js';

/** How the authorization response travels (OAuth 2.0 Multiple Response Types §2.1, Form Post). */
export type ResponseMode = 'query' | 'fragment' | 'form_post';

/** The `response_type` values Sigil serves, normalized to this order of their parts. */
export const RESPONSE_TYPES = ['code', 'id_token', 'id_token token', 'code id_token', 'code token', 'code id_token token', 'token'] as const;
export type ResponseType = (typeof RESPONSE_TYPES)[number];

/** Where an authorization response or error is delivered. */
export interface ResponseTarget {
  redirectUri: string;
  mode: ResponseMode;
  state?: string;
}

/** A valid authorization request. */
export interface AuthorizeRequest extends ResponseTarget {
  client: Client;
  responseType: ResponseType;
  /** Granted-if-consented scopes, request order; `offline_access` only when a code is returned. */
  scopes: string[];
  nonce?: string;
  prompt: Set<string>;
  /** Seconds. */
  maxAge?: number;
  loginHint?: string;
  uiLocales?: string;
  acr: AcrValues;
  /**
   * Whether the client asked for `acr` (OIDC Core §3.1.2.1 `acr_values`, or `acr` under
   * `claims.id_token`, §5.5.1.1): the identity token then carries the achieved class.
   */
  acrRequested: boolean;
  /**
   * The classes an essential `acr` request accepts (`claims.id_token.acr` with `essential: true`
   * and `value`/`values`, OIDC Core §5.5.1.1); absent when no essential values were asked.
   */
  essentialAcr?: unknown[];
  /** The parsed `claims` parameter (OIDC Core §5.5), when sent. */
  claims?: ClaimsParameter;
  /** The subject a `claims` request names with `sub.value` (OIDC Core §3.1.2.2, §5.5.1). */
  claimsSubject?: string;
  codeChallenge?: string;
  codeChallengeMethod?: PkceMethod;
  /** Subject of a genuine `id_token_hint`. */
  hintSubject?: string;
  /** `dpop_jkt` (RFC 9449 §10): the JWK thumbprint of the DPoP key the code is bound to. */
  dpopJkt?: string;
  /** API resources (names) named by `resource` (RFC 8707 §2.1): the grant is limited to them. */
  resources?: string[];
  /** The effective parameters (after a request object), to resume the request after login. */
  params: Record<string, string>;
}

/** A refused authorization request: shown on an error page, or sent back to the client. */
export class AuthorizeError extends Error {
  constructor(
    readonly error: OAuthError,
    /** Set once client and redirect URI are known good: the error goes back there. */
    readonly target?: ResponseTarget,
  ) {
    super(error.message);
  }
}

const PROMPTS = new Set(['none', 'login', 'consent', 'select_account']);
const MODES = new Set<string>(['query', 'fragment', 'form_post']);

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
 * `CLAIMS_JSON_BOUNDS` (depth) when parsed.
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
};

/**
 * The parameter `name` if within its length limit.
 * @throws OAuthError `invalid_request` when longer than `PARAM_MAX_LENGTH[name]`, or repeated.
 */
function bounded(params: Params, name: string): string | undefined {
  const value = params.get(name);
  const max = PARAM_MAX_LENGTH[name];
  if (value !== undefined && max !== undefined && value.length > max) throw invalidRequest(`${name} is too long`);
  return value;
}

/** Normalizes a `response_type` (space-separated, any order) to one of `RESPONSE_TYPES`. */
export function normalizeResponseType(value: string): ResponseType | undefined {
  const parts = value.split(' ');
  if (parts.some((p) => p === '') || new Set(parts).size !== parts.length) return undefined;
  const order = ['code', 'id_token', 'token'];
  const sorted = [...parts].sort((a, b) => order.indexOf(a) - order.indexOf(b)).join(' ');
  return (RESPONSE_TYPES as readonly string[]).includes(sorted) ? (sorted as ResponseType) : undefined;
}

/** The grant type a client needs for a response type (DESIGN §4 and the authorize issue). */
function grantFor(rt: ResponseType): string {
  if (rt === 'code') return 'authorization_code';
  return rt.startsWith('code ') ? 'hybrid' : 'implicit';
}

/** Whether a client may redirect to a URI that is a native app's (loopback or private-use scheme; RFC 8252). */
export function isNativeRedirect(uri: string): boolean {
  return /^http:\/\/(127\.0\.0\.1|\[::1\]|localhost)(:|\/|$)/.test(uri) || !/^https?:/.test(uri);
}

/**
 * Validates an authorization request.
 * @param raw the query (GET) or form (POST) parameters
 * @param via where the request comes from: `authorize` (the browser; a pushed request's
 *   `request_uri` is taken here, once, and clients that must push are refused otherwise), `par`
 *   (`/connect/par`, RFC 9126 §2.1: validated exactly as here before it is stored), or `resume`
 *   (parameters stored server-side by an earlier validation, after login or consent)
 * @throws AuthorizeError with the OAuth error and, once known good, the response target. A
 *   parameter longer than `PARAM_MAX_LENGTH` is `invalid_request`: on the error page for
 *   `client_id`, `redirect_uri` and `state` (an oversized state is never echoed), else to the client.
 *   The `claims` parameter (OIDC Core §5.5, `parseClaimsParameter`), from the query or a request
 *   object, is `invalid_request` to the client when malformed, beyond `CLAIMS_JSON_BOUNDS`, sent
 *   without the `openid` scope, asking `userinfo` claims of `response_type=id_token`, or naming
 *   `sub` with anything but one string value, or `acr` as essential with an empty `values`.
 */
export async function validateAuthorizeRequest(
  ctx: SigilContext,
  raw: Params,
  via: 'authorize' | 'par' | 'resume' = 'authorize',
): Promise<AuthorizeRequest> {
  const page = (e: OAuthError) => new AuthorizeError(e);
  let clientId: string | undefined;
  try {
    clientId = bounded(raw, 'client_id');
  } catch (err) {
    throw page(err as OAuthError);
  }
  if (clientId === undefined) throw page(invalidRequest('client_id is missing'));
  const client = ctx.clients.get(clientId);
  if (!client) throw page(new OAuthError('unauthorized_client', 'unknown client'));

  // A redirect target from the plain parameters, used when the request object itself is refused.
  const fallbackTarget = (): ResponseTarget | undefined => {
    try {
      const uri = bounded(raw, 'redirect_uri');
      if (uri === undefined || !matchRedirectUri(uri, client.redirectUris)) return undefined;
      const rt = normalizeResponseType(raw.get('response_type') ?? '');
      const state = bounded(raw, 'state');
      // The mode asked for, as below: form_post always, fragment always, query only for code.
      const asked = raw.get('response_mode');
      let mode: ResponseMode = rt && rt !== 'code' ? 'fragment' : 'query';
      if (asked === 'form_post' || (asked === 'fragment' && mode === 'query')) mode = asked;
      return { redirectUri: uri, mode, ...(state !== undefined ? { state } : {}) };
    } catch {
      return undefined;
    }
  };

  let params = raw;
  let request: string | undefined;
  let requestUri: string | undefined;
  const pushedUri = via === 'authorize' ? safeGet(raw, 'request_uri') : undefined;
  if (pushedUri !== undefined && isPushedRequestUri(pushedUri)) {
    // RFC 9126 §4: the pushed request is the whole request; other parameters than client_id
    // are ignored. An unknown, expired, used or foreign one is never redirected (error page).
    try {
      params = Params.fromRecord(await takePushedRequest(ctx.store.grants, pushedUri, client.clientId)).with('client_id', client.clientId);
    } catch (err) {
      if (!(err instanceof OAuthError)) throw err;
      throw page(err);
    }
  } else {
    try {
      if (via === 'authorize' && (client.requirePushedAuthorizationRequests || ctx.config.requirePushedAuthorizationRequests))
        throw invalidRequest('authorization requests must be pushed to the pushed authorization request endpoint first (RFC 9126)');
      request = raw.get('request');
      requestUri = raw.get('request_uri');
      if (request !== undefined && requestUri !== undefined) throw invalidRequest('send request or request_uri, not both');
      if (requestUri !== undefined) request = await fetchRequestObject(requestUri, client);
      if (request !== undefined) {
        const fromObject = await verifyRequestObject(request, client, ctx.issuer, ctx.clientKeys.forClient(client));
        const queryType = raw.get('response_type');
        if (queryType !== undefined && fromObject.response_type !== undefined && queryType !== fromObject.response_type)
          throw invalidRequest('response_type differs from the request object');
        // RFC 9101 §6.3: only the parameters inside the request object are used.
        params = Params.fromRecord(fromObject);
      }
    } catch (err) {
      if (!(err instanceof OAuthError)) throw err;
      throw new AuthorizeError(err, fallbackTarget());
    }
  }

  const read = (name: string): string | undefined => {
    try {
      return bounded(params, name);
    } catch (err) {
      throw name === 'redirect_uri' ? page(err as OAuthError) : err;
    }
  };
  const redirectUri = read('redirect_uri');
  if (redirectUri === undefined) throw page(invalidRequest('redirect_uri is missing'));
  if (!isAbsoluteRedirectUri(redirectUri) || !matchRedirectUri(redirectUri, client.redirectUris))
    throw page(invalidRequest('redirect_uri is not registered for this client'));

  const target: ResponseTarget = { redirectUri, mode: 'query' };
  try {
    const state = bounded(params, 'state');
    if (state !== undefined) target.state = state;
  } catch (err) {
    // A repeated state goes back without one; an oversized one is not echoed (error page).
    if (params.has('state') && !isRepeated(params, 'state')) throw page(err as OAuthError);
    throw new AuthorizeError(err as OAuthError, target);
  }
  const modeParam = safeGet(params, 'response_mode');
  if (modeParam !== undefined && !MODES.has(modeParam))
    throw page(new OAuthError('invalid_request', 'response_mode is not supported'));

  try {
    for (const name of Object.keys(PARAM_MAX_LENGTH)) bounded(params, name);
    const rtParam = params.get('response_type');
    const responseType = rtParam === undefined ? undefined : normalizeResponseType(rtParam);
    // Errors travel in the requested mode when it is valid for the response type, else its default.
    target.mode = responseType && responseType !== 'code' ? 'fragment' : 'query';
    if (modeParam === 'form_post' || (modeParam === 'fragment' && target.mode === 'query')) target.mode = modeParam;
    if (rtParam === undefined) throw invalidRequest('response_type is missing');
    if (!responseType) throw new OAuthError('unsupported_response_type', 'response_type is not supported');
    // FAPI 2.0 SP §5.3.2.2: a fapi2 client gets an authorization code and nothing else.
    if (client.profile === 'fapi2' && responseType !== 'code')
      throw new OAuthError('unsupported_response_type', 'a FAPI 2.0 client may only use response_type=code');
    if (modeParam === 'query' && responseType !== 'code')
      throw invalidRequest('tokens are never returned in the query (response_mode=query)');
    if (!client.allowedGrantTypes.includes(grantFor(responseType)) && !(responseType === 'code' && client.allowedGrantTypes.includes('hybrid')))
      throw new OAuthError('unauthorized_client', 'the client may not use this response_type');
    const returnsToken = responseType.split(' ').includes('token');
    const returnsCode = responseType.startsWith('code');
    const returnsIdToken = responseType.includes('id_token');
    if (returnsToken && !client.allowAccessTokensViaBrowser)
      throw new OAuthError('unauthorized_client', 'the client may not receive access tokens from this endpoint');

    const scopeParam = params.get('scope');
    if (scopeParam === undefined) throw invalidRequest('scope is missing');
    let scopes = parseScope(scopeParam);
    for (const s of scopes) {
      const known = s === OFFLINE_ACCESS || ctx.resources.identity.has(s) || ctx.resources.apiScopes.has(s);
      if (!known) throw invalidScope(`unknown scope "${s}"`);
      if (s === OFFLINE_ACCESS ? !client.allowOfflineAccess : !client.allowedScopes.includes(s))
        throw invalidScope(`scope "${s}" is not allowed for this client`);
    }
    const hasOpenid = scopes.includes('openid');
    if (returnsIdToken && !hasOpenid) throw invalidRequest('the openid scope is required for an identity token');
    if (!hasOpenid && scopes.some((s) => ctx.resources.identity.has(s)))
      throw invalidScope('identity scopes need the openid scope');
    // OIDC Core §11: offline_access is ignored unless a code is returned.
    if (!returnsCode) scopes = scopes.filter((s) => s !== OFFLINE_ACCESS);
    if (responseType === 'token' && scopes.some((s) => ctx.resources.identity.has(s)))
      throw invalidScope('response_type token carries API scopes only');
    if (responseType === 'id_token' && scopes.some((s) => ctx.resources.apiScopes.has(s)))
      throw invalidScope('response_type id_token carries identity scopes only');
    if (scopes.length === 0) throw invalidScope('no scope can be granted');

    const nonce = params.get('nonce');
    if (nonce === undefined && returnsIdToken) throw invalidRequest('nonce is required when an identity token is returned');

    const prompt = new Set((params.get('prompt') ?? '').split(' ').filter((p) => p !== ''));
    for (const p of prompt) if (!PROMPTS.has(p)) throw invalidRequest(`prompt "${p}" is not supported`);
    if (prompt.has('none') && prompt.size > 1) throw invalidRequest('prompt=none cannot be combined');

    const maxAgeParam = params.get('max_age');
    let maxAge: number | undefined;
    if (maxAgeParam !== undefined) {
      if (!/^\d{1,10}$/.test(maxAgeParam)) throw invalidRequest('max_age must be a non-negative integer');
      maxAge = Number(maxAgeParam);
    }
    const loginHint = params.get('login_hint');
    const uiLocales = params.get('ui_locales');
    const acrValuesParam = params.get('acr_values');
    const acr = parseAcrValues(acrValuesParam);
    const claimsParam = params.get('claims');
    const claims = claimsParam === undefined ? undefined : parseClaimsParameter(claimsParam);
    let essentialAcr: unknown[] | undefined;
    let claimsSubject: string | undefined;
    if (claims) {
      if (!hasOpenid) throw invalidRequest('the claims parameter needs the openid scope');
      // OIDC Core §5.5: userinfo claims need a response type that issues an access token.
      if (claims.userinfo.size > 0 && responseType === 'id_token')
        throw invalidRequest('claims.userinfo needs a response_type that returns an access token');
      const acrClaim = claims.id_token.get('acr');
      if (acrClaim?.essential && acrClaim.values !== undefined) {
        if (acrClaim.values.length === 0) throw invalidRequest('claims.id_token.acr asks for no value');
        essentialAcr = acrClaim.values;
      }
      const sub = claims.id_token.get('sub') ?? claims.userinfo.get('sub');
      if (sub?.values !== undefined) {
        const [only] = sub.values;
        if (sub.values.length !== 1 || typeof only !== 'string') throw invalidRequest('claims sub.value must be one string');
        claimsSubject = only;
      }
    }
    const acrRequested = acrValuesParam !== undefined || (claims?.id_token.has('acr') ?? false);

    let codeChallenge: string | undefined;
    let codeChallengeMethod: PkceMethod | undefined;
    if (returnsCode) {
      codeChallenge = params.get('code_challenge');
      const method = params.get('code_challenge_method') ?? 'plain';
      if (codeChallenge === undefined) {
        if (client.requirePkce || client.isPublic) throw invalidRequest('code_challenge is required (PKCE)');
      } else {
        if (method !== 'S256' && method !== 'plain') throw invalidRequest('code_challenge_method is not supported');
        if (method === 'plain' && !client.allowPlainTextPkce) throw invalidRequest('code_challenge_method must be S256');
        if (!isPkceValue(codeChallenge)) throw invalidRequest('code_challenge is malformed');
        codeChallengeMethod = method;
      }
    }

    // RFC 9449 §10: a SHA-256 JWK thumbprint is 43 base64url characters.
    const dpopJkt = params.get('dpop_jkt');
    if (dpopJkt !== undefined && !/^[A-Za-z0-9_-]{43}$/.test(dpopJkt))
      throw invalidRequest('dpop_jkt must be the base64url SHA-256 JWK thumbprint of the DPoP key');
    // RFC 8707 §2.1. A pending request keeps its resources space-separated in one value (a
    // resource indicator has no spaces), so both spellings are read.
    const resources = requestedResources(params.getAll('resource').flatMap((v) => v.split(' ')), client, ctx.resources);
    if (resources !== undefined && (returnsToken || !returnsCode))
      throw invalidTarget('resource indicators are supported with the code flow only (the token endpoint narrows the tokens)');

    const hint = params.get('id_token_hint');
    let hintSubject: string | undefined;
    if (hint !== undefined) {
      const verified = await ctx.tokens.verifyIdTokenHint(hint);
      if (!verified) throw invalidRequest('id_token_hint is not valid');
      hintSubject = verified.sub;
    }

    const effective: Record<string, string> = {};
    for (const name of PARAMS_KEPT) {
      const v = params.get(name);
      if (v !== undefined) effective[name] = v;
    }
    if (params.has('resource')) effective.resource = params.getAll('resource').join(' ');
    return {
      ...target,
      client,
      responseType,
      scopes,
      prompt,
      acr,
      acrRequested,
      params: effective,
      ...(claims !== undefined ? { claims } : {}),
      ...(essentialAcr !== undefined ? { essentialAcr } : {}),
      ...(claimsSubject !== undefined ? { claimsSubject } : {}),
      ...(nonce !== undefined ? { nonce } : {}),
      ...(maxAge !== undefined ? { maxAge } : {}),
      ...(loginHint !== undefined ? { loginHint } : {}),
      ...(uiLocales !== undefined ? { uiLocales } : {}),
      ...(codeChallenge !== undefined ? { codeChallenge } : {}),
      ...(codeChallengeMethod !== undefined ? { codeChallengeMethod } : {}),
      ...(hintSubject !== undefined ? { hintSubject } : {}),
      ...(dpopJkt !== undefined && returnsCode ? { dpopJkt } : {}),
      ...(resources !== undefined ? { resources } : {}),
    };
  } catch (err) {
    if (err instanceof AuthorizeError) throw err;
    if (!(err instanceof OAuthError)) throw err;
    throw new AuthorizeError(err, target);
  }
}

/** The parameters a pending request keeps to be resumed after login and consent. */
const PARAMS_KEPT = [
  'client_id', 'redirect_uri', 'response_type', 'response_mode', 'scope', 'state', 'nonce', 'prompt', 'max_age',
  'login_hint', 'ui_locales', 'acr_values', 'code_challenge', 'code_challenge_method', 'id_token_hint', 'claims',
  'dpop_jkt',
];

/** Whether `name` was sent more than once (RFC 6749 §3.1). */
function isRepeated(params: Params, name: string): boolean {
  try {
    params.get(name);
    return false;
  } catch {
    return true;
  }
}

function safeGet(params: Params, name: string): string | undefined {
  try {
    return params.get(name);
  } catch {
    return undefined;
  }
}
