/**
 * Who may sign in to an organization (config `organizations[].membership`): the rule, pure, that
 * `decide` applies once the user is known. A member may; a user who is not becomes one on the
 * spot (just-in-time membership) when the organization is `open`, when it is `domain` and the
 * user's verified email is at one of its domains, or when the user signed in through one of its
 * identity providers; anyone else is refused.
 */
import { normalizeDomain } from '../config/schema.js';
import type { Organization } from '../organizations/organization.js';

/** The organization a request is for, and what is known of the user's place in it. */
export interface OrganizationFacts {
  organization: Pick<Organization, 'id' | 'name' | 'membership' | 'domains' | 'identityProviders'>;
  /** The user's roles when they are a member; undefined when they are not. */
  roles?: readonly string[];
  /** The domain of the user's email, lower-cased, only when the email is verified. */
  verifiedEmailDomain?: string;
}

/** `member`: already one; `join`: becomes one now; `denied`: may not sign in to it. */
export type OrganizationAccess = 'member' | 'join' | 'denied';

/**
 * Whether the user of a session from identity provider `idp` (`local` or an upstream provider's
 * name) may sign in to the organization of `facts`.
 */
export function organizationAccess(facts: OrganizationFacts, idp: string): OrganizationAccess {
  if (facts.roles !== undefined) return 'member';
  const { membership, domains, identityProviders } = facts.organization;
  if (membership === 'open') return 'join';
  // `local` is the password sign-in's mark, never a provider's, even if one were named so.
  if (idp !== 'local' && identityProviders.includes(idp)) return 'join';
  const domain = facts.verifiedEmailDomain;
  if (membership === 'domain' && domain !== undefined && domains.includes(domain)) return 'join';
  return 'denied';
}

/**
 * The domain of a verified email among a user's claims (`email`, `email_verified: true`), in the
 * spelling of an organization's `domains` (`normalizeDomain`); undefined otherwise.
 */
export function verifiedEmailDomain(claims: Record<string, unknown>): string | undefined {
  const email = claims.email;
  if (claims.email_verified !== true || typeof email !== 'string' || email.length > 320) return undefined;
  const at = email.lastIndexOf('@');
  return at < 1 ? undefined : normalizeDomain(email.slice(at + 1));
}
