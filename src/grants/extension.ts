/**
 * Extension grants (RFC 6749 §4.5): a library user registers a grant type by name with a
 * `validate` function; Sigil does client authentication, scope validation and token issuance
 * around it. A client uses one only when it lists the name in `allowedGrantTypes`.
 */
import type { ClientConfig } from '../config/schema.js';
import { invalidGrant, invalidRequest, invalidScope } from '../protocol/errors.js';
import { nowSeconds } from '../crypto/handles.js';
import { isMayAct } from '../tokens/may-act.js';
import { boundKey, type Subject, type TokenResponse, type ValidAccessToken } from '../tokens/tokens.js';
import { claimsOf, type User } from '../users/users.js';
import { type DPoPProof, invalidDPoPProof } from '../validation/dpop.js';
import { OFFLINE_ACCESS, validateScopes } from '../resources/scopes.js';
import { newRefreshPlan } from './password.js';
import { bindingOf, type GrantHandler } from './registry.js';
import { askPreToken } from './pre-token.js';

/** What an extension grant's `validate` receives. */
export interface ExtensionGrantContext {
  /** The authenticated client. */
  client: Readonly<ClientConfig>;
  /** The request's form parameters (`get` throws `invalid_request` on a repeated parameter). */
  params: { get(name: string): string | undefined; require(name: string): string; has(name: string): boolean };
  /** The validated scopes: the requested ones, or all the client may have when `scope` was omitted. */
  scopes: readonly string[];
  /** Whether the request named its scopes (false: `scopes` are the client's defaults). */
  scopeRequested: boolean;
  /**
   * Validates an access token issued by this Sigil; undefined when invalid, expired or revoked, or
   * when its client was removed since (also when a client of the same id was created after it).
   * Its `familyId` is what a result may name as `ExtensionGrantResult.familyId`. A token bound to
   * a DPoP key (`cnf.jkt`, RFC 9449 §6.1) is accepted only with a proof of that key (`dpop`), and
   * the issued tokens are then bound to the key, so no grant turns a bound token into Bearer tokens.
   * @throws OAuthError `invalid_request` (a bound token and no proof), `invalid_dpop_proof` (the
   *   proof is made with another key)
   */
  validateAccessToken(token: string): Promise<ValidAccessToken | undefined>;
  /** The request's checked DPoP proof (RFC 9449 §4.3), if it sent one: the issued tokens are bound to its key. */
  dpop?: DPoPProof;
  /** Finds a user by subject. */
  findUser(subjectId: string): Promise<User | undefined>;
}

/** What `validate` returns on success. */
export interface ExtensionGrantResult {
  /** The user the token is for; omitted for a client-only token. */
  subject?: { subjectId: string; amr?: string[]; authTime?: number; claims?: Record<string, unknown> };
  /** Scopes to grant, a subset of `ctx.scopes`; default `ctx.scopes`. */
  scopes?: string[];
  /**
   * Extra access-token claims; protocol claims other than `act` (RFC 8693 §4.1) and `may_act`
   * (§4.4) are ignored. `may_act` must be an object with `sub` and/or `client_id` (strings) and
   * nothing else (see `isMayAct`); it limits who may later exchange the token (the built-in token
   * exchange enforces it). Anything else there is a programming error and fails the request (500).
   */
  claims?: Record<string, unknown>;
  /**
   * The grant family the tokens join: the `familyId` of a token this request validated through
   * `ctx.validateAccessToken` (naming any other family is a programming error, 500). The tokens
   * are then revoked with that grant (RFC 7009 §2.1); should it be revoked while they are being
   * issued, the request fails with `invalid_request` and they are revoked too. Default: a new family.
   */
  familyId?: string;
  /**
   * Latest expiry of the issued tokens, Unix seconds: the access token's `exp` (and `expires_in`)
   * and a refresh token's expiry are capped to it. Already past: `invalid_grant`. Default: no cap.
   */
  expiresAt?: number;
  /** Extra members of the token response (e.g. `issued_token_type`). */
  response?: Record<string, string | number>;
}

/** An extension grant: its `grant_type` name and validator. Refuse by throwing `OAuthError`. */
export interface ExtensionGrant {
  grantType: string;
  validate(ctx: ExtensionGrantContext): Promise<ExtensionGrantResult>;
}

/**
 * Wraps an extension grant as a token endpoint handler: validates scopes, runs `validate`, checks
 * its result (scopes within the validated ones; a user must exist unless claims are given, and be
 * active; a named family validated in this request; an expiry cap not yet past), then issues an
 * access token and, with `offline_access` and a user, a refresh token, in the named family and
 * within the cap, bound to the request's DPoP key if it sent a proof (RFC 9449 §5).
 * @throws OAuthError `invalid_scope`, `invalid_grant` (unknown or inactive user, cap past, denied by
 *   the `preToken` hook),
 *   `invalid_request` (the named family was revoked meanwhile; a DPoP-bound token validated without
 *   a proof), `invalid_dpop_proof` (a bound token validated with another key's proof), or whatever
 *   `validate` throws.
 */
export function extensionGrantHandler(grant: ExtensionGrant): GrantHandler {
  return async (ctx, req) => {
    const { params, client } = req;
    const scopeParam = params.get('scope');
    const validated = validateScopes(scopeParam, client, ctx.resources, 'user');
    // Grant families of the tokens validated in this request, each with the id of one of them
    // (a JWT's jti, a reference token's handle: what its row is stored under).
    const families = new Map<string, string>();
    const result = await grant.validate({
      client,
      params,
      scopes: validated,
      scopeRequested: scopeParam !== undefined,
      validateAccessToken: async (t) => {
        const found = await ctx.tokens.validateAccessToken(t);
        // A removed client's tokens are no subject or actor token either (RFC 7592 §2.3), also under
        // a client later created with the same id, as at introspection.
        const valid = found && ctx.clients.stillIssuesTo(found.claims.client_id, found.claims.iat) ? found : undefined;
        const jkt = valid && boundKey(valid.claims);
        if (jkt !== undefined) {
          if (!req.dpop)
            throw invalidRequest(
              'an access token of this request is bound to a DPoP key: send a DPoP proof made with that key (RFC 9449)',
            );
          if (req.dpop.jkt !== jkt)
            throw invalidDPoPProof(
              'the DPoP proof is not made with the key an access token of this request is bound to',
            );
        }
        if (valid?.familyId !== undefined)
          families.set(valid.familyId, valid.format === 'jwt' ? String(valid.claims.jti) : t);
        return valid;
      },
      findUser: (s) => ctx.users.findBySubject(s),
      ...(req.dpop ? { dpop: req.dpop } : {}),
    });
    const familyToken = result.familyId === undefined ? undefined : families.get(result.familyId);
    if (result.familyId !== undefined && familyToken === undefined)
      throw new Error(`extension grant "${grant.grantType}" named a grant family it did not validate`);
    if (result.claims?.may_act !== undefined && !isMayAct(result.claims.may_act))
      throw new Error(`extension grant "${grant.grantType}" returned a may_act that is not { sub?, client_id? }`);
    let scopes = result.scopes ?? validated;
    for (const s of scopes) if (!validated.includes(s)) throw invalidScope(`scope "${s}" was not requested`);
    let subject: Subject | undefined;
    const now = nowSeconds();
    if (result.expiresAt !== undefined && result.expiresAt <= now) throw invalidGrant('the grant has expired');
    if (result.subject) {
      const user = await ctx.users.findBySubject(result.subject.subjectId);
      if (user && !user.isActive) throw invalidGrant('the user is not active');
      if (!user && !result.subject.claims) throw invalidGrant('unknown subject');
      subject = {
        subjectId: result.subject.subjectId,
        authTime: result.subject.authTime ?? now,
        amr: result.subject.amr ?? [grant.grantType],
        claims: (user ? claimsOf(user) : undefined) ?? result.subject.claims ?? {},
      };
    } else {
      // A client-only token carries API scopes only.
      const userOnly = (s: string) => s === OFFLINE_ACCESS || ctx.resources.identity.has(s);
      if (scopeParam !== undefined) {
        const bad = scopes.find(userOnly);
        if (bad) throw invalidScope(`scope "${bad}" needs a user`);
      } else scopes = scopes.filter((s) => !userOnly(s));
      if (scopes.length === 0) throw invalidScope('no scope can be granted');
    }
    const hookClaims = await askPreToken(ctx, client, subject, scopes, grant.grantType);
    const response = await ctx.tokens.issue({
      client,
      scopes,
      ...(subject ? { subject } : {}),
      ...(hookClaims ? { hookClaims } : {}),
      refresh: subject ? capRefreshPlan(newRefreshPlan(client, scopes, now), result.expiresAt) : { kind: 'none' },
      ...(result.claims ? { extraClaims: result.claims } : {}),
      // A DPoP proof binds extension grants' tokens as any other grant's (RFC 9449 §5), and is the
      // key of every bound token validated above.
      ...bindingOf(req),
      ...(result.familyId !== undefined ? { familyId: result.familyId } : {}),
      ...(result.expiresAt !== undefined ? { expiresAt: result.expiresAt } : {}),
    });
    // The family may have been revoked between validation and the writes above; the new tokens
    // must not outlive it (as a concurrent refresh token reuse, refresh-token.ts).
    if (
      result.familyId !== undefined &&
      familyToken !== undefined &&
      (await ctx.store.records.accessTokens.isRevoked(familyToken))
    ) {
      await ctx.store.records.families.revoke(result.familyId, nowSeconds());
      throw invalidRequest('a token of the request was revoked while it was being processed');
    }
    return {
      response: { ...response, ...(result.response ?? {}) } as TokenResponse,
      ...(subject ? { subjectId: subject.subjectId } : {}),
    };
  };
}

/** `plan` with its expiry no later than `cap` (Unix seconds); unchanged without a cap. */
function capRefreshPlan(
  plan: ReturnType<typeof newRefreshPlan>,
  cap: number | undefined,
): ReturnType<typeof newRefreshPlan> {
  if (plan.kind === 'none' || cap === undefined) return plan;
  return {
    ...plan,
    expiresAt: Math.min(plan.expiresAt, cap),
    absoluteExpiresAt: Math.min(plan.absoluteExpiresAt, cap),
  };
}
