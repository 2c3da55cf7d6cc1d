/**
 * The user service: users from the config file and from the store, password checks with argon2id,
 * and profile claims; then the user directories (LDAP, a library user's own), asked in order.
 * Config users win over stored users with the same subject, both over directories.
 */
import { randomBytes } from 'node:crypto';
import { hash, verify } from '@node-rs/argon2';
import type { UserConfig } from '../config/schema.js';
import type { StoredProfile, UserStore } from '../stores/types.js';
import type { PasswordCheckContext, UserDirectory } from './directory.js';
import type { User } from './user.js';
import type { UserEmailStore } from '../stores/user-emails.js';
import type { Logger } from 'pino';
import { DirectoryUnavailable } from './directory.js';

export { claimsOf, type User } from './user.js';

interface Candidate {
  user: User;
  /** argon2id hash (config clear-text passwords are hashed at start), or null: no password. */
  passwordHash: string | null;
  /** Whether the user is a stored one (else the config file's). */
  stored: boolean;
}

/**
 * Looks users up and checks passwords, in equal time for unknown users and wrong passwords: every
 * check runs exactly one argon2id verification, against the user's hash or, for an unknown
 * username, a dummy hash made at start (OWASP ASVS 5.0 V6.3.8: no user enumeration).
 */
/**
 * The config's users with each clear-text password replaced by its argon2id hash, so that no
 * clear-text password is kept past the start (the admin services and `UserService` see hashes).
 */
export async function withHashedPasswords(users: readonly UserConfig[]): Promise<UserConfig[]> {
  return Promise.all(
    users.map(async ({ password, ...u }) =>
      password === undefined ? u : { ...u, passwordHash: u.passwordHash ?? (await hash(password)) },
    ),
  );
}

export class UserService {
  private constructor(
    private readonly configUsers: readonly Candidate[],
    private readonly store: UserStore,
    private readonly dummyHash: string,
    private readonly directories: readonly UserDirectory[],
    private readonly isActiveHook: ((subjectId: string) => Promise<boolean>) | undefined,
    private readonly emails: UserEmailStore | undefined,
    private readonly log: Pick<Logger, 'warn'> | undefined,
  ) {}

  /**
   * Hashes the config's clear-text passwords and the dummy password with argon2id, once, before
   * the first request: a lazy hash would make the first check of an existing username slower
   * (username enumeration). No clear-text password is kept.
   * @param sources the directories asked after config and stored users, the library's
   *   `ProfileService.isActive`, `emails`: the stored users' addresses, which a CIBA `login_hint`
   *   may name (`findByLoginHint`); `log` takes the warning of a username both a stored user and
   *   a directory hold
   */
  static async create(
    configUsers: readonly UserConfig[],
    store: UserStore,
    sources: {
      directories?: readonly UserDirectory[];
      isActive?: (subjectId: string) => Promise<boolean>;
      emails?: UserEmailStore;
      log?: Pick<Logger, 'warn'>;
    } = {},
  ): Promise<UserService> {
    const candidates = await Promise.all(
      configUsers.map(
        async (u): Promise<Candidate> => ({
          user: {
            subjectId: u.subjectId,
            username: u.username,
            tenant: u.tenant ?? null,
            isActive: u.isActive,
            claims: u.claims,
          },
          passwordHash: u.passwordHash ?? (u.password === undefined ? null : await hash(u.password)),
          stored: false,
        }),
      ),
    );
    // The dummy's password is random: nobody knows a password that matches it.
    return new UserService(
      candidates,
      store,
      await hash(randomBytes(32).toString('base64url')),
      sources.directories ?? [],
      sources.isActive,
      sources.emails,
      sources.log,
    );
  }

  /**
   * Whether the library user's profile service (`ProfileService.isActive`) still counts the subject
   * active; true without one. Every user this service returns has it folded into `isActive`
   * already; introspection, which looks no user up, asks here.
   */
  async profileActive(subjectId: string): Promise<boolean> {
    return this.isActiveHook ? this.isActiveHook(subjectId) : true;
  }

  /** `user` with the profile service's answer folded into `isActive` (asked only for an active user). */
  private async checked(user: User | undefined): Promise<User | undefined> {
    if (!user?.isActive || !this.isActiveHook) return user;
    return (await this.isActiveHook(user.subjectId)) ? user : { ...user, isActive: false };
  }

  /**
   * The user with that subject, or undefined: config users, stored users, then each directory.
   * @throws DirectoryUnavailable when a directory asked cannot answer.
   */
  async findBySubject(subjectId: string): Promise<User | undefined> {
    return this.checked(await this.lookUp(subjectId));
  }

  private async lookUp(subjectId: string): Promise<User | undefined> {
    const fromConfig = this.configUsers.find((c) => c.user.subjectId === subjectId);
    if (fromConfig) return fromConfig.user;
    const stored = await this.store.findProfile({ subjectId });
    if (stored) return storedToUser(stored);
    for (const directory of this.directories) {
      const user = await directory.findBySubject(subjectId);
      if (user) return user;
    }
    return undefined;
  }

  /**
   * The user a CIBA `login_hint` names (OpenID CIBA Core 1.0 §7.1): a username (config and stored
   * users, then each directory, as at sign-in without a tenant: it must name exactly one user), else
   * an address that is exactly one user's: a stored user's verified primary address or a config
   * user's verified `email` claim. Active or not; undefined when it names nobody or several.
   * @throws DirectoryUnavailable when a directory asked cannot answer.
   */
  async findByLoginHint(hint: string): Promise<User | undefined> {
    const candidate = await this.findCandidate(hint, null);
    if (candidate) return this.checked(candidate.user);
    for (const directory of this.directories) {
      const user = await directory.findByUsername(hint);
      if (user) return this.checked(user);
    }
    if (!hint.includes('@')) return undefined;
    const address = hint.trim().toLowerCase();
    const subjects = new Set(
      this.configUsers
        .filter((c) => c.user.claims.email_verified === true && String(c.user.claims.email).toLowerCase() === address)
        .map((c) => c.user.subjectId),
    );
    for (const e of (await this.emails?.findByValue(hint)) ?? [])
      if (e.isPrimary && e.verified) subjects.add(e.subjectId);
    const [only] = subjects;
    return subjects.size === 1 && only !== undefined ? this.findBySubject(only) : undefined;
  }

  /** Closes the directories' connections. */
  async close(): Promise<void> {
    await Promise.all(this.directories.map((d) => d.close?.()));
  }

  /** Whether the subject is a config-file user's (read-only: changed in the file, never by Sigil). */
  isConfigUser(subjectId: string): boolean {
    return this.configUsers.some((c) => c.user.subjectId === subjectId);
  }

  /**
   * Checks a username and password. Usernames compare case-insensitively; with `tenant` only users
   * of that tenant are candidates, without it the username must name exactly one user.
   * An unknown user costs the same argon2id verification as a wrong password. A username that
   * names no config or stored user goes on to the directories in order (not for a tenant: directory
   * users belong to none); the first that knows the user and password answers. A directory that
   * cannot answer stops the check (a later directory must not sign in a namesake meanwhile). A
   * directory user whose subject is a config or stored user's is refused. A stored user whose
   * username a directory holds too (the directory gained the name after the user was stored) is
   * refused, and so is the directory's user, with a warning naming both: neither may answer for
   * the other's name.
   * @param context where the check comes from, passed on to the directories
   * @returns the user (active or not), or undefined for unknown user or wrong password.
   * @throws DirectoryUnavailable when a directory asked cannot answer; OAuthError 429 when a
   *   directory's cap of wrong passwords for the account is reached (`UserDirectory.authenticate`).
   */
  async checkPassword(
    username: string,
    password: string,
    tenant: string | null,
    context: PasswordCheckContext = {},
  ): Promise<User | undefined> {
    return this.checked(await this.passwordUser(username, password, tenant, context));
  }

  /** Whether any user directory is asked after config and stored users. */
  get hasDirectories(): boolean {
    return this.directories.length > 0;
  }

  private async passwordUser(
    username: string,
    password: string,
    tenant: string | null,
    context: PasswordCheckContext,
  ): Promise<User | undefined> {
    const candidate = await this.findCandidate(username, tenant);
    const storedHash = candidate?.passwordHash ?? this.dummyHash;
    let ok = false;
    try {
      ok = await verify(storedHash, password);
    } catch {
      ok = false;
    }
    if (candidate?.stored && tenant === null && (await this.directoryNamesake(candidate.user.username)))
      return undefined;
    // A user without a password never signs in with one (not even with the dummy's password).
    if (candidate) return ok && candidate.passwordHash ? candidate.user : undefined;
    if (tenant !== null) return undefined;
    for (const [i, directory] of this.directories.entries()) {
      const user = await directory.authenticate(username, password, context);
      if (!user) continue;
      // A subject a config or stored user, or a user of an earlier directory, holds would name that
      // user at every later lookup (sessions, refresh, userinfo: `lookUp` asks in this order): such
      // a directory user cannot sign in.
      if (
        this.configUsers.some((c) => c.user.subjectId === user.subjectId) ||
        (await this.store.findUserBySubject(user.subjectId))
      )
        return undefined;
      for (const earlier of this.directories.slice(0, i))
        if (await earlier.findBySubject(user.subjectId)) return undefined;
      return user;
    }
    return undefined;
  }

  /**
   * Whether a directory holds `username`, which a stored user holds too: creation refuses such a
   * name (`UserAdmin`), so it arises only when a directory gains it later. Neither user may then
   * sign in by that name: choosing one would let the other's password answer for it. Warned with
   * both names so that an operator renames one. A directory that cannot answer counts as not
   * holding it: the stored users keep signing in while a directory is down, as they do
   * elsewhere, and the name was free when the stored user took it.
   */
  private async directoryNamesake(username: string): Promise<boolean> {
    for (const directory of this.directories) {
      let held: User | undefined;
      try {
        held = await directory.findByUsername(username);
      } catch (err) {
        if (err instanceof DirectoryUnavailable) continue;
        throw err;
      }
      if (held) {
        this.log?.warn(
          { username, directory: directory.name, directorySubject: held.subjectId },
          `sign-in refused: username "${username}" is held by a stored user and by directory "${directory.name}"; rename one of them`,
        );
        return true;
      }
    }
    return false;
  }

  private async findCandidate(username: string, tenant: string | null): Promise<Candidate | undefined> {
    const name = username.toLowerCase();
    const matches = this.configUsers.filter(
      (c) => c.user.username.toLowerCase() === name && (tenant === null || c.user.tenant === tenant),
    );
    if (matches.length === 1) return matches[0];
    if (matches.length > 1) return undefined;
    const stored = await this.store.findProfile({ username, tenant });
    return stored ? { user: storedToUser(stored), passwordHash: stored.passwordHash, stored: true } : undefined;
  }
}

/**
 * A stored user as the protocol sees them: their primary address is the `email` claim and its
 * verified flag `email_verified` (OIDC Core §5.1); the display names of their SCIM groups join
 * their `role` claim. Read per request, so a change is in force on every node at once.
 */
function storedToUser(s: StoredProfile): User {
  let claims = s.primaryEmail
    ? { ...s.claims, email: s.primaryEmail.value, email_verified: s.primaryEmail.verified }
    : s.claims;
  if (s.groups.length > 0) {
    const own = claims.role;
    const roles = own === undefined ? [] : Array.isArray(own) ? own : [own];
    claims = { ...claims, role: [...new Set([...roles, ...s.groups])] };
  }
  return {
    subjectId: s.subjectId,
    username: s.username,
    tenant: s.tenant,
    isActive: s.isActive,
    claims,
    ...(s.passwordChangeRequired ? { passwordChangeRequired: true } : {}),
  };
}
