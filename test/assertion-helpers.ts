/**
 * Client assertions for the tests (RFC 7523 §2.2, §3): key pairs with their public JWKs, and a
 * signer whose claims and header each test can bend.
 */
import { randomUUID } from 'node:crypto';
import { exportJWK, generateKeyPair, type CryptoKey, type JWK, SignJWT } from 'jose';

/** `client_assertion_type` of RFC 7523 §2.2. */
export const JWT_BEARER = 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer';

/** A client's signing key: the private key and its public JWK (with `kid`, `alg`, `use`). */
export interface ClientKey {
  alg: string;
  kid: string;
  privateKey: CryptoKey;
  publicJwk: JWK;
}

/** A fresh key pair for `alg` named `kid`. */
export async function clientKey(alg: string, kid: string): Promise<ClientKey> {
  const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true });
  return { alg, kid, privateKey, publicJwk: { ...(await exportJWK(publicKey)), kid, alg, use: 'sig' } };
}

/** Claims to set (a value) or leave out (`undefined`) of an assertion; the rest default. */
export type AssertionClaims = Record<string, unknown>;

/**
 * A signed client assertion for `clientId`: iss = sub = clientId, `aud`, `jti` random, `iat` now,
 * `exp` now + 60 s; `claims` override or (with `undefined`) remove any of them.
 * @param key a `ClientKey`, or a clear-text secret for HS256 (`client_secret_jwt`)
 */
export async function signAssertion(
  key: ClientKey | string,
  clientId: string,
  aud: string | string[],
  claims: AssertionClaims = {},
  header: Record<string, unknown> = {},
): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  const payload: Record<string, unknown> = {
    iss: clientId,
    sub: clientId,
    aud,
    jti: randomUUID(),
    iat: now,
    exp: now + 60,
    ...claims,
  };
  for (const [k, v] of Object.entries(payload)) if (v === undefined) delete payload[k];
  const protectedHeader =
    typeof key === 'string' ? { alg: 'HS256', ...header } : { alg: key.alg, kid: key.kid, ...header };
  return new SignJWT(payload)
    .setProtectedHeader(protectedHeader as { alg: string })
    .sign(typeof key === 'string' ? new TextEncoder().encode(key) : key.privateKey);
}

/** Form fields presenting `assertion` (RFC 7521 §4.2). */
export function assertionFields(assertion: string, clientId?: string): Record<string, string> {
  return {
    client_assertion_type: JWT_BEARER,
    client_assertion: assertion,
    ...(clientId ? { client_id: clientId } : {}),
  };
}
