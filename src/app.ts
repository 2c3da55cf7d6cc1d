/**
 * The Fastify application: body parsing, security headers, CORS, error rendering, request metrics
 * and the routes of every endpoint (DESIGN §1, `http/`).
 */
import { randomUUID } from 'node:crypto';
import cookie from '@fastify/cookie';
import cors from '@fastify/cors';
import csrf from '@fastify/csrf-protection';
import helmet from '@fastify/helmet';
import Fastify, { type FastifyBaseLogger, type FastifyError, type FastifyInstance, LogController } from 'fastify';
import type { SigilContext } from './context.js';
import type { GrantRegistry } from './grants/registry.js';
import { authorizeEndpoint } from './endpoints/authorize.js';
import { deviceAuthorizationEndpoint } from './endpoints/device-authorization.js';
import { discoveryEndpoints } from './endpoints/discovery.js';
import { endSessionEndpoint } from './endpoints/end-session.js';
import { healthEndpoints } from './endpoints/health.js';
import { introspectionEndpoint } from './endpoints/introspection.js';
import { pushedAuthorizationEndpoint } from './endpoints/par.js';
import { revocationEndpoint } from './endpoints/revocation.js';
import { tokenEndpoint } from './endpoints/token.js';
import { scimEndpoints } from './endpoints/scim.js';
import { userinfoEndpoint } from './endpoints/userinfo.js';
import { OAuthError } from './protocol/errors.js';
import { accountPages } from './ui/account.js';
import { accountMfaPages } from './ui/account-mfa.js';
import { consentPage } from './ui/consent.js';
import { passkeyPages } from './ui/passkeys.js';
import { devicePages } from './ui/device.js';
import { federationRoutes } from './ui/federation.js';
import { csrfTokenOf } from './ui/csrf.js';
import { STYLES } from './ui/styles.js';
import { Params } from './protocol/params.js';
import { RequestMetrics } from './http/metrics.js';
import type { Tracing } from './telemetry/tracing.js';
import { NOT_A_FORM, sendOAuthError } from './http/request.js';

/** Largest request body accepted, in bytes (D-17: 413 beyond). */
export const BODY_LIMIT = 64 * 1024;

/** Paths that answer cross-origin requests from the clients' `allowedCorsOrigins`. */
const CORS_PATHS = new Set([
  '/.well-known/openid-configuration',
  '/.well-known/openid-configuration/jwks',
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
 * Builds the HTTP application for a provider's services. Not yet listening. Its requests are
 * recorded in `metrics`, which the management app serves (`/metrics` is not on this app), and, when
 * tracing is on, named after their routes in their spans (`tracing`).
 * `grantTypes` is the token endpoint's grant registry (built-in and extension grants): it is
 * handed to the token endpoint and discovery here, not kept on the context, so that the grants,
 * which take the context, stay above it.
 */
export async function buildApp(
  ctx: SigilContext,
  grantTypes: GrantRegistry,
  metrics: RequestMetrics = new RequestMetrics(),
  tracing?: Tracing,
): Promise<FastifyInstance> {
  const app = Fastify({
    loggerInstance: ctx.log as FastifyBaseLogger,
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: BODY_LIMIT,
    trustProxy: trustedProxies(ctx.config.trustProxy),
    requestTimeout: 30_000,
    return503OnClosing: true,
    // Audit events carry the request's id (http/request.ts originOf): random, so ids from several
    // nodes or restarts never collide. A caller's X-Request-Id is not taken: callers could reuse one.
    genReqId: () => randomUUID(),
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

  app.setErrorHandler((err: FastifyError | OAuthError, request, reply) => {
    if (err instanceof OAuthError) {
      // A 5xx OAuthError (a shared counter store that does not answer) carries its reason in the
      // message, not in the description the caller sees: the log keeps it.
      if (err.status >= 500) request.log.error({ err }, 'request failed');
      return sendOAuthError(reply, err);
    }
    const status = err.statusCode ?? 500;
    if (status >= 400 && status < 500) {
      const description =
        status === 413 ? 'the request body is too large' : status === 415 ? 'unsupported content type' : 'malformed request';
      return sendOAuthError(reply, new OAuthError('invalid_request', description, status));
    }
    request.log.error({ err }, 'request failed');
    return sendOAuthError(reply, new OAuthError('server_error', 'the server could not complete the request', 500));
  });
  app.setNotFoundHandler((_request, reply) =>
    sendOAuthError(reply, new OAuthError('invalid_request', 'no such endpoint', 404)),
  );

  let origins = { version: -1, set: new Set<string>() };
  const allowedOrigins = () => {
    if (origins.version !== ctx.clients.version)
      origins = { version: ctx.clients.version, set: new Set(ctx.clients.all().flatMap((c) => c.allowedCorsOrigins)) };
    return origins.set;
  };
  // CORS only on its paths, decided per route at registration: every other route opts out, so
  // the plugin does no work for it per request, and the options are built once, not per request.
  app.addHook('onRoute', (route) => {
    if (!CORS_PATHS.has(route.url)) route.config = { ...route.config, cors: false };
  });
  await app.register(cors, {
    origin: (origin, callback) => callback(null, origin !== undefined && allowedOrigins().has(origin) ? origin : false),
    methods: ['GET', 'POST'],
    // RFC 9449 §8: a browser client must be able to read the DPoP-Nonce of a response.
    exposedHeaders: ['DPoP-Nonce', 'WWW-Authenticate'],
  });
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
  await scimEndpoints(app, ctx); // SCIM 2.0 at /scim/v2 (issue 25)

  // Browser pages, redirects and public documents: security headers, cookies, CSRF protection.
  await app.register(async (pages) => {
    const secureCookies = ctx.issuer.startsWith('https:');
    await pages.register(helmet, {
      contentSecurityPolicy: {
        directives: { 'frame-ancestors': ["'none'"], 'style-src': ["'self'"], 'upgrade-insecure-requests': null },
      },
      frameguard: { action: 'deny' },
      referrerPolicy: { policy: 'no-referrer' },
      // RFC 6797 §7.2: Strict-Transport-Security only over secure transport, i.e. an https issuer.
      hsts: secureCookies,
    });
    await pages.register(cookie);
    await pages.register(csrf, {
      sessionPlugin: '@fastify/cookie',
      cookieKey: 'sigil.csrf',
      cookieOpts: { path: '/', httpOnly: true, sameSite: 'lax', secure: secureCookies },
      getToken: csrfTokenOf,
    });
    discoveryEndpoints(pages, ctx, grantTypes.names());
    authorizeEndpoint(pages, ctx);
    endSessionEndpoint(pages, ctx);
    accountPages(pages, ctx);
    accountMfaPages(pages, ctx);
    passkeyPages(pages, ctx); // passkeys and security keys (issue 12)
    consentPage(pages, ctx);
    devicePages(pages, ctx);
    federationRoutes(pages, ctx);
    pages.get('/assets/sigil.css', async (_request, reply) =>
      reply.header('cache-control', 'public, max-age=3600').type('text/css; charset=utf-8').send(STYLES),
    );
    healthEndpoints(pages, ctx);
  });
  return app;
}
