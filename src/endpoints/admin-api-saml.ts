/**
 * The SAML service providers of the management API (/admin/v1/saml-service-providers,
 * `admin-api.ts`; DESIGN §6b "SAML 2.0 identity provider"): list (the config file's and the stored
 * ones, with `source`), read, create (from a `samlServiceProviders` entry; `metadataXml` alone is
 * enough, `metadataUrl` is fetched once and stored as `metadataXml`), change by a JSON Merge Patch
 * (RFC 7396) with `If-Match`, and delete. `{id}` is the entity ID, URL-encoded. Thin routes over
 * `SamlServiceProviderAdmin`; every change goes through `AuditedSamlServiceProviderChanges`.
 */
import { z } from 'zod';
import { AuditedSamlServiceProviderChanges } from '../admin/audited-changes.js';
import type { SamlServiceProviderView } from '../admin/saml-service-providers.js';
import { MAX_ENTITY_ID_LENGTH, samlServiceProvider } from '../config/schema/saml.js';
import {
  ADMIN_API_PATH,
  type AdminApiServices,
  type Answer,
  type ApiCaller,
  ifMatch,
  MERGE_PATCH,
  name,
  requiredIfMatch,
  type Route,
} from './admin-api-kit.js';

const idParam = name(MAX_ENTITY_ID_LENGTH).meta({ description: "The SP's entity ID, URL-encoded" });

const fields = samlServiceProvider.shape;
/** A create's body: a `samlServiceProviders` entry, its entity ID optional beside metadata. */
const createBody = z.strictObject({
  ...fields,
  entityId: fields.entityId
    .optional()
    .meta({ description: "The SP's entity ID; when absent, the entityID of metadataXml (or of the fetched metadata)" }),
  metadataUrl: fields.metadataUrl.meta({
    description:
      'Where the metadata is fetched from, once, at this request (https; bounded in size and time; no private or special-use address); it is stored as metadataXml. A refresh is a change naming it again',
  }),
});

/** The settings as stored: a fetched `metadataUrl` is kept as `metadataXml` only. */
const { metadataUrl: _fetchedOnce, ...storedFields } = fields;
const spOut = z.object({
  ...storedFields,
  source: z
    .enum(['config', 'store'])
    .meta({ description: "config: the config file's, read-only; store: managed here" }),
  effective: z
    .object({
      acsUrls: z.array(z.string()),
      sloUrl: z.string().nullable(),
      signingCertificates: z.number().int(),
      signAssertion: z.boolean(),
      requireSignedAuthnRequests: z.boolean(),
    })
    .meta({ description: 'What the settings and the metadata put in force' }),
});
const spAnswer = z.object({ serviceProvider: spOut });

/** An SP's answer: the item under `serviceProvider`, its ETag in the header. */
function answer(view: SamlServiceProviderView, status = 200): Answer {
  const { etag, ...serviceProvider } = view;
  return { status, etag, body: { serviceProvider } };
}

/** The audited SP changes of one caller. */
function changes(ctx: AdminApiServices, caller: ApiCaller): AuditedSamlServiceProviderChanges {
  return new AuditedSamlServiceProviderChanges(ctx.management.samlServiceProviders, {
    events: ctx.events,
    endpoint: ADMIN_API_PATH,
    actor: caller,
  });
}

/** The routes of /admin/v1/saml-service-providers. */
export const SAML_SERVICE_PROVIDER_ROUTES: Route[] = [
  {
    method: 'GET',
    url: '/saml-service-providers',
    summary: "Every SAML service provider: the config file's (read-only) and the stored ones",
    response: z.object({ serviceProviders: z.array(spOut) }),
    handle: async (ctx) => ({
      status: 200,
      body: {
        serviceProviders: (await ctx.management.samlServiceProviders.list()).map(({ etag: _etag, ...sp }) => sp),
      },
    }),
  },
  {
    method: 'POST',
    url: '/saml-service-providers',
    summary:
      'Register a SAML service provider: the fields of a samlServiceProviders entry; metadataXml alone is enough (entity ID, ACS, SLO and certificates come from it), metadataUrl is fetched once',
    created: true,
    body: createBody,
    response: spAnswer,
    handle: async (ctx, caller, _p, body) => answer(await changes(ctx, caller).create(body), 201),
  },
  {
    method: 'GET',
    url: '/saml-service-providers/:id',
    summary: 'One SAML service provider',
    params: { id: idParam },
    response: spAnswer,
    handle: async (ctx, _c, p) => answer(await ctx.management.samlServiceProviders.get(p.id ?? '')),
  },
  {
    method: 'PATCH',
    url: '/saml-service-providers/:id',
    summary:
      'Change a stored SAML service provider by a JSON Merge Patch (RFC 7396) of its settings (metadataUrl fetches the metadata again); If-Match is required',
    params: { id: idParam },
    body: z
      .record(z.string(), z.unknown())
      .meta({ description: 'A JSON Merge Patch of the settings; entityId cannot change' }),
    mediaType: MERGE_PATCH,
    response: spAnswer,
    handle: async (ctx, caller, p, body, request) => {
      const etag = requiredIfMatch(request);
      return answer(await changes(ctx, caller).update(p.id ?? '', body, etag));
    },
  },
  {
    method: 'DELETE',
    url: '/saml-service-providers/:id',
    summary: 'Delete a stored SAML service provider',
    params: { id: idParam },
    handle: async (ctx, caller, p, _b, request) => {
      await changes(ctx, caller).delete(p.id ?? '', ifMatch(request));
      return { status: 204 };
    },
  },
];
