/**
 * The token endpoint, `POST /connect/token` (RFC 6749 §3.2, §5): client authentication, then the
 * DPoP proof if one was sent (RFC 9449 §5: it binds the tokens), then the grant named by
 * `grant_type`, then a no-store JSON response.
 */
import type { FastifyInstance } from 'fastify';
import type { Services } from '../services.js';
import type { GrantRegistry } from '../grants/registry.js';
import { OAuthError, invalidRequest } from '../protocol/errors.js';
import { credentialSource, formBody, headerValues, noStore, originOf, sendOAuthError } from '../http/request.js';
import { nowSeconds } from '../crypto/handles.js';
import { authenticateClient, findCredentials } from '../clients/authentication.js';
import { dpopAlgorithmsFor } from '../validation/dpop.js';
import { addressQuotaKey, chargeQuota } from '../limits/request-quota.js';
import type { ClientAuthServices } from '../clients/authentication.js';
import type { GrantServices } from '../grants/registry.js';

/** The token endpoint (RFC 6749 §3.2). */
export const TOKEN_PATH = '/connect/token';

/** The services this module uses. */
export type TokenEndpointServices = Pick<Services, 'config' | 'dpop' | 'events' | 'issuer' | 'limiter'> &
  ClientAuthServices &
  GrantServices;

/**
 * Registers `/connect/token` (RFC 6749 §3.2), running the handler `grantTypes` resolves for the
 * request's `grant_type`. Every method reaches it; anything but a form POST is `invalid_request`.
 */
export function tokenEndpoint(app: FastifyInstance, ctx: TokenEndpointServices, grantTypes: GrantRegistry): void {
  const tokenUrl = `${ctx.issuer}${TOKEN_PATH}`;
  app.route({
    method: ['GET', 'POST', 'PUT', 'DELETE', 'PATCH'],
    url: TOKEN_PATH,
    handler: async (request, reply) => {
      let clientId: string | undefined;
      let grantType: string | undefined;
      try {
        const params = formBody(request, 'invalid_request', ['resource']);
        const source = credentialSource(request, params);
        // The claimed client_id, so that a failed authentication's event names it (audit).
        clientId = findCredentials(source)?.id.slice(0, 100);
        const { client } = await authenticateClient(source, ctx, request.ip, TOKEN_PATH);
        clientId = client.clientId;
        grantType = params.get('grant_type');
        const handler = grantTypes.resolve(grantType, client);
        const now = nowSeconds();
        const proofs = headerValues(request, 'dpop');
        // A public client's proofs come from anyone who knows its client_id, and each proof's jti
        // is stored until it is too old: count them per address (OWASP API4:2023).
        if (client.isPublic && proofs.length > 0) {
          const limits = ctx.config.pendingLimits;
          const key = `dpop:address:${addressQuotaKey(request.ip)}`;
          await chargeQuota(
            ctx.limiter,
            'dpop_proof_quota',
            [{ key, limit: limits.dpopProofsPerAddress }],
            limits.windowSeconds,
          );
        }
        const dpop = await ctx.dpop.verify(proofs, { method: 'POST', url: tokenUrl }, now, {
          nonce: true,
          ...dpopAlgorithmsFor(client),
        });
        if (!dpop && client.requireDPoP) throw invalidRequest('this client must send a DPoP proof (RFC 9449)');
        const outcome = await handler(ctx, { params, client, origin: originOf(request), ...(dpop ? { dpop } : {}) });
        // RFC 9449 §8.2: the next nonce travels with every response while nonces are required.
        const nonce = dpop ? await ctx.dpop.nonceFor(now) : undefined;
        if (nonce !== undefined) reply.header('dpop-nonce', nonce);
        // One shape for every token event (an absent subject is undefined, which the log line
        // leaves out): objects built by conditional spreads cost several times as much to build,
        // to add the time to and to serialise.
        ctx.events.emit({
          name: 'token_issued',
          endpoint: 'token',
          clientId,
          subjectId: outcome.subjectId,
          grantType,
          scopes: outcome.response.scope?.split(' ') ?? [],
          tokenTypes: ['access_token', 'refresh_token', 'id_token'].filter((t) => t in outcome.response),
          ...originOf(request),
        });
        return noStore(reply).type('application/json; charset=utf-8').send(outcome.response);
      } catch (err) {
        if (!(err instanceof OAuthError)) throw err;
        // A nonce round trip (RFC 9449 §8) is part of a normal exchange, not a failure to audit.
        if (err.code === 'use_dpop_nonce') return sendOAuthError(reply, err);
        // A store of users that cannot answer (DirectoryUnavailable): the log keeps the reason.
        if (err.status >= 500) request.log.error({ err }, 'token request failed');
        ctx.events.emit({
          name: err.code === 'invalid_client' ? 'client_authentication_failed' : 'token_issue_failed',
          endpoint: 'token',
          ...(clientId ? { clientId } : {}),
          ...(grantType ? { grantType } : {}),
          error: err.code,
          ...(err.description ? { errorDescription: err.description } : {}),
          ...originOf(request),
        });
        return sendOAuthError(reply, err);
      }
    },
  });
}
