/**
 * The `claims` authorization request parameter (OIDC Core §5.5): a JSON object asking for
 * individual claims in the identity token (`id_token`) and from the UserInfo endpoint
 * (`userinfo`), each `null` or `{ essential?, value?, values? }` (§5.5.1). Parsed here, once, for
 * the authorize request validator (plain parameter or inside a request object); what is released
 * is decided at issuance by `releasableClaims`.
 */
import { invalidRequest } from '../protocol/errors.js';
import { type JsonBounds, jsonBoundsViolation } from '../protocol/json-bounds.js';
import type { RequestedClaims } from '../stores/records/grant-data.js';

/** Most characters of the `claims` parameter (about ten times a request naming every standard claim). */
export const MAX_CLAIMS_LENGTH = 4000;

/**
 * Bounds of the `claims` JSON: the deepest standard member is 4 levels (object → `id_token` →
 * claim → `values`); 6 leaves room for a structured `value` without allowing deep nesting.
 */
export const CLAIMS_JSON_BOUNDS: JsonBounds = { maxDepth: 6, maxLength: MAX_CLAIMS_LENGTH };

/** Most claims named in one member (`id_token` or `userinfo`). */
const MAX_CLAIMS_PER_MEMBER = 50;

/** One requested claim (OIDC Core §5.5.1). */
export interface ClaimRequest {
  essential: boolean;
  /** `value` and `values` together, when either was sent. */
  values?: unknown[];
}

/** A parsed `claims` parameter: the claim names requested per target, with their qualifiers. */
export interface ClaimsParameter {
  id_token: Map<string, ClaimRequest>;
  userinfo: Map<string, ClaimRequest>;
}

/** The requested claims that travel with a code, a refresh token and an access token (stored shape). */
export type { RequestedClaims };

/**
 * Parses the `claims` parameter (OIDC Core §5.5). Members other than `id_token` and `userinfo`
 * are ignored (§5.5: extensions); each claim is `null` or an object whose `essential` is a
 * boolean, `values` an array (§5.5.1); other members of a claim object are ignored.
 * @throws OAuthError `invalid_request` when the text is over `CLAIMS_JSON_BOUNDS`, not JSON, not
 *   an object, or a member or qualifier has the wrong type.
 */
export function parseClaimsParameter(text: string): ClaimsParameter {
  const violation = jsonBoundsViolation(text, CLAIMS_JSON_BOUNDS);
  if (violation) throw invalidRequest(`the claims parameter is ${violation}`);
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw invalidRequest('the claims parameter is not valid JSON');
  }
  if (!isObject(parsed)) throw invalidRequest('the claims parameter must be a JSON object');
  return { id_token: member(parsed, 'id_token'), userinfo: member(parsed, 'userinfo') };
}

function member(root: Record<string, unknown>, name: 'id_token' | 'userinfo'): Map<string, ClaimRequest> {
  const out = new Map<string, ClaimRequest>();
  const value = root[name];
  if (value === undefined || value === null) return out;
  if (!isObject(value)) throw invalidRequest(`claims.${name} must be a JSON object`);
  const entries = Object.entries(value);
  if (entries.length > MAX_CLAIMS_PER_MEMBER) throw invalidRequest(`claims.${name} names too many claims`);
  for (const [claim, spec] of entries) {
    if (claim.length === 0 || claim.length > 100) throw invalidRequest(`claims.${name} has an invalid claim name`);
    if (spec === null) {
      out.set(claim, { essential: false });
      continue;
    }
    if (!isObject(spec)) throw invalidRequest(`claims.${name}.${claim} must be null or a JSON object`);
    if (spec.essential !== undefined && typeof spec.essential !== 'boolean')
      throw invalidRequest(`claims.${name}.${claim}.essential must be a boolean`);
    if (spec.values !== undefined && !Array.isArray(spec.values))
      throw invalidRequest(`claims.${name}.${claim}.values must be an array`);
    const values = [
      ...(spec.value !== undefined ? [spec.value] : []),
      ...((spec.values as unknown[] | undefined) ?? []),
    ];
    out.set(claim, {
      essential: spec.essential === true,
      ...(spec.value !== undefined || spec.values !== undefined ? { values } : {}),
    });
  }
  return out;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Which requested claims may be released, per target (OIDC Core §5.5, §5.4). A claim is released
 * when it is a user claim (never a protocol claim: those Sigil sets itself) and either
 * - a granted identity scope carries it, or
 * - an identity scope in the client's `allowedScopes` carries it ("the client's allowed claims"),
 *   the client does not require consent, and no consent was asked in this request.
 *
 * The second rule is Sigil's reading of §5.5 ("the Claims requested ... in addition to those
 * from the scope values"): a client without consent may already receive every claim of its allowed
 * scopes by asking for the scope, so naming one claim of them gives it less, never more. Where
 * the user was asked (or the client requires consent), the user agreed to scopes only, and a
 * claim outside them is never released: the consent page does not list individual claims. This
 * is deliberately conservative. For comparison: Duende IdentityServer does not support the
 * `claims` parameter at all (claims only through scopes); node-oidc-provider releases claims
 * requested this way only once they are part of the consented grant (its `op_claims_missing`
 * consent check), and only claims its configuration lists. Requests for claims Sigil cannot
 * release are not errors (§5.5.1: even essential ones are returned only when available).
 * @param requested the parsed `claims` parameter, if one was sent
 * @param grantedIdentityClaims user claims of the granted identity scopes
 * @param allowedIdentityClaims user claims of the identity scopes in the client's `allowedScopes`
 * @param beyondScopes whether claims outside the granted scopes may be released (no consent asked or required)
 * @param isProtocolClaim whether a name is a claim Sigil sets itself (never taken from the user's profile)
 * @returns the claim names per target, with empty targets left out; undefined when none remain
 */
export function releasableClaims(
  requested: ClaimsParameter | undefined,
  grantedIdentityClaims: ReadonlySet<string>,
  allowedIdentityClaims: ReadonlySet<string>,
  beyondScopes: boolean,
  isProtocolClaim: (name: string) => boolean,
): RequestedClaims | undefined {
  if (!requested) return undefined;
  const out: RequestedClaims = {};
  for (const target of ['id_token', 'userinfo'] as const) {
    const names = [...requested[target].keys()].filter(
      (n) => !isProtocolClaim(n) && (grantedIdentityClaims.has(n) || (beyondScopes && allowedIdentityClaims.has(n))),
    );
    if (names.length > 0) out[target] = names;
  }
  return out.id_token || out.userinfo ? out : undefined;
}
