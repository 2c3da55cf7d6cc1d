/**
 * Server secrets (0020_server_secrets): random values that must stay the same for the life of the
 * deployment and on every node, unlike signing keys, which rotate. The first node that asks for a
 * name creates it (insert if absent, then read: of two nodes creating at once, one value wins and
 * both read it). The SAML module keeps the key of its persistent NameIDs here.
 */
import type { Kysely } from 'kysely';
import { nowSeconds } from '../crypto/handles.js';
import type { Database } from './tables.js';

/** Named server secrets, shared by every node of the store. */
export interface ServerSecretStore {
  /**
   * The secret `name`, stored as `created` on the first call on any node; every later call, on any
   * node, returns that first value.
   * @param created the value to store when there is none yet (sealed by the caller when it must be)
   */
  getOrCreate(name: string, created: string): Promise<string>;
}

/** `ServerSecretStore` over the store's Kysely instance. */
export class SqlServerSecrets implements ServerSecretStore {
  constructor(private readonly db: Kysely<Database>) {}

  async getOrCreate(name: string, created: string): Promise<string> {
    await this.db
      .insertInto('server_secrets')
      .values({ name, value: created, created_at: nowSeconds() })
      .onConflict((oc) => oc.column('name').doNothing())
      .execute();
    const row = await this.db
      .selectFrom('server_secrets')
      .select('value')
      .where('name', '=', name)
      .executeTakeFirstOrThrow();
    return row.value;
  }
}
