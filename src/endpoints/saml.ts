/**
 * The SAML 2.0 identity provider's browser endpoints (SAML Profiles §4.1, Web Browser SSO; served
 * only with `saml.enabled`):
 * - `GET /saml/metadata`: the IdP's metadata (SAML Metadata §2.3.2);
 * - `GET`/`POST /saml/sso`: an SP's AuthnRequest in the HTTP-Redirect or HTTP-POST binding,
 *   and `GET /saml/sso/resume?interaction=<id>` after the pages;
 * - `GET /saml/initiate?sp=<entity ID>[&RelayState=…]`: an IdP-initiated sign-in to a registered SP,
 *   at its first ACS, with no InResponseTo;
 * - `GET`/`POST /saml/slo`: single logout (saml-logout.ts).
 * A request refused before its SP and ACS are known good ends on Sigil's error page: nothing is
 * posted anywhere. After that, the answer is a Response posted to the registered ACS (SAML Bindings
 * §3.5, the auto-posting form of form_post): a success, or NoPassive, InvalidNameIDPolicy,
 * RequestDenied without an assertion. Sign-in is the interaction layer's (interaction/saml.ts),
 * with the login, second factor and consent pages and the Sigil session an OpenID client has.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Services } from '../services.js';
import { nowSeconds } from '../crypto/handles.js';
import { queryString } from '../http/fields.js';
import { methodNotAllowed, originOf } from '../http/request.js';
import { toInteractionPage } from './browser-endpoint.js';
import { bindingMessage } from './saml-binding.js';
import { type SamlLogoutEndpointServices, samlLogoutEndpoint } from './saml-logout.js';
import { browserOf, sessionOf } from '../interaction/browser.js';
import type { BrowserServices } from '../interaction/browser.js';
import { type IssuedOrganization, pageOf } from '../interaction/decide.js';
import { joinIfNew, type OrganizationJoinServices } from '../interaction/organization-join.js';
import type { Pending } from '../interaction/interactions.js';
import type { InteractionsServices } from '../interaction/interactions.js';
import {
  type SamlInteractionServices,
  samlClientId,
  samlDecision,
  samlInteraction,
  samlPendingOf,
  takeSamlRequestQuota,
} from '../interaction/saml.js';
import { OAuthError } from '../protocol/errors.js';
import {
  type AuthnRequest,
  type BindingMessage,
  MAX_RELAY_STATE_BYTES,
  NAME_ID_FORMATS,
  SamlRefused,
} from '../saml/authn-request.js';
import { claimsFor, type SamlAnswer, type SamlTarget } from '../saml/identity-provider.js';
import { STATUS } from '../saml/response.js';
import type { ServiceProvider } from '../saml/service-providers.js';
import { XmlRefused } from '../saml/xml.js';
import type { SamlPending } from '../stores/records/interactions.js';
import { expiredPage, sendErrorPage } from '../ui/error-page.js';
import type { ErrorPageServices } from '../ui/error-page.js';
import { language } from '../ui/language.js';
import { claimsOf, type User } from '../users/users.js';
import { AdminError } from '../admin/errors.js';
import { ORGANIZATION_CLAIMS, organizationClaims, ROLES_SCOPE } from '../tokens/organization-claims.js';
import type { Session } from '../users/sessions.js';
import { DirectoryUnavailable } from '../users/directory.js';

/** The metadata document's path. */
export const SAML_METADATA_PATH = '/saml/metadata';

/** The services this module uses. */
export type SamlEndpointServices = Pick<
  Services,
  'basePath' | 'events' | 'interactions' | 'logout' | 'pages' | 'saml' | 'sessions' | 'tokens' | 'users'
> &
  SamlLogoutEndpointServices &
  BrowserServices &
  ErrorPageServices &
  InteractionsServices &
  OrganizationJoinServices &
  SamlInteractionServices;

/** Registers the SAML routes (see the module comment); nothing when `saml.enabled` is false. */
export function samlEndpoints(app: FastifyInstance, ctx: SamlEndpointServices): void {
  if (!ctx.saml.config.enabled) return;
  app.get(SAML_METADATA_PATH, async (_request, reply) =>
    reply
      .header('cache-control', 'public, max-age=300')
      .type('application/samlmetadata+xml; charset=utf-8')
      .send(ctx.saml.metadata()),
  );
  app.route({
    method: ['GET', 'POST'],
    url: '/saml/sso',
    handler: async (request, reply) => {
      let message: BindingMessage;
      try {
        message = bindingMessage(request, 'SAMLRequest');
      } catch (err) {
        if (!(err instanceof XmlRefused || err instanceof OAuthError)) throw err;
        return refuse(ctx, request, reply, err.message);
      }
      return receive(ctx, request, reply, message);
    },
  });
  app.route({ method: ['PUT', 'DELETE', 'PATCH'], url: '/saml/sso', handler: methodNotAllowed('GET, POST') });
  app.get('/saml/sso/resume', async (request, reply) => {
    const id = queryString(request, 'interaction');
    const browser = browserOf(ctx, request, reply);
    const interaction = await ctx.interactions.get(id, browser);
    if (id === undefined || !interaction?.saml) return expiredPage(ctx, request, reply);
    return proceed(ctx, request, reply, interaction.saml, { id, interaction });
  });
  app.get('/saml/initiate', async (request, reply) => initiate(ctx, request, reply));
  samlLogoutEndpoint(app, ctx);
}

/**
 * An SP's AuthnRequest: checked (refused on the error page), counted against its user's quota (its
 * address's without a session),
 * its ID recorded as used, then answered or sent to the pages.
 */
async function receive(
  ctx: SamlEndpointServices,
  request: FastifyRequest,
  reply: FastifyReply,
  message: BindingMessage,
): Promise<FastifyReply> {
  const now = nowSeconds();
  // Read once: the quota is its user's, and the answer is made from it.
  const session = await sessionOf(ctx, request);
  let authn: AuthnRequest;
  try {
    authn = ctx.saml.read(message, now);
    await takeSamlRequestQuota(ctx, request.ip, session?.subjectId);
    await ctx.saml.markUsed(authn, now);
  } catch (err) {
    if (err instanceof OAuthError) return tooMany(ctx, request, reply, err);
    if (!(err instanceof SamlRefused)) throw err;
    return refuse(ctx, request, reply, err.message);
  }
  const saml = samlPendingOf(authn);
  if (authn.unsatisfiedNameIdFormat !== undefined)
    return answerFailure(ctx, request, reply, saml, STATUS.requester, STATUS.invalidNameIdPolicy);
  return proceed(ctx, request, reply, saml, undefined, { session });
}

/** `GET /saml/initiate`: an IdP-initiated sign-in to a registered SP (SAML Profiles §4.1.5). */
async function initiate(ctx: SamlEndpointServices, request: FastifyRequest, reply: FastifyReply) {
  const sp = ctx.saml.serviceProviders.get(queryString(request, 'sp') ?? '');
  if (!sp) return refuse(ctx, request, reply, 'the service provider is not registered');
  const relayState = queryString(request, 'RelayState');
  if (relayState !== undefined && Buffer.byteLength(relayState) > MAX_RELAY_STATE_BYTES)
    return refuse(ctx, request, reply, 'RelayState is longer than 80 bytes');
  const saml: SamlPending = {
    entityId: sp.entityId,
    acsUrl: sp.acsUrls[0] as string,
    ...(relayState !== undefined ? { relayState } : {}),
    forceAuthn: false,
    isPassive: false,
    mfa: false,
  };
  return proceed(ctx, request, reply, saml, undefined);
}

/**
 * Where a SAML request goes with this browser's session: a page (stored as a pending request first,
 * under the browser's and address's quota), or the answer to the SP.
 * @param read the browser's session when the caller has read it already (not read twice)
 */
async function proceed(
  ctx: SamlEndpointServices,
  request: FastifyRequest,
  reply: FastifyReply,
  saml: SamlPending,
  pending: Pending | undefined,
  read?: { session: Session | undefined },
): Promise<FastifyReply> {
  const sp = ctx.saml.serviceProviders.get(saml.entityId);
  if (!sp) return expiredPage(ctx, request, reply);
  if (saml.denied) {
    if (pending && !(await ctx.interactions.finish(pending.id))) return expiredPage(ctx, request, reply);
    return answerFailure(ctx, request, reply, saml, STATUS.responder, STATUS.requestDenied);
  }
  const browser = browserOf(ctx, request, reply);
  const session = read ? read.session : await sessionOf(ctx, request);
  let user: User | undefined;
  try {
    user = session ? await ctx.users.findBySubject(session.subjectId) : undefined;
  } catch (err) {
    // The session's user is in a directory that cannot answer: the error page says so (503).
    if (!(err instanceof DirectoryUnavailable)) throw err;
    request.log.error({ err, directory: err.directory, reason: err.reason }, 'user directory unavailable');
    return sendErrorPage(ctx, reply, err, language(request), 503);
  }
  const decision = await samlDecision(ctx, saml, sp, session, user, pending?.interaction);
  if (decision.kind === 'error') {
    if (pending && !(await ctx.interactions.finish(pending.id))) return expiredPage(ctx, request, reply);
    // A user the SP's organization does not admit; else IsPassive (prompt=none): SAML Core §3.4.1.
    const subCode = decision.error === 'access_denied' ? STATUS.requestDenied : STATUS.noPassive;
    return answerFailure(ctx, request, reply, saml, STATUS.responder, subCode);
  }
  if (decision.kind !== 'issue') return toPage(ctx, request, reply, saml, sp, browser, pending, pageOf(decision));
  if (pending && !(await ctx.interactions.finish(pending.id))) return expiredPage(ctx, request, reply);
  let organization: Record<string, unknown> = {};
  try {
    organization = await organizationOf(ctx, decision.organization, sp, session as Session);
  } catch (err) {
    // The organization was deleted between the decision and the membership.
    if (!(err instanceof AdminError)) throw err;
    return answerFailure(ctx, request, reply, saml, STATUS.responder, STATUS.requestDenied);
  }
  return answerSuccess(ctx, request, reply, saml, sp, session as Session, user as User, organization);
}

/**
 * The organization claims (`org_id`, `org_name`, `org_roles`) of a sign-in to an SP with an
 * `organization`, the user made a member first where the decision admits them now (`joinIfNew`);
 * none without one. Sigil sets them: they are there for the SP's `attributes` to map.
 * @throws AdminError when the organization is gone meanwhile.
 */
async function organizationOf(
  ctx: SamlEndpointServices,
  organization: IssuedOrganization | undefined,
  sp: ServiceProvider,
  session: Session,
): Promise<Record<string, unknown>> {
  if (!organization) return {};
  const roles = await joinIfNew(ctx, organization, session.subjectId, samlClientId(sp.entityId), '/saml/sso');
  return organizationClaims({ id: organization.id, name: organization.name, roles }, [ROLES_SCOPE]);
}

/** Stores the request as pending (unless it is already) and sends the browser to `page` (`toInteractionPage`). */
function toPage(
  ctx: SamlEndpointServices,
  request: FastifyRequest,
  reply: FastifyReply,
  saml: SamlPending,
  sp: ServiceProvider,
  browser: string,
  pending: Pending | undefined,
  page: string,
): Promise<FastifyReply> {
  const create = () => ctx.interactions.create(samlClientId(sp.entityId), samlInteraction(saml, sp, browser));
  return toInteractionPage(ctx, request, reply, browser, pending, page, create, (err) =>
    sendErrorPage(ctx, reply, err, language(request), err.status),
  );
}

/** Posts a successful Response about the session's user to the SP's ACS, with the claims of the organization signed in to. */
async function answerSuccess(
  ctx: SamlEndpointServices,
  request: FastifyRequest,
  reply: FastifyReply,
  saml: SamlPending,
  sp: ServiceProvider,
  session: Session,
  user: User,
  organization: Record<string, unknown>,
): Promise<FastifyReply> {
  const now = nowSeconds();
  const released = await ctx.tokens.releasedSamlClaims(
    { subjectId: user.subjectId, claims: claimsOf(user) },
    sp.entityId,
    claimsFor(sp),
  );
  // Organization claims are Sigil's alone (as in tokens): never a user's claim of that name.
  const own = Object.entries(released).filter(([name]) => !(ORGANIZATION_CLAIMS as readonly string[]).includes(name));
  const claims = { ...Object.fromEntries(own), ...organization };
  const answer = await ctx.saml.success(
    targetOf(saml),
    {
      subjectId: session.subjectId,
      claims,
      authTime: session.authTime,
      amr: session.amr,
      sid: session.sid,
      sessionExpiresAt: ctx.sessions.expiryOf(session),
    },
    now,
  );
  // An emailAddress NameID for a user without an email: the SP hears that no assertion can be made.
  if (!answer?.nameId) return answerFailure(ctx, request, reply, saml, STATUS.responder, STATUS.invalidNameIdPolicy);
  // The SP joins the session (SAML Profiles §4.4): its single logout, through the browser or over
  // SOAP, names this NameID and SessionIndex.
  if (sp.sloUrl || sp.soapSloUrl)
    await ctx.logout.participateSaml(session, ctx.sessions.expiryOf(session), {
      entityId: sp.entityId,
      nameId: answer.nameId.value,
      format: answer.nameId.format ?? NAME_ID_FORMATS.unspecified,
      ...(answer.nameId.spNameQualifier !== undefined ? { spNameQualifier: answer.nameId.spNameQualifier } : {}),
      sessionIndex: session.sid,
    });
  ctx.events.emit({
    name: 'token_issued',
    endpoint: 'saml_sso',
    clientId: samlClientId(sp.entityId),
    subjectId: session.subjectId,
    tokenTypes: ['saml_assertion'],
    ...originOf(request),
  });
  return post(ctx, reply, answer);
}

/** Posts a Response of another status, without an assertion, to the SP's registered ACS. */
async function answerFailure(
  ctx: SamlEndpointServices,
  request: FastifyRequest,
  reply: FastifyReply,
  saml: SamlPending,
  code: string,
  subCode: string,
): Promise<FastifyReply> {
  const answer = await ctx.saml.failure(targetOf(saml), { code, subCode }, nowSeconds());
  if (!answer) return expiredPage(ctx, request, reply);
  ctx.events.emit({
    name: 'token_issue_failed',
    endpoint: 'saml_sso',
    clientId: samlClientId(saml.entityId),
    error: subCode.slice(subCode.lastIndexOf(':') + 1),
    ...originOf(request),
  });
  return post(ctx, reply, answer);
}

function targetOf(saml: SamlPending): SamlTarget {
  return {
    entityId: saml.entityId,
    acsUrl: saml.acsUrl,
    ...(saml.requestId !== undefined ? { requestId: saml.requestId } : {}),
    ...(saml.relayState !== undefined ? { relayState: saml.relayState } : {}),
  };
}

/** The HTTP-POST binding (SAML Bindings §3.5.4): the auto-posting form, its script allowed by hash. */
function post(ctx: SamlEndpointServices, reply: FastifyReply, answer: SamlAnswer): FastifyReply {
  return ctx.pages.sendFormPost(reply, answer.acsUrl, { ...answer.fields });
}

/** A quota's refusal: the 429 error page with `Retry-After`; nothing is stored. */
function tooMany(
  ctx: SamlEndpointServices,
  request: FastifyRequest,
  reply: FastifyReply,
  err: OAuthError,
): FastifyReply {
  reply.headers(err.headers);
  return sendErrorPage(ctx, reply, err, language(request), err.status);
}

/** A refused request: the error page (400), with the reason and nothing posted to any ACS. */
function refuse(ctx: SamlEndpointServices, request: FastifyRequest, reply: FastifyReply, reason: string): FastifyReply {
  ctx.events.emit({
    name: 'token_issue_failed',
    endpoint: 'saml_sso',
    error: 'invalid_request',
    errorDescription: reason,
    ...originOf(request),
  });
  return sendErrorPage(ctx, reply, new OAuthError('invalid_request', reason), language(request), 400);
}
