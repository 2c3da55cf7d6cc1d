/**
 * Dynamic Client Registration (RFC 7591 §3) at `POST /connect/register`, and the client
 * configuration endpoint (RFC 7592 §2) at `/connect/register/<client_id>`: GET reads, PUT
 * replaces, DELETE removes, each with the client's registration access token as a Bearer token.
 * Served only when `registration.enabled`. Bodies are JSON (`application/json`) within the app's
 * body limit and the caller-JSON nesting bound, checked before parsing. Every registration
 * attempt counts against `registration.registrationsPerAddress` (an IPv6 /64 as one address).
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Services } from '../services.js';
import { credentialSource, methodNotAllowed, noStore, originOf } from '../http/request.js';
import { OAuthError } from '../protocol/errors.js';
import { Params } from '../protocol/params.js';
import { CALLER_JSON_BOUNDS, jsonBoundsViolation } from '../protocol/json-bounds.js';
import { addressQuotaKey, chargeQuota } from '../limits/request-quota.js';
import { extractBearer } from '../validation/bearer.js';

/** The services this module uses. */
export type RegistrationEndpointServices = Pick<Services, 'config' | 'limiter' | 'registrations'>;

/** The registration endpoint's path (RFC 7591 §3; discovery's `registration_endpoint`). */
export const REGISTRATION_PATH = '/connect/register';
/** The client configuration endpoint (RFC 7592 §2), one per dynamic client. */
export const CONFIGURATION_PATH = `${REGISTRATION_PATH}/:clientId`;

/** A parsed JSON request body, told apart from forms and other bodies. */
class JsonBody {
  constructor(readonly value: unknown) {}
}

/** Largest JSON body of a registration, in characters (RFC 7591 metadata is a few kilobytes). */
const MAX_BODY = 64 * 1024;

/** Registers the registration and client configuration endpoints when registration is enabled. */
export async function registrationEndpoint(app: FastifyInstance, ctx: RegistrationEndpointServices): Promise<void> {
  if (!ctx.config.registration.enabled) return;
  const registrations = ctx.registrations;
  await app.register(async (scope) => {
    scope.addContentTypeParser('application/json', { parseAs: 'string' }, (_request, body, done) => {
      const text = body as string;
      const violation = jsonBoundsViolation(text, { ...CALLER_JSON_BOUNDS, maxLength: MAX_BODY });
      if (violation) return done(new OAuthError('invalid_client_metadata', `the JSON body is ${violation}`));
      try {
        done(null, new JsonBody(JSON.parse(text)));
      } catch {
        done(new OAuthError('invalid_client_metadata', 'the body is not valid JSON'));
      }
    });

    // Every write (a registration, and a change or removal at the configuration endpoint, each of
    // which reloads the clients and may fetch a sector_identifier_uri) counts against the address's
    // quota: one registration access token must not buy unbounded work.
    const charge = async (request: FastifyRequest) => {
      const limits = ctx.config.registration;
      await chargeQuota(
        ctx.limiter,
        'registration_quota',
        [{ key: `register:${addressQuotaKey(request.ip)}`, limit: limits.registrationsPerAddress }],
        limits.windowSeconds,
      );
    };
    scope.post(REGISTRATION_PATH, async (request, reply) => {
      await charge(request);
      const token = bearerOf(request);
      const response = await registrations.register(jsonOf(request), token, originOf(request));
      return noStore(reply).code(201).type('application/json; charset=utf-8').send(response);
    });
    scope.route({
      method: ['GET', 'PUT', 'DELETE', 'PATCH'],
      url: REGISTRATION_PATH,
      handler: methodNotAllowed('POST'),
    });

    const clientIdOf = (request: FastifyRequest) => (request.params as { clientId: string }).clientId;
    const send = (reply: FastifyReply, body: unknown) =>
      noStore(reply).type('application/json; charset=utf-8').send(body);
    scope.get(CONFIGURATION_PATH, async (request, reply) =>
      send(reply, await registrations.read(clientIdOf(request), bearerOf(request))),
    );
    scope.put(CONFIGURATION_PATH, async (request, reply) => {
      await charge(request);
      return send(
        reply,
        await registrations.update(clientIdOf(request), bearerOf(request), jsonOf(request), originOf(request)),
      );
    });
    scope.delete(CONFIGURATION_PATH, async (request, reply) => {
      await charge(request);
      await registrations.remove(clientIdOf(request), bearerOf(request), originOf(request));
      return noStore(reply).code(204).send();
    });
    scope.route({ method: ['POST', 'PATCH'], url: CONFIGURATION_PATH, handler: methodNotAllowed('GET, PUT, DELETE') });
  });
}

/** The Bearer token of the Authorization header (RFC 6750 §2.1), if any; never from a body or the query. */
function bearerOf(request: FastifyRequest): string | undefined {
  return extractBearer(credentialSource(request, Params.empty()).authorization, undefined);
}

/**
 * The request's JSON body.
 * @throws OAuthError 400 `invalid_client_metadata` when the body is not `application/json`
 */
function jsonOf(request: FastifyRequest): unknown {
  if (request.body instanceof JsonBody) return request.body.value;
  throw new OAuthError('invalid_client_metadata', 'the body must be application/json');
}
