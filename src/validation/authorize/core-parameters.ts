/**
 * The core of an authorization request (RFC 6749 §3.1.1; OAuth 2.0 Multiple Response Types §3,
 * §5; FAPI 2.0 SP §5.3.2.2): the `response_type`, the response mode it allows, and whether the
 * client may use it.
 */
import { OAuthError, invalidRequest } from '../../protocol/errors.js';
import type { Client } from '../../clients/registry.js';
import { RESPONSE_TYPES, type ResponseMode, type ResponseType } from './types.js';

/** What a valid `response_type` returns from the authorization endpoint. */
export interface ResponseFlow {
  responseType: ResponseType;
  /** An authorization code (`code`, and the hybrid types). */
  returnsCode: boolean;
  /** An identity token (`id_token`). */
  returnsIdToken: boolean;
  /** An access token (`token`). */
  returnsToken: boolean;
}

/** Normalizes a `response_type` (space-separated, any order) to one of `RESPONSE_TYPES`. */
export function normalizeResponseType(value: string): ResponseType | undefined {
  const parts = value.split(' ');
  if (parts.some((p) => p === '') || new Set(parts).size !== parts.length) return undefined;
  const order = ['code', 'id_token', 'token'];
  const sorted = [...parts].sort((a, b) => order.indexOf(a) - order.indexOf(b)).join(' ');
  return (RESPONSE_TYPES as readonly string[]).includes(sorted) ? (sorted as ResponseType) : undefined;
}

/**
 * The mode a response, or an error, travels in: `form_post` when asked, `fragment` when asked or
 * when anything but a code is returned (Multiple Response Types §5: tokens never in the query),
 * else `query`. An unknown or missing `response_type` travels as `code` would.
 * @param asked the `response_mode` sent, if any (any value: unsupported ones are ignored here)
 */
export function responseModeFor(responseType: ResponseType | undefined, asked: string | undefined): ResponseMode {
  const mode: ResponseMode = responseType && responseType !== 'code' ? 'fragment' : 'query';
  if (asked === 'form_post' || (asked === 'fragment' && mode === 'query')) return asked;
  return mode;
}

/** The grant type a client needs for a response type (its `allowedGrantTypes` must list it). */
function grantFor(rt: ResponseType): string {
  if (rt === 'code') return 'authorization_code';
  return rt.startsWith('code ') ? 'hybrid' : 'implicit';
}

/**
 * Checks the `response_type` sent, against the `response_mode` sent and the client.
 * @throws OAuthError `invalid_request` (missing; tokens asked with `response_mode=query`),
 *   `unsupported_response_type` (not one of `RESPONSE_TYPES`; anything but `code` for a `fapi2`
 *   client), `unauthorized_client` (the client lacks the grant type, or returns an access token
 *   without `allowAccessTokensViaBrowser`).
 */
export function checkResponseType(
  value: string | undefined,
  responseMode: string | undefined,
  client: Client,
): ResponseFlow {
  if (value === undefined) throw invalidRequest('response_type is missing');
  const responseType = normalizeResponseType(value);
  if (!responseType) throw new OAuthError('unsupported_response_type', 'response_type is not supported');
  // FAPI 2.0 SP §5.3.2.2: a fapi2 client gets an authorization code and nothing else.
  if (client.profile === 'fapi2' && responseType !== 'code')
    throw new OAuthError('unsupported_response_type', 'a FAPI 2.0 client may only use response_type=code');
  if (responseMode === 'query' && responseType !== 'code')
    throw invalidRequest('tokens are never returned in the query (response_mode=query)');
  if (
    !client.allowedGrantTypes.includes(grantFor(responseType)) &&
    !(responseType === 'code' && client.allowedGrantTypes.includes('hybrid'))
  )
    throw new OAuthError('unauthorized_client', 'the client may not use this response_type');
  const returnsToken = responseType.split(' ').includes('token');
  if (returnsToken && !client.allowAccessTokensViaBrowser)
    throw new OAuthError('unauthorized_client', 'the client may not receive access tokens from this endpoint');
  return {
    responseType,
    returnsCode: responseType.startsWith('code'),
    returnsIdToken: responseType.includes('id_token'),
    returnsToken,
  };
}
