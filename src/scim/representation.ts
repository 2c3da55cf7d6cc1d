/**
 * What the SCIM resources share (RFC 7643, RFC 7644): attributes found case-insensitively, the
 * `schemas` check, versions as weak ETags and `If-Match` (§3.14), writes retried against the
 * newest version, the changed attributes an audit event names, and the user administration's
 * refusals as SCIM errors (§3.12). Pure functions of the service.
 */
import { AdminError } from '../admin/errors.js';
import { checkUsername } from '../admin/user-rules.js';
import { MAX_SUBJECT_LENGTH, MAX_USERNAME_LENGTH } from '../config/schema.js';
import { ScimError } from '../protocol/scim-filter.js';
import { DirectoryUnavailable } from '../users/directory.js';
import { GROUP_SCHEMA } from './schemas.js';

/** A SCIM resource or representation as JSON. */
export type Json = Record<string, unknown>;

/** A resource as answered, with its version for the ETag. */
export interface ScimResult {
  resource: Json;
  /** The weak ETag `W/"<version>"` (RFC 7644 §3.14). */
  etag: string;
}

const USERNAME_RULE = `userName is required: a string of 1 to ${MAX_USERNAME_LENGTH} characters`;

/** A 400 `invalidValue` (RFC 7644 §3.12). */
export function invalidValue(detail: string): ScimError {
  return new ScimError(400, detail, 'invalidValue');
}

/** An attribute of `o`, found case-insensitively (RFC 7643 §2.1). */
export function field(o: Json, name: string): unknown {
  const key = Object.keys(o).find((k) => k.toLowerCase() === name.toLowerCase());
  return key === undefined ? undefined : o[key];
}

/**
 * A string attribute of at most `max` characters; absent, null or empty: undefined. @throws ScimError 400
 * `invalidValue`.
 */
export function optionalString(o: Json, name: string, max: number): string | undefined {
  const v = field(o, name);
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'string' || v.length > max)
    throw invalidValue(`${name} must be a string of at most ${max} characters`);
  return v.length === 0 ? undefined : v;
}

/** `body` as a JSON object whose `schemas` list `schema`. @throws ScimError 400 `invalidSyntax`. */
export function schemasOf(body: unknown, schema: string): Json {
  if (body === null || typeof body !== 'object' || Array.isArray(body))
    throw new ScimError(400, 'the body must be a JSON object', 'invalidSyntax');
  const o = body as Json;
  const schemas = field(o, 'schemas');
  if (!Array.isArray(schemas) || !schemas.includes(schema))
    throw new ScimError(400, `schemas must list ${schema}`, 'invalidSyntax');
  return o;
}

/**
 * The `userName` of a user representation. @throws ScimError 400 `invalidValue` unless a username `UserAdmin`
 * takes (`checkUsername`).
 */
export function usernameOf(o: Json): string {
  const username = field(o, 'userName');
  if (typeof username !== 'string') throw invalidValue(USERNAME_RULE);
  try {
    checkUsername(username);
  } catch {
    throw invalidValue(USERNAME_RULE);
  }
  return username;
}

/**
 * A refusal of `UserAdmin` (or a user directory that cannot answer) as SCIM answers it
 * (RFC 7644 §3.12): a taken userName 409 `uniqueness`; bad input 400 `invalidValue` (a password
 * the policy refuses in its words); a directory that cannot say whether it holds the userName
 * 503 with `Retry-After` (§3.12 lists no scimType for it: nothing is stored, since taking a name
 * its user holds would let the stored user answer for them at sign-in); any other error as it is.
 */
export function scimRefusal(err: unknown, username: string): unknown {
  if (err instanceof DirectoryUnavailable)
    return new ScimError(
      503,
      `user directory "${err.directory}" cannot answer whether it holds userName "${username}"; try again later`,
      undefined,
      err.headers,
    );
  if (!(err instanceof AdminError)) return err;
  if (err.code === 'conflict') return new ScimError(409, `userName "${username}" is taken`, 'uniqueness');
  if (err.code === 'invalid')
    return invalidValue(
      err.field === 'password' ? `password: ${err.message}` : err.field === 'username' ? USERNAME_RULE : err.message,
    );
  if (err.code === 'precondition_failed')
    return new ScimError(412, 'the resource was changed concurrently; read it again');
  return new ScimError(404, err.message);
}

/** The most members one group representation may list. */
export const MAX_MEMBERS = 1000;

/**
 * The member ids (`members[].value`) of a group representation, each once, in order.
 * @throws ScimError 400 `invalidValue` for more than MAX_MEMBERS, a member without a string
 *   value of a subject's length, or of a `type` other than `User`.
 */
export function memberIdsOf(o: Json): string[] {
  const list = field(o, 'members') ?? [];
  if (!Array.isArray(list) || list.length > MAX_MEMBERS)
    throw invalidValue(`members must be an array of at most ${MAX_MEMBERS}`);
  const members = new Set<string>();
  for (const m of list) {
    const value = m !== null && typeof m === 'object' && !Array.isArray(m) ? field(m as Json, 'value') : undefined;
    const type = m !== null && typeof m === 'object' && !Array.isArray(m) ? field(m as Json, 'type') : undefined;
    if (typeof value !== 'string' || value.length === 0 || value.length > MAX_SUBJECT_LENGTH)
      throw invalidValue('each member needs a value: the id of a user');
    if (type !== undefined && type !== 'User')
      throw invalidValue('members are users (groups in groups are not supported)');
    members.add(value);
  }
  return [...members];
}

/** `W/"<n>"` (RFC 7232 §2.3 weak validator). */
export function etagOf(version: number): string {
  return `W/"${version}"`;
}

/**
 * Checks an `If-Match` header (none or `*`: any version) against the `current` version.
 * @throws ScimError 412 when it names another version (RFC 7644 §3.14).
 */
export function checkIfMatch(ifMatch: string | undefined, current: number): void {
  if (ifMatch === undefined || ifMatch.trim() === '*') return;
  const wanted = ifMatch.split(',').map((t) => t.trim().replace(/^W\//, ''));
  if (!wanted.includes(`"${current}"`))
    throw new ScimError(412, 'the resource was changed: its version is not the one in If-Match');
}

/**
 * Checks an `If-Match` header (none or `*`: any version) against the current ETag `etag` as
 * answered (`W/"..."`); weak comparison, as `checkIfMatch`.
 * @throws ScimError 412 when it names another version (RFC 7644 §3.14).
 */
export function checkIfMatchTag(ifMatch: string | undefined, etag: string): void {
  if (ifMatch === undefined || ifMatch.trim() === '*') return;
  const bare = (t: string) => t.trim().replace(/^W\//, '');
  if (!ifMatch.split(',').map(bare).includes(bare(etag)))
    throw new ScimError(412, 'the resource was changed: its version is not the one in If-Match');
}

/**
 * Runs a read-check-write `attempt` (undefined: the version moved on before the write). With
 * `If-Match` the first lost race is a 412 (§3.14: the client's version is stale); without it the
 * change is applied to the newest version, up to three times, then 412.
 */
export async function retried(
  ifMatch: string | undefined,
  attempt: () => Promise<ScimResult | undefined>,
): Promise<ScimResult> {
  for (let i = 0; i < (ifMatch === undefined ? 3 : 1); i++) {
    const result = await attempt();
    if (result) return result;
  }
  throw new ScimError(412, 'the resource was changed concurrently; read it again');
}

/** The names of the top-level attributes whose values differ between two representations. */
export function changedAttributes(before: Json, after: Json, extra: string[] = []): string[] {
  const skip = new Set(['meta', 'schemas', 'id']);
  const keys = new Set([...Object.keys(before), ...Object.keys(after)]);
  return [...[...keys].filter((k) => !skip.has(k) && JSON.stringify(before[k]) !== JSON.stringify(after[k])), ...extra];
}

/** What a Group resource shows of a group, whichever door (the deployment's or an organization's) serves it. */
export interface GroupShape {
  id: string;
  externalId: string | null;
  displayName: string;
  members: readonly { subject: string; username: string }[];
  /** Unix seconds. */
  createdAt: number;
  updatedAt: number;
}

/**
 * A Group resource (RFC 7643 §4.2) under `base` (its door's URL): members with their User
 * `$ref`, `meta` with `version` as given.
 * @param excludeMembers leave `members` out (a request's `excludedAttributes`)
 */
export function groupResource(base: string, g: GroupShape, version: string, excludeMembers = false): Json {
  return {
    schemas: [GROUP_SCHEMA],
    id: g.id,
    ...(g.externalId !== null ? { externalId: g.externalId } : {}),
    displayName: g.displayName,
    ...(g.members.length > 0 && !excludeMembers
      ? {
          members: g.members.map((m) => ({
            value: m.subject,
            $ref: `${base}/Users/${encodeURIComponent(m.subject)}`,
            display: m.username,
            type: 'User',
          })),
        }
      : {}),
    meta: {
      resourceType: 'Group',
      created: new Date(g.createdAt * 1000).toISOString(),
      lastModified: new Date(g.updatedAt * 1000).toISOString(),
      location: `${base}/Groups/${encodeURIComponent(g.id)}`,
      version,
    },
  };
}
