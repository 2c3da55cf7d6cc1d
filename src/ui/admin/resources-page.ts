/**
 * The console's resource pages, through `ctx.management.resources` as `/admin/v1`'s resource
 * routes: the identity resources, API scopes, API resources and upstream identity providers with
 * their source (built in, the config file, or stored), creation of stored ones (an API resource's
 * generated secret shown on the next page only; a provider's `clientSecret` is write-only, never
 * shown back), and one stored item's settings (a merge patch guarded by the version the form was
 * read at), deletion (refused while something uses it) and, for API resources, secret rotation.
 * Built-in and config-file items are shown read-only. Every change goes through `AuditedChanges`.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { DEFAULT_SECRET_GRACE_SECONDS } from '../../admin/clients.js';
import type { ManagedKind, ResourceView } from '../../admin/resources.js';
import { single } from '../../http/fields.js';
import type { Params } from '../../protocol/params.js';
import type { FormField, FormFieldType } from '../../page-kit/form-fields.js';
import { format, type Messages } from '../../page-kit/i18n.js';
import { type Console, KIND_LABELS, type Refusal } from './console-page.js';

/**
 * How a form field reads and writes a setting: one line, space-separated words, one item per line, a
 * write-only secret, a checkbox.
 */
type FieldType = 'text' | 'words' | 'lines' | 'secret' | 'check';

/** One editable setting of a kind. */
interface FieldSpec {
  /** The setting's name in the config file's entry, also the form field's. */
  name: string;
  type: FieldType;
  label: keyof Messages;
  /** Longest value, characters (the whole field for words and lines). */
  max: number;
  /** Needed at creation (the page marks it `required`). */
  required?: boolean;
  /** Fixed once created (`name`, a provider's `authority`): not in the edit form. */
  fixed?: boolean;
}

/** The console's kinds: URL segment, the list's caption, the "new" link's text and the editable settings. */
const NAME: FieldSpec = { name: 'name', type: 'text', label: 'consoleName', max: 200, required: true, fixed: true };
const DISPLAY_NAME: FieldSpec = { name: 'displayName', type: 'text', label: 'consoleDisplayName', max: 200 };
const USER_CLAIMS: FieldSpec = { name: 'userClaims', type: 'words', label: 'consoleUserClaims', max: 2000 };
/** The settings identity resources (OIDC Core §5.4) and API scopes share. */
const SCOPE_FIELDS: FieldSpec[] = [
  NAME,
  DISPLAY_NAME,
  { name: 'description', type: 'text', label: 'consoleDescription', max: 500 },
  USER_CLAIMS,
];

const KINDS: Record<
  ManagedKind,
  { slug: string; caption: keyof Messages; create: keyof Messages; detail: keyof Messages; fields: FieldSpec[] }
> = {
  identity_resource: {
    slug: 'identity-resources',
    caption: 'consoleIdentityResources',
    create: 'consoleNewIdentityResource',
    detail: 'consoleClaims',
    fields: [...SCOPE_FIELDS, { name: 'required', type: 'check', label: 'consoleRequiredScope', max: 0 }],
  },
  api_scope: {
    slug: 'api-scopes',
    caption: 'consoleApiScopes',
    create: 'consoleNewApiScope',
    detail: 'consoleClaims',
    fields: SCOPE_FIELDS,
  },
  api_resource: {
    slug: 'api-resources',
    caption: 'consoleApiResources',
    create: 'consoleNewApiResource',
    detail: 'consoleScopes',
    fields: [
      NAME,
      { name: 'scopes', type: 'words', label: 'consoleScopes', max: 2000 },
      USER_CLAIMS,
      { name: 'resourceUris', type: 'lines', label: 'consoleResourceUris', max: 8000 },
    ],
  },
  identity_provider: {
    slug: 'identity-providers',
    caption: 'consoleUpstreamProviders',
    create: 'consoleNewIdentityProvider',
    detail: 'consoleAuthority',
    fields: [
      { name: 'name', type: 'text', label: 'consoleName', max: 100, required: true, fixed: true },
      DISPLAY_NAME,
      { name: 'authority', type: 'text', label: 'consoleAuthority', max: 512, required: true, fixed: true },
      { name: 'clientId', type: 'text', label: 'consoleUpstreamClientId', max: 255, required: true },
      { name: 'clientSecret', type: 'secret', label: 'consoleUpstreamClientSecret', max: 1000 },
      { name: 'scope', type: 'text', label: 'consoleUpstreamScope', max: 1000 },
    ],
  },
};

const ORDER: ManagedKind[] = ['identity_resource', 'api_scope', 'api_resource', 'identity_provider'];
/** The most words or lines a field takes. */
const MAX_ITEMS = 50;

/** The kind a URL segment names, if any. */
function kindOf(slug: string): ManagedKind | undefined {
  return ORDER.find((k) => KINDS[k].slug === slug);
}

/** A setting as its form field shows it (a secret never). */
function shown(spec: FieldSpec, value: unknown): string | boolean {
  if (spec.type === 'check') return value === true;
  if (spec.type === 'secret') return '';
  if (Array.isArray(value)) return value.join(spec.type === 'lines' ? '\n' : ' ');
  return typeof value === 'string' ? value : '';
}

/** A form field's value as the setting: words and lines as bounded lists, an empty text as undefined. */
function read(spec: FieldSpec, form: Params): unknown {
  if (spec.type === 'check') return single(form, spec.name) === 'yes';
  const raw = (single(form, spec.name) ?? '').slice(0, spec.max);
  if (spec.type === 'words' || spec.type === 'lines')
    return raw
      .split(spec.type === 'lines' ? /\r?\n/ : /\s+/)
      .map((s) => s.trim())
      .filter((s) => s.length > 0)
      .slice(0, MAX_ITEMS);
  const text = spec.type === 'secret' ? raw : raw.trim();
  return text === '' ? undefined : text;
}

/** The hint of each field type that has one: how to write the value. */
const HINTS: Partial<Record<FieldType, keyof Messages>> = {
  words: 'consoleSpaceSeparated',
  lines: 'consoleOnePerLine',
  secret: 'consoleWriteOnlySecret',
};
/** How `@form-fields` draws each field type. */
const DRAWN: Record<FieldType, FormFieldType> = {
  text: 'text',
  words: 'text',
  lines: 'textarea',
  secret: 'password',
  check: 'check',
};

/** The fields of a form as `@form-fields` draws them: value, error next to it. */
function formFields(
  kind: ManagedKind,
  values: Record<string, unknown>,
  errors: Record<string, string>,
  editing: boolean,
  t: (key: keyof Messages) => string,
): FormField[] {
  return KINDS[kind].fields
    .filter((spec) => !(editing && spec.fixed))
    .map((spec) => {
      const hint = HINTS[spec.type];
      return {
        name: spec.name,
        type: DRAWN[spec.type],
        label: t(spec.label),
        hint: hint && t(hint),
        ...(spec.max > 0 ? { max: spec.max } : {}),
        required: spec.required === true && !editing,
        value: shown(spec, values[spec.name]),
        error: errors[spec.name],
      };
    });
}

/** The list's detail column of an item. */
function detailOf(kind: ManagedKind, settings: Record<string, unknown>): string {
  const value =
    kind === 'identity_provider' ? settings.authority : kind === 'api_resource' ? settings.scopes : settings.userClaims;
  return Array.isArray(value) ? value.join(', ') : String(value ?? '');
}

/** Registers `/admin/resources`, the creation pages of each kind and the pages of one item. */
export function resourcesPage(admin: Console): void {
  const { ctx, app } = admin;
  const resources = ctx.management.resources;
  const params = (request: FastifyRequest) => request.params as { kind: string; name?: string };

  const itemPath = (kind: ManagedKind, name: string) =>
    `/admin/resources/${KINDS[kind].slug}/${encodeURIComponent(name)}`;

  const listPage = async (request: FastifyRequest, reply: FastifyReply) => {
    const t = (key: keyof Messages) => admin.text(request, key);
    const tables = await Promise.all(
      ORDER.map(async (kind) => ({
        slug: KINDS[kind].slug,
        caption: t(KINDS[kind].caption),
        create: t(KINDS[kind].create),
        detailHeading: t(KINDS[kind].detail),
        rows: (await resources.list(kind)).map((v) => ({
          name: String(v.settings.name),
          detail: detailOf(kind, v.settings),
          source: v.source,
        })),
      })),
    );
    return admin.render(request, reply, 'console-resources', 'resources', { tables });
  };

  const newPage = (
    request: FastifyRequest,
    reply: FastifyReply,
    kind: ManagedKind,
    values: Record<string, unknown>,
    refusal?: Refusal,
  ) =>
    admin.render(
      request,
      reply,
      'console-resource-new',
      'resources',
      {
        slug: KINDS[kind].slug,
        title: admin.text(request, KINDS[kind].create),
        fields: formFields(kind, values, refusal?.fields ?? {}, false, (key) => admin.text(request, key)),
        ...(refusal
          ? { error: format(admin.text(request, 'consoleChangeRefused'), { message: refusal.message }) }
          : {}),
      },
      refusal?.status ?? 200,
    );

  const itemPage = async (
    request: FastifyRequest,
    reply: FastifyReply,
    kind: ManagedKind,
    name: string,
    extra: { notice?: string; secret?: string; refusal?: Refusal; values?: Record<string, unknown> } = {},
    status = 200,
  ) => {
    let view: ResourceView;
    try {
      view = await resources.get(kind, name);
    } catch (err) {
      if (!admin.refused(request, err)) throw err;
      return reply.callNotFound();
    }
    const { refusal } = extra;
    // Read-only items show every setting; stored ones those their form cannot change (a provider's authority).
    const fixed = new Set(
      KINDS[kind].fields.filter((spec) => spec.fixed && spec.name !== 'name').map((spec) => spec.name),
    );
    const settings = Object.entries(view.settings)
      .filter(([key]) => view.source !== 'store' || fixed.has(key))
      .map(([key, value]) => ({ key, value: typeof value === 'string' ? value : JSON.stringify(value) }));
    return admin.render(
      request,
      reply,
      'console-resource',
      'resources',
      {
        slug: KINDS[kind].slug,
        kindLabel: admin.text(request, KIND_LABELS[kind]),
        name,
        source: view.source,
        etag: view.etag,
        settings,
        rotatable: kind === 'api_resource',
        fields: formFields(kind, extra.values ?? view.settings, refusal?.fields ?? {}, true, (key) =>
          admin.text(request, key),
        ),
        notice: extra.notice,
        secret: extra.secret,
        ...(refusal
          ? { error: format(admin.text(request, 'consoleChangeRefused'), { message: refusal.message }) }
          : {}),
      },
      refusal?.status ?? status,
    );
  };

  /** The kind and name of an item's URL, or undefined after the 404 page. */
  const item = (request: FastifyRequest, reply: FastifyReply): { kind: ManagedKind; name: string } | undefined => {
    const { kind: slug, name } = params(request);
    const kind = kindOf(slug);
    if (kind === undefined || name === undefined || name.length > 200) {
      reply.callNotFound();
      return undefined;
    }
    return { kind, name };
  };

  app.get('/admin/resources', async (request, reply) =>
    (await admin.reader(request, reply)) ? listPage(request, reply) : reply,
  );

  app.get('/admin/resources/new/:kind', async (request, reply) => {
    if (!(await admin.reader(request, reply))) return reply;
    const kind = kindOf(params(request).kind);
    return kind === undefined ? reply.callNotFound() : newPage(request, reply, kind, {});
  });

  app.post('/admin/resources/new/:kind', async (request, reply) => {
    const w = await admin.writer(request, reply);
    if (!w) return reply;
    const kind = kindOf(params(request).kind);
    if (kind === undefined) return reply.callNotFound();
    const values = Object.fromEntries(
      KINDS[kind].fields.map((spec) => [spec.name, read(spec, w.form)]).filter(([, v]) => v !== undefined),
    );
    try {
      const { view, secret } = await admin.changes(w.caller).createResource(kind, values);
      // An API resource's secret is shown on this answer only (no-store); any other kind's page is a redirect.
      if (!secret) return admin.done(reply, itemPath(kind, String(view.settings.name)), 'consoleResourceCreated');
      return itemPage(
        request,
        reply,
        kind,
        String(view.settings.name),
        { notice: admin.text(request, 'consoleResourceCreated'), secret },
        201,
      );
    } catch (err) {
      const refusal = admin.refused(request, err);
      if (!refusal) throw err;
      return newPage(request, reply, kind, values, refusal);
    }
  });

  app.get('/admin/resources/:kind/:name', async (request, reply) => {
    if (!(await admin.reader(request, reply))) return reply;
    const at = item(request, reply);
    return at ? itemPage(request, reply, at.kind, at.name) : reply;
  });

  app.post('/admin/resources/:kind/:name', async (request, reply) => {
    const w = await admin.writer(request, reply);
    if (!w) return reply;
    const at = item(request, reply);
    if (!at) return reply;
    // A merge patch: an emptied optional text is removed (null); an empty secret keeps the current one.
    const patch: Record<string, unknown> = {};
    for (const spec of KINDS[at.kind].fields.filter((s) => !s.fixed)) {
      const value = read(spec, w.form);
      if (spec.type === 'secret' && value === undefined) continue;
      patch[spec.name] = value ?? null;
    }
    try {
      await admin.changes(w.caller).updateResource(at.kind, at.name, patch, single(w.form, 'etag') ?? '');
    } catch (err) {
      const refusal = admin.refused(request, err);
      if (!refusal) throw err;
      return itemPage(request, reply, at.kind, at.name, { refusal, values: patch });
    }
    return admin.done(reply, itemPath(at.kind, at.name), 'consoleResourceSaved');
  });

  app.post('/admin/resources/:kind/:name/delete', async (request, reply) => {
    const w = await admin.writer(request, reply);
    if (!w) return reply;
    const at = item(request, reply);
    if (!at) return reply;
    try {
      await admin.changes(w.caller).deleteResource(at.kind, at.name, single(w.form, 'etag') ?? '');
    } catch (err) {
      const refusal = admin.refused(request, err);
      if (!refusal) throw err;
      return itemPage(request, reply, at.kind, at.name, { refusal });
    }
    return admin.done(reply, '/admin/resources', 'consoleResourceDeleted');
  });

  app.post('/admin/resources/:kind/:name/secret', async (request, reply) => {
    const w = await admin.writer(request, reply);
    if (!w) return reply;
    const at = item(request, reply);
    if (!at) return reply;
    if (at.kind !== 'api_resource') return reply.callNotFound();
    let secret: string;
    try {
      secret = (
        await admin
          .changes(w.caller)
          .rotateResourceSecret(at.name, DEFAULT_SECRET_GRACE_SECONDS, single(w.form, 'etag') ?? '')
      ).secret;
    } catch (err) {
      const refusal = admin.refused(request, err);
      if (!refusal) throw err;
      return itemPage(request, reply, at.kind, at.name, { refusal });
    }
    return itemPage(request, reply, at.kind, at.name, { notice: admin.text(request, 'consoleSecretRotated'), secret });
  });
}
