/**
 * The management REST API at /admin/v1: thin routes over the admin services (src/admin/,
 * src/organizations/) for clients, signing keys, users with their sessions and grants
 * (`admin-api-users.ts`), audit events, identity resources, API scopes, API resources and upstream
 * identity providers (`admin-api-resources.ts`), and organizations with their members
 * (`admin-api-organizations.ts`), and webhooks with their delivery log (`admin-api-webhooks.ts`), guarded by Sigil's own tokens (`requireScope`: `sigil:admin` for
 * everything, `sigil:admin:read` for GET requests; `sigil:org:admin` for the members and invitations
 * of an organization the token's user administers, `authorized`). Conventions:
 * - JSON bodies; PATCH is a JSON Merge Patch (RFC 7396, `application/merge-patch+json`) and needs
 *   `If-Match` with the item's ETag (RFC 9110 §13.1.1): 412 when stale, 428 when missing (RFC 6585
 *   §3: the API requires conditional updates, so two administrators cannot overwrite each other's
 *   change unknowingly); DELETE and secret rotation honour `If-Match` when sent.
 * - Errors are `application/problem+json` (RFC 9457) with an `errors` member listing each failing
 *   field's path (`allowedScopes.0`) and message; 400 unreadable JSON, 404, 409 (exists already,
 *   or managed by the config file), 412, 415, 422 invalid input, 428.
 * - The OpenAPI 3.1 document at /admin/v1/openapi.json is generated from this module's route
 *   table and the zod schemas that validate the requests, so it lists every route.
 * Every change emits an `admin_changed` audit event naming the caller, the action, the target and
 * the changed fields with their new values; secrets never appear in it. The changes, with their
 * reloads and events, are `AuditedChanges` (src/admin/audited-changes.ts), which the web console
 * makes too; a user's are `UserAdmin`'s, as at every door that changes users.
 */
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { AdminError, type FieldProblem } from '../admin/errors.js';
import type { ClientView } from '../admin/clients.js';
import { clientSchema, ORGANIZATION_ADMIN_SCOPE } from '../config/schema.js';
import { OAuthError } from '../protocol/errors.js';
import { jsonBoundsViolation } from '../protocol/json-bounds.js';
import { noStore } from '../http/request.js';
import { requireScope, sendTokenError } from './protected-resource.js';
import {
  ADMIN_API_PATH,
  type AdminApiServices,
  type ApiCaller,
  type Answer,
  changes,
  clientIdParam as clientId,
  ifMatch,
  requiredIfMatch,
  MERGE_PATCH,
  name,
  type Params,
  parsed,
  paging,
  PreconditionRequired,
  type Route,
  rotateSecretBody,
} from './admin-api-kit.js';
import { ORGANIZATION_ROUTES } from './admin-api-organizations.js';
import { RESOURCE_ROUTES } from './admin-api-resources.js';
import { USER_ROUTES } from './admin-api-users.js';
import { WEBHOOK_ROUTES } from './admin-api-webhooks.js';
import { SAML_SERVICE_PROVIDER_ROUTES } from './admin-api-saml.js';
import type { ProtectedResourceEndpointServices } from './protected-resource.js';

/** The services this module uses. */
export type AdminApiEndpointServices = AdminApiServices & ProtectedResourceEndpointServices;

/** A body that is no JSON, or JSON beyond the bounds: answered 400 by the route. */
const UNREADABLE = Symbol('unreadable JSON');
/** A body of another media type: answered 415 by the route. */
const WRONG_TYPE = Symbol('not JSON');

const rotateKeysBody = z.strictObject({
  alg: z.string().min(1).max(10).optional().meta({
    description:
      'One of signingAlgorithms, or saml-rsa (the SAML signing key, with saml.enabled); all of them when absent',
  }),
});
const kid = name(200);
/**
 * A client's settings as the config file's `clients` take them (the schema the service validates with);
 * `clientSecrets` is refused, Sigil generates the secret.
 */
const clientCreate = clientSchema;
/**
 * A JSON Merge Patch of a client's settings: any member of a client but `clientId` and `clientSecrets`,
 * `null` removes one.
 */
const clientPatch = z.record(z.string(), z.unknown()).meta({
  description: 'A JSON Merge Patch (RFC 7396) of the client settings; clientId and clientSecrets cannot change',
});
const clientOut = z.object({
  client: z.record(z.string(), z.unknown()),
  source: z.enum(['config', 'store']),
  retiringSecretsExpireAt: z.array(z.number().int()),
  secret: z.string().optional().meta({ description: 'The new client secret: shown in this response only' }),
});
const isoTime = z.iso.datetime({ offset: true });
const eventsQuery = z.strictObject({
  from: isoTime.optional().meta({ description: 'Events at or after this time (RFC 3339)' }),
  to: isoTime.optional().meta({ description: 'Events before this time (RFC 3339)' }),
  type: name(64).optional().meta({ description: 'The event name (token_issued, admin_changed, ...)' }),
  client_id: name(255).optional(),
  subject: name(255).optional().meta({ description: 'The subject (sub) the event is about' }),
  ...paging('Events'),
});
const problem = z.object({
  type: z.string(),
  title: z.string(),
  status: z.number().int(),
  detail: z.string().optional(),
  errors: z.array(z.object({ path: z.string(), message: z.string() })).optional(),
});

function clientAnswer(view: ClientView, status = 200, secret?: string): Answer {
  const { etag, ...rest } = view;
  return { status, etag, body: { ...rest, ...(secret === undefined ? {} : { secret }) } };
}

const ROUTES: Route[] = [
  {
    method: 'GET',
    url: '/clients',
    summary: "Every client: the config file's (read-only) and the stored ones",
    response: z.object({
      clients: z.array(
        z.object({ clientId: z.string(), source: z.enum(['config', 'store']), allowedGrantTypes: z.array(z.string()) }),
      ),
    }),
    handle: async (ctx) => ({ status: 200, body: { clients: await ctx.management.clients.list() } }),
  },
  {
    method: 'POST',
    url: '/clients',
    summary: 'Create a stored client; its secret is generated and shown in this response only',
    created: true,
    body: clientCreate,
    response: clientOut,
    handle: async (ctx, caller, _p, body) => {
      const { view, secret } = await changes(ctx, caller).createClient(body);
      return clientAnswer(view, 201, secret);
    },
  },
  {
    method: 'GET',
    url: '/clients/:clientId',
    summary: 'One client, never its secrets',
    params: { clientId },
    response: clientOut,
    handle: async (ctx, _c, p) => clientAnswer(await ctx.management.clients.get(p.clientId ?? '')),
  },
  {
    method: 'PATCH',
    url: '/clients/:clientId',
    summary: 'Change a stored client by a JSON Merge Patch (RFC 7396); If-Match is required',
    params: { clientId },
    body: clientPatch,
    mediaType: MERGE_PATCH,
    response: clientOut,
    handle: async (ctx, caller, p, body, request) => {
      const etag = requiredIfMatch(request);
      return clientAnswer(await changes(ctx, caller).updateClient(p.clientId ?? '', body, etag));
    },
  },
  {
    method: 'DELETE',
    url: '/clients/:clientId',
    summary: 'Delete a stored client',
    params: { clientId },
    handle: async (ctx, caller, p, _b, request) => {
      await changes(ctx, caller).deleteClient(p.clientId ?? '', ifMatch(request));
      return { status: 204 };
    },
  },
  {
    method: 'POST',
    url: '/clients/:clientId/secret',
    summary: "Rotate a stored client's secret; the replaced one works for graceSeconds more",
    params: { clientId },
    body: rotateSecretBody,
    response: clientOut,
    handle: async (ctx, caller, p, body, request) => {
      const { graceSeconds } = parsed(rotateSecretBody, body);
      const { view, secret } = await changes(ctx, caller).rotateClientSecret(
        p.clientId ?? '',
        graceSeconds,
        ifMatch(request),
      );
      return clientAnswer(view, 200, secret);
    },
  },
  {
    method: 'GET',
    url: '/keys',
    summary: 'The signing keys and their status',
    response: z.object({ keys: z.array(z.record(z.string(), z.unknown())) }),
    handle: async (ctx) => ({ status: 200, body: { keys: await ctx.management.keys.list() } }),
  },
  {
    method: 'POST',
    url: '/keys/rotate',
    summary: 'Add successor signing keys (published now, signing after signingKeys.propagationSeconds)',
    body: rotateKeysBody,
    response: z.object({
      added: z.array(z.object({ kid: z.string(), alg: z.string(), activatesAt: z.number().int() })),
    }),
    handle: async (ctx, caller, _p, body) => {
      const { alg } = parsed(rotateKeysBody, body);
      return { status: 200, body: { added: await changes(ctx, caller).rotateKeys(alg) } };
    },
  },
  {
    method: 'POST',
    url: '/keys/:kid/retire',
    summary: 'Retire a signing key: it signs no more and stays published for signingKeys.retentionSeconds',
    params: { kid },
    handle: async (ctx, caller, p) => {
      await changes(ctx, caller).retireKey(p.kid ?? '');
      return { status: 204 };
    },
  },
  {
    method: 'GET',
    url: '/events',
    summary: 'Audit events, newest first, by time range, type, client or subject; a page at a time',
    query: eventsQuery,
    response: z.object({
      events: z.array(z.record(z.string(), z.unknown())),
      next: z.string().optional().meta({ description: 'The cursor of the next page; absent on the last' }),
    }),
    handle: async (ctx, _c, _p, _b, request) => {
      const q = parsed(eventsQuery, request.query);
      const page = await ctx.management.audit.query({
        from: q.from === undefined ? undefined : Date.parse(q.from),
        to: q.to === undefined ? undefined : Date.parse(q.to),
        name: q.type,
        clientId: q.client_id,
        subjectId: q.subject,
        cursor: q.cursor,
        limit: q.limit,
      });
      return { status: 200, body: page };
    },
  },
  ...USER_ROUTES,
  ...RESOURCE_ROUTES,
  ...ORGANIZATION_ROUTES,
  ...WEBHOOK_ROUTES,
  ...SAML_SERVICE_PROVIDER_ROUTES,
];

const STATUS: Record<AdminError['code'], { status: number; title: string }> = {
  invalid: { status: 422, title: 'Invalid input' },
  conflict: { status: 409, title: 'Conflict' },
  read_only: { status: 409, title: 'Managed by the config file' },
  not_found: { status: 404, title: 'Not found' },
  precondition_failed: { status: 412, title: 'Precondition failed' },
  forbidden: { status: 403, title: 'Forbidden' },
};

/** The scopes that let a token call `route` for any organization: `sigil:admin`, and `sigil:admin:read` for a GET. */
function fullScopes(route: Route): string[] {
  return route.method === 'GET' ? ['sigil:admin', 'sigil:admin:read'] : ['sigil:admin'];
}

/**
 * The caller of `route`, let in (before the body or the path is looked at, so a refused caller
 * learns nothing of either): a token with `fullScopes`; or, on a route open to organization admins,
 * a token with `sigil:org:admin` acting for a user who administers the organization of the path
 * now (`OrganizationAdmin.requireOrganizationAdmin`, asked at every request).
 * @throws OAuthError as `requireScope` (401; 403 `insufficient_scope`); AdminError `forbidden`
 *   (403) for an organization the user does not administer, alike whether it exists or not, and
 *   for a client acting for itself.
 */
async function authorized(ctx: AdminApiEndpointServices, route: Route, request: FastifyRequest): Promise<ApiCaller> {
  const full = fullScopes(route);
  const path = request.url.split('?')[0]?.slice(ctx.basePath.length) ?? `${ADMIN_API_PATH}${route.url}`;
  const caller = await requireScope(
    ctx,
    request,
    path,
    route.organizationAdmin ? [...full, ORGANIZATION_ADMIN_SCOPE] : full,
  );
  if (full.some((s) => caller.scopes.includes(s))) return { ...caller, organizationAdmin: false };
  const { name } = (request.params ?? {}) as Params;
  await ctx.management.organizations.requireOrganizationAdmin(name ?? '', caller.sub);
  return { ...caller, organizationAdmin: true };
}

/** Sends an RFC 9457 problem detail. */
function sendProblem(
  reply: FastifyReply,
  status: number,
  title: string,
  detail?: string,
  errors?: readonly FieldProblem[],
): FastifyReply {
  return noStore(reply)
    .code(status)
    .type('application/problem+json')
    .send({
      type: 'about:blank',
      title,
      status,
      ...(detail ? { detail } : {}),
      ...(errors && errors.length > 0 ? { errors } : {}),
    });
}

/** The route's path parameters, checked against its schemas; refused with 404 when one is out of bounds. */
function pathParams(route: Route, request: FastifyRequest): Params {
  const raw = (request.params ?? {}) as Params;
  for (const [name, schema] of Object.entries(route.params ?? {}))
    if (!schema.safeParse(raw[name]).success) throw new AdminError('not_found', `no such ${name}`);
  return raw;
}

/** The OpenAPI 3.1 document of the API, built from `ROUTES` and their zod schemas (draft 2020-12, as OAS 3.1 uses). */
export function openApiDocument(ctx: AdminApiEndpointServices): Record<string, unknown> {
  const json = (schema: z.ZodType, io: 'input' | 'output') =>
    z.toJSONSchema(schema, { target: 'draft-2020-12', io, unrepresentable: 'any' });
  const problemContent = { 'application/problem+json': { schema: json(problem, 'output') } };
  const paths: Record<string, Record<string, unknown>> = {
    [`${ADMIN_API_PATH}/openapi.json`]: {
      get: {
        summary: 'This document',
        operationId: 'getOpenapiJson',
        security: [],
        responses: {
          '200': {
            description: 'The OpenAPI 3.1 document',
            content: { 'application/json': { schema: { type: 'object' } } },
          },
        },
      },
    },
  };
  for (const route of ROUTES) {
    const path = `${ADMIN_API_PATH}${route.url.replace(/:(\w+)/g, '{$1}')}`;
    const success = route.created ? '201' : route.response ? '200' : '204';
    const operations = paths[path] ?? {};
    paths[path] = operations;
    operations[route.method.toLowerCase()] = {
      summary: route.summary,
      operationId: `${route.method.toLowerCase()}${route.url.replace(/[/:](\w)/g, (_m, c: string) => c.toUpperCase()).replace(/\W/g, '')}`,
      security: [
        { bearer: [route.method === 'GET' ? 'sigil:admin:read' : 'sigil:admin'] },
        ...(route.organizationAdmin ? [{ bearer: [ORGANIZATION_ADMIN_SCOPE] }] : []),
      ],
      parameters: [
        ...Object.entries(route.params ?? {}).map(([name, schema]) => ({
          name,
          in: 'path',
          required: true,
          schema: json(schema, 'input'),
        })),
        ...Object.entries(route.query?.shape ?? {}).map(([name, schema]) => ({
          name,
          in: 'query',
          required: false,
          schema: json(schema as z.ZodType, 'input'),
        })),
        ...(route.method === 'PATCH' || route.method === 'DELETE' || route.url.endsWith('/secret')
          ? [{ name: 'If-Match', in: 'header', required: route.method === 'PATCH', schema: { type: 'string' } }]
          : []),
      ],
      ...(route.body
        ? {
            requestBody: {
              required: route.method === 'PATCH',
              content: { [route.mediaType ?? 'application/json']: { schema: json(route.body, 'input') } },
            },
          }
        : {}),
      responses: {
        [success]: route.response
          ? { description: 'Success', content: { 'application/json': { schema: json(route.response, 'output') } } }
          : { description: 'Success' },
        default: { description: 'An error (RFC 9457)', content: problemContent },
      },
    };
  }
  return {
    openapi: '3.1.0',
    info: { title: 'Sigil management API', version: '1' },
    jsonSchemaDialect: 'https://json-schema.org/draft/2020-12/schema',
    servers: [{ url: ctx.issuer }],
    components: {
      securitySchemes: {
        bearer: {
          type: 'oauth2',
          description:
            "Sigil's own access tokens. A token acting for a user carries these scopes only after a multi-factor sign-in: sigil:admin and sigil:admin:read for a user holding admin.userRole, sigil:org:admin for an admin of some organization (a member with the role admin), checked again at each request",
          flows: {
            clientCredentials: {
              tokenUrl: `${ctx.issuer}/connect/token`,
              scopes: {
                'sigil:admin': 'Everything under /admin/v1',
                'sigil:admin:read': 'GET requests under /admin/v1',
              },
            },
            authorizationCode: {
              authorizationUrl: `${ctx.issuer}/connect/authorize`,
              tokenUrl: `${ctx.issuer}/connect/token`,
              scopes: {
                'sigil:admin': 'Everything under /admin/v1',
                'sigil:admin:read': 'GET requests under /admin/v1',
                [ORGANIZATION_ADMIN_SCOPE]:
                  "The members and invitations of the organizations whose admin the user is (a user's token only)",
              },
            },
          },
        },
      },
    },
    paths,
  };
}

/** The paths and methods of every route of the API, as Fastify registers them (for tests and the document). */
export function adminRoutes(): { method: string; url: string }[] {
  return ROUTES.map((r) => ({ method: r.method, url: `${ADMIN_API_PATH}${r.url}` }));
}

/**
 * Registers /admin/v1 and its OpenAPI document on `app` (an encapsulated context of its own:
 * JSON body parsers apply to these routes only).
 */
export async function adminApiEndpoints(app: FastifyInstance, ctx: AdminApiEndpointServices): Promise<void> {
  await app.register(async (api) => {
    api.removeAllContentTypeParsers();
    const parseJson = (_req: FastifyRequest, body: string, done: (err: Error | null, value?: unknown) => void) => {
      if (jsonBoundsViolation(body) !== undefined) return done(null, UNREADABLE);
      try {
        done(null, JSON.parse(body));
      } catch {
        done(null, UNREADABLE);
      }
    };
    api.addContentTypeParser(['application/json', MERGE_PATCH], { parseAs: 'string' }, parseJson);
    api.addContentTypeParser('*', { parseAs: 'buffer' }, (_req, _body, done) => done(null, WRONG_TYPE));
    // What Fastify refuses before a handler runs (a body over the limit: 413; a Content-Length
    // that does not match: 400) is a problem detail too, like every other answer of this API. Any
    // other error goes on to the server's handler, which logs it and answers without details.
    api.setErrorHandler((err: FastifyError, _request, reply) => {
      const status = err.statusCode ?? 500;
      if (status < 400 || status >= 500) throw err;
      return sendProblem(reply, status, status === 413 ? 'Content too large' : 'Bad request', err.message);
    });
    let document: Record<string, unknown> | undefined;
    api.get(`${ADMIN_API_PATH}/openapi.json`, async (_request, reply) => {
      document ??= openApiDocument(ctx);
      return reply.type('application/json').send(document);
    });
    for (const route of ROUTES) {
      const url = `${ADMIN_API_PATH}${route.url}`;
      api.route({
        method: route.method,
        url,
        handler: async (request, reply) => {
          try {
            const caller = await authorized(ctx, route, request);
            if (
              request.body === WRONG_TYPE ||
              (route.body &&
                request.body !== undefined &&
                contentType(request) !== (route.mediaType ?? 'application/json'))
            )
              return sendProblem(reply, 415, 'Unsupported media type', `send ${route.mediaType ?? 'application/json'}`);
            if (request.body === UNREADABLE)
              return sendProblem(reply, 400, 'Bad request', 'the body is not JSON, or too long or deeply nested');
            const answer = await route.handle(ctx, caller, pathParams(route, request), request.body, request);
            noStore(reply).code(answer.status);
            if (answer.etag) reply.header('etag', answer.etag);
            return answer.body === undefined ? reply.send() : reply.type('application/json').send(answer.body);
          } catch (err) {
            if (err instanceof OAuthError) return sendTokenError(reply, err);
            if (err instanceof AdminError) {
              const { status, title } = STATUS[err.code];
              return sendProblem(
                reply,
                status,
                title,
                err.message,
                err.problems ?? (err.field ? [{ path: err.field, message: err.message }] : undefined),
              );
            }
            if (err instanceof PreconditionRequired)
              return sendProblem(
                reply,
                428,
                'Precondition required',
                'send If-Match with the ETag of the version you change',
              );
            throw err;
          }
        },
      });
    }
  });
}

function contentType(request: FastifyRequest): string {
  return (request.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase() ?? '';
}
