import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  describePasswordProblems,
  MAX_PASSWORD_LENGTH,
  PASSWORD_PROBLEM_TEXTS,
  passwordProblems,
} from '../../src/users/password-policy.js';
import { CATALOGUES } from '../../src/page-kit/i18n.js';

const context = { username: 'alice', productName: 'Acme ID' };

describe('password policy (NIST SP 800-63B-4 §3.1.1.2)', () => {
  it('refuses fewer than 8 code points, counted on the NFKC form, and more than 256', () => {
    expect(passwordProblems('x7#Kq2!', context)).toEqual(['too_short']);
    // Four astral-plane characters are 8 UTF-16 units but 4 code points.
    expect(passwordProblems('😀🎉🔒🌍', context)).toEqual(['too_short']);
    // NFKC folds the ligature "ﬀ" into "ff": 4 ligatures are 8 characters after normalisation.
    expect(passwordProblems('ﬀﬀﬀﬀ', context)).not.toContain('too_short');
    expect(passwordProblems('a'.repeat(MAX_PASSWORD_LENGTH + 1), context)).toEqual(['too_long']);
  });

  it('refuses common and breached passwords, also reversed, l33t or capitalised', () => {
    for (const p of [
      'password',
      'Password',
      'p@ssw0rd',
      'drowssap',
      'sunshine',
      'iloveyou',
      'baseball',
      'ＰＡＳＳＷＯＲＤ',
    ])
      expect(passwordProblems(p, context), p).toEqual(['common']);
  });

  it('refuses passwords within reach of online guessing (zxcvbn score below 2)', () => {
    for (const p of ['qwertyuiop', '11111111', '12345678', 'abcdefgh', 'aaaaaaaaaa'])
      expect(passwordProblems(p, context), p).toEqual(
        expect.arrayContaining([expect.stringMatching(/^(common|guessable)$/)]),
      );
  });

  it('refuses the username and the product name, alone or inside the password, case-insensitively', () => {
    expect(passwordProblems('ALICE-4-ever-blue-sky', context)).toContain('contains_username');
    expect(passwordProblems('my acme id is great 93', context)).toContain('contains_product_name');
    // A name under 4 characters only counts when it is the whole password.
    expect(passwordProblems('glacier-walrus-cobalt', { username: 'al' })).toEqual([]);
  });

  it('has no composition rules: long passphrases and random strings pass whatever their characters', () => {
    for (const p of [
      'correct horse battery staple',
      'kangaroo violin lantern',
      'xK9#mQ2vLp',
      'zürich-straße-möwe-7',
      'すしとラーメンが好きです',
    ])
      expect(passwordProblems(p, context), p).toEqual([]);
  });

  it('explains each problem in English for the command line', () => {
    expect(describePasswordProblems(['too_short', 'contains_username'])).toBe(
      'the password is shorter than 8 characters; the password contains the username',
    );
  });

  it('has a page text for every problem in every language', () => {
    for (const catalogue of Object.values(CATALOGUES))
      for (const key of Object.values(PASSWORD_PROBLEM_TEXTS)) expect(catalogue[key]).toMatch(/\S/);
    expect(CATALOGUES.de?.passwordTooShort).toBe('Das Passwort muss mindestens 8 Zeichen haben.');
  });

  it('answers any string with known problems only, never throwing (property)', () => {
    const known = ['too_short', 'too_long', 'common', 'guessable', 'contains_username', 'contains_product_name'];
    fc.assert(
      fc.property(
        fc.string({ unit: 'grapheme', maxLength: 40 }),
        fc.string({ maxLength: 12 }),
        (password, username) => {
          const problems = passwordProblems(password, { username });
          expect(problems.every((p) => known.includes(p))).toBe(true);
          expect(problems.includes('too_short')).toBe([...password.normalize('NFKC')].length < 8);
        },
      ),
      { numRuns: 200 },
    );
  });
});
