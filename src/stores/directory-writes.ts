/**
 * The directory's row writes that several of its transactions share (`directory.ts`): a user's
 * addresses, a group's members, the version bump of users whose representation changed, and the
 * password columns of a user replace.
 */
import { type Kysely, sql } from 'kysely';
import type { Database } from './tables.js';

/** Inserts a user's addresses. */
export async function insertEmails(
  trx: Kysely<Database>,
  subjectId: string,
  emails: readonly { value: string; type: string | null; primary: boolean; verified: boolean }[],
): Promise<void> {
  if (emails.length === 0) return;
  await trx
    .insertInto('user_emails')
    .values(
      emails.map((e) => ({
        subject_id: subjectId,
        value: e.value,
        value_normalized: e.value.toLowerCase(),
        type: e.type,
        is_primary: e.primary ? 1 : 0,
        verified: e.verified ? 1 : 0,
      })),
    )
    .execute();
}

/** Changes a group's members from `before` to `after`; those who joined or left are bumped. */
export async function setMembers(
  trx: Kysely<Database>,
  groupId: string,
  before: readonly string[],
  after: readonly string[],
): Promise<void> {
  const removed = before.filter((s) => !after.includes(s));
  const added = after.filter((s) => !before.includes(s));
  for (let i = 0; i < removed.length; i += 500)
    await trx
      .deleteFrom('group_members')
      .where('group_id', '=', groupId)
      .where('subject_id', 'in', removed.slice(i, i + 500))
      .execute();
  for (let i = 0; i < added.length; i += 500)
    await trx
      .insertInto('group_members')
      .values(added.slice(i, i + 500).map((subject_id) => ({ group_id: groupId, subject_id })))
      .execute();
  await bumpUsers(trx, [...removed, ...added]);
}

/** Adds one to the versions of `subjectIds` (their groups, and so their representation, changed). */
export async function bumpUsers(trx: Kysely<Database>, subjectIds: readonly string[]): Promise<void> {
  for (let i = 0; i < subjectIds.length; i += 500)
    await trx
      .updateTable('users')
      .set({ version: sql<number>`version + 1` })
      .where('subject_id', 'in', subjectIds.slice(i, i + 500))
      .execute();
}

/**
 * The password columns a user replace writes: the hash and the flag of a temporary password
 * (`users.password_change_required`), each only when given (else the stored one stays).
 */
export function passwordColumns(
  passwordHash: string | undefined,
  changeRequired: boolean | undefined,
): { password_hash?: string; password_change_required?: number } {
  return {
    ...(passwordHash === undefined ? {} : { password_hash: passwordHash }),
    ...(changeRequired === undefined ? {} : { password_change_required: changeRequired ? 1 : 0 }),
  };
}
