/**
 * Extension grants (RFC 6749 §4.5): a library user registers a grant type by name with a
 * `validate` function; Sigil does client authentication, scope validation and token issuance
 * around it. A client uses one only when it lists the name in `allowedGrantTypes`.
 */
import type { ClientConfig } from '../config/schema.js';
import { invalidGrant, invalidScope } from '../errors.js';
import { nowSeconds } from '../tokens/handles.js';
import type { Subject, TokenResponse, ValidAccessToken } from '../tokens/tokens.js';
import { claimsOf, type User } from '../users/users.js';
import { OFFLINE_ACCESS, validateScopes } from '../validation/scopes.js';
import { newRefreshPlan } from './password.js';
import type { GrantHandler } from './registry.js';

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
  /** Validates an access token issued by this Sigil; undefined when invalid, expired or revoked. */
  validateAccessToken(token: string): Promise<ValidAccessToken | undefined>;
  /** Finds a user by subject. */
  findUser(subjectId: string): Promise<User | undefined>;
}

/** What `validate` returns on success. */
export interface ExtensionGrantResult {
  /** The user the token is for; omitted for a client-only token. */
  subject?: { subjectId: string; amr?: string[]; authTime?: number; claims?: Record<string, unknown> };
  /** Scopes to grant, a subset of `ctx.scopes`; default `ctx.scopes`. */
  scopes?: string[];
  /** Extra access-token claims; protocol claims other than `act` are ignored. */
  claims?: Record<string, unknown>;
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
 * active), then issues an access token and, with `offline_access` and a user, a refresh token.
 */
export function extensionGrantHandler(grant: ExtensionGrant): GrantHandler {
  return async (ctx, { params, client }) => {
    const scopeParam = params.get('scope');
    const validated = validateScopes(scopeParam, client, ctx.resources, 'user');
    const result = await grant.validate({
      client,
      params,
      scopes: validated,
      scopeRequested: scopeParam !== undefined,
      validateAccessToken: (t) => ctx.tokens.validateAccessToken(t),
      findUser: (s) => ctx.users.findBySubject(s),
    });
    let scopes = result.scopes ?? validated;
    for (const s of scopes) if (!validated.includes(s)) throw invalidScope(`scope "${s}" was not requested`);
    let subject: Subject | undefined;
    const now = nowSeconds();
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
    const response = await ctx.tokens.issue({
      client,
      scopes,
      ...(subject ? { subject } : {}),
      refresh: subject ? newRefreshPlan(client, scopes, now) : { kind: 'none' },
      ...(result.claims ? { extraClaims: result.claims } : {}),
    });
    return { response: { ...response, ...(result.response ?? {}) } as TokenResponse, ...(subject ? { subjectId: subject.subjectId } : {}) };
  };
}
