/**
 * The console's SAML service provider pages, through `ctx.management.samlServiceProviders` as
 * `/admin/v1/saml-service-providers` (never the store): the list with a registration form (the
 * SP's metadata XML pasted, its metadata URL fetched once, or the settings of a
 * `samlServiceProviders` entry), and one SP's page: its settings, what its metadata put in force,
 * and delete for a stored SP (a config-file SP is read-only, which the service enforces). Every
 * change goes through `AuditedSamlServiceProviderChanges`, audited as /admin/v1's, and answers
 * Post/Redirect/Get; a refusal is shown on the page, marked on the field at fault.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { AuditedSamlServiceProviderChanges } from '../../admin/audited-changes.js';
import type { SamlServiceProviderView } from '../../admin/saml-service-providers.js';
import { CONSOLE_PATH } from '../../config/console-client.js';
import { MAX_ENTITY_ID_LENGTH } from '../../config/schema.js';
import { single } from '../../http/fields.js';
import type { Params } from '../../protocol/params.js';
import type { ConsoleCaller } from './console-session.js';
import type { Console } from './console-page.js';

/** Where the pages live, below the issuer's path. */
const LIST_PATH = '/admin/saml-service-providers';

/** The registration form as sent, to show again with a refusal. */
interface SpForm {
  submitted?: boolean;
  metadataXml?: string;
  metadataUrl?: string;
  entityId?: string;
  acsUrls?: string;
  sloUrl?: string;
  displayName?: string;
  nameIdFormat?: string;
  attributes?: string;
  signResponse?: boolean;
  signAssertion?: boolean;
  requireSignedAuthnRequests?: boolean;
  requireConsent?: boolean;
}

/** The non-empty lines of a textarea, trimmed. */
function lines(text: string | undefined): string[] {
  return (text ?? '')
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter((l) => l !== '');
}

/**
 * The registration form as sent, and the body it makes for the service: empty fields left out (so
 * the metadata or the defaults fill them), ACS URLs one per line, attributes `name = claim` one
 * per line (a line without `=` names a claim the schema refuses, on the `attributes` field).
 */
function registration(fields: Params): { form: SpForm; body: Record<string, unknown> } {
  const text = (name: string) => single(fields, name)?.trim() ?? '';
  const checked = (name: string) => single(fields, name) === 'yes';
  const form: SpForm = {
    submitted: true,
    metadataXml: text('metadataXml'),
    metadataUrl: text('metadataUrl'),
    entityId: text('entityId'),
    acsUrls: text('acsUrls'),
    sloUrl: text('sloUrl'),
    displayName: text('displayName'),
    nameIdFormat: text('nameIdFormat'),
    attributes: text('attributes'),
    signResponse: checked('signResponse'),
    signAssertion: checked('signAssertion'),
    requireSignedAuthnRequests: checked('requireSignedAuthnRequests'),
    requireConsent: checked('requireConsent'),
  };
  const given = (value: string | undefined) => (value ? value : undefined);
  const attributes = lines(form.attributes).map((l) => {
    const at = l.indexOf('=');
    return at < 0 ? [l, ''] : [l.slice(0, at).trim(), l.slice(at + 1).trim()];
  });
  const body = Object.fromEntries(
    Object.entries({
      metadataXml: given(form.metadataXml),
      metadataUrl: given(form.metadataUrl),
      entityId: given(form.entityId),
      acsUrls: lines(form.acsUrls).length > 0 ? lines(form.acsUrls) : undefined,
      sloUrl: given(form.sloUrl),
      displayName: given(form.displayName),
      nameIdFormat: given(form.nameIdFormat),
      attributes: attributes.length > 0 ? Object.fromEntries(attributes) : undefined,
      signResponse: form.signResponse,
      signAssertion: form.signAssertion,
      requireSignedAuthnRequests: form.requireSignedAuthnRequests,
      requireConsent: form.requireConsent,
    }).filter(([, v]) => v !== undefined),
  );
  return { form, body };
}

/**
 * Whether a path's entity ID can name an SP: bounded and without control characters. Anything else
 * is the 404 page before the service is asked.
 */
function plausible(entityId: string): boolean {
  return entityId.length > 0 && entityId.length <= MAX_ENTITY_ID_LENGTH && !/[\u0000-\u001f\u007f]/.test(entityId);
}

/** Registers `/admin/saml-service-providers` and the page of one SP. */
export function samlServiceProviderPages(admin: Console): void {
  const { ctx, app } = admin;
  const sps = ctx.management.samlServiceProviders;
  const changes = (caller: ConsoleCaller) =>
    new AuditedSamlServiceProviderChanges(sps, { events: ctx.events, endpoint: CONSOLE_PATH, actor: caller });
  const spPath = (entityId: string) => `${LIST_PATH}/${encodeURIComponent(entityId)}`;
  const idOf = (request: FastifyRequest) => (request.params as { id: string }).id;

  const listPage = async (
    request: FastifyRequest,
    reply: FastifyReply,
    form: SpForm,
    refusal?: { error: string; fields: Record<string, string> },
    status = 200,
  ) =>
    admin.render(
      request,
      reply,
      'console-saml-service-providers',
      'saml-service-providers',
      { serviceProviders: await sps.list(), form, ...refusal },
      status,
    );

  /** One SP's page; the 404 page for one that does not exist. */
  const spPage = async (
    request: FastifyRequest,
    reply: FastifyReply,
    entityId: string,
    error?: string,
    status = 200,
  ) => {
    if (!plausible(entityId)) return reply.callNotFound();
    let view: SamlServiceProviderView;
    try {
      view = await sps.get(entityId);
    } catch (err) {
      if (!admin.refused(request, err)) throw err;
      return reply.callNotFound();
    }
    const data = { serviceProvider: view, ...(error === undefined ? {} : { error }) };
    return admin.render(request, reply, 'console-saml-service-provider', 'saml-service-providers', data, status);
  };

  app.get(LIST_PATH, async (request, reply) =>
    (await admin.reader(request, reply)) ? listPage(request, reply, {}) : reply,
  );

  app.post(LIST_PATH, async (request, reply) => {
    const w = await admin.writer(request, reply);
    if (!w) return reply;
    const { form, body } = registration(w.form);
    try {
      const view = await changes(w.caller).create(body);
      return admin.done(reply, spPath(view.entityId), 'consoleSamlCreated');
    } catch (err) {
      const refusal = admin.refused(request, err);
      if (!refusal) throw err;
      return listPage(request, reply, form, { error: refusal.message, fields: refusal.fields }, refusal.status);
    }
  });

  app.get(`${LIST_PATH}/:id`, async (request, reply) =>
    (await admin.reader(request, reply)) ? spPage(request, reply, idOf(request)) : reply,
  );

  app.post(`${LIST_PATH}/:id/delete`, async (request, reply) => {
    const w = await admin.writer(request, reply);
    if (!w) return reply;
    const entityId = idOf(request);
    if (!plausible(entityId)) return reply.callNotFound();
    try {
      // The version the page was read at: a change made since (by another admin) is refused.
      await changes(w.caller).delete(entityId, single(w.form, 'etag') ?? '');
    } catch (err) {
      const refusal = admin.refused(request, err);
      if (!refusal) throw err;
      return spPage(request, reply, entityId, refusal.message, refusal.status);
    }
    return admin.done(reply, LIST_PATH, 'consoleSamlDeleted');
  });
}
