/**
 * Builds the management group: the admin services (clients, keys, sessions, users, SCIM, audit,
 * grants, resources), dynamic client registration, and the reads that keep a node's stored
 * clients and resources current.
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
import type { ConfigOverrides } from '../config/loader.js';
import { ScimService } from '../scim/service.js';
import type { Infrastructure, ManagementServices, ProtocolServices, SignInServices } from '../services.js';
import type { UserDirectory } from '../users/directory.js';
import { StoredChanges } from './changes.js';

/** Where the config came from: a stored client or resource is checked as if it were in the config file. */
export interface ConfigSource {
  /** The config object as given to `createSigil`. */
  raw: unknown;
  overrides: ConfigOverrides | undefined;
  /** The extension grants' names (a client may list them). */
  extensionGrants: readonly string[];
  dataKey: Uint8Array | undefined;
}

/** The management group and the reads of stored changes. */
export interface BuiltManagement {
  management: ManagementServices;
  changes: StoredChanges;
}

/** Builds the management group over the other groups. */
export function buildManagement(
  infra: Infrastructure,
  protocol: ProtocolServices,
  signIn: Pick<SignInServices, 'users'>,
  directories: readonly UserDirectory[],
  source: ConfigSource,
): BuiltManagement {
  const { config: cfg, store, log, events, keys } = infra;
  const { resources, upstream, apiSecrets, clients, tokens, logout, clientKeys } = protocol;
  const checked = { config: cfg, raw: source.raw, overrides: source.overrides, extensionGrants: source.extensionGrants, log };
  const resourceAdmin = new ResourceAdmin(store, { ...checked, live: { resources, upstream, apiSecrets }, ...(source.dataKey ? { dataKey: source.dataKey } : {}) });
  const clientAdmin = new ClientAdmin(store, { ...checked, resources: resourceAdmin });
  const changes = new StoredChanges({ store, clients, clientAdmin, resourceAdmin, users: signIn.users });
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
    log,
  });
  clients.onLookup = (id) => registrations.touch(id);
  const sessionAdmin = new SessionAdmin(store, cfg, log, logout);
  const userAdmin = new UserAdmin(store, cfg, sessionAdmin, directories);
  const management: ManagementServices = {
    registrations,
    management: {
      clients: clientAdmin,
      keys: new KeyAdmin(store.keys, cfg, source.dataKey),
      sessions: sessionAdmin,
      users: userAdmin,
      // SCIM 2.0 (/scim/v2) and the console's user pages: one service, whose activation and
      // removal of users go through `userAdmin` (sign-out everywhere, audit).
      scim: new ScimService(store, events, userAdmin, `${cfg.issuer}/scim/v2`, cfg.admin.userRole),
      audit: new AuditLog(store.audit, cfg.admin.auditRetentionSeconds, log),
      grants: new GrantAdmin(store.grants),
      resources: resourceAdmin,
      reloadClients: () => changes.reloadClients(),
      reloadKeys: () => keys.refresh(),
    },
  };
  return { management, changes };
}
