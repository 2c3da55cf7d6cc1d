/**
 * The end of a logout in the browser: the signed-out page with the front-channel logout iframes
 * of the session's clients (OIDC Front-Channel Logout 1.0 §3), then the post-logout redirect
 * (RP-Initiated Logout 1.0 §3). Without iframes to load, the redirect is immediate.
 */
import type { FastifyReply } from 'fastify';
import type { Services } from '../services.js';
import { asciiUri } from '../http/authorization-response.js';
import { frameSources, frontChannelFrames } from '../logout/front-channel.js';
import type { EndedSession } from '../logout/logout.js';

/** The services this module uses. */
export type SignedOutPageServices = Pick<Services, 'issuer' | 'pages'>;

/**
 * Answers a completed logout.
 * @param ended what ending the session did, or undefined when there was none to end
 * @param redirect the validated post-logout redirect (with `state`), if any
 */
export function sendLoggedOut(
  ctx: SignedOutPageServices,
  reply: FastifyReply,
  lang: string,
  ended: EndedSession | undefined,
  redirect: string | undefined,
): FastifyReply {
  const frames = ended ? frontChannelFrames(ctx.issuer, ended.sid, ended.clients) : [];
  const target = redirect === undefined ? undefined : asciiUri(redirect);
  if (frames.length === 0 && target !== undefined)
    return reply.header('cache-control', 'no-store').redirect(target, 303);
  return ctx.pages.sendSignedOut(reply, lang, frames, frameSources(frames), target);
}
