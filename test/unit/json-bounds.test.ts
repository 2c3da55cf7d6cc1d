/**
 * The JSON bounds helper (json-bounds.ts): depth counted on the text, brackets inside strings
 * and escaped quotes ignored, length checked first.
 */
import { describe, expect, it } from 'vitest';
import { jsonBoundsViolation } from '../../src/protocol/json-bounds.js';

describe('jsonBoundsViolation', () => {
  const bounds = { maxDepth: 3, maxLength: 100 };

  it('accepts nesting up to maxDepth and refuses one level more', () => {
    expect(jsonBoundsViolation('{"a":[{"b":1}]}', bounds)).toBeUndefined();
    expect(jsonBoundsViolation('{"a":[{"b":[1]}]}', bounds)).toBe('nested too deeply');
  });

  it('ignores brackets inside strings, escaped quotes included', () => {
    expect(jsonBoundsViolation('{"a":"[[[[{{{{","b":"\\"[[[[["}', bounds)).toBeUndefined();
  });

  it('refuses a text longer than maxLength', () => {
    expect(jsonBoundsViolation(`"${'x'.repeat(100)}"`, bounds)).toBe('too long');
  });
});
