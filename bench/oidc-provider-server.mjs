// node-oidc-provider configured for the same work as bench/sigil.*.json, for side-by-side benchmarks.
//
//   node bench/oidc-provider-server.mjs --port 5056 --alg ES256 [--client-jwk '<public JWK>']
//
// Clients (client_secret_basic, client_credentials only, scope api1):
//   bench-jwt / bench-secret  -> JWT access token (RFC 9068) for api1, signed with --alg
//   bench-ref / bench-secret  -> opaque (reference) access token for api1
//   api1      / api1-secret   -> the API resource; may only call the introspection endpoint
//   bench-pkjwt (with --client-jwk) -> private_key_jwt (ES256) and DPoP-bound JWT access tokens
// (features.dpop, no nonces)
// Storage: node-oidc-provider's default in-memory adapter (an LRU cache of 1000 entries).
// Keys: one RS256 and one ES256 key, generated at start. Prints "listening on <url>" when ready.
import { parseArgs } from 'node:util';
import { exportJWK, generateKeyPair } from 'jose';
import Provider from 'oidc-provider';

const HOST = '127.0.0.1';
const RESOURCE = 'urn:sigil-bench:api1'; // oidc-provider wants an absolute URI as resource indicator
const ACCESS_TOKEN_LIFETIME = 3600;

/** Generates a signing key pair for `alg` and returns its private JWK with kid, alg and use set. */
async function signingJwk(alg) {
  const { privateKey } = await generateKeyPair(alg, { extractable: true });
  return { ...(await exportJWK(privateKey)), kid: `bench-${alg.toLowerCase()}`, alg, use: 'sig' };
}

/**
 * Builds the node-oidc-provider configuration; `alg` signs the JWT access tokens; `clientJwk`, when
 * given, is the public key of `bench-pkjwt`, which authenticates with private_key_jwt and gets
 * DPoP-bound tokens only.
 */
async function configuration(alg, clientJwk) {
  const client = (clientId, secret) => ({
    client_id: clientId,
    client_secret: secret,
    token_endpoint_auth_method: 'client_secret_basic',
    grant_types: clientId === 'api1' ? [] : ['client_credentials'],
    response_types: [],
    redirect_uris: [],
  });
  return {
    clients: [
      client('bench-jwt', 'bench-secret'),
      client('bench-ref', 'bench-secret'),
      client('api1', 'api1-secret'),
      ...(clientJwk
        ? [
            {
              client_id: 'bench-pkjwt',
              token_endpoint_auth_method: 'private_key_jwt',
              token_endpoint_auth_signing_alg: 'ES256',
              jwks: { keys: [clientJwk] },
              dpop_bound_access_tokens: true,
              grant_types: ['client_credentials'],
              response_types: [],
              redirect_uris: [],
            },
          ]
        : []),
    ],
    jwks: { keys: [await signingJwk('RS256'), await signingJwk('ES256')] },
    scopes: ['api1'],
    ttl: { ClientCredentials: ACCESS_TOKEN_LIFETIME },
    cookies: { keys: ['bench-cookie-key'] },
    clientBasedCORS: () => false,
    features: {
      devInteractions: { enabled: false },
      clientCredentials: { enabled: true },
      // RFC 9449, as Sigil by default: proofs verified, jti single-use, no server nonces.
      dPoP: { enabled: true },
      // Sigil lets the API resource introspect; here only the api1 client may.
      introspection: { enabled: true, allowedPolicy: (_ctx, caller) => caller.clientId === 'api1' },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => RESOURCE, // same request shape as Sigil: no resource parameter
        useGrantedResource: () => true,
        getResourceServerInfo: (_ctx, resource, client) => {
          if (resource !== RESOURCE) throw new Provider.errors.InvalidTarget();
          const jwt = client.clientId === 'bench-jwt' || client.clientId === 'bench-pkjwt';
          return {
            scope: 'api1',
            audience: 'api1',
            accessTokenTTL: ACCESS_TOKEN_LIFETIME,
            accessTokenFormat: jwt ? 'jwt' : 'opaque',
            ...(jwt ? { jwt: { sign: { alg } } } : {}),
          };
        },
      },
    },
  };
}

const { values } = parseArgs({
  options: { port: { type: 'string' }, alg: { type: 'string', default: 'ES256' }, 'client-jwk': { type: 'string' } },
});
if (!values.port || !['ES256', 'RS256'].includes(values.alg)) {
  console.error('usage: node bench/oidc-provider-server.mjs --port N [--alg ES256|RS256]');
  process.exit(2);
}
const issuer = `http://${HOST}:${values.port}`;
const provider = new Provider(
  issuer,
  await configuration(values.alg, values['client-jwk'] ? JSON.parse(values['client-jwk']) : undefined),
);
provider.on('server_error', (_ctx, err) => console.error('server_error', err));
const server = provider.listen(Number(values.port), HOST, () => {
  console.log(`node-oidc-provider (${values.alg}, in-memory adapter) listening on ${issuer}`);
});
const stop = () => server.close(() => process.exit(0));
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
