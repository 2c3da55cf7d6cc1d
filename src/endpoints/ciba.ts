/**
 * The backchannel authentication endpoint, `POST /connect/ciba` (OpenID CIBA Core 1.0 §7): the
 * client authenticates as at the token endpoint, then the request is checked and stored
 * (interaction/backchannel.ts) and answered with `auth_req_id`, `expires_in` and `interval`
 * (§7.3), or with an error of §13 (`invalid_request`, `unknown_user_id`, `unauthorized_client`,
 * `invalid_binding_message`, ...). Anything but a form POST is `invalid_request`. Each answer is
 * audited: `backchannel_authentication_succeeded` or `_failed` (`client_authentication_failed`
 * for failed client authentication, as at the token endpoint).
 */
import type { FastifyInstance } from 'fastify';
import { OAuthError } from '../protocol/errors.js';
import { credentialSource, formBody, noStore, originOf, sendOAuthError } from '../http/request.js';
import { authenticateClient, type ClientAuthServices, findCredentials } from '../clients/authentication.js';
import { type BackchannelServices, startBackchannelRequest } from '../interaction/backchannel.js';

/** The backchannel authentication endpoint (CIBA §4 `backchannel_authentication_endpoint`). */
export const CIBA_PATH = '/connect/ciba';

/** The services this module uses. */
export type CibaEndpointServices = BackchannelServices & ClientAuthServices;

/** Registers `/connect/ciba`. */
export function cibaEndpoint(app: FastifyInstance, ctx: CibaEndpointServices): void {
  app.route({
    method: ['GET', 'POST', 'PUT', 'DELETE', 'PATCH'],
    url: CIBA_PATH,
    handler: async (request, reply) => {
      let clientId: string | undefined;
      try {
        const params = formBody(request, 'invalid_request');
        const source = credentialSource(request, params);
        // The claimed client_id, so that a failed authentication's event names it (audit).
        clientId = findCredentials(source)?.id.slice(0, 100);
        const { client } = await authenticateClient(source, ctx, request.ip, CIBA_PATH);
        clientId = client.clientId;
        const answer = await startBackchannelRequest(ctx, client, params, originOf(request));
        return noStore(reply).type('application/json; charset=utf-8').send(answer);
      } catch (err) {
        if (!(err instanceof OAuthError)) throw err;
        // A store of users that cannot answer (DirectoryUnavailable): the log keeps the reason.
        if (err.status >= 500) request.log.error({ err }, 'backchannel authentication request failed');
        ctx.events.emit({
          name: err.code === 'invalid_client' ? 'client_authentication_failed' : 'backchannel_authentication_failed',
          endpoint: 'ciba',
          ...(clientId ? { clientId } : {}),
          error: err.code,
          ...(err.description ? { errorDescription: err.description } : {}),
          ...originOf(request),
        });
        return sendOAuthError(reply, err);
      }
    },
  });
}
