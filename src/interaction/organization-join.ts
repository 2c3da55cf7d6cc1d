/**
 * Just-in-time membership: a user whom `decide` let into an organization they were not a member
 * of (`open`, a verified email at one of its domains, or one of its identity providers) becomes
 * one as the authorization request is answered, through the organization admin, audited as any
 * member added (`organization.member_add`, the client and the user named as the actor).
 */
import { AuditedChanges } from '../admin/audited-changes.js';
import type { Services } from '../services.js';
import type { IssuedOrganization } from './decide.js';

/** The services this module uses. */
export type OrganizationJoinServices = Pick<Services, 'events' | 'management'>;

/** Where the audit event of a membership made at sign-in says it was made, unless the caller says otherwise. */
const JOIN_ENDPOINT = '/connect/authorize';

/**
 * Makes `subject` a member of `organization` (no roles) when the decision says they join now,
 * unless they became one meanwhile (their roles then stay).
 * @param clientId the client (or `saml:<entity ID>`) the user signs in to, the actor's
 * @param endpoint where the sign-in happened, for the audit event (`/saml/sso` for a SAML SP)
 * @returns the member's roles in the organization, as the tokens carry them.
 * @throws AdminError `not_found` when the organization or the user is gone meanwhile;
 *   DirectoryUnavailable when the user's directory cannot answer.
 */
export async function joinIfNew(
  ctx: OrganizationJoinServices,
  organization: IssuedOrganization,
  subject: string,
  clientId: string,
  endpoint = JOIN_ENDPOINT,
): Promise<string[]> {
  if (!organization.join) return [...organization.roles];
  const changes = new AuditedChanges(ctx.management, {
    events: ctx.events,
    endpoint,
    actor: { clientId, sub: subject },
  });
  // Added only if absent: roles an admin gave since the decision are kept, never replaced.
  const { member } = await changes.addOrganizationMember(organization.name, subject);
  return member.roles;
}
