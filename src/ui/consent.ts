/**
 * The consent page (`/consent`, DESIGN §6; OIDC Core §3.1.2.4): the client's name and every
 * requested scope, a `remember` checkbox, and `yes`/`no`. `yes` lets the pending request go on
 * with the consented scopes (remembered per subject and client when asked, except for native
 * clients, D-22); `no` answers the client with `access_denied`.
 */
import type { FastifyInstance } from 'fastify';
import type { SigilContext } from '../context.js';
import { browserOf, sessionOf } from '../interaction/browser.js';
import { queryString, single } from '../http/fields.js';
import { expiredPage, sendErrorPage } from './error-page.js';
import { language, pendingLanguage } from './language.js';
import { OAuthError } from '../protocol/errors.js';
import { Params } from '../protocol/params.js';
import { grantConsent, mayRememberConsent, resume } from '../interaction/outcomes.js';
import { denyPage } from './outcome-pages.js';
import { checkCsrf } from './csrf.js';
import { format } from './i18n.js';

/** Registers `/consent` (GET shows, POST answers). */
export function consentPage(app: FastifyInstance, ctx: SigilContext): void {
  const origin = new URL(ctx.issuer).origin;

  app.get('/consent', async (request, reply) => {
    const id = queryString(request, 'interaction');
    const browser = browserOf(ctx, request, reply);
    const interaction = await ctx.interactions.get(id, browser);
    const session = await sessionOf(ctx, request);
    // A client of a metadata document whose document can no longer be fetched has gone.
    const client = interaction ? await ctx.clients.resolve(interaction.request.clientId, request.ip).catch(() => undefined) : undefined;
    if (!id || !interaction || !session || !client) return expiredPage(ctx, request, reply);
    const lang = language(request, interaction.request.uiLocales);
    return ctx.pages.send(reply, 'consent', lang, {
      csrf: reply.generateCsrf(),
      interaction: id,
      clientName: client.clientName ?? client.clientId,
      // draft-ietf-oauth-client-id-metadata-document §"OAuth Phishing Attacks": the host of the
      // client_id URL is shown, as the name is whatever the document says; such consent is
      // asked every time (interaction/facts.ts remembers none).
      ...(client.metadataDocument ? { clientHost: new URL(client.clientId).host } : {}),
      scopes: interaction.request.scopes.map((s) => describeScope(ctx, lang, s)),
      canRemember: mayRememberConsent(interaction) && !client.metadataDocument,
      device: interaction.device !== undefined,
    }, 200, interaction.request.target !== undefined);
  });

  app.post('/consent', async (request, reply) => {
    const body = request.body instanceof Params ? request.body : Params.empty();
    if (!checkCsrf(app, request, reply, origin))
      return sendErrorPage(ctx, reply, new OAuthError('invalid_request', 'the form has expired, please try again'), await pendingLanguage(ctx, request, reply, single(body, 'interaction')), 403);
    const id = single(body, 'interaction');
    const browser = browserOf(ctx, request, reply);
    const interaction = await ctx.interactions.get(id, browser);
    const session = await sessionOf(ctx, request);
    if (!id || !interaction || !session) return expiredPage(ctx, request, reply);
    if (single(body, 'button') !== 'yes') return denyPage(ctx, request, reply, { id, interaction });
    await grantConsent(ctx, { id, interaction }, session, single(body, 'remember') === 'yes');
    return resume(reply, { id, interaction });
  });
}

/** A person-readable line for a scope, in the page language. */
function describeScope(ctx: SigilContext, lang: string, scope: string): string {
  const known: Record<string, 'scopeOpenid' | 'scopeProfile' | 'scopeEmail' | 'offlineAccess'> = {
    openid: 'scopeOpenid',
    profile: 'scopeProfile',
    email: 'scopeEmail',
    offline_access: 'offlineAccess',
  };
  const key = known[scope];
  if (key) return ctx.pages.text(lang, key);
  const name = ctx.resources.identity.get(scope)?.displayName ?? ctx.resources.apiScopes.get(scope)?.displayName ?? scope;
  return format(ctx.pages.text(lang, 'scopeOther'), { scope: name });
}
