/**
 * User directories: where users live outside Sigil's own store, asked after config users
 * and stored users. The LDAP directory (`users/ldap/`) is one implementation; library users write
 * their own over their database and pass it to `createSigil({ userDirectories })`.
 */
import { OAuthError } from '../protocol/errors.js';
import type { User } from './user.js';

/**
 * A source of users. Every implementation gives the guarantees Sigil's own users have:
 * - `authenticate` answers an unknown username, a wrong password, and a disabled or locked account
 *   alike (undefined, or a user with `isActive: false` only after the right password); it never
 *   tells which one it was, and it takes about as long for each (no user enumeration, OWASP ASVS
 *   5.0 V6.3.8). An empty password is never right.
 * - The subject is stable and unique across the directory: a rename keeps it (never the username).
 * - Claims are the user's profile claims (OIDC Core §5.1 names); an array value stays an array;
 *   groups go in `role`.
 * - When the directory cannot answer (down, timing out, misconfigured), both methods throw
 *   `DirectoryUnavailable`: Sigil then answers `temporarily_unavailable`, never a 500, and stores
 *   nothing (no failure is counted against the user).
 * Sigil bounds the username (at most 100 characters) and the password (at most 1024) before asking.
 */
export interface UserDirectory {
  /** The directory's name, for logs and events. */
  readonly name: string;
  /**
   * Checks a username and password.
   * @returns the user (`isActive` false for a disabled account), or undefined for an unknown user or a wrong password.
   * @throws DirectoryUnavailable when the directory cannot answer; OAuthError 429
   *   `temporarily_unavailable` with `Retry-After` when the directory caps wrong passwords per
   *   account (the LDAP directory's `maxFailedBinds`) and the cap is reached: answered as the
   *   failure limits' refusal.
   * @param context what Sigil knows of where the check comes from (a directory may ignore it)
   */
  authenticate(username: string, password: string, context?: PasswordCheckContext): Promise<User | undefined>;
  /**
   * The user with that subject, with fresh claims (within the directory's own cache time), for
   * userinfo, refresh, sessions, MFA and passkeys; undefined when the directory has no such user.
   * @throws DirectoryUnavailable when the directory cannot answer.
   */
  findBySubject(subjectId: string): Promise<User | undefined>;
  /**
   * The user holding that username, found as `authenticate` finds them but without checking any
   * password (no bind, no failure counted); undefined when the directory has no such user. Sigil
   * asks it before a stored user takes a username (SCIM, the console, `sigil users add`,
   * self-registration, renames), refusing a name a directory holds, and at a stored user's
   * sign-in, refusing both when a directory has gained that user's name since: a stored user
   * must never answer for a directory user's name.
   * @throws DirectoryUnavailable when the directory cannot answer.
   */
  findByUsername(username: string): Promise<User | undefined>;
  /** Releases connections; called when Sigil closes. */
  close?(): Promise<void>;
}

/**
 * What Sigil knows of where a password check comes from, for a directory that budgets wrong
 * passwords per account (the LDAP directory's `knownBrowserBinds`).
 */
export interface PasswordCheckContext {
  /**
   * Whether the browser of the login page signed in the user with that subject with a password
   * before (its `sigil.known` cookie, signed by Sigil and unexpired, names the subject). Absent for
   * the password grant and for a browser without a valid such cookie.
   */
  knownBrowser?: (subjectId: string) => boolean;
}

/**
 * The directory could not answer. An `OAuthError` `temporarily_unavailable` with HTTP 503, so every
 * endpoint renders it as such without a special case. RFC 6749 §4.1.2.1 defines
 * `temporarily_unavailable` for the authorization endpoint only; §5.2 does not list it for the token
 * endpoint, where the closest listed code, `invalid_grant`, would tell the client the credentials
 * were wrong (and make it drop a good refresh token). Duende IdentityServer and Keycloak answer
 * such outages with a 5xx; Sigil uses the §4.1.2.1 code with 503 at every endpoint, which clients
 * that know the code understand and all others treat as a server error to retry (RFC 9110 §15.6.4).
 */
export class DirectoryUnavailable extends OAuthError {
  constructor(
    /** The directory that failed. */
    readonly directory: string,
    /** Why, for the log only (never sent). */
    readonly reason: string,
  ) {
    super('temporarily_unavailable', 'sign-in is temporarily unavailable, please try again later', 503, {
      'retry-after': '30',
    });
  }
}
