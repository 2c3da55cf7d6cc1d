/**
 * DPoP fixtures (RFC 9449): client proof keys and proof JWTs built here with jose, independently
 * of Sigil's code, with every member adjustable so tests can break one check at a time.
 */
import { createHash, randomBytes } from 'node:crypto';
import { calculateJwkThumbprint, exportJWK, generateKeyPair, type CryptoKey, type JWK, SignJWT } from 'jose';

/** A client's DPoP key pair: the public JWK for the proof header and its SHA-256 thumbprint. */
export interface ProofKey {
  alg: string;
  privateKey: CryptoKey;
  jwk: JWK;
  /** RFC 7638 thumbprint, base64url: the `cnf.jkt` a bound token carries. */
  jkt: string;
}

/** A fresh proof key (ES256 unless told). */
export async function proofKey(alg = 'ES256'): Promise<ProofKey> {
  const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true });
  const jwk = await exportJWK(publicKey);
  return { alg, privateKey, jwk, jkt: await calculateJwkThumbprint(jwk, 'sha256') };
}

/** `ath` of an access token (RFC 9449 §4.2), computed with node:crypto. */
export function ath(accessToken: string): string {
  return createHash('sha256').update(accessToken, 'ascii').digest('base64url');
}

/** What a test may change in a proof; each defaults to a valid value. */
export interface ProofOptions {
  htm?: string;
  htu?: string;
  /** Unix seconds; default now. */
  iat?: number;
  jti?: string;
  /** The access token whose hash goes into `ath`. */
  accessToken?: string;
  nonce?: string;
  typ?: string;
  /** Replaces the header's `jwk`; null leaves it out. */
  jwk?: JWK | null;
  /** Signs with this key instead (the header still names `key`'s JWK): a bad signature. */
  signWith?: CryptoKey;
  /** Extra or replacing payload claims; `undefined` values remove a claim. */
  claims?: Record<string, unknown>;
}

/** A DPoP proof JWT for `key` (default: POST to `htu`, now, a random `jti`). */
export async function proof(key: ProofKey, htu: string, opts: ProofOptions = {}): Promise<string> {
  const payload: Record<string, unknown> = {
    htm: opts.htm ?? 'POST',
    htu: opts.htu ?? htu,
    jti: opts.jti ?? randomBytes(16).toString('base64url'),
    ...(opts.accessToken !== undefined ? { ath: ath(opts.accessToken) } : {}),
    ...(opts.nonce !== undefined ? { nonce: opts.nonce } : {}),
    ...opts.claims,
  };
  for (const [k, v] of Object.entries(payload)) if (v === undefined) delete payload[k];
  const header: Record<string, unknown> = { alg: key.alg, typ: opts.typ ?? 'dpop+jwt' };
  if (opts.jwk !== null) header.jwk = opts.jwk ?? key.jwk;
  return new SignJWT(payload)
    .setProtectedHeader(header as { alg: string })
    .setIssuedAt(opts.iat ?? Math.floor(Date.now() / 1000))
    .sign(opts.signWith ?? key.privateKey);
}
