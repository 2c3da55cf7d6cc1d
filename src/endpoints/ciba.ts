/**
 * The backchannel authentication endpoint, `POST /connect/ciba` (OpenID CIBA Core 1.0 §7): the
 * client authenticates as at the token endpoint, then the request is checked and stored
 * (interaction/backchannel.ts) and answered with `auth_req_id`, `expires_in` and `interval`
 * (§7.3), or with an error of §13 (`invalid_request`, `unknown_user_id`, `unauthorized_client`,
 * `invalid_binding_message`, ...). Anything but a form POST is `invalid_request`.
 */
import type { FastifyInstance } from 'fastify';
import { OAuthError } from '../protocol/errors.js';
import { credentialSource, formBody, noStore, sendOAuthError } from '../http/request.js';
import { authenticateClient, type ClientAuthServices } from '../clients/authentication.js';
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
      try {
        const params = formBody(request, 'invalid_request');
        const { client } = await authenticateClient(credentialSource(request, params), ctx, request.ip, CIBA_PATH);
        const answer = await startBackchannelRequest(ctx, client, params);
        return noStore(reply).type('application/json; charset=utf-8').send(answer);
      } catch (err) {
        if (!(err instanceof OAuthError)) throw err;
        // A store of users that cannot answer (DirectoryUnavailable): the log keeps the reason.
        if (err.status >= 500) request.log.error({ err }, 'backchannel authentication request failed');
        return sendOAuthError(reply, err);
      }
    },
  });
}
