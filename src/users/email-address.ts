/**
 * What Sigil takes as a user's email address: the one check of every door that is given one
 * (self-registration, password reset by address, the user administration).
 */

/** Longest address accepted (RFC 5321 §4.5.3.1: 64 + 1 + 255). */
export const MAX_EMAIL_LENGTH = 320;

/** A syntactically plausible address: one @, something on each side, no spaces or angle brackets. */
export function isEmailAddress(value: string): boolean {
  return value.length <= MAX_EMAIL_LENGTH && /^[^\s@<>()",;]+@[^\s@<>()",;]+\.[^\s@<>()",;]+$/.test(value);
}
