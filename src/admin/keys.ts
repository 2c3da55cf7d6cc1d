/**
 * Signing key administration (keys live in the store, so every node signs
 * with the same ones and picks up a change within `signingKeys.reloadSeconds`): list, rotate and
 * retire, for `sigil keys` and, later, the management API.
 */
import type { ResolvedConfig } from '../config/loader.js';
import { describeKeys, type KeyInfo, type KeyKind, type KeyPolicy, rotateKeys, SAML_KEY_KIND } from '../keys/keys.js';
import type { KeyStore, StoredKey } from '../stores/types.js';
import { nowSeconds } from '../crypto/handles.js';
import { AdminError } from './errors.js';

/** Lists, rotates and retires the stored signing keys under the config's `signingKeys` policy. */
export class KeyAdmin {
  private readonly policy: KeyPolicy;

  /** @param dataKey the key sealing private keys at rest (`SIGIL_DATA_KEY`), if any */
  constructor(
    private readonly store: KeyStore,
    private readonly config: ResolvedConfig,
    dataKey?: Uint8Array,
  ) {
    this.policy = { ...config.signingKeys, ...(dataKey ? { dataKey } : {}) };
  }

  /**
   * Every stored key with its status at `now` (Unix seconds), oldest first, without its private
   * part: what the CLI, /admin/v1/keys and the console show.
   */
  async list(now = nowSeconds()): Promise<Omit<KeyInfo, 'privateKey'>[]> {
    return describeKeys(await this.store.listKeys(), this.policy, now).map(({ privateKey: _, ...shown }) => shown);
  }

  /**
   * Adds a successor key for `alg`, or for each kind of key when undefined (every one of
   * `signingAlgorithms`, and the SAML signing key `saml-rsa` when `saml.enabled`): published from
   * `now` (Unix seconds; the SAML one in the metadata's certificates), signing after
   * `signingKeys.propagationSeconds`.
   * @returns the keys added.
   * @throws AdminError `invalid` (field `alg`) when `alg` is none of those kinds.
   */
  async rotate(alg?: string, now = nowSeconds()): Promise<StoredKey[]> {
    const kinds: KeyKind[] = [...this.config.signingAlgorithms];
    if (this.config.saml.enabled) kinds.push(SAML_KEY_KIND);
    const algorithms = alg === undefined ? kinds : kinds.filter((a) => a === alg);

    if (algorithms.length === 0)
      throw new AdminError('invalid', `${alg} is not one of signingAlgorithms (or saml-rsa with saml enabled)`, 'alg');
    return rotateKeys(this.store, algorithms, this.policy, now);
  }

  /**
   * Retires a key at `now` (Unix seconds): it signs no more and stays published for
   * `signingKeys.retentionSeconds`.
   * @throws AdminError `not_found` when no live key has that kid.
   */
  async retire(kid: string, now = nowSeconds()): Promise<void> {
    if (!(await this.store.retireKey(kid, now))) throw new AdminError('not_found', `no live key ${kid}`);
  }
}
