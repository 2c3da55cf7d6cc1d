/**
 * `InjectBrowser`: the cookie-keeping browser of `authorize-helpers.ts` over a bare Fastify app,
 * for flows through the login and consent pages without a real browser (the Chromium suite
 * covers the real one).
 */
import type { FastifyInstance } from 'fastify';
import { Browser, input } from './authorize-helpers.js';

export type { Step } from './authorize-helpers.js';

/** A cookie jar plus helpers to read forms, over `app.inject`. */
export class InjectBrowser extends Browser {
  constructor(app: FastifyInstance) {
    super({ app });
  }

  /** The value of a hidden input in an HTML page. */
  static input(html: string, name: string): string {
    return input(html, name);
  }
}
