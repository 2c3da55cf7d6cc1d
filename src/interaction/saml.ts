/**
 * A SAML service provider's request as a pending request of the interaction layer: the same login,
 * second factor and consent pages, and the same Sigil session, as an OpenID client's. Its record
 * (stores/records/interactions.ts) carries `saml`, the pages see it as any other (its client id is
 * `saml:<entity ID>`, no client of Sigil's). What happens next is `decide`'s, over the SAML request
 * put in its terms: ForceAuthn is `prompt=login` (sign in again, SAML Core §3.4.1), IsPassive is
 * `prompt=none` (no page; its errors become NoPassive), an SP asking for the REFEDS MFA class asks
 * for MFA as `acr_values` would, consent covers the SP's attributes, and an SP's `organization`
 * is the organization of every request of it (only its members, or those it admits, get an assertion).
 */
import type { Services } from '../services.js';
import { nowSeconds } from '../crypto/handles.js';
import { addressQuotaKey, chargeQuota } from '../limits/request-quota.js';
import { sessionHasMfa } from '../mfa/factors.js';
import type { AuthnRequest } from '../saml/authn-request.js';
import type { ServiceProvider } from '../saml/service-providers.js';
import type { Interaction, SamlPending } from '../stores/records/interactions.js';
import { ACR_MFA, requestsMfa } from '../users/acr.js';
import type { Session } from '../users/sessions.js';
import type { User } from '../users/users.js';
import { type Decision, type DecisionFacts, type DecisionRequest, decide } from './decide.js';
import { chosenOrganizationFacts } from './facts.js';

/** The services this module uses. */
export type SamlInteractionServices = Pick<Services, 'config' | 'limiter' | 'mfa' | 'organizations' | 'saml' | 'store'>;

/**
 * Counts a checked AuthnRequest against a quota (config `pendingLimits`: `interactionsPerAddress`
 * per `windowSeconds`) before its ID is stored, since every request leaves a replay record, also
 * one answered at once from a live session. A browser signed in counts against its user's quota:
 * an office behind one address signs in to its SAML applications all morning, and one person
 * there must not use up everyone's single sign-on. A browser without a session, of whom nothing
 * is known, counts against its address's.
 * @param subjectId the user of the browser's live session, if it has one
 * @throws OAuthError 429 `temporarily_unavailable` with `Retry-After` over the limit.
 */
export async function takeSamlRequestQuota(
  ctx: SamlInteractionServices,
  ip: string,
  subjectId: string | undefined,
): Promise<void> {
  const limits = ctx.config.pendingLimits;
  const key =
    subjectId !== undefined ? `saml-request:subject:${subjectId}` : `saml-request:address:${addressQuotaKey(ip)}`;
  await chargeQuota(
    ctx.limiter,
    'interaction_quota',
    [{ key, limit: limits.interactionsPerAddress }],
    limits.windowSeconds,
  );
}

/** The client id a SAML SP's pending requests, consents and events carry: never a client's (no `saml:` client exists). */
export function samlClientId(entityId: string): string {
  return `saml:${entityId}`;
}

/**
 * The name pages show for a SAML SP's pending request (its `displayName`, else its entity ID), or
 * undefined for any other request.
 */
export function samlPartyName(ctx: Pick<Services, 'saml'>, interaction: Interaction | undefined): string | undefined {
  return interaction?.saml && ctx.saml.serviceProviders.get(interaction.saml.entityId)?.displayName;
}

/** What a pending request keeps of a validated AuthnRequest. */
export function samlPendingOf(req: AuthnRequest): SamlPending {
  return {
    entityId: req.sp.entityId,
    acsUrl: req.acsUrl,
    requestId: req.id,
    ...(req.relayState !== undefined ? { relayState: req.relayState } : {}),
    forceAuthn: req.forceAuthn,
    isPassive: req.isPassive,
    mfa: req.mfa,
  };
}

/**
 * The pending request of `saml` in this browser, for the pages: the SP's attributes are what
 * consent is asked for.
 * @param browser the browser id's hash
 */
export function samlInteraction(saml: SamlPending, sp: ServiceProvider, browser: string): Interaction {
  return {
    request: {
      clientId: samlClientId(sp.entityId),
      scopes: Object.keys(sp.attributes),
      tenant: null,
      acrValues: saml.mfa ? [ACR_MFA] : [],
    },
    params: {},
    browser,
    saml,
  };
}

/**
 * What happens to a SAML request for this session and user (`decide`'s rules, see the module
 * comment): a page, the answer, or an error that IsPassive turns into NoPassive.
 * @param pending the stored request being resumed, if any
 */
export async function samlDecision(
  ctx: SamlInteractionServices,
  saml: SamlPending,
  sp: ServiceProvider,
  session: Session | undefined,
  user: User | undefined,
  pending: Interaction | undefined,
): Promise<Decision> {
  const acrValues = saml.mfa ? [ACR_MFA] : [];
  const request: DecisionRequest = {
    prompt: new Set([...(saml.forceAuthn ? ['login'] : []), ...(saml.isPassive ? ['none'] : [])]),
    acr: { idp: null, tenant: null, acr: acrValues },
    acrRequested: false,
    scopes: Object.keys(sp.attributes),
    redirectUri: saml.acsUrl,
  };
  return decide(
    request,
    session,
    user,
    { enableLocalLogin: true, identityProviderRestrictions: [], requireConsent: sp.requireConsent },
    await facts(ctx, sp, session, user, acrValues, pending),
  );
}

/**
 * The facts of `decide` for an SP: no upstream provider; the SP's organization, if it has one, as
 * if the request had named it (a non-member is refused unless `organizationAccess` lets them join).
 */
async function facts(
  ctx: SamlInteractionServices,
  sp: ServiceProvider,
  session: Session | undefined,
  user: User | undefined,
  acrValues: string[],
  pending: Interaction | undefined,
): Promise<DecisionFacts> {
  const now = nowSeconds();
  const live = session && user?.isActive ? session : undefined;
  const required = live ? ctx.mfa.requiredFor(undefined) || requestsMfa(live, acrValues, undefined) : false;
  return {
    now,
    upstreams: [],
    secondStep: live && !sessionHasMfa(live) ? await ctx.mfa.nextStep(live.subjectId, required) : 'none',
    freshSignInSeconds: ctx.mfa.config.freshSignInSeconds,
    pending,
    rememberedConsent:
      live && sp.requireConsent
        ? await ctx.store.records.consents.remembered(live.subjectId, samlClientId(sp.entityId), now)
        : undefined,
    ...(live && user && sp.organization !== null
      ? await chosenOrganizationFacts(ctx, ctx.organizations.byName(sp.organization), live, user)
      : {}),
  };
}
