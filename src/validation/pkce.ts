/**
 * Proof Key for Code Exchange (RFC 7636): challenge syntax at the authorization endpoint (§4.2,
 * §4.3) and verification at the token endpoint (§4.6).
 */
import { createHash, timingSafeEqual } from 'node:crypto';

/** `code_verifier` / S256 `code_challenge` syntax: 43–128 unreserved characters (§4.1, §4.2). */
const PKCE_VALUE = /^[A-Za-z0-9\-._~]{43,128}$/;

/** Supported `code_challenge_method` values. */
export type PkceMethod = 'S256' | 'plain';

/** Whether a `code_challenge` (or `code_verifier`) has valid syntax. */
export function isPkceValue(value: string): boolean {
  return PKCE_VALUE.test(value);
}

/**
 * Checks a `code_verifier` against the stored challenge (RFC 7636 §4.6), in constant time.
 * A verifier outside the §4.1 syntax never matches.
 */
export function verifyPkce(verifier: string, challenge: string, method: PkceMethod): boolean {
  if (!isPkceValue(verifier)) return false;
  const derived = method === 'S256' ? createHash('sha256').update(verifier, 'ascii').digest('base64url') : verifier;
  const a = Buffer.from(derived);
  const b = Buffer.from(challenge);
  return a.length === b.length && timingSafeEqual(a, b);
}
