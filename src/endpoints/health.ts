/**
 * Health and metrics: `GET /healthz` (the process answers), `GET /readyz` (the store answers),
 * `GET /metrics` (Prometheus text format, prom-client).
 */
import type { FastifyInstance } from 'fastify';
import type { Registry } from 'prom-client';
import type { SigilContext } from '../context.js';

/** Registers `/healthz`, `/readyz` and `/metrics`. */
export function healthEndpoints(app: FastifyInstance, ctx: SigilContext, metrics: Registry): void {
  app.get('/healthz', async (_request, reply) => reply.header('cache-control', 'no-store').send({ status: 'ok' }));
  app.get('/readyz', async (_request, reply) => {
    try {
      await ctx.store.ping();
      return reply.header('cache-control', 'no-store').send({ status: 'ready' });
    } catch (err) {
      ctx.log.error({ err }, 'store is not reachable');
      return reply.code(503).header('cache-control', 'no-store').header('retry-after', '5').send({ status: 'unavailable' });
    }
  });
  app.get('/metrics', async (_request, reply) =>
    reply.header('cache-control', 'no-store').type(metrics.contentType).send(await metrics.metrics()),
  );
}
