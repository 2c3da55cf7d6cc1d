/**
 * Home-realm discovery for identity-first sign-in: which upstream identity provider an address
 * typed on the login page (or sent as `login_hint`) goes straight to. Pure; it looks only at the
 * address's domain, never at whether such a user exists, so its answer tells nothing of the
 * user store.
 */
import type { Organization } from '../organizations/organization.js';

/** Where the organizations in force are looked up by email domain (`Organizations.byDomain`). */
export interface DomainLookup {
  byDomain(domain: string): Pick<Organization, 'id' | 'identityProviders'> | undefined;
}

/** Whether any organization in force lists an email domain: then the login page asks who first. */
export function identityFirst(organizations: { all(): readonly Pick<Organization, 'domains'>[] }): boolean {
  return organizations.all().some((o) => o.domains.length > 0);
}

/**
 * The upstream provider an address signs in with, or undefined for a password sign-in at Sigil.
 *
 * @param address what the user typed or `login_hint` carried; only an email address (a local part,
 *   `@`, a domain) can name a provider, and only through its domain (`normalizeDomain`, in `byDomain`).
 * @param organizations the organizations in force, by email domain.
 * @param allowed the names of the upstream providers the client may use (`UpstreamProviders.allowedFor`
 *   of its `identityProviderRestrictions`); a provider the organization lists but the client may not
 *   use, or that is not configured, is passed over.
 * @param requested the stable id of the organization `organization=<name>` named, when sent: an
 *   address of another organization signs in with a password (the request is not for it).
 */
export function homeRealmProvider(
  address: string,
  organizations: DomainLookup,
  allowed: readonly string[],
  requested: string | undefined,
): string | undefined {
  const at = address.lastIndexOf('@');
  if (at <= 0 || at === address.length - 1) return undefined;
  const organization = organizations.byDomain(address.slice(at + 1));
  if (!organization || (requested !== undefined && requested !== organization.id)) return undefined;
  // An organization may list several providers: its own order says which it prefers, so the first
  // the client may use is taken; the others stay on the login page's provider buttons.
  return organization.identityProviders.find((name) => allowed.includes(name));
}
