/**
 * Signing keys (DESIGN §3): one key per configured algorithm, generated on first start and kept in
 * the store so every node signs with the same keys; published as a JWKS (RFC 7517, OIDC Core §10.1).
 */
import {
  calculateJwkThumbprint,
  createLocalJWKSet,
  exportJWK,
  generateKeyPair,
  importJWK,
  type CryptoKey,
  type JWK,
  type JWTPayload,
  type JWTVerifyGetKey,
  SignJWT,
} from 'jose';
import type { SigningAlgorithm } from '../config/schema.js';
import type { KeyStore, StoredKey } from '../stores/types.js';
import { nowSeconds } from '../tokens/handles.js';

interface ActiveKey {
  kid: string;
  alg: string;
  key: CryptoKey;
  publicJwk: JWK;
}

/** The keys a Sigil instance signs with and publishes. */
export class KeyRing {
  private constructor(
    private readonly byAlg: Map<string, ActiveKey>,
    private readonly published: JWK[],
    readonly defaultAlgorithm: SigningAlgorithm,
    /** Verifies Sigil's own JWTs against the published keys. */
    readonly verificationKeys: JWTVerifyGetKey,
    readonly algorithms: SigningAlgorithm[],
  ) {}

  /**
   * Loads the keys from the store, generating (and storing) one for each algorithm that has none.
   * The first algorithm signs tokens by default.
   */
  static async load(store: KeyStore, algorithms: SigningAlgorithm[]): Promise<KeyRing> {
    let stored = await store.listKeys();
    for (const alg of algorithms) {
      if (!stored.some((k) => k.alg === alg)) await store.addKey(await generateKey(alg));
    }
    stored = await store.listKeys();
    const byAlg = new Map<string, ActiveKey>();
    const published: JWK[] = [];
    for (const k of stored) {
      const publicJwk = { ...(k.publicJwk as JWK), kid: k.kid, use: 'sig', alg: k.alg };
      published.push(publicJwk);
      // The newest key of an algorithm signs.
      byAlg.set(k.alg, { kid: k.kid, alg: k.alg, key: (await importJWK(k.privateJwk as JWK, k.alg)) as CryptoKey, publicJwk });
    }
    const [first] = algorithms;
    if (!first) throw new Error('signingAlgorithms is empty');
    return new KeyRing(byAlg, published, first, createLocalJWKSet({ keys: published }), algorithms);
  }

  /** The public JWKS document: `{ keys: [...] }` with `kid`, `use`, `alg` on every key. */
  jwks(): { keys: JWK[] } {
    return { keys: this.published };
  }

  /**
   * Signs a JWT with the key of `alg` (default: the first configured algorithm).
   * @param typ the JOSE `typ` header, e.g. `at+jwt` (RFC 9068 §2.1) or `JWT`.
   */
  async sign(payload: JWTPayload, typ: string, alg: string = this.defaultAlgorithm): Promise<string> {
    const key = this.byAlg.get(alg);
    if (!key) throw new Error(`no signing key for ${alg}`);
    return new SignJWT(payload).setProtectedHeader({ alg: key.alg, kid: key.kid, typ }).sign(key.key);
  }
}

async function generateKey(alg: SigningAlgorithm): Promise<StoredKey> {
  const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true, modulusLength: 2048 });
  const publicJwk = await exportJWK(publicKey);
  const privateJwk = await exportJWK(privateKey);
  const kid = await calculateJwkThumbprint(publicJwk);
  return { kid, alg, privateJwk: { ...privateJwk }, publicJwk: { ...publicJwk }, createdAt: nowSeconds(), retiredAt: null };
}
