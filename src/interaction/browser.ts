/**
 * The browser a page or endpoint answers, as the session service (users/sessions.ts) sees it over
 * the cookies (http/cookies.ts): its id, and its session started, stepped up, read and ended. The
 * only place where the session service meets a request.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Services } from '../services.js';
import {
  browserCookie,
  clearSessionCookie,
  knownBrowserCookie,
  sessionCookie,
  setBrowserCookie,
  setKnownBrowserCookie,
  setSessionCookie,
} from '../http/cookies.js';
import type { PasswordCheckContext } from '../users/directory.js';
import type { EndedSession } from '../logout/logout.js';
import type { Session } from '../users/sessions.js';

/** The services this module uses. */
export type BrowserServices = Pick<Services, 'issuer' | 'knownBrowsers' | 'sessions' | 'users'>;

/** This browser's id, hashed (`SessionService.browserId`); a browser without one gets one (two years). */
export function browserOf(ctx: BrowserServices, request: FastifyRequest, reply: FastifyReply): string {
  const { id, cookie } = ctx.sessions.browserId(browserCookie(request));
  if (cookie) setBrowserCookie(request, reply, ctx.issuer, cookie);
  return id;
}

/** The live session of this browser's session cookie, or undefined. */
export function sessionOf(ctx: BrowserServices, request: FastifyRequest): Promise<Session | undefined> {
  return ctx.sessions.current(sessionCookie(request));
}

/**
 * Starts a new session for a user, ending the browser's previous one, and sets its cookie (a new
 * value at every sign-in: no session fixation).
 */
export async function startSession(
  ctx: BrowserServices,
  request: FastifyRequest,
  reply: FastifyReply,
  user: { subjectId: string },
  how: { amr: string[]; idp: string; tenant: string | null; upstreamAcr?: string },
): Promise<Session> {
  const userAgent = request.headers['user-agent'];
  const { session, cookie } = await ctx.sessions.create(sessionCookie(request), user, how, {
    userAgent,
    address: request.ip,
  });
  clearSessionCookie(reply, ctx.issuer);
  setSessionCookie(reply, ctx.issuer, cookie);
  return session;
}

/**
 * Sets the `amr` of the browser's live session after a second factor (step-up), under a new
 * cookie value (`SessionService.upgrade`).
 * @returns the updated session, or undefined when there is no live session.
 */
export async function upgradeSession(
  ctx: BrowserServices,
  request: FastifyRequest,
  reply: FastifyReply,
  amr: string[],
): Promise<Session | undefined> {
  const upgraded = await ctx.sessions.upgrade(sessionCookie(request), amr);
  if (!upgraded) return undefined;
  setSessionCookie(reply, ctx.issuer, upgraded.cookie);
  return upgraded.session;
}

/**
 * Ends the browser's session, if any, and clears its cookie (`SessionService.end`).
 * @returns what ending it did, or undefined without a session.
 */
export async function signOut(
  ctx: BrowserServices,
  request: FastifyRequest,
  reply: FastifyReply,
): Promise<EndedSession | undefined> {
  const ended = await ctx.sessions.end(sessionCookie(request));
  clearSessionCookie(reply, ctx.issuer);
  return ended;
}

/**
 * What this browser's known-browser cookie tells a password check (`KnownBrowsers.vouchFor`):
 * whom it signed in with a password before, if anyone (nothing for a forged or expired cookie).
 */
export async function passwordCheckContext(
  ctx: BrowserServices,
  request: FastifyRequest,
): Promise<PasswordCheckContext> {
  const knownBrowser = await ctx.knownBrowsers.vouchFor(knownBrowserCookie(request));
  return knownBrowser ? { knownBrowser } : {};
}

/**
 * Makes this browser known for the user it just signed in with a password (a new cookie at every
 * such sign-in). Only with user directories: none of Sigil's own users needs it.
 */
export async function rememberKnownBrowser(
  ctx: BrowserServices,
  reply: FastifyReply,
  user: { subjectId: string },
): Promise<void> {
  if (!ctx.users.hasDirectories) return;
  setKnownBrowserCookie(reply, ctx.issuer, ctx.knownBrowsers.issue(user.subjectId));
}
