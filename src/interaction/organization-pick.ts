/**
 * The organization picker's side of a pending request (`/account/organization`, config
 * `organizationUsage: require` without `organization=`): which organizations the signed-in user
 * may pick from, and the pick, kept in the pending request (`Interaction.pickedOrganization`) for
 * `decide` to check again when the request resumes. The page renders; this decides and stores.
 */
import type { Client } from '../clients/registry.js';
import type { Services } from '../services.js';
import type { Organization } from '../organizations/organization.js';
import type { Pending } from './interactions.js';

/** The services this module uses. */
export type OrganizationPickServices = Pick<Services, 'clients' | 'interactions' | 'organizations' | 'store'>;

/** The most of a user's organizations read for the picker (`/account/organization`). */
export const MAX_PICKED_ORGANIZATIONS = 100;

/** An organization the user may sign in to: with their roles when a member, without when they would join. */
export interface UserOrganization {
  organization: Organization;
  roles?: string[];
}

/**
 * The organizations the user `subject` of a session from `idp` may pick: those they are a member
 * of (at most MAX_PICKED_ORGANIZATIONS memberships read, by organization id, those no longer in
 * force left out), then those that list `idp` as their own provider, which they join by picking
 * (`organizationAccess`). An employee who came through home-realm discovery to their company's
 * provider thus finds their company without an invitation: Keycloak 26 likewise makes a user who
 * arrives through an organization's provider its member. `local` is no provider's name.
 */
export async function userOrganizations(
  ctx: Pick<Services, 'organizations' | 'store'>,
  subject: string,
  idp: string,
): Promise<UserOrganization[]> {
  const memberships = await ctx.store.organizations.memberships(subject, MAX_PICKED_ORGANIZATIONS);
  const out: UserOrganization[] = memberships.flatMap(({ organizationId, roles }) => {
    const organization = ctx.organizations.byId(organizationId);
    return organization ? [{ organization, roles }] : [];
  });
  if (idp === 'local') return out;
  const seen = new Set(out.map((m) => m.organization.id));
  for (const organization of ctx.organizations.byProvider(idp))
    if (!seen.has(organization.id) && out.length < MAX_PICKED_ORGANIZATIONS) out.push({ organization });
  return out;
}

/** What the picker offers for a pending request: its client and the user's organizations. */
export interface OrganizationChoices {
  client: Client;
  organizations: Organization[];
}

/**
 * The choices, by display name, of a pending request that waits for an organization to be picked: a browser
 * request (not a device's) whose client requires an organization, none named by `organization=`
 * and none picked yet. Undefined for any other request, or when its client has gone (a metadata
 * document refused now).
 * @param session the signed-in user and the provider they came through (`userOrganizations`)
 * @param address the browser's address (a client metadata document fetched again counts against it)
 */
export async function organizationChoices(
  ctx: OrganizationPickServices,
  pending: Pending,
  session: { subjectId: string; idp: string },
  address: string,
): Promise<OrganizationChoices | undefined> {
  const { interaction } = pending;
  if (interaction.device || interaction.request.organization || interaction.pickedOrganization) return undefined;
  const client = await ctx.clients.resolve(interaction.request.clientId, address).catch(() => undefined);
  if (client?.organizationUsage !== 'require') return undefined;
  // By display name, as a person looks for one (the memberships are read by id).
  const organizations = (await userOrganizations(ctx, session.subjectId, session.idp))
    .map((m) => m.organization)
    .sort((a, b) => a.displayName.localeCompare(b.displayName) || a.name.localeCompare(b.name));
  return { client, organizations };
}

/**
 * Keeps the organization named `name` as the pending request's pick when it is one of `choices`
 * (the user's memberships, from `organizationChoices`): what a form sends is never trusted.
 * @returns false when `name` is none of them (nothing is stored)
 */
export async function pickOrganization(
  ctx: OrganizationPickServices,
  pending: Pending,
  choices: OrganizationChoices,
  name: string | undefined,
): Promise<boolean> {
  const picked = choices.organizations.find((o) => o.name === name);
  if (!picked) return false;
  await ctx.interactions.update(pending.id, { ...pending.interaction, pickedOrganization: picked.id });
  return true;
}
