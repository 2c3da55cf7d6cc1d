/**
 * One entry of Sigil's route table (src/compose/routes.ts): an endpoint or a group of pages, with
 * what follows from it. The app reads CORS from the entries and discovery its endpoints' URLs, so
 * a new endpoint is one entry, not edits in three places.
 */
import type { FastifyInstance } from 'fastify';

/** An endpoint or a group of pages, bound to the services it uses. */
export interface RouteRegistration {
  /**
   * `api`: a JSON API of clients and resource servers, registered outside the page plugins, so no
   * cookie, CSRF or security-header hook runs for its requests. `page`: pages, redirects and
   * public documents, with security headers, cookies and CSRF protection.
   */
  kind: 'api' | 'page';
  /** Paths below the issuer's that answer cross-origin requests from the clients' `allowedCorsOrigins`. */
  cors?: readonly string[];
  /**
   * Paths below the issuer's that answer cross-origin requests from any origin, never in
   * credentials mode: endpoints that read no cookie and take their authority from the request
   * alone (a bearer token), called by clients whose origin nobody could list yet (a browser-based
   * MCP client registering itself).
   */
  anyOriginCors?: readonly string[];
  /**
   * The authorization server metadata fields naming this entry's endpoints (RFC 8414 §2, OIDC
   * Discovery §3), each a path below the issuer's; discovery lists them as absolute URLs.
   */
  metadata?: Readonly<Record<string, string>>;
  /** Registers the routes on `app`, an encapsulated context at the issuer's path. */
  register(app: FastifyInstance): void | Promise<void>;
}

/** The route table, and the entries the standalone server also mounts at the host's root. */
export interface RouteTable {
  /** Mounted at the issuer's path, in this order. */
  routes: RouteRegistration[];
  /** For an issuer with a path: health at the root, and RFC 8414 §3.1's metadata location. */
  atRoot: RouteRegistration[];
}
