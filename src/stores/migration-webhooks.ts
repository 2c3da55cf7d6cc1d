/**
 * Migration `0021_webhooks` (listed in `migrations.ts`, which it keeps under its size bound): the
 * stored webhooks, the webhooks disabled (a 410 answer, or an admin), and the durable outbox of
 * deliveries (DESIGN §6b "Webhooks and hooks"; `sql-webhooks.ts`, `webhook-outbox.ts`).
 */
import { type Kysely, type Migration, PostgresAdapter, sql } from 'kysely';

/** `0021_webhooks`. Never edited once released: add a new migration. */
export const webhooksMigration: Migration = {
  async up(db: Kysely<unknown>) {
    const postgres = db.getExecutor().adapter instanceof PostgresAdapter;
    // Webhooks managed at run time: `events` a JSON array, `secrets` the signing secrets as JSON
    // sealed under the data key when one is set (they must be recoverable to sign).
    await db.schema
      .createTable('webhooks')
      .addColumn('name', 'varchar(63)', (c) => c.primaryKey())
      .addColumn('url', 'text', (c) => c.notNull())
      .addColumn('events', 'text', (c) => c.notNull())
      .addColumn('secrets', 'text', (c) => c.notNull())
      .addColumn('version', 'integer', (c) => c.notNull())
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addColumn('updated_at', 'bigint', (c) => c.notNull())
      .execute();
    // Disabled webhooks of the config file and the store alike, by name: a receiver that answered
    // 410 Gone, or an admin's `enabled: false`.
    await db.schema
      .createTable('webhook_disabled')
      .addColumn('name', 'varchar(63)', (c) => c.primaryKey())
      .addColumn('disabled_at', 'bigint', (c) => c.notNull())
      .addColumn('reason', 'varchar(200)', (c) => c.notNull())
      .execute();
    // The outbox: one row per webhook and event, written in the transaction of the change it
    // tells of. `seq` orders the deliveries of one `order_key` (a later one waits while an earlier
    // one is pending); `id` is the Standard Webhooks message id (`webhook-id`).
    await db.schema
      .createTable('webhook_deliveries')
      .addColumn('seq', postgres ? 'bigserial' : 'integer', (c) =>
        postgres ? c.primaryKey() : c.primaryKey().autoIncrement(),
      )
      .addColumn('id', 'varchar(40)', (c) => c.notNull().unique())
      .addColumn('webhook', 'varchar(63)', (c) => c.notNull())
      .addColumn('type', 'varchar(64)', (c) => c.notNull())
      .addColumn('order_key', 'varchar(300)', (c) => c.notNull())
      .addColumn('payload', 'text', (c) => c.notNull())
      .addColumn('status', 'varchar(16)', (c) => c.notNull())
      .addColumn('attempts', 'integer', (c) => c.notNull())
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addColumn('next_attempt_at', 'bigint', (c) => c.notNull())
      .addColumn('give_up_at', 'bigint', (c) => c.notNull())
      .addColumn('lease_holder', 'varchar(64)')
      .addColumn('lease_until', 'bigint', (c) => c.notNull())
      .addColumn('last_status_code', 'integer')
      .addColumn('last_attempt_at', 'bigint')
      .addColumn('last_error', 'varchar(500)')
      .execute();
    // Due deliveries (the poll of every node): only pending ones are indexed.
    await db.schema
      .createIndex('webhook_deliveries_due')
      .on('webhook_deliveries')
      .columns(['next_attempt_at', 'seq'])
      .where(sql.ref('status'), '=', 'pending')
      .execute();
    // The earlier pending delivery of the same subject (order): only pending ones are indexed, so
    // the check reads the few still pending, never a subject's delivered history. Unindexed, the
    // planner of a young, unanalysed table on PostgreSQL walked that history for every candidate
    // (about 0.8 s a batch with 1,900 pending: a backlog drained at 50 a second).
    await db.schema
      .createIndex('webhook_deliveries_order')
      .on('webhook_deliveries')
      .columns(['webhook', 'order_key', 'seq'])
      .where(sql.ref('status'), '=', 'pending')
      .execute();
    // A webhook's delivery log.
    await db.schema
      .createIndex('webhook_deliveries_log')
      .on('webhook_deliveries')
      .columns(['webhook', 'seq'])
      .execute();
    await db.schema.createIndex('webhook_deliveries_created').on('webhook_deliveries').column('created_at').execute();
  },
};
