/**
 * Starts a provider's services: resolves the config, builds each group in turn (infrastructure,
 * protocol, sign-in, management, mail, pages) while the signing keys load, then, once the caller
 * has built its app (`begin`), starts what runs in the background (the audit log's batches, the
 * change poll, housekeeping, back-channel logout delivery, webhook delivery).
 */
import type { FastifyInstance } from 'fastify';
import { withFetchedMetadata } from '../admin/saml-service-providers.js';
import { issuerPath, resolveConfig, type ResolvedConfig } from '../config/loader.js';
import type { EventListener } from '../events/events.js';
import type { GrantRegistry } from '../grants/registry.js';
import { buildMetricsApp, type RequestMetrics } from '../http/metrics.js';
import { parseDataKey } from '../keys/keys.js';
import { loadLook } from '../page-kit/look.js';
import { Pages } from '../page-kit/pages.js';
import type { Services } from '../services.js';
import { startHousekeeping } from '../stores/housekeeping.js';
import type { Tracing } from '../telemetry/tracing.js';
import type { StoredChanges } from './changes.js';
import { buildInfrastructure } from './infrastructure.js';
import { buildMail } from './mail.js';
import { buildManagement, buildUserManagement } from './management.js';
import type { SigilOptions } from './options.js';
import { buildProtocol } from './protocol.js';
import { buildSignIn } from './sign-in.js';
import { nowSeconds } from '../crypto/handles.js';
import { WebhookMetrics } from '../telemetry/webhook-metrics.js';
import { webhookEventsOf } from '../webhooks/audit-events.js';

/** A provider's services, not yet mounted on any app: what `createSigil` and `sigilPlugin` share. */
export interface StartedServices {
  services: Services;
  grantTypes: GrantRegistry;
  metrics: RequestMetrics;
  tracing: Tracing | undefined;
  /** The management app: `GET /metrics` only. */
  metricsApp: FastifyInstance;
  /** Listens the management app where config `metrics` says; its origin, or null when `metrics` is false. */
  listenMetrics(): Promise<string | null>;
  /** Subscribes to audit events; returns the unsubscribe function. */
  subscribe(listener: EventListener): () => void;
  /**
   * Waits for the signing keys, which load (on a first start, are generated) while the services
   * and the app are built, then starts the background work: the audit log's batches, the change
   * poll, housekeeping (with the keys' reload) and logout delivery. Call it once the app is built,
   * before it takes requests; after a failure, call `stop`.
   * @throws Error when the keys cannot be loaded, as `KeyRing.load`
   */
  begin(): Promise<void>;
  /** Stops housekeeping and logout delivery, closes the management app, the store and the counters; once. */
  stop(): Promise<void>;
}

/**
 * Resolves the config and the options' defaults (`SIGIL_REDIS_URL`, `SIGIL_DATA_KEY`). The config
 * users' passwords are still clear text: `buildInfrastructure` hashes them.
 * @param mountedAt the prefix of the host app's plugin, checked against the issuer's path before
 *   anything is opened
 * @throws ConfigError naming each invalid field; Error when the prefix is not the issuer's path
 */
function resolve(
  config: unknown,
  options: SigilOptions,
  mountedAt: string | undefined,
): { resolved: ResolvedConfig; options: SigilOptions } {
  // A client may list the extension grants registered here; any other unknown name is a typo.
  const extensionGrants = (options.extensionGrants ?? []).map((g) => g.grantType);
  const resolved = resolveConfig(config, options.overrides, { extensionGrants });
  const basePath = issuerPath(resolved.issuer);
  if (mountedAt !== undefined && mountedAt !== basePath)
    throw new Error(
      `sigil: the plugin is registered at prefix '${mountedAt}' but the issuer ${resolved.issuer} has the path '${basePath}'; the prefix must be the issuer's path (OIDC Discovery §4)`,
    );
  const redisUrl = options.redisUrl ?? process.env.SIGIL_REDIS_URL;
  return {
    resolved,
    options: {
      ...options,
      dataKey: options.dataKey ?? parseDataKey(process.env.SIGIL_DATA_KEY),
      ...(redisUrl ? { redisUrl } : {}),
    },
  };
}

/**
 * Builds a provider's services: validates the config, opens the store and runs its migrations,
 * loads or generates the signing keys, starts housekeeping and logout delivery.
 * @throws ConfigError naming each invalid field, also a config client whose id is a stored
 *   user's subject (RFC 9068 §5) and a SAML SP whose `metadataUrl` was not fetched; Error when
 *   the store cannot be opened
 */
export async function startServices(
  config: unknown,
  given: SigilOptions,
  mountedAt?: string,
): Promise<StartedServices> {
  const { resolved: checked, options } = resolve(config, given, mountedAt);
  // Before anything opens: an SP whose metadata cannot be fetched stops the start here.
  const resolved = {
    ...checked,
    samlServiceProviders: await withFetchedMetadata(
      checked.samlServiceProviders,
      checked.clientIdMetadataDocuments.allowLoopback,
    ),
  };
  const built = await buildInfrastructure(resolved, options);
  const { infrastructure: infra, tracing } = built;
  const cfg = infra.config;
  try {
    const { protocol, grantTypes, deliverer } = buildProtocol(infra, options, tracing);
    const users = buildUserManagement(infra, protocol, options);
    const signIn = await buildSignIn(infra, protocol, users.userAdmin, users.directories, options);
    const extensionGrants = (options.extensionGrants ?? []).map((g) => g.grantType);
    const source = { raw: config, overrides: options.overrides, extensionGrants, dataKey: options.dataKey };
    const { management, changes, webhookDeliverer } = buildManagement(infra, protocol, signIn, users, source);
    const { mail, mailer } = buildMail(infra, users.userAdmin, management.management);
    const pages = { pages: new Pages(loadLook(cfg.branding, cfg.localesDir), infra.basePath) };
    const services: Services = { ...infra, ...protocol, ...signIn, ...mail, ...pages, ...management };
    const metricsApp = buildMetricsApp(built.metrics, infra.log);
    const webhookMetrics = new WebhookMetrics(built.metrics.registry, () => infra.store.webhookOutbox.pending());
    webhookDeliverer.onOutcome = webhookMetrics.count;
    protocol.hooks.onOutcome = webhookMetrics.hookCalled;
    await changes.start();
    let stopBackground: (() => Promise<void>) | undefined;
    let stopped: Promise<void> | undefined;
    return {
      services,
      grantTypes,
      metrics: built.metrics,
      tracing,
      metricsApp,
      listenMetrics: () => listenMetrics(metricsApp, cfg.metrics),
      subscribe: (listener) => infra.events.subscribe(listener),
      begin: async () => {
        // Nothing has signed yet, and the keys' periodic reload starts only now.
        await built.keysReady;
        stopBackground = await startBackground(services, changes);
        deliverer.start();
        webhookDeliverer.start();
      },
      stop: () =>
        (stopped ??= (async () => {
          await stopBackground?.();
          await metricsApp.close();
          await deliverer.stop();
          await webhookDeliverer.stop();
          services.hooks.close();
          await services.users.close();
          mailer?.close();
          await tracing?.flush();
          await built.close();
        })()),
    };
  } catch (err) {
    await built.close();
    throw err;
  }
}

/**
 * Starts the audit log's batches, the change poll and housekeeping; returns what stops them (the
 * last audit events are stored then).
 */
async function startBackground(services: Services, changes: StoredChanges): Promise<() => Promise<void>> {
  const { store, keys, log, events, config: cfg, registrations } = services;
  const { audit } = services.management;
  // A token or a request naming a client id this worker does not know: the client may have been
  // added on a sibling worker or another node since the last poll, so look now rather than
  // refuse it until the next poll. A store that cannot answer leaves everything as it is (the
  // poll logs it).
  services.clients.onMiss = () => changes.check().catch(() => {});
  await registrations.removeUnused();
  const unsubscribeAudit = events.subscribe(audit.record);
  // Sign-ins, enrolments and consents tell webhooks after their outcome (webhooks/audit-events.ts).
  const unsubscribeWebhooks = events.subscribe((event) => {
    const told = webhookEventsOf(event);
    return told.length > 0 ? store.webhookOutbox.record(told) : undefined;
  });
  // Every second: the audit events of the last second are stored in one batch, and stored clients,
  // resources and organizations changed on any node (or by the CLI) are re-read now, not at the
  // next reload. A failed flush of the audit events (kept for the next flush) is logged and does
  // not hold the reloads back.
  const pollChanges = async () => {
    const flushed = audit
      .flush()
      .catch((err: unknown) =>
        log.error({ err }, 'storing the audit events failed; they are kept for the next attempt'),
      );
    await changes.check();
    await flushed;
  };
  // Unused dynamic clients go at each reload (an indexed query; conditional deletes, so nodes may race).
  const removeUnusedClients = async () => void (await registrations.removeUnused());
  const housekeeping = startHousekeeping(
    [
      () => keys.refresh(),
      () => changes.reloadResources(),
      () => changes.reloadOrganizations(),
      () => changes.reloadClients(),
      () => changes.reloadWebhooks(),
      removeUnusedClients,
      async () => void (await audit.prune()),
      // The delivery log is kept as long as the audit events.
      async () => void (await store.webhookOutbox.prune(nowSeconds() - cfg.admin.auditRetentionSeconds)),
    ],
    store.maintenance,
    log,
    {
      keyReloadSeconds: cfg.signingKeys.reloadSeconds,
      cleanupIntervalSeconds: cfg.cleanup.intervalSeconds,
      batchSize: cfg.cleanup.batchSize,
    },
    pollChanges,
  );
  return async () => {
    housekeeping.stop();
    unsubscribeAudit();
    unsubscribeWebhooks();
    await audit.flush().catch((err: unknown) => log.error({ err }, 'storing the last audit events failed'));
  };
}

/**
 * Listens the management app at config `metrics`' host and port.
 * @returns its origin, e.g. `http://127.0.0.1:9464`, or null when `metrics` is false
 * @throws Error naming the address when it cannot listen there (e.g. the port is in use)
 */
async function listenMetrics(metricsApp: FastifyInstance, metrics: ResolvedConfig['metrics']): Promise<string | null> {
  if (metrics === false) return null;
  const { host, port } = metrics;
  try {
    return new URL(await metricsApp.listen({ host, port })).origin;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? (err as Error).message;
    throw new Error(`metrics: cannot listen on ${host}:${port} (${code}); set "metrics" to another port or false`);
  }
}
