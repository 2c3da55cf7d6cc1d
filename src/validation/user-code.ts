/**
 * User codes of the device flow (RFC 8628 §6.1): 8 characters from a 20-letter consonant alphabet
 * without look-alikes or vowels (no words), shown as `XXXX-XXXX`, entered case-insensitively with
 * or without the dash and spaces. 20^8 ≈ 2.6·10^10 codes (34.5 bits); with failed entries limited
 * per address and browser (config `rateLimits`) and codes living `deviceCodeLifetime` seconds,
 * guessing a live code is impractical (RFC 8628 §5.1).
 */
import { randomInt } from 'node:crypto';

/** The alphabet (RFC 8628 §6.1's example). */
export const USER_CODE_ALPHABET = 'BCDFGHJKLMNPQRSTVWXZ';
/** Characters in a user code. */
export const USER_CODE_LENGTH = 8;

/** A new random user code in its canonical form (8 letters, no dash). */
export function generateUserCode(): string {
  let code = '';
  for (let i = 0; i < USER_CODE_LENGTH; i++) code += USER_CODE_ALPHABET[randomInt(USER_CODE_ALPHABET.length)];
  return code;
}

/** The display form `XXXX-XXXX` of a canonical code. */
export function formatUserCode(code: string): string {
  return `${code.slice(0, 4)}-${code.slice(4)}`;
}

/**
 * The canonical form of what a person typed: upper-cased, dashes and white space removed.
 * @returns the canonical code, or undefined when it cannot be a user code.
 */
export function normalizeUserCode(input: string): string | undefined {
  if (input.length > 64) return undefined;
  const code = input.toUpperCase().replace(/[\s-]/g, '');
  if (code.length !== USER_CODE_LENGTH) return undefined;
  for (const ch of code) if (!USER_CODE_ALPHABET.includes(ch)) return undefined;
  return code;
}
