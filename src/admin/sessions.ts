/**
 * Session administration: ending a user's sessions from outside a browser,
 * for `sigil users sessions revoke` and, later, the management API.
 */
import type { Logger } from 'pino';
import type { ResolvedConfig } from '../config/loader.js';
import { LogoutService } from '../logout/logout.js';
import { loadStoredClients } from '../clients/stored-clients.js';
import type { Store } from '../stores/types.js';
import { ClientRegistry } from '../clients/registry.js';
import { AdminError } from './errors.js';
import { soapLogoutEndpoints } from './saml-service-providers.js';
import { configUsersNamed } from './config-users.js';
import { nowSeconds } from '../crypto/handles.js';
import { browserName } from '../users/user-agent.js';

/** A live session as the console lists it (`SessionAdmin.listedSessionsOf`). */
export interface ListedSession {
  sid: string;
  /** When the user signed in, Unix seconds. */
  authTime: number;
  /** "Firefox on Linux", or the one of them known; undefined when neither is. */
  browser: string | undefined;
  /** The clients holding live tokens from this session (refresh, reference or JWT access tokens), by id, sorted. */
  clients: string[];
}

/** The kinds of record that show a client holds tokens from a session. */
const TOKEN_KINDS = ['refresh_token', 'reference_token', 'access_token'] as const;
/** The most records of each kind read for one user's listing. */
const TOKENS_READ = 500;

/** Ends the live sessions of config-file and stored users. */
export class SessionAdmin {
  /** @param log where stored clients that no longer validate are reported */
  /**
   * @param logout a running node's logout service, which sends the back-channel logout tokens at once;
   * without it a one-off service queues them
   */
  constructor(
    /** With `samlServiceProviders`, a one-off service queues SOAP LogoutRequests for the SAML SPs too. */
    private readonly store: Pick<Store, 'users' | 'clients' | 'logout' | 'records' | 'grants'> &
      Partial<Pick<Store, 'samlServiceProviders'>>,
    private readonly config: ResolvedConfig,
    private readonly log: Logger,
    private readonly logout?: LogoutService,
  ) {}

  /** The ids (`sid`) of a user's live sessions at `now` (Unix seconds). */
  async sessionsOf(subjectId: string, now = nowSeconds()): Promise<string[]> {
    return this.store.logout.liveSessions(subjectId, now);
  }

  /**
   * A user's live sessions as the console lists them, newest first (at most `SESSIONS_LISTED`):
   * the id, when the user signed in (Unix seconds) and the browser as "Firefox on Linux" (from the
   * `User-Agent` kept with it; undefined when it tells neither). The sign-in address stays on the
   * user's own page.
   */
  async listedSessionsOf(subjectId: string, now = nowSeconds()): Promise<ListedSession[]> {
    const [live, ...tokens] = await Promise.all([
      this.store.records.sessions.liveOf(subjectId, now),
      ...TOKEN_KINDS.map((kind) => this.store.grants.listLive(subjectId, kind, now, TOKENS_READ)),
    ]);
    // Each read follows the grants_subject index: the user's own live tokens, never the table.
    const clients = new Map<string, Set<string>>();
    for (const t of tokens.flat())
      if (t.sessionId) clients.set(t.sessionId, (clients.get(t.sessionId) ?? new Set()).add(t.clientId));
    return live
      .map((s) => ({
        sid: s.sid,
        authTime: s.authTime,
        browser: browserName(s.userAgent),
        clients: [...(clients.get(s.sid) ?? [])].sort(),
      }))
      .sort((a, b) => b.authTime - a.authTime);
  }

  /**
   * Ends one live session of a user, queueing the back-channel logout tokens of its clients
   * (OIDC Back-Channel Logout 1.0 §2.5). Front-channel logout (OIDC Front-Channel Logout 1.0 §2)
   * needs the user's browser: the session is ended, so its cookie signs in nobody any more.
   * @throws AdminError `not_found` when the user has no live session `sid`.
   */
  async revoke(subjectId: string, sid: string, now = nowSeconds()): Promise<void> {
    if (!(await this.sessionsOf(subjectId, now)).includes(sid))
      throw new AdminError('not_found', `no live session ${sid} of that user`);
    await (await this.logoutService()).endSession(sid);
  }

  /** Ends every live session of a user (by subject); returns how many. */
  async revokeAllOf(subjectId: string): Promise<number> {
    return (await this.logoutService()).endSessionsOf(subjectId);
  }

  private async logoutService(): Promise<LogoutService> {
    if (this.logout) return this.logout;
    // A one-off registry, as the nodes' is not at hand: only the logout URIs of the clients are needed,
    // and the SAML SPs' SOAP endpoints (no browser is at hand: none is told through one).
    const clients = new ClientRegistry(this.config.clients);
    clients.setStoredClients(await loadStoredClients(this.store.clients, this.log));
    const stored = this.store.samlServiceProviders;
    const soap =
      stored && (await soapLogoutEndpoints(this.config.samlServiceProviders, { samlServiceProviders: stored }));
    const saml = soap && { soapUrl: (entityId: string) => soap.get(entityId), frontChannel: () => false };
    return new LogoutService(
      this.store.logout,
      clients,
      this.config.backChannelLogout.retrySeconds,
      undefined,
      saml,
      this.log,
    );
  }

  /**
   * Ends every live session of a user. The back-channel logout tokens for each session's clients
   * (config-file or stored) are queued with its ending (OIDC Back-Channel Logout 1.0 §2.5, durable);
   * running nodes send them.
   * @param tenant with null, the username must name one config-file user, else the stored user of
   *   that name; otherwise the lookup is within that tenant
   * @returns the user's subject and how many sessions were ended.
   * @throws AdminError `not_found` when there is no such user.
   */
  async revokeAll(username: string, tenant: string | null): Promise<{ subjectId: string; ended: number }> {
    const inConfig = configUsersNamed(this.config.users, username, tenant);
    const subjectId =
      inConfig.length === 1
        ? inConfig[0]?.subjectId
        : (await this.store.users.findUserByUsername(username, tenant))?.subjectId;
    if (subjectId === undefined) throw new AdminError('not_found', `no user "${username}"`);
    const ended = await this.revokeAllOf(subjectId);
    return { subjectId, ended };
  }
}
