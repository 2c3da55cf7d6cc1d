/**
 * `/account/requests`: where a signed-in user answers the backchannel authentication requests
 * applications made for them (OpenID CIBA Core 1.0; interaction/backchannel.ts). GET lists the
 * requests waiting for this user; POST (CSRF-checked) approves or denies one, named by its store
 * key, and only one of this user's own: any other id gets the "no longer waiting" answer (404)
 * and changes nothing. A visitor who is not signed in is sent to sign in, then back here. An
 * approval whose request asks for a second factor the session has not passed (`acr_values`) sends
 * the user through the second step (`/account/mfa`), then back here.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Services } from '../services.js';
import { type BrowserServices, sessionOf } from '../interaction/browser.js';
import {
  answerBackchannelRequest,
  type BackchannelServices,
  pendingRequestsOf,
  REQUESTS_PAGE_PATH,
} from '../interaction/backchannel.js';
import type { Session } from '../stores/records/sessions.js';
import { single } from '../http/fields.js';
import { originOf } from '../http/request.js';
import { BACKCHANNEL_TEMPLATES } from '../page-kit/backchannel-pages.js';
import { shownDetails } from '../page-kit/authorization-details-view.js';
import type { ErrorPageServices } from './error-page.js';
import { formOf, formRoute, type FormServices } from './forms.js';
import { language } from './language.js';
import { signInReturningTo } from './return-path.js';

/** The services this module uses. */
export type BackchannelPageServices = Pick<Services, 'basePath' | 'pages'> &
  BackchannelServices &
  BrowserServices &
  ErrorPageServices &
  FormServices;

/** Registers `GET` and `POST /account/requests`. */
export function backchannelRequestPages(app: FastifyInstance, ctx: BackchannelPageServices): void {
  for (const [name, template] of Object.entries(BACKCHANNEL_TEMPLATES)) ctx.pages.register(name, template);

  /** The session, or undefined after answering with the way to sign in (and back here). */
  const signedIn = async (request: FastifyRequest, reply: FastifyReply): Promise<Session | undefined> => {
    const session = await sessionOf(ctx, request);
    if (!session)
      void reply
        .header('cache-control', 'no-store')
        .redirect(`${ctx.basePath}${signInReturningTo(REQUESTS_PAGE_PATH)}`, 303);
    return session;
  };

  app.get(REQUESTS_PAGE_PATH, async (request, reply) => {
    const session = await signedIn(request, reply);
    return session ? requestsPage(ctx, request, reply, session) : reply;
  });

  app.post(REQUESTS_PAGE_PATH, formRoute(app, ctx), async (request, reply) => {
    const session = await signedIn(request, reply);
    if (!session) return reply;
    const body = formOf(request);
    const button = single(body, 'button');
    const id = single(body, 'request') ?? '';
    const answered =
      button === 'approve' || button === 'deny'
        ? await answerBackchannelRequest(ctx, session, id, button === 'approve', originOf(request))
        : 'gone';
    // A request whose acr_values ask for MFA: the second factor first (step-up at the MFA pages),
    // then back to this list, where the user approves again.
    if (answered === 'second-factor')
      return reply
        .header('cache-control', 'no-store')
        .redirect(`${ctx.basePath}/account/mfa?return=${encodeURIComponent(REQUESTS_PAGE_PATH)}`, 303);
    if (answered === 'enroll') return requestsPage(ctx, request, reply, session, 'cibaNeedsFactor', 403);
    if (answered === 'gone') return requestsPage(ctx, request, reply, session, 'cibaGone', 404);
    return requestsPage(ctx, request, reply, session, button === 'approve' ? 'cibaApproved' : 'cibaDenied');
  });
}

/** The list of the user's waiting requests, with `notice` (a text key) above it. */
async function requestsPage(
  ctx: BackchannelPageServices,
  request: FastifyRequest,
  reply: FastifyReply,
  session: Session,
  notice?: string,
  status = 200,
): Promise<FastifyReply> {
  const requests = (await pendingRequestsOf(ctx, session)).map((r) => ({
    ...r,
    details: shownDetails(r.authorizationDetails),
  }));
  return ctx.pages.send(
    reply.header('cache-control', 'no-store'),
    'requests',
    language(request),
    { requests, notice, csrf: reply.generateCsrf() },
    status,
  );
}
