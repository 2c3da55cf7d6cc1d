import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isEmailAddress, MAX_EMAIL_LENGTH } from '../../src/users/email-address.js';

describe('isEmailAddress', () => {
  it('accepts ordinary addresses and refuses what cannot be one', () => {
    for (const ok of ['a@b.co', 'Erin@Example.org', 'first.last+tag@sub.example.net'])
      expect(isEmailAddress(ok), ok).toBe(true);
    for (const bad of [
      '',
      'plain',
      '@example.org',
      'a@',
      'a@localhost',
      'a b@example.org',
      'a@b@example.org',
      '"Eve" <eve@example.org>',
      'x@example.org\r\nBcc: y@example.org',
    ])
      expect(isEmailAddress(bad), bad).toBe(false);
    expect(isEmailAddress(`${'a'.repeat(MAX_EMAIL_LENGTH)}@example.org`)).toBe(false);
  });

  it('accepts every RFC 5322 dot-atom address up to 320 characters, and nothing with a line break or over the bound (property)', () => {
    fc.assert(
      fc.property(fc.emailAddress(), (address) => {
        expect(isEmailAddress(address)).toBe(
          address.length <= MAX_EMAIL_LENGTH && address.split('@')[1]!.includes('.'),
        );
      }),
    );
    fc.assert(
      fc.property(fc.string(), fc.constantFrom('\r', '\n', ' ', '<', '>'), fc.string(), (a, c, b) => {
        expect(isEmailAddress(`${a}${c}${b}@example.org`)).toBe(false);
      }),
    );
  });
});
