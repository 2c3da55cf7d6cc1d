/**
 * The authorization endpoint's decision: given a validated request, the browser's
 * session and its user, the client, and facts looked up beforehand (`DecisionFacts`), what happens
 * next: a page (login, an upstream provider, the second factor, enrolment, consent), the answer
 * (issue), or an error for the client. Pure: no store, no clock, no Fastify.
 *
 * The rules, in this order:
 * 1. An essential `acr` (OIDC Core §5.5.1.1) that no sign-in open to the client can achieve, or
 *    that the sign-in made for this very request did not: `unmet_authentication_requirements`
 *    (OpenID Connect Core Unmet Authentication Requirements 1.0 §4), whatever `prompt` says.
 * 2. Sign-in (OIDC Core §3.1.2.3, `needsLogin`): no session or an inactive user; `prompt=login`
 *    or `select_account`, or `max_age` (§3.1.2.1) exceeded, unless the user signed in for this
 *    request; an `id_token_hint` or a `claims` `sub` (§3.1.2.2) naming another user; another
 *    tenant (`acr_values=tenant:`); a session from a provider the client may not use, or a local
 *    one for a client without local login; an essential `acr` a new sign-in could achieve; a
 *    session not from the upstream provider chosen for the request (`chosenUpstream`). The page is
 *    that provider's, else the login page; with `prompt=none`, `login_required` (§3.1.2.6).
 * 3. The second factor (src/mfa/, `stepUp`): a session without MFA whose user has a second factor,
 *    or that the client (`requireMfa`) or the request (`mfaRequired`) needs MFA of. With
 *    `prompt=none`, `interaction_required`.
 * 4. The organization (`organization=<name>`, or the client's `organizationUsage: require`):
 *    a user who may not sign in to the one named (`organizationAccess`) gets `access_denied`,
 *    with `prompt=none` too. Without a name where one is required, the user's only organization
 *    is taken, several are offered on the picker page (`interaction_required` with
 *    `prompt=none`), and none is `access_denied`.
 * 5. Consent (§3.1.2.4, `needsConsent`), unless given for this request; with `prompt=none`,
 *    `consent_required`.
 * 6. Issue, with the scopes consented for this request (all requested ones when none was asked)
 *    and, when the client asked for `acr`, the class to assert (§3.1.2.1, `assertedAcr`).
 */
import type { Client } from '../clients/registry.js';
import { type SecondStep, sessionHasMfa } from '../mfa/factors.js';
import { ACR_MFA, type AcrSession, acrMeets, assertedAcr, attainableAcrs, metAcrs, requestsMfa } from '../users/acr.js';
import type { Session } from '../users/sessions.js';
import type { User } from '../users/users.js';
import { type AuthorizeRequest, isNativeRedirect } from '../validation/authorize-request.js';
import { type OrganizationFacts, organizationAccess } from './organization-access.js';

/** What `decide` reads of a validated authorization request (`validateAuthorizeRequest`). */
export type DecisionRequest = Pick<
  AuthorizeRequest,
  | 'prompt'
  | 'maxAge'
  | 'hintSubject'
  | 'claimsSubject'
  | 'acr'
  | 'essentialAcr'
  | 'acrRequested'
  | 'scopes'
  | 'redirectUri'
>;

/** What `decide` reads of the client. */
export type DecisionClient = Pick<Client, 'enableLocalLogin' | 'identityProviderRestrictions' | 'requireConsent'>;

/** What `decide` reads of a session (users/sessions.ts). */
export type DecisionSession = Pick<Session, 'subjectId' | 'authTime' | 'amr' | 'idp' | 'tenant' | 'upstreamAcr'>;

/** Facts `decide` needs, looked up before (interaction/facts.ts). */
export interface DecisionFacts {
  /** Unix seconds now. */
  now: number;
  /** Names of the upstream providers configured and open to the client (`identityProviderRestrictions`). */
  upstreams: readonly string[];
  /** The pending request being resumed, if any: when the user signed in for it, what they consented to. */
  pending?: { loginAt?: number; consented?: readonly string[] };
  /**
   * The user's step after the first factor for this request (`MfaService.nextStep`, asked with
   * `mfaRequired`); `none` for a session that has MFA already, or without a session.
   */
  secondStep: SecondStep;
  /** `mfa.freshSignInSeconds`: how recent a sign-in must be to enrol a factor from it, seconds. */
  freshSignInSeconds: number;
  /** The scopes of the subject's remembered consent for the client; absent when there is none. */
  rememberedConsent?: readonly string[];
  /**
   * The organization of a signed-in user's request: `chosen`, the one named or picked for it;
   * `choose`, the organizations the user is a member of, when the client requires one and none
   * was named or picked yet. Absent when the request has no organization.
   */
  organization?:
    | { kind: 'chosen'; facts: OrganizationFacts }
    | { kind: 'choose'; choices: readonly OrganizationFacts[] };
}

/** The errors `decide` answers the client with (OIDC Core §3.1.2.6; Unmet Authentication Requirements §4). */
export type DecisionError =
  | 'access_denied'
  | 'login_required'
  | 'interaction_required'
  | 'consent_required'
  | 'unmet_authentication_requirements';

/** What happens to an authorization request. */
export type Decision =
  /** Sign in at Sigil's login page. */
  | { kind: 'login' }
  /** Sign in at this upstream provider (federation). */
  | { kind: 'upstream'; provider: string }
  /** The second factor of the signed-in user (step-up). */
  | { kind: 'second-factor' }
  /** Add an authenticator app first: the user has no factor and one is needed. */
  | { kind: 'enrol' }
  /** Pick one of the user's organizations. */
  | { kind: 'organization' }
  /** Ask for consent. */
  | { kind: 'consent' }
  /**
   * Answer the client: these scopes, the `acr` to assert when it asked for one, and the
   * organization signed in to, if any (`join`: the user becomes a member now).
   */
  | { kind: 'issue'; scopes: string[]; acr?: string; organization?: IssuedOrganization }
  /** Answer the client with this error. */
  | { kind: 'error'; error: DecisionError; description: string };

/** The organization a decision to issue signs the user in to: its id and name, the member's roles, whether they join now. */
export interface IssuedOrganization {
  id: string;
  name: string;
  roles: readonly string[];
  join: boolean;
}

/** A decision that sends the browser to a page. */
export type PageDecision = Extract<
  Decision,
  { kind: 'login' | 'upstream' | 'second-factor' | 'enrol' | 'organization' | 'consent' }
>;

/** Decides what happens to a validated authorization request (see the module comment for the rules). */
export function decide(
  req: DecisionRequest,
  session: DecisionSession | undefined,
  user: Pick<User, 'isActive'> | undefined,
  client: DecisionClient,
  facts: DecisionFacts,
): Decision {
  const error = (code: DecisionError, description: string): Decision => ({ kind: 'error', error: code, description });
  const acrOutcome = essentialAcrOutcome(req, session, client, facts);
  if (acrOutcome === 'unmet')
    return error('unmet_authentication_requirements', 'the requested authentication context class cannot be met');
  const upstream = chosenUpstream(req, client, facts.upstreams);
  if (
    !session ||
    !user ||
    needsLogin(req, session, user, client, facts) ||
    acrOutcome === 'sign-in' ||
    (upstream !== undefined && session.idp !== upstream)
  ) {
    if (req.prompt.has('none')) return error('login_required', 'the user must sign in');
    return upstream ? { kind: 'upstream', provider: upstream } : { kind: 'login' };
  }

  const step = stepUp(facts.secondStep, session, facts.now, facts.freshSignInSeconds);
  if (step) {
    if (req.prompt.has('none')) return error('interaction_required', 'the user must complete a second factor');
    return { kind: step };
  }

  const organization = organizationOutcome(facts.organization, session.idp);
  if (organization === 'denied') return error('access_denied', 'the user may not sign in to this organization');
  if (organization === 'choose') {
    if (req.prompt.has('none')) return error('interaction_required', 'the user must pick an organization');
    return { kind: 'organization' };
  }
  const withOrganization = organization ? { organization } : {};

  let scopes = req.scopes;
  const consented = facts.pending?.consented;
  if (consented) scopes = req.scopes.filter((s) => consented.includes(s));
  else if (needsConsent(req, client, facts.rememberedConsent)) {
    if (req.prompt.has('none')) return error('consent_required', 'the user must consent');
    return { kind: 'consent' };
  }
  if (!req.acrRequested) return { kind: 'issue', scopes, ...withOrganization };
  // OIDC Core §3.1.2.1: acr is returned when asked for.
  return {
    kind: 'issue',
    scopes,
    acr: assertedAcr(session, [...(req.essentialAcr ?? []), ...req.acr.acr]),
    ...withOrganization,
  };
}

/**
 * Where the organization of a request stands for a session from `idp`: the organization to sign
 * in to (none when the request has none), `denied`, or `choose` (several to pick from). A user with
 * exactly one organization is not shown the picker: Auth0 shows its prompt even then, but one
 * choice is no choice, and the least friction that still asks nothing the user could answer
 * otherwise is to take it.
 */
export function organizationOutcome(
  organization: DecisionFacts['organization'],
  idp: string,
): IssuedOrganization | 'denied' | 'choose' | undefined {
  if (organization === undefined) return undefined;
  let facts: OrganizationFacts;
  if (organization.kind === 'choose') {
    const [only, ...more] = organization.choices;
    if (only === undefined) return 'denied';
    if (more.length > 0) return 'choose';
    facts = only;
  } else facts = organization.facts;
  const access = organizationAccess(facts, idp);
  if (access === 'denied') return 'denied';
  const { id, name } = facts.organization;
  return { id, name, roles: facts.roles ?? [], join: access === 'join' };
}

/**
 * Whether MFA is needed of a sign-in (`session`: its `idp` and `amr`, users/acr.ts): the client's or the
 * server's policy (`MfaService.requiredFor`: `requireMfa`, `mfa.required`), or the request's
 * `acr_values` or essential `acr` (`requestsMfa`). Ask `MfaService.nextStep` with it.
 * @param request the plain `acr_values` and the essential `acr` values of the request
 */
export function mfaRequired(
  policy: boolean,
  session: AcrSession,
  request: { acrValues: readonly string[]; essentialAcr?: readonly unknown[] | undefined },
): boolean {
  return policy || requestsMfa(session, request.acrValues, request.essentialAcr);
}

/**
 * The step a live session takes before it may be used (src/mfa/): none when it has MFA or its
 * user's `secondStep` is `none`; the second factor when the user has one (a code or a security
 * key); for a user without one who needs it, enrolment when the session signed in within
 * `freshSignInSeconds`, else a new sign-in (enrolling needs a recent password: an old session
 * could otherwise bind someone else's authenticator to the account).
 */
export function stepUp(
  secondStep: SecondStep,
  session: Pick<Session, 'amr' | 'authTime'>,
  now: number,
  freshSignInSeconds: number,
): 'second-factor' | 'enrol' | 'login' | undefined {
  if (sessionHasMfa(session) || secondStep === 'none') return undefined;
  if (secondStep === 'verify' || secondStep === 'security-key') return 'second-factor';
  return now - session.authTime <= freshSignInSeconds ? 'enrol' : 'login';
}

/**
 * The page a decision sends the browser to, given `?interaction=<id>`; a path relative to the issuer's
 * (`Services.basePath`).
 */
export function pageOf(decision: PageDecision): string {
  switch (decision.kind) {
    case 'login':
      return '/account/login';
    case 'upstream':
      return `/federation/${decision.provider}/login`;
    // The security key step of a live session starts from /account/mfa too (see its GET).
    case 'second-factor':
      return '/account/mfa';
    case 'enrol':
      return '/account/totp';
    case 'organization':
      return '/account/organization';
    case 'consent':
      return '/consent';
  }
}

/**
 * The upstream provider the browser goes straight to, if any: the one named by
 * `acr_values=idp:<name>` when it exists and the client may use it, or the client's only provider
 * when it has local login disabled. Anything else shows the local login page (never an error that
 * reveals configuration).
 * @param upstreams the providers open to the client
 */
export function chosenUpstream(
  req: Pick<DecisionRequest, 'acr'>,
  client: Pick<DecisionClient, 'enableLocalLogin'>,
  upstreams: readonly string[],
): string | undefined {
  if (req.acr.idp !== null && upstreams.includes(req.acr.idp)) return req.acr.idp;
  if (!client.enableLocalLogin && upstreams.length === 1) return upstreams[0];
  return undefined;
}

/**
 * Where an essential `acr` request stands (OIDC Core §5.5.1.1; OpenID Connect Core Unmet
 * Authentication Requirements 1.0 §4): `met` when none was asked or the session achieved one of
 * the requested classes; `sign-in` when a new sign-in could achieve one; `unmet` when no sign-in
 * open to this client achieves any of them, or the sign-in done for this very request did not.
 */
export function essentialAcrOutcome(
  req: Pick<DecisionRequest, 'essentialAcr'>,
  session: DecisionSession | undefined,
  client: Pick<DecisionClient, 'enableLocalLogin'>,
  facts: Pick<DecisionFacts, 'upstreams' | 'pending'>,
): 'met' | 'sign-in' | 'unmet' {
  const wanted = req.essentialAcr;
  if (!wanted) return 'met';
  const attainable = attainableAcrs(client.enableLocalLogin, facts.upstreams.length);
  if (!wanted.some((v) => attainable.some((a) => acrMeets(a, v)))) return 'unmet';
  if (!session) return 'sign-in';
  if (wanted.some((v) => metAcrs(session).includes(v as string))) return 'met';
  // A second factor is added by step-up (see decide), not by signing in anew.
  if (wanted.includes(ACR_MFA) && (session.idp === 'local' || sessionHasMfa(session))) return 'met';
  return signedInForRequest(session, facts.pending) ? 'unmet' : 'sign-in';
}

/** OIDC Core §3.1.2.3: is a (fresh) sign-in needed before answering, for this session and user? */
export function needsLogin(
  req: Pick<DecisionRequest, 'prompt' | 'maxAge' | 'hintSubject' | 'claimsSubject' | 'acr'>,
  session: DecisionSession,
  user: Pick<User, 'isActive'>,
  client: DecisionClient,
  facts: Pick<DecisionFacts, 'now' | 'pending'>,
): boolean {
  if (!user.isActive) return true;
  if (!signedInForRequest(session, facts.pending)) {
    if (req.prompt.has('login') || req.prompt.has('select_account')) return true;
    // max_age=0 always re-authenticates (as Duende): auth_time has whole seconds, so a sign-in
    // earlier in this same second would otherwise count as 0 s old.
    if (req.maxAge !== undefined && (req.maxAge === 0 || facts.now - session.authTime > req.maxAge)) return true;
  }
  if (req.hintSubject !== undefined && req.hintSubject !== session.subjectId) return true;
  // OIDC Core §3.1.2.2: a claims request naming a `sub` is answered only for that user.
  if (req.claimsSubject !== undefined && req.claimsSubject !== session.subjectId) return true;
  if (req.acr.tenant !== null && req.acr.tenant !== session.tenant) return true;
  const restrictions = client.identityProviderRestrictions;
  if (restrictions.length > 0 && !restrictions.includes(session.idp) && session.idp !== 'local') return true;
  if (!client.enableLocalLogin && session.idp === 'local') return true;
  return false;
}

/**
 * OIDC Core §3.1.2.4: is the consent page needed? For clients with `requireConsent`, or when
 * `prompt=consent`; a remembered consent covering every scope skips it, except for native
 * clients, whose identity a redirect cannot prove (RFC 8252 §8.6).
 * @param remembered the scopes of the remembered consent, if any
 */
export function needsConsent(
  req: Pick<DecisionRequest, 'prompt' | 'redirectUri' | 'scopes'>,
  client: Pick<DecisionClient, 'requireConsent'>,
  remembered: readonly string[] | undefined,
): boolean {
  if (req.prompt.has('consent')) return true;
  if (!client.requireConsent) return false;
  if (isNativeRedirect(req.redirectUri)) return true;
  if (!remembered) return true;
  return !req.scopes.every((s) => remembered.includes(s));
}

/**
 * Whether the session's sign-in was made for the pending request being resumed (prompt=login and max_age are
 * then met).
 */
function signedInForRequest(session: Pick<Session, 'authTime'>, pending: DecisionFacts['pending']): boolean {
  return pending?.loginAt !== undefined && session.authTime >= pending.loginAt;
}
