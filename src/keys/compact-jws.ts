/**
 * Compact JWS signatures (RFC 7515 §7.1) made synchronously with `node:crypto`: Sigil signs every
 * access, identity and logout token, and each known-browser cookie, on the request's own thread.
 * WebCrypto (jose's `CompactSign`) hands each signature to libuv's thread pool and back, which cost
 * more CPU than the signature itself under load. jose still verifies tokens and handles the JWKs.
 */
import {
  constants,
  createPrivateKey,
  type JsonWebKey,
  type KeyObject,
  type SignKeyObjectInput,
  type SigningOptions,
  sign,
} from 'node:crypto';
import type { JWK } from 'jose';
import type { SigningAlgorithm } from '../config/schema.js';

/** How `node:crypto` signs for one JWS algorithm, and the key it needs. */
interface Scheme {
  /** The digest (`null` for EdDSA, which hashes inside the scheme: RFC 8032). */
  hash: string | null;
  /** The key's type (`KeyObject.asymmetricKeyType`). */
  keyType: 'rsa' | 'ec' | 'ed25519';
  /** The curve an EC key must be on (`asymmetricKeyDetails.namedCurve`). */
  curve?: string;
  /** Padding and salt (RSA-PSS), the signature's encoding (ECDSA). */
  signing?: SigningOptions;
}

const rsa = (hash: string): Scheme => ({ hash, keyType: 'rsa' });
/** RSASSA-PSS with MGF1 of the same hash and a salt as long as the hash (RFC 7518 §3.5). */
const pss = (hash: string, hashBytes: number): Scheme => ({
  hash,
  keyType: 'rsa',
  signing: { padding: constants.RSA_PKCS1_PSS_PADDING, saltLength: hashBytes },
});
/** ECDSA: the signature is R and S side by side, not DER (RFC 7518 §3.4). */
const ecdsa = (hash: string, curve: string): Scheme => ({
  hash,
  keyType: 'ec',
  curve,
  signing: { dsaEncoding: 'ieee-p1363' },
});

const SCHEMES: Record<SigningAlgorithm, Scheme> = {
  RS256: rsa('sha256'),
  RS384: rsa('sha384'),
  RS512: rsa('sha512'),
  PS256: pss('sha256', 32),
  PS384: pss('sha384', 48),
  PS512: pss('sha512', 64),
  ES256: ecdsa('sha256', 'prime256v1'),
  ES384: ecdsa('sha384', 'secp384r1'),
  ES512: ecdsa('sha512', 'secp521r1'),
  // EdDSA with Ed25519 (RFC 8037 §3.1), the curve jose generates for `EdDSA`.
  EdDSA: { hash: null, keyType: 'ed25519' },
};

/** RSA keys shorter than this are refused (RFC 7518 §3.3, §3.5), as jose refuses them. */
const MIN_RSA_BITS = 2048;

/** Signs compact JWSs with one private key; made once per key, used for every token. */
export interface CompactSigner {
  /**
   * The compact JWS of `payload`'s JSON text with the protected header `{"alg","kid","typ"}`, in
   * that order, as jose's `CompactSign` wrote it.
   * @param typ the JOSE `typ` header, e.g. `at+jwt` (RFC 9068 §2.1) or `JWT`
   */
  sign(payload: object, typ: string): string;
}

/**
 * A signer for the private JWK of a key of `alg` (RFC 7517; as `exportJWK` wrote it).
 * @throws Error when `alg` is not one Sigil signs with, or the key does not fit it (type, curve,
 *   an RSA modulus under 2048 bits), or the JWK is no private key Node can read.
 */
export function compactSigner(alg: SigningAlgorithm, kid: string, privateJwk: JWK): CompactSigner {
  const scheme = SCHEMES[alg];
  if (!scheme) throw new Error(`cannot sign with ${alg}`);
  const key = createPrivateKey({ key: privateJwk as JsonWebKey, format: 'jwk' });
  checkKey(alg, scheme, key);
  const options: SignKeyObjectInput = { key, ...scheme.signing };
  // A handful of `typ`s are ever used; each header is encoded once.
  const headers = new Map<string, string>();
  return {
    sign(payload, typ) {
      let header = headers.get(typ);
      if (header === undefined) {
        header = Buffer.from(JSON.stringify({ alg, kid, typ })).toString('base64url');
        headers.set(typ, header);
      }
      const input = `${header}.${Buffer.from(JSON.stringify(payload)).toString('base64url')}`;
      // The signing input is base64url text, ASCII only.
      const signature = sign(scheme.hash, Buffer.from(input, 'latin1'), options);
      return `${input}.${signature.toString('base64url')}`;
    },
  };
}

/** Refuses a key of another type or curve than `alg` signs with, or too short an RSA key. */
function checkKey(alg: string, scheme: Scheme, key: KeyObject): void {
  const details = key.asymmetricKeyDetails ?? {};
  if (key.asymmetricKeyType !== scheme.keyType) throw new Error(`${alg} needs an ${scheme.keyType} key`);
  if (scheme.curve !== undefined && details.namedCurve !== scheme.curve)
    throw new Error(`${alg} needs a key on ${scheme.curve}`);
  if (scheme.keyType === 'rsa' && (details.modulusLength ?? 0) < MIN_RSA_BITS)
    throw new Error(`${alg} needs an RSA key of at least ${MIN_RSA_BITS} bits`);
}
