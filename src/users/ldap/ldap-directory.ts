/**
 * The LDAP user directory: OpenLDAP, Active Directory or any LDAPv3 server (RFC 4511).
 * A sign-in binds as the service account, searches the user by the username attribute with a
 * filter built as a value (never by pasting text into a filter string: RFC 4515 injection is
 * impossible), then binds as the user's DN with the password (RFC 4513 §5.1.3). Wrong passwords of
 * one account are capped (`maxFailedBinds`) so that Sigil never drives it into the directory's own
 * lockout, with a share kept for the browsers the account signed in on before (`knownBrowserBinds`).
 */
import { randomBytes } from 'node:crypto';
import {
  AndFilter,
  type Entry,
  EqualityFilter,
  type Filter,
  InvalidCredentialsError,
  PresenceFilter,
  ResultCodeError,
} from 'ldapts';
import type { LdapDirectoryConfig } from '../../config/user-directories.js';
import type { FailureLimiter } from '../../limits/failure-limiter.js';
import { DirectoryUnavailable, type PasswordCheckContext, type UserDirectory } from '../directory.js';
import type { User } from '../user.js';
import { LdapPool, type Connection } from './pool.js';
import {
  ACCOUNT_STATE_ATTRIBUTES,
  attributesOf,
  BINARY_SUBJECT_ATTRIBUTES,
  isDisabled,
  roleFromGroupDn,
  stringValues,
  subjectOf,
  subjectSearchValue,
} from './entries.js';
import { MAX_USERNAME_LENGTH } from '../../config/schema.js';

/** Users kept for `claimsCacheSeconds` at most; beyond this many the oldest go first. */
const MAX_CACHED = 10_000;

/** A user directory over an LDAP server, with a bounded connection pool and a claims cache. */
export class LdapDirectory implements UserDirectory {
  readonly name: string;
  private readonly pool: LdapPool;
  private readonly attributes: string[];
  private readonly cache = new Map<string, { user: User; until: number }>();

  /**
   * @param limiter the failure limiter, whose shared counters (this process, the primary of
   *   `--workers`, or Redis) hold the cap of `maxFailedBinds`
   */
  constructor(
    private readonly config: LdapDirectoryConfig,
    private readonly limiter: FailureLimiter,
  ) {
    this.name = config.name;
    this.pool = new LdapPool({
      url: config.url,
      startTls: config.startTls,
      timeoutMs: config.timeoutSeconds * 1000,
      max: config.maxConnections,
    });
    this.attributes = [
      ...new Set([
        config.subjectAttribute,
        config.usernameAttribute,
        ...Object.values(config.claims),
        ...(config.groupsAttribute ? [config.groupsAttribute] : []),
        ...ACCOUNT_STATE_ATTRIBUTES,
      ]),
    ];
  }

  /**
   * Finds the user by the username attribute and binds as them. An unknown or ambiguous username
   * costs a bind too (as a DN that does not exist, which no server locks), so its answer takes
   * as long as a wrong password's. An empty password is refused without a bind: an LDAP simple bind
   * with an empty password is an unauthenticated bind that succeeds (RFC 4513 §5.1.2).
   * Wrong passwords of the account are budgeted before the bind (so that concurrent guesses cannot
   * all pass), from every address, in two shares of `maxFailedBinds` that lapse together once
   * `failedBindWindowSeconds` pass without a wrong one (a right password clears both):
   * - the account's known browsers (`context.knownBrowser` vouches for its subject) share
   *   `knownBrowserBinds`, and past that may use what is left of the other share;
   * - every other sign-in (other browsers, the password grant) shares the rest, `maxFailedBinds -
   *   knownBrowserBinds`.
   * So the server sees at most `maxFailedBinds` wrong binds of the account per window, and those
   * who have no known browser of the account can never spend the known browsers' share. Unknown
   * usernames are capped alike (keyed by the name as the server would compare it; no browser is
   * known for them), so the refusal tells nothing about which accounts exist.
   * @throws OAuthError 429 `temporarily_unavailable` with `Retry-After` while the shares the
   *   sign-in may use are spent.
   */
  async authenticate(
    username: string,
    password: string,
    context: PasswordCheckContext = {},
  ): Promise<User | undefined> {
    if (username.length === 0 || password.length === 0) return undefined;
    const entry = await this.entryByUsername(username);
    const user = entry ? this.toUser(entry) : undefined;
    const dn =
      entry && user
        ? entry.dn
        : `${this.config.usernameAttribute}=${randomBytes(16).toString('hex')},${this.config.baseDn}`;
    const budgets = this.bindBudgets(
      user ? `subject:${user.subjectId}` : `name:${comparedName(username)}`,
      user !== undefined && context.knownBrowser?.(user.subjectId) === true,
    );
    // Charged before the bind: a bind that ends in an outage stays counted (the server may have seen it).
    if (budgets.length > 0) await this.limiter.claimCapped(budgets, this.config.failedBindWindowSeconds);
    const ok = await this.run((conn) => this.bind(conn, dn, password));
    if (!ok || !user) return undefined;
    if (budgets.length > 0) await this.limiter.capSucceeded(budgets.map((b) => b.key));
    this.remember(user);
    return user;
  }

  /**
   * The budgets of wrong binds a sign-in of `account` may spend, in order: for a known browser its
   * share first, then the others'; for any other sign-in only the others' share (the known
   * browsers' share listed with max 0: never charged, its window slides along). None without a
   * cap (`maxFailedBinds` 0). The known browsers' share is at most `maxFailedBinds - 1`, so the
   * others always keep one bind (a new browser or the password grant can still sign in).
   */
  private bindBudgets(account: string, knownBrowser: boolean): { key: string; max: number }[] {
    const total = this.config.maxFailedBinds;
    if (total <= 0) return [];
    const reserved = Math.min(this.config.knownBrowserBinds, total - 1);
    const others = { key: `ldap:${this.name}:${account}`, max: total - reserved };
    const known = { key: `ldap:${this.name}:${account}:known-browsers`, max: reserved };
    // Any other sign-in never charges the known browsers' share, but its failures slide that
    // share's window too: the server's count lapses after its last failure, whoever caused it.
    return knownBrowser ? [known, others] : [others, { ...known, max: 0 }];
  }

  /** The user with that subject, from the cache while it is fresh (`claimsCacheSeconds`), else from the server. */
  async findBySubject(subjectId: string): Promise<User | undefined> {
    const cached = this.cache.get(subjectId);
    if (cached && cached.until > Date.now()) return cached.user;
    const value = subjectSearchValue(subjectId, this.config.subjectAttribute);
    if (value === undefined) return undefined;
    return this.run(async (conn) => {
      const entry = await this.searchOne(conn, new EqualityFilter({ attribute: this.config.subjectAttribute, value }));
      const user = entry ? this.toUser(entry) : undefined;
      if (user?.subjectId !== subjectId) {
        this.cache.delete(subjectId);
        return undefined;
      }
      this.remember(user);
      return user;
    });
  }

  /**
   * The user whose username attribute equals `username` (the server's matching rule), without a
   * bind as them; undefined for none, several, an empty name or one over `MAX_USERNAME_LENGTH`.
   * @throws DirectoryUnavailable when the server cannot answer.
   */
  async findByUsername(username: string): Promise<User | undefined> {
    const entry = await this.entryByUsername(username);
    return entry ? this.toUser(entry) : undefined;
  }

  /**
   * The one entry whose username attribute equals `username`, searched with an equality filter
   * object (ldapts escapes the value, RFC 4515 §3): the lookup of both `authenticate` and
   * `findByUsername`. A name that no Sigil user can have (empty, or longer than any username) is
   * never sent.
   */
  private async entryByUsername(username: string): Promise<Entry | undefined> {
    if (username.length === 0 || username.length > MAX_USERNAME_LENGTH) return undefined;
    return this.run((conn) =>
      this.searchOne(conn, new EqualityFilter({ attribute: this.config.usernameAttribute, value: username })),
    );
  }

  async close(): Promise<void> {
    await this.pool.close();
  }

  /** Runs directory work; anything but an answer becomes `DirectoryUnavailable`. */
  private async run<T>(work: (conn: Connection) => Promise<T>): Promise<T> {
    try {
      return await this.pool.use(work);
    } catch (err) {
      throw new DirectoryUnavailable(this.name, err instanceof Error ? err.message : String(err));
    }
  }

  /** One entry under baseDn matching `filter` (with a subject attribute present), or undefined for none or several. */
  private async searchOne(conn: Connection, filter: Filter): Promise<Entry | undefined> {
    await this.bindService(conn);
    const binary = this.attributes.filter((a) => BINARY_SUBJECT_ATTRIBUTES.has(a.toLowerCase()));
    try {
      const { searchEntries } = await conn.client.search(this.config.baseDn, {
        scope: 'sub',
        filter: new AndFilter({ filters: [filter, new PresenceFilter({ attribute: this.config.subjectAttribute })] }),
        attributes: this.attributes,
        sizeLimit: 2,
        timeLimit: this.config.timeoutSeconds,
        ...(binary.length > 0 ? { explicitBufferAttributes: binary } : {}),
      });
      return searchEntries.length === 1 ? searchEntries[0] : undefined;
    } catch (err) {
      // More than one match (sizeLimitExceeded, RFC 4511 §4.5.2): no user, as for none.
      if (err instanceof ResultCodeError && err.code === 4) return undefined;
      throw err;
    }
  }

  /** Binds the connection as the service account unless it is already. */
  private async bindService(conn: Connection): Promise<void> {
    if (conn.boundAs === this.config.bindDn) return;
    conn.boundAs = null;
    await conn.client.bind(this.config.bindDn, this.config.bindPassword);
    conn.boundAs = this.config.bindDn;
  }

  /**
   * A simple bind as `dn` (RFC 4511 §4.2): true on success, false for invalidCredentials (49:
   * wrong password, no such DN, and on AD and with OpenLDAP's ppolicy also a locked or disabled
   * account). Other errors propagate (the directory is unavailable).
   */
  private async bind(conn: Connection, dn: string, password: string): Promise<boolean> {
    conn.boundAs = null;
    try {
      await conn.client.bind(dn, password);
      conn.boundAs = dn;
      return true;
    } catch (err) {
      if (err instanceof InvalidCredentialsError) return false;
      throw err;
    }
  }

  /** The user an entry describes; undefined without a usable subject. */
  private toUser(entry: Entry): User | undefined {
    const attrs = attributesOf(entry);
    const subjectId = subjectOf(attrs, this.config.subjectAttribute);
    if (subjectId === undefined) return undefined;
    const claims: Record<string, unknown> = {};
    for (const [claim, attribute] of Object.entries(this.config.claims)) {
      const values = stringValues(attrs, attribute);
      if (values.length > 0) claims[claim] = values.length === 1 ? values[0] : values;
    }
    if (this.config.groupsAttribute) {
      const roles = stringValues(attrs, this.config.groupsAttribute)
        .map((dn) => roleFromGroupDn(dn, this.config.roleFromGroup))
        .filter((r): r is string => r !== undefined);
      if (roles.length > 0) claims.role = [...new Set(roles)];
    }
    return {
      subjectId,
      username: stringValues(attrs, this.config.usernameAttribute)[0] ?? '',
      tenant: null,
      isActive: !isDisabled(attrs),
      claims,
    };
  }

  private remember(user: User): void {
    if (this.config.claimsCacheSeconds === 0) return;
    this.cache.delete(user.subjectId);
    if (this.cache.size >= MAX_CACHED) this.cache.delete(this.cache.keys().next().value!);
    this.cache.set(user.subjectId, { user, until: Date.now() + this.config.claimsCacheSeconds * 1000 });
  }
}

/**
 * A username as an LDAP server compares it for the usual username attributes (caseIgnoreMatch,
 * RFC 4517 §4.2.11, with the insignificant space handling of RFC 4518 §2.6.1): compatibility
 * normalised, case folded, outer spaces dropped and inner runs of spaces made one, so that spellings
 * of one unknown name share a cap as the spellings of a known account's name do.
 */
function comparedName(username: string): string {
  return username.normalize('NFKC').toLowerCase().trim().replace(/\s+/g, ' ');
}
