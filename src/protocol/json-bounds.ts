/**
 * Bounds on the JSON that callers send Sigil inside signed objects (request objects, RFC 9101;
 * client assertions, RFC 7523 §3): how long the text may be and how deeply its arrays and objects
 * may nest. Checked on the text before anything parses or walks it, so a payload nesting
 * thousands of levels deep is refused with the caller's OAuth error instead of exhausting the
 * stack (OWASP API4:2023, unrestricted resource consumption).
 */
import { base64url } from 'jose';

/** Limits on one JSON text. */
export interface JsonBounds {
  /** Most nested arrays and objects, the outermost counting 1. */
  maxDepth: number;
  /** Most characters of the JSON text. */
  maxLength: number;
}

/**
 * The bounds for JSON inside a JWT from a caller: depth 16 is four times what the deepest
 * standard member needs (`claims` → `userinfo` → claim → `values`, OIDC Core §5.5), and the
 * length is Duende's 51,200-character limit on a whole JWT.
 */
export const CALLER_JSON_BOUNDS: JsonBounds = { maxDepth: 16, maxLength: 51_200 };

/** Why a JSON text is out of bounds. */
export type JsonBoundsViolation = 'too long' | 'nested too deeply';

/**
 * Checks a JSON text's length and nesting depth without parsing it (a single pass, no recursion).
 * The text need not be valid JSON: validity is the parser's business afterwards.
 * @returns the violation, or undefined when the text is within `bounds`
 */
export function jsonBoundsViolation(
  text: string,
  bounds: JsonBounds = CALLER_JSON_BOUNDS,
): JsonBoundsViolation | undefined {
  if (text.length > bounds.maxLength) return 'too long';
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c)
        i++; // backslash: the next character is escaped
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) {
      inString = true;
    } else if (c === 0x5b || c === 0x7b) {
      if (++depth > bounds.maxDepth) return 'nested too deeply';
    } else if (c === 0x5d || c === 0x7d) {
      depth--;
    }
  }
  return undefined;
}

/**
 * Checks the JSON parts (protected header and payload) of a compact JWS (RFC 7515 §7.1) against
 * `bounds`, before a JOSE library decodes them. Segments that are not base64url are left for the
 * library to refuse.
 * @returns the violation, or undefined when both parts are within `bounds` (or not decodable)
 */
export function jwsBoundsViolation(
  jws: string,
  bounds: JsonBounds = CALLER_JSON_BOUNDS,
): JsonBoundsViolation | undefined {
  const parts = jws.split('.');
  if (parts.length !== 3) return undefined;
  const decoder = new TextDecoder();
  for (const segment of parts.slice(0, 2)) {
    let text: string;
    try {
      text = decoder.decode(base64url.decode(segment ?? ''));
    } catch {
      return undefined;
    }
    const violation = jsonBoundsViolation(text, bounds);
    if (violation) return violation;
  }
  return undefined;
}
