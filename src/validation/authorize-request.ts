/**
 * Validation of authorization requests (RFC 6749 §4.1.1, §4.2.1; OIDC Core §3.1.2.1, §3.2.2.1,
 * §3.3.2.1; RFC 7636 §4.3; RFC 9101). Returns a typed request, or says where the error goes:
 * to an error page while the client or the redirect URI is not known good (RFC 6749 §4.1.2.1),
 * back to the client afterwards.
 *
 * `validateAuthorizeRequest` composes the steps of src/validation/authorize/, in this order:
 * | step                     | module                  | errors go to                       |
 * |--------------------------|-------------------------|------------------------------------|
 * | `loadClient`             | client.ts (fetches a client metadata document) | the error page |
 * | `loadRequestParameters`  | request-object.ts       | the plain parameters' target, or the page |
 * | `responseTarget`         | client.ts               | the error page                     |
 * | `checkParameterLengths`  | parameters.ts           | the client, in mode `query`        |
 * | `checkResponseType`      | core-parameters.ts      | the client, in `responseModeFor`'s mode (every later
 * step too) |
 * | `checkScopes`            | scopes.ts               |                                    |
 * | `checkOptionalParameters`| optional-parameters.ts  |                                    |
 * | `checkResourceIndicators`| scopes.ts               |                                    |
 * | `checkAuthorizationDetails`| scopes.ts             |                                    |
 * | `checkOrganization`      | organization.ts         |                                    |
 * | `idTokenHintSubject`     | optional-parameters.ts  |                                    |
 * Only `loadClient` (a client metadata document fetched) and `loadRequestParameters` have side
 * effects (a pushed request is used up, a `request_uri` fetched); the other steps are pure, apart
 * from the `id_token_hint` signature check.
 */
import { OAuthError } from '../protocol/errors.js';
import type { Params } from '../protocol/params.js';
import { loadClient, responseTarget } from './authorize/client.js';
import { checkResponseType, normalizeResponseType, responseModeFor } from './authorize/core-parameters.js';
import { checkOptionalParameters, idTokenHintSubject } from './authorize/optional-parameters.js';
import { checkOrganization } from './authorize/organization.js';
import { checkParameterLengths, keptParameters } from './authorize/parameters.js';
import { loadRequestParameters } from './authorize/request-object.js';
import { checkAuthorizationDetails, checkResourceIndicators, checkScopes } from './authorize/scopes.js';
import type { AuthorizeValidationServices } from './authorize/services.js';
import { AuthorizeError, type AuthorizeRequest, type ResponseTarget } from './authorize/types.js';

export { isNativeRedirect } from './authorize/client.js';
export { normalizeResponseType } from './authorize/core-parameters.js';
export { PARAM_MAX_LENGTH } from './authorize/parameters.js';
export {
  AuthorizeError,
  RESPONSE_TYPES,
  type AuthorizeRequest,
  type RequestedOrganization,
  type ResponseMode,
  type ResponseTarget,
  type ResponseType,
} from './authorize/types.js';

/**
 * Validates an authorization request.
 * @param services what validation needs of the provider (the services, `Services`, will do)
 * @param raw the query (GET) or form (POST) parameters
 * @param via where the request comes from: `authorize` (the browser; a pushed request's
 *   `request_uri` is taken here, once, and clients that must push are refused otherwise), `par`
 *   (`/connect/par`, RFC 9126 §2.1: validated exactly as here before it is stored), or `resume`
 *   (parameters stored server-side by an earlier validation, after login or consent). It matters
 *   to the request-object step only (`RequestEntry.frontChannel`): `par` and `resume` are
 *   validated alike.
 * @param address the caller's address: a client metadata document fetched for it counts against
 *   its quota (`loadClient`)
 * @throws AuthorizeError with the OAuth error and, once known good, the response target. A
 *   parameter longer than `PARAM_MAX_LENGTH` is `invalid_request`: on the error page for
 *   `client_id`, `redirect_uri` and `state` (an oversized state is never echoed), else to the client.
 *   The `claims` parameter (OIDC Core §5.5, `parseClaimsParameter`), from the query or a request
 *   object, is `invalid_request` to the client when malformed, beyond `CLAIMS_JSON_BOUNDS`, sent
 *   without the `openid` scope, asking `userinfo` claims of `response_type=id_token`, or naming
 *   `sub` with anything but one string value, or `acr` as essential with an empty `values`.
 *   `authorization_details` (RFC 9396) is `invalid_authorization_details` to the client when refused.
 *   Other errors (the store failing) are thrown as they are.
 */
export async function validateAuthorizeRequest(
  services: AuthorizeValidationServices,
  raw: Params,
  via: 'authorize' | 'par' | 'resume',
  address: string,
): Promise<AuthorizeRequest> {
  const client = await loadClient(services.clients, raw, address);
  const params = await loadRequestParameters(services, raw, client, { frontChannel: via === 'authorize' });
  const { target: known, responseMode } = responseTarget(params, client);
  let target: ResponseTarget = known;
  try {
    checkParameterLengths(params);
    const responseType = params.get('response_type');
    // Errors travel in the requested mode when it is valid for the response type, else its default.
    target = { ...known, mode: responseModeFor(normalizeResponseType(responseType ?? ''), responseMode) };
    const flow = checkResponseType(responseType, responseMode, client);
    const scopes = checkScopes(params.get('scope'), flow, client, services.resources);
    const optional = checkOptionalParameters(params, flow, scopes, client);
    const resources = checkResourceIndicators(params, flow, client, services.resources);
    const authorizationDetails = checkAuthorizationDetails(params, flow, client, services.resources);
    const organization = checkOrganization(params.get('organization'), client, services.organizations);
    const hintSubject = await idTokenHintSubject(params.get('id_token_hint'), services.tokens);
    return {
      ...target,
      client,
      responseType: flow.responseType,
      scopes,
      ...optional,
      params: keptParameters(params),
      ...(hintSubject !== undefined ? { hintSubject } : {}),
      ...(resources !== undefined ? { resources } : {}),
      ...(authorizationDetails !== undefined ? { authorizationDetails } : {}),
      ...(organization !== undefined ? { organization } : {}),
    };
  } catch (err) {
    if (!(err instanceof OAuthError)) throw err;
    throw new AuthorizeError(err, target);
  }
}
