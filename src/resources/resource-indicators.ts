/**
 * Resource indicators (RFC 8707): the `resource` parameter names the APIs an access token is for,
 * by the `resourceUris` their API resources declare. Shared by the authorization request and the
 * token endpoint's grants, so each checks them the same way.
 */
import { isResourceIndicator } from '../config/schema.js';
import { OAuthError } from '../protocol/errors.js';
import type { Client } from '../clients/registry.js';
import type { Resources } from './scopes.js';

/** Longest resource indicator accepted, in characters (Duende IdentityServer's limit). */
export const MAX_RESOURCE_LENGTH = 512;
/** Most resource indicators in one request. */
const MAX_RESOURCES = 20;

/** The `invalid_target` error of RFC 8707 §2 (HTTP 400). */
export function invalidTarget(description: string): OAuthError {
  return new OAuthError('invalid_target', description);
}

/**
 * The API resources a request names with `resource` (RFC 8707 §2), as API resource names without
 * repetition, in request order.
 * @param values every `resource` value sent
 * @returns the names, or undefined when no `resource` was sent
 * @throws OAuthError `invalid_target` when a value is too long, not an absolute URI or has a
 *   fragment, names no API resource, or names one none of whose scopes the client may request.
 */
export function requestedResources(
  values: readonly string[],
  client: Pick<Client, 'allowedScopes'>,
  resources: Resources,
): string[] | undefined {
  if (values.length === 0) return undefined;
  if (values.length > MAX_RESOURCES) throw invalidTarget('too many resource values');
  const names: string[] = [];
  for (const value of values) {
    if (value.length > MAX_RESOURCE_LENGTH || !isResourceIndicator(value))
      throw invalidTarget('resource must be an absolute URI without fragment');
    const api = resources.byResourceUri.get(value);
    if (!api) throw invalidTarget('the resource is unknown');
    if (!api.scopes.some((s) => client.allowedScopes.includes(s)))
      throw invalidTarget('the client may not request this resource');
    if (!names.includes(api.name)) names.push(api.name);
  }
  return names;
}

/**
 * The requested resources checked against the ones the grant was limited to: a refresh, or a
 * code's token request, may narrow them, never widen (RFC 8707 §2.2).
 * @param requested names from `requestedResources`, or undefined when none were sent
 * @param granted the grant's resources, or undefined when the grant was not limited
 * @returns the resources the new access token is for, or undefined for no limit
 * @throws OAuthError `invalid_target` when a requested resource is outside `granted`.
 */
export function narrowResources(
  requested: string[] | undefined,
  granted: readonly string[] | undefined,
): string[] | undefined {
  if (requested === undefined) return granted === undefined ? undefined : [...granted];
  if (granted !== undefined && requested.some((r) => !granted.includes(r)))
    throw invalidTarget('the resource was not part of the original grant');
  return requested;
}

/**
 * The scopes an access token for `targets` carries (RFC 8707 §2): identity scopes and
 * `offline_access` stay, API scopes only when one of the targets defines them.
 * @returns `scopes` unchanged when `targets` is undefined
 * @throws OAuthError `invalid_target` when the scopes included API scopes and none of them is
 *   defined by the targets (the token would be for nothing the caller asked for).
 */
export function scopesForResources(
  scopes: readonly string[],
  targets: readonly string[] | undefined,
  resources: Resources,
): string[] {
  if (targets === undefined) return [...scopes];
  const owned = new Set(resources.apiResources.filter((r) => targets.includes(r.name)).flatMap((r) => r.scopes));
  const kept = scopes.filter((s) => !resources.apiScopes.has(s) || owned.has(s));
  if (!kept.some((s) => resources.apiScopes.has(s)))
    throw invalidTarget('the requested resources define none of the granted scopes');
  return kept;
}
