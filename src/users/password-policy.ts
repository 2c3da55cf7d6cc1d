/**
 * The password policy for passwords people choose (NIST SP 800-63B-4 §3.1.1.2, Password
 * Verifiers; §5.1.1.2 in revision 3): applied where a password is set, by the CLI and admin
 * services (`sigil users add`, `set-password`), password reset, self-registration and the account
 * page. Never applied at sign-in: an existing password keeps working.
 *
 * The rules, and why:
 * - Length counts Unicode code points of the NFKC form (§3.1.1.2: "each Unicode code point SHALL
 *   be counted as a single character"; NFKC per UAX #15), so "ﬀ" and "ff" weigh the same.
 * - At least 8 code points (the §3.1.1.2 minimum), at most 256: longer than anyone types (the
 *   SHOULD is to permit at least 64), and a bound on the argon2id and matching work an
 *   unauthenticated form can make Sigil do.
 * - No composition rules (§3.1.1.2: "SHALL NOT impose other composition rules").
 * - Refused when it is common or breached (§3.1.1.2 blocklist), judged offline by zxcvbn-ts with
 *   its common lists (passwords from breach corpora, diceware words) and English ones (common
 *   words, names, Wikipedia words): refused when the whole password is one entry of those lists,
 *   also reversed, in l33t spelling or with other capitals (`common`), or when zxcvbn's score is
 *   below 2, i.e. an estimated 10^6 guesses or fewer: within reach of online guessing despite
 *   throttling, like "qwertyuiop" or "11111111" (`guessable`). A long passphrase of several words
 *   passes; a single dictionary word does not.
 * - Refused when it is, or contains, the username or the product name (§3.1.1.2: context-specific
 *   words such as the service name and the username), compared case-insensitively on NFKC forms;
 *   containment counts only for names of at least 4 code points (a 2-letter username would
 *   otherwise forbid every password holding those letters).
 */
import { createRequire } from 'node:module';
import type { ZxcvbnFactory } from '@zxcvbn-ts/core';
import type { Messages } from '../page-kit/i18n.js';

/** Fewest code points of a chosen password (NIST SP 800-63B-4 §3.1.1.2). */
export const MIN_PASSWORD_LENGTH = 8;
/** Most code points of a chosen password: bounds the hashing and matching work per request. */
export const MAX_PASSWORD_LENGTH = 256;

/** Why a password is refused; pages show each with its text, `PASSWORD_PROBLEM_TEXTS`. */
export type PasswordProblem =
  | 'too_short'
  | 'too_long'
  | 'common'
  | 'guessable'
  | 'contains_username'
  | 'contains_product_name';

/** The page text (a key of the catalogues of `page-kit/i18n.ts`) that explains each problem. */
export const PASSWORD_PROBLEM_TEXTS = {
  too_short: 'passwordTooShort',
  too_long: 'passwordTooLong',
  common: 'passwordCommon',
  guessable: 'passwordGuessable',
  contains_username: 'passwordContainsUsername',
  contains_product_name: 'passwordContainsProductName',
} as const satisfies Record<PasswordProblem, keyof Messages>;

/** What the password is checked against besides the lists. */
export interface PasswordContext {
  /** The account's username, when it has one. */
  username?: string;
  /** The product name the pages show (e.g. "Acme ID"). */
  productName?: string;
}

/** Names shorter than this only refuse a password equal to them, never one containing them. */
const MIN_CONTAINED_NAME = 4;

let matcher: ZxcvbnFactory | undefined;

/**
 * The zxcvbn matcher, built once on first use (ranking the dictionaries takes a moment). The
 * packages are loaded then too, not at start: their word lists are a third of the `sigil`
 * command's code and are unpacked when loaded, and only a password being set needs them.
 */
function zxcvbn(): ZxcvbnFactory {
  if (!matcher) {
    const load = createRequire(import.meta.url);
    const { ZxcvbnFactory: Factory } = load('@zxcvbn-ts/core') as typeof import('@zxcvbn-ts/core');
    const common = load('@zxcvbn-ts/language-common') as typeof import('@zxcvbn-ts/language-common');
    const english = load('@zxcvbn-ts/language-en') as typeof import('@zxcvbn-ts/language-en');
    matcher = new Factory({
      dictionary: { ...common.dictionary, ...english.dictionary },
      graphs: common.adjacencyGraphs,
      translations: english.translations,
      maxLength: MAX_PASSWORD_LENGTH,
    });
  }
  return matcher;
}

/**
 * Checks a password someone chose against the policy (the module docstring gives the rules).
 * @param password the clear text as submitted
 * @returns the problems, empty when the password is acceptable; a password out of the length
 *   bounds gets only that problem (the lists are not searched).
 */
export function passwordProblems(password: string, context: PasswordContext = {}): PasswordProblem[] {
  const normal = password.normalize('NFKC');
  const length = [...normal].length;
  if (length < MIN_PASSWORD_LENGTH) return ['too_short'];
  if (length > MAX_PASSWORD_LENGTH) return ['too_long'];
  const problems: PasswordProblem[] = [];
  const lower = normal.toLowerCase();
  const names = { contains_username: context.username, contains_product_name: context.productName } as const;
  for (const [problem, name] of Object.entries(names) as [PasswordProblem, string | undefined][]) {
    const n = name?.normalize('NFKC').toLowerCase().trim();
    if (n && (lower === n || ([...n].length >= MIN_CONTAINED_NAME && lower.includes(n)))) problems.push(problem);
  }
  const inputs = Object.values(names).filter((n): n is string => typeof n === 'string' && n.length > 0);
  const result = zxcvbn().check(normal, inputs);
  const only = result.sequence.length === 1 ? result.sequence[0] : undefined;
  const whole = only?.pattern === 'dictionary' && only.dictionaryName !== 'userInputs';
  if (whole) problems.push('common');
  else if (result.score < 2) problems.push('guessable');
  return problems;
}

/** An English sentence per problem, for the command line and logs (pages use `i18n.ts`). */
export function describePasswordProblems(problems: readonly PasswordProblem[]): string {
  const text: Record<PasswordProblem, string> = {
    too_short: `the password is shorter than ${MIN_PASSWORD_LENGTH} characters`,
    too_long: `the password is longer than ${MAX_PASSWORD_LENGTH} characters`,
    common: 'the password is a common or breached password',
    guessable: 'the password is too easy to guess',
    contains_username: 'the password contains the username',
    contains_product_name: 'the password contains the product name',
  };
  return problems.map((p) => text[p]).join('; ');
}
