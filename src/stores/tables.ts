/**
 * The store's tables as Kysely sees them: one row type per table and `Database`, which every
 * store module types its Kysely instance with. The DDL lives in the migrations
 * (`migrations.ts`); these types follow it. Columns the migrations give a default and no module
 * writes at insert are `Generated`.
 *
 * Times are Unix seconds unless a table says otherwise; booleans are integers 0 and 1 (SQLite has
 * no boolean type); JSON is stored as text.
 */
import type { Generated } from 'kysely';

/** Every grant artefact under the hash of its handle (0001_initial; `grant-store.ts`). */
export interface GrantsTable {
  key: string;
  type: string;
  client_id: string;
  subject_id: string | null;
  family_id: string;
  session_id: string | null;
  data: string;
  created_at: number;
  expires_at: number;
  consumed_at: number | null;
  revoked_at: number | null;
}

/** Signing keys (0001_initial; `activates_at` from 0002_key_lifecycle_and_leases). */
export interface SigningKeysTable {
  kid: string;
  alg: string;
  private_jwk: string;
  public_jwk: string;
  created_at: number;
  activates_at: number;
  retired_at: number | null;
}

/** Stored clients, their settings as JSON text (0003_stored_clients). */
export interface ClientsTable {
  client_id: string;
  config: string;
  created_at: number;
}

/** When each stored client id was last removed, kept while its tokens could live (0016_client_removals). */
export interface ClientRemovalsTable {
  client_id: string;
  removed_at: number;
  expires_at: number;
}

/** Named leases: which node runs a periodic job until when (0002_key_lifecycle_and_leases). */
export interface LeasesTable {
  name: string;
  holder: string;
  until: number;
}

/** Users (0001_initial; `external_id`, `version`, `updated_at` from 0009_people). */
export interface UsersTable {
  subject_id: string;
  username: string;
  username_normalized: string;
  /** '' for no tenant. */
  tenant: string;
  password_hash: string | null;
  claims: string;
  is_active: number;
  created_at: Generated<number>;
  external_id: string | null;
  /** Grows by one at every change (SCIM `meta.version`). */
  version: Generated<number>;
  updated_at: Generated<number>;
  /** 1: the password was set by an administrator, to be changed at the next sign-in (0025). */
  password_change_required: Generated<number>;
}

/** The number of users, kept by triggers on `users` (0011_scim); one row, id 1. */
export interface UserCountTable {
  id: number;
  n: number;
}

/** Users' email addresses (0009_people). */
export interface UserEmailsTable {
  subject_id: string;
  value: string;
  value_normalized: string;
  type: string | null;
  is_primary: number;
  verified: number;
}

/** SCIM groups (0009_people). */
export interface UserGroupsTable {
  id: string;
  display_name: string;
  display_name_normalized: string;
  external_id: string | null;
  version: Generated<number>;
  created_at: number;
  updated_at: number;
}

/** Direct members of the groups (0009_people). */
export interface GroupMembersTable {
  group_id: string;
  subject_id: string;
}

/** Upstream identities linked to local users (0005_external_links). */
export interface ExternalLinksTable {
  key: string;
  provider: string;
  upstream_subject: string;
  subject_id: string;
  created_at: number;
}

/** Users' second factors (0008_mfa). */
export interface MfaFactorsTable {
  id: string;
  subject_id: string;
  kind: string;
  label: string;
  data: string;
  counter: number;
  created_at: number;
  last_used_at: number | null;
}

/** WebAuthn credentials: passkeys and security keys (0007_webauthn). */
export interface WebAuthnCredentialsTable {
  id: string;
  subject_id: string;
  kind: string;
  public_key: string;
  counter: number;
  transports: string;
  name: string;
  backed_up: number;
  created_at: number;
  last_used_at: number | null;
}

/** The clients that took part in each session (0006_logout). */
export interface SessionParticipantsTable {
  sid: string;
  client_id: string;
  subject_id: string;
  expires_at: number;
  /** A SAML SP's NameID and SessionIndex as JSON (`SamlParticipation`, 0022_saml_participants); null for a client. */
  saml: string | null;
}

/** The back-channel logout outbox (0006_logout). */
export interface LogoutDeliveriesTable {
  id: string;
  client_id: string;
  uri: string;
  subject_id: string;
  sid: string;
  attempts: number;
  created_at: number;
  next_attempt_at: number;
  give_up_at: number;
  lease_holder: string | null;
  lease_until: number;
  last_error: string | null;
  /** A SAML SP's LogoutRequest over SOAP: its `SamlParticipation` as JSON (0024_saml_soap_logout); null for a logout token. */
  saml: string | null;
}

/** A change counter per kind of managed item (`clients`, `resources`, `organizations`; 0012_admin). */
export interface AdminVersionsTable {
  kind: string;
  version: number;
}

/** Stored audit events; `time` in milliseconds since the epoch (0012_admin). */
export interface AuditEventsTable {
  id: string;
  time: number;
  name: string;
  client_id: string | null;
  subject_id: string | null;
  event: string;
}

/** Dynamic clients' registration records (0013_dynamic_clients). */
export interface ClientRegistrationsTable {
  client_id: string;
  token_hash: string;
  metadata: string;
  issued_at: number;
  last_used_at: number;
}

/** Initial access tokens of dynamic client registration (0013_dynamic_clients). */
export interface InitialAccessTokensTable {
  token_hash: string;
  kind: string;
  max_registrations: number;
  registrations: number;
  expires_at: number;
}

/** Resources and upstream providers managed at run time (0014_resources). */
export interface ManagedResourcesTable {
  kind: string;
  name: string;
  config: string;
  updated_at: number;
}

/** Organizations managed at run time; `settings` JSON, `version` the ETag's (0018_organizations). */
export interface OrganizationsTable {
  id: string;
  name: string;
  settings: string;
  version: number;
  created_at: number;
  updated_at: number;
}

/** The domains of the stored organizations, one owner each (0018_organizations). */
export interface OrganizationDomainsTable {
  domain: string;
  organization_id: string;
}

/** Members of organizations, stored and config-file ones; `roles` a JSON array (0018_organizations). */
export interface OrganizationMembersTable {
  organization_id: string;
  subject: string;
  roles: string;
  created_at: number;
  /** 1 when the organization's SCIM client created the user into it (0019_organization_scim). */
  provisioned: Generated<number>;
}

/** An organization's roles as SCIM Groups, with stable ids (0019_organization_scim). */
export interface OrganizationGroupsTable {
  id: string;
  organization_id: string;
  name: string;
  external_id: string | null;
  version: number;
  created_at: number;
  updated_at: number;
}

/** Named server secrets that never rotate, e.g. the key of SAML persistent NameIDs (0020_server_secrets). */
export interface ServerSecretsTable {
  name: string;
  value: string;
  created_at: number;
}

/** Webhooks managed at run time (0021_webhooks): `events` a JSON array, `secrets` JSON, sealed when a data key is set. */
export interface WebhooksTable {
  name: string;
  url: string;
  events: string;
  secrets: string;
  version: number;
  created_at: number;
  updated_at: number;
}

/** Disabled webhooks, config-file and stored alike (0021_webhooks). */
export interface WebhookDisabledTable {
  name: string;
  disabled_at: number;
  reason: string;
}

/** The webhook outbox: one delivery per webhook and event (0021_webhooks). */
export interface WebhookDeliveriesTable {
  seq: Generated<number>;
  id: string;
  webhook: string;
  type: string;
  order_key: string;
  payload: string;
  /** `pending`, `delivered` or `failed`. */
  status: string;
  attempts: number;
  created_at: number;
  next_attempt_at: number;
  give_up_at: number;
  lease_holder: string | null;
  lease_until: number;
  last_status_code: number | null;
  last_attempt_at: number | null;
  last_error: string | null;
}

/** SAML service providers managed at run time (0023_saml_service_providers): `settings` JSON, `key` the entity ID's SHA-256. */
export interface SamlServiceProvidersTable {
  key: string;
  entity_id: string;
  settings: string;
  version: number;
  created_at: number;
  updated_at: number;
}

/** The store's schema, as every store module's Kysely instance is typed. */
export interface Database {
  grants: GrantsTable;
  signing_keys: SigningKeysTable;
  clients: ClientsTable;
  client_removals: ClientRemovalsTable;
  leases: LeasesTable;
  users: UsersTable;
  user_count: UserCountTable;
  user_emails: UserEmailsTable;
  user_groups: UserGroupsTable;
  group_members: GroupMembersTable;
  external_links: ExternalLinksTable;
  mfa_factors: MfaFactorsTable;
  webauthn_credentials: WebAuthnCredentialsTable;
  session_participants: SessionParticipantsTable;
  logout_deliveries: LogoutDeliveriesTable;
  admin_versions: AdminVersionsTable;
  audit_events: AuditEventsTable;
  client_registrations: ClientRegistrationsTable;
  initial_access_tokens: InitialAccessTokensTable;
  managed_resources: ManagedResourcesTable;
  organizations: OrganizationsTable;
  organization_domains: OrganizationDomainsTable;
  organization_members: OrganizationMembersTable;
  organization_groups: OrganizationGroupsTable;
  server_secrets: ServerSecretsTable;
  webhooks: WebhooksTable;
  webhook_disabled: WebhookDisabledTable;
  webhook_deliveries: WebhookDeliveriesTable;
  saml_service_providers: SamlServiceProvidersTable;
}
