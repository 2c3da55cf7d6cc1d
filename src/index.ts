/**
 * Library entry: `createSigil(config)` builds a provider (store, keys, services, Fastify app)
 * from a config object, as the config file gives it.
 */
import { AccountEmail } from './email/account-email.js';
import { Mailer } from './email/mailer.js';
import { productName } from './config/product-name.js';
import { isIP } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { pino, type Logger } from 'pino';
import { ClientAdmin } from './admin/clients.js';
import { ClientRegistrations } from './admin/registrations.js';
import { KeyAdmin } from './admin/keys.js';
import { SessionAdmin } from './admin/sessions.js';
import { UserAdmin } from './admin/users.js';
import { ScimService } from './scim/service.js';
import { AuditLog } from './admin/audit.js';
import { GrantAdmin } from './admin/grants.js';
import { ResourceAdmin } from './admin/resources.js';
import { ConfigError, type ConfigOverrides, issuerPath, resolveConfig } from './config/loader.js';
import type { SigilContext } from './context.js';
import { EventBus, type EventListener } from './events/events.js';
import { type ExtensionGrant, extensionGrantHandler } from './grants/extension.js';
import { authorizationCodeGrant } from './grants/authorization-code.js';
import { clientCredentialsGrant } from './grants/client-credentials.js';
import { deviceCodeGrant } from './grants/device-code.js';
import { DEVICE_CODE_GRANT } from './endpoints/device-authorization.js';
import { Interactions } from './stores/records/interactions.js';
import { Pages } from './page-kit/pages.js';
import { loadLook } from './page-kit/look.js';
import { relyingPartyOf, WebAuthnService } from './mfa/webauthn.js';
import { PasskeyCeremonies } from './mfa/passkey-ceremonies.js';
import { UpstreamProviders } from './federation/upstream.js';
import { SessionService } from './users/sessions.js';
import { KnownBrowsers } from './users/known-browsers.js';
import { MfaService } from './mfa/factors.js';
import { FactorEnrollment } from './mfa/enrollment.js';
import { SecondStepService } from './mfa/second-step.js';
import { LogoutDeliverer } from './logout/delivery.js';
import { LogoutService } from './logout/logout.js';
import { defaultResourceOwnerValidator, passwordGrant, type ResourceOwnerValidator } from './grants/password.js';
import { refreshTokenGrant } from './grants/refresh-token.js';
import { GrantRegistry } from './grants/registry.js';
import { tokenExchangeGrant } from './grants/token-exchange.js';
import { buildApp, mountSigil } from './app.js';
import { buildMetricsApp, RequestMetrics } from './http/metrics.js';
import { DomainMetrics } from './telemetry/metrics.js';
import { startTracing, type Tracing } from './telemetry/tracing.js';
import type { GrantStore } from './stores/grant-store.js';
import type { LogoutStore } from './stores/types.js';
import { KeyRing, parseDataKey } from './keys/keys.js';
import { startHousekeeping } from './stores/housekeeping.js';
import { clientsNamingStoredUsers } from './clients/stored-clients.js';
import { openStore } from './stores/sql.js';
import { TokenService } from './tokens/tokens.js';
import { UserService } from './users/users.js';
import { DirectoryUnavailable, type UserDirectory } from './users/directory.js';
import { LdapDirectory } from './users/ldap/ldap-directory.js';
import type { ProfileService } from './tokens/profile.js';
import { type ApiSecrets, ClientRegistry } from './clients/registry.js';
import { ClientKeys, fetchBoundedText, hasCallerChosenUrls } from './clients/client-keys.js';
import { ClientMetadataDocuments } from './clients/metadata-documents.js';
import { FailureLimiter, MemoryFailureCounters, RedisFailureCounters } from './limits/failure-limiter.js';
import { PrimaryFailureCounters } from './limits/primary-counters.js';
import { ReplayCache } from './limits/replay-cache.js';
import { Resources } from './resources/scopes.js';
import { DPoPNonces } from './limits/dpop-nonces.js';
import { DPoPVerifier } from './validation/dpop.js';
import { AccountService } from './users/account.js';

export { ConfigError, type ConfigOverrides, type ResolvedConfig } from './config/loader.js';
export type { ConfigInput, Config, ClientConfig } from './config/schema.js';
export { OAuthError } from './protocol/errors.js';
export type { SigilEvent, SigilEventName, EventListener } from './events/events.js';
export type { ExtensionGrant, ExtensionGrantContext, ExtensionGrantResult } from './grants/extension.js';
export type { DPoPProof } from './validation/dpop.js';
export type { ResourceOwnerValidator, ResourceOwnerRequest } from './grants/password.js';
export { TOKEN_EXCHANGE, ACCESS_TOKEN_TYPE } from './grants/token-exchange.js';
export type { User } from './users/users.js';
export { DirectoryUnavailable, type UserDirectory } from './users/directory.js';
export type { ProfileService, ProfileDataRequest, ProfileCaller } from './tokens/profile.js';

/** The store calls that get a span of their own when tracing is on: every grant-table and logout-store call. */
const TRACED_GRANT_CALLS = ['put', 'putOnce', 'get', 'getRecent', 'consume', 'update', 'replaceData', 'save', 'revoke', 'revokeFamily'] as const satisfies readonly (keyof GrantStore)[];
const TRACED_LOGOUT_CALLS = ['addParticipant', 'endSession', 'liveSessions', 'expiredSessions', 'claimDeliveries', 'finishDelivery', 'retryDelivery'] as const satisfies readonly (keyof LogoutStore)[];

/** Options of `createSigil` beyond the config file. */
export interface SigilOptions {
  /** Flags and environment values that win over the config. */
  overrides?: ConfigOverrides;
  /** A pino logger; default: a pino logger at the config's `logLevel` on stdout. */
  logger?: Logger;
  /**
   * Extension grants to register (RFC 6749 §4.5); clients list them by name. A client's grant type
   * that is neither built in nor registered here stops the start (ConfigError, "did you mean").
   */
  extensionGrants?: ExtensionGrant[];
  /** Replaces the built-in check of the password grant's credentials. */
  resourceOwnerValidator?: ResourceOwnerValidator;
  /**
   * Your own user directories (e.g. over an existing database), asked in order after config users,
   * stored users and the config's `userDirectories`, at the login page, the password grant and
   * wherever a user is looked up by subject. See `UserDirectory` for the guarantees they give.
   */
  userDirectories?: UserDirectory[];
  /** Decides the user claims released in tokens and at userinfo, and whether a user is still active (`ProfileService`). */
  profileService?: ProfileService;
  /** Redis for counters shared by several nodes (failure limits); default: `SIGIL_REDIS_URL`. */
  redisUrl?: string;
  /**
   * Without Redis, keep the failure counters and request quotas in the cluster primary (set by
   * `sigil start --workers` in its workers, whose primary answers; see `PrimaryFailureCounters`)
   * instead of this process's memory, so the limits hold for all workers together.
   */
  countersInPrimary?: boolean;
  /** Key encrypting private signing keys at rest; default: from `SIGIL_DATA_KEY` (32 bytes, base64 or hex). */
  dataKey?: Uint8Array;
}

/** A provider instance. */
export interface Sigil {
  /** The Fastify app with every endpoint; `listen` it or `inject` requests. */
  app: FastifyInstance;
  context: SigilContext;
  /**
   * The management app: `GET /metrics` (Prometheus text) and nothing else, never on `app`.
   * `listenMetrics` listens it where the config's `metrics` says; or listen it yourself.
   */
  metricsApp: FastifyInstance;
  /**
   * Starts the management listener at the config's `metrics` host and port.
   * @returns its origin, e.g. `http://127.0.0.1:9464`, or null when `metrics` is false.
   * @throws Error naming the address when it cannot listen there (e.g. the port is in use).
   */
  listenMetrics(): Promise<string | null>;
  /** Subscribes to audit events; returns the unsubscribe function. */
  subscribe(listener: EventListener): () => void;
  /** Closes the HTTP servers (public and management) and the store. */
  close(): Promise<void>;
}

/**
 * Creates a provider from a config object: validates it, opens the store and runs its
 * migrations, loads or generates the signing keys, and builds the Fastify app: a bare Fastify app
 * with Sigil mounted at the issuer's path, as `sigilPlugin` mounts it in a host app.
 * @throws ConfigError naming each invalid field, also a config client whose id is a stored
 *   user's subject (RFC 9068 §5); Error when the store cannot be opened.
 */
export async function createSigil(config: unknown, options: SigilOptions = {}): Promise<Sigil> {
  const services = await startServices(config, options);
  const { context, grantTypes, metrics, tracing, stop } = services;
  let app: FastifyInstance;
  try {
    app = await buildApp(context, grantTypes, stop, metrics, tracing);
    context.pages.checkOverrides(); // every page is registered now (branding.templatesDir)
  } catch (err) {
    await stop();
    throw err;
  }
  // Closing the app stops the services (mountSigil's onClose), after the server stopped taking requests.
  return { app, context, metricsApp: services.metricsApp, listenMetrics: services.listenMetrics, subscribe: services.subscribe, close: () => app.close() };
}

/** Options of `sigilPlugin`: the config and the options of `createSigil`. */
export interface SigilPluginOptions extends SigilOptions {
  /** The config object; its `issuer`'s path must be the prefix the plugin is registered with. */
  config: unknown;
  /** Subscribed to the audit events, as `Sigil.subscribe` does. */
  onEvent?: EventListener;
}

/**
 * Sigil as a Fastify plugin, mounted in a host app under the issuer's path (OIDC Discovery §4:
 * discovery at `<issuer>/.well-known/openid-configuration`):
 * `app.register(sigilPlugin, { prefix: '/id', config: { issuer: 'https://example.com/id', ... } })`.
 * Every endpoint, page, asset, discovery and the JWKS answer under the prefix; Sigil's headers,
 * CORS, cookies (Path the prefix), error and not-found handlers stay within it. The host's own
 * Fastify options apply (logger of requests, `trustProxy`, timeouts); the management listener
 * (`/metrics`) is not started. Closing the host app stops Sigil's housekeeping and closes its store.
 * The failure limits count per `request.ip`: give the host app a `trustProxy` naming the proxies
 * (never `true`, which lets callers pick their address in `X-Forwarded-For`).
 * @throws ConfigError as `createSigil`; Error when the issuer's path is not the prefix, or the host
 *   registered @fastify/csrf-protection for all its routes (see `mountSigil`).
 */
export async function sigilPlugin(fastify: FastifyInstance, opts: SigilPluginOptions): Promise<void> {
  const { config, onEvent, ...options } = opts;
  const services = await startServices(config, options, fastify.prefix.replace(/\/+$/, ''));
  if (onEvent) services.subscribe(onEvent);
  // Sigil's pages register below this plugin, once the host loads them: the overrides are checked then.
  fastify.addHook('onReady', async () => services.context.pages.checkOverrides());
  if (services.context.config.trustProxy !== false)
    services.context.log.warn('sigil: the config\'s trustProxy applies to the standalone server only; in a host app, its own Fastify trustProxy decides');
  await mountSigil(fastify, services.context, services.grantTypes, services.stop, services.metrics, services.tracing).catch(async (err: unknown) => {
    await services.stop();
    throw err;
  });
}

/** A provider's services, not yet mounted on any app: what `createSigil` and `sigilPlugin` share. */
interface Services extends Pick<Sigil, 'context' | 'metricsApp' | 'listenMetrics' | 'subscribe'> {
  grantTypes: GrantRegistry;
  metrics: RequestMetrics;
  tracing: Tracing | undefined;
  /** Stops housekeeping and logout delivery, closes the management app, the store and the counters; once. */
  stop(): Promise<void>;
}

/**
 * Builds a provider's services: validates the config, opens the store and runs its migrations,
 * loads or generates the signing keys, starts housekeeping and logout delivery.
 * @param mountedAt the prefix of the host app's plugin, checked against the issuer's path before
 *   anything is opened
 */
async function startServices(config: unknown, options: SigilOptions, mountedAt?: string): Promise<Services> {
  // A client may list the extension grants registered here; any other unknown name is a typo.
  const extensionGrants = (options.extensionGrants ?? []).map((g) => g.grantType);
  const cfg = resolveConfig(config, options.overrides, { extensionGrants });
  const basePath = issuerPath(cfg.issuer);
  if (mountedAt !== undefined && mountedAt !== basePath)
    throw new Error(`sigil: the plugin is registered at prefix '${mountedAt}' but the issuer ${cfg.issuer} has the path '${basePath}'; the prefix must be the issuer's path (OIDC Discovery §4)`);
  const redisUrl = options.redisUrl ?? process.env.SIGIL_REDIS_URL;
  options = { ...options, dataKey: options.dataKey ?? parseDataKey(process.env.SIGIL_DATA_KEY), ...(redisUrl ? { redisUrl } : {}) };
  // Lines are buffered and written to stdout 4 KB at a time (one system call for some fifteen
  // audit events under load, instead of one each), and at least once a second when traffic is low.
  // The writes are synchronous, as pino's are by default: an asynchronous write is a job on libuv's
  // thread pool, which also signs every JWT, and under load those jobs cost more CPU per token
  // than the write itself (measured in the README's Performance notes).
  // pino flushes only an asynchronous destination at exit, so Sigil writes what is still buffered
  // when it closes and, should it die of an error, when the process exits. A SIGKILL may lose up
  // to the last second of lines.
  const destination = options.logger ? undefined : pino.destination({ dest: 1, sync: true, minLength: 4096, periodicFlush: 1000 });
  const log = options.logger ?? pino({ level: cfg.logLevel }, destination);
  const flushLog = () => {
    process.off('exit', flushLog);
    // After EPIPE (stdout's reader gone) pino has made this a no-op.
    destination?.flushSync();
  };
  if (destination) process.on('exit', flushLog);
  // Before the store: pg is loaded with a PostgreSQL store, and its instrumentation must be there first.
  const tracing = await startTracing();
  const metrics = new RequestMetrics();
  const domainMetrics = new DomainMetrics(metrics.registry);
  const store = await openStore(cfg.storage, cfg.accessTokenCache, domainMetrics.timedCommit);
  tracing?.traceMethods(store.grants, 'store.grants', TRACED_GRANT_CALLS);
  tracing?.traceMethods(store.logout, 'store.logout', TRACED_LOGOUT_CALLS);
  const limiter = new FailureLimiter(
    cfg.rateLimits,
    options.redisUrl
      ? new RedisFailureCounters(options.redisUrl)
      : options.countersInPrimary
        ? new PrimaryFailureCounters()
        : new MemoryFailureCounters(),
  );
  limiter.onRefused = domainMetrics.refused;
  try {
    const collisions = await clientsNamingStoredUsers(cfg.clients, store.users);
    if (collisions.length > 0) throw new ConfigError(collisions);
    const keys = await KeyRing.load(store.keys, cfg.signingAlgorithms, {
      ...cfg.signingKeys,
      ...(options.dataKey ? { dataKey: options.dataKey } : {}),
    });
    const resources = new Resources(cfg);
    domainMetrics.watch({
      outbox: () => store.logout.outbox(),
      liveInteractions: (now) => store.maintenance.liveInteractions(now),
      signingSince: () => keys.signingSince(),
    });
    const events = new EventBus(
      log,
      tracing
        ? {
            count: (event) => {
              domainMetrics.count(event);
              tracing.annotate(event);
            },
            traceId: () => tracing.traceId(),
          }
        : { count: domainMetrics.count },
    );
    const grantTypes = new GrantRegistry();
    grantTypes.register('authorization_code', authorizationCodeGrant);
    grantTypes.register('client_credentials', clientCredentialsGrant);
    grantTypes.register('password', passwordGrant(options.resourceOwnerValidator ?? defaultResourceOwnerValidator));
    grantTypes.register(DEVICE_CODE_GRANT, deviceCodeGrant);
    grantTypes.register('refresh_token', refreshTokenGrant);
    for (const grant of [tokenExchangeGrant, ...(options.extensionGrants ?? [])])
      grantTypes.register(grant.grantType, extensionGrantHandler(grant));
    const documents = new ClientMetadataDocuments(cfg.clientIdMetadataDocuments, () => resources.allScopeNames(), limiter, cfg.pendingLimits.windowSeconds);
    if (documents.settings.enabled && documents.settings.allowLoopback)
      log.warn('clientIdMetadataDocuments.allowLoopback is on: client metadata documents may be fetched from loopback addresses (development only)');
    const clients = new ClientRegistry(cfg.clients, documents);
    // The deliverer's sweep ends expired sessions through the service, which sends through the deliverer.
    const callerChosen = (clientId: string) => {
      const client = clients.get(clientId);
      return client === undefined || hasCallerChosenUrls(client);
    };
    const guard = { callerChosen, allowLoopback: cfg.clientIdMetadataDocuments.allowLoopback };
    const deliverer: LogoutDeliverer = new LogoutDeliverer(store.logout, keys, cfg.issuer, log, cfg.backChannelLogout, guard, () => logout.endExpired());
    const logout = new LogoutService(store.logout, clients, cfg.backChannelLogout.retrySeconds, (ids) => deliverer.deliverNow(ids));
    const replay = new ReplayCache(store.grants);
    // Without findByUsername a directory could not say which names it holds, and a stored user
    // could take one of its users' names: such a directory stops the start (plain JavaScript
    // callers have no type check to tell them).
    const lacking = (options.userDirectories ?? []).filter((d) => typeof d.findByUsername !== 'function').map((d) => `userDirectories: "${String(d.name)}" has no findByUsername(username) (see UserDirectory)`);
    if (lacking.length > 0) throw new ConfigError(lacking);
    const directories = [...cfg.userDirectories.map((d) => new LdapDirectory(d, limiter)), ...(options.userDirectories ?? [])];
    const profile = options.profileService;
    const users = await UserService.create(cfg.users, store.users, { directories, isActive: profile?.isActive?.bind(profile), emails: store.emails, log });
    // WebAuthn credentials count as second factors while WebAuthn is on (FACTOR_KINDS).
    const mfa = new MfaService(store.factors, store.records, cfg.mfa, options.dataKey, cfg.webauthn.enabled ? store.webauthn : undefined);
    const webauthn = new WebAuthnService(store, relyingPartyOf(cfg.issuer, cfg.webauthn.rpName), cfg.webauthn.challengeLifetime);
    const upstream = new UpstreamProviders(cfg.identityProviders, cfg.issuer);
    // Filled by the resource admin's reload (config-file and stored API resources).
    const apiSecrets = new Map<string, ApiSecrets>();
    const resourceAdmin = new ResourceAdmin(store, { config: cfg, raw: config, overrides: options.overrides, extensionGrants, log, live: { resources, upstream, apiSecrets }, ...(options.dataKey ? { dataKey: options.dataKey } : {}) });
    const clientAdmin = new ClientAdmin(store, { config: cfg, raw: config, overrides: options.overrides, extensionGrants, log, resources: resourceAdmin });
    // A directory that cannot answer names no user here: the check of clients naming users must
    // not stop the start or the reload while a directory is down.
    const isUserSubject = async (id: string) => {
      try {
        return (await users.findBySubject(id)) !== undefined;
      } catch (err) {
        if (err instanceof DirectoryUnavailable) return false;
        throw err;
      }
    };
    // The reads of the stored clients run one after another: an older read that ends late (the
    // periodic reload) never replaces a newer one (the change poll's) in the registry.
    let clientReads: Promise<unknown> = Promise.resolve();
    const inOrder = (read: () => Promise<void>): Promise<void> => {
      const next = clientReads.then(read, read);
      clientReads = next.catch(() => {});
      return next;
    };
    const reloadClients = () => inOrder(() => clientAdmin.reload(clients, isUserSubject));
    const tokens = new TokenService(cfg.issuer, keys, store.records, resources, options.profileService);
    // One development switch (clientIdMetadataDocuments.allowLoopback) for every fetch of a caller-chosen URL.
    const clientKeys = new ClientKeys(cfg.clientIdMetadataDocuments.allowLoopback);
    const registrations = new ClientRegistrations(store.registrations, {
      config: cfg,
      issuer: cfg.issuer,
      admin: clientAdmin,
      clients,
      tokens,
      scopes: () => ({ all: resources.allScopeNames(), identity: [...resources.identity.keys()] }),
      idTokenAlg: tokens.signingAlgorithmFor({ profile: null }),
      reload: reloadClients,
      // The registrant chose sector_identifier_uri: fetched under the SSRF guard.
      fetchText: (url) => fetchBoundedText(url, {}, clientKeys.guardedGet),
      events,
      log,
    });
    clients.onLookup = (id) => registrations.touch(id);
    const mailer = cfg.email ? new Mailer(cfg.email, productName(cfg)) : undefined;
    const sessionAdmin = new SessionAdmin(store, cfg, log, logout);
    const userAdmin = new UserAdmin(store, cfg, sessionAdmin, directories);
    const context: SigilContext = {
      // The users' clear-text passwords are hashed by UserService.create and dropped here.
      config: { ...cfg, users: cfg.users.map(({ password: _clearText, ...user }) => user) },
      issuer: cfg.issuer,
      basePath,
      store,
      keys,
      clients,
      resources,
      users,
      tokens,
      events,
      limiter,
      replay,
      clientKeys,
      dpop: new DPoPVerifier(replay, new DPoPNonces(store.records.dpopNonces, cfg.dpop.nonceLifetimeSeconds), cfg.dpop),
      apiSecrets,
      sessions: new SessionService(store.records.sessions, cfg.sessionLifetime, logout),
      knownBrowsers: new KnownBrowsers(keys, cfg.issuer, cfg.knownBrowserLifetime),
      logout,
      interactions: new Interactions(store.grants),
      pages: new Pages(loadLook(cfg.branding, cfg.localesDir), basePath),
      upstream,
      mfa,
      secondStep: new SecondStepService(mfa, users, clients, limiter, events),
      enrollment: new FactorEnrollment(mfa, users, limiter, events),
      webauthn,
      registrations,
      passkeys: new PasskeyCeremonies(webauthn, store.webauthn, store.records.webauthnPending, mfa, users, limiter, events, cfg.webauthn),
      // Email through SMTP: reset, verification, self-registration.
      ...(mailer && cfg.email
        ? { email: new AccountEmail({ store, users: userAdmin, counters: limiter.counters, mailer, config: cfg.email, issuer: cfg.issuer, log }) }
        : {}),
      account: new AccountService(users, store.users, store.records, logout, clients, limiter, events, cfg.account.editableClaims, userAdmin),
      management: {
        clients: clientAdmin,
        keys: new KeyAdmin(store.keys, cfg, options.dataKey),
        sessions: sessionAdmin,
        users: userAdmin,
        // SCIM 2.0 (/scim/v2): its users are written by `userAdmin`; its groups, which the
        // console's user pages use too, live only here.
        scim: new ScimService(store, events, userAdmin, `${cfg.issuer}/scim/v2`, cfg.admin.userRole),
        audit: new AuditLog(store.audit, cfg.admin.auditRetentionSeconds, log),
        grants: new GrantAdmin(store.grants),
        resources: resourceAdmin,
        reloadClients: () => reloadClients(),
        reloadKeys: () => keys.refresh(),
      },
      log,
    };
    // Upstream providers' calls and each back-channel logout delivery (`attempt`, the deliverer's
    // private method that posts one logout token) get spans too.
    tracing?.traceMethods(context.upstream, 'upstream', ['start', 'finish'] satisfies (keyof UpstreamProviders)[]);
    tracing?.traceMethods(deliverer, 'logout.delivery', ['attempt'], true);
    const metricsApp = buildMetricsApp(metrics, log);
    // WebAuthn: browsers refuse an IP address as RP ID (WebAuthn L3 §5.1.3).
    if (cfg.webauthn.enabled && isIP(context.webauthn.rp.id.replace(/^\[|\]$/g, '')) !== 0)
      log.warn({ rpId: context.webauthn.rp.id }, 'webauthn is enabled but the issuer host is an IP address: browsers will refuse passkeys; use a domain name such as localhost');
    let clientsVersion = await store.clients.clientsVersion();
    let resourcesVersion = await store.resources.version();
    await resourceAdmin.reload();
    await reloadClients();
    // Re-reads the stored resources and clients when their version changed (a change on any node,
    // or by the CLI); resources first: a new client may name a new scope. One such check is
    // queued at a time, and callers until it starts share it: it starts after each of them asked,
    // so a change committed before they asked is found. A version is taken as seen only once its
    // reload succeeded, so a failed reload is retried at the next check.
    let queuedCheck: Promise<void> | undefined;
    const checkChanges = (): Promise<void> =>
      (queuedCheck ??= inOrder(async () => {
        queuedCheck = undefined;
        const resourcesNow = await store.resources.version();
        if (resourcesNow !== resourcesVersion) {
          await resourceAdmin.reload();
          resourcesVersion = resourcesNow;
        }
        const version = await store.clients.clientsVersion();
        if (version !== clientsVersion) {
          await clientAdmin.reload(clients, isUserSubject);
          clientsVersion = version;
        }
      }));
    // A token or a request naming a client id this worker does not know: the client may have been
    // added on a sibling worker or another node since the last poll, so look now rather than
    // refuse it until the next poll. A store that cannot answer leaves everything as it is (the
    // poll logs it).
    clients.onMiss = () => checkChanges().catch(() => {});
    await registrations.removeUnused();
    const { audit } = context.management;
    const unsubscribeAudit = events.subscribe(audit.record);
    // Every second: the audit events of the last second are stored in one batch, and when a
    // stored client or resource changed on any node (or by the CLI), they are re-read now, not at
    // the next reload. Resources first: a new client may name a new scope.
    // A version is taken as seen only once its reload succeeded, so a failed reload is retried at
    // the next poll (a second later), not at the periodic reload; a failed flush of the audit
    // events (kept for the next flush) is logged and does not hold the reloads back.
    const pollChanges = async () => {
      const flushed = audit.flush().catch((err: unknown) => log.error({ err }, 'storing the audit events failed; they are kept for the next attempt'));
      await checkChanges();
      await flushed;
    };
    // Unused dynamic clients go at each reload (an indexed query; conditional deletes, so nodes may race).
    const removeUnusedClients = async () => void (await registrations.removeUnused());
    const housekeeping = startHousekeeping(
      [() => keys.refresh(), () => inOrder(() => resourceAdmin.reload()), reloadClients, removeUnusedClients, async () => void (await audit.prune())],
      store.maintenance,
      log,
      { keyReloadSeconds: cfg.signingKeys.reloadSeconds, cleanupIntervalSeconds: cfg.cleanup.intervalSeconds, batchSize: cfg.cleanup.batchSize },
      pollChanges,
    );
    deliverer.start();
    let stopped: Promise<void> | undefined;
    return {
      context,
      grantTypes,
      metrics,
      tracing,
      metricsApp,
      listenMetrics: async () => {
        if (cfg.metrics === false) return null;
        const { host, port } = cfg.metrics;
        try {
          return new URL(await metricsApp.listen({ host, port })).origin;
        } catch (err) {
          const code = (err as NodeJS.ErrnoException).code ?? (err as Error).message;
          throw new Error(`metrics: cannot listen on ${host}:${port} (${code}); set "metrics" to another port or false`);
        }
      },
      subscribe: (listener) => events.subscribe(listener),
      stop: () =>
        (stopped ??= (async () => {
          housekeeping.stop();
          unsubscribeAudit();
          await audit.flush().catch((err: unknown) => log.error({ err }, 'storing the last audit events failed'));
          await metricsApp.close();
          await deliverer.stop();
          await context.users.close();
          mailer?.close();
          await store.close();
          await limiter.counters.close();
          await tracing?.flush();
          flushLog();
        })()),
    };
  } catch (err) {
    await store.close();
    await limiter.counters.close();
    flushLog();
    throw err;
  }
}
