/**
 * Migration `0023_saml_service_providers` (listed in `migrations.ts`, which it keeps under its size
 * bound): the SAML service providers managed at run time (DESIGN §6b "SAML 2.0 identity
 * provider"; `sql-saml-service-providers.ts`).
 */
import type { Kysely, Migration } from 'kysely';

/** `0023_saml_service_providers`. Never edited once released: add a new migration. */
export const samlServiceProvidersMigration: Migration = {
  async up(db: Kysely<unknown>) {
    // `key` is the base64url SHA-256 of the entity ID (at most 1,024 characters, too long for an
    // index key in every dialect); `settings` the SP's `samlServiceProviders` entry as JSON.
    await db.schema
      .createTable('saml_service_providers')
      .addColumn('key', 'varchar(43)', (c) => c.primaryKey())
      .addColumn('entity_id', 'text', (c) => c.notNull())
      .addColumn('settings', 'text', (c) => c.notNull())
      .addColumn('version', 'integer', (c) => c.notNull())
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addColumn('updated_at', 'bigint', (c) => c.notNull())
      .execute();
  },
};
