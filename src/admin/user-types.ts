/**
 * The shapes of user administration (`UserAdmin`, admin/users.ts): the users it adds and the
 * changes it makes, who makes them (for the audit events), and what it answers.
 */
import type { EventBus } from '../events/events.js';
import type { DirectoryEmail, UserWrite } from '../stores/directory.js';
import type { UserDirectory } from '../users/directory.js';

/** A user as `sigil users list` shows them: where they are defined. */
export interface UserListing {
  subjectId: string;
  username: string;
  tenant: string | null;
  isActive: boolean;
  source: 'config' | 'store';
}

/** One of a user's addresses as a door lists them: whether it is verified is the store's to say. */
export type UserEmail = Omit<DirectoryEmail, 'verified'>;

/** A user to add to the store. */
export interface NewUser {
  /**
   * 1 to 100 characters (`checkUsername`); unique (case-insensitive) among the stored users of its tenant
   * (null: of every tenant).
   */
  username: string;
  /** Default: a new random id. */
  subjectId?: string;
  /** Default: null, no tenant. */
  tenant?: string | null;
  /** The user's claims, a JSON object (values keep their JSON type); default `{}`. */
  claims?: unknown;
  /** Clear text, stored as an argon2id hash; none: no password sign-in. Checked by the password policy. */
  password?: string;
  /** The primary address (the `email` claim), at most 320 characters; default none. */
  email?: string;
  /** Whether `email` is known to be the user's (`email_verified`); default false. */
  emailVerified?: boolean;
  /** Every address with its type, instead of `email` (SCIM `emails`); none is verified. */
  emails?: readonly UserEmail[];
  /** The provisioning client's identifier of the user (SCIM `externalId`); default none. */
  externalId?: string | null;
  /** Default true. */
  active?: boolean;
}

/** A change of a stored user: what is given replaces what is stored, the rest stays. */
export interface UserChange {
  /** A new username, checked and refused when taken as a new user's is. */
  username?: string;
  externalId?: string | null;
  /** The claims, a JSON object, replacing the stored ones. */
  claims?: unknown;
  /** A new primary address (`withPrimary`: the other addresses stay, no longer primary). */
  email?: { value: string; verified: boolean };
  /**
   * Every address, replacing the stored ones (SCIM `emails`): an address the user had keeps its
   * verified state, a new one is not verified (only its owner confirms it, by mail).
   */
  emails?: readonly UserEmail[];
  /** Made inactive, the user is signed out everywhere (`update`). */
  active?: boolean;
  /** Clear text, checked by the password policy and stored as an argon2id hash. */
  password?: string;
  /**
   * With `password`: it is a temporary one an administrator chose, which the user must change at
   * their next sign-in. Any other password set (by the user, a reset by mail) clears the flag.
   */
  passwordChangeRequired?: boolean;
}

/** A user named by subject, or by username within a tenant (null: the one user of that name in any tenant). */
export type UserKey = string | { username: string; tenant: string | null };

/** What `UserAdmin` asks a user directory: which usernames it holds. */
export type NameHolder = Pick<UserDirectory, 'name' | 'findByUsername'>;

/** Who besides the stored users holds a username (`UserAdmin.holderOf`). */
export type UsernameHolder =
  | { kind: 'config'; username: string; subjectId: string }
  | { kind: 'directory'; directory: string };

/** A user saved by `UserAdmin.create`. */
export interface AddedUser {
  subjectId: string;
  /** The config-file user with the same username or subject, who wins over the stored one. */
  shadowedBy?: { username: string; subjectId: string };
}

/** A new user checked against every rule, password hashed, ready for `UserAdmin.commit`. */
export interface PreparedUser {
  readonly subjectId: string;
  readonly write: UserWrite;
  readonly shadowedBy?: { username: string; subjectId: string };
}

/**
 * Who makes a management change, for its audit event: the door (`endpoint`: `cli`, `scim`,
 * `/admin/v1`, `/admin`) and, through the management API, the console or SCIM, the client and
 * user acting.
 */
export interface AdminAudit {
  events: EventBus;
  endpoint: string;
  clientId?: string;
  sub?: string;
  /**
   * The door records each change in audit events of its own (SCIM's `resource_created`,
   * `resource_updated`, `resource_deleted`): `UserAdmin` then emits only `user.activate` and
   * `user.deactivate`, which tell what making a user inactive ended.
   */
  recordsChanges?: boolean;
}

/** What making a user inactive ended (zero and zero when the user was made active). */
export interface SignedOut {
  subjectId: string;
  /** Sessions ended, each with back-channel logout queued to its clients. */
  endedSessions: number;
  /** Grant rows revoked: refresh and reference tokens, access-token marks, unused codes. */
  revokedTokens: number;
}

/** A stored user removed: who they were. */
export interface RemovedUser {
  subjectId: string;
  username: string;
}
