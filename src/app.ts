/**
 * The Fastify application: body parsing, security headers, CORS, error rendering, request metrics
 * and the routes of every endpoint.
 */
import { randomUUID } from 'node:crypto';
import cookie from '@fastify/cookie';
import cors from '@fastify/cors';
import csrf from '@fastify/csrf-protection';
import helmet from '@fastify/helmet';
import Fastify, {
  type FastifyBaseLogger,
  type FastifyError,
  type FastifyInstance,
  type FastifyRequest,
  type FastifyServerOptions,
  LogController,
} from 'fastify';
import type { Services } from './services.js';
import type { RouteRegistration, RouteTable } from './http/routes.js';
import { OAuthError } from './protocol/errors.js';
import { csrfTokenOf } from './ui/csrf.js';
import { STYLES } from './page-kit/styles.js';
import { Params } from './protocol/params.js';
import { RequestMetrics } from './http/metrics.js';
import type { Tracing } from './telemetry/tracing.js';
import { NOT_A_FORM, prefersHtml, sendOAuthError } from './http/request.js';
import { cookieAttributes, cookiePath } from './http/cookies.js';
import { type ErrorPageServices, notFoundPage, sendErrorPage } from './ui/error-page.js';
import { DirectoryUnavailable } from './users/directory.js';
import { language } from './ui/language.js';
import { lookAssets } from './page-kit/look.js';

/** The services this module uses. */
export type AppServices = Pick<Services, 'basePath' | 'clients' | 'config' | 'issuer' | 'log' | 'pages'> &
  ErrorPageServices;

/** Largest request body accepted, in bytes (413 beyond). */
export const BODY_LIMIT = 64 * 1024;

/**
 * Fastify's `trustProxy` for config `trustProxy` (never `true`, refused at config load): `false`,
 * a list of proxy addresses and CIDR ranges, or a hop count. Fastify treats a bare number as
 * "trust nobody", so a hop count becomes a function trusting the `hops` nearest peers: the
 * address is then the entry that the farthest of those proxies wrote into `X-Forwarded-For`.
 */
function trustedProxies(
  config: false | number | string[],
): false | string[] | ((address: string, hop: number) => boolean) {
  if (typeof config !== 'number') return config;
  return (_address, hop) => hop < config;
}

/**
 * The OAuth error a failed request is answered with: its own, 400 `invalid_request` for a
 * malformed request (413, 415 kept), 500 `server_error` otherwise. The log keeps the reason of a
 * 5xx (a 5xx OAuthError, a shared counter store that does not answer, carries it in its message,
 * not in the description the caller sees); the caller never sees a stack trace.
 */
function oauthErrorOf(err: FastifyError | OAuthError, request: FastifyRequest): OAuthError {
  if (err instanceof OAuthError) {
    if (err.status >= 500) request.log.error({ err }, 'request failed');
    return err;
  }
  const status = err.statusCode ?? 500;
  if (status >= 400 && status < 500) {
    const description =
      status === 413
        ? 'the request body is too large'
        : status === 415
          ? 'unsupported content type'
          : 'malformed request';
    return new OAuthError('invalid_request', description, status);
  }
  request.log.error({ err }, 'request failed');
  return new OAuthError('server_error', 'the server could not complete the request', 500);
}

/**
 * Fastify's server options of the standalone app: logger, body limit, `trustProxy`,
 * timeouts and request ids. Mounted in a host app, the host's own options apply instead.
 */
/** The longest path parameter the router takes: a subject of 255 characters, each percent-encoded. */
const MAX_PATH_PARAMETER = 3 * 255;

function serverOptions(ctx: AppServices): FastifyServerOptions {
  return {
    loggerInstance: ctx.log as FastifyBaseLogger,
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: BODY_LIMIT,
    // A path parameter may be a subject (OIDC Core §2: up to 255 characters), percent-encoded up to
    // three times as long; Fastify's default of 100 answered 414 for valid subjects past 100. Every
    // route bounds its own parameters below this. (In a host app, its own router decides.)
    routerOptions: { maxParamLength: MAX_PATH_PARAMETER },
    trustProxy: trustedProxies(ctx.config.trustProxy),
    requestTimeout: 30_000,
    return503OnClosing: true,
    // Audit events carry the request's id (http/request.ts originOf): random, so ids from several
    // nodes or restarts never collide. A caller's X-Request-Id is not taken: callers could reuse one.
    genReqId: () => randomUUID(),
  };
}

/**
 * Builds the standalone HTTP application: a bare Fastify app with Sigil mounted at the issuer's
 * path (`mountSigil`, the same code `sigilPlugin` runs in a host app). Not yet listening.
 * Closing it runs `stop` (housekeeping, store) after the server has stopped taking requests.
 */
export async function buildApp(
  ctx: AppServices,
  table: RouteTable,
  stop: () => Promise<void>,
  metrics: RequestMetrics = new RequestMetrics(),
  tracing?: Tracing,
): Promise<FastifyInstance> {
  const app = Fastify(serverOptions(ctx));
  await app.register((sigil) => mountSigil(sigil, ctx, table.routes, stop, metrics, tracing), { prefix: ctx.basePath });
  // The listener is Sigil's alone: liveness and readiness also at its root, where load balancers
  // and the image's HEALTHCHECK look, whatever the issuer's path; and the RFC 8414 §3.1 location
  // of the metadata of an issuer with a path, which is outside that path.
  if (ctx.basePath !== '') for (const route of table.atRoot) await route.register(app);
  return app;
}

/**
 * Registers every Sigil route on `app`, an encapsulated context (a plugin's instance) whose prefix
 * is the issuer's path: body parsing, security headers, CORS, error and not-found rendering and
 * request metrics, all scoped to Sigil's routes, so none of them reaches the routes of a host app.
 * Its requests are recorded in `metrics`, which the management app serves (`/metrics` is not on
 * this app), and, when tracing is on, named after their routes in their spans (`tracing`).
 * `routes` is the route table (src/compose/routes.ts). `stop` runs when the app closes.
 * @throws Error when the host app already registered `@fastify/csrf-protection` where Sigil would
 *   inherit it: Sigil's forms need their own (cookie scoped to the issuer's path).
 */
export async function mountSigil(
  app: FastifyInstance,
  ctx: AppServices,
  routes: readonly RouteRegistration[],
  stop: () => Promise<void>,
  metrics: RequestMetrics,
  tracing?: Tracing,
): Promise<void> {
  if (app.hasReplyDecorator('generateCsrf'))
    throw new Error(
      'sigil: the host app registers @fastify/csrf-protection for all its routes; register it inside a plugin of your own routes so that Sigil keeps its own CSRF protection',
    );
  app.addHook('onClose', stop);
  // Sigil's limit on every route of its own, whatever the host's server-wide limit (413 beyond).
  app.addHook('onRoute', (route) => {
    route.bodyLimit ??= BODY_LIMIT;
  });
  bodyParsers(app);
  app.decorate('locales', ctx.pages.locales);
  app.setErrorHandler((err: FastifyError | OAuthError, request, reply) =>
    sendOAuthError(reply, oauthErrorOf(err, request)),
  );
  await crossOrigin(app, ctx, {
    listed: new Set(routes.flatMap((r) => r.cors ?? [])),
    anyOrigin: new Set(routes.flatMap((r) => r.anyOriginCors ?? [])),
  });
  metrics.observe(app);
  tracing?.observe(app);
  // The JSON APIs of clients and resource servers use no cookie and render no page: they are
  // registered outside the context of the page plugins, so no helmet, cookie or CSRF hook runs for
  // their requests (about 3% of a token request's CPU).
  for (const route of routes) if (route.kind === 'api') await route.register(app);
  // Browser pages, redirects and public documents: security headers, cookies, CSRF protection.
  await app.register((pages) =>
    pagesPlugin(
      pages,
      ctx,
      routes.filter((r) => r.kind === 'page'),
    ),
  );
}

/** Form bodies become `Params`; any other body is `NOT_A_FORM` (each endpoint says what it wants). */
function bodyParsers(app: FastifyInstance): void {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string' }, (_req, body, done) => {
    try {
      done(null, Params.parse(body as string));
    } catch (err) {
      done(err as Error);
    }
  });
  app.addContentTypeParser('*', { parseAs: 'buffer' }, (_req, _body, done) => done(null, NOT_A_FORM));
}

/**
 * CORS on `paths.listed` from the clients' `allowedCorsOrigins`, and on `paths.anyOrigin` from
 * any origin (`*`), decided per route at registration: every other route opts out, so the plugin
 * does no work for it per request, and the options are built once, not per request. Neither
 * policy allows credentials (`Access-Control-Allow-Credentials` is never sent): a browser sends
 * no cookie or client certificate with these requests, so any origin gets no more than a
 * server-side caller would. The policy travels in the route's config, which @fastify/cors reads
 * over its plugin-wide options: a host app that registered @fastify/cors for all its routes
 * (Sigil cannot register it a second time below it) applies Sigil's policy to Sigil's routes,
 * and Sigil's never reaches the host's routes. Every field a host's options could set to
 * something wider is named.
 */
async function crossOrigin(
  app: FastifyInstance,
  ctx: Pick<AppServices, 'clients'>,
  paths: { listed: ReadonlySet<string>; anyOrigin: ReadonlySet<string> },
): Promise<void> {
  let origins = { version: -1, set: new Set<string>() };
  const allowedOrigins = () => {
    if (origins.version !== ctx.clients.version)
      origins = { version: ctx.clients.version, set: new Set(ctx.clients.all().flatMap((c) => c.allowedCorsOrigins)) };
    return origins.set;
  };
  const corsPolicy = {
    origin: (origin: string | undefined, callback: (err: Error | null, allow: string | false) => void) =>
      callback(null, origin !== undefined && allowedOrigins().has(origin) ? origin : false),
    methods: ['GET', 'POST'],
    // RFC 9449 §8: a browser client must be able to read the DPoP-Nonce of a response.
    exposedHeaders: ['DPoP-Nonce', 'WWW-Authenticate'],
    credentials: false,
    preflight: true,
    preflightContinue: false,
    strictPreflight: false,
  };
  // RFC 7592's management methods too; `*` is the Fetch standard's wildcard, valid without credentials only.
  const anyOriginPolicy = { ...corsPolicy, origin: '*', methods: ['GET', 'POST', 'PUT', 'DELETE'] };
  app.addHook('onRoute', (route) => {
    const cors = paths.anyOrigin.has(route.routePath)
      ? anyOriginPolicy
      : paths.listed.has(route.routePath)
        ? corsPolicy
        : false;
    route.config = { ...route.config, cors };
  });
  if (!app.hasRequestDecorator('corsPreflightEnabled')) await app.register(cors, corsPolicy);
  // Else the host's catch-all OPTIONS route would answer preflights under the prefix with its policy.
  else app.options('*', (_request, reply) => reply.callNotFound());
  // Preflight requests: the plugin's catch-all OPTIONS route has opted out like any other route
  // (404), so each CORS path answers its own, as the plugin's would.
  for (const path of [...paths.listed, ...paths.anyOrigin])
    app.options(path, (request, reply) =>
      (request as { corsPreflightEnabled?: boolean }).corsPreflightEnabled ? reply.send() : reply.callNotFound(),
    );
}

/**
 * The pages' plugin: security headers, cookies and CSRF protection, then the page entries of the
 * route table, the style sheet and the look's assets, and errors and unknown paths as pages.
 */
async function pagesPlugin(
  pages: FastifyInstance,
  ctx: AppServices,
  routes: readonly RouteRegistration[],
): Promise<void> {
  const secureCookies = ctx.issuer.startsWith('https:');
  await pages.register(helmet, {
    contentSecurityPolicy: {
      // img-src: the https origins of a branding logo or icon, and no other (docs/sign-in-and-pages.md, "Look and language").
      directives: {
        'frame-ancestors': ["'none'"],
        'style-src': ["'self'"],
        'img-src': ["'self'", 'data:', ...ctx.pages.look.imageOrigins],
        'upgrade-insecure-requests': null,
      },
    },
    frameguard: { action: 'deny' },
    referrerPolicy: { policy: 'no-referrer' },
    // RFC 6797 §7.2: Strict-Transport-Security only over secure transport, i.e. an https issuer.
    // Under a path the host name is not Sigil's alone: its subdomains are left to their owner.
    hsts: secureCookies && { maxAge: 31_536_000, includeSubDomains: ctx.basePath === '' },
  });
  // A host app's @fastify/cookie, registered for all its routes, already parses and sets cookies
  // here (it cannot be registered twice); Sigil's cookies name all their attributes (cookies.ts).
  if (!pages.hasRequestDecorator('cookies')) await pages.register(cookie);
  await pages.register(csrf, {
    sessionPlugin: '@fastify/cookie',
    cookieKey: 'sigil.csrf',
    cookieOpts: cookieAttributes(ctx.issuer, cookiePath(ctx.issuer)),
    getToken: csrfTokenOf,
  });
  for (const route of routes) await route.register(pages);
  pages.get('/assets/sigil.css', async (_request, reply) =>
    reply.header('cache-control', 'public, max-age=3600').type('text/css; charset=utf-8').send(STYLES),
  );
  lookAssets(pages, ctx.pages.look); // branding: theme, logo, icon
  // Browsers get errors and unknown paths as pages, API clients as JSON.
  // A user directory that goes down mid-step (second factor, passkeys, /account) is a page whatever
  // the Accept header: every route here that asks a directory is a page, save the passkey script's
  // JSON routes, which answer for themselves.
  pages.setErrorHandler((err: FastifyError | OAuthError, request, reply) => {
    const error = oauthErrorOf(err, request);
    const page = error instanceof DirectoryUnavailable || prefersHtml(request);
    return page ? sendErrorPage(ctx, reply, error, language(request), error.status) : sendOAuthError(reply, error);
  });
  pages.setNotFoundHandler((request, reply) =>
    prefersHtml(request)
      ? notFoundPage(ctx, request, reply)
      : sendOAuthError(reply, new OAuthError('invalid_request', 'no such endpoint', 404)),
  );
}
