/**
 * SCIM User resources (RFC 7643 §4.1) both SCIM doors share (`/scim/v2`, `service.ts`, and
 * `/scim/v2/organizations/{name}`, `organization.ts`): a representation parsed into what
 * `UserAdmin` takes, a stored user rendered under a base URL, and a ListResponse (RFC 7644 §3.4.2).
 * Pure functions.
 */
import type { UserEmail } from '../admin/user-types.js';
import type { DirectoryUser } from '../stores/directory.js';
import { attributeList, type ListParams, project } from './listing.js';
import { etagOf, field, invalidValue, type Json, optionalString, usernameOf } from './representation.js';
import { LIST_RESPONSE, USER_SCHEMA } from './schemas.js';

/** The longest string attribute, characters. */
export const MAX_STRING = 255;
const MAX_EMAILS = 20;
const MAX_EMAIL = 320;
const MAX_PASSWORD = 1024;

/** A user representation's attributes as `UserAdmin` takes them. */
export interface UserInput {
  username: string;
  externalId: string | null;
  active: boolean;
  claims: Json;
  emails: UserEmail[];
  password?: string;
}

/**
 * Parses a user representation into what `UserAdmin` takes; the SCIM-owned claims follow it, the
 * other claims (role, picture, ... set through the CLI or the API) are kept.
 */
export function userInput(o: Json, before: DirectoryUser | undefined): UserInput {
  const username = usernameOf(o);
  const externalId = optionalString(o, 'externalId', MAX_STRING) ?? null;
  const activeValue = field(o, 'active');
  if (activeValue !== undefined && activeValue !== null && typeof activeValue !== 'boolean')
    throw invalidValue('active must be true or false');
  const nameValue = field(o, 'name');
  if (nameValue !== undefined && nameValue !== null && (typeof nameValue !== 'object' || Array.isArray(nameValue)))
    throw invalidValue('name must be an object');
  const name = (nameValue ?? {}) as Json;
  const formatted = optionalString(name, 'formatted', MAX_STRING);
  const givenName = optionalString(name, 'givenName', MAX_STRING);
  const familyName = optionalString(name, 'familyName', MAX_STRING);
  const displayName = optionalString(o, 'displayName', MAX_STRING);
  const emails = emailsInput(field(o, 'emails'));
  const password = field(o, 'password');
  if (
    password !== undefined &&
    password !== null &&
    (typeof password !== 'string' || password.length === 0 || password.length > MAX_PASSWORD)
  )
    throw invalidValue(`password must be a string of 1 to ${MAX_PASSWORD} characters`);
  const claims: Json = { ...(before?.claims ?? {}) };
  const set = (k: string, v: unknown) => {
    if (v === undefined) delete claims[k];
    else claims[k] = v;
  };
  set('name', formatted);
  set('given_name', givenName);
  set('family_name', familyName);
  set('display_name', displayName);
  // The primary address alone gives `email` and `email_verified` (checkClaims refuses them as claims).
  delete claims.email;
  delete claims.email_verified;
  return {
    username,
    externalId,
    active: activeValue === undefined || activeValue === null ? true : activeValue,
    claims,
    emails,
    ...(typeof password === 'string' ? { password } : {}),
  };
}

/** The `emails` of a representation, each value an address (local@domain) as RFC 7643 §4.1.2 takes it. */
function emailsInput(value: unknown): UserEmail[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value) || value.length > MAX_EMAILS)
    throw invalidValue(`emails must be an array of at most ${MAX_EMAILS}`);
  return value.map((e: unknown) => {
    if (e === null || typeof e !== 'object' || Array.isArray(e)) throw invalidValue('each email must be an object');
    const v = field(e as Json, 'value');
    if (typeof v !== 'string' || v.length > MAX_EMAIL || !/^[^@\s]+@[^@\s]+$/.test(v))
      throw invalidValue('an email value must be an address (local@domain) of at most 320 characters');
    const type = optionalString(e as Json, 'type', 32) ?? null;
    const primary = field(e as Json, 'primary');
    if (primary !== undefined && typeof primary !== 'boolean')
      throw invalidValue('email primary must be true or false');
    return { value: v, type, primary: primary === true };
  });
}

/**
 * The User resource of `u` at `<base>/Users/<id>`. `shown`: the groups to list, each at
 * `<base>/Groups/<id>`, and the version; default the deployment's groups the user is a direct
 * member of and the user's version.
 */
export function userResource(
  u: DirectoryUser,
  base: string,
  shown: { groups: readonly { id: string; displayName: string }[]; etag: string } = {
    groups: u.groups,
    etag: etagOf(u.version),
  },
): Json {
  const { groups } = shown;
  const c = u.claims;
  const str = (k: string) => (typeof c[k] === 'string' ? (c[k] as string) : undefined);
  const name = { formatted: str('name'), familyName: str('family_name'), givenName: str('given_name') };
  const hasName = Object.values(name).some((v) => v !== undefined);
  const location = `${base}/Users/${encodeURIComponent(u.subjectId)}`;
  return {
    schemas: [USER_SCHEMA],
    id: u.subjectId,
    ...(u.externalId !== null ? { externalId: u.externalId } : {}),
    userName: u.username,
    ...(hasName ? { name: Object.fromEntries(Object.entries(name).filter(([, v]) => v !== undefined)) } : {}),
    ...(str('display_name') !== undefined ? { displayName: str('display_name') } : {}),
    active: u.isActive,
    ...(u.emails.length > 0
      ? {
          emails: u.emails.map((e) => ({
            value: e.value,
            ...(e.type !== null ? { type: e.type } : {}),
            primary: e.primary,
          })),
        }
      : {}),
    ...(groups.length > 0
      ? {
          groups: groups.map((g) => ({
            value: g.id,
            $ref: `${base}/Groups/${encodeURIComponent(g.id)}`,
            display: g.displayName,
          })),
        }
      : {}),
    meta: {
      resourceType: 'User',
      created: new Date(u.createdAt * 1000).toISOString(),
      lastModified: new Date(u.updatedAt * 1000).toISOString(),
      location,
      version: shown.etag,
    },
  };
}

/** A ListResponse of `resources`, each projected onto the attributes `params` ask for. */
export function listResponse(total: number, startIndex: number, resources: Json[], params: ListParams): Json {
  const attributes = attributeList(params.attributes);
  const excluded = attributeList(params.excludedAttributes);
  return {
    schemas: [LIST_RESPONSE],
    totalResults: total,
    startIndex,
    itemsPerPage: resources.length,
    Resources: resources.map((r) => project(r, attributes, excluded)),
  };
}
