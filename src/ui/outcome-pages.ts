/**
 * The pages' side of the interaction outcomes (interaction/outcomes.ts) that end a pending request
 * with a page rather than a redirect back to the authorization endpoint: a denial, and a device's
 * answer.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Services } from '../services.js';
import { sendErrorToClient } from '../http/authorization-response.js';
import type { Pending } from '../interaction/interactions.js';
import { deny, resume } from '../interaction/outcomes.js';
import { expiredPage } from './error-page.js';
import { language } from './language.js';
import type { ResponseDelivery } from '../http/authorization-response.js';
import type { OutcomesServices } from '../interaction/outcomes.js';
import type { ErrorPageServices } from './error-page.js';

/** The services this module uses. */
export type OutcomePageServices = Pick<Services, 'pages'> & ErrorPageServices & OutcomesServices & ResponseDelivery;

/** Answers a pending request with `access_denied` (`deny`) after cancel or "no". */
export async function denyPage(
  ctx: OutcomePageServices,
  request: FastifyRequest,
  reply: FastifyReply,
  pending: Pending,
): Promise<FastifyReply> {
  const denial = await deny(ctx, pending, request.ip);
  if (denial.to === 'client') return sendErrorToClient(ctx, reply, denial.target, denial.error);
  if (denial.to === 'device') return deviceAnsweredPage(ctx, request, reply, false);
  if (denial.to === 'resume') return resume(ctx, reply, pending);
  return expiredPage(ctx, request, reply);
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
