/**
 * OAuth 2.0 Token Exchange (RFC 8693) for delegation, as a built-in extension grant: a client that
 * received a user's access token (`subject_token`) obtains a new access token for that user, for
 * the scopes it may request, carrying an `act` claim that names the acting party (§4.1).
 *
 * The actor is the subject of `actor_token` when one is sent (it must be an access token issued to
 * the requesting client), otherwise the requesting client itself. Sigil never impersonates: every
 * exchanged token says who acts. No refresh token is issued.
 */
import { invalidRequest, invalidScope } from '../errors.js';
import { OFFLINE_ACCESS } from '../validation/scopes.js';
import type { ExtensionGrant } from './extension.js';

/** `grant_type` of RFC 8693 §2.1. */
export const TOKEN_EXCHANGE = 'urn:ietf:params:oauth:grant-type:token-exchange';
/** Token type identifier of an access token (RFC 8693 §3). */
export const ACCESS_TOKEN_TYPE = 'urn:ietf:params:oauth:token-type:access_token';

/**
 * The token exchange grant. Errors follow RFC 8693 §2.2.2: an invalid or unacceptable
 * `subject_token` or `actor_token` is `invalid_request`; scopes beyond the client's are
 * `invalid_scope`.
 */
export const tokenExchangeGrant: ExtensionGrant = {
  grantType: TOKEN_EXCHANGE,
  async validate(ctx) {
    const subjectToken = ctx.params.require('subject_token');
    if (ctx.params.require('subject_token_type') !== ACCESS_TOKEN_TYPE)
      throw invalidRequest('subject_token_type must be an access token type');
    const requested = ctx.params.get('requested_token_type');
    if (requested !== undefined && requested !== ACCESS_TOKEN_TYPE)
      throw invalidRequest('only access tokens can be requested');
    const subject = await ctx.validateAccessToken(subjectToken);
    if (!subject) throw invalidRequest('subject_token is invalid or expired');
    if (typeof subject.claims.auth_time !== 'number') throw invalidRequest('subject_token does not represent a user');

    const actorToken = ctx.params.get('actor_token');
    let actor: Record<string, unknown> = { sub: ctx.client.clientId, client_id: ctx.client.clientId };
    if (actorToken !== undefined) {
      if (ctx.params.require('actor_token_type') !== ACCESS_TOKEN_TYPE)
        throw invalidRequest('actor_token_type must be an access token type');
      const validActor = await ctx.validateAccessToken(actorToken);
      if (!validActor || validActor.claims.client_id !== ctx.client.clientId)
        throw invalidRequest('actor_token is invalid or was not issued to this client');
      actor = { sub: validActor.claims.sub, client_id: validActor.claims.client_id };
    } else if (ctx.params.has('actor_token_type')) throw invalidRequest('actor_token_type without actor_token');
    // Earlier actors nest inside the new one (RFC 8693 §4.1).
    if (subject.claims.act !== undefined) actor.act = subject.claims.act;

    if (ctx.scopes.includes(OFFLINE_ACCESS)) {
      if (ctx.scopeRequested) throw invalidScope('token exchange does not issue refresh tokens');
    }
    const subjectScopes = String(subject.claims.scope ?? '').split(' ');
    const scopes = ctx.scopeRequested
      ? [...ctx.scopes]
      : ctx.scopes.filter((s) => s !== OFFLINE_ACCESS && subjectScopes.includes(s));
    if (scopes.length === 0) throw invalidScope('no scope can be granted');
    return {
      subject: {
        subjectId: subject.claims.sub,
        authTime: subject.claims.auth_time,
        amr: Array.isArray(subject.claims.amr) ? (subject.claims.amr as string[]) : ['token-exchange'],
      },
      scopes,
      claims: { act: actor },
      response: { issued_token_type: ACCESS_TOKEN_TYPE },
    };
  },
};
