/**
 * The console's SAML service provider pages, through `ctx.management.samlServiceProviders` as
 * `/admin/v1/saml-service-providers` (never the store): the list with a registration form (the
 * SP's metadata XML pasted, its metadata URL fetched once, or the settings of a
 * `samlServiceProviders` entry), and one SP's page: its settings, what its metadata put in force,
 * and for a stored SP the edit form (every setting but the entity ID, saved as a merge patch at
 * the version the page was read at: a stale form is refused and the current settings shown) and
 * delete (a config-file SP is read-only, which the service enforces). Every change goes through
 * `AuditedSamlServiceProviderChanges`, audited as /admin/v1's, and answers Post/Redirect/Get; a
 * refusal is shown on the page, marked on the field at fault.
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

/** The registration or edit form as sent (or an SP's settings as the form shows them). */
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
  organization?: string;
  signResponse?: boolean;
  encryptAssertion?: boolean;
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

/** The registration or edit form as sent. */
function formOf(fields: Params): SpForm {
  const text = (name: string) => single(fields, name)?.trim() ?? '';
  const checked = (name: string) => single(fields, name) === 'yes';
  return {
    submitted: true,
    metadataXml: text('metadataXml'),
    metadataUrl: text('metadataUrl'),
    entityId: text('entityId'),
    acsUrls: text('acsUrls'),
    sloUrl: text('sloUrl'),
    displayName: text('displayName'),
    nameIdFormat: text('nameIdFormat'),
    attributes: text('attributes'),
    organization: text('organization'),
    signResponse: checked('signResponse'),
    signAssertion: checked('signAssertion'),
    encryptAssertion: checked('encryptAssertion'),
    requireSignedAuthnRequests: checked('requireSignedAuthnRequests'),
    requireConsent: checked('requireConsent'),
  };
}

/** An SP's settings as the edit form shows them. */
function formOfSettings(sp: SamlServiceProviderView): SpForm {
  return {
    submitted: true,
    metadataXml: sp.metadataXml ?? '',
    acsUrls: sp.acsUrls.join('\n'),
    sloUrl: sp.sloUrl ?? '',
    displayName: sp.displayName ?? '',
    nameIdFormat: sp.nameIdFormat,
    attributes: Object.entries(sp.attributes)
      .map(([name, claim]) => `${name} = ${claim}`)
      .join('\n'),
    organization: sp.organization ?? '',
    signResponse: sp.signResponse,
    signAssertion: sp.signAssertion,
    encryptAssertion: sp.encryptAssertion,
    requireSignedAuthnRequests: sp.requireSignedAuthnRequests,
    requireConsent: sp.requireConsent,
  };
}

/** Attributes `name = claim`, one per line (a line without `=` names a claim the schema refuses, on the `attributes` field). */
function attributesOf(form: SpForm): Record<string, string> {
  return Object.fromEntries(
    lines(form.attributes).map((l) => {
      const at = l.indexOf('=');
      return at < 0 ? [l, ''] : [l.slice(0, at).trim(), l.slice(at + 1).trim()];
    }),
  );
}

/**
 * The settings a form gives, each empty field as `empty` (left out of a registration, so the
 * metadata or the defaults fill it; null in an edit's merge patch, RFC 7396, which removes it the
 * same way); ACS URLs one per line.
 */
function settingsOf(form: SpForm, empty: undefined | null): Record<string, unknown> {
  const given = (value: string | undefined) => (value ? value : empty);
  const attributes = attributesOf(form);
  return {
    metadataXml: given(form.metadataXml),
    acsUrls: lines(form.acsUrls).length > 0 ? lines(form.acsUrls) : empty,
    sloUrl: given(form.sloUrl),
    displayName: given(form.displayName),
    nameIdFormat: given(form.nameIdFormat),
    attributes: Object.keys(attributes).length > 0 ? attributes : empty,
    organization: given(form.organization),
    signResponse: form.signResponse,
    signAssertion: form.signAssertion,
    encryptAssertion: form.encryptAssertion,
    requireSignedAuthnRequests: form.requireSignedAuthnRequests,
    requireConsent: form.requireConsent,
  };
}

/** The body of a registration: the form's settings, its entity ID and metadata URL, empty fields left out. */
function registrationBody(form: SpForm): Record<string, unknown> {
  const body = {
    ...settingsOf(form, undefined),
    entityId: form.entityId || undefined,
    metadataUrl: form.metadataUrl || undefined,
  };
  return Object.fromEntries(Object.entries(body).filter(([, v]) => v !== undefined));
}

/**
 * The merge patch (RFC 7396) that makes a stored SP's settings the edit form's: every field set,
 * an emptied one removed (null); attributes no longer listed removed one by one (a patch merges
 * objects); a metadata URL fetches the metadata again, in place of the XML shown.
 */
function editPatch(form: SpForm, current: SamlServiceProviderView): Record<string, unknown> {
  const { metadataXml, attributes, ...rest } = settingsOf(form, null);
  const listed = attributes as Record<string, string> | null;
  const removed = Object.keys(current.attributes).filter((name) => !listed || !(name in listed));
  return {
    ...rest,
    ...(form.metadataUrl ? { metadataUrl: form.metadataUrl } : { metadataXml }),
    attributes: listed ? { ...Object.fromEntries(removed.map((name) => [name, null])), ...listed } : null,
  };
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

  /**
   * One SP's page, its edit form showing its current settings at its current version, or (`sent`)
   * a refused form as it was sent, at the version it was read at; the 404 page for an SP that does
   * not exist.
   */
  const spPage = async (
    request: FastifyRequest,
    reply: FastifyReply,
    entityId: string,
    refusal?: { error: string; fields?: Record<string, string> },
    status = 200,
    sent?: { form: SpForm; etag: string },
  ) => {
    if (!plausible(entityId)) return reply.callNotFound();
    let view: SamlServiceProviderView;
    try {
      view = await sps.get(entityId);
    } catch (err) {
      if (!admin.refused(request, err)) throw err;
      return reply.callNotFound();
    }
    const data = {
      serviceProvider: view,
      form: sent?.form ?? formOfSettings(view),
      etag: sent?.etag ?? view.etag,
      ...refusal,
    };
    return admin.render(request, reply, 'console-saml-service-provider', 'saml-service-providers', data, status);
  };

  app.get(LIST_PATH, async (request, reply) =>
    (await admin.reader(request, reply)) ? listPage(request, reply, {}) : reply,
  );

  app.post(LIST_PATH, async (request, reply) => {
    const w = await admin.writer(request, reply);
    if (!w) return reply;
    const form = formOf(w.form);
    try {
      const view = await changes(w.caller).create(registrationBody(form));
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
      return spPage(request, reply, entityId, { error: refusal.message }, refusal.status);
    }
    return admin.done(reply, LIST_PATH, 'consoleSamlDeleted');
  });

  app.post(`${LIST_PATH}/:id`, async (request, reply) => {
    const w = await admin.writer(request, reply);
    if (!w) return reply;
    const entityId = idOf(request);
    if (!plausible(entityId)) return reply.callNotFound();
    const form = formOf(w.form);
    // The version the form was read at: a change made since (by another admin) is refused.
    const etag = single(w.form, 'etag') ?? '';
    try {
      const current = await sps.get(entityId);
      await changes(w.caller).update(entityId, editPatch(form, current), etag);
    } catch (err) {
      const refusal = admin.refused(request, err);
      if (!refusal) throw err;
      // Stale: the settings now in force, to change again; else the form as sent, marked where refused.
      if (refusal.status === 412)
        return spPage(request, reply, entityId, { error: admin.text(request, 'consoleSamlStale') }, 412);
      if (refusal.status === 404) return reply.callNotFound();
      const shown = { error: refusal.message, fields: refusal.fields };
      return spPage(request, reply, entityId, shown, refusal.status, { form, etag });
    }
    return admin.done(reply, spPath(entityId), 'consoleSamlSaved');
  });
}
