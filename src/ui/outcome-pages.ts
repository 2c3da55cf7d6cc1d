/**
 * The pages' side of the interaction outcomes (interaction/outcomes.ts) that end a pending request
 * with a page rather than a redirect back to the authorization endpoint: a denial (the user's, or
 * the postLogin hook's), and a device's answer.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Services } from '../services.js';
import { sendErrorToClient } from '../http/authorization-response.js';
import type { Pending } from '../interaction/interactions.js';
import { deny, resume, type SignInDenied } from '../interaction/outcomes.js';
import { OAuthError } from '../protocol/errors.js';
import { expiredPage, sendErrorPage } from './error-page.js';
import { language } from './language.js';
import type { ResponseDelivery } from '../http/authorization-response.js';
import type { OutcomesServices } from '../interaction/outcomes.js';
import type { ErrorPageServices } from './error-page.js';

/** The services this module uses. */
export type OutcomePageServices = Pick<Services, 'pages'> & ErrorPageServices & OutcomesServices & ResponseDelivery;

/** Answers a pending request with `access_denied` (`deny`) after cancel or "no", or a hook's denial. */
export async function denyPage(
  ctx: OutcomePageServices,
  request: FastifyRequest,
  reply: FastifyReply,
  pending: Pending,
  description?: string,
): Promise<FastifyReply> {
  const denial = await deny(ctx, pending, request.ip, description);
  if (denial.to === 'client') return sendErrorToClient(ctx, reply, denial.target, denial.error);
  if (denial.to === 'device') return deviceAnsweredPage(ctx, request, reply, false);
  if (denial.to === 'resume') return resume(ctx, reply, pending);
  return expiredPage(ctx, request, reply);
}

/**
 * Answers a sign-in the `postLogin` hook denied (`finishSignIn`): the pending request gets
 * `access_denied` with the hook's description (`denyPage`); a sign-in at the account pages, which
 * has no client to tell, shows the description on the 403 error page.
 */
export async function signInDeniedPage(
  ctx: OutcomePageServices,
  request: FastifyRequest,
  reply: FastifyReply,
  pending: Pending | undefined,
  denied: SignInDenied,
): Promise<FastifyReply> {
  if (pending) return denyPage(ctx, request, reply, pending, denied.denied);
  return sendErrorPage(ctx, reply, new OAuthError('access_denied', denied.denied), language(request), 403);
}

/** The page that tells the person a device was approved or denied; the device learns it by polling (RFC 8628 §3.5). */
export function deviceAnsweredPage(
  ctx: OutcomePageServices,
  request: FastifyRequest,
  reply: FastifyReply,
  approved: boolean,
): FastifyReply {
  return ctx.pages.send(reply, 'message', language(request), {
    titleKey: 'deviceTitle',
    textKey: approved ? 'deviceApproved' : 'deviceDenied',
  });
}
