/**
 * Users as the management doors show them (/admin/v1, the console): one shape for config-file and
 * stored users, never a password or its hash, with a strong ETag of what is shown; and their
 * listing a page at a time, with an opaque cursor.
 */
import type { UserConfig } from '../config/schema.js';
import type { DirectoryUser, SqlDirectory } from '../stores/directory.js';
import { AdminError, etagOf } from './errors.js';

/** One user as shown: where they are defined, their claims and addresses, never a secret. */
export interface UserView {
  subjectId: string;
  username: string;
  tenant: string | null;
  active: boolean;
  /** `config`: the config file's, read-only; `store`: changed through `UserAdmin`. */
  source: 'config' | 'store';
  /** The claims as stored (or as in the config file). */
  claims: Record<string, unknown>;
  /** The primary address (the `email` claim), or null. */
  email: string | null;
  /** Whether the primary address is known to be the user's (`email_verified`). */
  emailVerified: boolean;
  /** Whether the user has a password (else they sign in upstream, at a directory or with passkeys only). */
  hasPassword: boolean;
  /** Whether the password is a temporary one an administrator set, to be changed at the next sign-in. */
  passwordChangeRequired: boolean;
  /** The SCIM groups the user is a direct member of (their `role` claim gets the names). */
  groups: { id: string; displayName: string }[];
  /** The strong ETag (RFC 9110 §8.8.3) of this view, quotes included. */
  etag: string;
}

/** `view` with its ETag. */
function withEtag(view: Omit<UserView, 'etag'>): UserView {
  return { ...view, etag: etagOf(JSON.stringify(view)) };
}

/** A config-file user as shown; its address, if any, is its `email` claim. */
export function configUserView(u: UserConfig): UserView {
  return withEtag({
    subjectId: u.subjectId,
    username: u.username,
    tenant: u.tenant ?? null,
    active: u.isActive,
    source: 'config',
    claims: u.claims,
    email: typeof u.claims.email === 'string' ? u.claims.email : null,
    emailVerified: u.claims.email_verified === true,
    hasPassword: u.password !== undefined || u.passwordHash !== undefined,
    passwordChangeRequired: false,
    groups: [],
  });
}

/** A stored user as shown. */
export function storedUserView(u: DirectoryUser): UserView {
  const primary = u.emails.find((e) => e.primary);
  return withEtag({
    subjectId: u.subjectId,
    username: u.username,
    tenant: u.tenant === '' ? null : u.tenant,
    active: u.isActive,
    source: 'store',
    claims: u.claims,
    email: primary?.value ?? null,
    emailVerified: primary?.verified ?? false,
    hasPassword: u.hasPassword,
    passwordChangeRequired: u.passwordChangeRequired,
    groups: u.groups,
  });
}

/** The cursor of the page that starts at `offset` in a listing. */
function cursorAt(offset: number): string {
  return Buffer.from(`users:${offset}`).toString('base64url');
}

/**
 * Where the page a cursor names starts in a listing.
 * @throws AdminError `invalid` (field `cursor`) for a cursor `cursorAt` did not make.
 */
function offsetOf(cursor: string | undefined): number {
  if (cursor === undefined) return 0;
  const match = /^users:(\d{1,9})$/.exec(Buffer.from(cursor, 'base64url').toString('utf8'));
  if (!match)
    throw new AdminError('invalid', 'cursor: not a cursor of this listing', 'cursor', [
      { path: 'cursor', message: 'not a cursor of this listing' },
    ]);
  return Number(match[1]);
}

/**
 * A page of users (`UserAdmin.page`): the config file's first (in file order), then the stored ones
 * by username.
 * @param query `contains`: only usernames containing it (case-insensitive); `cursor`: the `next`
 *   of the previous page; `limit`: users per page
 * @throws AdminError as `offsetOf`; ScimError 400 `tooMany` as `SqlDirectory.listUsers`.
 */
export async function pageOfUsers(
  directory: Pick<SqlDirectory, 'listUsers'>,
  configUsers: readonly UserConfig[],
  query: { contains?: string; cursor?: string; limit: number },
): Promise<{ users: UserView[]; next?: string }> {
  const offset = offsetOf(query.cursor);
  const lower = query.contains?.toLowerCase();
  const fromConfig = configUsers.filter((u) => lower === undefined || u.username.toLowerCase().includes(lower));
  const configPage = fromConfig.slice(offset, offset + query.limit).map(configUserView);
  const filter = query.contains
    ? { kind: 'compare' as const, path: { attr: 'userName' }, op: 'co' as const, value: query.contains }
    : undefined;
  const { total, users } = await directory.listUsers({
    ...(filter ? { filter } : {}),
    sortBy: { attr: 'userName' },
    offset: Math.max(0, offset - fromConfig.length),
    limit: query.limit - configPage.length,
  });
  const page = [...configPage, ...users.map(storedUserView)];
  const end = offset + page.length;
  return { users: page, ...(end < fromConfig.length + total && page.length > 0 ? { next: cursorAt(end) } : {}) };
}
