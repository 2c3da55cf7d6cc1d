/**
 * Browser sign-in sessions (OIDC Core §3.1.2.3, DESIGN §6): a random handle in an HttpOnly,
 * SameSite=Lax cookie (Secure on https issuers), the session kept in the store under the handle's
 * SHA-256 so any node can read it. Also a long-lived random browser id that binds pending
 * interactions to the browser that started them.
 */
import type {} from '@fastify/cookie';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { hashHandle, newHandle, newId, nowSeconds } from '../crypto/handles.js';
import type { Session, SessionRecords } from '../stores/records/sessions.js';
import type { EndedSession, LogoutService } from '../logout/logout.js';

/** Cookie names. */
export const SESSION_COOKIE = 'sigil.session';
export const BROWSER_COOKIE = 'sigil.browser';

export type { Session };

/** Reads, creates and ends sessions. */
export class SessionService {
  private readonly secure: boolean;

  /**
   * @param lifetime session lifetime in seconds
   */
  constructor(
    private readonly records: SessionRecords,
    issuer: string,
    private readonly lifetime: number,
    private readonly logout: LogoutService,
  ) {
    this.secure = issuer.startsWith('https:');
  }

  /** The live session of the request's cookie, or undefined. */
  async current(request: FastifyRequest): Promise<Session | undefined> {
    const handle = request.cookies[SESSION_COOKIE];
    if (!handle || handle.length > 100) return undefined;
    return (await this.records.findLive(handle, nowSeconds()))?.data;
  }

  /**
   * Starts a new session for a user, ending the request's previous one: the cookie value always
   * changes at sign-in (no session fixation).
   */
  async create(
    request: FastifyRequest,
    reply: FastifyReply,
    user: { subjectId: string },
    how: { amr: string[]; idp: string; tenant: string | null; upstreamAcr?: string },
  ): Promise<Session> {
    // The previous session's clients are told by the next delivery poll: signing in does not wait for them.
    await this.end(request, reply, false);
    const now = nowSeconds();
    const handle = newHandle();
    const session: Session = { sid: newId(), subjectId: user.subjectId, authTime: now, ...how, expiresAt: now + this.lifetime };
    await this.records.create(handle, session, now, now + this.lifetime);
    reply.setCookie(SESSION_COOKIE, handle, this.cookieOptions(this.lifetime));
    return session;
  }

  /**
   * Adds to the `amr` of the request's live session after a second factor (step-up), keeping its
   * `sid`, `authTime` and expiry. The cookie value changes, as at any sign-in (OWASP ASVS 5.0
   * V7.2.4): the upgraded session is stored under a new handle and the old one is revoked.
   * @param amr the session's new `amr` (RFC 8176)
   * @returns the updated session, or undefined when there is no live session.
   */
  async upgrade(request: FastifyRequest, reply: FastifyReply, amr: string[]): Promise<Session | undefined> {
    const handle = request.cookies[SESSION_COOKIE];
    if (!handle || handle.length > 100) return undefined;
    const now = nowSeconds();
    const row = await this.records.findLive(handle, now);
    if (!row) return undefined;
    const session: Session = { ...row.data, amr };
    const fresh = newHandle();
    await this.records.reissue(row, fresh, session, now);
    reply.setCookie(SESSION_COOKIE, fresh, this.cookieOptions(row.expiresAt - now));
    return session;
  }

  /**
   * Ends the request's session, if any, and clears its cookie. The session's clients are told
   * through back-channel logout (queued with the revocation, see `LogoutService.endSession`).
   * @param sendNow send the back-channel logout tokens before returning (see `LogoutService.endSession`)
   * @returns what ending it did (the clients for front-channel logout), or undefined without a session.
   */
  async end(request: FastifyRequest, reply: FastifyReply, sendNow = true): Promise<EndedSession | undefined> {
    const handle = request.cookies[SESSION_COOKIE];
    let ended: EndedSession | undefined;
    if (handle && handle.length <= 100) {
      const row = await this.records.find(handle);
      if (row && row.revokedAt === null) ended = await this.logout.endSession(row.familyId, sendNow);
    }
    reply.clearCookie(SESSION_COOKIE, { path: '/' });
    return ended;
  }

  /** The end of a session in Unix seconds (for sessions stored without it: a lifetime from now). */
  expiryOf(session: Session): number {
    return session.expiresAt ?? nowSeconds() + this.lifetime;
  }

  /**
   * The browser's id, set on first sight (two years). Returned hashed: that is what interactions
   * record.
   */
  browserId(request: FastifyRequest, reply: FastifyReply): string {
    let id = request.cookies[BROWSER_COOKIE];
    if (!id || !/^[A-Za-z0-9_-]{43}$/.test(id)) {
      id = newHandle();
      reply.setCookie(BROWSER_COOKIE, id, this.cookieOptions(2 * 365 * 24 * 3600));
      request.cookies[BROWSER_COOKIE] = id;
    }
    return hashHandle(id);
  }

  private cookieOptions(maxAge: number) {
    return { path: '/', httpOnly: true, sameSite: 'lax' as const, secure: this.secure, maxAge };
  }
}
