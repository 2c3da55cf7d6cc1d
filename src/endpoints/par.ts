/**
 * Pushed authorization requests, `POST /connect/par` (RFC 9126 §2): the client authenticates as at
 * the token endpoint, the request is validated by the authorization endpoint's own validator
 * (`validateAuthorizeRequest`, signed request objects included, RFC 9126 §3), stored for
 * `pushedAuthorizationRequestLifetime` seconds, and answered with 201 and a one-time
 * `request_uri` (§2.2). Errors are the token endpoint's JSON errors (§2.3). A `DPoP` header is
 * verified (RFC 9449 §10.1: `invalid_dpop_proof` when it fails) and binds the pushed request, hence
 * its code, to the proof key; a `dpop_jkt` naming another key is `invalid_request`.
 *
 * Stored rows and quotas: a confidential client has authenticated, so its requests are its own
 * to make (each row is bounded by `PARAM_MAX_LENGTH` and lives a minute); a public client proves
 * nothing by its `client_id`, so its pushes count against the caller's address like pending
 * authorization requests do (`pendingLimits.interactionsPerAddress`).
 */
import type { FastifyInstance } from 'fastify';
import type { Services } from '../services.js';
import { OAuthError, invalidRequest } from '../protocol/errors.js';
import { credentialSource, formBody, headerValues, noStore, originOf, sendOAuthError } from '../http/request.js';
import { nowSeconds } from '../crypto/handles.js';
import { AuthorizeError, validateAuthorizeRequest } from '../validation/authorize-request.js';
import { authenticateClient } from '../clients/authentication.js';
import { dpopAlgorithmsFor } from '../validation/dpop.js';
import { addressQuotaKey, chargeQuota } from '../limits/request-quota.js';
import type { ClientAuthServices } from '../clients/authentication.js';
import type { AuthorizeValidationServices } from '../validation/authorize/services.js';

/** The pushed authorization request endpoint (RFC 9126 §2). */
export const PAR_PATH = '/connect/par';

/** The services this module uses. */
export type ParEndpointServices = Pick<Services, 'config' | 'dpop' | 'events' | 'issuer' | 'limiter' | 'store'> &
  AuthorizeValidationServices &
  ClientAuthServices;

/** Registers `/connect/par` (anything but a form POST: 400 `invalid_request`). */
export function pushedAuthorizationEndpoint(app: FastifyInstance, ctx: ParEndpointServices): void {
  app.route({
    method: ['GET', 'POST', 'PUT', 'DELETE', 'PATCH'],
    url: PAR_PATH,
    handler: async (request, reply) => {
      try {
        const params = formBody(request, 'invalid_request');
        const { client } = await authenticateClient(credentialSource(request, params), ctx, request.ip, PAR_PATH);
        // RFC 9126 §2.1: a pushed request cannot itself reference one.
        if (params.has('request_uri'))
          throw invalidRequest('request_uri is not allowed in a pushed authorization request');
        if (client.isPublic) {
          const limits = ctx.config.pendingLimits;
          await chargeQuota(
            ctx.limiter,
            'interaction_quota',
            [{ key: `interaction:address:${addressQuotaKey(request.ip)}`, limit: limits.interactionsPerAddress }],
            limits.windowSeconds,
          );
        }
        let validated;
        try {
          // With Basic authentication the body may lack client_id; findCredentials ensured that a
          // client_id sent names the authenticated client.
          validated = await validateAuthorizeRequest(ctx, params.with('client_id', client.clientId), 'par', request.ip);
        } catch (err) {
          if (err instanceof AuthorizeError) throw err.error;
          throw err;
        }
        // RFC 9449 §10.1: a DPoP proof sent with the push binds the code to its key; with
        // dpop_jkt as well, both must name the same key. Checked after the request is valid, so
        // that a refused request uses up no proof.
        const proof = await ctx.dpop.verify(
          headerValues(request, 'dpop'),
          { method: 'POST', url: `${ctx.issuer}${PAR_PATH}` },
          nowSeconds(),
          dpopAlgorithmsFor(client),
        );
        if (proof) {
          const named = validated.params.dpop_jkt;
          if (named !== undefined && named !== proof.jkt)
            throw invalidRequest('dpop_jkt does not match the key of the DPoP proof (RFC 9449 §10.1)');
          validated.params.dpop_jkt = proof.jkt;
        }
        const lifetime = ctx.config.pushedAuthorizationRequestLifetime;
        const requestUri = await ctx.store.records.pushedRequests.push(
          client.clientId,
          validated.params,
          lifetime,
          nowSeconds(),
        );
        return noStore(reply)
          .code(201)
          .type('application/json; charset=utf-8')
          .send({ request_uri: requestUri, expires_in: lifetime });
      } catch (err) {
        if (!(err instanceof OAuthError)) throw err;
        if (err.code === 'invalid_client')
          ctx.events.emit({
            name: 'client_authentication_failed',
            endpoint: 'par',
            error: err.code,
            ...(err.description ? { errorDescription: err.description } : {}),
            ...originOf(request),
          });
        return sendOAuthError(reply, err);
      }
    },
  });
}
