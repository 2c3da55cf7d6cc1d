/**
 * Schema migrations, in order. Run on start and by `sigil migrate`. A migration is
 * never edited once released: add a new one.
 */
import { type Kysely, type Migration, type MigrationProvider, PostgresAdapter, sql } from 'kysely';
import { newId } from '../crypto/handles.js';
import { webhooksMigration } from './migration-webhooks.js';
import { samlServiceProvidersMigration } from './migration-saml-service-providers.js';
import { externalLinkKey } from './types.js';

const migrations: Record<string, Migration> = {
  '0001_initial': {
    async up(db: Kysely<unknown>) {
      await db.schema
        .createTable('grants')
        .addColumn('key', 'varchar(64)', (c) => c.primaryKey())
        .addColumn('type', 'varchar(32)', (c) => c.notNull())
        .addColumn('client_id', 'varchar(200)', (c) => c.notNull())
        .addColumn('subject_id', 'varchar(255)')
        .addColumn('family_id', 'varchar(64)', (c) => c.notNull())
        .addColumn('session_id', 'varchar(64)')
        .addColumn('data', 'text', (c) => c.notNull())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('expires_at', 'bigint', (c) => c.notNull())
        .addColumn('consumed_at', 'bigint')
        .addColumn('revoked_at', 'bigint')
        .execute();
      await db.schema.createIndex('grants_family').on('grants').column('family_id').execute();
      await db.schema.createIndex('grants_expires').on('grants').column('expires_at').execute();
      await db.schema.createIndex('grants_subject').on('grants').columns(['subject_id', 'client_id', 'type']).execute();
      await db.schema
        .createTable('signing_keys')
        .addColumn('kid', 'varchar(64)', (c) => c.primaryKey())
        .addColumn('alg', 'varchar(16)', (c) => c.notNull())
        .addColumn('private_jwk', 'text', (c) => c.notNull())
        .addColumn('public_jwk', 'text', (c) => c.notNull())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('retired_at', 'bigint')
        .execute();
      await db.schema
        .createTable('users')
        .addColumn('subject_id', 'varchar(255)', (c) => c.primaryKey())
        .addColumn('username', 'varchar(100)', (c) => c.notNull())
        .addColumn('username_normalized', 'varchar(100)', (c) => c.notNull())
        .addColumn('tenant', 'varchar(100)', (c) => c.notNull().defaultTo(''))
        .addColumn('password_hash', 'text')
        .addColumn('claims', 'text', (c) => c.notNull().defaultTo('{}'))
        .addColumn('is_active', 'integer', (c) => c.notNull().defaultTo(1))
        .addColumn('created_at', 'bigint', (c) => c.notNull().defaultTo(sql`0`))
        .execute();
      await db.schema
        .createIndex('users_username')
        .on('users')
        .columns(['tenant', 'username_normalized'])
        .unique()
        .execute();
    },
  },
  '0002_key_lifecycle_and_leases': {
    async up(db: Kysely<unknown>) {
      // When a key starts signing (after its propagation period in the JWKS).
      await db.schema
        .alterTable('signing_keys')
        .addColumn('activates_at', 'bigint', (c) => c.notNull().defaultTo(0))
        .execute();
      // Named leases: which node runs a periodic job (clean-up) until when.
      await db.schema
        .createTable('leases')
        .addColumn('name', 'varchar(64)', (c) => c.primaryKey())
        .addColumn('holder', 'varchar(64)', (c) => c.notNull())
        .addColumn('until', 'bigint', (c) => c.notNull())
        .execute();
    },
  },
  '0003_stored_clients': {
    async up(db: Kysely<unknown>) {
      // Clients added with `sigil clients add`: the client's config object as JSON, secrets hashed.
      await db.schema
        .createTable('clients')
        .addColumn('client_id', 'varchar(100)', (c) => c.primaryKey())
        .addColumn('config', 'text', (c) => c.notNull())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .execute();
    },
  },
  '0004_users_by_username': {
    async up(db: Kysely<unknown>) {
      // A username lookup without a tenant searches every tenant.
      await db.schema.createIndex('users_username_any_tenant').on('users').column('username_normalized').execute();
    },
  },
  '0005_external_links': {
    async up(db: Kysely<unknown>) {
      // Upstream identities (federation) linked to local subjects by the full pair (provider,
      // upstream sub), kept as its SHA-256 (`externalLinkKey`) plus the pair in clear for
      // operators. Before, the link was the username "<provider>:<sub>" cut to 100 characters.
      await db.schema
        .createTable('external_links')
        .addColumn('key', 'varchar(64)', (c) => c.primaryKey())
        .addColumn('provider', 'text', (c) => c.notNull())
        .addColumn('upstream_subject', 'text', (c) => c.notNull())
        .addColumn('subject_id', 'varchar(255)', (c) => c.notNull())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('external_links_subject').on('external_links').column('subject_id').execute();
      // Existing links keep working: a user the old code created (no password, username
      // "<provider>:<sub>") is linked to that exact pair. A username of 100 characters may have
      // been cut, so it names no pair for sure and is not linked (the upstream user gets a new
      // account at the next sign-in; the old one stays for an operator to remove).
      const legacy = await sql<{ subject_id: string; username: string; created_at: number }>`
        select subject_id, username, created_at from users where password_hash is null order by created_at, subject_id`.execute(
        db,
      );
      for (const u of legacy.rows) {
        const m = /^([A-Za-z0-9_-]+):(.+)$/s.exec(u.username);
        if (!m || u.username.length >= 100) continue;
        const [, provider, upstreamSubject] = m as unknown as [string, string, string];
        await sql`insert into external_links (key, provider, upstream_subject, subject_id, created_at)
          values (${externalLinkKey(provider, upstreamSubject)}, ${provider}, ${upstreamSubject}, ${u.subject_id}, ${Number(u.created_at)})
          on conflict (key) do nothing`.execute(db);
      }
    },
  },
  '0006_logout': {
    async up(db: Kysely<unknown>) {
      // Clients that took part in a session (OIDC Back-/Front-Channel Logout): notified when it ends.
      await db.schema
        .createTable('session_participants')
        .addColumn('sid', 'varchar(64)', (c) => c.notNull())
        .addColumn('client_id', 'varchar(200)', (c) => c.notNull())
        .addColumn('subject_id', 'varchar(255)', (c) => c.notNull())
        .addColumn('expires_at', 'bigint', (c) => c.notNull())
        .addPrimaryKeyConstraint('session_participants_pk', ['sid', 'client_id'])
        .execute();
      await db.schema
        .createIndex('session_participants_expires')
        .on('session_participants')
        .column('expires_at')
        .execute();
      // Back-channel logout tokens to send: the outbox, claimed by one node at a time (lease_until).
      await db.schema
        .createTable('logout_deliveries')
        .addColumn('id', 'varchar(64)', (c) => c.primaryKey())
        .addColumn('client_id', 'varchar(200)', (c) => c.notNull())
        .addColumn('uri', 'text', (c) => c.notNull())
        .addColumn('subject_id', 'varchar(255)', (c) => c.notNull())
        .addColumn('sid', 'varchar(64)', (c) => c.notNull())
        .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('next_attempt_at', 'bigint', (c) => c.notNull())
        .addColumn('give_up_at', 'bigint', (c) => c.notNull())
        .addColumn('lease_holder', 'varchar(64)')
        .addColumn('lease_until', 'bigint', (c) => c.notNull().defaultTo(0))
        .addColumn('last_error', 'text')
        .execute();
      await db.schema.createIndex('logout_deliveries_due').on('logout_deliveries').column('next_attempt_at').execute();
    },
  },
  // WebAuthn credentials (src/mfa/webauthn.ts): passkeys and security keys.
  '0007_webauthn': {
    async up(db: Kysely<unknown>) {
      await db.schema
        .createTable('webauthn_credentials')
        // The credential ID (base64url), unique per authenticator (W3C WebAuthn L3 §6.1).
        .addColumn('id', 'varchar(1400)', (c) => c.primaryKey())
        .addColumn('subject_id', 'varchar(255)', (c) => c.notNull())
        .addColumn('kind', 'varchar(16)', (c) => c.notNull())
        .addColumn('public_key', 'text', (c) => c.notNull())
        .addColumn('counter', 'bigint', (c) => c.notNull())
        .addColumn('transports', 'text', (c) => c.notNull())
        .addColumn('name', 'varchar(100)', (c) => c.notNull())
        .addColumn('backed_up', 'integer', (c) => c.notNull())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('last_used_at', 'bigint')
        .execute();
      await db.schema
        .createIndex('webauthn_credentials_subject')
        .on('webauthn_credentials')
        .column('subject_id')
        .execute();
    },
  },
  // Second factors (src/mfa/factors.ts): TOTP authenticators and recovery codes.
  '0008_mfa': {
    async up(db: Kysely<unknown>) {
      // A user's second factors: one row per TOTP authenticator or recovery
      // code. `data` is the kind's JSON (a TOTP secret sealed with SIGIL_DATA_KEY when set, a
      // recovery code's SHA-256); `counter` only ever grows, by one conditional update (the last
      // TOTP time step used; 1 once a recovery code is spent), so a code counts once.
      await db.schema
        .createTable('mfa_factors')
        .addColumn('id', 'varchar(64)', (c) => c.primaryKey())
        .addColumn('subject_id', 'varchar(255)', (c) => c.notNull())
        .addColumn('kind', 'varchar(32)', (c) => c.notNull())
        .addColumn('label', 'varchar(100)', (c) => c.notNull())
        .addColumn('data', 'text', (c) => c.notNull())
        .addColumn('counter', 'bigint', (c) => c.notNull().defaultTo(0))
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('last_used_at', 'bigint')
        .execute();
      await db.schema.createIndex('mfa_factors_subject').on('mfa_factors').columns(['subject_id', 'kind']).execute();
    },
  },
  '0009_people': {
    async up(db: Kysely<unknown>) {
      // What SCIM (RFC 7643 §4.1, §4.2), the account pages and email verification keep of stored
      // users, with the lookups they need indexed (never a scan of the users):
      // - users.external_id: the provisioning client's identifier (SCIM externalId, §3.1);
      // - users.version: grows by one at every change, the SCIM meta.version (an ETag, RFC 7644
      //   §3.14); users.updated_at: the last change, epoch seconds like created_at;
      // - user_emails: a user's addresses (SCIM emails; the email claim is the primary one), with
      //   their verification state (OIDC Core §5.1 email_verified); value_normalized is the
      //   lower-cased address, looked up by reset, verification and SCIM's emails.value filter;
      // - user_groups and group_members: SCIM groups; a group's display_name goes into its
      //   members' role claim.
      await db.schema.alterTable('users').addColumn('external_id', 'varchar(255)').execute();
      await db.schema
        .alterTable('users')
        .addColumn('version', 'bigint', (c) => c.notNull().defaultTo(1))
        .execute();
      await db.schema
        .alterTable('users')
        .addColumn('updated_at', 'bigint', (c) => c.notNull().defaultTo(sql`0`))
        .execute();
      await db.schema.createIndex('users_external_id').on('users').column('external_id').execute();
      await db.schema
        .createTable('user_emails')
        .addColumn('subject_id', 'varchar(255)', (c) => c.notNull())
        .addColumn('value', 'varchar(320)', (c) => c.notNull())
        .addColumn('value_normalized', 'varchar(320)', (c) => c.notNull())
        .addColumn('type', 'varchar(32)')
        .addColumn('is_primary', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('verified', 'integer', (c) => c.notNull().defaultTo(0))
        .addPrimaryKeyConstraint('user_emails_pk', ['subject_id', 'value_normalized'])
        .execute();
      await db.schema.createIndex('user_emails_value').on('user_emails').column('value_normalized').execute();
      await db.schema
        .createTable('user_groups')
        .addColumn('id', 'varchar(64)', (c) => c.primaryKey())
        .addColumn('display_name', 'varchar(255)', (c) => c.notNull())
        .addColumn('display_name_normalized', 'varchar(255)', (c) => c.notNull().unique())
        .addColumn('external_id', 'varchar(255)')
        .addColumn('version', 'bigint', (c) => c.notNull().defaultTo(1))
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('updated_at', 'bigint', (c) => c.notNull())
        .execute();
      await db.schema
        .createTable('group_members')
        .addColumn('group_id', 'varchar(64)', (c) => c.notNull())
        .addColumn('subject_id', 'varchar(255)', (c) => c.notNull())
        .addPrimaryKeyConstraint('group_members_pk', ['group_id', 'subject_id'])
        .execute();
      await db.schema.createIndex('group_members_subject').on('group_members').column('subject_id').execute();
    },
  },
  '0011_scim': {
    async up(db: Kysely<unknown>) {
      // SCIM lists answer totalResults (RFC 7644 §3.4.2.4): an unfiltered list of a million users
      // would count them all at every page. The number of users is kept in one row instead,
      // exact, by triggers on every insert and delete of a user (the CLI's, federation's and
      // SCIM's alike).
      await db.schema
        .createTable('user_count')
        .addColumn('id', 'integer', (c) => c.primaryKey())
        .addColumn('n', 'bigint', (c) => c.notNull())
        .execute();
      await sql`insert into user_count (id, n) select 1, count(*) from users`.execute(db);
      if (db.getExecutor().adapter instanceof PostgresAdapter) {
        // Per statement, over the transition table: one update of the row per statement. Per row,
        // a bulk insert would update the same row thousands of times in one transaction, each
        // update walking the row's growing chain of versions (quadratic).
        await sql`create function users_counted() returns trigger language plpgsql as $$
          begin
            if tg_op = 'INSERT' then
              update user_count set n = n + (select count(*) from changed_users) where id = 1;
            else
              update user_count set n = n - (select count(*) from changed_users) where id = 1;
            end if;
            return null;
          end $$`.execute(db);
        await sql`create trigger users_counted_insert after insert on users referencing new table as changed_users for each statement execute function users_counted()`.execute(
          db,
        );
        await sql`create trigger users_counted_delete after delete on users referencing old table as changed_users for each statement execute function users_counted()`.execute(
          db,
        );
      } else {
        await sql`create trigger users_counted_insert after insert on users begin update user_count set n = n + 1 where id = 1; end`.execute(
          db,
        );
        await sql`create trigger users_counted_delete after delete on users begin update user_count set n = n - 1 where id = 1; end`.execute(
          db,
        );
      }
    },
  },
  '0013_dynamic_clients': {
    async up(db: Kysely<unknown>) {
      // Dynamic client registration (RFC 7591, RFC 7592; stores/client-registrations.ts): the
      // registration record of each dynamic client (its settings stay in `clients`), with the
      // SHA-256 of its registration access token and, to the day, its last use (the unused-client
      // clean-up reads it by last_used_at); and the SHA-256 of initial access tokens with their
      // expiry and how many registrations they have made of how many.
      await db.schema
        .createTable('client_registrations')
        .addColumn('client_id', 'varchar(100)', (c) => c.primaryKey())
        .addColumn('token_hash', 'varchar(64)', (c) => c.notNull())
        .addColumn('metadata', 'text', (c) => c.notNull())
        .addColumn('issued_at', 'bigint', (c) => c.notNull())
        .addColumn('last_used_at', 'bigint', (c) => c.notNull())
        .execute();
      await db.schema
        .createIndex('client_registrations_last_used')
        .on('client_registrations')
        .column('last_used_at')
        .execute();
      await db.schema
        .createTable('initial_access_tokens')
        .addColumn('token_hash', 'varchar(64)', (c) => c.primaryKey())
        .addColumn('kind', 'varchar(16)', (c) => c.notNull())
        .addColumn('max_registrations', 'integer', (c) => c.notNull())
        .addColumn('registrations', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('expires_at', 'bigint', (c) => c.notNull())
        .execute();
      await db.schema
        .createIndex('initial_access_tokens_expires')
        .on('initial_access_tokens')
        .column('expires_at')
        .execute();
    },
  },
  '0012_admin': {
    async up(db: Kysely<unknown>) {
      // A counter per kind of managed item, raised with every change through the
      // admin services; each node polls it (one primary-key read a second) and re-reads that kind
      // when it moved, so a change is in force on every node within about a second.
      await db.schema
        .createTable('admin_versions')
        .addColumn('kind', 'varchar(32)', (c) => c.primaryKey())
        .addColumn('version', 'bigint', (c) => c.notNull())
        .execute();
      // The audit events the management API queries (by time, name, client, subject; newest
      // first, a page at a time). Ids sort by time (stores/audit-events.ts), so each filter has
      // one index ending in the id. Removed after admin.auditRetentionSeconds.
      await db.schema
        .createTable('audit_events')
        .addColumn('id', 'varchar(40)', (c) => c.primaryKey())
        .addColumn('time', 'bigint', (c) => c.notNull())
        .addColumn('name', 'varchar(64)', (c) => c.notNull())
        .addColumn('client_id', 'varchar(255)')
        .addColumn('subject_id', 'varchar(255)')
        .addColumn('event', 'text', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('audit_events_name').on('audit_events').columns(['name', 'id']).execute();
      await db.schema.createIndex('audit_events_client').on('audit_events').columns(['client_id', 'id']).execute();
      await db.schema.createIndex('audit_events_subject').on('audit_events').columns(['subject_id', 'id']).execute();
    },
  },
  '0014_resources': {
    async up(db: Kysely<unknown>) {
      // stores/managed-resources.ts: identity resources, API scopes, API
      // resources and upstream identity providers created through /admin/v1, beside the config
      // file's. `kind` is identity_resource, api_scope, api_resource or identity_provider; `config`
      // the item's settings as JSON (an API resource's secrets as SHA-256 digests only). Changes
      // raise the admin_versions row `resources`.
      await db.schema
        .createTable('managed_resources')
        .addColumn('kind', 'varchar(32)', (c) => c.notNull())
        .addColumn('name', 'varchar(200)', (c) => c.notNull())
        .addColumn('config', 'text', (c) => c.notNull())
        .addColumn('updated_at', 'bigint', (c) => c.notNull())
        .addPrimaryKeyConstraint('managed_resources_pk', ['kind', 'name'])
        .execute();
    },
  },
  '0015_scim_indexes': {
    async up(db: Kysely<unknown>) {
      // SCIM at a million users (RFC 7644 §3.4.2; stores/directory.ts), read from EXPLAIN plans:
      // - `sw` on PostgreSQL is `LIKE 'prefix%'`, which a btree of the database's collation cannot
      //   answer unless that collation is C (en_US.UTF-8 and C.UTF-8 are not): a text_pattern_ops
      //   index (bytewise order) makes it an index range, for userName (lower-cased, so
      //   case-insensitive as RFC 7643 §2.1 wants), emails.value, externalId and group displayName.
      //   SQLite compares bytewise (BINARY) already and answers `sw` from the existing indexes.
      // - sortBy meta.lastModified / meta.created (and `gt`/`lt` on them, the incremental sync's
      //   filter) read every user and sorted them: an index per column, ending in the id that
      //   breaks ties, gives a page in index order on both dialects.
      if (db.getExecutor().adapter instanceof PostgresAdapter) {
        await sql`create index users_username_pattern on users (username_normalized text_pattern_ops)`.execute(db);
        await sql`create index users_external_id_pattern on users (external_id text_pattern_ops)`.execute(db);
        await sql`create index user_emails_value_pattern on user_emails (value_normalized text_pattern_ops)`.execute(
          db,
        );
        await sql`create index user_groups_display_name_pattern on user_groups (display_name_normalized text_pattern_ops)`.execute(
          db,
        );
      }
      await db.schema.createIndex('users_updated_at').on('users').columns(['updated_at', 'subject_id']).execute();
      await db.schema.createIndex('users_created_at').on('users').columns(['created_at', 'subject_id']).execute();
    },
  },
  '0016_client_removals': {
    async up(db: Kysely<unknown>) {
      // When a stored client id was last removed (stores/client-removals.ts): a token of that id
      // issued before `removed_at` (Unix seconds) is refused, also under a client later created
      // with the id; a JWT access token has no row that the removal could revoke. Written in the
      // transaction of every deletion of a `clients` row; `expires_at` (Unix seconds) is when the
      // last token the removed client could have had expires, and the clean-up deletes the row then.
      await db.schema
        .createTable('client_removals')
        .addColumn('client_id', 'varchar(255)', (c) => c.primaryKey())
        .addColumn('removed_at', 'bigint', (c) => c.notNull())
        .addColumn('expires_at', 'bigint', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('client_removals_expires').on('client_removals').column('expires_at').execute();
    },
  },
  '0017_participants_by_client': {
    async up(db: Kysely<unknown>) {
      // A client's deletion forgets its places in sessions (LogoutStore.forgetClient); the primary
      // key leads with sid, so without this each deletion (up to 100 unused dynamic clients a
      // housekeeping run) read the whole table, holding SQLite's writers meanwhile.
      await db.schema
        .createIndex('session_participants_client')
        .on('session_participants')
        .column('client_id')
        .execute();
    },
  },
  '0018_organizations': {
    async up(db: Kysely<unknown>) {
      // Organizations created through /admin/v1 (stores/sql-organizations.ts). `id` is the stable
      // id tokens will carry as org_id: random, never the name. `settings` the organization's
      // settings as JSON (displayName, domains, identityProviders, membership); `version` grows
      // with each change (its ETag). Changes raise the admin_versions row `organizations`.
      await db.schema
        .createTable('organizations')
        .addColumn('id', 'varchar(64)', (c) => c.primaryKey())
        .addColumn('name', 'varchar(100)', (c) => c.notNull().unique())
        .addColumn('settings', 'text', (c) => c.notNull())
        .addColumn('version', 'integer', (c) => c.notNull())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('updated_at', 'bigint', (c) => c.notNull())
        .execute();
      // Each stored organization's domains, one row each: the primary key keeps a domain to one
      // stored organization, whatever the order of concurrent writes.
      await db.schema
        .createTable('organization_domains')
        .addColumn('domain', 'varchar(253)', (c) => c.primaryKey())
        .addColumn('organization_id', 'varchar(64)', (c) => c.notNull())
        .execute();
      await db.schema
        .createIndex('organization_domains_organization')
        .on('organization_domains')
        .column('organization_id')
        .execute();
      // Members of stored and config-file organizations alike (a config-file organization's id is
      // derived from its name, so it has no row in `organizations`): `roles` a JSON array. Read by
      // organization (the primary key) and by subject (a user's organizations; their removal).
      await db.schema
        .createTable('organization_members')
        .addColumn('organization_id', 'varchar(64)', (c) => c.notNull())
        .addColumn('subject', 'varchar(255)', (c) => c.notNull())
        .addColumn('roles', 'text', (c) => c.notNull())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addPrimaryKeyConstraint('organization_members_pk', ['organization_id', 'subject'])
        .execute();
      await db.schema
        .createIndex('organization_members_subject')
        .on('organization_members')
        .column('subject')
        .execute();
    },
  },
  '0019_organization_scim': {
    async up(db: Kysely<unknown>) {
      // SCIM per organization (/scim/v2/organizations/{name}, scim/organization.ts). `provisioned`
      // 1: the organization's SCIM client created the user into it (its Keycloak 26 "managed"
      // members), which only then may change or delete the user; 0 for every other way in.
      await db.schema
        .alterTable('organization_members')
        .addColumn('provisioned', 'integer', (c) => c.notNull().defaultTo(0))
        .execute();
      // An organization's roles as SCIM Groups: one row per role name of an organization, with the
      // Group's stable id (random, kept when the role is renamed), externalId and version. Which
      // members hold a role stays in `organization_members.roles`; every write of a membership
      // adds the rows of its roles (stores/sql-organizations.ts).
      await db.schema
        .createTable('organization_groups')
        .addColumn('id', 'varchar(64)', (c) => c.primaryKey())
        .addColumn('organization_id', 'varchar(64)', (c) => c.notNull())
        .addColumn('name', 'varchar(100)', (c) => c.notNull())
        .addColumn('external_id', 'varchar(255)')
        .addColumn('version', 'integer', (c) => c.notNull())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('updated_at', 'bigint', (c) => c.notNull())
        .addUniqueConstraint('organization_groups_name', ['organization_id', 'name'])
        .execute();
      // The roles members already hold become Groups.
      const rows = await (db as Kysely<{ organization_members: { organization_id: string; roles: string } }>)
        .selectFrom('organization_members')
        .select(['organization_id', 'roles'])
        .execute();
      const roles = new Map<string, { organization_id: string; name: string }>();
      for (const r of rows)
        for (const name of JSON.parse(r.roles) as string[])
          roles.set(JSON.stringify([r.organization_id, name]), { organization_id: r.organization_id, name });
      const now = Math.floor(Date.now() / 1000);
      const values = [...roles.values()].map((r) => ({
        id: newId(),
        ...r,
        external_id: null,
        version: 1,
        created_at: now,
        updated_at: now,
      }));
      for (let i = 0; i < values.length; i += 500)
        await (db as Kysely<{ organization_groups: (typeof values)[number] }>)
          .insertInto('organization_groups')
          .values(values.slice(i, i + 500))
          .execute();
    },
  },
  '0020_server_secrets': {
    async up(db: Kysely<unknown>) {
      // Secrets that stay the same for the deployment's life on every node (stores/sql-secrets.ts),
      // unlike signing keys: the key of SAML persistent NameIDs, which an SP keeps as the user's
      // identity. `value` is sealed under SIGIL_DATA_KEY when one is set.
      await db.schema
        .createTable('server_secrets')
        .addColumn('name', 'varchar(64)', (c) => c.primaryKey())
        .addColumn('value', 'text', (c) => c.notNull())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .execute();
    },
  },
  '0021_webhooks': webhooksMigration,
  '0022_saml_participants': {
    async up(db: Kysely<unknown>) {
      // A SAML service provider joins a session as a participant (SAML Profiles §4.4): its single
      // logout repeats the NameID and SessionIndex it was given, kept here as JSON.
      await db.schema.alterTable('session_participants').addColumn('saml', 'text').execute();
    },
  },
  '0023_saml_service_providers': samlServiceProvidersMigration,
  '0024_saml_soap_logout': {
    async up(db: Kysely<unknown>) {
      // A session ended without its browser sends its SAML SPs a LogoutRequest over SOAP (SAML
      // Bindings §3.2) from the back-channel outbox: the delivery keeps what the request names (JSON).
      await db.schema.alterTable('logout_deliveries').addColumn('saml', 'text').execute();
    },
  },
  '0025_password_change_required': {
    async up(db: Kysely<unknown>) {
      // A temporary password an administrator set: the next sign-in with it must choose a new one
      // before any session or code is issued (ui/password-change-required.ts).
      await db.schema
        .alterTable('users')
        .addColumn('password_change_required', 'integer', (c) => c.notNull().defaultTo(0))
        .execute();
    },
  },
  '0026_audit_partial_indexes': {
    async up(db: Kysely<unknown>) {
      // Most audit events are tokens issued to a client for itself, which have no subject: the
      // client and subject indexes keep only rows that have one (`client_id = ?` implies it, so
      // queries use them as before), and storing such an event updates one index fewer.
      for (const [index, column] of [
        ['audit_events_client', 'client_id'],
        ['audit_events_subject', 'subject_id'],
      ] as const) {
        await db.schema.dropIndex(index).execute();
        await db.schema
          .createIndex(index)
          .on('audit_events')
          .columns([column, 'id'])
          .where(sql.ref(column), 'is not', null)
          .execute();
      }
    },
  },
};

/** Kysely migration provider over the list above. */
export const migrationProvider: MigrationProvider = {
  getMigrations: async () => migrations,
};
