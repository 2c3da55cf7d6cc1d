/** Types of test/ldap-server.mjs (shared by the tests and bench/run.mjs, which is plain JavaScript). */
import type { Client } from 'ldapts';

export declare const BASE: string;
export declare const PEOPLE: string;
export declare const ROOT_DN: string;
export declare const ROOT_PW: string;
export declare const SERVICE_DN: string;
export declare const SERVICE_PW: string;

/** A test user of the LDIF. */
export interface LdapUser {
  uid: string;
  password: string;
  cn: string;
  givenName: string;
  sn: string;
  mail: string;
  groups: string[];
  /** Locked by the password policy (pwdAccountLockedTime). */
  locked?: boolean;
}

export declare const LDAP_USERS: LdapUser[];

/** A running slapd; `stop` and `start` again keep its data (same port). */
export interface Slapd {
  url: string;
  port: number;
  /** The slapd process id while it runs. */
  pid(): number | undefined;
  /** The `userDirectories` entry for this server, with `extra` fields. */
  directoryConfig(extra?: Record<string, unknown>): Record<string, unknown>;
  /** A client bound as the rootdn, for changes made by the tests (modrdn, modify); unbind it. */
  admin(): Promise<Client>;
  stop(): Promise<void>;
  start(): Promise<void>;
  /** Stops slapd and removes its directory. */
  close(): Promise<void>;
}

export declare function freeLoopbackPort(): Promise<number>;
/** How the server is set up beyond its users. */
export interface SlapdOptions {
  /**
   * Lock an account after this many failed binds in a row (ppolicy pwdLockout, pwdMaxFailure;
   * each failure is kept in the entry's pwdFailureTime, cleared by a successful bind). Default:
   * no lockout by failures.
   */
  lockoutAfter?: number;
}

export declare function startSlapd(users?: LdapUser[], options?: SlapdOptions): Promise<Slapd>;
