/**
 * The Fastify application: body parsing, security headers, CORS, error rendering, request metrics
 * and the routes of every endpoint.
 */
import { randomUUID } from 'node:crypto';
import cookie from '@fastify/cookie';
import cors from '@fastify/cors';
import csrf from '@fastify/csrf-protection';
import helmet from '@fastify/helmet';
import Fastify, { type FastifyBaseLogger, type FastifyError, type FastifyInstance, type FastifyRequest, type FastifyServerOptions, LogController } from 'fastify';
import type { SigilContext } from './context.js';
import type { GrantRegistry } from './grants/registry.js';
import { adminApiEndpoints } from './endpoints/admin-api.js';
import { authorizeEndpoint } from './endpoints/authorize.js';
import { deviceAuthorizationEndpoint } from './endpoints/device-authorization.js';
import { discoveryEndpoints, pathInsertedMetadataEndpoint } from './endpoints/discovery.js';
import { endSessionEndpoint } from './endpoints/end-session.js';
import { healthEndpoints } from './endpoints/health.js';
import { introspectionEndpoint } from './endpoints/introspection.js';
import { pushedAuthorizationEndpoint } from './endpoints/par.js';
import { registrationEndpoint } from './endpoints/registration.js';
import { revocationEndpoint } from './endpoints/revocation.js';
import { tokenEndpoint } from './endpoints/token.js';
import { scimEndpoints } from './endpoints/scim.js';
import { userinfoEndpoint } from './endpoints/userinfo.js';
import { callerWithScope, checkAccessToken } from './endpoints/protected-resource.js';
import { adminConsole } from './ui/admin/console.js';
import { CONSOLE_PATH } from './config/console-client.js';
import { OAuthError } from './protocol/errors.js';
import { accountPages } from './ui/account.js';
import { accountMfaPages } from './ui/account-mfa.js';
import { accountSelfServicePages } from './ui/account-self-service.js';
import { consentPage } from './ui/consent.js';
import { passkeyPages } from './ui/passkeys.js';
import { emailPages } from './ui/email-pages.js';
import { devicePages } from './ui/device.js';
import { federationRoutes } from './ui/federation.js';
import { csrfTokenOf } from './ui/csrf.js';
import { STYLES } from './page-kit/styles.js';
import { Params } from './protocol/params.js';
import { RequestMetrics } from './http/metrics.js';
import type { Tracing } from './telemetry/tracing.js';
import { NOT_A_FORM, prefersHtml, sendOAuthError } from './http/request.js';
import { cookieAttributes, cookiePath } from './http/cookies.js';
import { notFoundPage, sendErrorPage } from './ui/error-page.js';
import { DirectoryUnavailable } from './users/directory.js';
import { language } from './ui/language.js';
import { lookAssets } from './page-kit/look.js';

/** Largest request body accepted, in bytes (413 beyond). */
export const BODY_LIMIT = 64 * 1024;

/** Paths that answer cross-origin requests from the clients' `allowedCorsOrigins`. */
const CORS_PATHS = new Set([
  '/.well-known/openid-configuration',
  '/.well-known/openid-configuration/jwks',
  '/.well-known/oauth-authorization-server',
  '/connect/token',
  '/connect/userinfo',
  '/connect/revocation',
]);

/**
 * Fastify's `trustProxy` for config `trustProxy` (never `true`, refused at config load): `false`,
 * a list of proxy addresses and CIDR ranges, or a hop count. Fastify treats a bare number as
 * "trust nobody", so a hop count becomes a function trusting the `hops` nearest peers: the
 * address is then the entry that the farthest of those proxies wrote into `X-Forwarded-For`.
 */
function trustedProxies(config: false | number | string[]): false | string[] | ((address: string, hop: number) => boolean) {
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
    const description = status === 413 ? 'the request body is too large' : status === 415 ? 'unsupported content type' : 'malformed request';
    return new OAuthError('invalid_request', description, status);
  }
  request.log.error({ err }, 'request failed');
  return new OAuthError('server_error', 'the server could not complete the request', 500);
}

/**
 * Fastify's server options of the standalone app: logger, body limit, `trustProxy`,
 * timeouts and request ids. Mounted in a host app, the host's own options apply instead.
 */
function serverOptions(ctx: SigilContext): FastifyServerOptions {
  return {
    loggerInstance: ctx.log as FastifyBaseLogger,
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: BODY_LIMIT,
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
  ctx: SigilContext,
  grantTypes: GrantRegistry,
  stop: () => Promise<void>,
  metrics: RequestMetrics = new RequestMetrics(),
  tracing?: Tracing,
): Promise<FastifyInstance> {
  const app = Fastify(serverOptions(ctx));
  await app.register((sigil) => mountSigil(sigil, ctx, grantTypes, stop, metrics, tracing), { prefix: ctx.basePath });
  // The listener is Sigil's alone: liveness and readiness also at its root, where load balancers
  // and the image's HEALTHCHECK look, whatever the issuer's path; and the RFC 8414 §3.1 location
  // of the metadata of an issuer with a path, which is outside that path.
  if (ctx.basePath !== '') {
    healthEndpoints(app, ctx);
    pathInsertedMetadataEndpoint(app, ctx, grantTypes.names());
  }
  return app;
}

/**
 * Registers every Sigil route on `app`, an encapsulated context (a plugin's instance) whose prefix
 * is the issuer's path: body parsing, security headers, CORS, error and not-found rendering and
 * request metrics, all scoped to Sigil's routes, so none of them reaches the routes of a host app.
 * Its requests are recorded in `metrics`, which the management app serves (`/metrics` is not on
 * this app), and, when tracing is on, named after their routes in their spans (`tracing`).
 * `grantTypes` is the token endpoint's grant registry (built-in and extension grants): it is
 * handed to the token endpoint and discovery here, not kept on the context, so that the grants,
 * which take the context, stay above it. `stop` runs when the app closes.
 * @throws Error when the host app already registered `@fastify/csrf-protection` where Sigil would
 *   inherit it: Sigil's forms need their own (cookie scoped to the issuer's path).
 */
export async function mountSigil(
  app: FastifyInstance,
  ctx: SigilContext,
  grantTypes: GrantRegistry,
  stop: () => Promise<void>,
  metrics: RequestMetrics,
  tracing?: Tracing,
): Promise<void> {
  if (app.hasReplyDecorator('generateCsrf'))
    throw new Error('sigil: the host app registers @fastify/csrf-protection for all its routes; register it inside a plugin of your own routes so that Sigil keeps its own CSRF protection');
  app.addHook('onClose', stop);
  // Sigil's limit on every route of its own, whatever the host's server-wide limit (413 beyond).
  app.addHook('onRoute', (route) => {
    route.bodyLimit ??= BODY_LIMIT;
  });
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string' }, (_req, body, done) => {
    try {
      done(null, Params.parse(body as string));
    } catch (err) {
      done(err as Error);
    }
  });
  app.addContentTypeParser('*', { parseAs: 'buffer' }, (_req, _body, done) => done(null, NOT_A_FORM));

  app.decorate('locales', ctx.pages.locales);
  app.setErrorHandler((err: FastifyError | OAuthError, request, reply) => sendOAuthError(reply, oauthErrorOf(err, request)));

  let origins = { version: -1, set: new Set<string>() };
  const allowedOrigins = () => {
    if (origins.version !== ctx.clients.version)
      origins = { version: ctx.clients.version, set: new Set(ctx.clients.all().flatMap((c) => c.allowedCorsOrigins)) };
    return origins.set;
  };
  // CORS only on its paths, decided per route at registration: every other route opts out, so
  // the plugin does no work for it per request, and the options are built once, not per request.
  // The policy travels in the route's config, which @fastify/cors reads over its plugin-wide
  // options: a host app that registered @fastify/cors for all its routes (Sigil cannot register it
  // a second time below it) applies Sigil's policy to Sigil's routes, and Sigil's never reaches
  // the host's routes. Every field a host's options could set to something wider is named.
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
  app.addHook('onRoute', (route) => {
    route.config = { ...route.config, cors: CORS_PATHS.has(route.routePath) ? corsPolicy : false };
  });
  if (!app.hasRequestDecorator('corsPreflightEnabled')) await app.register(cors, corsPolicy);
  // Else the host's catch-all OPTIONS route would answer preflights under the prefix with its policy.
  else app.options('*', (_request, reply) => reply.callNotFound());
  // Preflight requests: the plugin's catch-all OPTIONS route has opted out like any other route
  // (404), so each CORS path answers its own, as the plugin's would.
  for (const path of CORS_PATHS)
    app.options(path, (request, reply) => ((request as { corsPreflightEnabled?: boolean }).corsPreflightEnabled ? reply.send() : reply.callNotFound()));

  metrics.observe(app);
  tracing?.observe(app);

  // The JSON APIs of clients and resource servers use no cookie and render no page: they are
  // registered outside the context of the page plugins, so no helmet, cookie or CSRF hook runs for
  // their requests (about 3% of a token request's CPU).
  tokenEndpoint(app, ctx, grantTypes);
  pushedAuthorizationEndpoint(app, ctx);
  userinfoEndpoint(app, ctx);
  introspectionEndpoint(app, ctx);
  revocationEndpoint(app, ctx);
  deviceAuthorizationEndpoint(app, ctx);
  await registrationEndpoint(app, ctx); // RFC 7591/7592, when registration.enabled
  await scimEndpoints(app, ctx); // SCIM 2.0 at /scim/v2 (RFC 7644)
  await adminApiEndpoints(app, ctx);

  // Browser pages, redirects and public documents: security headers, cookies, CSRF protection.
  await app.register(async (pages) => {
    const secureCookies = ctx.issuer.startsWith('https:');
    await pages.register(helmet, {
      contentSecurityPolicy: {
        // img-src: the https origins of a branding logo or icon, and no other (README "Look and language").
        directives: { 'frame-ancestors': ["'none'"], 'style-src': ["'self'"], 'img-src': ["'self'", 'data:', ...ctx.pages.look.imageOrigins], 'upgrade-insecure-requests': null },
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
    discoveryEndpoints(pages, ctx, grantTypes.names());
    authorizeEndpoint(pages, ctx);
    endSessionEndpoint(pages, ctx);
    accountPages(pages, ctx);
    accountMfaPages(pages, ctx);
    accountSelfServicePages(pages, ctx);
    passkeyPages(pages, ctx); // passkeys and security keys (WebAuthn)
    emailPages(pages, ctx); // password reset, address verification, self-registration
    consentPage(pages, ctx);
    devicePages(pages, ctx);
    federationRoutes(pages, ctx);
    // The web console at /admin: its token is checked as the management API's are.
    adminConsole(pages, ctx, {
      check: async (request, token) => callerWithScope(await checkAccessToken(ctx, request, token, 'Bearer', CONSOLE_PATH), ['sigil:admin']),
    });
    pages.get('/assets/sigil.css', async (_request, reply) =>
      reply.header('cache-control', 'public, max-age=3600').type('text/css; charset=utf-8').send(STYLES),
    );
    healthEndpoints(pages, ctx);
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
      prefersHtml(request) ? notFoundPage(ctx, request, reply) : sendOAuthError(reply, new OAuthError('invalid_request', 'no such endpoint', 404)),
    );
  });
}
