/** `sanitizeDescription` and `OAuthError` (src/protocol/errors.ts): error_description per RFC 6749 §5.2. */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { OAuthError, sanitizeDescription } from '../../src/protocol/errors.js';
import { unicodeText } from './arbitraries.js';

/** RFC 6749 §5.2: error_description = 1*( %x20-21 / %x23-5B / %x5D-7E ). */
const DESCRIPTION = /^[\x20\x21\x23-\x5B\x5D-\x7E]*$/;
const anyText = fc.oneof(
  unicodeText({ maxLength: 300 }),
  fc.string({ unit: 'binary-ascii', maxLength: 300 }),
  fc.string({ maxLength: 300 }),
);

describe('sanitizeDescription', () => {
  it('outputs only the RFC 6749 §5.2 character set, at most 200 characters', () => {
    fc.assert(
      fc.property(anyText, (text) => {
        const out = sanitizeDescription(text);
        expect(out).toMatch(DESCRIPTION);
        expect(out.length).toBeLessThanOrEqual(200);
      }),
    );
  });

  it('keeps allowed text unchanged and is idempotent', () => {
    const allowed = fc.string({
      unit: fc.constantFrom(
        ...Array.from({ length: 0x7f - 0x20 }, (_, i) => String.fromCharCode(0x20 + i)).filter(
          (c) => c !== '"' && c !== '\\',
        ),
      ),
      maxLength: 200,
    });
    fc.assert(
      fc.property(allowed, (text) => {
        expect(sanitizeDescription(text)).toBe(text);
      }),
    );
    fc.assert(
      fc.property(anyText, (text) => {
        expect(sanitizeDescription(sanitizeDescription(text))).toBe(sanitizeDescription(text));
      }),
    );
  });

  it('replaces quotes, backslashes, controls and non-ASCII', () => {
    expect(sanitizeDescription('a"b\\c\nd\u0000é😀')).toBe('a?b?c?d????');
    expect(sanitizeDescription('x'.repeat(500))).toHaveLength(200);
  });

  it('OAuthError bodies always carry a valid error_description', () => {
    fc.assert(
      fc.property(anyText, (text) => {
        const body = new OAuthError('invalid_request', text).toJSON();
        expect(body.error).toBe('invalid_request');
        if (body.error_description !== undefined) expect(body.error_description).toMatch(DESCRIPTION);
        expect(JSON.parse(JSON.stringify(body))).toEqual(body);
      }),
    );
  });
});
