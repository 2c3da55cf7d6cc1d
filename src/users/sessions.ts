/**
 * Browser sign-in sessions (OIDC Core §3.1.2.3): a random handle that the browser keeps
 * in a cookie, the session kept in the store under the handle's SHA-256 so any node can read it.
 * Also a long-lived random browser id that binds pending interactions to the browser that started
 * them. The service takes the cookies' values and says what to set; reading and writing the
 * cookies is http/cookies.ts's.
 */
import { hashHandle, newHandle, newId, nowSeconds } from '../crypto/handles.js';
import type { CookieValue } from '../http/cookies.js';
import { type Session, type SessionRecords, USER_AGENT_MAX } from '../stores/records/sessions.js';
import type { EndedSession, LogoutService } from '../logout/logout.js';

export type { Session };

/** How long a browser id is kept, seconds (two years). */
const BROWSER_ID_LIFETIME = 2 * 365 * 24 * 3600;

/** A session and the cookie that now names it. */
export interface IssuedSession {
  session: Session;
  cookie: CookieValue;
}

/** A browser's id, hashed (what interactions record), and the new cookie to set when the browser had none valid. */
export interface BrowserId {
  id: string;
  cookie?: CookieValue;
}

/** The session handle of a cookie value, or undefined when there is none or it is too long to be one. */
function handleOf(cookie: string | undefined): string | undefined {
  return cookie && cookie.length <= 100 ? cookie : undefined;
}

/** Reads, creates and ends sessions. */
export class SessionService {
  /**
   * @param lifetime session lifetime in seconds
   */
  constructor(
    private readonly records: SessionRecords,
    private readonly lifetime: number,
    private readonly logout: LogoutService,
  ) {}

  /**
   * The live session of a session cookie, or undefined.
   * @param cookie the session cookie's value as sent
   */
  async current(cookie: string | undefined): Promise<Session | undefined> {
    const handle = handleOf(cookie);
    if (!handle) return undefined;
    return (await this.records.findLive(handle, nowSeconds()))?.data;
  }

  /**
   * Starts a new session for a user, ending the one of the previous cookie: the cookie value
   * always changes at sign-in (no session fixation).
   * @param previous the session cookie's value as sent
   * @param device the browser's `User-Agent` (kept cut to `USER_AGENT_MAX` characters) and address,
   *   listed on the user's /account/sessions
   * @returns the session and the cookie to set (Max-Age the session lifetime)
   */
  async create(
    previous: string | undefined,
    user: { subjectId: string },
    how: { amr: string[]; idp: string; tenant: string | null; upstreamAcr?: string },
    device: { userAgent?: string | undefined; address?: string } = {},
  ): Promise<IssuedSession> {
    // The previous session's clients are told by the next delivery poll: signing in does not wait for them.
    await this.end(previous, false);
    const now = nowSeconds();
    const handle = newHandle();
    const session: Session = {
      sid: newId(),
      subjectId: user.subjectId,
      authTime: now,
      ...how,
      expiresAt: now + this.lifetime,
      ...(device.userAgent ? { userAgent: device.userAgent.slice(0, USER_AGENT_MAX) } : {}),
      ...(device.address ? { address: device.address.slice(0, 64) } : {}),
    };
    await this.records.create(handle, session, now, now + this.lifetime);
    return { session, cookie: { value: handle, maxAge: this.lifetime } };
  }

  /**
   * Adds to the `amr` of a live session after a second factor (step-up), keeping its `sid`,
   * `authTime` and expiry. The cookie value changes, as at any sign-in (OWASP ASVS 5.0 V7.2.4):
   * the upgraded session is stored under a new handle and the old one is revoked.
   * @param cookie the session cookie's value as sent
   * @param amr the session's new `amr` (RFC 8176)
   * @returns the updated session and its new cookie (Max-Age its remaining lifetime), or undefined
   *   when there is no live session.
   */
  async upgrade(cookie: string | undefined, amr: string[]): Promise<IssuedSession | undefined> {
    const handle = handleOf(cookie);
    if (!handle) return undefined;
    const now = nowSeconds();
    const row = await this.records.findLive(handle, now);
    if (!row) return undefined;
    const session: Session = { ...row.data, amr };
    const fresh = newHandle();
    await this.records.reissue(row, fresh, session, now);
    return { session, cookie: { value: fresh, maxAge: row.expiresAt - now } };
  }

  /**
   * Ends the session of a cookie, if any (the caller clears the cookie). The session's clients are
   * told through back-channel logout (queued with the revocation, see `LogoutService.endSession`).
   * @param cookie the session cookie's value as sent
   * @param sendNow send the back-channel logout tokens before returning (see `LogoutService.endSession`)
   * @returns what ending it did (the clients for front-channel logout), or undefined without a session.
   */
  async end(cookie: string | undefined, sendNow = true): Promise<EndedSession | undefined> {
    const handle = handleOf(cookie);
    if (!handle) return undefined;
    const row = await this.records.find(handle);
    return row && row.revokedAt === null ? this.logout.endSession(row.familyId, { sendNow, browser: true }) : undefined;
  }

  /** The end of a session in Unix seconds (for sessions stored without it: a lifetime from now). */
  expiryOf(session: Session): number {
    return session.expiresAt ?? nowSeconds() + this.lifetime;
  }

  /**
   * The browser id of a browser id cookie, hashed: that is what interactions record. A browser
   * without a well-formed one gets a new random id, and the cookie to set (two years).
   * @param cookie the browser id cookie's value as sent
   */
  browserId(cookie: string | undefined): BrowserId {
    if (cookie && /^[A-Za-z0-9_-]{43}$/.test(cookie)) return { id: hashHandle(cookie) };
    const value = newHandle();
    return { id: hashHandle(value), cookie: { value, maxAge: BROWSER_ID_LIFETIME } };
  }
}
