/**
 * The grant registry of the token endpoint (RFC 6749 §4, §4.5): built-in grants plus extension
 * grants a library user registers by name. A client may use a grant only when it lists it in
 * `allowedGrantTypes` (refresh tokens: `allowOfflineAccess`).
 */
import type { Services } from '../services.js';
import { OAuthError, invalidRequest } from '../protocol/errors.js';
import type { Params } from '../protocol/params.js';
import type { TokenResponse } from '../tokens/tokens.js';
import type { Client } from '../clients/registry.js';
import type { DPoPProof } from '../validation/dpop.js';
import type { RequestOrigin } from '../events/events.js';

/** The services a grant handler is given: what the built-in grants use together (the token endpoint hands them on). */
export type GrantServices = Pick<
  Services,
  | 'clientKeys'
  | 'clients'
  | 'config'
  | 'events'
  | 'hooks'
  | 'issuer'
  | 'keys'
  | 'limiter'
  | 'mfa'
  | 'replay'
  | 'resources'
  | 'store'
  | 'tokens'
  | 'upstream'
  | 'users'
>;

/** One authenticated token request, as a grant sees it. */
export interface GrantRequest {
  params: Params;
  client: Client;
  /** Who made the request: its address counts in the rate limits; all of it goes into events. */
  origin: RequestOrigin;
  /** The request's valid DPoP proof (RFC 9449 §5), if it sent one: its tokens are bound to that key. */
  dpop?: DPoPProof;
}

/**
 * The key binding of a grant request's tokens (RFC 9449 §6.1), spread into an `Issuance`: the
 * proof key's thumbprint when a DPoP proof came with the request, else nothing.
 */
export function bindingOf(req: Pick<GrantRequest, 'dpop'>): { jkt?: string } {
  return req.dpop ? { jkt: req.dpop.jkt } : {};
}

/**
 * The answer of a token exchange for an ID-JAG (draft-ietf-oauth-identity-assertion-authz-grant
 * §"Response"; RFC 8693 §2.2.1): the grant travels as `access_token` though it is none, so
 * `token_type` is `N_A`; `scope` only when the request named scopes; never a refresh token.
 */
export interface IdJagResponse {
  access_token: string;
  issued_token_type: string;
  token_type: 'N_A';
  /** Seconds until the ID-JAG expires. */
  expires_in: number;
  scope?: string;
}

/** What a grant produced: the response and, for events, who it was for. */
export interface GrantOutcome {
  response: TokenResponse | IdJagResponse;
  subjectId?: string;
}

/** A grant type's handler. Throws `OAuthError` for any refusal. */
export type GrantHandler = (ctx: GrantServices, req: GrantRequest) => Promise<GrantOutcome>;

/** Grant handlers by `grant_type`. */
export class GrantRegistry {
  private readonly handlers = new Map<string, GrantHandler>();

  /**
   * Registers a handler.
   * @throws Error when the grant type is already registered.
   */
  register(grantType: string, handler: GrantHandler): void {
    if (this.handlers.has(grantType)) throw new Error(`grant type "${grantType}" is already registered`);
    this.handlers.set(grantType, handler);
  }

  /** Every registered grant type (discovery `grant_types_supported`). */
  names(): string[] {
    return [...this.handlers.keys()];
  }

  /**
   * The handler for a request's `grant_type`, checked against the client.
   * @throws OAuthError `invalid_request` (missing), `unsupported_grant_type` (unknown to the
   *   server), `unauthorized_client` (not allowed for this client).
   */
  resolve(grantType: string | undefined, client: Client): GrantHandler {
    if (grantType === undefined) throw invalidRequest('parameter "grant_type" is missing');
    const handler = this.handlers.get(grantType);
    if (!handler) throw new OAuthError('unsupported_grant_type', 'the grant type is not supported');
    const grants = client.allowedGrantTypes;
    const allowed =
      grantType === 'refresh_token'
        ? client.allowOfflineAccess
        : grants.includes(grantType) || (grantType === 'authorization_code' && grants.includes('hybrid'));
    if (!allowed) throw new OAuthError('unauthorized_client', 'the client may not use this grant type');
    return handler;
  }
}
