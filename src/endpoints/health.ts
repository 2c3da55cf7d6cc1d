/**
 * Health: `GET /healthz` (the process answers), `GET /readyz` (the store answers). Metrics are
 * served by the management listener instead (`http/metrics.ts`).
 */
import type { FastifyInstance } from 'fastify';
import type { Services } from '../services.js';

/** The services this module uses. */
export type HealthEndpointServices = Pick<Services, 'log' | 'store'>;

/** Registers `/healthz` and `/readyz`. */
export function healthEndpoints(app: FastifyInstance, ctx: HealthEndpointServices): void {
  app.get('/healthz', async (_request, reply) => reply.header('cache-control', 'no-store').send({ status: 'ok' }));
  app.get('/readyz', async (_request, reply) => {
    try {
      await ctx.store.ping();
      return reply.header('cache-control', 'no-store').send({ status: 'ready' });
    } catch (err) {
      ctx.log.error({ err }, 'store is not reachable');
      return reply
        .code(503)
        .header('cache-control', 'no-store')
        .header('retry-after', '5')
        .send({ status: 'unavailable' });
    }
  });
}
