/**
 * The shapes of an authorization request's validation (RFC 6749 §4.1.1, §4.2.1; OIDC Core
 * §3.1.2.1): the valid request, where its answer travels, and the refusal that says whether the
 * error goes to the client or to Sigil's error page (RFC 6749 §4.1.2.1).
 */
import type { OAuthError } from '../../protocol/errors.js';
import type { Client } from '../../clients/registry.js';
import type { AcrValues } from '../acr-values.js';
import type { ClaimsParameter } from '../claims-parameter.js';
import type { PkceMethod } from '../pkce.js';
import type { AuthorizationDetail } from '../../stores/records/grant-data.js';
import type { ResponseTarget } from '../../http/authorization-response.js';

export type { ResponseMode, ResponseTarget } from '../../http/authorization-response.js';

/** The `response_type` values Sigil serves, normalized to this order of their parts. */
export const RESPONSE_TYPES = [
  'code',
  'id_token',
  'id_token token',
  'code id_token',
  'code token',
  'code id_token token',
  'token',
] as const;
export type ResponseType = (typeof RESPONSE_TYPES)[number];

/** An organization an authorization request names (`organization=<name>`): its stable id and its name. */
export interface RequestedOrganization {
  id: string;
  name: string;
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
  /** The authorization details of `authorization_details` (RFC 9396 §2), exactly as sent. */
  authorizationDetails?: AuthorizationDetail[];
  /** The organization `organization=<name>` names, when sent (the client's `organizationUsage` allows it). */
  organization?: RequestedOrganization;
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
