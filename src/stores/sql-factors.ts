/**
 * The SQL implementation of `FactorStore`: users' second factors in `mfa_factors`, one row per
 * factor with its kind's own JSON in `data` (the kinds are `src/mfa/factors.ts`'s; the store knows
 * nothing of them).
 */
import type { Kysely, Selectable } from 'kysely';
import type { FactorStore, StoredFactor } from './types.js';
import type { Database, MfaFactorsTable } from './tables.js';

/** `FactorStore` over the store's Kysely instance. */
export class SqlFactorStore implements FactorStore {
  constructor(private readonly db: Kysely<Database>) {}

  async listFactors(subjectId: string, kinds?: readonly string[]): Promise<StoredFactor[]> {
    let query = this.db.selectFrom('mfa_factors').selectAll().where('subject_id', '=', subjectId);
    if (kinds) {
      if (kinds.length === 0) return [];
      query = query.where('kind', 'in', [...kinds]);
    }
    const rows = await query.orderBy('created_at').orderBy('id').execute();
    return rows.map(toFactor);
  }

  async addFactor(factor: StoredFactor): Promise<void> {
    await this.db.insertInto('mfa_factors').values(toFactorRow(factor)).execute();
  }

  async advanceFactorCounter(id: string, next: number, now: number): Promise<boolean> {
    const result = await this.db
      .updateTable('mfa_factors')
      .set({ counter: next, last_used_at: now })
      .where('id', '=', id)
      .where('counter', '<', next)
      .executeTakeFirst();
    return result.numUpdatedRows === 1n;
  }

  async removeFactor(subjectId: string, id: string): Promise<boolean> {
    const result = await this.db
      .deleteFrom('mfa_factors')
      .where('id', '=', id)
      .where('subject_id', '=', subjectId)
      .executeTakeFirst();
    return result.numDeletedRows === 1n;
  }

  async removeFactors(subjectId: string, kinds?: readonly string[]): Promise<number> {
    let query = this.db.deleteFrom('mfa_factors').where('subject_id', '=', subjectId);
    if (kinds) {
      if (kinds.length === 0) return 0;
      query = query.where('kind', 'in', [...kinds]);
    }
    return Number((await query.executeTakeFirst()).numDeletedRows);
  }

  async replaceFactors(subjectId: string, kind: string, factors: readonly StoredFactor[]): Promise<void> {
    await this.db.transaction().execute(async (trx) => {
      await trx.deleteFrom('mfa_factors').where('subject_id', '=', subjectId).where('kind', '=', kind).execute();
      if (factors.length > 0) await trx.insertInto('mfa_factors').values(factors.map(toFactorRow)).execute();
    });
  }
}

function toFactorRow(f: StoredFactor): MfaFactorsTable {
  return {
    id: f.id,
    subject_id: f.subjectId,
    kind: f.kind,
    label: f.label,
    data: JSON.stringify(f.data),
    counter: f.counter,
    created_at: f.createdAt,
    last_used_at: f.lastUsedAt,
  };
}

function toFactor(row: Selectable<MfaFactorsTable>): StoredFactor {
  return {
    id: row.id,
    subjectId: row.subject_id,
    kind: row.kind,
    label: row.label,
    data: JSON.parse(row.data) as Record<string, unknown>,
    counter: Number(row.counter),
    createdAt: Number(row.created_at),
    lastUsedAt: row.last_used_at === null ? null : Number(row.last_used_at),
  };
}
