/**
 * The options of `createSigil` and `sigilPlugin` beyond the config file: the hooks a host app
 * plugs in (extension grants, user directories, profile service, password check, hooks), the logger,
 * Redis and the data key.
 */
import type { Logger } from 'pino';
import type { ConfigOverrides } from '../config/loader.js';
import type { ExtensionGrant } from '../grants/extension.js';
import type { ResourceOwnerValidator } from '../grants/password.js';
import type { UserDirectory } from '../users/directory.js';
import type { ProfileService } from '../tokens/profile.js';
import type { HookFunctions } from '../webhooks/hooks.js';

/** Options of `createSigil` beyond the config file. */
export interface SigilOptions {
  /** Flags and environment values that win over the config. */
  overrides?: ConfigOverrides;
  /** A pino logger; default: a pino logger at the config's `logLevel` on stdout. */
  logger?: Logger;
  /**
   * Extension grants to register (RFC 6749 §4.5); clients list them by name. A client's grant type
   * that is neither built in nor registered here stops the start (ConfigError, "did you mean").
   */
  extensionGrants?: ExtensionGrant[];
  /** Replaces the built-in check of the password grant's credentials. */
  resourceOwnerValidator?: ResourceOwnerValidator;
  /**
   * Your own user directories (e.g. over an existing database), asked in order after config users,
   * stored users and the config's `userDirectories`, at the login page, the password grant and
   * wherever a user is looked up by subject. See `UserDirectory` for the guarantees they give.
   */
  userDirectories?: UserDirectory[];
  /**
   * Decides the user claims released in tokens and at userinfo, and whether a user is still active
   * (`ProfileService`).
   */
  profileService?: ProfileService;
  /**
   * Synchronous hooks as functions, instead of the config's receivers (`hooks`): e.g.
   * `{ preToken: async (event) => ({ accessToken: { claims: { tier: 'gold' } } }) }`. Each gets the
   * event a receiver would and answers as one would (undefined or `{}` allows); a function that
   * throws or answers what the schema refuses denies. A hook both here and in the config stops the start.
   */
  hooks?: HookFunctions;
  /** Redis for counters shared by several nodes (failure limits); default: `SIGIL_REDIS_URL`. */
  redisUrl?: string;
  /**
   * Without Redis, keep the failure counters and request quotas in the cluster primary (set by
   * `sigil start --workers` in its workers, whose primary answers; see `PrimaryFailureCounters`)
   * instead of this process's memory, so the limits hold for all workers together.
   */
  countersInPrimary?: boolean;
  /** Key encrypting private signing keys at rest; default: from `SIGIL_DATA_KEY` (32 bytes, base64 or hex). */
  dataKey?: Uint8Array;
}
