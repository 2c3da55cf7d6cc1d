/**
 * The facts `decide` (interaction/decide.ts) needs, looked up for one request: the upstream
 * providers open to its client, the user's second step (src/mfa/), the remembered consent, and
 * how far the pending request got.
 */
import type { Services } from '../services.js';
import { nowSeconds } from '../crypto/handles.js';
import { type SecondStep, sessionHasMfa } from '../mfa/factors.js';
import type { Organization } from '../organizations/organization.js';
import type { Interaction } from '../stores/records/interactions.js';
import type { Session } from '../users/sessions.js';
import type { User } from '../users/users.js';
import type { AuthorizeRequest } from '../validation/authorize-request.js';
import { type DecisionFacts, mfaRequired, pageOf, stepUp } from './decide.js';
import { verifiedEmailDomain } from './organization-access.js';
import { userOrganizations } from './organization-pick.js';

/** The services this module uses. */
export type FactsServices = Pick<Services, 'mfa' | 'organizations' | 'store' | 'upstream'>;

/**
 * The facts for deciding an authorization request of `session` (undefined: none) and its `user`.
 * @param pending the pending request being resumed, if any
 */
export async function decisionFacts(
  ctx: FactsServices,
  req: AuthorizeRequest,
  session: Session | undefined,
  user: User | undefined,
  pending: Interaction | undefined,
): Promise<DecisionFacts> {
  const live = session && user?.isActive ? session : undefined;
  const required = live
    ? mfaRequired(ctx.mfa.requiredFor(req.client), live, { acrValues: req.acr.acr, essentialAcr: req.essentialAcr })
    : false;
  const now = nowSeconds();
  // A metadata document's client is asked every time (its consent page shows no remember box),
  // and so is a request with authorization details: each asks for something of its own (RFC 9396 §2).
  const remembered =
    live && req.client.requireConsent && !req.client.metadataDocument && req.authorizationDetails === undefined
      ? await ctx.store.records.consents.remembered(live.subjectId, req.client.clientId, now)
      : undefined;
  return {
    now,
    upstreams: ctx.upstream.allowedFor(req.client.identityProviderRestrictions).map((p) => p.name),
    secondStep: live ? await secondStep(ctx, live, required) : 'none',
    freshSignInSeconds: ctx.mfa.config.freshSignInSeconds,
    pending,
    rememberedConsent: remembered,
    ...(live && user ? await organizationFacts(ctx, req, live, user, pending) : {}),
  };
}

/**
 * The organization facts of a signed-in user's request (`DecisionFacts.organization`): the one
 * `organization=` named or the user picked, with the user's membership; else, for a client that
 * requires one, the organizations the user may pick (`userOrganizations`: bounded, those in force,
 * and those of the provider they came through). An organization gone since it was named counts as none a user may enter.
 */
async function organizationFacts(
  ctx: FactsServices,
  req: AuthorizeRequest,
  session: Session,
  user: User,
  pending: Interaction | undefined,
): Promise<Pick<DecisionFacts, 'organization'>> {
  const id = req.organization?.id ?? pending?.pickedOrganization;
  if (id !== undefined) return chosenOrganizationFacts(ctx, ctx.organizations.byId(id), session, user);
  if (req.client.organizationUsage !== 'require') return {};
  return { organization: { kind: 'choose', choices: await userOrganizations(ctx, session.subjectId, session.idp) } };
}

/**
 * The facts of a request for one given organization (named, picked, or fixed by a SAML service
 * provider's `organization`): the user's membership and verified email domain, which `decide`
 * weighs (`organizationAccess`). An organization not in force (undefined: gone, or renamed) is one
 * no user may enter.
 */
export async function chosenOrganizationFacts(
  ctx: Pick<FactsServices, 'store'>,
  organization: Organization | undefined,
  session: Session,
  user: User,
): Promise<Pick<DecisionFacts, 'organization'>> {
  if (organization === undefined) return { organization: { kind: 'choose', choices: [] } };
  const member = await ctx.store.organizations.member(organization.id, session.subjectId);
  const domain = verifiedEmailDomain(user.claims);
  return {
    organization: {
      kind: 'chosen',
      facts: {
        organization,
        ...(member ? { roles: member.roles } : {}),
        ...(domain !== undefined ? { verifiedEmailDomain: domain } : {}),
      },
    },
  };
}

/**
 * Where a live session goes before a device's request may use it (`stepUp`): the second factor,
 * enrolment or a new sign-in; undefined when it may be used as it is.
 * @param required the client's policy asks for MFA (`MfaService.requiredFor`)
 */
export async function stepUpPage(ctx: FactsServices, session: Session, required: boolean): Promise<string | undefined> {
  const step = stepUp(
    await secondStep(ctx, session, required),
    session,
    nowSeconds(),
    ctx.mfa.config.freshSignInSeconds,
  );
  return step && pageOf({ kind: step });
}

/** The user's step after the first factor (`MfaService.nextStep`); none for a session that has MFA already. */
async function secondStep(ctx: FactsServices, session: Session, required: boolean): Promise<SecondStep> {
  return sessionHasMfa(session) ? 'none' : ctx.mfa.nextStep(session.subjectId, required);
}
