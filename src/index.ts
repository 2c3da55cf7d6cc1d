/**
 * Library entry: `createSigil(config)` builds a provider (store, keys, services, Fastify app)
 * from a config object, as the config file gives it; `sigilPlugin` mounts one in a host app. The
 * services are built in src/compose/, one builder per group.
 */
import type { FastifyInstance } from 'fastify';
import { buildApp, mountSigil } from './app.js';
import { routeTable } from './compose/routes.js';
import { startServices } from './compose/start.js';
import type { SigilOptions } from './compose/options.js';
import type { EventListener } from './events/events.js';
import type { Services } from './services.js';

export { ConfigError, type ConfigOverrides, type ResolvedConfig } from './config/loader.js';
export type { ConfigInput, Config, ClientConfig } from './config/schema.js';
export type { SigilOptions } from './compose/options.js';
export type { Services } from './services.js';
export { OAuthError } from './protocol/errors.js';
export type { SigilEvent, SigilEventName, EventListener } from './events/events.js';
export type { ExtensionGrant, ExtensionGrantContext, ExtensionGrantResult } from './grants/extension.js';
export type { DPoPProof } from './validation/dpop.js';
export type { ResourceOwnerValidator, ResourceOwnerRequest } from './grants/password.js';
export { TOKEN_EXCHANGE, ACCESS_TOKEN_TYPE } from './grants/token-exchange.js';
export type { User } from './users/users.js';
export type {
  HookClient,
  HookFunction,
  HookFunctions,
  PostLoginEvent,
  PreRegistrationEvent,
  PreTokenEvent,
} from './webhooks/hooks.js';
export type { DenyAnswer, HookDenial, PreTokenAnswer } from './webhooks/hook-answers.js';
export { DirectoryUnavailable, type UserDirectory } from './users/directory.js';
export type {
  ClientProfileRequest,
  ProfileCaller,
  ProfileDataRequest,
  ProfileService,
  SamlProfileRequest,
} from './tokens/profile.js';

/** A provider instance. */
export interface Sigil {
  /** The Fastify app with every endpoint; `listen` it or `inject` requests. */
  app: FastifyInstance;
  /** The provider's services, every group together (`Services`). */
  context: Services;
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
  const started = await startServices(config, options);
  const { services, grantTypes, metrics, tracing, stop } = started;
  let app: FastifyInstance;
  try {
    app = await buildApp(services, routeTable(services, grantTypes), stop, metrics, tracing);
    services.pages.checkOverrides(); // every page is registered now (branding.templatesDir)
    // The keys loaded (on a first start, were generated) while the app was built.
    await started.begin();
  } catch (err) {
    await stop();
    throw err;
  }
  // Closing the app stops the services (mountSigil's onClose), after the server stopped taking requests.
  return {
    app,
    context: services,
    metricsApp: started.metricsApp,
    listenMetrics: started.listenMetrics,
    subscribe: started.subscribe,
    close: () => app.close(),
  };
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
  const started = await startServices(config, options, fastify.prefix.replace(/\/+$/, ''));
  const { services } = started;
  if (onEvent) started.subscribe(onEvent);
  // Sigil's pages register below this plugin, once the host loads them: the overrides are checked then.
  fastify.addHook('onReady', async () => services.pages.checkOverrides());
  if (services.config.trustProxy !== false)
    services.log.warn(
      "sigil: the config's trustProxy applies to the standalone server only; in a host app, its own Fastify trustProxy decides",
    );
  const { routes } = routeTable(services, started.grantTypes);
  await mountSigil(fastify, services, routes, started.stop, started.metrics, started.tracing)
    .then(() => started.begin())
    .catch(async (err: unknown) => {
      await started.stop();
      throw err;
    });
}
