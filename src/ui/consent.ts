/**
 * The consent page (`/consent`; OIDC Core §3.1.2.4): the client's name, logo and
 * pages, who is signed in, every requested scope, a `remember` checkbox, and `yes`/`no`;
 * `switch` ("not you?") signs out and returns to the login page of the same request, as
 * `prompt=login` would. `yes` lets the pending request go on with the consented scopes
 * (remembered per subject and client when asked, except for native clients: RFC 8252 §8.6);
 * `no` answers the client with `access_denied`. A SAML service provider's request shows its name and
 * the attributes it would receive.
 */
import type { FastifyInstance } from 'fastify';
import type { Services } from '../services.js';
import { browserOf, sessionOf, signOut } from '../interaction/browser.js';
import { queryString, single } from '../http/fields.js';
import { expiredPage } from './error-page.js';
import { language } from './language.js';
import { grantConsent, mayRememberConsent, resume } from '../interaction/outcomes.js';
import { denyPage } from './outcome-pages.js';
import { formOf, formRoute } from './forms.js';
import { allowImagesFrom } from '../page-kit/pages.js';
import { format } from '../page-kit/i18n.js';
import type { OutcomesServices } from '../interaction/outcomes.js';
import type { BrowserServices } from '../interaction/browser.js';
import { samlPartyName } from '../interaction/saml.js';
import { shownDetails } from '../page-kit/authorization-details-view.js';

/** The services this module uses. */
export type ConsentPageServices = Pick<
  Services,
  'basePath' | 'clients' | 'interactions' | 'issuer' | 'pages' | 'resources' | 'saml' | 'users'
> &
  BrowserServices &
  OutcomesServices;

/** Registers `/consent` (GET shows, POST answers). */
export function consentPage(app: FastifyInstance, ctx: ConsentPageServices): void {
  app.get('/consent', async (request, reply) => {
    const id = queryString(request, 'interaction');
    const browser = browserOf(ctx, request, reply);
    const interaction = await ctx.interactions.get(id, browser);
    const session = await sessionOf(ctx, request);
    // A client of a metadata document whose document can no longer be fetched has gone.
    const client =
      interaction && !interaction.saml
        ? await ctx.clients.resolve(interaction.request.clientId, request.ip).catch(() => undefined)
        : undefined;
    const samlName = samlPartyName(ctx, interaction);
    if (!id || !interaction || !session || !(client || samlName)) return expiredPage(ctx, request, reply);
    const lang = language(request, interaction.request.uiLocales);
    const user = await ctx.users.findBySubject(session.subjectId);
    // A SAML service provider's request: its name, and its attributes as what is released.
    if (!client)
      return ctx.pages.send(reply, 'consent', lang, {
        csrf: reply.generateCsrf(),
        interaction: id,
        client: { name: samlName, links: [] },
        user: user?.username ?? session.subjectId,
        scopes: interaction.request.scopes.map((name) => ({ name })),
        canRemember: true,
        device: false,
      });
    const links = (['policyUri', 'tosUri', 'clientUri'] as const).flatMap((k) =>
      client[k] ? [{ href: client[k], key: LINK_TEXTS[k] }] : [],
    );
    // The client's logo comes from its own origin: allowed as an image source on this page only.
    if (client.logoUri) allowImagesFrom(reply, new URL(client.logoUri).origin);
    return ctx.pages.send(
      reply,
      'consent',
      lang,
      {
        csrf: reply.generateCsrf(),
        interaction: id,
        client: { name: client.clientName ?? client.clientId, logoUri: client.logoUri, links },
        user: user?.username ?? session.subjectId,
        // draft-ietf-oauth-client-id-metadata-document §"OAuth Phishing Attacks": the host of the
        // client_id URL is shown, as the name is whatever the document says; such consent is
        // asked every time (interaction/facts.ts remembers none).
        ...(client.metadataDocument ? { clientHost: new URL(client.clientId).host } : {}),
        scopes: interaction.request.scopes.map((s) => describeScope(ctx, lang, s)),
        // RFC 9396 §2: what exactly is asked (a payment's amount and creditor, say), each object
        // as the client sent it; the page escapes it like any other text.
        details: shownDetails(interaction.request.authorizationDetails),
        canRemember: mayRememberConsent(interaction) && !client.metadataDocument,
        device: interaction.device !== undefined,
      },
      200,
      interaction.request.target !== undefined,
    );
  });

  app.post('/consent', formRoute(app, ctx, 'page-in-pending-language'), async (request, reply) => {
    const body = formOf(request);
    const id = single(body, 'interaction');
    const browser = browserOf(ctx, request, reply);
    const interaction = await ctx.interactions.get(id, browser);
    const session = await sessionOf(ctx, request);
    if (!id || !interaction || !session) return expiredPage(ctx, request, reply);
    // "Not you?": sign out (the session's clients hear of it by back-channel logout; no
    // front-channel iframes here, the browser goes straight on) and show the login page of the
    // same pending request, which stays bound to this browser, not to the session.
    if (single(body, 'button') === 'switch') {
      await signOut(ctx, request, reply);
      return reply
        .header('cache-control', 'no-store')
        .redirect(`${ctx.basePath}/account/login?interaction=${encodeURIComponent(id)}`, 303);
    }
    if (single(body, 'button') !== 'yes') return denyPage(ctx, request, reply, { id, interaction });
    await grantConsent(ctx, { id, interaction }, session, single(body, 'remember') === 'yes');
    return resume(ctx, reply, { id, interaction });
  });
}

/** The link text of each of a client's pages (OIDC Dynamic Client Registration §2). */
const LINK_TEXTS = { policyUri: 'clientPolicy', tosUri: 'clientTos', clientUri: 'clientLinks' } as const;

/**
 * A person-readable name for a scope in the page language, and its description: the scope's
 * configured `displayName` (as Duende's DisplayName; the operator's words win, also for the
 * standard scopes), else the built-in texts of the standard scopes (OIDC Core §5.4, translated),
 * else "Use <scope>"; the `description` from the config when given.
 */
function describeScope(
  ctx: ConsentPageServices,
  lang: string,
  scope: string,
): { name: string; description?: string | undefined } {
  const known: Record<string, 'scopeOpenid' | 'scopeProfile' | 'scopeEmail' | 'offlineAccess'> = {
    openid: 'scopeOpenid',
    profile: 'scopeProfile',
    email: 'scopeEmail',
    offline_access: 'offlineAccess',
  };
  const configured = ctx.resources.identity.get(scope) ?? ctx.resources.apiScopes.get(scope);
  const key = known[scope];
  const name =
    configured?.displayName ??
    (key ? ctx.pages.text(lang, key) : format(ctx.pages.text(lang, 'scopeOther'), { scope }));
  return { name, description: configured?.description };
}
