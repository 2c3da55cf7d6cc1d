/**
 * Signing keys, in the spirit of Duende's automatic key management: keys live in the
 * store so every node signs with the same ones; a new key is published in the JWKS for a
 * propagation period before it signs; a superseded or retired key stays published for a retention
 * period so the tokens it signed keep validating (OIDC Core §10.1.1); keys rotate on their own after
 * `rotationSeconds`. Private keys are encrypted at rest (JWE `dir` + `A256GCM`) when a data key is
 * given. Every node reloads the keys periodically, so rotation needs no restart, and at once when
 * it meets a JWT signed with a key it does not know: another node or worker may have added the key
 * since, and its tokens must not be refused meanwhile. With SAML on, the SAML signing key (kind
 * `saml-rsa`, certificates.ts) lives the same life beside them: generated, rotated, published
 * (in the SAML metadata, never in the JWKS) and retired as they are.
 */
import {
  calculateJwkThumbprint,
  CompactEncrypt,
  compactDecrypt,
  createLocalJWKSet,
  errors as joseErrors,
  exportJWK,
  generateKeyPair,
  type JWK,
  type JWTPayload,
  type JWTVerifyGetKey,
} from 'jose';
import type { KeyObject } from 'node:crypto';
import type { SigningAlgorithm } from '../config/schema.js';
import type { KeyStore, StoredKey } from '../stores/types.js';
import { nowSeconds } from '../crypto/handles.js';
import { certificateOf, generateSamlKey, privateKeyObject, SAML_KEY_KIND } from './certificates.js';
import { type CompactSigner, compactSigner } from './compact-jws.js';

export { SAML_KEY_KIND } from './certificates.js';

/** What a stored key is for: a JWT signing algorithm, or the SAML signing key (`SAML_KEY_KIND`). */
export type KeyKind = SigningAlgorithm | typeof SAML_KEY_KIND;

/**
 * The SAML signing keys in force: the certificates to publish in metadata (base64 DER; a pending
 * key's before it signs, a retired key's while it is kept, as the JWKS does) and the one that signs.
 */
export interface SamlKeys {
  certificates: string[];
  signer?: { kid: string; certificate: string; privateKey: KeyObject };
}

/** Lifecycle settings, in seconds (config `signingKeys`). */
export interface KeyPolicy {
  /** How long a new key is published before it signs. */
  propagationSeconds: number;
  /** How long a superseded or retired key stays published. */
  retentionSeconds: number;
  /** Age of the signing key after which a successor is created. */
  rotationSeconds: number;
  /** 32-byte key encrypting private keys at rest (`SIGIL_DATA_KEY`), if any. */
  dataKey?: Uint8Array;
}

/** Where a key is in its life at a given time. */
export type KeyStatus = 'pending' | 'active' | 'retired' | 'expired';

/** A stored key with its status. */
export interface KeyInfo extends StoredKey {
  status: KeyStatus;
  /** Until when it is published (Unix seconds), when that is known. */
  publishedUntil: number | null;
}

/**
 * The order of keys of one algorithm, oldest first: by activation, then creation (Unix seconds),
 * then `kid`. The `kid` decides only between keys made in the same second to activate in the same
 * second, which `rotateKeys` never does on one node (it activates a successor strictly after the
 * newest key); two nodes adding a key at once may. The `kid` order (of the JWK thumbprint
 * strings, RFC 7638: the greater signs) is arbitrary but the same on every node, whatever order
 * the store lists the keys in, so every node signs with the same key.
 */
export function compareKeys(a: StoredKey, b: StoredKey): number {
  return a.activatesAt - b.activatesAt || a.createdAt - b.createdAt || (a.kid < b.kid ? -1 : a.kid > b.kid ? 1 : 0);
}

/** The newest (`compareKeys`) not retired key of `alg` activating at `at` (Unix seconds) or before, if any. */
function newestLive(keys: readonly StoredKey[], alg: string, at: number): StoredKey | undefined {
  return keys
    .filter((k) => k.alg === alg && k.retiredAt === null && k.activatesAt <= at)
    .sort(compareKeys)
    .at(-1);
}

/**
 * The status of every key at `now`: per algorithm, the newest (`compareKeys`) activated, not
 * retired key is `active`; older ones are `retired` from the moment their successor activated (or
 * from their own `retiredAt`) and `expired` once the retention period has passed.
 */
export function describeKeys(keys: readonly StoredKey[], policy: KeyPolicy, now: number): KeyInfo[] {
  const signing = new Map<string, StoredKey>();
  for (const alg of new Set(keys.map((k) => k.alg))) {
    const newest = newestLive(keys, alg, now);
    if (newest) signing.set(alg, newest);
  }
  return keys.map((k) => {
    const current = signing.get(k.alg);
    if (k.activatesAt > now && k.retiredAt === null) return { ...k, status: 'pending', publishedUntil: null };
    if (current?.kid === k.kid) return { ...k, status: 'active', publishedUntil: null };
    const retiredAt = k.retiredAt ?? current?.activatesAt ?? now;
    const publishedUntil = retiredAt + policy.retentionSeconds;
    return { ...k, status: publishedUntil > now ? 'retired' : 'expired', publishedUntil };
  });
}

/**
 * Adds a successor key for each algorithm, published now and signing after the propagation
 * period (or at once when `immediate`, e.g. when no key of that algorithm can sign). A successor
 * activates strictly after every live (not retired) key of its algorithm, later than planned
 * when one activates in that second or after it (two rotations within one second; a pending key
 * of a longer propagation period): the latest rotation is the newest key in `compareKeys` order,
 * on every node. An `immediate` key activates now whatever is pending, as none can sign.
 * @returns the keys added.
 */
export async function rotateKeys(
  store: KeyStore,
  algorithms: readonly KeyKind[],
  policy: KeyPolicy,
  now = nowSeconds(),
  immediate = false,
): Promise<StoredKey[]> {
  const stored = await store.listKeys();
  // Generated side by side (each on a thread of libuv's pool), stored in the order given.
  const added = await Promise.all(
    algorithms.map((alg) => {
      const planned = immediate ? now : now + policy.propagationSeconds;
      const newest = immediate ? undefined : newestLive(stored, alg, Infinity);
      const activatesAt = newest === undefined ? planned : Math.max(planned, newest.activatesAt + 1);
      return generateKey(alg, now, activatesAt, policy.dataKey);
    }),
  );
  for (const key of added) await store.addKey(key);
  return added;
}

interface Loaded {
  signers: Map<string, { alg: string; signer: CompactSigner; activatesAt: number }>;
  published: JWK[];
  verify: JWTVerifyGetKey;
  saml: SamlKeys;
}

/**
 * The shortest time between two reloads caused by JWTs of unknown keys, milliseconds: tokens forged
 * with made-up `kid`s cost the store at most one read of the keys per interval.
 */
export const UNKNOWN_KEY_RELOAD_INTERVAL_MS = 1000;

/** The keys a Sigil instance signs with and publishes; reloadable. */
export class KeyRing {
  private loaded: Loaded;
  /** The signer of each key that has signed here, by `kid`: the private key is read once. */
  private readonly compactSigners = new Map<string, CompactSigner>();
  /** The next reload for JWTs of unknown keys, shared by every such JWT until it starts. */
  private unknownKeyReload: Promise<void> | undefined;
  /** When the last such reload started (`performance.now()`). */
  private unknownKeyReloadAt = -Infinity;
  /** How many reads of the store this ring started, and the one whose keys are in use. */
  private reads = 0;
  private usedRead = 0;
  /** The time of the last read's statuses (Unix seconds). */
  private readAt = 0;

  /** Every kind of key this ring keeps: the JWT algorithms, and the SAML key when SAML is on. */
  readonly kinds: KeyKind[];
  private readonly samlKeys = new Map<string, KeyObject>();

  private constructor(
    private readonly store: KeyStore,
    readonly algorithms: SigningAlgorithm[],
    private readonly policy: KeyPolicy,
    saml: boolean,
  ) {
    this.kinds = saml ? [...algorithms, SAML_KEY_KIND] : [...algorithms];
    this.loaded = {
      signers: new Map(),
      published: [],
      verify: createLocalJWKSet({ keys: [] }),
      saml: { certificates: [] },
    };
  }

  /** The algorithm tokens are signed with by default: the first configured. */
  get defaultAlgorithm(): SigningAlgorithm {
    return this.algorithms[0] as SigningAlgorithm;
  }

  /**
   * Loads the keys, first generating what is missing: a key for an algorithm that has none able to
   * sign (signing at once), and a successor for a signing key older than `rotationSeconds`.
   * @param options.saml keep the SAML signing key too (config `saml.enabled`)
   * @throws Error when stored keys are encrypted and no (or the wrong) data key is given.
   */
  static async load(
    store: KeyStore,
    algorithms: SigningAlgorithm[],
    policy: KeyPolicy,
    options: { saml?: boolean } = {},
  ): Promise<KeyRing> {
    const { ring, ready } = KeyRing.open(store, algorithms, policy, options);
    await ready;
    return ring;
  }

  /**
   * Starts loading the keys as `load` does, and returns the ring at once: a start can build the
   * rest meanwhile, e.g. while a first start generates an RSA key on libuv's thread pool (a tenth
   * of a second or more). Until `ready` resolves the ring signs nothing and publishes no key, so
   * the caller awaits it before anything signs, verifies or refreshes.
   * @param options.saml keep the SAML signing key too (config `saml.enabled`)
   * @returns the ring, and `ready`, which rejects as `load` throws.
   * @throws Error when `algorithms` is empty.
   */
  static open(
    store: KeyStore,
    algorithms: SigningAlgorithm[],
    policy: KeyPolicy,
    options: { saml?: boolean } = {},
  ): { ring: KeyRing; ready: Promise<void> } {
    if (algorithms.length === 0) throw new Error('signingAlgorithms is empty');
    const ring = new KeyRing(store, algorithms, policy, options.saml === true);
    return { ring, ready: ring.refresh() };
  }

  /** Re-reads the store (after rotation on any node), creating keys as `load` does. */
  async refresh(now = nowSeconds()): Promise<void> {
    let read = await this.read(now);
    const missing = this.kinds.filter((alg) => !read.infos.some((k) => k.alg === alg && k.status === 'active'));
    const stale = this.kinds.filter((alg) => {
      const active = read.infos.find((k) => k.alg === alg && k.status === 'active');
      const pending = read.infos.some((k) => k.alg === alg && k.status === 'pending');
      return active !== undefined && !pending && active.activatesAt + this.policy.rotationSeconds <= now;
    });
    if (missing.length > 0) await rotateKeys(this.store, missing, this.policy, now, true);
    if (stale.length > 0) await rotateKeys(this.store, stale, this.policy, now);
    if (missing.length > 0 || stale.length > 0) read = await this.read(now);
    await this.use(read);
  }

  /** Reads the stored keys, with their status at `now`; `seq` orders the reads of this ring. */
  private async read(now: number): Promise<{ seq: number; infos: KeyInfo[] }> {
    const seq = ++this.reads;
    this.readAt = now;
    return { seq, infos: describeKeys(await this.store.listKeys(), this.policy, now) };
  }

  /**
   * Signs and publishes with the keys of a read, unless a later read is in use already (reads
   * overlap: a periodic one and one for an unknown key).
   */
  private async use({ seq, infos }: { seq: number; infos: KeyInfo[] }): Promise<void> {
    const signers: Loaded['signers'] = new Map();
    const published: JWK[] = [];
    const saml: SamlKeys = { certificates: [] };
    for (const k of infos) {
      if (k.status === 'expired') continue;
      if (k.alg === SAML_KEY_KIND) {
        // Published in the SAML metadata only: it signs XML, never a JWT.
        const certificate = certificateOf(k.publicJwk);
        saml.certificates.push(certificate);
        if (k.status === 'active') saml.signer = { kid: k.kid, certificate, privateKey: await this.samlKey(k) };
        continue;
      }
      published.push({ ...(k.publicJwk as JWK), kid: k.kid, use: 'sig', alg: k.alg });
      if (k.status === 'active')
        signers.set(k.alg, { alg: k.alg, signer: await this.signerOf(k), activatesAt: k.activatesAt });
    }
    if (seq < this.usedRead) return;
    this.usedRead = seq;
    this.loaded = { signers, published, verify: createLocalJWKSet({ keys: published }), saml };
  }

  /** The SAML signing keys in force (empty when SAML is off or before the first load). */
  saml(): SamlKeys {
    return this.loaded.saml;
  }

  /**
   * Verifies Sigil's own JWTs against the published keys (for jose's `jwtVerify`). A JWT whose key
   * is not among them waits for a read of the store that starts after it arrived, then is checked
   * against the keys read: a key another node or worker added is committed before it signs, so
   * that read has it. Such reads start at most once per `UNKNOWN_KEY_RELOAD_INTERVAL_MS`.
   * @throws jose's JWKSNoMatchingKey when the key is still unknown after the read.
   */
  readonly verificationKeys: JWTVerifyGetKey = async (header, token) => {
    try {
      return await this.loaded.verify(header, token);
    } catch (err) {
      if (!(err instanceof joseErrors.JWKSNoMatchingKey)) throw err;
      await this.reloadForUnknownKey();
      return this.loaded.verify(header, token);
    }
  };

  /**
   * Re-reads the keys (without creating any: that is `refresh`'s), starting no sooner than the
   * interval after the previous such read; callers until it starts share it. A failed read leaves
   * the keys as they were (the periodic `refresh` reports a store that fails).
   */
  private reloadForUnknownKey(): Promise<void> {
    if (!this.unknownKeyReload) {
      const wait = Math.max(0, this.unknownKeyReloadAt + UNKNOWN_KEY_RELOAD_INTERVAL_MS - performance.now());
      this.unknownKeyReload = new Promise((resolve) => setTimeout(resolve, wait))
        .then(() => {
          // From here on, a JWT of an unknown key needs a later read than this one.
          this.unknownKeyReload = undefined;
          this.unknownKeyReloadAt = performance.now();
          // Statuses never go back to before the last read (a clock set back revives no expired key).
          return this.read(Math.max(nowSeconds(), this.readAt));
        })
        .then((read) => this.use(read))
        .catch(() => {});
    }
    return this.unknownKeyReload;
  }

  /** The signing key of each algorithm and when it started signing (Unix seconds). */
  signingSince(): { alg: string; activatesAt: number }[] {
    return [...this.loaded.signers.values()].map(({ alg, activatesAt }) => ({ alg, activatesAt }));
  }

  /** The public JWKS document: `{ keys: [...] }` with `kid`, `use`, `alg` on every key. */
  jwks(): { keys: JWK[] } {
    return { keys: this.loaded.published };
  }

  /**
   * Signs a JWT with the active key of `alg` (default: the first configured algorithm), at once on
   * this thread: header `{"alg","kid","typ"}`, the claims' JSON text as the payload (RFC 7519 §7.1).
   * @param typ the JOSE `typ` header, e.g. `at+jwt` (RFC 9068 §2.1) or `JWT`.
   * @throws Error when no key of `alg` can sign.
   */
  sign(payload: JWTPayload, typ: string, alg: string = this.defaultAlgorithm): string {
    const key = this.loaded.signers.get(alg);
    if (!key) throw new Error(`no signing key for ${alg}`);
    // The claims are Sigil's own plain JSON, so the JWS payload is their JSON text as is: SignJWT
    // would copy and re-check every claim on each token.
    return key.signer.sign(payload, typ);
  }

  private async samlKey(k: StoredKey): Promise<KeyObject> {
    let key = this.samlKeys.get(k.kid);
    if (!key) {
      key = privateKeyObject(await openPrivateKey(k.privateKey, this.policy.dataKey));
      this.samlKeys.set(k.kid, key);
    }
    return key;
  }

  /** The signer of a stored key, made when the key first signs here (a load, rotation or reload). */
  private async signerOf(k: StoredKey): Promise<CompactSigner> {
    let signer = this.compactSigners.get(k.kid);
    if (!signer) {
      signer = compactSigner(k.alg as SigningAlgorithm, k.kid, await openPrivateKey(k.privateKey, this.policy.dataKey));
      this.compactSigners.set(k.kid, signer);
    }
    return signer;
  }
}

async function generateKey(
  alg: KeyKind,
  now: number,
  activatesAt: number,
  dataKey: Uint8Array | undefined,
): Promise<StoredKey> {
  if (alg === SAML_KEY_KIND) {
    const saml = await generateSamlKey(now);
    const stored = await sealJson(JSON.stringify(saml.privateJwk), dataKey, saml.kid);
    return {
      kid: saml.kid,
      alg,
      privateKey: stored,
      publicJwk: { ...saml.publicJwk },
      createdAt: now,
      activatesAt,
      retiredAt: null,
    };
  }
  const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true, modulusLength: 2048 });
  const publicJwk = await exportJWK(publicKey);
  const kid = await calculateJwkThumbprint(publicJwk);
  const stored = await sealJson(JSON.stringify(await exportJWK(privateKey)), dataKey, kid);
  return { kid, alg, privateKey: stored, publicJwk: { ...publicJwk }, createdAt: now, activatesAt, retiredAt: null };
}

async function openPrivateKey(stored: string, dataKey: Uint8Array | undefined): Promise<JWK> {
  return JSON.parse(await openJson(stored, dataKey, 'signing keys')) as JWK;
}

/**
 * Seals a JSON text for storage at rest: a compact JWE (`dir`, `A256GCM`) under the
 * data key (`SIGIL_DATA_KEY`) when one is given, else the JSON itself. Used for private signing
 * keys and for second-factor secrets (TOTP).
 * @param json a JSON text (starts with `{`, so `openJson` tells it from a JWE)
 * @param kid an optional `kid` for the JWE header
 */
export async function sealJson(json: string, dataKey: Uint8Array | undefined, kid?: string): Promise<string> {
  if (!dataKey) return json;
  return new CompactEncrypt(new TextEncoder().encode(json))
    .setProtectedHeader({ alg: 'dir', enc: 'A256GCM', ...(kid ? { kid } : {}) })
    .encrypt(dataKey);
}

/**
 * Opens what `sealJson` stored: JSON as is, or the JWE decrypted with the data key.
 * @param what what the value is, for the error message (e.g. "signing keys")
 * @throws Error when the value is encrypted and no data key, or another one, is given.
 */
export async function openJson(stored: string, dataKey: Uint8Array | undefined, what: string): Promise<string> {
  if (stored.startsWith('{')) return stored;
  if (!dataKey) throw new Error(`${what} are encrypted: set SIGIL_DATA_KEY`);
  try {
    const { plaintext } = await compactDecrypt(stored, dataKey);
    return new TextDecoder().decode(plaintext);
  } catch {
    throw new Error(`${what} cannot be decrypted: SIGIL_DATA_KEY is not the key they were encrypted with`);
  }
}

/**
 * Reads `SIGIL_DATA_KEY`: 32 bytes as base64/base64url (43-44 characters) or hex (64).
 * @throws Error for any other length.
 */
export function parseDataKey(value: string | undefined): Uint8Array | undefined {
  if (value === undefined || value === '') return undefined;
  const bytes = /^[0-9a-fA-F]{64}$/.test(value) ? Buffer.from(value, 'hex') : Buffer.from(value, 'base64');
  if (bytes.length !== 32) throw new Error('SIGIL_DATA_KEY must be 32 bytes, as base64 or hex');
  return new Uint8Array(bytes);
}
