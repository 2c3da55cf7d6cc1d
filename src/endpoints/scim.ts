/**
 * SCIM 2.0 at `/scim/v2` (RFC 7644): Users and Groups (§3.3–§3.6, `.search` §3.4.3), and the
 * discovery resources ServiceProviderConfig, ResourceTypes and Schemas (§4). Every route needs an
 * access token with the scope `scim` (the management guard: 401 with a Bearer challenge, 403
 * `insufficient_scope`); the discovery resources too, as nothing public needs them. Bodies are
 * `application/scim+json` (or `application/json`), bounded in length and depth; answers are
 * `application/scim+json`, errors in the SCIM error schema (§3.12), never a 500 for bad input.
 * The same routes answer under `/scim/v2/organizations/{name}` for a client of that organization
 * (config `organization`): its members and roles only (`organizationDoor`); such a client gets 403
 * at `/scim/v2` itself (`deploymentDoor`).
 * The logic is in `scim/service.ts` and `scim/organization.ts`; this module parses, calls and renders.
 */
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Services } from '../services.js';
import { OAuthError } from '../protocol/errors.js';
import { jsonBoundsViolation } from '../protocol/json-bounds.js';
import { ScimError } from '../protocol/scim-filter.js';
import { attributeList, type ListParams, project } from '../scim/listing.js';
import type { Client } from '../clients/registry.js';
import { organizationScimBase } from '../scim/organization-scope.js';
import type { ScimResult } from '../scim/representation.js';
import type { ScimActor, ScimResources } from '../scim/service.js';
import { resourceTypes, schemas, SEARCH_REQUEST, serviceProviderConfig } from '../scim/schemas.js';
import { authenticateAccessToken, callerWithScope } from './protected-resource.js';
import type { ProtectedResourceEndpointServices } from './protected-resource.js';

/** The services this module uses. */
export type ScimEndpointServices = Pick<Services, 'basePath' | 'issuer' | 'management' | 'organizations'> &
  ProtectedResourceEndpointServices;

const PREFIX = '/scim/v2';
const SCIM_TYPE = 'application/scim+json; charset=utf-8';
/** The largest SCIM body, in characters, and its deepest nesting. */
const SCIM_JSON_BOUNDS = { maxLength: 64 * 1024, maxDepth: 8 };

/** Registers the SCIM routes (their own plugin context, for the JSON body parsers). */
export async function scimEndpoints(app: FastifyInstance, ctx: ScimEndpointServices): Promise<void> {
  await app.register(
    async (scim) => {
      for (const type of ['application/scim+json', 'application/json'])
        scim.addContentTypeParser(type, { parseAs: 'string' }, (_req, body, done) =>
          done(null, { text: body as string }),
        );
      // What Fastify refuses before a handler runs (a body over the app's limit: 413; a media type
      // without a parser: 415) is answered in the SCIM error schema too (§3.12); anything else goes
      // on to the app's error handler.
      scim.setErrorHandler((err: FastifyError, _request, reply) => {
        const status = err.statusCode ?? 500;
        if (status < 400 || status >= 500) throw err;
        return sendScimError(
          reply,
          new ScimError(
            status,
            status === 413
              ? 'the body is too large'
              : status === 415
                ? 'unsupported content type'
                : 'malformed request',
          ),
        );
      });

      for (const door of [deploymentDoor(ctx), organizationDoor(ctx)]) resourceRoutes(scim, ctx, door);
      scim.setNotFoundHandler((_request, reply) => sendScimError(reply, new ScimError(404, 'no such SCIM resource')));
    },
    { prefix: PREFIX },
  );
}

/**
 * One SCIM base URL: its routes' path below `/scim/v2`, and for a request, after the guard, the
 * resources the caller may reach there and their base URL.
 */
interface ScimDoor {
  path: string;
  /** @throws ScimError 403 when the token's client may not use this door (or this organization's). */
  open(request: FastifyRequest, client: Client): { resources: ScimResources; base: string };
}

/**
 * `/scim/v2` itself: the deployment's users and groups, for a client of no organization. A client
 * of an organization gets 403: it provisions its organization only.
 */
function deploymentDoor(ctx: ScimEndpointServices): ScimDoor {
  return {
    path: '',
    open: (_request, client) => {
      if (client.organization !== null)
        throw new ScimError(
          403,
          `this client belongs to organization "${client.organization}": its SCIM endpoint is /scim/v2/organizations/${client.organization}`,
        );
      return { resources: ctx.management.scim, base: `${ctx.issuer}${PREFIX}` };
    },
  };
}

/**
 * `/scim/v2/organizations/{name}`: that organization's members and roles, for a client whose
 * config names it (`organization`) only. Any other name is 403 with the same answer whether an
 * organization of that name exists or not. A client of no organization gets 403 too: as Auth0's
 * inbound SCIM tokens belong to one connection, an organization's endpoint is its identity
 * provider's door, not the deployment's (which reaches every member through /scim/v2 and
 * /admin/v1/organizations/{name}/members, as Keycloak's realm admin does through its admin API).
 * The organization is looked up by name among those in force at each request: a client whose
 * organization was deleted (or is not in force) is refused, never shown another's members.
 */
function organizationDoor(ctx: ScimEndpointServices): ScimDoor {
  return {
    path: '/organizations/:organization',
    open: (request, client) => {
      const name = (request.params as { organization: string }).organization;
      if (client.organization === null)
        throw new ScimError(
          403,
          "this client provisions the deployment at /scim/v2; an organization's SCIM endpoint is for a client of that organization",
        );
      if (name !== client.organization)
        throw new ScimError(403, `this client belongs to organization "${client.organization}" and provisions it only`);
      const organization = ctx.organizations.byName(name);
      if (!organization)
        throw new ScimError(403, `organization "${name}", which this client belongs to, is not in force`);
      return {
        resources: ctx.management.organizationScim.in(organization),
        base: organizationScimBase(`${ctx.issuer}${PREFIX}`, organization.name),
      };
    },
  };
}

/** Registers the discovery resources, Users and Groups of one door. */
function resourceRoutes(scim: FastifyInstance, ctx: ScimEndpointServices, door: ScimDoor): void {
  const route = guardedRoute(scim, ctx, door);
  route('GET', '/ServiceProviderConfig', async (_q, reply, { base }) =>
    json(reply, serviceProviderConfig(base, `${ctx.issuer}/`)),
  );
  route('GET', '/ResourceTypes', async (_q, reply, { base }) => json(reply, listOf(resourceTypes(base))));
  route('GET', '/ResourceTypes/:id', async (request, reply, { base }) =>
    json(reply, byId(resourceTypes(base), request)),
  );
  route('GET', '/Schemas', async (_q, reply, { base }) => json(reply, listOf(schemas(base))));
  route('GET', '/Schemas/:id', async (request, reply, { base }) => json(reply, byId(schemas(base), request)));
  typeRoutes(route, 'Users', USER_OPERATIONS);
  typeRoutes(route, 'Groups', GROUP_OPERATIONS);
}

/** Registers a route of the door that runs after the guard, rendering SCIM errors. */
type GuardedRoute = (
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE',
  url: string,
  handle: (request: FastifyRequest, reply: FastifyReply, caller: ScimCaller) => Promise<FastifyReply>,
) => void;

/**
 * The route registration of a door: the guard (a valid access token with the scope `scim`), then
 * the door's own check of the token's client, then the handler; any error in the SCIM schema.
 */
function guardedRoute(scim: FastifyInstance, ctx: ScimEndpointServices, door: ScimDoor): GuardedRoute {
  return (method, url, handle) =>
    void scim.route({
      method,
      url: `${door.path}${url}`,
      handler: async (request, reply) => {
        try {
          // The DPoP proof's htu is the issuer plus the path below it (the URL without Sigil's mount).
          const path = (request.url.split('?')[0] ?? request.url).slice(ctx.basePath.length);
          const token = await authenticateAccessToken(ctx, request, undefined, path);
          const caller = callerWithScope(token, ['scim']);
          const opened = door.open(request, token.client);
          const actor = { clientId: caller.clientId, ...(caller.sub !== undefined ? { sub: caller.sub } : {}) };
          return await handle(request, reply, { actor, ...opened });
        } catch (err) {
          return sendScimError(reply, err);
        }
      },
    });
}

/** The routes of one resource type (§3.3 to §3.6, `.search` §3.4.3). */
function typeRoutes(
  route: GuardedRoute,
  type: 'Users' | 'Groups',
  op: typeof USER_OPERATIONS | typeof GROUP_OPERATIONS,
): void {
  route('GET', `/${type}`, async (request, reply, { resources }) =>
    json(reply, await resources[op.list](listParams(request.query))),
  );
  route('POST', `/${type}/.search`, async (request, reply, { resources }) =>
    json(reply, await resources[op.list](searchParams(body(request)))),
  );
  route('POST', `/${type}`, async (request, reply, { resources, actor }) =>
    result(reply, await resources[op.create](body(request), actor), 201, request),
  );
  route('GET', `/${type}/:id`, async (request, reply, { resources }) => {
    const r = await resources[op.get](id(request));
    // §3.14: a GET with If-None-Match naming the current version answers 304.
    if (
      str(request.headers['if-none-match'])
        ?.split(',')
        .some((t) => t.trim() === r.etag)
    )
      return reply.code(304).header('etag', r.etag).send();
    return result(reply, r, 200, request);
  });
  route('PUT', `/${type}/:id`, async (request, reply, { resources, actor }) =>
    result(reply, await resources[op.replace](id(request), body(request), ifMatch(request), actor), 200, request),
  );
  route('PATCH', `/${type}/:id`, async (request, reply, { resources, actor }) =>
    result(reply, await resources[op.patch](id(request), body(request), ifMatch(request), actor), 200, request),
  );
  route('DELETE', `/${type}/:id`, async (request, reply, { resources, actor }) => {
    await resources[op.remove](id(request), ifMatch(request), actor);
    return reply.code(204).send();
  });
}

/** A resource as answered: its ETag, `Location` when created, projected onto the requested attributes. */
function result(reply: FastifyReply, r: ScimResult, status: number, request: FastifyRequest): FastifyReply {
  reply.code(status).header('etag', r.etag).type(SCIM_TYPE).header('cache-control', 'no-store');
  if (status === 201) reply.header('location', String((r.resource.meta as { location: string }).location));
  const q = (request.query ?? {}) as Record<string, unknown>;
  return reply.send(project(r.resource, attributeList(str(q.attributes)), attributeList(str(q.excludedAttributes))));
}

function json(reply: FastifyReply, body: unknown): FastifyReply {
  return reply.type(SCIM_TYPE).header('cache-control', 'no-store').send(body);
}

function ifMatch(request: FastifyRequest): string | undefined {
  return str(request.headers['if-match']);
}

/** What a route's handler gets once the guard and the door let the request in. */
interface ScimCaller {
  actor: ScimActor;
  resources: ScimResources;
  base: string;
}

/** The `ScimResources` operations of each resource type. */
const USER_OPERATIONS = {
  get: 'getUser',
  list: 'listUsers',
  create: 'createUser',
  replace: 'replaceUser',
  patch: 'patchUser',
  remove: 'deleteUser',
} as const;
const GROUP_OPERATIONS = {
  get: 'getGroup',
  list: 'listGroups',
  create: 'createGroup',
  replace: 'replaceGroup',
  patch: 'patchGroup',
  remove: 'deleteGroup',
} as const;

function str(v: unknown): string | undefined {
  return typeof v === 'string' ? v : undefined;
}

function id(request: FastifyRequest): string {
  const value = (request.params as { id: string }).id;
  // No resource id has control characters, and PostgreSQL refuses a NUL in text: 404, not a 500.
  if (/[\u0000-\u001f]/.test(value)) throw new ScimError(404, 'no such resource');
  return value;
}

/** The JSON body of a SCIM request. @throws ScimError 400 `invalidSyntax`. */
function body(request: FastifyRequest): unknown {
  const raw = request.body as { text?: unknown } | undefined;
  if (!raw || typeof raw.text !== 'string')
    throw new ScimError(400, 'the body must be application/scim+json', 'invalidSyntax');
  if (jsonBoundsViolation(raw.text, SCIM_JSON_BOUNDS))
    throw new ScimError(400, 'the body is too long or nested too deeply', 'invalidSyntax');
  // A NUL (only possible as the escape \u0000 in JSON text) is never a valid value, and PostgreSQL
  // refuses it in text columns: refused here rather than failing at the store.
  if (/\\u0000/i.test(raw.text)) throw new ScimError(400, 'strings must not contain NUL characters', 'invalidValue');
  try {
    return JSON.parse(raw.text) as unknown;
  } catch {
    throw new ScimError(400, 'the body is not JSON', 'invalidSyntax');
  }
}

/** The list parameters of a GET's query (§3.4.2): only single string values. */
function listParams(query: unknown): ListParams {
  const q = (query ?? {}) as Record<string, unknown>;
  const out: ListParams = {};
  for (const k of [
    'filter',
    'sortBy',
    'sortOrder',
    'startIndex',
    'count',
    'attributes',
    'excludedAttributes',
  ] as const) {
    const v = q[k];
    if (v === undefined) continue;
    if (typeof v !== 'string') throw new ScimError(400, `${k} may be given once`, 'invalidValue');
    out[k] = v;
  }
  return out;
}

/** The SearchRequest of `POST .search` (§3.4.3). */
function searchParams(body: unknown): ListParams {
  if (body === null || typeof body !== 'object' || Array.isArray(body))
    throw new ScimError(400, 'the body must be a SearchRequest', 'invalidSyntax');
  const o = body as Record<string, unknown>;
  if (!Array.isArray(o.schemas) || !o.schemas.includes(SEARCH_REQUEST))
    throw new ScimError(400, `schemas must list ${SEARCH_REQUEST}`, 'invalidSyntax');
  const out: ListParams = {};
  for (const k of ['filter', 'sortBy', 'sortOrder'] as const) {
    if (o[k] === undefined) continue;
    if (typeof o[k] !== 'string') throw new ScimError(400, `${k} must be a string`, 'invalidValue');
    out[k] = o[k];
  }
  for (const k of ['startIndex', 'count'] as const) {
    if (o[k] === undefined) continue;
    if (typeof o[k] !== 'number') throw new ScimError(400, `${k} must be an integer`, 'invalidValue');
    out[k] = o[k];
  }
  for (const k of ['attributes', 'excludedAttributes'] as const) {
    const v = o[k];
    if (v === undefined) continue;
    if (!Array.isArray(v) || !v.every((x) => typeof x === 'string'))
      throw new ScimError(400, `${k} must be an array of strings`, 'invalidValue');
    out[k] = v.join(',');
  }
  return out;
}

function listOf(resources: Record<string, unknown>[]): Record<string, unknown> {
  return {
    schemas: ['urn:ietf:params:scim:api:messages:2.0:ListResponse'],
    totalResults: resources.length,
    startIndex: 1,
    itemsPerPage: resources.length,
    Resources: resources,
  };
}

function byId(resources: Record<string, unknown>[], request: FastifyRequest): Record<string, unknown> {
  const found = resources.find((r) => r.id === id(request));
  if (!found) throw new ScimError(404, `no such ${request.url.includes('/Schemas/') ? 'schema' : 'resource type'}`);
  return found;
}

/**
 * Renders an error in the SCIM error schema (§3.12): a `ScimError` as it is; the guard's
 * `OAuthError` with its status and `WWW-Authenticate` challenge (RFC 6750 §3).
 */
function sendScimError(reply: FastifyReply, err: unknown): FastifyReply {
  const scim =
    err instanceof ScimError
      ? err
      : err instanceof OAuthError
        ? new ScimError(err.status, err.description ?? err.code, undefined, err.headers)
        : undefined;
  if (!scim) throw err;
  return reply
    .code(scim.status)
    .headers(scim.headers)
    .type(SCIM_TYPE)
    .header('cache-control', 'no-store')
    .send(scim.toJSON());
}
