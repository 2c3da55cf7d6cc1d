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
import { expiredPage, sendErrorPage } from './error-page.js';
import { language } from './language.js';
import { userCodeKey } from '../stores/records/device-codes.js';
import { answerDevice } from '../interaction/device.js';
import { stepUpPage } from '../interaction/facts.js';
import { takeInteractionQuota } from '../interaction/interactions.js';
import type { Interaction } from '../stores/records/interactions.js';
import { OAuthError } from '../protocol/errors.js';
import { Params } from '../protocol/params.js';
import { nowSeconds } from '../crypto/handles.js';
import type { CredentialAttempt } from '../limits/failure-limiter.js';
import { formatUserCode, normalizeUserCode } from '../validation/user-code.js';
import { checkCsrf } from './csrf.js';
import { limiterAllows } from './attempts.js';
import { deviceAnsweredPage } from './outcome-pages.js';
import type { FactsServices } from '../interaction/facts.js';
import type { InteractionsServices } from '../interaction/interactions.js';
import type { BrowserServices } from '../interaction/browser.js';
import type { OutcomePageServices } from './outcome-pages.js';

/** The services this module uses. */
export type DevicePageServices = Pick<Services, 'basePath' | 'clients' | 'interactions' | 'issuer' | 'limiter' | 'mfa' | 'pages' | 'store'> & BrowserServices & FactsServices & InteractionsServices & OutcomePageServices;

/** Registers `/device` (GET shows, POST takes the code) and `/device/resume`. */
export function devicePages(app: FastifyInstance, ctx: DevicePageServices): void {
  const origin = new URL(ctx.issuer).origin;

  app.get('/device', async (request, reply) => {
    const given = normalizeUserCode(queryString(request, 'userCode') ?? '');
    return devicePage(ctx, request, reply, given ? formatUserCode(given) : '', undefined);
  });

  app.post('/device', async (request, reply) => {
    const body = request.body instanceof Params ? request.body : Params.empty();
    const lang = language(request);
    if (!checkCsrf(app, request, reply, origin))
      return sendErrorPage(ctx, reply, new OAuthError('invalid_request', 'the form has expired, please try again'), lang, 403);
    const browser = browserOf(ctx, request, reply);
    // RFC 8628 §5.1: user codes are limited per address (and per browser), never globally.
    const attempt: CredentialAttempt = { address: request.ip, identity: 'user-code', identityWide: false, extraKeys: [`device:browser:${browser}`] };
    const typed = single(body, 'userCode') ?? '';
    if (!(await limiterAllows(ctx, reply, attempt))) return devicePage(ctx, request, reply, '', 'tooManyAttempts', 429);
    const code = normalizeUserCode(typed);
    const found = code ? await pendingDevice(ctx, userCodeKey(code)) : undefined;
    if (!code || !found) {
      await ctx.limiter.failed(attempt);
      return devicePage(ctx, request, reply, '', 'invalidCode');
    }
    try {
      await takeInteractionQuota(ctx, browser, request.ip);
    } catch (err) {
      if (!(err instanceof OAuthError)) throw err;
      reply.headers(err.headers);
      return devicePage(ctx, request, reply, '', 'tooManyAttempts', 429);
    }
    const interaction: Interaction = {
      request: { clientId: found.clientId, scopes: found.data.scopes, tenant: null, acrValues: [] },
      params: { client_id: found.clientId, scope: found.data.scopes.join(' ') },
      browser,
      device: { deviceKey: found.key, userCodeKey: userCodeKey(code) },
    };
    const id = await ctx.interactions.create(found.clientId, interaction);
    const session = await sessionOf(ctx, request);
    // A session lacking the second factor the user has or the client requires steps up first (src/mfa/).
    const stepUp = session ? await stepUpPage(ctx, session, ctx.mfa.requiredFor(ctx.clients.get(found.clientId))) : undefined;
    const next = session ? (stepUp ?? '/consent') : '/account/login';
    return reply.header('cache-control', 'no-store').redirect(`${ctx.basePath}${next}?interaction=${encodeURIComponent(id)}`, 303);
  });

  app.get('/device/resume', async (request, reply) => {
    const id = queryString(request, 'interaction');
    const browser = browserOf(ctx, request, reply);
    const interaction = await ctx.interactions.get(id, browser);
    if (!id || !interaction?.device) return expiredPage(ctx, request, reply);
    const session = await sessionOf(ctx, request);
    if (!session) return reply.redirect(`${ctx.basePath}/account/login?interaction=${encodeURIComponent(id)}`, 303);
    const stepUp = await stepUpPage(ctx, session, ctx.mfa.requiredFor(ctx.clients.get(interaction.request.clientId)));
    if (stepUp) return reply.redirect(`${ctx.basePath}${stepUp}?interaction=${encodeURIComponent(id)}`, 303);
    if (!interaction.consented) return reply.redirect(`${ctx.basePath}/consent?interaction=${encodeURIComponent(id)}`, 303);
    if (!(await answerDevice(ctx, { id, interaction }, session))) return expiredPage(ctx, request, reply);
    return deviceAnsweredPage(ctx, request, reply, true);
  });
}

async function pendingDevice(ctx: DevicePageServices, key: string) {
  const now = nowSeconds();
  const codeRow = await ctx.store.records.deviceCodes.findLiveUserCode(key, now);
  if (!codeRow) return undefined;
  const deviceKey = codeRow.data.deviceKey;
  const row = await ctx.store.records.deviceCodes.findByKey(deviceKey);
  if (!row || row.data.status !== 'pending' || row.expiresAt <= now || row.consumedAt !== null) return undefined;
  return { key: deviceKey, clientId: row.clientId, data: row.data };
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
