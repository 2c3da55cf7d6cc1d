/**
 * The effective parameters of an authorization request: a pushed request taken by its
 * `request_uri` (RFC 9126 §4), a request object by value or by reference (RFC 9101 §5, §6.3), or
 * the parameters as sent. The one step with side effects: taking a pushed request uses it up, and
 * a `request_uri` URL is fetched. Every later step reads only what this one returns.
 */
import { OAuthError, invalidRequest } from '../../protocol/errors.js';
import { Params } from '../../protocol/params.js';
import type { Client } from '../../clients/registry.js';
import { nowSeconds } from '../../crypto/handles.js';
import { isPushedRequestUri } from '../../stores/records/pushed-requests.js';
import { fetchRequestObject, verifyRequestObject } from '../request-object.js';
import { hasCallerChosenUrls } from '../../clients/client-keys.js';
import { fallbackTarget } from './client.js';
import { safeGet } from './parameters.js';
import type { AuthorizeValidationServices } from './services.js';
import { AuthorizeError } from './types.js';

/** How a request's parameters reached the validator. */
export interface RequestEntry {
  /**
   * The browser brought them to the authorization endpoint. Only there is a pushed request's
   * `request_uri` taken (once), and only there is a client that must push refused when it did not
   * (RFC 9126 §4, §6); a request being pushed (`/connect/par`) or resumed after login was
   * already admitted.
   */
  frontChannel: boolean;
}

/**
 * The parameters to validate (`raw` when it carries no request object).
 * @param client the client `raw` names (`loadClient`)
 * @throws AuthorizeError for the error page: a pushed request that is unknown, expired, used or
 *   another client's (`invalid_request_uri`). Errors of the request object (`request_uri` fetch,
 *   `verifyRequestObject`, `request` with `request_uri`, a `response_type` differing from the
 *   object's) and a request not pushed by a client that must push (`invalid_request`) go to the
 *   target of the plain parameters when they name a good one (`fallbackTarget`), else to the page.
 */
export async function loadRequestParameters(
  services: Pick<AuthorizeValidationServices, 'clientKeys' | 'config' | 'issuer' | 'store'>,
  raw: Params,
  client: Client,
  entry: RequestEntry,
): Promise<Params> {
  const pushedUri = entry.frontChannel ? safeGet(raw, 'request_uri') : undefined;
  if (pushedUri !== undefined && isPushedRequestUri(pushedUri)) {
    // RFC 9126 §4: the pushed request is the whole request; other parameters than client_id
    // are ignored. An unknown, expired, used or foreign one is never redirected (error page).
    try {
      return Params.fromRecord(
        await services.store.records.pushedRequests.take(pushedUri, client.clientId, nowSeconds()),
      ).with('client_id', client.clientId);
    } catch (err) {
      if (!(err instanceof OAuthError)) throw err;
      throw new AuthorizeError(err);
    }
  }
  try {
    if (
      entry.frontChannel &&
      (client.requirePushedAuthorizationRequests || services.config.requirePushedAuthorizationRequests)
    )
      throw invalidRequest(
        'authorization requests must be pushed to the pushed authorization request endpoint first (RFC 9126)',
      );
    return await requestObjectParameters(services, raw, client);
  } catch (err) {
    if (!(err instanceof OAuthError)) throw err;
    throw new AuthorizeError(err, fallbackTarget(raw, client));
  }
}

/**
 * The parameters of the request object `raw` carries (RFC 9101 §6.3: only those are used), or
 * `raw` itself when it carries none.
 * @throws OAuthError as `fetchRequestObject` and `verifyRequestObject`; `invalid_request` when
 *   `request` and `request_uri` are both sent, either is repeated, or the plain `response_type`
 *   differs from the object's.
 */
async function requestObjectParameters(
  services: Pick<AuthorizeValidationServices, 'clientKeys' | 'issuer'>,
  raw: Params,
  client: Client,
): Promise<Params> {
  let request = raw.get('request');
  const requestUri = raw.get('request_uri');
  if (request !== undefined && requestUri !== undefined) throw invalidRequest('send request or request_uri, not both');
  if (requestUri !== undefined)
    request = await fetchRequestObject(
      requestUri,
      client,
      hasCallerChosenUrls(client) ? services.clientKeys.guardedGet : undefined,
    );
  if (request === undefined) return raw;
  const fromObject = await verifyRequestObject(request, client, services.issuer, services.clientKeys.forClient(client));
  const queryType = raw.get('response_type');
  if (queryType !== undefined && fromObject.response_type !== undefined && queryType !== fromObject.response_type)
    throw invalidRequest('response_type differs from the request object');
  return Params.fromRecord(fromObject);
}
