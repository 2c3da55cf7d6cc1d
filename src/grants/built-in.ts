/**
 * The token endpoint's grants: the one place a grant type is registered. Discovery's
 * `grant_types_supported` follows from the registry built here; the config's list of names a
 * client may use (`BUILT_IN_GRANT_TYPES`, which also names the authorization endpoint's `implicit`
 * and `hybrid`) must match it, which the compiler checks (`TokenGrantType` below).
 */
import { type BUILT_IN_GRANT_TYPES, JWT_BEARER_GRANT } from '../config/schema.js';
import { authorizationCodeGrant } from './authorization-code.js';
import { CIBA_GRANT, cibaGrant } from './ciba.js';
import { clientCredentialsGrant } from './client-credentials.js';
import { DEVICE_CODE_GRANT, deviceCodeGrant } from './device-code.js';
import { type ExtensionGrant, extensionGrantHandler } from './extension.js';
import { passwordGrant, type ResourceOwnerValidator } from './password.js';
import { refreshTokenGrant } from './refresh-token.js';
import { type GrantHandler, GrantRegistry } from './registry.js';
import { jwtBearerGrant } from './jwt-bearer.js';
import { TOKEN_EXCHANGE, tokenExchangeHandler } from './token-exchange.js';

/** The built-in grant types the token endpoint answers: the config's names but those of the authorization endpoint. */
export type TokenGrantType = Exclude<(typeof BUILT_IN_GRANT_TYPES)[number], 'implicit' | 'hybrid'>;

/**
 * The built-in grants by `grant_type` (RFC 6749 §4, RFC 8628 §3.4, RFC 8693 §2.1, RFC 7523 §2.1, CIBA Core §10.1). A new grant is
 * one entry here plus its name in `BUILT_IN_GRANT_TYPES`; the record's type makes either alone a
 * compile error.
 * @param validator the password grant's check of the resource owner's credentials
 */
function builtInGrants(validator: ResourceOwnerValidator): Record<TokenGrantType, GrantHandler> {
  return {
    authorization_code: authorizationCodeGrant,
    client_credentials: clientCredentialsGrant,
    password: passwordGrant(validator),
    [DEVICE_CODE_GRANT]: deviceCodeGrant,
    refresh_token: refreshTokenGrant,
    [TOKEN_EXCHANGE]: tokenExchangeHandler,
    [JWT_BEARER_GRANT]: jwtBearerGrant,
    [CIBA_GRANT]: cibaGrant,
  };
}

/**
 * The token endpoint's registry: the built-in grants, then a library user's extension grants
 * (RFC 6749 §4.5).
 * @throws Error when an extension grant reuses a registered name
 */
export function grantRegistry(validator: ResourceOwnerValidator, extensions: readonly ExtensionGrant[]): GrantRegistry {
  const registry = new GrantRegistry();
  for (const [grantType, handler] of Object.entries(builtInGrants(validator))) registry.register(grantType, handler);
  for (const grant of extensions) registry.register(grant.grantType, extensionGrantHandler(grant));
  return registry;
}
