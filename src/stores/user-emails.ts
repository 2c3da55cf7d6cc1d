/**
 * Users' email addresses (table `user_emails`, migration `0009_people`): the primary address is
 * the `email` claim, its `verified` flag the `email_verified` claim (OIDC Core §5.1); addresses
 * are found by their lower-cased form (password reset, self-registration). Part of the one SQL
 * store; reached as `store.emails`.
 */
import type { Kysely } from 'kysely';
import type { Database, UserEmailsTable } from './tables.js';

/** One address of a user. */
export interface StoredEmail {
  subjectId: string;
  /** As given, at most 320 characters (RFC 5321 §4.5.3.1: 64 + 1 + 255). */
  value: string;
  isPrimary: boolean;
  verified: boolean;
}

/** The addresses of every stored user. */
export interface UserEmailStore {
  /** The user's primary address, or undefined. */
  primary(subjectId: string): Promise<StoredEmail | undefined>;
  /** Every address equal to `value` ignoring case, of any user. */
  findByValue(value: string): Promise<StoredEmail[]>;
  /**
   * Makes `value` the user's primary address, with `verified` as given: any other primary address
   * of the user stops being primary (and is kept).
   */
  setPrimary(subjectId: string, value: string, verified: boolean): Promise<void>;
  /** Marks the user's address `value` (ignoring case) verified; false when the user has no such address. */
  markVerified(subjectId: string, value: string): Promise<boolean>;
}

/** The lower-cased form addresses are compared by. */
export function normalizeEmail(value: string): string {
  return value.trim().toLowerCase();
}

/** `UserEmailStore` over the store's Kysely instance (SQLite or PostgreSQL). */
export class SqlUserEmails implements UserEmailStore {
  constructor(private readonly db: Kysely<Database>) {}

  async primary(subjectId: string): Promise<StoredEmail | undefined> {
    const row = await this.db
      .selectFrom('user_emails')
      .selectAll()
      .where('subject_id', '=', subjectId)
      .where('is_primary', '=', 1)
      .executeTakeFirst();
    return row ? toEmail(row) : undefined;
  }

  async findByValue(value: string): Promise<StoredEmail[]> {
    const rows = await this.db
      .selectFrom('user_emails')
      .selectAll()
      .where('value_normalized', '=', normalizeEmail(value))
      .execute();
    return rows.map(toEmail);
  }

  async setPrimary(subjectId: string, value: string, verified: boolean): Promise<void> {
    const normalized = normalizeEmail(value);
    await this.db.transaction().execute(async (trx) => {
      await trx.updateTable('user_emails').set({ is_primary: 0 }).where('subject_id', '=', subjectId).execute();
      await trx
        .insertInto('user_emails')
        .values({
          subject_id: subjectId,
          value: value.trim(),
          value_normalized: normalized,
          type: null,
          is_primary: 1,
          verified: verified ? 1 : 0,
        })
        .onConflict((oc) =>
          oc
            .columns(['subject_id', 'value_normalized'])
            .doUpdateSet({ value: value.trim(), is_primary: 1, verified: verified ? 1 : 0 }),
        )
        .execute();
    });
  }

  async markVerified(subjectId: string, value: string): Promise<boolean> {
    const result = await this.db
      .updateTable('user_emails')
      .set({ verified: 1 })
      .where('subject_id', '=', subjectId)
      .where('value_normalized', '=', normalizeEmail(value))
      .executeTakeFirst();
    return Number(result.numUpdatedRows) > 0;
  }
}

function toEmail(row: UserEmailsTable): StoredEmail {
  return {
    subjectId: row.subject_id,
    value: row.value,
    isPrimary: Number(row.is_primary) === 1,
    verified: Number(row.verified) === 1,
  };
}
