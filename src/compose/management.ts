/**
 * Builds the management group: the admin services (clients, keys, sessions, users, SCIM, audit,
 * grants, resources, organizations), dynamic client registration, and the reads that keep a
 * node's stored clients, resources and organizations current.
 */
import { AuditLog } from '../admin/audit.js';
import { ClientAdmin } from '../admin/clients.js';
import { GrantAdmin } from '../admin/grants.js';
import { KeyAdmin } from '../admin/keys.js';
import { ClientRegistrations } from '../admin/registrations.js';
import { ResourceAdmin } from '../admin/resources.js';
import { SessionAdmin } from '../admin/sessions.js';
import { UserAdmin } from '../admin/users.js';
import { fetchBoundedText } from '../clients/client-keys.js';
import { ConfigError, type ConfigOverrides } from '../config/loader.js';
import { OrganizationGroupAdmin } from '../admin/organization-groups.js';
import { OrganizationAdmin } from '../admin/organizations.js';
import { OrganizationScim } from '../scim/organization.js';
import { ScimService } from '../scim/service.js';
import type { Infrastructure, ManagementServices, ProtocolServices, SignInServices } from '../services.js';
import type { UserDirectory } from '../users/directory.js';
import { LdapDirectory } from '../users/ldap/ldap-directory.js';
import type { SigilOptions } from './options.js';
import { StoredChanges } from './changes.js';
import { WebhookAdmin } from '../admin/webhooks.js';
import { SamlServiceProviderAdmin } from '../admin/saml-service-providers.js';
import { WebhookDeliverer } from '../webhooks/delivery.js';
import { WebhookRegistry } from '../webhooks/registry.js';

/** Where the config came from: a stored client or resource is checked as if it were in the config file. */
export interface ConfigSource {
  /** The config object as given to `createSigil`. */
  raw: unknown;
  overrides: ConfigOverrides | undefined;
  /** The extension grants' names (a client may list them). */
  extensionGrants: readonly string[];
  dataKey: Uint8Array | undefined;
}

/** The management group, the reads of stored changes, and the node's webhook deliverer (not started). */
export interface BuiltManagement {
  management: ManagementServices;
  changes: StoredChanges;
  webhookDeliverer: WebhookDeliverer;
}

/**
 * The webhooks of a node: the registry in force (which also routes every event the store writes
 * to the outbox), their admin, and the deliverer, which disables a webhook through the admin.
 */
function buildWebhooks(infra: Infrastructure, dataKey: Uint8Array | undefined) {
  const { config: cfg, store, log } = infra;
  const registry = new WebhookRegistry(cfg.webhooks);
  store.webhookOutbox.configure(registry.subscribers, cfg.webhookDelivery.retrySeconds);
  let deliverer: WebhookDeliverer | undefined;
  const admin = new WebhookAdmin(store, {
    registry,
    log,
    ...(dataKey ? { dataKey } : {}),
    deliverNow: (ids) => deliverer?.deliverNow(ids) ?? Promise.resolve(),
  });
  deliverer = new WebhookDeliverer(store.webhookOutbox, registry, cfg.webhookDelivery, log, {
    disable: (name, reason) => admin.disableGone(name, reason),
  });
  return { admin, deliverer };
}

/** The user administration: built before the sign-in group, which writes users through it. */
export interface UserManagement {
  /** The one writer of users (stored users; names checked against config users and directories). */
  userAdmin: UserAdmin;
  sessionAdmin: SessionAdmin;
  /** The config's directories (LDAP), then the library user's, in the order they are asked. */
  directories: UserDirectory[];
}

/**
 * The user directories: the config's `userDirectories` (LDAP), then `options.userDirectories`.
 * @throws ConfigError naming a library directory without `findByUsername`: without it a directory
 *   could not say which names it holds, and a stored user could take one of its users' names
 *   (plain JavaScript callers have no type check to tell them)
 */
function userDirectories(infra: Infrastructure, options: SigilOptions): UserDirectory[] {
  const own = options.userDirectories ?? [];
  const lacking = own
    .filter((d) => typeof d.findByUsername !== 'function')
    .map((d) => `userDirectories: "${String(d.name)}" has no findByUsername(username) (see UserDirectory)`);
  if (lacking.length > 0) throw new ConfigError(lacking);
  return [...infra.config.userDirectories.map((d) => new LdapDirectory(d, infra.limiter)), ...own];
}

/**
 * Builds the user administration and the user directories it checks names against.
 * @throws ConfigError as `userDirectories`
 */
export function buildUserManagement(
  infra: Infrastructure,
  protocol: Pick<ProtocolServices, 'logout'>,
  options: SigilOptions,
): UserManagement {
  const { config: cfg, store, log } = infra;
  const directories = userDirectories(infra, options);
  const sessionAdmin = new SessionAdmin(store, cfg, log, protocol.logout);
  return { userAdmin: new UserAdmin(store, cfg, sessionAdmin, directories), sessionAdmin, directories };
}

/** Builds the management group over the other groups. */
export function buildManagement(
  infra: Infrastructure,
  protocol: ProtocolServices,
  signIn: Pick<SignInServices, 'users'>,
  users: UserManagement,
  source: ConfigSource,
): BuiltManagement {
  const { config: cfg, store, log, events, keys } = infra;
  const { resources, upstream, apiSecrets, clients, tokens, clientKeys, organizations } = protocol;
  const checked = {
    config: cfg,
    raw: source.raw,
    overrides: source.overrides,
    extensionGrants: source.extensionGrants,
    log,
  };
  const resourceAdmin = new ResourceAdmin(store, {
    ...checked,
    live: { resources, upstream, apiSecrets },
    ...(source.dataKey ? { dataKey: source.dataKey } : {}),
  });
  const clientAdmin = new ClientAdmin(store, {
    ...checked,
    resources: resourceAdmin,
    organizations: () => organizations.all().map((o) => o.name),
  });
  const organizationAdmin = new OrganizationAdmin(store, { live: organizations, upstream, users: signIn.users, log });
  const webhooks = buildWebhooks(infra, source.dataKey);
  // Stored SAML SPs join the config file's in the SSO endpoints' registry; a metadataUrl is
  // fetched under the one development switch of every fetch of a caller-chosen URL.
  const samlServiceProviders = new SamlServiceProviderAdmin(store, {
    live: protocol.saml.serviceProviders,
    configured: cfg.samlServiceProviders,
    allowLoopback: cfg.clientIdMetadataDocuments.allowLoopback,
    organizationExists: (name) => organizations.byName(name) !== undefined,
    log,
  });
  const changes = new StoredChanges({
    store,
    clients,
    clientAdmin,
    resourceAdmin,
    organizationAdmin,
    webhookAdmin: webhooks.admin,
    samlServiceProviderAdmin: samlServiceProviders,
    users: signIn.users,
  });
  const registrations = new ClientRegistrations(store.registrations, {
    config: cfg,
    issuer: cfg.issuer,
    admin: clientAdmin,
    clients,
    tokens,
    scopes: () => ({ all: resources.allScopeNames(), identity: [...resources.identity.keys()] }),
    idTokenAlg: tokens.signingAlgorithmFor({ profile: null }),
    reload: () => changes.reloadClients(),
    // The registrant chose sector_identifier_uri: fetched under the SSRF guard.
    fetchText: (url) => fetchBoundedText(url, {}, clientKeys.guardedGet),
    events,
    hooks: protocol.hooks,
    log,
  });
  clients.onLookup = (id) => registrations.touch(id);
  const { userAdmin, sessionAdmin } = users;
  const scimBase = `${cfg.issuer}/scim/v2`;
  // SCIM per organization (/scim/v2/organizations/{name}): users written by `userAdmin`, ended
  // memberships by `organizationAdmin`, the organization's roles as groups by their own admin.
  const organizationScim = new OrganizationScim(
    {
      store,
      events,
      users: userAdmin,
      organizations: organizationAdmin,
      groups: new OrganizationGroupAdmin(store, cfg.admin.userRole),
    },
    scimBase,
  );
  const management: ManagementServices = {
    registrations,
    management: {
      clients: clientAdmin,
      keys: new KeyAdmin(store.keys, cfg, source.dataKey),
      sessions: sessionAdmin,
      users: userAdmin,
      // SCIM 2.0 (/scim/v2): its users are written by `userAdmin`; its groups, which the
      // console's user pages use too, live only here.
      scim: new ScimService(store, events, userAdmin, scimBase, cfg.admin.userRole),
      organizationScim,
      audit: new AuditLog(store.audit, cfg.admin.auditRetentionSeconds, log),
      grants: new GrantAdmin(store.grants),
      resources: resourceAdmin,
      organizations: organizationAdmin,
      webhooks: webhooks.admin,
      samlServiceProviders,
      reloadClients: () => changes.reloadClients(),
      reloadKeys: () => keys.refresh(),
    },
  };
  return { management, changes, webhookDeliverer: webhooks.deliverer };
}
