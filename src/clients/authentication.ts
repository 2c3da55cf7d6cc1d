/**
 * Client authentication at the back-channel endpoints (RFC 6749 §2.3, §3.2.1): `client_secret_basic`,
 * `client_secret_post`, signed JWT assertions (`private_key_jwt` and `client_secret_jwt`: RFC 7523
 * §2.2, §3; RFC 7521 §4.2; OIDC Core §9), and public clients by `client_id` alone. Every endpoint
 * that authenticates clients (token, introspection, revocation, device authorization, PAR) calls
 * `authenticateClient`. API resources authenticate at introspection with the secret forms
 * (RFC 7662 §2.1).
 */
import { decodeJwt, decodeProtectedHeader, errors as joseErrors, type JWTPayload, jwtVerify } from 'jose';
import {
  ASYMMETRIC_ASSERTION_ALGORITHMS,
  type ClientConfig,
  SYMMETRIC_ASSERTION_ALGORITHMS,
} from '../config/schema.js';
import { OAuthError, invalidRequest } from '../protocol/errors.js';
import { type CredentialSource, formDecode } from '../protocol/params.js';
import { nowSeconds, secretDigest, secretMatches } from '../crypto/handles.js';
import type { ClientKeys } from './client-keys.js';
import type { CredentialAttempt, FailureLimiter } from '../limits/failure-limiter.js';
import { CALLER_JSON_BOUNDS, jwsBoundsViolation } from '../protocol/json-bounds.js';
import type { ReplayCache } from '../limits/replay-cache.js';
import { MetadataDocumentError } from './metadata-documents.js';
import type { ApiSecrets, Client, ClientRegistry } from './registry.js';

/** `client_assertion_type` of a JWT client assertion (RFC 7523 §2.2). */
export const JWT_BEARER_ASSERTION = 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer';
/** Largest client assertion accepted, in characters (a JWT with a 4096-bit RSA signature is under 1,500). */
export const MAX_ASSERTION_LENGTH = 8_192;
/** Clock skew tolerated on a client assertion's `exp`, `nbf` and `iat`, in seconds. */
export const ASSERTION_CLOCK_SKEW = 30;
/** Longest `jti` accepted, in characters. */
const MAX_JTI_LENGTH = 256;

/** How a request presented its credentials (the `token_endpoint_auth_method` names of RFC 7591 §2). */
export type AuthMethod =
  | 'client_secret_basic'
  | 'client_secret_post'
  | 'client_secret_jwt'
  | 'private_key_jwt'
  | 'none';

/** Credentials as found in a request, not yet checked. */
export interface PresentedCredentials {
  /** The client named: `client_id`, or an assertion's (unverified) `sub` when `client_id` is absent. */
  id: string;
  /** The secret; undefined when none was sent, or an empty one (`Basic base64(client_id:)`, RFC 6749 §2.3.1). */
  secret: string | undefined;
  method: AuthMethod;
  /** The JWT of `client_secret_jwt` / `private_key_jwt`, not yet verified. */
  assertion?: string;
}

/** What `authenticateClient` needs of a Sigil instance (`Services` has all of it). */
export interface ClientAuthServices {
  clients: ClientRegistry;
  limiter: FailureLimiter;
  /** Remembers assertion `jti`s until their `exp` (RFC 7523 §3 item 7). */
  replay: ReplayCache;
  clientKeys: ClientKeys;
  /** Sigil's issuer identifier: an accepted assertion `aud` (RFC 7523 §3 item 3). */
  issuer: string;
  config: { clientAssertionMaxLifetime: number };
}

const DUMMY_DIGEST = [secretDigest('sigil-no-such-client')];

/**
 * Finds the credentials in a request: HTTP Basic (id and secret form-url-decoded, RFC 6749
 * §2.3.1; an empty secret is none), `client_id`/`client_secret` in the body, or
 * `client_assertion_type`/`client_assertion`
 * (RFC 7521 §4.2; `client_id` optional and, when sent, the client the assertion must name). An
 * assertion signed with HS* is `client_secret_jwt`, any other `private_key_jwt`. Using two
 * methods at once is refused (RFC 6749 §2.3).
 * @returns the credentials, or undefined when the request has none.
 * @throws OAuthError `invalid_request` for two methods, a repeated header or parameter, an
 *   assertion without its type or an unknown type; `invalid_client` (401, `WWW-Authenticate:
 *   Basic`) for a malformed Basic header, and for an assertion that is no JWT, too large, beyond
 *   `CALLER_JSON_BOUNDS`, or names no client.
 */
export function findCredentials(source: CredentialSource): PresentedCredentials | undefined {
  if (source.authorization.length > 1) throw invalidRequest('the Authorization header was sent more than once');
  const header = source.authorization[0];
  const bodyId = source.params.get('client_id');
  const bodySecret = source.params.get('client_secret');
  const assertionType = source.params.get('client_assertion_type');
  const assertion = source.params.get('client_assertion');
  if (assertionType !== undefined || assertion !== undefined) {
    if ((header !== undefined && /^basic /i.test(header)) || bodySecret !== undefined)
      throw invalidRequest('use one client authentication method, not two');
    if (assertionType !== JWT_BEARER_ASSERTION)
      throw invalidRequest('client_assertion_type is missing or not supported');
    if (assertion === undefined) throw invalidRequest('client_assertion is missing');
    return { ...readAssertion(assertion, bodyId), assertion };
  }
  if (header !== undefined && /^basic /i.test(header)) {
    if (bodySecret !== undefined) throw invalidRequest('use one client authentication method, not two');
    const basic = decodeBasic(header.slice(6).trim());
    if (bodyId !== undefined && bodyId !== basic.id)
      throw invalidRequest('client_id differs from the Basic credentials');
    // RFC 6749 §2.3.1: an empty secret is no secret, as an empty client_secret in the body is absent.
    return { id: basic.id, secret: basic.secret === '' ? undefined : basic.secret, method: 'client_secret_basic' };
  }
  if (bodyId === undefined) {
    if (bodySecret !== undefined) throw invalidRequest('client_secret without client_id');
    return undefined;
  }
  return bodySecret === undefined
    ? { id: bodyId, secret: undefined, method: 'none' }
    : { id: bodyId, secret: bodySecret, method: 'client_secret_post' };
}

/**
 * The `invalid_client` error of RFC 6749 §5.2: 401 with `WWW-Authenticate: Basic` on every
 * answer, whatever method the client tried (RFC 9110 §15.5.2: a 401 carries a challenge).
 */
export function invalidClient(description: string): OAuthError {
  return new OAuthError('invalid_client', description, 401, {
    'www-authenticate': 'Basic realm="sigil", charset="UTF-8"',
  });
}

/** The client id and method of an unverified assertion; see `findCredentials`. */
function readAssertion(
  assertion: string,
  bodyId: string | undefined,
): { id: string; secret: undefined; method: AuthMethod } {
  const malformed = (why: string) => invalidClient(`the client assertion ${why}`);
  if (assertion.length > MAX_ASSERTION_LENGTH) throw malformed('is too large');
  const violation = jwsBoundsViolation(assertion, CALLER_JSON_BOUNDS);
  if (violation) throw malformed(`JSON is ${violation}`);
  let alg: unknown;
  let sub: unknown;
  try {
    alg = decodeProtectedHeader(assertion).alg;
    sub = decodeJwt(assertion).sub;
  } catch {
    throw malformed('is not a signed JWT');
  }
  if (typeof alg !== 'string') throw malformed('has no alg');
  const id = bodyId ?? sub;
  if (typeof id !== 'string' || id === '') throw malformed('names no client (sub)');
  const method = (SYMMETRIC_ASSERTION_ALGORITHMS as readonly string[]).includes(alg)
    ? 'client_secret_jwt'
    : 'private_key_jwt';
  return { id, secret: undefined, method };
}

/**
 * Authenticates the client of a back-channel request.
 * Confidential clients present a secret matching one of theirs (constant time, on SHA-256
 * digests) or a client assertion (`verifyClientAssertion`); a client with a
 * `tokenEndpointAuthMethod` must use that method. Public clients are identified by `client_id`
 * and present no credential (RFC 6749 §2.3: they have none; `Basic base64(client_id:)` carries
 * none, RFC 6749 §2.3.1), authenticating with method `none`. Failures count in `limiter` against
 * the caller's address and the (client, address) pair, and against the client from every address
 * (a slow-down only) unless all its secrets are long or it used `private_key_jwt` (nothing to guess).
 * @param endpoint the path of the endpoint (`/connect/token`): its URL is an accepted assertion `aud`
 * @returns the client and the method it used.
 * A `client_id` that is an https URL naming no registered client is the client of its metadata
 * document (`ClientRegistry.resolve`).
 * @throws OAuthError `invalid_client` (401) for no credentials, an unknown client, a wrong or
 *   missing secret or assertion, a method other than the pinned one, a credential sent by a
 *   public client, or a client metadata document refused or not fetched; 429 while blocked or
 *   when the address has used up its document fetches; `invalid_request` from `findCredentials`.
 */
export async function authenticateClient(
  source: CredentialSource,
  services: ClientAuthServices,
  address: string,
  endpoint: string,
): Promise<{ client: Client; method: AuthMethod }> {
  const presented = findCredentials(source);
  if (!presented) throw invalidClient('client authentication is required');
  let client: Client | undefined;
  try {
    client = await services.clients.resolve(presented.id, address);
  } catch (err) {
    if (err instanceof MetadataDocumentError) throw invalidClient(err.message);
    throw err;
  }
  if (client?.isPublic) {
    // Basic with an empty password (oidc-agent's form for public clients) presents no secret either.
    if (presented.secret !== undefined || presented.assertion !== undefined)
      throw invalidClient('a public client has no credential to present');
    return { client, method: 'none' };
  }
  // Unknown ids get no identity-wide counter: there is nobody to protect, and its presence
  // would tell which ids exist.
  const guessable = presented.method !== 'private_key_jwt' && client !== undefined && !client.longSecrets;
  const attempt: CredentialAttempt = { address, identity: `client:${presented.id}`, identityWide: guessable };
  await services.limiter.before(attempt);
  const refuse = async (description: string) => {
    await services.limiter.failed(attempt);
    return invalidClient(description);
  };
  if (!client) {
    secretMatches(presented.secret ?? '', DUMMY_DIGEST);
    throw await refuse('unknown client or wrong credentials');
  }
  const pinned = client.tokenEndpointAuthMethod;
  if (pinned !== null && pinned !== presented.method)
    throw await refuse(`this client must authenticate with ${pinned}`);
  if (presented.assertion !== undefined) {
    const why = await verifyClientAssertion(presented.assertion, presented.method, client, services, endpoint);
    if (why !== undefined) throw await refuse(why);
    return { client, method: presented.method };
  }
  if (presented.secret === undefined || !secretMatches(presented.secret, liveSecretDigests(client, nowSeconds())))
    throw await refuse('unknown client or wrong credentials');
  return { client, method: presented.method };
}

/**
 * A client's secrets' digests at `now` (Unix seconds): its current ones and those still in a rotation's grace
 * period.
 */
function liveSecretDigests(client: Client, now: number): Buffer[] {
  if (client.retiringSecrets.length === 0) return client.secretDigests;
  return [...client.secretDigests, ...client.retiringSecrets.filter((r) => r.expiresAt > now).map((r) => r.digest)];
}

/**
 * The audiences a client assertion may name (RFC 7523 §3 item 3): Sigil's issuer identifier, the
 * token endpoint's URL, and the URL of the endpoint it is presented at (RFC 9126 §2 for PAR). A
 * `fapi2` client's assertions name the issuer only (FAPI 2.0 SP §5.3.2.1).
 */
export function assertionAudiences(issuer: string, endpoint: string, client?: Pick<ClientConfig, 'profile'>): string[] {
  if (client?.profile === 'fapi2') return [issuer];
  return [...new Set([issuer, `${issuer}/connect/token`, `${issuer}${endpoint}`])];
}

/**
 * Verifies a client assertion (RFC 7523 §3; OIDC Core §9) for `client`: signed with one of its
 * `tokenEndpointAuthSigningAlgorithms` of the method's kind (HS* over a clear-text client secret
 * for `client_secret_jwt`, its `jwks` / `jwksUri` keys for `private_key_jwt`; never `none`);
 * `iss` = `sub` = client_id; `aud` one of `assertionAudiences` (a `fapi2` client: the issuer
 * as a string); `exp` present, in the future and at
 * most `clientAssertionMaxLifetime` seconds ahead (with `typ` `client-authentication+jwt`, `aud` is
 * the issuer alone); `nbf` and `iat` not in the future; a `jti` seen
 * for the first time, remembered until `exp` (clock skew `ASSERTION_CLOCK_SKEW` seconds). The
 * `jti` is recorded only once the signature and claims hold, so forged assertions burn none.
 * @returns undefined when valid, else why not (an `error_description`).
 */
export async function verifyClientAssertion(
  assertion: string,
  method: AuthMethod,
  client: Client,
  services: ClientAuthServices,
  endpoint: string,
): Promise<string | undefined> {
  const symmetric = method === 'client_secret_jwt';
  const kind: readonly string[] = symmetric ? SYMMETRIC_ASSERTION_ALGORITHMS : ASYMMETRIC_ASSERTION_ALGORITHMS;
  const algorithms = client.tokenEndpointAuthSigningAlgorithms.filter((a) => kind.includes(a));
  if (algorithms.length === 0) return "the client assertion's algorithm is not allowed for this client";
  const options = {
    algorithms,
    issuer: client.clientId,
    subject: client.clientId,
    audience: assertionAudiences(services.issuer, endpoint, client),
    requiredClaims: ['iss', 'sub', 'aud', 'exp', 'jti'],
    clockTolerance: ASSERTION_CLOCK_SKEW,
  };
  let payload: JWTPayload | undefined;
  let typ: string | undefined;
  try {
    if (symmetric) {
      const secrets = client.clientSecrets.filter((s) => !s.startsWith('sha256:'));
      if (secrets.length === 0) return 'client_secret_jwt needs a clear-text client secret';
      let lastError: unknown;
      for (const secret of secrets) {
        try {
          ({
            payload,
            protectedHeader: { typ },
          } = await jwtVerify(assertion, new TextEncoder().encode(secret), options));
          break;
        } catch (err) {
          lastError = err;
          // Claims are the same whatever the key: only a wrong signature tries the next secret.
          if (!(err instanceof joseErrors.JWSSignatureVerificationFailed)) break;
        }
      }
      if (!payload) throw lastError;
    } else {
      const keys = services.clientKeys.forClient(client);
      if (!keys) return 'the client has no registered keys';
      ({
        payload,
        protectedHeader: { typ },
      } = await jwtVerify(assertion, keys, options));
    }
  } catch (err) {
    return describeJoseError(err);
  }
  // FAPI 2.0 SP §5.3.2.1: a fapi2 client's aud is the issuer "as a string", not an array.
  if (client.profile === 'fapi2' && payload.aud !== services.issuer)
    return "the client assertion's aud must be the issuer identifier, as a string (FAPI 2.0)";
  // draft-ietf-oauth-rfc7523bis §4 (as Duende): an explicitly typed assertion names the issuer alone.
  if (typ?.toLowerCase() === 'client-authentication+jwt') {
    const aud = Array.isArray(payload.aud) && payload.aud.length === 1 ? payload.aud[0] : payload.aud;
    if (aud !== services.issuer) return "a client-authentication+jwt assertion's aud must be the issuer alone";
  }
  const now = nowSeconds();
  const exp = payload.exp as number;
  if (exp > now + services.config.clientAssertionMaxLifetime + ASSERTION_CLOCK_SKEW)
    return `the client assertion's exp is more than ${services.config.clientAssertionMaxLifetime} seconds ahead`;
  if (payload.iat !== undefined && (typeof payload.iat !== 'number' || payload.iat > now + ASSERTION_CLOCK_SKEW))
    return "the client assertion's iat is in the future";
  const jti = payload.jti;
  if (typeof jti !== 'string' || jti === '' || jti.length > MAX_JTI_LENGTH)
    return "the client assertion's jti is missing or too long";
  if (!(await services.replay.firstUse('client_assertion', client.clientId, jti, exp + ASSERTION_CLOCK_SKEW, now)))
    return 'the client assertion was used before (jti)';
  return undefined;
}

/** An `error_description` for a failed `jwtVerify` of a client assertion. */
function describeJoseError(err: unknown): string {
  if (err instanceof joseErrors.JWTExpired) return 'the client assertion has expired';
  if (err instanceof joseErrors.JWTClaimValidationFailed)
    return `the client assertion's ${err.claim} claim is missing or wrong (${err.reason})`;
  if (err instanceof joseErrors.JOSEAlgNotAllowed)
    return "the client assertion's algorithm is not allowed for this client";
  if (err instanceof joseErrors.JWKSNoMatchingKey || err instanceof joseErrors.JWKSMultipleMatchingKeys)
    return 'no registered key of the client matches the client assertion';
  if (err instanceof joseErrors.JWSSignatureVerificationFailed) return "the client assertion's signature is wrong";
  if (err instanceof joseErrors.JWKSTimeout) return "the client's keys could not be fetched in time";
  if (err instanceof joseErrors.JOSEError) return 'the client assertion could not be verified';
  // Not jose's own: a failed fetch of jwksUri, or a registered key jose cannot use.
  return "the client's keys could not be fetched or used";
}

function decodeBasic(encoded: string): { id: string; secret: string } {
  const malformed = () => invalidClient('malformed Basic credentials');
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(encoded)) throw malformed();
  const text = Buffer.from(encoded, 'base64').toString('utf8');
  const colon = text.indexOf(':');
  if (colon <= 0) throw malformed();
  try {
    return { id: formDecode(text.slice(0, colon)), secret: formDecode(text.slice(colon + 1)) };
  } catch {
    throw malformed();
  }
}

/**
 * Authenticates an API resource by its name and one of its secrets (RFC 7662 §2.1: the protected
 * resource authenticates at introspection). Failures count like a client's (`authenticateClient`).
 * @returns the API resource name, or undefined when `presented.id` names no API resource.
 * @throws OAuthError `invalid_client` (401) for a wrong or missing secret; 429 while blocked.
 */
export async function authenticateApiResource(
  presented: PresentedCredentials,
  apiSecrets: ReadonlyMap<string, ApiSecrets>,
  limiter: FailureLimiter,
  address: string,
): Promise<string | undefined> {
  const secrets = apiSecrets.get(presented.id);
  if (!secrets) return undefined;
  const attempt: CredentialAttempt = { address, identity: `api:${presented.id}`, identityWide: !secrets.long };
  await limiter.before(attempt);
  const now = nowSeconds();
  const live = secrets.retiring
    ? [...secrets.digests, ...secrets.retiring.filter((r) => r.expiresAt > now).map((r) => r.digest)]
    : secrets.digests;
  if (presented.secret === undefined || !secretMatches(presented.secret, live)) {
    await limiter.failed(attempt);
    throw invalidClient('unknown API resource or wrong credentials');
  }
  return presented.id;
}
