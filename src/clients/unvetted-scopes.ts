/**
 * The one scope policy of clients no administrator vetted: those registered dynamically (RFC 7591,
 * config `registration`) and those known by a Client ID Metadata Document (config
 * `clientIdMetadataDocuments`). Both are what an MCP client is, whichever way it comes (the MCP
 * authorization spec of 2025-11-25 offers both), so both may have the same scopes:
 * - every scope the server knows but Sigil's own API (`isManagementScope`: `scim`, `sigil:*`),
 *   or, when the config lists `allowedScopes`, those of the list that are known; these are
 *   granted only through the user's consent (the code flow; such a client has `requireConsent`);
 * - a client that may use `client_credentials` (no user to ask) gets only the scopes the config
 *   lists explicitly; without a list, the identity scopes and `offline_access` only, which a
 *   token without a user never carries (`validateScopes` in resources/scopes.ts), so such a
 *   client's own tokens get no API scope unless an administrator listed it.
 */
import { isManagementScope } from '../config/schema.js';

/** The scopes the server knows now: every name (`offline_access` included) and the identity scopes' names. */
export interface KnownScopes {
  all: readonly string[];
  identity: readonly string[];
}

/**
 * The scopes an unvetted client may have for grants that ask the user (authorization code):
 * `known.all` without the management scopes, narrowed to `configured` when given. Known-scope
 * order.
 * @param configured the config's explicit `allowedScopes`, or null/undefined for the default
 */
export function consentedScopes(
  known: Pick<KnownScopes, 'all'>,
  configured: readonly string[] | null | undefined,
): string[] {
  return known.all.filter((s) => !isManagementScope(s) && (configured == null || configured.includes(s)));
}

/**
 * The scopes an unvetted client that may use `client_credentials` may have at all: the configured
 * list (as `consentedScopes`), or without one the identity scopes and `offline_access`, useful
 * only in its user-facing grants: no API scope for a client's own token by default.
 */
export function clientCredentialsScopes(
  known: KnownScopes,
  configured: readonly string[] | null | undefined,
): string[] {
  const scopes = consentedScopes(known, configured);
  return configured == null ? scopes.filter((s) => s === 'offline_access' || known.identity.includes(s)) : scopes;
}
