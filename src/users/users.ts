/**
 * The user service: users from the config file and from the store, password checks with argon2id,
 * and profile claims. Config users win over stored users with the same subject.
 */
import { randomBytes } from 'node:crypto';
import { hash, verify } from '@node-rs/argon2';
import type { UserConfig } from '../config/schema.js';
import type { UserStore } from '../stores/types.js';

/** A user as the protocol layer sees it. */
export interface User {
  subjectId: string;
  username: string;
  tenant: string | null;
  isActive: boolean;
  /** Profile claims; a claim given as an array stays an array (DESIGN §4). */
  claims: Record<string, unknown>;
}

/**
 * The claims a user's tokens and userinfo draw from: the profile claims, plus `tenant` for a
 * tenant's user (available to claims mapping where a scope asks for it).
 */
export function claimsOf(user: User): Record<string, unknown> {
  return user.tenant ? { ...user.claims, tenant: user.tenant } : user.claims;
}

interface Candidate {
  user: User;
  /** argon2id hash (config clear-text passwords are hashed at start), or null: no password. */
  passwordHash: string | null;
}


/**
 * Looks users up and checks passwords, in equal time for unknown users and wrong passwords: every
 * check runs exactly one argon2id verification, against the user's hash or, for an unknown
 * username, a dummy hash made at start (OWASP ASVS 5.0 V6.3.8: no user enumeration).
 */
export class UserService {
  private constructor(
    private readonly configUsers: readonly Candidate[],
    private readonly store: UserStore,
    private readonly dummyHash: string,
  ) {}

  /**
   * Hashes the config's clear-text passwords and the dummy password with argon2id, once, before
   * the first request: a lazy hash would make the first check of an existing username slower
   * (username enumeration). No clear-text password is kept.
   */
  static async create(configUsers: readonly UserConfig[], store: UserStore): Promise<UserService> {
    const candidates = await Promise.all(
      configUsers.map(async (u): Promise<Candidate> => ({
        user: { subjectId: u.subjectId, username: u.username, tenant: u.tenant ?? null, isActive: u.isActive, claims: u.claims },
        passwordHash: u.passwordHash ?? (u.password === undefined ? null : await hash(u.password)),
      })),
    );
    // The dummy's password is random: nobody knows a password that matches it.
    return new UserService(candidates, store, await hash(randomBytes(32).toString('base64url')));
  }

  /** The user with that subject, or undefined. */
  async findBySubject(subjectId: string): Promise<User | undefined> {
    const fromConfig = this.configUsers.find((c) => c.user.subjectId === subjectId);
    if (fromConfig) return fromConfig.user;
    const stored = await this.store.findUserBySubject(subjectId);
    return stored ? this.withGroupRoles(storedToUser(stored)) : undefined;
  }

  /**
   * A stored user with the display names of their SCIM groups added to their `role` claim (issue
   * 25): read per request, so a group change is in force on every node at once.
   */
  private async withGroupRoles(user: User): Promise<User> {
    const groups = await this.store.groupNames(user.subjectId);
    if (groups.length === 0) return user;
    const own = user.claims.role;
    const roles = own === undefined ? [] : Array.isArray(own) ? own : [own];
    return { ...user, claims: { ...user.claims, role: [...new Set([...roles, ...groups])] } };
  }

  /**
   * Checks a username and password. Usernames compare case-insensitively; with `tenant` only users
   * of that tenant are candidates, without it the username must name exactly one user.
   * An unknown user costs the same argon2id verification as a wrong password.
   * @returns the user (active or not), or undefined for unknown user or wrong password.
   */
  async checkPassword(username: string, password: string, tenant: string | null): Promise<User | undefined> {
    const candidate = await this.findCandidate(username, tenant);
    const storedHash = candidate?.passwordHash ?? this.dummyHash;
    let ok = false;
    try {
      ok = await verify(storedHash, password);
    } catch {
      ok = false;
    }
    // A user without a password never signs in with one (not even with the dummy's password).
    return ok && candidate?.passwordHash ? candidate.user : undefined;
  }

  private async findCandidate(username: string, tenant: string | null): Promise<Candidate | undefined> {
    const name = username.toLowerCase();
    const matches = this.configUsers.filter(
      (c) => c.user.username.toLowerCase() === name && (tenant === null || c.user.tenant === tenant),
    );
    if (matches.length === 1) return matches[0];
    if (matches.length > 1) return undefined;
    const stored = await this.store.findUserByUsername(username, tenant);
    return stored ? { user: await this.withGroupRoles(storedToUser(stored)), passwordHash: stored.passwordHash } : undefined;
  }
}

function storedToUser(s: { subjectId: string; username: string; tenant: string | null; isActive: boolean; claims: Record<string, unknown> }): User {
  return { subjectId: s.subjectId, username: s.username, tenant: s.tenant, isActive: s.isActive, claims: s.claims };
}
