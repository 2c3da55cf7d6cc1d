/**
 * `/account/invitations/{token}`: the link of an invitation to an organization
 * (`email/organization-invitations.ts`). GET shows the organization's display name; a visitor
 * who is not signed in is asked to sign in with the invited address (the sign-in returns here) or
 * to create an account when self-registration is on (then to open the link again); a signed-in user gets a form whose POST
 * (CSRF-checked, `button=accept`) accepts: a mail scanner that fetches the link accepts nothing.
 * A link that is not live (used, revoked, expired) gets the expired page; a user who does not hold
 * the invited address, confirmed, a page saying so (the invitation stays for its invitee).
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Services } from '../services.js';
import { type BrowserServices, sessionOf } from '../interaction/browser.js';
import { formOf, formRoute, type FormServices } from './forms.js';
import { single } from '../http/fields.js';
import { INVITATION_TEMPLATES } from '../page-kit/invitation-pages.js';
import { type ErrorPageServices, expiredPage } from './error-page.js';
import { language } from './language.js';
import { signInReturningTo } from './return-path.js';

/** The services this module uses. */
export type InvitationPageServices = Pick<Services, 'basePath' | 'config' | 'invitations' | 'pages'> &
  BrowserServices &
  ErrorPageServices &
  FormServices;

/** Where the page is, below the issuer's path. */
const INVITATION_PATH = '/account/invitations';
/** Longest token accepted from a link (ours are 43 characters). */
const MAX_TOKEN_LENGTH = 100;

/** Registers `GET` and `POST /account/invitations/:token`. */
export function invitationPages(app: FastifyInstance, ctx: InvitationPageServices): void {
  for (const [name, template] of Object.entries(INVITATION_TEMPLATES)) ctx.pages.register(name, template);

  app.get(`${INVITATION_PATH}/:token`, async (request, reply) => {
    const token = tokenOf(request);
    const preview = token ? await ctx.invitations.preview(token) : undefined;
    if (!token || !preview) return expiredPage(ctx, request, reply);
    const session = await sessionOf(ctx, request);
    const values = { organization: preview.displayName, email: preview.email };
    return ctx.pages.send(reply.header('cache-control', 'no-store'), 'invitation', language(request), {
      signedIn: session !== undefined,
      signUp: ctx.config.email?.selfRegistration === true,
      values,
      token: encodeURIComponent(token),
      signInPath: signInReturningTo(linkOf(token)),
      ...(session ? { csrf: reply.generateCsrf() } : {}),
    });
  });

  app.post(`${INVITATION_PATH}/:token`, formRoute(app, ctx), async (request, reply) => {
    const lang = language(request);
    const token = tokenOf(request);
    if (!token || single(formOf(request), 'button') !== 'accept') return expiredPage(ctx, request, reply);
    const session = await sessionOf(ctx, request);
    if (!session)
      return reply
        .header('cache-control', 'no-store')
        .redirect(`${ctx.basePath}${signInReturningTo(linkOf(token))}`, 303);
    const outcome = await ctx.invitations.accept(token, session.subjectId, INVITATION_PATH);
    if (!outcome.ok && outcome.reason === 'wrong_user')
      return ctx.pages.send(reply, 'message', lang, { titleKey: 'errorTitle', textKey: 'invitationWrongUser' }, 403);
    if (!outcome.ok) return expiredPage(ctx, request, reply);
    return ctx.pages.send(reply, 'message', lang, {
      titleKey: 'invitationTitle',
      textKey: 'invitationAccepted',
      values: { organization: outcome.displayName },
    });
  });
}

/** The invitation's page, below the issuer's path: where a sign-in started here returns to. */
function linkOf(token: string): string {
  return `${INVITATION_PATH}/${encodeURIComponent(token)}`;
}

/** The path's token, when of a plausible length. */
function tokenOf(request: FastifyRequest): string | undefined {
  const { token } = request.params as { token?: unknown };
  return typeof token === 'string' && token.length > 0 && token.length <= MAX_TOKEN_LENGTH ? token : undefined;
}
