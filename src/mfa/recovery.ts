/**
 * Recovery codes: ten single-use codes that stand in for the second factor (OWASP ASVS 5.0
 * V6.5). Each has 50 random bits (10 characters of a 32-letter alphabet without look-alikes), so
 * it is stored as its SHA-256 like Sigil's other handles and checked under the
 * failure limits. A code is spent by one conditional update of its row (counter 0 → 1).
 */
import { randomInt } from 'node:crypto';
import type { FactorStore, StoredFactor } from '../stores/types.js';
import { hashHandle } from '../crypto/handles.js';
import { newFactorId } from './factors.js';

/** How many codes a set has. */
export const RECOVERY_CODE_COUNT = 10;
/** The factor kind of one code. */
export const RECOVERY_KIND = 'recovery_code';

const ALPHABET = 'abcdefghjkmnpqrstuvwxyz23456789';

/** Lower case, without spaces and dashes: how codes are compared. */
export function normaliseRecoveryCode(input: string): string {
  return input.toLowerCase().replace(/[\s-]+/g, '');
}

/**
 * Replaces the user's recovery codes with a new set, voiding the old ones in the same
 * transaction.
 * @returns the codes in clear (`xxxxx-xxxxx`), to show once; only their hashes are kept.
 */
export async function newRecoveryCodes(store: FactorStore, subjectId: string, now: number): Promise<string[]> {
  const codes: string[] = [];
  const rows: StoredFactor[] = [];
  for (let i = 0; i < RECOVERY_CODE_COUNT; i++) {
    let code = '';
    for (let j = 0; j < 10; j++) code += ALPHABET[randomInt(ALPHABET.length)];
    codes.push(`${code.slice(0, 5)}-${code.slice(5)}`);
    rows.push({
      id: newFactorId(),
      subjectId,
      kind: RECOVERY_KIND,
      label: '',
      data: { hash: hashHandle(code) },
      counter: 0,
      createdAt: now,
      lastUsedAt: null,
    });
  }
  await store.replaceFactors(subjectId, RECOVERY_KIND, rows);
  return codes;
}

/** How many of the user's recovery codes are still unused. */
export async function unusedRecoveryCodes(store: FactorStore, subjectId: string): Promise<number> {
  return (await store.listFactors(subjectId, [RECOVERY_KIND])).filter((f) => f.counter === 0).length;
}

/**
 * Spends one recovery code of the user.
 * @returns true when the code is one of the user's and was unused; of two concurrent uses of one
 *   code exactly one succeeds.
 */
export async function useRecoveryCode(
  store: FactorStore,
  subjectId: string,
  input: string,
  now: number,
): Promise<boolean> {
  const code = normaliseRecoveryCode(input);
  if (code.length !== 10) return false;
  const hash = hashHandle(code);
  const row = (await store.listFactors(subjectId, [RECOVERY_KIND])).find((f) => f.data.hash === hash);
  return row !== undefined && store.advanceFactorCounter(row.id, 1, now);
}
