/**
 * The organization picker (`/account/organization`): after sign-in, a user of several
 * organizations whose client requires one (`organizationUsage: require`) and who named none picks
 * one (radio inputs `organization`, button `continue`); `cancel` answers the client with
 * `access_denied`. Only a pending request of this browser that waits for the pick, with a signed-in
 * user, gets the page; any other gets the expired page. The choices and the pick are
 * interaction/organization-pick.ts's; `decide` checks the membership again when the request resumes.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Services } from '../services.js';
import { browserOf, sessionOf } from '../interaction/browser.js';
import { queryString, single } from '../http/fields.js';
import type { Pending } from '../interaction/interactions.js';
import {
  type OrganizationChoices,
  organizationChoices,
  type OrganizationPickServices,
  pickOrganization,
} from '../interaction/organization-pick.js';
import { resume } from '../interaction/outcomes.js';
import { ORGANIZATION_TEMPLATES } from '../page-kit/organization-pages.js';
import type { Messages } from '../page-kit/i18n.js';
import { expiredPage } from './error-page.js';
import { formOf, formRoute } from './forms.js';
import { language } from './language.js';
import { denyPage, type OutcomePageServices } from './outcome-pages.js';
import type { FormServices } from './forms.js';

/** The services this module uses. */
export type OrganizationPickerServices = Pick<Services, 'interactions' | 'pages'> &
  FormServices &
  OrganizationPickServices &
  OutcomePageServices;

/** The picker's path, below the issuer's. */
const PICKER_PATH = '/account/organization';

/** A pending request waiting for the pick, and what it offers. */
interface Waiting {
  pending: Pending;
  choices: OrganizationChoices;
}

/** Registers `/account/organization` (GET shows the organizations, POST takes the pick). */
export function organizationPickerPage(app: FastifyInstance, ctx: OrganizationPickerServices): void {
  for (const [name, template] of Object.entries(ORGANIZATION_TEMPLATES)) ctx.pages.register(name, template);

  app.get(PICKER_PATH, async (request, reply) => {
    const waiting = await waitingFor(ctx, request, reply, queryString(request, 'interaction'));
    if (!waiting) return expiredPage(ctx, request, reply);
    // One organization or none is no choice: the authorization endpoint takes it or refuses.
    if (waiting.choices.organizations.length < 2) return resume(ctx, reply, waiting.pending);
    return pickerPage(ctx, request, reply, waiting, undefined);
  });

  app.post(PICKER_PATH, formRoute(app, ctx, 'page-in-pending-language'), async (request, reply) => {
    const body = formOf(request);
    const waiting = await waitingFor(ctx, request, reply, single(body, 'interaction'));
    if (!waiting) return expiredPage(ctx, request, reply);
    if (single(body, 'button') === 'cancel') return denyPage(ctx, request, reply, waiting.pending);
    if (!(await pickOrganization(ctx, waiting.pending, waiting.choices, single(body, 'organization'))))
      return pickerPage(ctx, request, reply, waiting, 'organizationNotChosen', 400);
    return resume(ctx, reply, waiting.pending);
  });
}

/**
 * The pending request `id` of this browser when it waits for the signed-in user to pick an
 * organization (`organizationChoices`); undefined otherwise.
 */
async function waitingFor(
  ctx: OrganizationPickerServices,
  request: FastifyRequest,
  reply: FastifyReply,
  id: string | undefined,
): Promise<Waiting | undefined> {
  const interaction = await ctx.interactions.get(id, browserOf(ctx, request, reply));
  const session = await sessionOf(ctx, request);
  if (!id || !interaction || !session) return undefined;
  const pending = { id, interaction };
  const choices = await organizationChoices(ctx, pending, session, request.ip);
  return choices && { pending, choices };
}

function pickerPage(
  ctx: OrganizationPickerServices,
  request: FastifyRequest,
  reply: FastifyReply,
  { pending, choices }: Waiting,
  error: keyof Messages | undefined,
  status = 200,
): FastifyReply {
  const lang = language(request, pending.interaction.request.uiLocales);
  return ctx.pages.send(
    reply,
    'organization',
    lang,
    {
      csrf: reply.generateCsrf(),
      interaction: pending.id,
      clientName: choices.client.clientName ?? choices.client.clientId,
      organizations: choices.organizations.map((o) => ({ name: o.name, displayName: o.displayName })),
      ...(error ? { error: ctx.pages.text(lang, error) } : {}),
    },
    status,
    true,
  );
}
