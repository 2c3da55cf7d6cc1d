/**
 * The web console at `/admin`: server-rendered pages over the same
 * application services as `/admin/v1` and the CLI (src/admin/, the SCIM service), never the
 * store. Every page is answered uncached and unframeable (the pages' headers), every POST needs
 * the CSRF token (403 and no change without it) and a console session (`ConsoleSession`); every
 * change emits the `admin_changed` audit event (or the SCIM service's own events) naming the
 * console client and the admin's subject. A change whose answer shows no secret redirects to its
 * page (`Console.done`, Post/Redirect/Get); one that shows a secret once renders it directly.
 * Signing out ends the browser's Sigil session as well.
 * A user whose console token carries `sigil:org:admin` but not `sigil:admin` gets an organization
 * admin's console (`organization-admin-pages.ts`): the members and invitations of the
 * organizations they administer; every other page answers them 403 (`Console.reader`, `writer`),
 * and its navigation shows none of them.
 * Without `admin.console` nothing here is registered.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { emitAdminChange } from '../../admin/audit.js';
import { AuditedChanges, AuditedWebhookChanges } from '../../admin/audited-changes.js';
import { CONSOLE_PATH } from '../../config/console-client.js';
import { signOut } from '../../interaction/browser.js';
import type { Services } from '../../services.js';
import { Params } from '../../protocol/params.js';
import { queryString } from '../../http/fields.js';
import { checkCsrf } from '../csrf.js';
import { formExpiredPage } from '../error-page.js';
import { formRoute } from '../forms.js';
import { language } from '../language.js';
import { type SignedOutPageServices, sendLoggedOut } from '../signed-out.js';
import { type ConsoleDeps, consoleHome, type ConsoleRole, ConsoleSession } from './console-session.js';
import { type Console, type ConsolePageServices, noticeOf, refusalOf, type SignedIn } from './console-page.js';
import { organizationAdminPages } from './organization-admin-pages.js';
import { clientPages } from './clients-pages.js';
import { CONSOLE_STYLES, CONSOLE_TEMPLATES } from './templates.js';
import { resourcesPage } from './resources-page.js';
import { userPages } from './users-pages.js';
import { keyPages } from './keys-pages.js';
import { eventsPage } from './events-page.js';
import { organizationPages } from './organizations-pages.js';
import { ORGANIZATION_STYLES, ORGANIZATION_TEMPLATES } from './organization-templates.js';
import { WEBHOOK_TEMPLATES } from './webhook-templates.js';
import { webhookPages } from './webhooks-pages.js';
import { SAML_TEMPLATES } from './saml-templates.js';
import { samlServiceProviderPages } from './saml-pages.js';
import type { ConsoleSessionServices } from './console-session.js';
import type { ErrorPageServices } from '../error-page.js';
import type { BrowserServices } from '../../interaction/browser.js';

import type { FormServices } from '../forms.js';
/** The services this module uses. */
export type ConsoleServices = Pick<Services, 'basePath' | 'config' | 'events' | 'issuer' | 'management' | 'pages'> &
  ConsolePageServices &
  BrowserServices &
  ConsoleSessionServices &
  ErrorPageServices &
  FormServices &
  SignedOutPageServices;

/** The page a console sign-out ends on, below the issuer's path. */
const CONSOLE_SIGNED_OUT_PATH = `${CONSOLE_PATH}/signed-out`;

/**
 * Registers the console's pages on the browser pages' context, when `admin.console` is on.
 * @param deps the token check of the management guard, handed in by the route table (the
 *   endpoints layer is above the pages)
 */
export function adminConsole(app: FastifyInstance, ctx: ConsoleServices, deps: ConsoleDeps): void {
  if (!ctx.config.admin.console) return;
  for (const [name, template] of Object.entries({
    ...CONSOLE_TEMPLATES,
    ...ORGANIZATION_TEMPLATES,
    ...WEBHOOK_TEMPLATES,
    ...SAML_TEMPLATES,
  }))
    ctx.pages.register(name, template);
  const session = new ConsoleSession(app, ctx, deps);
  session.routes();
  const { roles, sessionReader, sessionWriter, forbidden, fullAdmin } = consoleGuards(app, ctx, session);

  const admin: Console = {
    ctx,
    app,
    reader: async (request, reply) => fullAdmin(request, reply, await sessionReader(request, reply)),
    writer: async (request, reply) => {
      const signedIn = await sessionWriter(request, reply);
      const caller = fullAdmin(request, reply, signedIn);
      return caller && signedIn && { caller, form: signedIn.form };
    },
    sessionReader,
    sessionWriter,
    forbidden,
    done: (reply, path, notice) =>
      reply
        .header('cache-control', 'no-store')
        .redirect(`${ctx.basePath}${path}?${new URLSearchParams({ done: notice })}`, 303),
    render: (request, reply, name, section, data, status = 200) => {
      const done = request.method === 'GET' ? noticeOf(queryString(request, 'done')) : undefined;
      const notice = data.notice ?? (done ? ctx.pages.text(language(request), done) : undefined);
      return ctx.pages.send(
        reply,
        name,
        language(request),
        { ...data, notice, section, fullConsole: roles.get(request) === 'admin', csrf: reply.generateCsrf() },
        status,
      );
    },
    text: (request, key) => ctx.pages.text(language(request), key),
    refused: (request, err) => refusalOf(err, (key) => ctx.pages.text(language(request), key)),
    changes: (caller) =>
      new AuditedChanges(ctx.management, { events: ctx.events, endpoint: CONSOLE_PATH, actor: caller }),
    webhookChanges: (caller) =>
      new AuditedWebhookChanges(ctx.management.webhooks, { events: ctx.events, endpoint: CONSOLE_PATH, actor: caller }),
    audit: (caller, action, target, changes) =>
      emitAdminChange(ctx.events, CONSOLE_PATH, caller, action, target, changes),
    userAudit: (caller) => ({ events: ctx.events, endpoint: CONSOLE_PATH, clientId: caller.clientId, sub: caller.sub }),
  };

  app.get('/admin/console.css', async (_request, reply) =>
    reply
      .header('cache-control', 'public, max-age=3600')
      .type('text/css; charset=utf-8')
      .send(CONSOLE_STYLES + ORGANIZATION_STYLES),
  );
  app.get(CONSOLE_PATH, async (request, reply) => {
    const signedIn = await sessionReader(request, reply);
    return signedIn
      ? reply.header('cache-control', 'no-store').redirect(`${ctx.basePath}${consoleHome(signedIn.role)}`, 303)
      : reply;
  });
  // Signing out of the console ends this browser's Sigil session too (as Keycloak's console does):
  // the console signed in through it, and leaving it would sign the next visit straight back in.
  // The end is the end-session endpoint's own (`signOut`, `sendLoggedOut`): back-channel logout
  // tokens for the session's clients are queued and sent, and the signed-out page loads their
  // front-channel logout frames before going on to the console's signed-out page. No identity
  // token is needed: unlike a GET to /connect/endsession, which any site can send the browser to,
  // this POST needs the CSRF token of one of Sigil's own forms, so it is this browser's own
  // request, and it ends this browser's session only.
  app.post(`${CONSOLE_PATH}/logout`, formRoute(app, ctx), async (request, reply) => {
    await session.signOut(request, reply);
    const ended = await signOut(ctx, request, reply);
    return sendLoggedOut(ctx, reply, language(request), ended, `${ctx.issuer}${CONSOLE_SIGNED_OUT_PATH}`);
  });
  app.get(CONSOLE_SIGNED_OUT_PATH, async (request, reply) =>
    ctx.pages.send(reply, 'message', language(request), {
      titleKey: 'consoleSignedOutTitle',
      textKey: 'consoleSignedOutText',
      next: { path: CONSOLE_PATH, textKey: 'consoleSignInAgain' },
    }),
  );
  userPages(admin);
  organizationPages(admin);
  organizationAdminPages(admin);
  clientPages(admin);
  resourcesPage(admin);
  keyPages(admin);
  webhookPages(admin);
  samlServiceProviderPages(admin);
  eventsPage(admin);
}

/**
 * The session checks of the console's routes: any console session (`sessionReader`, and
 * `sessionWriter` with the CSRF check first), the full admin's (`fullAdmin`: an organization
 * admin gets the 403 page), and the role each checked request's session has (`roles`), which the
 * navigation of its page follows.
 */
function consoleGuards(app: FastifyInstance, ctx: ConsoleServices, session: ConsoleSession) {
  const origin = new URL(ctx.issuer).origin;
  /** The role of each request's console session, once checked: the navigation its page shows follows it. */
  const roles = new WeakMap<FastifyRequest, ConsoleRole>();

  const sessionReader = async (request: FastifyRequest, reply: FastifyReply): Promise<SignedIn | undefined> => {
    const check = await session.caller(request, reply);
    if (check.kind !== 'caller') return undefined;
    roles.set(request, check.role);
    return { caller: check.caller, role: check.role };
  };
  const sessionWriter = async (request: FastifyRequest, reply: FastifyReply) => {
    // Every console form's check, before the caller's: one place for all the console's POSTs.
    if (!checkCsrf(app, request, reply, origin) || !(request.body instanceof Params)) {
      formExpiredPage(ctx, reply, language(request));
      return undefined;
    }
    const form = request.body;
    const signedIn = await sessionReader(request, reply);
    return signedIn && { ...signedIn, form };
  };
  const forbidden = (request: FastifyRequest, reply: FastifyReply, role: ConsoleRole) =>
    ctx.pages.send(
      reply,
      'message',
      language(request),
      {
        titleKey: 'consoleNotAllowedTitle',
        textKey: role === 'admin' ? 'consoleNotOrganizationAdmin' : 'consoleOrganizationAdminOnly',
        next: { path: consoleHome(role), textKey: 'consoleBackToConsole' },
      },
      403,
    );
  /** The full admin of a checked session; else undefined after the 403 page (an organization admin). */
  const fullAdmin = (request: FastifyRequest, reply: FastifyReply, signedIn: SignedIn | undefined) => {
    if (signedIn?.role === 'admin') return signedIn.caller;
    if (signedIn) forbidden(request, reply, signedIn.role);
    return undefined;
  };
  return { roles, sessionReader, sessionWriter, forbidden, fullAdmin };
}
