/**
 * The management API's operations on the resources managed at run time (`ResourceAdmin`):
 * identity resources, API scopes, API resources and upstream identity providers, each with list,
 * read, create, change (JSON Merge Patch, RFC 7396, with If-Match) and delete, and the rotation
 * of an API resource's secret.
 */
import { z } from 'zod';
import { type ManagedKind, MAX_RESOURCE_NAME, type ResourceView } from '../admin/resources.js';
import { apiResource, apiScope, identityProvider, identityResource } from '../config/schema.js';
import {
  type Answer,
  changes,
  ifMatch,
  requiredIfMatch,
  MERGE_PATCH,
  name,
  parsed,
  type Route,
  rotateSecretBody,
} from './admin-api-kit.js';

/**
 * The kinds of resources managed at run time (`ResourceAdmin`): their paths, the member naming
 * one in answers, and the config file's entry schema (the service checks with it, and more).
 */
const RESOURCE_KINDS: {
  kind: ManagedKind;
  path: string;
  member: string;
  plural: string;
  label: string;
  schema: z.ZodObject;
}[] = [
  {
    kind: 'identity_resource',
    path: '/identity-resources',
    member: 'identityResource',
    plural: 'identityResources',
    label: 'identity resource (OIDC Core §5.4)',
    schema: identityResource,
  },
  {
    kind: 'api_scope',
    path: '/api-scopes',
    member: 'apiScope',
    plural: 'apiScopes',
    label: 'API scope',
    schema: apiScope,
  },
  // Sigil generates an API resource's secret (`secrets` is refused).
  {
    kind: 'api_resource',
    path: '/api-resources',
    member: 'apiResource',
    plural: 'apiResources',
    label: 'API resource (RFC 7662, RFC 8707)',
    schema: apiResource.omit({ secrets: true }),
  },
  {
    kind: 'identity_provider',
    path: '/identity-providers',
    member: 'identityProvider',
    plural: 'identityProviders',
    label: 'upstream OpenID Connect provider',
    schema: identityProvider,
  },
];
const resourceName = name(MAX_RESOURCE_NAME).meta({ description: 'The name' });

/** The answer of one item: its settings under the kind's member, never a secret; the new secret when one was made. */
function resourceAnswer(member: string, view: ResourceView, status = 200, secret?: string): Answer {
  const { etag, settings, ...rest } = view;
  return { status, etag, body: { [member]: settings, ...rest, ...(secret === undefined ? {} : { secret }) } };
}

/** List, create, read, change and delete routes of one kind of resource (and secret rotation for API resources). */
function resourceRoutes({ kind, path, member, plural, label, schema }: (typeof RESOURCE_KINDS)[number]): Route[] {
  const out = z.object({
    // As the config file's entry, never a secret (an upstream provider's clientSecret is write-only).
    [member]: kind === 'identity_provider' ? schema.omit({ clientSecret: true }) : schema,
    source: z.enum(['config', 'store', 'built-in']),
    ...(kind === 'api_resource' ? { retiringSecretsExpireAt: z.array(z.number().int()) } : {}),
  });
  const withSecret = out.extend({
    secret: z
      .string()
      .optional()
      .meta({ description: 'The new secret of the API resource (introspection): shown in this response only' }),
  });
  const routes: Route[] = [
    {
      method: 'GET',
      url: path,
      summary: `Every ${label}: built-in, the config file's (read-only) and the stored ones`,
      response: z.object({ [plural]: z.array(out) }),
      handle: async (ctx) => ({
        status: 200,
        body: { [plural]: (await ctx.management.resources.list(kind)).map((v) => resourceAnswer(member, v).body) },
      }),
    },
    {
      method: 'POST',
      url: path,
      summary: `Create a stored ${label}${kind === 'api_resource' ? '; its secret is generated and shown in this response only' : ''}`,
      created: true,
      body: schema,
      response: withSecret,
      handle: async (ctx, caller, _p, body) => {
        const { view, secret } = await changes(ctx, caller).createResource(kind, body);
        return resourceAnswer(member, view, 201, secret);
      },
    },
    {
      method: 'GET',
      url: `${path}/:name`,
      summary: `One ${label}, never its secrets`,
      params: { name: resourceName },
      response: out,
      handle: async (ctx, _c, p) => resourceAnswer(member, await ctx.management.resources.get(kind, p.name ?? '')),
    },
    {
      method: 'PATCH',
      url: `${path}/:name`,
      summary: `Change a stored ${label} by a JSON Merge Patch (RFC 7396); If-Match is required`,
      params: { name: resourceName },
      body: z.record(z.string(), z.unknown()).meta({
        description: `A JSON Merge Patch (RFC 7396) of the settings; name${kind === 'api_resource' ? ' and secrets' : ''} cannot change`,
      }),
      mediaType: MERGE_PATCH,
      response: out,
      handle: async (ctx, caller, p, body, request) => {
        const etag = requiredIfMatch(request);
        return resourceAnswer(member, await changes(ctx, caller).updateResource(kind, p.name ?? '', body, etag));
      },
    },
    {
      method: 'DELETE',
      url: `${path}/:name`,
      summary: `Delete a stored ${label} that nothing uses any more`,
      params: { name: resourceName },
      handle: async (ctx, caller, p, _b, request) => {
        await changes(ctx, caller).deleteResource(kind, p.name ?? '', ifMatch(request));
        return { status: 204 };
      },
    },
  ];
  if (kind === 'api_resource')
    routes.push({
      method: 'POST',
      url: `${path}/:name/secret`,
      summary: "Rotate a stored API resource's secret; the replaced one works at introspection for graceSeconds more",
      params: { name: resourceName },
      body: rotateSecretBody,
      response: withSecret,
      handle: async (ctx, caller, p, body, request) => {
        const { graceSeconds } = parsed(rotateSecretBody, body);
        const { view, secret } = await changes(ctx, caller).rotateResourceSecret(
          p.name ?? '',
          graceSeconds,
          ifMatch(request),
        );
        return resourceAnswer(member, view, 200, secret);
      },
    });
  return routes;
}

/** Every resource kind's routes. */
export const RESOURCE_ROUTES: Route[] = RESOURCE_KINDS.flatMap(resourceRoutes);
