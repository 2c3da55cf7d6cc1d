/**
 * Sign-in through an upstream provider: `/federation/<name>/login?interaction=<id>` sends the
 * browser to the provider; `/federation/<name>/callback` completes the sign-in, links the external
 * user (by the pair provider, upstream `sub`; a `sub` over 255 characters is refused) to a local
 * subject, starts a Sigil session (`idp` = the provider, `amr: ["external"]`, or the upstream's
 * `amr` and `acr` when it asserts MFA) and
 * resumes the pending request. Failures end on Sigil's error page; no user or session is created.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { SigilContext } from '../context.js';
import { browserOf } from '../interaction/browser.js';
import { queryString } from '../http/fields.js';
import { expiredPage, sendErrorPage } from './error-page.js';
import { language } from './language.js';
import { finishSignIn, resume } from '../interaction/outcomes.js';
import type { Interaction } from '../stores/records/interactions.js';
import { OAuthError } from '../protocol/errors.js';
import { nowSeconds } from '../crypto/handles.js';
import { upstreamAuthentication } from '../mfa/factors.js';
import { mappedClaims, upstreamSubject } from '../federation/upstream.js';
import type { FederationState } from '../stores/records/federation-states.js';

/** Seconds a browser has to come back from the upstream provider. */
const UPSTREAM_TIMEOUT = 600;

/** Registers the federation routes. */
export function federationRoutes(app: FastifyInstance, ctx: SigilContext): void {
  app.get('/federation/:name/login', async (request, reply) => {
    const name = (request.params as { name: string }).name;
    const id = queryString(request, 'interaction');
    const browser = browserOf(ctx, request, reply);
    const interaction = await ctx.interactions.get(id, browser);
    const provider = ctx.upstream.get(name);
    if (!id || !interaction || !provider || !providerAllowed(ctx, interaction, name)) return expiredPage(ctx, request, reply);
    let upstream;
    try {
      upstream = await ctx.upstream.start(provider);
    } catch (err) {
      ctx.log.warn({ err, provider: name }, 'upstream provider unreachable');
      return upstreamFailed(ctx, request, reply, 'the identity provider cannot be reached', interaction);
    }
    const now = nowSeconds();
    const state: FederationState = { provider: name, interactionId: id, nonce: upstream.nonce, codeVerifier: upstream.codeVerifier, browser };
    await ctx.store.records.federationStates.put(upstream.state, {
      clientId: interaction.request.clientId,
      data: state,
      createdAt: now,
      expiresAt: now + UPSTREAM_TIMEOUT,
    });
    return reply.header('cache-control', 'no-store').redirect(upstream.url, 303);
  });

  app.get('/federation/:name/callback', async (request, reply) => {
    const name = (request.params as { name: string }).name;
    const provider = ctx.upstream.get(name);
    const stateValue = queryString(request, 'state');
    if (!provider || !stateValue || stateValue.length > 200) return upstreamFailed(ctx, request, reply, 'the sign-in response is not valid');
    const row = await ctx.store.records.federationStates.find(stateValue);
    const data = row?.data;
    const browser = browserOf(ctx, request, reply);
    if (!row || !data || data.provider !== name || data.browser !== browser)
      return upstreamFailed(ctx, request, reply, 'the sign-in response does not belong to this browser');
    if (!(await ctx.store.records.federationStates.consume(stateValue, nowSeconds())))
      return upstreamFailed(ctx, request, reply, 'the sign-in response was already used or has expired');
    const interaction = await ctx.interactions.get(data.interactionId, browser);
    if (!interaction) return expiredPage(ctx, request, reply);

    let claims: Record<string, unknown>;
    try {
      const url = new URL(request.url, ctx.issuer);
      claims = await ctx.upstream.finish(provider, new URL(`${ctx.upstream.callbackUrl(name)}${url.search}`), {
        state: stateValue,
        nonce: data.nonce,
        codeVerifier: data.codeVerifier,
      });
    } catch (err) {
      ctx.log.warn({ err, provider: name }, 'upstream sign-in failed');
      const upstreamError = queryString(request, 'error');
      return upstreamFailed(ctx, request, reply, upstreamError ? `the identity provider answered ${upstreamError}` : 'the identity provider sign-in could not be verified', interaction);
    }
    // OIDC Core §2: `sub` is at most 255 characters; a longer one is refused, never cut.
    const sub = upstreamSubject(claims);
    if (sub === undefined) {
      ctx.log.warn({ provider: name }, 'upstream subject refused: longer than 255 characters or not a string');
      return upstreamFailed(ctx, request, reply, 'the identity provider sent an invalid subject identifier', interaction);
    }
    const tenant = interaction.request.tenant;
    const user = await ctx.management.users.linkUpstream(provider.name, sub, mappedClaims(provider, claims), tenant);
    if (!user.isActive) return upstreamFailed(ctx, request, reply, 'the account is not active', interaction);
    // An upstream that asserts MFA passes its amr and acr on (src/mfa/factors.ts).
    const pending = { id: data.interactionId, interaction };
    await finishSignIn(ctx, request, reply, user, { ...upstreamAuthentication(claims), idp: name, tenant: user.tenant, endpoint: 'federation' }, pending);
    return resume(ctx, reply, pending);
  });
}

/** Whether the pending request's client may use provider `name`. */
export function providerAllowed(ctx: SigilContext, interaction: Interaction, name: string): boolean {
  const client = ctx.clients.get(interaction.request.clientId);
  if (!client) return interaction.device !== undefined;
  return client.identityProviderRestrictions.length === 0 || client.identityProviderRestrictions.includes(name);
}

/** The 502 error page of a failed upstream sign-in, in the language of the pending request once it is known. */
function upstreamFailed(ctx: SigilContext, request: FastifyRequest, reply: FastifyReply, description: string, interaction?: Interaction): FastifyReply {
  return sendErrorPage(ctx, reply, new OAuthError('temporarily_unavailable', description), language(request, interaction?.request.uiLocales), 502);
}
