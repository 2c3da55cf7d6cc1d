/**
 * What the route modules of the management API (/admin/v1, `admin-api.ts`) share: where it is
 * mounted, the route shape its route table and OpenAPI document are built from, the bounded names
 * of paths and queries, request bodies checked by their zod schema, `If-Match`, and the audited
 * changes of one caller.
 */
import type { FastifyRequest } from 'fastify';
import { z } from 'zod';
import type { Services } from '../services.js';
import { AdminError, type FieldProblem } from '../admin/errors.js';
import { AuditedChanges } from '../admin/audited-changes.js';
import { MAX_PAGE_SIZE } from '../admin/audit.js';
import { DEFAULT_SECRET_GRACE_SECONDS, MAX_SECRET_GRACE_SECONDS } from '../admin/clients.js';
import type { Caller } from './protected-resource.js';

/** The services the management API's operations use. */
export type AdminApiServices = Pick<Services, 'basePath' | 'events' | 'invitations' | 'issuer' | 'management'>;

/** Where the API is mounted, below the issuer's path. */
export const ADMIN_API_PATH = '/admin/v1';

/** The media type of a PATCH body: a JSON Merge Patch (RFC 7396). */
export const MERGE_PATCH = 'application/merge-patch+json';

/**
 * A name in a path or query: bounded, and without control characters (PostgreSQL refuses a NUL
 * in text, which would otherwise surface as a server error).
 */
export const name = (max: number) =>
  z
    .string()
    .min(1)
    .max(max)
    .regex(/^[^\u0000-\u001f\u007f]+$/, 'control characters are not allowed');

/** The `clientId` of a path. */
export const clientIdParam = name(100).meta({ description: 'The client_id' });

/** A route's path parameters by name. */
export type Params = Record<string, string>;

/** What a route answers: its status, JSON body and ETag. */
export interface Answer {
  status: number;
  body?: unknown;
  etag?: string;
}

/** Who calls a route: the token's caller, and how they may call it. */
export interface ApiCaller extends Caller {
  /**
   * True when the token is let in by `sigil:org:admin` alone (neither `sigil:admin` nor, for a GET,
   * `sigil:admin:read`): the caller administers the organization of the path (checked before the
   * route runs) and the route applies an organization admin's limits.
   */
  organizationAdmin: boolean;
}

/** One route of the API: how it is registered, documented and handled. */
export interface Route {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  /** Below ADMIN_API_PATH, Fastify style (`/clients/:clientId`). */
  url: string;
  summary: string;
  params?: Record<string, z.ZodType>;
  /** The query parameters' schema (each member one parameter). */
  query?: z.ZodObject;
  /** The request body's schema; with `mediaType` when not application/json. */
  body?: z.ZodType;
  mediaType?: string;
  /** The 2xx answer's schema, if it has a body. */
  response?: z.ZodType;
  /** Success is 201 Created (a POST that creates an item), not 200. */
  created?: boolean;
  /**
   * An organization admin (`sigil:org:admin`) may call it too, for an organization they administer:
   * the path's `:name`.
   */
  organizationAdmin?: boolean;
  handle(
    ctx: AdminApiServices,
    caller: ApiCaller,
    params: Params,
    body: unknown,
    request: FastifyRequest,
  ): Promise<Answer>;
}

/** The audited changes (src/admin/audited-changes.ts) of one caller of the API. */
export function changes(ctx: AdminApiServices, caller: Caller): AuditedChanges {
  return new AuditedChanges(ctx.management, { events: ctx.events, endpoint: ADMIN_API_PATH, actor: caller });
}

/** The request's `If-Match`, or undefined. */
export function ifMatch(request: FastifyRequest): string | undefined {
  const value = request.headers['if-match'];
  return typeof value === 'string' ? value : undefined;
}

/**
 * The request's `If-Match`, which a change by merge patch requires (RFC 6585 §3).
 * @throws PreconditionRequired (428) without one.
 */
export function requiredIfMatch(request: FastifyRequest): string {
  const etag = ifMatch(request);
  if (etag === undefined) throw new PreconditionRequired();
  return etag;
}

/** Parses `body` with `schema`, or refuses it with each zod issue's path. @throws AdminError `invalid`. */
export function parsed<T extends z.ZodType>(schema: T, body: unknown): z.output<T> {
  const result = schema.safeParse(body ?? {});
  if (result.success) return result.data;
  const problems: FieldProblem[] = result.error.issues.map((i) => ({ path: i.path.join('.'), message: i.message }));
  throw new AdminError('invalid', 'the request body is not valid', problems[0]?.path, problems);
}

/** A PATCH without `If-Match` (RFC 6585 §3): answered 428. */
export class PreconditionRequired extends Error {}

/** The body of a secret rotation (clients and API resources). */
export const rotateSecretBody = z.strictObject({
  graceSeconds: z
    .number()
    .int()
    .min(0)
    .max(MAX_SECRET_GRACE_SECONDS)
    .default(DEFAULT_SECRET_GRACE_SECONDS)
    .meta({
      description: `How long the replaced secret keeps working, seconds (0 ends it now; default ${DEFAULT_SECRET_GRACE_SECONDS}, at most ${MAX_SECRET_GRACE_SECONDS})`,
    }),
});

/**
 * The query members of a listing read a page at a time: `cursor` (the `next` of the previous
 * page) and `limit` (1 to MAX_PAGE_SIZE, default 50).
 * @param items what a page holds, for the description ("Users", "Events")
 */
export function paging(items: string) {
  return {
    cursor: name(100).optional().meta({ description: 'The next of the previous page' }),
    limit: z.coerce
      .number()
      .int()
      .min(1)
      .max(MAX_PAGE_SIZE)
      .default(50)
      .meta({ description: `${items} per page, 1 to ${MAX_PAGE_SIZE}` }),
  };
}
