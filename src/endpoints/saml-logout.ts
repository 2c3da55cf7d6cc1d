/**
 * `GET`/`POST /saml/slo`, SAML Single Logout (SAML Profiles §4.4) in the HTTP-Redirect and
 * HTTP-POST bindings, both messages an SP sends there:
 * - a LogoutRequest: checked (signed by the SP, for this endpoint, fresh, not past NotOnOrAfter,
 *   its ID never seen before from that SP, within the address's quota), then the Sigil session it
 *   names ends if its NameID is the one Sigil gave that SP in it (interaction/saml-logout.ts; OIDC
 *   back-channel logout runs), the session's other SAML SPs are sent LogoutRequests through the
 *   browser, and the SP gets a signed LogoutResponse at its single logout endpoint;
 * - a LogoutResponse to one of Sigil's LogoutRequests: checked (signed, for this endpoint, answering
 *   the request Sigil sent to that SP in that chain), then the chain goes on.
 * A message refused ends on Sigil's error page (400), as a refused AuthnRequest does: nothing is
 * sent to any SP and nothing is stored.
 *
 * A LogoutRequest naming no live session of that principal with that SP (ended already, another
 * user's NameID, a session of another browser without a SessionIndex) ends nothing and is still
 * answered Success: for the principal named there is nothing left to end at Sigil, which is what
 * the SP asked (§4.4.3.4 lets the IdP answer once it has done what it can), and an error status
 * would leave the SP's user facing an error for a logout that is complete.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { nowSeconds } from '../crypto/handles.js';
import { clearSessionCookie } from '../http/cookies.js';
import { methodNotAllowed } from '../http/request.js';
import { type BrowserServices, sessionOf } from '../interaction/browser.js';
import { type SamlInteractionServices, takeSamlRequestQuota } from '../interaction/saml.js';
import { continueSamlLogout, endSessionOfRequest, startSamlLogout } from '../interaction/saml-logout.js';
import { frontChannelFrames } from '../logout/front-channel.js';
import { OAuthError } from '../protocol/errors.js';
import { SamlRefused } from '../saml/authn-request.js';
import type { BindingMessage } from '../saml/binding.js';
import { SLO_PATH } from '../saml/identity-provider.js';
import { STATUS } from '../saml/response.js';
import { XmlRefused } from '../saml/xml.js';
import { sendErrorPage } from '../ui/error-page.js';
import type { ErrorPageServices } from '../ui/error-page.js';
import { language } from '../ui/language.js';
import { type SignedOutPageServices, sendSamlLogoutStep } from '../ui/signed-out.js';
import { bindingMessage, messageField } from './saml-binding.js';

/** The services this module uses. */
export type SamlLogoutEndpointServices = BrowserServices &
  ErrorPageServices &
  SamlInteractionServices &
  SignedOutPageServices;

/** Registers `/saml/slo` (the caller registers it only with `saml.enabled`). */
export function samlLogoutEndpoint(app: FastifyInstance, ctx: SamlLogoutEndpointServices): void {
  app.route({
    method: ['GET', 'POST'],
    url: SLO_PATH,
    handler: async (request, reply) => {
      let message: BindingMessage;
      let field: ReturnType<typeof messageField>;
      try {
        field = messageField(request);
        if (field === undefined) return refuse(ctx, request, reply, 'send a SAMLRequest or a SAMLResponse');
        message = bindingMessage(request, field);
      } catch (err) {
        if (!(err instanceof XmlRefused || err instanceof OAuthError)) throw err;
        return refuse(ctx, request, reply, err.message);
      }
      return field === 'SAMLRequest'
        ? receiveRequest(ctx, request, reply, message)
        : receiveResponse(ctx, request, reply, message);
    },
  });
  app.route({ method: ['PUT', 'DELETE', 'PATCH'], url: SLO_PATH, handler: methodNotAllowed('GET, POST') });
}

/** An SP's LogoutRequest (see the module comment). */
async function receiveRequest(
  ctx: SamlLogoutEndpointServices,
  request: FastifyRequest,
  reply: FastifyReply,
  message: BindingMessage,
): Promise<FastifyReply> {
  const now = nowSeconds();
  let logout: ReturnType<typeof ctx.saml.readLogoutRequest>;
  try {
    logout = ctx.saml.readLogoutRequest(message, now);
    // Every checked request leaves a replay record: the address's quota first, as for AuthnRequests.
    await takeSamlRequestQuota(ctx, request.ip);
    await ctx.saml.markUsed(logout, now);
  } catch (err) {
    if (err instanceof OAuthError) {
      reply.headers(err.headers);
      return sendErrorPage(ctx, reply, err, language(request), err.status);
    }
    if (!(err instanceof SamlRefused)) throw err;
    return refuse(ctx, request, reply, err.message);
  }
  const session = await sessionOf(ctx, request);
  const ended = await endSessionOfRequest(ctx, logout, session?.sid);
  if (ended && ended.sid === session?.sid) clearSessionCookie(reply, ctx.issuer);
  request.log.info({ sp: logout.sp.entityId, ended: ended !== undefined }, 'SAML logout request');
  const step = await startSamlLogout(
    ctx,
    (ended?.samlParticipants ?? []).filter((p) => p.entityId !== logout.sp.entityId),
    language(request),
    {
      kind: 'respond',
      frames: ended ? frontChannelFrames(ctx.issuer, ended.sid, ended.clients) : [],
      entityId: logout.sp.entityId,
      inResponseTo: logout.id,
      ...(logout.relayState !== undefined ? { relayState: logout.relayState } : {}),
      status: STATUS.success,
    },
    now,
  );
  return sendSamlLogoutStep(ctx, reply, step);
}

/** An SP's LogoutResponse to a LogoutRequest of Sigil's: the chain goes on. */
async function receiveResponse(
  ctx: SamlLogoutEndpointServices,
  request: FastifyRequest,
  reply: FastifyReply,
  message: BindingMessage,
): Promise<FastifyReply> {
  const now = nowSeconds();
  let step: Awaited<ReturnType<typeof continueSamlLogout>>;
  try {
    const response = ctx.saml.readLogoutResponse(message, now);
    step = await continueSamlLogout(ctx, response, now);
    if (!response.success) request.log.warn({ sp: response.sp.entityId }, 'SAML logout response without Success');
  } catch (err) {
    if (!(err instanceof SamlRefused)) throw err;
    return refuse(ctx, request, reply, err.message);
  }
  if (!step) return refuse(ctx, request, reply, 'the logout response answers no logout request in progress');
  return sendSamlLogoutStep(ctx, reply, step);
}

/** A refused message: the error page (400), nothing sent to any SP. */
function refuse(
  ctx: SamlLogoutEndpointServices,
  request: FastifyRequest,
  reply: FastifyReply,
  reason: string,
): FastifyReply {
  request.log.info({ reason }, 'SAML logout message refused');
  return sendErrorPage(ctx, reply, new OAuthError('invalid_request', reason), language(request), 400);
}
