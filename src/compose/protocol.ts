/**
 * Builds the protocol group: clients (with client metadata documents), resources, upstream
 * providers, organizations, synchronous hooks, tokens, client keys, DPoP, pending interactions, logout with its
 * deliverer and the SAML identity provider; and the token endpoint's grant registry.
 */
import { ClientRegistry, type ApiSecrets } from '../clients/registry.js';
import { ClientKeys, hasCallerChosenUrls } from '../clients/client-keys.js';
import { ClientMetadataDocuments } from '../clients/metadata-documents.js';
import { UpstreamProviders } from '../federation/upstream.js';
import { grantRegistry } from '../grants/built-in.js';
import { defaultResourceOwnerValidator } from '../grants/password.js';
import type { GrantRegistry } from '../grants/registry.js';
import { DPoPNonces } from '../limits/dpop-nonces.js';
import { Organizations } from '../organizations/registry.js';
import { LogoutDeliverer } from '../logout/delivery.js';
import { LogoutService } from '../logout/logout.js';
import { Resources } from '../resources/scopes.js';
import { SamlIdentityProvider } from '../saml/identity-provider.js';
import { Interactions } from '../stores/records/interactions.js';
import type { Tracing } from '../telemetry/tracing.js';
import { TokenService } from '../tokens/tokens.js';
import { SyncHooks } from '../webhooks/hooks.js';
import { DPoPVerifier } from '../validation/dpop.js';
import type { Infrastructure, ProtocolServices } from '../services.js';
import type { SigilOptions } from './options.js';

/** The protocol group and what the composition root keeps of its making. */
export interface BuiltProtocol {
  protocol: ProtocolServices;
  /** The token endpoint's grants: built-in and extension grants. */
  grantTypes: GrantRegistry;
  /** Back-channel logout delivery: started and stopped with the server. */
  deliverer: LogoutDeliverer;
}

/**
 * Builds the protocol group over the infrastructure.
 * @throws Error when an extension grant reuses a registered grant type's name; ConfigError when a
 *   SAML service provider's metadata is refused
 */
export function buildProtocol(
  infra: Infrastructure,
  options: SigilOptions,
  tracing: Tracing | undefined,
): BuiltProtocol {
  const { config: cfg, store, keys, limiter, log } = infra;
  const grantTypes = grantRegistry(
    options.resourceOwnerValidator ?? defaultResourceOwnerValidator,
    options.extensionGrants ?? [],
  );
  const resources = new Resources(cfg);
  const documents = new ClientMetadataDocuments(
    cfg.clientIdMetadataDocuments,
    () => resources.allScopeNames(),
    limiter,
    cfg.pendingLimits.windowSeconds,
  );
  if (documents.settings.enabled && documents.settings.allowLoopback)
    log.warn(
      'clientIdMetadataDocuments.allowLoopback is on: client metadata documents may be fetched from loopback addresses (development only)',
    );
  const clients = new ClientRegistry(cfg.clients, documents);
  const saml = new SamlIdentityProvider(
    cfg.saml,
    cfg.samlServiceProviders,
    cfg.issuer,
    keys,
    store.secrets,
    infra.replay,
    options.dataKey,
  );
  const { deliverer, logout } = logoutServices(infra, clients, saml);
  const upstream = new UpstreamProviders(cfg.identityProviders, cfg.issuer);
  // Upstream providers' calls and each back-channel logout delivery (`attempt`, the deliverer's
  // private method that posts one logout token) get spans too.
  tracing?.traceMethods(upstream, 'upstream', ['start', 'finish'] satisfies (keyof UpstreamProviders)[]);
  tracing?.traceMethods(deliverer, 'logout.delivery', ['attempt'], true);
  const hooks = new SyncHooks(cfg.hooks, options.hooks ?? {}, log);
  // Each hook call is a span of its own (`hook.preToken`, ...), a child of the request's.
  tracing?.traceMethods(hooks, 'hook', hooks.names());
  const protocol: ProtocolServices = {
    clients,
    resources,
    upstream,
    hooks,
    tokens: new TokenService(cfg.issuer, keys, store.records, resources, options.profileService, store.organizations),
    // One development switch (clientIdMetadataDocuments.allowLoopback) for every fetch of a caller-chosen URL.
    clientKeys: new ClientKeys(cfg.clientIdMetadataDocuments.allowLoopback),
    dpop: new DPoPVerifier(
      infra.replay,
      new DPoPNonces(store.records.dpopNonces, cfg.dpop.nonceLifetimeSeconds),
      cfg.dpop,
    ),
    // Filled by the resource admin's reload (config-file and stored API resources).
    apiSecrets: new Map<string, ApiSecrets>(),
    logout,
    interactions: new Interactions(store.grants),
    // The config file's; the organization admin's reload adds the stored ones.
    organizations: new Organizations(cfg.organizations),
    saml,
  };
  return { protocol, grantTypes, deliverer };
}

/**
 * Logout and its deliverer. They refer to each other: the deliverer's sweep ends expired sessions
 * through the service, which sends through the deliverer. The SAML SPs in force say where their
 * SOAP LogoutRequests go, and the identity provider sends them.
 */
function logoutServices(
  infra: Infrastructure,
  clients: ClientRegistry,
  saml: SamlIdentityProvider,
): { deliverer: LogoutDeliverer; logout: LogoutService } {
  const { config: cfg, store, keys, log } = infra;
  const callerChosen = (clientId: string) => {
    const client = clients.get(clientId);
    return client === undefined || hasCallerChosenUrls(client);
  };
  const guard = { callerChosen, allowLoopback: cfg.clientIdMetadataDocuments.allowLoopback };
  const deliverer: LogoutDeliverer = new LogoutDeliverer(
    store.logout,
    keys,
    cfg.issuer,
    log,
    cfg.backChannelLogout,
    guard,
    () => logout.endExpired(),
    saml.soapLogout,
  );
  const samlEndpoints = {
    soapUrl: (entityId: string) => saml.serviceProviders.get(entityId)?.soapSloUrl ?? undefined,
    frontChannel: (entityId: string) => Boolean(saml.serviceProviders.get(entityId)?.sloUrl),
  };
  const logout = new LogoutService(
    store.logout,
    clients,
    cfg.backChannelLogout.retrySeconds,
    (ids) => deliverer.deliverNow(ids),
    samlEndpoints,
    log,
  );
  return { deliverer, logout };
}
