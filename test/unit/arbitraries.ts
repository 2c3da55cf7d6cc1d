/** Shared fast-check arbitraries and helpers for the unit property tests. */
import fc from 'fast-check';
import { expect } from 'vitest';
import { OAuthError } from '../../src/protocol/errors.js';

/** Awkward characters: emoji (surrogate pairs), RTL text and marks, combining marks, controls, NUL. */
export const NASTY = [
  '😀',
  '👩‍👩‍👧',
  '\u202e',
  'שלום',
  'مرحبا',
  'e\u0301',
  '\u200b',
  '\ufeff',
  '\u0000',
  '\t',
  '\n',
  '\r',
  '\\',
  '"',
  '\u007f',
  '\u00a0',
];

/** Any well-formed Unicode text: full code point range, graphemes, and the nasty ones. */
export const unicodeText = (constraints: { minLength?: number; maxLength?: number } = {}) =>
  fc.oneof(
    fc.string({ unit: 'binary', ...constraints }),
    fc.string({ unit: 'grapheme', ...constraints }),
    fc.string({
      unit: fc.oneof(fc.constantFrom(...NASTY), fc.string({ unit: 'grapheme-ascii', minLength: 1, maxLength: 1 })),
      ...constraints,
    }),
  );

/** Text made of urlencoding's structural pieces: `%`, `&`, `=`, `+`, valid and broken escapes. */
export const formishText = fc.string({
  unit: fc.oneof(
    fc.constantFrom(
      '%',
      '&',
      '=',
      '+',
      ' ',
      'a',
      'Z',
      '0',
      'F',
      '%00',
      '%20',
      '%2B',
      '%26',
      '%3D',
      '%C3%A9',
      '%C3',
      '%A9',
      '%E2%82',
      '%F0%9F%98%80',
      '%ED%A0%80',
      '%ZZ',
      '%4',
      '%%',
      '\u0000',
      ...NASTY,
    ),
    fc.string({ unit: 'binary', maxLength: 2 }),
  ),
  maxLength: 60,
});

/** application/x-www-form-urlencoded encoding of one component (WHATWG URL standard). */
export const formEncode = (s: string): string => new URLSearchParams({ x: s }).toString().slice(2);

/** Runs `f`; returns the OAuthError it throws (failing on any other error), or undefined. */
export function caught(f: () => unknown): OAuthError | undefined {
  try {
    f();
    return undefined;
  } catch (err) {
    expect(err).toBeInstanceOf(OAuthError);
    return err as OAuthError;
  }
}
