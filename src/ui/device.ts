/**
 * The device verification page (`/device`; RFC 8628 §3.3): the person types the user
 * code (pre-filled from `verification_uri_complete`), signs in if needed, sees the consent page
 * naming the client and the scopes, and approves or denies. Nothing is approved by a GET
 * (RFC 8628 §5.4). Wrong codes count against the address and the browser (RFC 8628 §5.1).
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Services } from '../services.js';
import { browserOf, sessionOf } from '../interaction/browser.js';
import { queryString, single } from '../http/fields.js';
import { expiredPage } from './error-page.js';
import { language } from './language.js';
import {
  answerDevice,
  deviceNextStep,
  findPendingDevice,
  shownUserCode,
  startDeviceRequest,
} from '../interaction/device.js';
import type { Pending } from '../interaction/interactions.js';
import { OAuthError } from '../protocol/errors.js';
import type { CredentialAttempt } from '../limits/failure-limiter.js';
import { formOf, formRoute } from './forms.js';
import { limiterAllows } from './attempts.js';
import { deviceAnsweredPage } from './outcome-pages.js';
import type { FactsServices } from '../interaction/facts.js';
import type { InteractionsServices } from '../interaction/interactions.js';
import type { BrowserServices } from '../interaction/browser.js';
import type { OutcomePageServices } from './outcome-pages.js';

/** The services this module uses. */
export type DevicePageServices = Pick<
  Services,
  'basePath' | 'clients' | 'interactions' | 'issuer' | 'limiter' | 'mfa' | 'pages' | 'store'
> &
  BrowserServices &
  FactsServices &
  InteractionsServices &
  OutcomePageServices;

/** Registers `/device` (GET shows, POST takes the code) and `/device/resume`. */
export function devicePages(app: FastifyInstance, ctx: DevicePageServices): void {
  app.get('/device', async (request, reply) => {
    const given = shownUserCode(queryString(request, 'userCode') ?? '');
    return devicePage(ctx, request, reply, given, undefined);
  });

  app.post('/device', formRoute(app, ctx), async (request, reply) => {
    const browser = browserOf(ctx, request, reply);
    // RFC 8628 §5.1: user codes are limited per address (and per browser), never globally.
    const attempt: CredentialAttempt = {
      address: request.ip,
      identity: 'user-code',
      identityWide: false,
      extraKeys: [`device:browser:${browser}`],
    };
    if (!(await limiterAllows(ctx, reply, attempt))) return devicePage(ctx, request, reply, '', 'tooManyAttempts', 429);
    const found = await findPendingDevice(ctx, single(formOf(request), 'userCode') ?? '');
    if (!found) {
      await ctx.limiter.failed(attempt);
      return devicePage(ctx, request, reply, '', 'invalidCode');
    }
    let pending: Pending;
    try {
      pending = await startDeviceRequest(ctx, found, browser, request.ip);
    } catch (err) {
      if (!(err instanceof OAuthError)) throw err;
      reply.headers(err.headers);
      return devicePage(ctx, request, reply, '', 'tooManyAttempts', 429);
    }
    // A new request has no consent yet: the login page, a step-up, or the consent page.
    const next = await deviceNextStep(ctx, await sessionOf(ctx, request), pending.interaction);
    const page = 'page' in next ? next.page : '/consent';
    const to = `${ctx.basePath}${page}?interaction=${encodeURIComponent(pending.id)}`;
    return reply.header('cache-control', 'no-store').redirect(to, 303);
  });

  app.get('/device/resume', async (request, reply) => {
    const id = queryString(request, 'interaction');
    const browser = browserOf(ctx, request, reply);
    const interaction = await ctx.interactions.get(id, browser);
    if (!id || !interaction?.device) return expiredPage(ctx, request, reply);
    const next = await deviceNextStep(ctx, await sessionOf(ctx, request), interaction);
    if ('page' in next) return reply.redirect(`${ctx.basePath}${next.page}?interaction=${encodeURIComponent(id)}`, 303);
    if (!(await answerDevice(ctx, { id, interaction }, next.answer))) return expiredPage(ctx, request, reply);
    return deviceAnsweredPage(ctx, request, reply, true);
  });
}

function devicePage(
  ctx: DevicePageServices,
  request: FastifyRequest,
  reply: FastifyReply,
  userCode: string,
  error: 'invalidCode' | 'tooManyAttempts' | undefined,
  status = 200,
): FastifyReply {
  const lang = language(request);
  return ctx.pages.send(
    reply,
    'device',
    lang,
    { csrf: reply.generateCsrf(), userCode, error: error ? ctx.pages.text(lang, error) : undefined },
    status,
  );
}
