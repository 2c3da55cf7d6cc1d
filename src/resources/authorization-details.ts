/**
 * The `authorization_details` parameter of Rich Authorization Requests (RFC 9396): a JSON array of
 * objects, each with a `type` that an API resource declares and the client may use, each valid
 * against its type's JSON Schema. Shared by the authorization request (authorize, PAR) and the
 * token endpoint, so that each refuses the same input the same way.
 */
import { isDeepStrictEqual } from 'node:util';
import { OAuthError } from '../protocol/errors.js';
import { CALLER_JSON_BOUNDS, jsonBoundsViolation, type JsonBounds } from '../protocol/json-bounds.js';
import type { Client } from '../clients/registry.js';
import type { AuthorizationDetail } from '../stores/records/grant-data.js';
import type { Resources } from './scopes.js';

export type { AuthorizationDetail };

/**
 * Bounds on the parameter's text: nesting as deep as any JSON a caller sends Sigil, and 4,096
 * characters, since the details travel in the authorization URL and in every JWT access token of
 * the grant (an access token must still fit a common 8 KB request-header limit).
 */
export const AUTHORIZATION_DETAILS_BOUNDS: JsonBounds = { maxDepth: CALLER_JSON_BOUNDS.maxDepth, maxLength: 4_096 };
/** Most objects in one `authorization_details` array. */
export const MAX_AUTHORIZATION_DETAILS = 20;

/** The `invalid_authorization_details` error of RFC 9396 §5 (HTTP 400). */
export function invalidAuthorizationDetails(description: string): OAuthError {
  return new OAuthError('invalid_authorization_details', description);
}

/**
 * Parses and checks an `authorization_details` parameter (RFC 9396 §2, §5). The objects come back
 * exactly as sent: no member is added, removed or changed.
 * @param text the parameter's value, or undefined when it was not sent
 * @returns the objects, or undefined when the parameter was not sent
 * @throws OAuthError `invalid_authorization_details` when the text is out of bounds or not JSON,
 *   not a non-empty array of objects, or an object's `type` is unknown, not one the client may
 *   use, or its object fails the type's schema.
 */
export function parseAuthorizationDetails(
  text: string | undefined,
  client: Pick<Client, 'authorizationDetailsTypes'>,
  resources: Resources,
): AuthorizationDetail[] | undefined {
  if (text === undefined) return undefined;
  const violation = jsonBoundsViolation(text, AUTHORIZATION_DETAILS_BOUNDS);
  if (violation) throw invalidAuthorizationDetails(`authorization_details is ${violation}`);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw invalidAuthorizationDetails('authorization_details is not JSON');
  }
  if (!Array.isArray(value) || value.length === 0)
    throw invalidAuthorizationDetails('authorization_details must be a non-empty JSON array');
  if (value.length > MAX_AUTHORIZATION_DETAILS) throw invalidAuthorizationDetails('too many authorization details');
  const types = resources.authorizationDetailsTypes;
  for (const [i, detail] of value.entries()) {
    if (typeof detail !== 'object' || detail === null || Array.isArray(detail))
      throw invalidAuthorizationDetails(`authorization_details[${i}] is not an object`);
    const { type } = detail as { type?: unknown };
    if (typeof type !== 'string') throw invalidAuthorizationDetails(`authorization_details[${i}] has no type`);
    const validate = types.get(type);
    if (!validate) throw invalidAuthorizationDetails(`authorization_details[${i}] has an unknown type`);
    if (!client.authorizationDetailsTypes.includes(type))
      throw invalidAuthorizationDetails(`the client may not use the type of authorization_details[${i}]`);
    if (!validate(detail))
      throw invalidAuthorizationDetails(
        `authorization_details[${i}] does not match its type: ${validate.errors?.[0]?.instancePath || '/'} ${validate.errors?.[0]?.message ?? ''}`,
      );
  }
  return value as AuthorizationDetail[];
}

/**
 * The authorization details a token request asks for out of those its grant holds (RFC 9396 §6.1
 * at the code's redemption, §7.2 at a refresh): without the parameter, all of them; with it, each
 * object must be one the grant holds, compared as a whole (deep equality of the JSON values,
 * members in any order). §6.1 leaves the comparison to each type ("type-specific"); Sigil knows
 * no type's semantics (types are the API resources' JSON Schemas), so it takes no object as
 * narrower than another: a client narrows by leaving whole objects out.
 * @param text the parameter's value, or undefined when it was not sent
 * @param granted the grant's authorization details, if any
 * @returns the objects asked for, in request order (or `granted` when none were asked)
 * @throws OAuthError `invalid_authorization_details` as `parseAuthorizationDetails`, when the grant
 *   holds none, or when an object is not one of the grant's.
 */
export function narrowAuthorizationDetails(
  text: string | undefined,
  granted: readonly AuthorizationDetail[] | undefined,
  client: Pick<Client, 'authorizationDetailsTypes'>,
  resources: Resources,
): AuthorizationDetail[] | undefined {
  const requested = parseAuthorizationDetails(text, client, resources);
  if (requested === undefined) return granted ? [...granted] : undefined;
  if (granted === undefined) throw invalidAuthorizationDetails('the grant holds no authorization details');
  for (const [i, detail] of requested.entries())
    if (!granted.some((g) => isDeepStrictEqual(g, detail)))
      throw invalidAuthorizationDetails(`authorization_details[${i}] is not one of the granted ones`);
  return requested;
}
