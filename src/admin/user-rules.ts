/**
 * The rules of a stored user's data, which `UserAdmin` applies at every door that creates or
 * changes one (the command line, /admin/v1, the console, SCIM, self-registration, password reset,
 * the account page): the username and subject bounds, claims as a JSON object, email addresses,
 * and the password policy (NIST SP 800-63B-4 §3.1.1.2, `users/password-policy.ts`). Each check
 * throws the `AdminError` its door maps to its own answer.
 */
import { MAX_SUBJECT_LENGTH, MAX_USERNAME_LENGTH } from '../config/schema.js';
import { isEmailAddress } from '../users/email-address.js';
import { DirectoryConflict, type DirectoryEmail } from '../stores/directory.js';
import { describePasswordProblems, type PasswordProblem, passwordProblems } from '../users/password-policy.js';
import { AdminError, isJsonObject } from './errors.js';

/**
 * A password the policy refuses: `AdminError` `invalid` (field `password`), with the policy's problems for
 * pages that word them.
 */
export class PasswordRefused extends AdminError {
  /** @param problems what the policy found, never empty */
  constructor(readonly passwordProblems: readonly PasswordProblem[]) {
    super('invalid', describePasswordProblems(passwordProblems), 'password');
  }
}

/**
 * A username a stored user may have: 1 to `MAX_USERNAME_LENGTH` characters, not blank (the
 * config file's bound, which every sign-in door applies before it looks a name up).
 * @throws AdminError `invalid` (field `username`).
 */
export function checkUsername(username: string): void {
  if (username.trim().length === 0) throw new AdminError('invalid', 'a username is required', 'username');
  if (username.length > MAX_USERNAME_LENGTH)
    throw new AdminError('invalid', `the username is longer than ${MAX_USERNAME_LENGTH} characters`, 'username');
}

/**
 * A subject chosen for a new stored user: 1 to `MAX_SUBJECT_LENGTH` characters (OIDC Core §2).
 * @throws AdminError `invalid` (field `subjectId`).
 */
export function checkSubject(subjectId: string): void {
  if (subjectId.length === 0 || subjectId.length > MAX_SUBJECT_LENGTH)
    throw new AdminError('invalid', `the subject must be 1 to ${MAX_SUBJECT_LENGTH} characters`, 'subjectId');
}

/**
 * Claims that a stored user's primary address gives (OIDC Core §5.1): one source of truth, so
 * that the address in tokens is always the one a password reset or a confirmation link goes to.
 */
const ADDRESS_CLAIMS = ['email', 'email_verified'] as const;

/**
 * A user's claims: a JSON object of claim names and values (values keep their JSON type), that
 * sets or changes neither `email` nor `email_verified`, which come from the user's primary address
 * (`email`, `--email`). Values the user already had (`before`: an upstream provider's, or written
 * before this rule) may stay, so that rewriting other claims keeps them.
 * @throws AdminError `invalid` (field `claims`).
 */
export function checkClaims(claims: unknown, before: Record<string, unknown> = {}): Record<string, unknown> {
  if (!isJsonObject(claims)) throw new AdminError('invalid', 'claims must be a JSON object', 'claims');
  const address = ADDRESS_CLAIMS.find(
    (name) => Object.hasOwn(claims, name) && JSON.stringify(claims[name]) !== JSON.stringify(before[name]),
  );
  if (address !== undefined)
    throw new AdminError(
      'invalid',
      `claims must not hold "${address}": a stored user's email is their primary address, set as email (sigil users add --email, set-email)`,
      'claims',
    );
  return claims;
}

/**
 * An address given alone (the primary one: `sigil users add --email`, /admin/v1,
 * self-registration): `isEmailAddress`.
 * @throws AdminError `invalid` (field `email`).
 */
export function checkEmail(value: string): void {
  if (!isEmailAddress(value))
    throw new AdminError('invalid', `"${value.slice(0, 50)}" is not an email address`, 'email');
}

/**
 * The addresses of a user given as a list (SCIM `emails`, each value checked by SCIM as RFC 7643
 * §4.1.2 takes it): none listed twice (case-insensitive), at most one primary (RFC 7643 §2.4).
 * @throws AdminError `invalid` (field `email`) naming the first problem.
 */
export function checkEmails(emails: readonly DirectoryEmail[]): void {
  const seen = new Set<string>();
  for (const { value } of emails) {
    if (seen.has(value.toLowerCase())) throw new AdminError('invalid', `the email "${value}" is listed twice`, 'email');
    seen.add(value.toLowerCase());
  }
  if (emails.filter((e) => e.primary).length > 1)
    throw new AdminError('invalid', 'at most one email may be primary', 'email');
}

/**
 * The password policy's problems with a password someone chose for the user `username`
 * (`users/password-policy.ts`): empty when it is accepted.
 * @param productName what the password may not contain besides the username (`config/product-name.ts`)
 */
export function policyProblems(password: string, username: string, productName: string): PasswordProblem[] {
  return passwordProblems(password, { username, productName });
}

/**
 * Refuses a password the policy refuses (`policyProblems`).
 * @throws PasswordRefused naming every problem.
 */
export function checkPassword(password: string, username: string, productName: string): void {
  const problems = policyProblems(password, username, productName);
  if (problems.length > 0) throw new PasswordRefused(problems);
}

/**
 * `emails` with `email` as the primary address, `verified` as given: an address of the list with
 * the same value (case-insensitive) becomes it (its type kept), the others stay, no longer primary.
 */
export function withPrimary(
  emails: readonly DirectoryEmail[],
  email: { value: string; verified: boolean },
): DirectoryEmail[] {
  const same = (e: DirectoryEmail) => e.value.toLowerCase() === email.value.toLowerCase();
  const type = emails.find(same)?.type ?? null;
  return [
    ...emails.filter((e) => !same(e)).map((e) => ({ ...e, primary: false })),
    { value: email.value, type, primary: true, verified: email.verified },
  ];
}

/**
 * The addresses a door lists for a user, each verified when the user had it verified before
 * (case-insensitive): a verified address stays verified, since its owner confirmed it by mail; a
 * new one is not.
 */
export function carriedOver(
  emails: readonly Omit<DirectoryEmail, 'verified'>[],
  before: readonly DirectoryEmail[],
): DirectoryEmail[] {
  return emails.map((e) => ({
    ...e,
    verified: before.find((b) => b.value.toLowerCase() === e.value.toLowerCase())?.verified ?? false,
  }));
}

/**
 * The refusal of a username a stored user holds already (`UserAdmin`'s check, or the store's unique index in
 * a race).
 */
export function usernameTaken(username: string): AdminError {
  return new AdminError('conflict', `a stored user "${username}" exists already`, 'username', undefined, {
    reason: 'exists',
    item: { kind: 'user', name: username },
  });
}

/**
 * A write the store refused for a taken username (`DirectoryConflict`), as `usernameTaken`; any other error
 * as it is.
 */
export function conflictOf(err: unknown, username: string): unknown {
  return err instanceof DirectoryConflict ? usernameTaken(username) : err;
}
