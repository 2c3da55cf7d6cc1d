/**
 * `organization=<name>` of an authorization request (Sigil's B2B organizations, as Auth0's
 * `organization` parameter): which organization the user
 * signs in to, held to the client's `organizationUsage`.
 */
import type { Client } from '../../clients/registry.js';
import { invalidRequest } from '../../protocol/errors.js';
import type { OrganizationLookup } from './services.js';
import type { RequestedOrganization } from './types.js';

/**
 * The organization a request names, when it names one.
 * - `organizationUsage: none` (the default): the parameter is refused;
 * - `allow` and `require`: it must name an organization in force. An unknown name is
 *   `invalid_request`, not `access_denied`: the request is at fault, the client can fix it, and it
 *   is known before anyone signs in. Auth0 draws the same line: a malformed organization, or one
 *   the client is not set up for, is `invalid_request` at its authorization endpoint, and
 *   `access_denied` is for a user who is not a member. An `access_denied` before sign-in would
 *   hide nothing from someone probing names (the answer differs from a known name's login page
 *   either way), so clarity for the client wins.
 * @throws OAuthError `invalid_request` as said above.
 */
export function checkOrganization(
  value: string | undefined,
  client: Pick<Client, 'organizationUsage'>,
  organizations: OrganizationLookup,
): RequestedOrganization | undefined {
  if (value === undefined) return undefined;
  if (client.organizationUsage === 'none') throw invalidRequest('this client does not use organizations');
  const found = organizations.byName(value);
  if (found === undefined) throw invalidRequest('organization is not known');
  return { id: found.id, name: found.name };
}
