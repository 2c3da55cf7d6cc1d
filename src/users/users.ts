/**
 * The user service: users from the config file and from the store, password checks with argon2id,
 * and profile claims. Config users win over stored users with the same subject.
 */
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
  /** argon2id hash, or a promise of one (config clear-text passwords are hashed on first use). */
  passwordHash: string | Promise<string> | null;
}

/** Looks users up and checks passwords, in equal time for unknown users and wrong passwords. */
export class UserService {
  private readonly configUsers: Candidate[];
  private dummyHash: Promise<string> | undefined;

  constructor(
    configUsers: readonly UserConfig[],
    private readonly store: UserStore,
  ) {
    this.configUsers = configUsers.map((u) => ({
      user: {
        subjectId: u.subjectId,
        username: u.username,
        tenant: u.tenant ?? null,
        isActive: u.isActive,
        claims: u.claims,
      },
      passwordHash: u.passwordHash ?? (u.password === undefined ? null : lazyHash(u.password)),
    }));
  }

  /** The user with that subject, or undefined. */
  async findBySubject(subjectId: string): Promise<User | undefined> {
    const fromConfig = this.configUsers.find((c) => c.user.subjectId === subjectId);
    if (fromConfig) return fromConfig.user;
    const stored = await this.store.findUserBySubject(subjectId);
    return stored ? storedToUser(stored) : undefined;
  }

  /**
   * Checks a username and password. Usernames compare case-insensitively; with `tenant` only users
   * of that tenant are candidates, without it the username must name exactly one user.
   * An unknown user costs the same argon2id verification as a wrong password.
   * @returns the user (active or not), or undefined for unknown user or wrong password.
   */
  async checkPassword(username: string, password: string, tenant: string | null): Promise<User | undefined> {
    const candidate = await this.findCandidate(username, tenant);
    const storedHash = candidate?.passwordHash ? await candidate.passwordHash : await this.dummy();
    let ok = false;
    try {
      ok = await verify(storedHash, password);
    } catch {
      ok = false;
    }
    return ok && candidate ? candidate.user : undefined;
  }

  private async findCandidate(username: string, tenant: string | null): Promise<Candidate | undefined> {
    const name = username.toLowerCase();
    const matches = this.configUsers.filter(
      (c) => c.user.username.toLowerCase() === name && (tenant === null || c.user.tenant === tenant),
    );
    if (matches.length === 1) return matches[0];
    if (matches.length > 1) return undefined;
    const stored = await this.store.findUserByUsername(username, tenant);
    return stored ? { user: storedToUser(stored), passwordHash: stored.passwordHash } : undefined;
  }

  private dummy(): Promise<string> {
    this.dummyHash ??= hash('sigil-dummy-password-for-equal-timing');
    return this.dummyHash;
  }
}

function lazyHash(password: string): Promise<string> {
  let promise: Promise<string> | undefined;
  const thenable = {
    then<T1, T2>(ok: (v: string) => T1, fail?: (e: unknown) => T2) {
      promise ??= hash(password);
      return promise.then(ok, fail);
    },
  };
  return thenable as unknown as Promise<string>;
}

function storedToUser(s: { subjectId: string; username: string; tenant: string | null; isActive: boolean; claims: Record<string, unknown> }): User {
  return { subjectId: s.subjectId, username: s.username, tenant: s.tenant, isActive: s.isActive, claims: s.claims };
}
