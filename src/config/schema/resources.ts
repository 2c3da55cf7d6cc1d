/**
 * Resources and scopes: identity resources, API scopes, and API resources with their resource
 * indicators (RFC 8707).
 */
import * as z from 'zod';
import { authorizationDetailsType } from './authorization-details.js';
import { nonEmpty, secret } from './field-kinds.js';

/** One entry of `identityResources` (also a stored identity resource, /admin/v1/identity-resources). */
export const identityResource = z.strictObject({
  name: nonEmpty.meta({ description: 'The scope name' }),
  displayName: z
    .string()
    .max(200)
    .optional()
    .meta({ description: 'Shown on the consent page instead of the scope name' }),
  description: z.string().max(500).optional().meta({ description: 'Shown on the consent page under the display name' }),
  userClaims: z.array(nonEmpty).default([]).meta({ description: 'User claims the scope releases' }),
  required: z
    .boolean()
    .default(false)
    .meta({ description: 'Always granted when requested (not optional on the consent page)' }),
});

/** One entry of `apiScopes` (also a stored API scope, /admin/v1/api-scopes). */
export const apiScope = z.strictObject({
  name: nonEmpty.meta({ description: 'The scope name' }),
  displayName: z
    .string()
    .max(200)
    .optional()
    .meta({ description: 'Shown on the consent page instead of "Use <name>"' }),
  description: z.string().max(500).optional().meta({ description: 'Shown on the consent page under the display name' }),
  userClaims: z
    .array(nonEmpty)
    .default([])
    .meta({ description: 'User claims that go into access tokens carrying this scope' }),
});

/** One entry of `apiResources` (also a stored API resource, /admin/v1/api-resources). */
export const apiResource = z.strictObject({
  name: nonEmpty.meta({ description: "The API's name: the aud of access tokens for its scopes" }),
  scopes: z.array(nonEmpty).default([]).meta({ description: 'Names of the apiScopes that belong to this API' }),
  secrets: z.array(secret).default([]).meta({
    description: 'Secrets the API authenticates with at introspection: clear text or sha256:<base64>',
    spec: 'RFC 7662 §2.1',
  }),
  userClaims: z
    .array(nonEmpty)
    .default([])
    .meta({ description: 'User claims that go into access tokens for this API' }),
  resourceUris: z.array(nonEmpty.max(512)).default([]).meta({
    description:
      "Resource indicators that name this API: absolute URIs without fragment, at most 512 characters, each owned by one API; a resource parameter naming one narrows the token's aud and scopes to this API",
    spec: 'RFC 8707 §2',
  }),
  authorizationDetailsTypes: z.array(authorizationDetailsType).max(50).default([]).meta({
    description:
      'Authorization details types this API accepts in authorization_details, each with its JSON Schema; a type belongs to one API',
    spec: 'RFC 9396 §2',
  }),
});

/**
 * Whether `value` may be a resource indicator (RFC 8707 §2): an absolute URI (a scheme and what
 * follows) without a fragment.
 */
export function isResourceIndicator(value: string): boolean {
  return /^[A-Za-z][A-Za-z0-9+.-]*:\S+$/.test(value) && URL.canParse(value) && !value.includes('#');
}
