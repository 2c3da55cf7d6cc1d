/**
 * Metrics (config `metrics`): the provider's request histogram and Node's default metrics in
 * one prom-client registry, served as `GET /metrics` by a management app of its own. The public
 * listener never serves them: process details and per-route traffic are for operators only.
 */
import Fastify, { type FastifyBaseLogger, type FastifyInstance, LogController } from 'fastify';
import { collectDefaultMetrics, Histogram, Registry } from 'prom-client';
import type { Logger } from 'pino';

/** One provider's metrics: a registry with Node's default metrics and the request histogram. */
export class RequestMetrics {
  /** The Prometheus registry behind `GET /metrics`. */
  readonly registry = new Registry();
  private readonly duration: Histogram<'method' | 'route' | 'status'>;

  constructor() {
    collectDefaultMetrics({ register: this.registry });
    this.duration = new Histogram({
      name: 'sigil_http_request_duration_seconds',
      help: 'HTTP request duration by route and status',
      labelNames: ['method', 'route', 'status'],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1],
      registers: [this.registry],
    });
  }

  /** Records every response of `app` in the request histogram (duration in seconds). */
  observe(app: FastifyInstance): void {
    // One labelled child per (method, route, status), looked up by a plain string: prom-client
    // would otherwise hash the label object on every response. Bounded: routes are registered
    // ones (or "unknown"), methods those Node's parser accepts, statuses three digits.
    const children = new Map<string, { observe(seconds: number): void }>();
    // A callback hook, not an async one: no promise per response.
    app.addHook('onResponse', (request, reply, done) => {
      const route = request.routeOptions.url ?? 'unknown';
      const key = `${request.method} ${reply.statusCode} ${route}`;
      let child = children.get(key);
      if (!child) {
        child = this.duration.labels({ method: request.method, route, status: String(reply.statusCode) });
        children.set(key, child);
      }
      child.observe(reply.elapsedTime / 1000);
      done();
    });
  }
}

/**
 * Builds the management app: `GET /metrics` (Prometheus text format, `cache-control: no-store`)
 * and 404 for anything else. Not yet listening.
 */
export function buildMetricsApp(metrics: RequestMetrics, log: Logger): FastifyInstance {
  const app = Fastify({
    loggerInstance: log as FastifyBaseLogger,
    logController: new LogController({ disableRequestLogging: true }),
  });
  app.get('/metrics', async (_request, reply) =>
    reply
      .header('cache-control', 'no-store')
      .type(metrics.registry.contentType)
      .send(await metrics.registry.metrics()),
  );
  return app;
}
