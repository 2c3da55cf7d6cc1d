/**
 * The SQL implementation of `KeyStore`: signing keys in `signing_keys`, shared by every node of
 * the store. A key's private JWK is stored as the caller gives it (a JWE of it under
 * `SIGIL_DATA_KEY` when one is set; `StoredKey`).
 */
import type { Kysely } from 'kysely';
import type { KeyStore, StoredKey } from './types.js';
import type { Database } from './tables.js';

/** `KeyStore` over the store's Kysely instance. */
export class SqlKeyStore implements KeyStore {
  constructor(private readonly db: Kysely<Database>) {}

  async listKeys(): Promise<StoredKey[]> {
    const rows = await this.db.selectFrom('signing_keys').selectAll().orderBy('created_at').orderBy('kid').execute();
    return rows.map((r) => ({
      kid: r.kid,
      alg: r.alg,
      privateKey: r.private_jwk,
      publicJwk: JSON.parse(r.public_jwk) as Record<string, unknown>,
      createdAt: Number(r.created_at),
      activatesAt: Number(r.activates_at),
      retiredAt: r.retired_at === null ? null : Number(r.retired_at),
    }));
  }

  async addKey(key: StoredKey): Promise<void> {
    await this.db
      .insertInto('signing_keys')
      .values({
        kid: key.kid,
        alg: key.alg,
        private_jwk: key.privateKey,
        public_jwk: JSON.stringify(key.publicJwk),
        created_at: key.createdAt,
        activates_at: key.activatesAt,
        retired_at: key.retiredAt,
      })
      .execute();
  }

  async retireKey(kid: string, now: number): Promise<boolean> {
    const result = await this.db
      .updateTable('signing_keys')
      .set({ retired_at: now })
      .where('kid', '=', kid)
      .where('retired_at', 'is', null)
      .executeTakeFirst();
    return result.numUpdatedRows === 1n;
  }
}
