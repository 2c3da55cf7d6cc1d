/**
 * The OpenTelemetry SDK behind `tracing.ts`, loaded only when tracing is on (`startTracing`).
 * The SDK reads its exporter, endpoint, protocol, sampler and resource from the `OTEL_*`
 * environment variables; the HTTP instrumentation makes the span of each request, the pg and
 * ioredis instrumentations the spans of the database and Redis clients.
 */
import { createRequire } from 'node:module';
import type { Attributes } from '@opentelemetry/api';
import type { FastifyInstance } from 'fastify';
import type { SigilEvent } from '../events/events.js';

/** What a running tracer offers Sigil's parts. */
export interface Tracing {
  /**
   * Names the span of each request of `app` after its route (`POST /connect/token`) and sets
   * `http.route` on it.
   */
  observe(app: FastifyInstance): void;
  /**
   * Replaces the named methods of `target` (an object of Sigil's own, e.g. the store) with ones
   * that run each call in a span `<prefix>.<method>`, a child of the current span, ended when the
   * call settles (status error when it throws or rejects). A call outside any recorded span
   * (housekeeping) gets none, unless `roots` is set: its calls start traces of their own (logout deliveries).
   */
  traceMethods(target: object, prefix: string, methods: readonly string[], roots?: boolean): void;
  /**
   * Puts an audit event's bounded facts on the current span: its name, `sigil.client_id`,
   * `sigil.grant_type`, the OAuth error code. Never a token, secret, subject or address.
   */
  annotate(event: Omit<SigilEvent, 'time'>): void;
  /** The current trace's id (32 hex digits), or undefined outside a sampled span. */
  traceId(): string | undefined;
  /** Exports the spans ended so far. */
  flush(): Promise<void>;
}

/**
 * What the HTTP instrumentation would record of a request and must not: the query's values (an
 * `id_token_hint`, a request object, a `login_hint`, a code are tokens or personal data; only the
 * parameter names stay, valued `REDACTED`) and the caller's address. The instrumentation lets
 * these attributes override its own; an undefined value is not recorded.
 */
function privateRequestAttributes(url: string): Attributes {
  const query = url.indexOf('?');
  return {
    'client.address': undefined,
    'network.peer.address': undefined,
    'network.peer.port': undefined,
    ...(query >= 0
      ? {
          'url.query': [...new URLSearchParams(url.slice(query + 1)).keys()]
            .map((name) => `${encodeURIComponent(name)}=REDACTED`)
            .join('&'),
        }
      : {}),
  };
}

/** The SDK's resource detectors (`@opentelemetry/resources`, as `@opentelemetry/sdk-node` re-exports it). */
type Detectors = typeof import('@opentelemetry/sdk-node').resources;
type ResourceDetector = Detectors['processDetector'];

/**
 * The resource detectors the SDK would take from `OTEL_NODE_RESOURCE_DETECTORS` (unset: env,
 * process and host; `all`, `none`, or a list of env, host, os, process, serviceinstance), with the
 * process detector's `process.command_args` left out: the command line of `sigil start` may carry a
 * database URL with its password (`--storage postgres://user:password@…`), and every span of the
 * process would carry it as a resource attribute.
 */
function resourceDetectors(detectors: Detectors, setting: string | undefined): ResourceDetector[] {
  const privateProcess: ResourceDetector = {
    detect(config) {
      const { attributes = {} } = detectors.processDetector.detect(config);
      const { 'process.command_args': _commandLine, ...rest } = attributes;
      return { attributes: rest };
    },
  };
  const byName = new Map<string, ResourceDetector>([
    ['host', detectors.hostDetector],
    ['os', detectors.osDetector],
    ['serviceinstance', detectors.serviceInstanceIdDetector],
    ['process', privateProcess],
    ['env', detectors.envDetector],
  ]);
  const names =
    setting
      ?.split(',')
      .map((name) => name.trim())
      .filter(Boolean) ?? [];
  if (names.length === 0) return [detectors.envDetector, privateProcess, detectors.hostDetector];
  if (names.includes('all')) return [...byName.values()];
  if (names.includes('none')) return [];
  return names.flatMap((name) => byName.get(name) ?? []);
}

/** The tracer's name (instrumentation scope) of Sigil's own spans. */
const SCOPE = 'sigil';

/**
 * Loads and starts the SDK and returns the hooks of `Tracing`. The packages are imported here, not
 * at the top of the module, so that the CLI's bundle (scripts/bundle-cli.mjs, which leaves
 * `@opentelemetry/*` outside) loads none of them when tracing is off.
 */
export async function start(): Promise<Tracing> {
  const [
    { context, SpanStatusCode, trace },
    { HttpInstrumentation },
    { IORedisInstrumentation },
    { PgInstrumentation },
    { NodeSDK, resources },
  ] = await Promise.all([
    import('@opentelemetry/api'),
    import('@opentelemetry/instrumentation-http'),
    import('@opentelemetry/instrumentation-ioredis'),
    import('@opentelemetry/instrumentation-pg'),
    import('@opentelemetry/sdk-node'),
  ]);
  const sdk = new NodeSDK({
    resourceDetectors: resourceDetectors(resources, process.env.OTEL_NODE_RESOURCE_DETECTORS),
    instrumentations: [
      // Health probes would be most of the traces; they say nothing about the provider.
      new HttpInstrumentation({
        ignoreIncomingRequestHook: (request) => /^\/(healthz|readyz)(\?|$)/.test(request.url ?? ''),
        startIncomingSpanHook: (request) => privateRequestAttributes(request.url ?? ''),
      }),
      // Kysely's statements carry their values as parameters, which the pg instrumentation leaves out.
      new PgInstrumentation(),
      // The command alone: Redis keys name the caller's address and the username (failure limits).
      new IORedisInstrumentation({ dbStatementSerializer: (command) => command }),
    ],
  });
  sdk.start();
  // The instrumentation patches `http` when it is required after the start; Sigil's modules loaded
  // it already (ES modules, imported before the configuration is read), so require it once more:
  // servers created from now on (the listeners) share the patched prototype.
  createRequire(import.meta.url)('node:http');
  const tracer = trace.getTracer(SCOPE);
  const provider = trace.getTracerProvider() as { getDelegate?: () => { forceFlush?: () => Promise<void> } };

  return {
    observe(app) {
      app.addHook('onRequest', (request, _reply, done) => {
        const span = trace.getActiveSpan();
        const route = request.routeOptions.url;
        if (span && route) {
          span.setAttribute('http.route', route);
          span.updateName(`${request.method} ${route}`);
        }
        done();
      });
    },

    traceMethods(target, prefix, methods, roots = false) {
      const object = target as Record<string, unknown>;
      for (const method of methods) {
        const original = object[method];
        if (typeof original !== 'function') throw new Error(`traceMethods: ${prefix}.${method} is not a method`);
        const name = `${prefix}.${method}`;
        object[method] = function traced(this: unknown, ...args: unknown[]) {
          // An ended span may still be in the context (instrumented callbacks keep theirs): not a parent.
          const inSpan = trace.getActiveSpan()?.isRecording() === true;
          if (!inSpan && !roots) return (original as (...a: unknown[]) => unknown).apply(this, args);
          return tracer.startActiveSpan(name, { root: !inSpan }, async (span) => {
            try {
              return await (original as (...a: unknown[]) => unknown).apply(this, args);
            } catch (err) {
              span.setStatus({ code: SpanStatusCode.ERROR, message: err instanceof Error ? err.name : 'error' });
              throw err;
            } finally {
              span.end();
            }
          });
        };
      }
    },

    annotate(event) {
      const span = trace.getSpan(context.active());
      if (!span) return;
      const attributes: Attributes = { 'sigil.event': event.name };
      if (event.clientId !== undefined) attributes['sigil.client_id'] = event.clientId;
      if (event.grantType !== undefined) attributes['sigil.grant_type'] = event.grantType;
      if (event.error !== undefined) attributes['sigil.error'] = event.error;
      span.setAttributes(attributes);
    },

    traceId() {
      const spanContext = trace.getActiveSpan()?.spanContext();
      return spanContext && trace.isSpanContextValid(spanContext) ? spanContext.traceId : undefined;
    },

    async flush() {
      await provider.getDelegate?.().forceFlush?.();
    },
  };
}
