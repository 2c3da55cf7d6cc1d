/**
 * The page script every page with a password field loads (`/assets/password.js`: "Show password",
 * page-kit/show-password.ts). Served by Sigil, so the CSP stays `script-src 'self'`; cached for
 * an hour like the passkey scripts.
 */
import type { FastifyInstance } from 'fastify';
import { SHOW_PASSWORD_SCRIPT } from '../page-kit/show-password.js';

/** Registers GET `/assets/password.js`. */
export function pageScripts(app: FastifyInstance): void {
  app.get('/assets/password.js', async (_request, reply) =>
    reply
      .header('cache-control', 'public, max-age=3600')
      .type('text/javascript; charset=utf-8')
      .send(SHOW_PASSWORD_SCRIPT),
  );
}
