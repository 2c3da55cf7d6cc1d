/**
 * Request objects (RFC 9101; OIDC Core §6): the authorization request as a JWT signed by the
 * client, passed by value (`request`) or by reference (`request_uri`, fetched only from the
 * client's registered `requestUris`, https, short timeout, small size, no redirects).
 */
import { decodeProtectedHeader, type JWTPayload, type JWTVerifyGetKey, jwtVerify } from 'jose';
import { ASYMMETRIC_ASSERTION_ALGORITHMS, FAPI2_ALGORITHMS, SYMMETRIC_ASSERTION_ALGORITHMS } from '../config/schema.js';
import { OAuthError, invalidRequest } from '../protocol/errors.js';
import type { Client } from '../clients/registry.js';
import { CALLER_JSON_BOUNDS, jwsBoundsViolation } from '../protocol/json-bounds.js';

/** Largest request object accepted, in characters (Duende's limit). */
export const MAX_REQUEST_OBJECT = 51_200;
/** Time allowed to fetch a `request_uri`, in milliseconds. */
const FETCH_TIMEOUT_MS = 5_000;
/** Asymmetric request object algorithms verified with the client's keys (discovery lists them). */
export const REQUEST_OBJECT_ASYMMETRIC: string[] = [...ASYMMETRIC_ASSERTION_ALGORITHMS];
/** HMAC request object algorithms, keyed with the client's clear-text secret. */
export const REQUEST_OBJECT_SYMMETRIC: string[] = [...SYMMETRIC_ASSERTION_ALGORITHMS];
const SYMMETRIC = REQUEST_OBJECT_SYMMETRIC;

const invalidObject = (description: string) => new OAuthError('invalid_request_object', description);

/**
 * Verifies a request object and returns its parameters as strings (numbers and objects
 * serialized), `client_id` included.
 * @param issuer Sigil's issuer: the required `aud` (OIDC Core §6.1)
 * @param keys the client's public keys (`ClientKeys.forClient`: `jwks` or `jwksUri`), if it has any
 * @throws OAuthError `invalid_request_object` (bad JWT, signature, an algorithm outside
 *   PS256/ES256/EdDSA for a `fapi2` client, `aud`, `exp`, nested
 *   request, JSON beyond `CALLER_JSON_BOUNDS`: over 16 levels deep), `invalid_request` (`client_id` differs
 * from the request's).
 */
export async function verifyRequestObject(
  jwt: string,
  client: Client,
  issuer: string,
  keys: JWTVerifyGetKey | undefined,
): Promise<Record<string, string>> {
  if (jwt.length > MAX_REQUEST_OBJECT) throw invalidObject('the request object is too large');
  const violation = jwsBoundsViolation(jwt, CALLER_JSON_BOUNDS);
  if (violation) throw invalidObject(`the request object's JSON is ${violation}`);
  let alg: string | undefined;
  try {
    alg = decodeProtectedHeader(jwt).alg;
  } catch {
    throw invalidObject('the request object is not a signed JWT');
  }
  let payload: JWTPayload;
  try {
    const options = { audience: issuer, clockTolerance: 30, requiredClaims: ['exp'] };
    // FAPI 2.0 SP §5.4.1: a fapi2 client signs with PS256, ES256 or EdDSA only.
    const fapi2 = client.profile === 'fapi2';
    if (fapi2 && (alg === undefined || !(FAPI2_ALGORITHMS as readonly string[]).includes(alg)))
      throw invalidObject('a FAPI 2.0 client signs request objects with PS256, ES256 or EdDSA');
    if (alg !== undefined && SYMMETRIC.includes(alg)) {
      // HS* needs the client's secret in clear text (RFC 9101 §10.1 symmetric keys).
      const secret = client.clientSecrets.find((s) => !s.startsWith('sha256:'));
      if (!secret) throw invalidObject('the client has no secret usable for HS* request objects');
      ({ payload } = await jwtVerify(jwt, new TextEncoder().encode(secret), { ...options, algorithms: SYMMETRIC }));
    } else {
      if (!keys) throw invalidObject('the client has no registered keys');
      ({ payload } = await jwtVerify(jwt, keys, {
        ...options,
        algorithms: fapi2 ? [...FAPI2_ALGORITHMS] : REQUEST_OBJECT_ASYMMETRIC,
      }));
    }
  } catch (err) {
    if (err instanceof OAuthError) throw err;
    throw invalidObject('the request object could not be verified');
  }
  if ('request' in payload || 'request_uri' in payload) throw invalidObject('request objects must not nest');
  if (payload.iss !== undefined && payload.iss !== client.clientId) throw invalidObject('iss must be the client_id');
  if (payload.client_id !== client.clientId) throw invalidRequest('client_id of the request object differs');
  const params: Record<string, string> = {};
  for (const [name, value] of Object.entries(payload)) {
    if (['iss', 'aud', 'exp', 'iat', 'nbf', 'jti'].includes(name) || value === null || value === undefined) continue;
    params[name] =
      typeof value === 'string' ? value : typeof value === 'object' ? JSON.stringify(value) : String(value);
  }
  return params;
}

/**
 * Fetches a request object by reference (OIDC Core §6.2) from one of the client's registered
 * `requestUris`. Never fetches any other URL (RFC 9101 §10.4.1).
 * @param get the fetch underneath: the global one, or one under the SSRF guard
 *   (`ClientKeys.guardedGet`) for a client whose URLs a caller chose (RFC 9101 §10.4.1)
 * @throws OAuthError `request_uri_not_supported` (the client registered none),
 *   `invalid_request_uri` (not registered, fetch failed or refused, too large, timed out).
 */
export async function fetchRequestObject(
  uri: string,
  client: Client,
  get: (url: string, options: RequestInit) => Promise<Response> = fetch,
): Promise<string> {
  if (client.requestUris.length === 0)
    throw new OAuthError('request_uri_not_supported', 'request_uri is not enabled for this client');
  if (!client.requestUris.includes(uri)) throw new OAuthError('invalid_request_uri', 'request_uri is not registered');
  let body = '';
  try {
    const res = await get(uri, { redirect: 'error', signal: AbortSignal.timeout(FETCH_TIMEOUT_MS) });
    if (res.status !== 200 || !res.body) throw new Error('status');
    const decoder = new TextDecoder();
    for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
      body += decoder.decode(chunk, { stream: true });
      if (body.length > MAX_REQUEST_OBJECT) throw new Error('size');
    }
  } catch {
    throw new OAuthError('invalid_request_uri', 'the request_uri could not be fetched');
  }
  return body.trim();
}
