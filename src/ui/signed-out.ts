/**
 * The end of a logout in the browser: first the session's SAML service providers, each sent a
 * LogoutRequest through the browser (interaction/saml-logout.ts, SAML Profiles §4.4.3.3), then the
 * signed-out page with the front-channel logout iframes of the session's clients (OIDC
 * Front-Channel Logout 1.0 §3), then the post-logout redirect (RP-Initiated Logout 1.0 §3).
 * Without iframes to load, the redirect is immediate.
 */
import type { FastifyReply } from 'fastify';
import type { Services } from '../services.js';
import { nowSeconds } from '../crypto/handles.js';
import { asciiUri } from '../http/authorization-response.js';
import { type SamlLogoutServices, type SamlLogoutStep, startSamlLogout } from '../interaction/saml-logout.js';
import { frameSources, frontChannelFrames } from '../logout/front-channel.js';
import type { EndedSession } from '../logout/logout.js';
import type { OutgoingMessage } from '../saml/binding.js';

/** The services this module uses. */
export type SignedOutPageServices = Pick<Services, 'issuer' | 'pages'> & SamlLogoutServices;

/**
 * Answers a completed logout: the SAML SPs first (when the session had any), then the signed-out page.
 * @param ended what ending the session did, or undefined when there was none to end
 * @param redirect the validated post-logout redirect (with `state`), if any
 */
export async function sendLoggedOut(
  ctx: SignedOutPageServices,
  reply: FastifyReply,
  lang: string,
  ended: EndedSession | undefined,
  redirect: string | undefined,
): Promise<FastifyReply> {
  const frames = ended ? frontChannelFrames(ctx.issuer, ended.sid, ended.clients) : [];
  // With SAML turned off since the SPs joined, /saml/slo is not served: their answers would find nothing.
  if (ended && ended.samlParticipants.length > 0 && ctx.saml.config.enabled) {
    const step = await startSamlLogout(
      ctx,
      ended.samlParticipants,
      lang,
      { kind: 'signed-out', frames, ...(redirect !== undefined ? { redirect } : {}) },
      nowSeconds(),
    );
    // The logout was mostly confirmed by a form of Sigil's, whose CSP form-action Chromium applies to
    // the redirects that answer it: the first LogoutRequest leaves from the signed-out page (its
    // link and script), not from a 303 to the SP's origin, which the policy would block.
    if (step.kind === 'send' && step.message.binding === 'redirect')
      return ctx.pages.sendSignedOut(reply, lang, [], frameSources([]), asciiUri(step.message.url));
    return sendSamlLogoutStep(ctx, reply, step);
  }
  return sendSignedOutPage(ctx, reply, lang, frames, redirect);
}

/**
 * The signed-out page with `frames`, going on to `redirect`; without frames, the redirect itself.
 */
function sendSignedOutPage(
  ctx: SignedOutPageServices,
  reply: FastifyReply,
  lang: string,
  frames: string[],
  redirect: string | undefined,
): FastifyReply {
  const target = redirect === undefined ? undefined : asciiUri(redirect);
  if (frames.length === 0 && target !== undefined)
    return reply.header('cache-control', 'no-store').redirect(target, 303);
  return ctx.pages.sendSignedOut(reply, lang, frames, frameSources(frames), target);
}

/**
 * Sends a step of a SAML single logout: the next LogoutRequest, or its end. The end at an SP that
 * asked (its LogoutResponse) goes through the signed-out page when there are front-channel frames
 * to load and the SP takes HTTP-Redirect; with HTTP-POST the response is posted at once and the
 * frames are left out (the signed-out page goes on by a link or a redirect, never a form).
 */
export function sendSamlLogoutStep(
  ctx: SignedOutPageServices,
  reply: FastifyReply,
  step: SamlLogoutStep,
): FastifyReply {
  if (step.kind === 'send') return sendSamlMessage(ctx, reply, step.message);
  const { finish, lang } = step;
  if (finish.kind === 'signed-out') return sendSignedOutPage(ctx, reply, lang, finish.frames, finish.redirect);
  const sp = ctx.saml.serviceProviders.get(finish.entityId);
  const message =
    sp && ctx.saml.logoutResponse(sp, finish.inResponseTo, finish.status, finish.relayState, nowSeconds());
  if (!message) return sendSignedOutPage(ctx, reply, lang, finish.frames, undefined);
  if (message.binding === 'redirect') return sendSignedOutPage(ctx, reply, lang, finish.frames, message.url);
  return sendSamlMessage(ctx, reply, message);
}

/** A SAML message through the browser: a 303 redirect (HTTP-Redirect) or the auto-posting form (HTTP-POST). */
function sendSamlMessage(ctx: SignedOutPageServices, reply: FastifyReply, message: OutgoingMessage): FastifyReply {
  if (message.binding === 'redirect') return reply.header('cache-control', 'no-store').redirect(message.url, 303);
  return ctx.pages.sendFormPost(reply, message.url, message.fields);
}
