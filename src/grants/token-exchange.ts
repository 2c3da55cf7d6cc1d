/**
 * OAuth 2.0 Token Exchange (RFC 8693), one grant type for two exchanges told apart by
 * `requested_token_type` (`tokenExchangeHandler`): an identity token for an ID-JAG
 * (draft-ietf-oauth-identity-assertion-authz-grant, `id-jag-exchange.ts`), and, for any other,
 * delegation, as a built-in extension grant (below): a client that
 * received a user's access token (`subject_token`) obtains a new access token for that user,
 * carrying an `act` claim that names the acting party (§4.1).
 *
 * Policy (RFC 8693 §2.1 "MUST perform the appropriate validation", §5):
 * - Which subject tokens: one issued to the requesting client itself (its `client_id`), or one
 *   whose `aud` names an API resource listed in the client's `tokenExchangeSubjectAudiences` (the
 *   client acts as that API). Anything else is `invalid_request` (§2.2.2).
 * - Who acts: the subject of `actor_token` when one is sent (it must be an access token issued to
 *   the requesting client), otherwise the requesting client itself. When the subject token carries
 *   `may_act` (§4.4) the actor must match it, else `invalid_request`, and the new token carries
 *   the same `may_act`, so a restriction cannot be shed by one more hop. Sigil never impersonates.
 * - What is granted: never more than the subject token. Requested scopes must all be among the
 *   subject token's scopes (else `invalid_scope`, RFC 6749 §3.3); omitted `scope` means the subject
 *   token's scopes that the client may request. Identity scopes therefore only where the subject
 *   token carried them, and never `offline_access`: no refresh token is issued.
 * - How long: the new token joins the subject token's grant family, so revoking that grant (a
 *   refresh token at /connect/revocation, RFC 7009 §2.1) also ends it, and its `exp` is never later
 *   than the subject token's, so exchanging an exchanged token cannot extend a grant.
 * - Which key: a subject token bound to a DPoP key (`cnf.jkt`, RFC 9449 §6.1) needs a proof made
 *   with that key whose `ath` is the subject token's hash (§4.2: the proof names the access token
 *   it comes with); a bound actor token needs a proof made with its key (one proof carries one
 *   `ath`, which belongs to the subject token). The new token is bound to the proof's key, so a
 *   stolen bound token is no use without its key and no exchange turns it into a Bearer token.
 */
import type { GrantOrganization } from '../stores/records/grant-data.js';
import { invalidRequest, invalidScope } from '../protocol/errors.js';
import { OFFLINE_ACCESS } from '../resources/scopes.js';
import { mayActPermits } from '../tokens/may-act.js';
import { boundKey } from '../tokens/tokens.js';
import { accessTokenHash, invalidDPoPProof } from '../validation/dpop.js';
import { type ExtensionGrant, extensionGrantHandler } from './extension.js';
import { ID_JAG_TOKEN_TYPE, idJagExchange } from './id-jag-exchange.js';
import type { GrantHandler } from './registry.js';

/** `grant_type` of RFC 8693 §2.1. */
export const TOKEN_EXCHANGE = 'urn:ietf:params:oauth:grant-type:token-exchange';
/** Token type identifier of an access token (RFC 8693 §3). */
export const ACCESS_TOKEN_TYPE = 'urn:ietf:params:oauth:token-type:access_token';

/**
 * The token exchange grant. Errors follow RFC 8693 §2.2.2: an invalid or unacceptable
 * `subject_token` or `actor_token` (unknown, expired, revoked, no user, another client's token
 * outside `tokenExchangeSubjectAudiences`, an actor `may_act` does not name, a DPoP-bound one sent
 * without a proof) is `invalid_request`; a proof of another key than a bound token's, or without
 * the subject token's `ath` when that is bound, is `invalid_dpop_proof` (RFC 9449 §5); scopes
 * beyond the subject token's or the client's, or `offline_access`, are `invalid_scope`.
 */
export const tokenExchangeGrant: ExtensionGrant = {
  grantType: TOKEN_EXCHANGE,
  async validate(ctx) {
    const subjectToken = ctx.params.require('subject_token');
    if (ctx.params.require('subject_token_type') !== ACCESS_TOKEN_TYPE)
      throw invalidRequest('subject_token_type must be an access token type');
    const requested = ctx.params.get('requested_token_type');
    if (requested !== undefined && requested !== ACCESS_TOKEN_TYPE)
      throw invalidRequest('only access tokens and ID-JAGs can be requested');
    const subject = await ctx.validateAccessToken(subjectToken);
    if (!subject) throw invalidRequest('subject_token is invalid or expired');
    // validateAccessToken matched the proof's key to a bound token's; ath ties the proof to it.
    if (boundKey(subject.claims) !== undefined && ctx.dpop?.ath !== accessTokenHash(subjectToken))
      throw invalidDPoPProof("the DPoP proof's ath must be the hash of the subject_token");
    if (typeof subject.claims.auth_time !== 'number') throw invalidRequest('subject_token does not represent a user');
    if (typeof subject.claims.exp !== 'number') throw invalidRequest('subject_token has no expiry');
    const aud =
      subject.claims.aud === undefined
        ? []
        : Array.isArray(subject.claims.aud)
          ? subject.claims.aud
          : [subject.claims.aud];
    const acceptable =
      subject.claims.client_id === ctx.client.clientId ||
      aud.some((a) => ctx.client.tokenExchangeSubjectAudiences.includes(a));
    if (!acceptable)
      throw invalidRequest('this client may not exchange the subject_token (see tokenExchangeSubjectAudiences)');

    const actorToken = ctx.params.get('actor_token');
    let actor: { sub: string; client_id: string; act?: unknown } = {
      sub: ctx.client.clientId,
      client_id: ctx.client.clientId,
    };
    if (actorToken !== undefined) {
      if (ctx.params.require('actor_token_type') !== ACCESS_TOKEN_TYPE)
        throw invalidRequest('actor_token_type must be an access token type');
      const validActor = await ctx.validateAccessToken(actorToken);
      if (!validActor || validActor.claims.client_id !== ctx.client.clientId)
        throw invalidRequest('actor_token is invalid or was not issued to this client');
      actor = { sub: validActor.claims.sub, client_id: validActor.claims.client_id };
    } else if (ctx.params.has('actor_token_type')) throw invalidRequest('actor_token_type without actor_token');
    if (subject.claims.may_act !== undefined && !mayActPermits(subject.claims.may_act, actor))
      throw invalidRequest("the subject_token's may_act does not name this actor");
    // Earlier actors nest inside the new one (RFC 8693 §4.1).
    if (subject.claims.act !== undefined) actor.act = subject.claims.act;

    // ctx.scopes are already known and allowed for this client; the subject token bounds them.
    const subjectScopes = String(subject.claims.scope ?? '').split(' ');
    let scopes: string[];
    if (ctx.scopeRequested) {
      if (ctx.scopes.includes(OFFLINE_ACCESS)) throw invalidScope('token exchange does not issue refresh tokens');
      const beyond = ctx.scopes.find((s) => !subjectScopes.includes(s));
      if (beyond !== undefined) throw invalidScope(`scope "${beyond}" exceeds the subject_token's scopes`);
      scopes = [...ctx.scopes];
    } else scopes = ctx.scopes.filter((s) => s !== OFFLINE_ACCESS && subjectScopes.includes(s));
    if (scopes.length === 0) throw invalidScope('no scope can be granted');
    return {
      subject: {
        subjectId: subject.claims.sub,
        authTime: subject.claims.auth_time,
        amr: Array.isArray(subject.claims.amr) ? (subject.claims.amr as string[]) : ['token-exchange'],
        // The subject token's organization goes on unchanged; no parameter of the exchange names one.
        ...organizationOf(subject.claims),
      },
      scopes,
      claims: { act: actor, ...(subject.claims.may_act !== undefined ? { may_act: subject.claims.may_act } : {}) },
      ...(subject.familyId !== undefined ? { familyId: subject.familyId } : {}),
      expiresAt: subject.claims.exp,
      response: { issued_token_type: ACCESS_TOKEN_TYPE },
    };
  },
};

const delegation = extensionGrantHandler(tokenExchangeGrant);

/**
 * The token endpoint's handler of `grant_type=urn:ietf:params:oauth:grant-type:token-exchange`:
 * `requested_token_type=urn:ietf:params:oauth:token-type:id-jag` asks for an ID-JAG
 * (`idJagExchange`), anything else for a delegated access token (`tokenExchangeGrant`). Errors
 * are theirs.
 */
export const tokenExchangeHandler: GrantHandler = (ctx, req) =>
  req.params.get('requested_token_type') === ID_JAG_TOKEN_TYPE ? idJagExchange(ctx, req) : delegation(ctx, req);

/** The organization a subject token carries (`org_id`, `org_name`, `org_roles`), as a grant keeps it. */
function organizationOf(claims: Record<string, unknown>): { organization?: GrantOrganization } {
  const { org_id: id, org_name: name, org_roles: roles } = claims;
  if (typeof id !== 'string' || typeof name !== 'string') return {};
  const kept = Array.isArray(roles) ? roles.filter((r): r is string => typeof r === 'string') : [];
  return { organization: { id, name, roles: kept } };
}
