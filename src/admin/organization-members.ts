/**
 * What a membership holds and how a listing of members is paged: the bounded role names of a
 * member (the body of PUT /admin/v1/organizations/{name}/members/{subject}), the cursor of
 * the next page (the last subject of a page, opaque to the caller), and what an organization
 * admin may not do to their own membership.
 */
import * as z from 'zod';
import { AdminError, type FieldProblem } from './errors.js';

/** The longest role name, characters. */
export const MAX_ROLE_NAME = 100;
/** The most roles of one member. */
export const MAX_MEMBER_ROLES = 50;

/** A member's roles: distinct names of 1 to MAX_ROLE_NAME visible characters (no space), at most MAX_MEMBER_ROLES. */
export const memberRoles = z
  .array(
    z
      .string()
      .min(1)
      .max(MAX_ROLE_NAME)
      .regex(/^[^\s\u0000-\u001f\u007f]+$/, 'no spaces or control characters'),
  )
  .max(MAX_MEMBER_ROLES)
  .superRefine((roles, ctx) =>
    roles.forEach((role, i) => {
      if (roles.indexOf(role) !== i) ctx.addIssue({ code: 'custom', path: [i], message: `"${role}" is listed twice` });
    }),
  )
  .meta({
    description: `The member's roles in the organization: at most ${MAX_MEMBER_ROLES} distinct names of 1 to ${MAX_ROLE_NAME} characters without spaces`,
  });

/**
 * `roles` checked as a member's roles.
 * @throws AdminError `invalid` naming each problem's path (`roles.2`).
 */
export function parseRoles(roles: unknown): string[] {
  const result = memberRoles.safeParse(roles);
  if (result.success) return result.data;
  const problems: FieldProblem[] = result.error.issues.map((i) => ({
    path: ['roles', ...i.path].join('.'),
    message: i.message,
  }));
  throw new AdminError('invalid', `${problems[0]?.path}: ${problems[0]?.message}`, problems[0]?.path, problems);
}

/** The cursor of the page after the one ending with `subject`. */
export function cursorAfter(subject: string): string {
  return Buffer.from(subject, 'utf8').toString('base64url');
}

/**
 * The subject a cursor (`cursorAfter`) names.
 * @throws AdminError `invalid` (field `cursor`) for a value no page gave.
 */
export function subjectOfCursor(cursor: string): string {
  const subject = Buffer.from(cursor, 'base64url').toString('utf8');
  // No subject has a control character, and PostgreSQL refuses a NUL in text.
  if (subject === '' || /[\u0000-\u001f\u007f]/.test(subject) || cursorAfter(subject) !== cursor)
    throw new AdminError('invalid', 'cursor: not the next of a page', 'cursor');
  return subject;
}

/**
 * Refuses an organization admin's change or removal of their own membership. So an organization
 * never loses its last admin through its admins, nor does one lock themselves out by a mistaken
 * role list: another admin of the organization, or a Sigil admin (`sigil:admin`, the console),
 * changes it. A Sigil admin is not held to this.
 * @param admin the organization admin's subject
 * @param subject the member to change or remove
 * @throws AdminError `forbidden` when they are the same.
 */
export function refuseOwnMembership(admin: string | undefined, subject: string): void {
  if (admin === subject)
    throw new AdminError(
      'forbidden',
      'an organization admin cannot change or remove their own membership: another admin of the organization can',
    );
}
