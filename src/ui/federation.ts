/**
 * Sign-in through an upstream provider: `/federation/<name>/login?interaction=<id>` sends the
 * browser to the provider; `/federation/<name>/callback` completes the sign-in (the upstream
 * exchange and the link of the external user to a local subject are `ctx.federation`'s,
 * federation/sign-in.ts), starts a Sigil session (`idp` = the provider, `amr: ["external"]`, or
 * the upstream's `amr` and `acr` when it asserts MFA) and resumes the pending request. Failures end
 * on Sigil's error page; no user or session is created.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Services } from '../services.js';
import { browserOf } from '../interaction/browser.js';
import { queryString } from '../http/fields.js';
import { formBody } from '../http/request.js';
import { expiredPage, sendErrorPage } from './error-page.js';
import { language } from './language.js';
import { finishSignIn, resume } from '../interaction/outcomes.js';
import { OAuthError } from '../protocol/errors.js';
import { upstreamAuthentication } from '../mfa/factors.js';
import type { UpstreamStep } from '../federation/sign-in.js';
import type { BrowserServices } from '../interaction/browser.js';
import type { OutcomesServices } from '../interaction/outcomes.js';
import type { ErrorPageServices } from './error-page.js';
import { type OutcomePageServices, signInDeniedPage } from './outcome-pages.js';

/** The services this module uses. */
export type FederationPageServices = Pick<Services, 'federation' | 'basePath'> &
  BrowserServices &
  ErrorPageServices &
  OutcomesServices &
  OutcomePageServices;

/** Registers the federation routes. */
export function federationRoutes(app: FastifyInstance, ctx: FederationPageServices): void {
  app.get('/federation/:name/login', async (request, reply) => {
    const name = (request.params as { name: string }).name;
    const step = await ctx.federation.start(name, queryString(request, 'interaction'), browserOf(ctx, request, reply));
    if (step.outcome !== 'redirect') return stepFailed(ctx, request, reply, step);
    return reply.header('cache-control', 'no-store').redirect(step.url, 303);
  });

  app.get('/federation/:name/callback', async (request, reply) => {
    const name = (request.params as { name: string }).name;
    const callback = { state: queryString(request, 'state'), error: queryString(request, 'error'), url: request.url };
    const step = await ctx.federation.complete(name, callback, () => browserOf(ctx, request, reply));
    if (step.outcome !== 'signed_in') return stepFailed(ctx, request, reply, step);
    const { user, claims, pending } = step;
    // An upstream that asserts MFA passes its amr and acr on (src/mfa/factors.ts).
    const how = { ...upstreamAuthentication(claims), idp: name, tenant: user.tenant, endpoint: 'federation' as const };
    const signedIn = await finishSignIn(ctx, request, reply, user, how, pending);
    if ('denied' in signedIn) return signInDeniedPage(ctx, request, reply, pending, signedIn);
    return resume(ctx, reply, pending);
  });

  // response_mode=form_post (Apple): the fields are kept with the state, then the browser comes
  // back by GET (federation/sign-in.ts, `receivePost`). No CSRF token: the upstream's state is the
  // request's proof (RFC 6749 §10.12), checked against this browser at the GET.
  app.post('/federation/:name/callback', async (request, reply) => {
    const name = (request.params as { name: string }).name;
    const form = formBody(request, 'invalid_request');
    const posted = { code: form.get('code'), error: form.get('error'), user: form.get('user') };
    const next = await ctx.federation.receivePost(name, form.get('state'), posted);
    if (!next)
      return stepFailed(ctx, request, reply, { outcome: 'failed', description: 'the sign-in response is not valid' });
    return reply.header('cache-control', 'no-store').redirect(`${ctx.basePath}${next}`, 303);
  });
}

/**
 * The page of a step that did not go on: the expired page, or the 502 error page of a failed
 * upstream sign-in, in the language of the pending request once it is known.
 */
function stepFailed(
  ctx: FederationPageServices,
  request: FastifyRequest,
  reply: FastifyReply,
  step: UpstreamStep,
): FastifyReply {
  if (step.outcome !== 'failed') return expiredPage(ctx, request, reply);
  const lang = language(request, step.interaction?.request.uiLocales);
  return sendErrorPage(ctx, reply, new OAuthError('temporarily_unavailable', step.description), lang, 502);
}
