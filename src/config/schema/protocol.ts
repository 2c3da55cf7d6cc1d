/**
 * The protocol values the config names: client authentication methods, assertion and signing
 * algorithms, and the built-in grant types.
 */
/**
 * How a client authenticates at the back-channel endpoints (RFC 6749 §2.3.1; OIDC Core §9;
 * RFC 7523 §2.2).
 */
export const TOKEN_ENDPOINT_AUTH_METHODS = [
  'client_secret_basic',
  'client_secret_post',
  'client_secret_jwt',
  'private_key_jwt',
  'none',
] as const;
export type TokenEndpointAuthMethod = (typeof TOKEN_ENDPOINT_AUTH_METHODS)[number];

/** Algorithms Sigil can sign tokens with (JWA, RFC 7518 §3.1; EdDSA with Ed25519: RFC 8037). */
export const SIGNING_ALGORITHMS = [
  'RS256',
  'RS384',
  'RS512',
  'PS256',
  'PS384',
  'PS512',
  'ES256',
  'ES384',
  'ES512',
  'EdDSA',
] as const;
export type SigningAlgorithm = (typeof SIGNING_ALGORITHMS)[number];
/**
 * Algorithms of `private_key_jwt` client assertions and of request objects signed with a client's
 * keys: the JWS algorithms Sigil signs with (JWA, RFC 7518 §3.1; EdDSA: RFC 8037).
 */
export const ASYMMETRIC_ASSERTION_ALGORITHMS = SIGNING_ALGORITHMS;
/** Algorithms of `client_secret_jwt` client assertions: HMAC over the client's clear-text secret. */
export const SYMMETRIC_ASSERTION_ALGORITHMS = ['HS256', 'HS384', 'HS512'] as const;
/** Every client assertion algorithm Sigil verifies (`none` is never one). */
export const ASSERTION_ALGORITHMS = [...ASYMMETRIC_ASSERTION_ALGORITHMS, ...SYMMETRIC_ASSERTION_ALGORITHMS] as const;

/**
 * Grant type names a client may list; any other name must be a registered extension
 * grant (checked by `resolveConfig`, which knows them).
 */
export const BUILT_IN_GRANT_TYPES = [
  'authorization_code',
  'refresh_token',
  'client_credentials',
  'password',
  'implicit',
  'hybrid',
  'urn:ietf:params:oauth:grant-type:device_code',
  'urn:ietf:params:oauth:grant-type:token-exchange',
  'urn:ietf:params:oauth:grant-type:jwt-bearer',
  'urn:openid:params:grant-type:ciba',
] as const;

/** The JWT bearer authorization grant (RFC 7523 §2.1), by which clients redeem ID-JAGs of `trustedIdentityIssuers`. */
export const JWT_BEARER_GRANT = 'urn:ietf:params:oauth:grant-type:jwt-bearer';

/** The CIBA grant (OpenID CIBA Core 1.0 §10.1), redeeming an `auth_req_id` of `/connect/ciba`. */
export const CIBA_GRANT = 'urn:openid:params:grant-type:ciba';

/**
 * Default `signingAlgorithms`: RS256 signs by default; ES256 serves FAPI 2.0 clients.
 * PS256 and EdDSA are available by listing them (one key each is generated on first start).
 */
export const DEFAULT_SIGNING_ALGORITHMS: SigningAlgorithm[] = ['RS256', 'ES256'];
