/**
 * DPoP, Demonstrating Proof of Possession (RFC 9449): checking the proof JWT a client sends in
 * the `DPoP` header (§4.3), the server-provided nonces (§8), and the token binding it yields (the
 * JWK SHA-256 thumbprint, RFC 7638, that becomes `cnf.jkt`, §6.1).
 *
 * Everything that can be wrong with a proof is an `OAuthError`: `invalid_dpop_proof` (§5, §7.1),
 * or `use_dpop_nonce` with a `DPoP-Nonce` header (§8) when this server demands a nonce. The
 * caller decides the status (400 at the token endpoint, 401 with a `WWW-Authenticate: DPoP`
 * challenge at userinfo).
 */
import { base64url, calculateJwkThumbprint, decodeProtectedHeader, importJWK, type JWK, jwtVerify } from 'jose';
import { type ClientConfig, FAPI2_ALGORITHMS } from '../config/schema.js';
import { OAuthError } from '../protocol/errors.js';
import type { DPoPNonces } from '../limits/dpop-nonces.js';
import { sha256 } from '../crypto/handles.js';
import { jwsBoundsViolation } from '../protocol/json-bounds.js';
import type { ReplayCache } from '../limits/replay-cache.js';

/**
 * Proof signing algorithms accepted (discovery `dpop_signing_alg_values_supported`): asymmetric
 * only (§4.3 item 5: never `none`, never a MAC).
 */
export const DPOP_ALGORITHMS = [
  'ES256',
  'ES384',
  'ES512',
  'PS256',
  'PS384',
  'PS512',
  'RS256',
  'RS384',
  'RS512',
  'EdDSA',
] as const;

/** Longest proof accepted, in characters (Duende IdentityServer's limit on a DPoP proof). */
export const MAX_PROOF_LENGTH = 4000;
/** Longest `jti` accepted, in characters: 128 is three times what a 256-bit random value needs. */
const MAX_JTI_LENGTH = 128;
/** JWK members that only a private (or symmetric) key has (RFC 7518 §6.2.2, §6.3.2, §6.4.1). */
const PRIVATE_MEMBERS = ['d', 'p', 'q', 'dp', 'dq', 'qi', 'oth', 'k'];
/** Key types a proof key may have (RFC 7518 §6.1; RFC 8037 §2). */
const KEY_TYPES = new Set(['EC', 'RSA', 'OKP']);
/**
 * Most proof keys kept imported, with their thumbprints (the oldest is dropped first). A client
 * signs its proofs with one key for many requests, and importing a key from its JWK is a large part
 * of checking a proof. At most 1,000 × `MAX_PROOF_LENGTH` characters of header text.
 */
const IMPORTED_KEYS = 1000;

/** A proof key from a `jwk` header, imported for one algorithm, and its RFC 7638 thumbprint. */
interface ProofKey {
  key: Awaited<ReturnType<typeof importJWK>>;
  jkt: string;
}

/** A proof that passed every check. */
export interface DPoPProof {
  /** The JWK SHA-256 thumbprint of the proof key (RFC 7638), base64url: the `cnf.jkt` it binds to. */
  jkt: string;
  /** The proof's `jti`. */
  jti: string;
  /** The proof's `iat`, Unix seconds. */
  iat: number;
  /**
   * The proof's `ath` (§4.2), when it has one: at the token endpoint no access token is expected,
   * so it is not checked there; a grant that takes an access token checks it (token exchange).
   */
  ath?: string;
}

/** What a proof must match: the request it came with. */
export interface ProofExpectation {
  /** The request's HTTP method (`htm`, §4.2). */
  method: string;
  /** The request's URI, from the configured issuer (never the Host header), without query (`htu`). */
  url: string;
  /** The access token sent with the proof, when one is (`ath`, §4.2, §7.1). */
  accessToken?: string;
}

/**
 * The proof algorithms a client may use, as `DPoPVerifier.verify` options: PS256, ES256 and EdDSA
 * for a `fapi2` client (FAPI 2.0 SP §5.4.1), no narrowing (`{}`) for the others.
 */
export function dpopAlgorithmsFor(client: Pick<ClientConfig, 'profile'>): { algorithms?: readonly string[] } {
  return client.profile === 'fapi2' ? { algorithms: FAPI2_ALGORITHMS } : {};
}

/** The `invalid_dpop_proof` error (RFC 9449 §5, §7.1), HTTP 400. */
export function invalidDPoPProof(description: string): OAuthError {
  return new OAuthError('invalid_dpop_proof', description);
}

/**
 * Checks DPoP proofs for one provider: the signature and claims (§4.3), single use of each `jti`
 * per key until the proof would be too old anyway (§11.1), and server nonces when configured.
 */
export class DPoPVerifier {
  /** Imported proof keys by algorithm and JWK text (see `proofKey`), oldest first. */
  private readonly importedKeys = new Map<string, Promise<ProofKey>>();

  constructor(
    private readonly replay: ReplayCache,
    private readonly nonces: DPoPNonces,
    private readonly settings: { proofWindowSeconds: number; requireNonce: boolean },
  ) {}

  /**
   * The proof of a request, checked, or undefined when the request has no `DPoP` header.
   * @param headers every `DPoP` header value sent (names are case-insensitive, §4.1)
   * @param now Unix seconds
   * @param opts.nonce whether this endpoint demands a server nonce (the token endpoint, when
   *   `dpop.requireNonce` is set)
   * @param opts.algorithms narrows `DPOP_ALGORITHMS` (a `fapi2` client: PS256, ES256, EdDSA,
   *   FAPI 2.0 SP §5.4.1)
   * @throws OAuthError `invalid_dpop_proof` for any failed check of RFC 9449 §4.3 (more than one
   *   header, too long, nesting too deep, not a JWS, wrong `typ`, an algorithm outside
   *   `DPOP_ALGORITHMS`, a missing, private or symmetric `jwk`, a bad signature, `htm`/`htu`/`ath`
   *   mismatch, `iat` outside the window, a reused `jti`); `use_dpop_nonce` with a `DPoP-Nonce`
   *   header when a nonce is demanded and missing or stale (§8).
   */
  async verify(
    headers: readonly string[],
    expect: ProofExpectation,
    now: number,
    opts: { nonce?: boolean; algorithms?: readonly string[] } = {},
  ): Promise<DPoPProof | undefined> {
    if (headers.length === 0) return undefined;
    if (headers.length > 1) throw invalidDPoPProof('send one DPoP header');
    const proof = headers[0] ?? '';
    if (proof.length > MAX_PROOF_LENGTH) throw invalidDPoPProof('the DPoP proof is too long');
    if (!/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/.test(proof))
      throw invalidDPoPProof('the DPoP proof is not a compact JWS');
    const violation = jwsBoundsViolation(proof);
    if (violation) throw invalidDPoPProof(`the DPoP proof is ${violation}`);

    let header: ReturnType<typeof decodeProtectedHeader>;
    try {
      header = decodeProtectedHeader(proof);
    } catch {
      throw invalidDPoPProof('the DPoP proof header is not valid');
    }
    if (header.typ !== 'dpop+jwt') throw invalidDPoPProof('typ must be dpop+jwt');
    const alg = header.alg;
    if (typeof alg !== 'string' || !(DPOP_ALGORITHMS as readonly string[]).includes(alg))
      throw invalidDPoPProof('alg is not supported');
    if (opts.algorithms !== undefined && !opts.algorithms.includes(alg))
      throw invalidDPoPProof(`alg ${alg} is not allowed for this client`);
    const jwk = header.jwk as unknown;
    if (jwk === null || typeof jwk !== 'object' || Array.isArray(jwk))
      throw invalidDPoPProof('the header must carry the public jwk');
    const members = jwk as Record<string, unknown>;
    if (typeof members.kty !== 'string' || !KEY_TYPES.has(members.kty))
      throw invalidDPoPProof('jwk must be an EC, RSA or OKP public key');
    if (PRIVATE_MEMBERS.some((m) => m in members)) throw invalidDPoPProof('jwk must not contain private key members');

    let payload: Record<string, unknown>;
    let jkt: string;
    try {
      let key: ProofKey['key'];
      ({ key, jkt } = await this.proofKey(members as JWK, alg));
      ({ payload } = await jwtVerify(proof, key, {
        typ: 'dpop+jwt',
        algorithms: [alg],
        requiredClaims: ['jti', 'htm', 'htu', 'iat'],
        currentDate: new Date(now * 1000),
        clockTolerance: this.settings.proofWindowSeconds,
      }));
    } catch {
      // Only caller data goes into these calls, and they fail in several ways: jose's errors, and
      // WebCrypto's DOMException (DataError) for key material that is no point on the curve.
      throw invalidDPoPProof('the DPoP proof does not verify');
    }

    const { jti, htm, htu, iat } = payload;
    if (typeof jti !== 'string' || jti.length === 0 || jti.length > MAX_JTI_LENGTH)
      throw invalidDPoPProof('jti is missing or too long');
    if (htm !== expect.method) throw invalidDPoPProof('htm does not match the request method');
    if (typeof htu !== 'string' || !sameTarget(htu, expect.url))
      throw invalidDPoPProof('htu does not match the request URI');
    if (typeof iat !== 'number' || !Number.isFinite(iat)) throw invalidDPoPProof('iat is missing');
    if (Math.abs(iat - now) > this.settings.proofWindowSeconds)
      throw invalidDPoPProof('iat is outside the acceptable window');
    if (expect.accessToken !== undefined) {
      if (typeof payload.ath !== 'string') throw invalidDPoPProof('ath is missing');
      if (payload.ath !== accessTokenHash(expect.accessToken))
        throw invalidDPoPProof('ath does not match the access token');
    }
    if (opts.nonce && this.settings.requireNonce) {
      const nonce = payload.nonce;
      if (typeof nonce !== 'string' || !(await this.nonces.isValid(nonce, now)))
        throw new OAuthError('use_dpop_nonce', 'a fresh DPoP nonce is required', 400, {
          'dpop-nonce': await this.nonces.current(now),
        });
    }
    // Last, so that a proof failing another check leaves nothing stored. Kept until the proof's
    // iat leaves the window: no later use could be accepted anyway.
    if (
      !(await this.replay.firstUse('dpop_proof', jkt, jti, Math.floor(iat) + this.settings.proofWindowSeconds + 1, now))
    )
      throw invalidDPoPProof('the DPoP proof was already used');
    return { jkt, jti, iat, ...(typeof payload.ath === 'string' ? { ath: payload.ath } : {}) };
  }

  /**
   * The proof key of `jwk` for `alg`, imported once for as long as it stays among the last
   * `IMPORTED_KEYS` keys seen. Kept by the exact header text of the JWK and the algorithm, so a
   * proof whose JWK differs in any member imports its own; every proof's signature is still
   * verified. A JWK that fails to import is not kept.
   * @throws what jose's `importJWK` throws (key material that is not a valid public key)
   */
  private proofKey(jwk: JWK, alg: string): Promise<ProofKey> {
    const id = `${alg}\u0000${JSON.stringify(jwk)}`;
    const known = this.importedKeys.get(id);
    if (known) return known;
    const imported = Promise.all([importJWK(jwk, alg), calculateJwkThumbprint(jwk, 'sha256')]).then(([key, jkt]) => ({
      key,
      jkt,
    }));
    this.importedKeys.set(id, imported);
    if (this.importedKeys.size > IMPORTED_KEYS)
      this.importedKeys.delete(this.importedKeys.keys().next().value as string);
    imported.catch(() => {
      if (this.importedKeys.get(id) === imported) this.importedKeys.delete(id);
    });
    return imported;
  }

  /**
   * The nonce to hand out in a `DPoP-Nonce` response header (§8.2), when nonces are required.
   * @param now Unix seconds
   */
  async nonceFor(now: number): Promise<string | undefined> {
    return this.settings.requireNonce ? this.nonces.current(now) : undefined;
  }
}

/**
 * The `ath` of an access token (RFC 9449 §4.2): base64url of the SHA-256 of its ASCII text.
 */
export function accessTokenHash(accessToken: string): string {
  return base64url.encode(sha256(accessToken));
}

/**
 * Whether a proof's `htu` names `expected`: both parsed as URLs (so scheme and host case and a
 * default port do not matter, RFC 3986 §6.2.2–§6.2.3), compared without query and fragment
 * (RFC 9449 §4.3 item 9).
 */
export function sameTarget(htu: string, expected: string): boolean {
  if (!URL.canParse(htu)) return false;
  const a = new URL(htu);
  const b = new URL(expected);
  return (
    a.protocol === b.protocol &&
    a.host === b.host &&
    a.pathname === b.pathname &&
    a.username === '' &&
    a.password === ''
  );
}
