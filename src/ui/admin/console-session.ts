/**
 * The console's sign-in: the console is a relying party of Sigil itself. A
 * request without a console session is sent to the authorization endpoint as the built-in public
 * client `sigil-console` (code flow, PKCE S256, `state`; the client requires a second factor, so
 * Sigil's own MFA step or enrolment runs). The callback redeems the code at the token endpoint,
 * in process (`inject`: the token endpoint's own code path, no second grant logic), and keeps the
 * access token in an HttpOnly, SameSite=Strict cookie sent only to `<issuer path>/admin`. Every
 * console request checks that token as the management API checks its tokens (`ConsoleDeps.check`),
 * so the admin role and MFA rules of the management scopes apply unchanged. When the token has
 * expired the browser signs in again (usually a redirect through the live Sigil session).
 *
 * The token's scopes say which console its user gets (`ConsoleRole`): `sigil:admin` the full
 * console; `sigil:org:admin` alone an organization admin's (DESIGN §6b "Organization admins"),
 * whose pages ask at each request whether they still administer the organization at hand; neither
 * the "not allowed" page.
 */
import { timingSafeEqual } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { CONSOLE_CALLBACK_PATH, CONSOLE_CLIENT_ID, CONSOLE_PATH } from '../../config/console-client.js';
import { ORGANIZATION_ADMIN_ROLE, ORGANIZATION_ADMIN_SCOPE } from '../../config/schema.js';
import { hashHandle, newHandle } from '../../crypto/handles.js';
import { cookieAttributes } from '../../http/cookies.js';
import { queryString } from '../../http/fields.js';
import { OAuthError } from '../../protocol/errors.js';
import type { Services } from '../../services.js';
import { sendErrorPage } from '../error-page.js';
import { language } from '../language.js';

/** The services this module uses. */
export type ConsoleSessionServices = Pick<Services, 'basePath' | 'clients' | 'config' | 'issuer' | 'pages'>;

/** The console session's cookie: the access token. */
const CONSOLE_COOKIE = 'sigil.console';
/** The pending sign-in's cookie: `<state>.<code_verifier>`, sent only to the callback. */
const SIGN_IN_COOKIE = 'sigil.console.signin';
/** How long a sign-in may take, seconds. */
const SIGN_IN_SECONDS = 600;
/** The longest token the console cookie may hold (a cookie is at most 4096 bytes). */
const MAX_TOKEN_LENGTH = 3800;

/** The scope of the full console's admins. */
const ADMIN_SCOPE = 'sigil:admin';
/** The scopes a console token may carry to be of use: either makes a console session. */
const CONSOLE_SCOPES = [ADMIN_SCOPE, ORGANIZATION_ADMIN_SCOPE] as const;
/** Where an organization admin's console begins, below the issuer's path. */
export const ORGANIZATION_ADMIN_HOME = `${CONSOLE_PATH}/my-organizations`;

/** Who uses the console: the console client and the admin's subject. */
export interface ConsoleCaller {
  clientId: string;
  sub: string;
}

/**
 * Which console a session's user gets: `admin` (their token carries `sigil:admin`: every page),
 * `organizationAdmin` (`sigil:org:admin` without `sigil:admin`: the members and invitations of the
 * organizations they administer, nothing else).
 */
export type ConsoleRole = 'admin' | 'organizationAdmin';

/** What the console needs of the protected-resource guard, handed in by the route table. */
export interface ConsoleDeps {
  /**
   * Checks a console access token as `requireScope` does, for one of `scopes`.
   * @returns the caller and the token's scopes
   * @throws OAuthError 401 `invalid_token` (expired, revoked, inactive user), 403 `insufficient_scope`
   */
  check(
    request: FastifyRequest,
    token: string,
    scopes: readonly string[],
  ): Promise<{ clientId: string; sub?: string; scopes: string[] }>;
}

/** The outcome of looking at a console request's session. */
export type SessionCheck = { kind: 'caller'; caller: ConsoleCaller; role: ConsoleRole } | { kind: 'answered' };

/** The console a token's scopes (one of `CONSOLE_SCOPES` among them) open. */
function roleOf(scopes: readonly string[]): ConsoleRole {
  return scopes.includes(ADMIN_SCOPE) ? 'admin' : 'organizationAdmin';
}

/** The first page of a console role's console, below the issuer's path. */
export function consoleHome(role: ConsoleRole): string {
  return role === 'admin' ? `${CONSOLE_PATH}/users` : ORGANIZATION_ADMIN_HOME;
}

/** The console's sign-in routes and the session check of every console page. */
export class ConsoleSession {
  private readonly path: string;
  private readonly callbackPath: string;

  constructor(
    private readonly app: FastifyInstance,
    private readonly ctx: ConsoleSessionServices,
    private readonly deps: ConsoleDeps,
  ) {
    this.path = `${ctx.basePath}${CONSOLE_PATH}`;
    this.callbackPath = `${ctx.basePath}${CONSOLE_CALLBACK_PATH}`;
  }

  /**
   * The caller of a console request and the console they get, or `answered` after sending the
   * browser to sign in (no session, or an expired one) or the "not allowed" page (a token with
   * neither `sigil:admin` nor `sigil:org:admin`: no admin role, no organization they administer,
   * or no second factor).
   */
  async caller(request: FastifyRequest, reply: FastifyReply): Promise<SessionCheck> {
    const token = request.cookies[CONSOLE_COOKIE];
    if (token === undefined || token.length === 0 || token.length > MAX_TOKEN_LENGTH) {
      this.startSignIn(reply);
      return { kind: 'answered' };
    }
    try {
      const caller = await this.deps.check(request, token, CONSOLE_SCOPES);
      if (caller.clientId !== CONSOLE_CLIENT_ID || caller.sub === undefined)
        throw new OAuthError('invalid_token', 'not a console token', 401);
      return { kind: 'caller', caller: { clientId: caller.clientId, sub: caller.sub }, role: roleOf(caller.scopes) };
    } catch (err) {
      if (!(err instanceof OAuthError)) throw err;
      this.clear(reply);
      if (err.status === 403) this.notAllowed(request, reply);
      else this.startSignIn(reply);
      return { kind: 'answered' };
    }
  }

  /** Registers `/admin/callback`. */
  routes(): void {
    this.app.get(CONSOLE_CALLBACK_PATH, async (request, reply) => {
      const pending = request.cookies[SIGN_IN_COOKIE];
      reply.clearCookie(SIGN_IN_COOKIE, this.signInCookie());
      const [state, verifier] = (pending ?? '').split('.');
      const code = queryString(request, 'code');
      // An error answer, or a redemption that fails, ends here: signing in again would loop.
      if (queryString(request, 'error') !== undefined) return this.notCompleted(request, reply);
      // No pending sign-in of this browser, or another's answer (login CSRF): a fresh sign-in.
      if (!state || !verifier || code === undefined || !sameText(queryString(request, 'state') ?? '', state))
        return this.startSignIn(reply);
      const answer = await this.app.inject({
        method: 'POST',
        url: `${this.ctx.basePath}/connect/token`,
        // The browser's address: the token endpoint's failure limits count against it, not against this node.
        remoteAddress: request.ip,
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        payload: new URLSearchParams({
          grant_type: 'authorization_code',
          code,
          redirect_uri: `${this.ctx.issuer}${CONSOLE_CALLBACK_PATH}`,
          client_id: CONSOLE_CLIENT_ID,
          code_verifier: verifier,
        }).toString(),
      });
      const body = answer.json<{ access_token?: unknown; expires_in?: unknown }>();
      if (
        answer.statusCode !== 200 ||
        typeof body.access_token !== 'string' ||
        body.access_token.length > MAX_TOKEN_LENGTH
      )
        return this.notCompleted(request, reply);
      let scopes: string[];
      try {
        ({ scopes } = await this.deps.check(request, body.access_token, CONSOLE_SCOPES));
      } catch (err) {
        if (err instanceof OAuthError && err.status === 403) return this.notAllowed(request, reply);
        throw err;
      }
      const maxAge = typeof body.expires_in === 'number' ? body.expires_in : 300;
      reply.setCookie(CONSOLE_COOKIE, body.access_token, this.sessionCookie(maxAge));
      const home = `${this.ctx.basePath}${consoleHome(roleOf(scopes))}`;
      return reply.header('cache-control', 'no-store').redirect(home, 303);
    });
  }

  /**
   * Ends the console session: the cookie goes, and the access token is revoked at the revocation
   * endpoint (RFC 7009, in process), so a copy of it is worthless too.
   */
  async signOut(request: FastifyRequest, reply: FastifyReply): Promise<void> {
    const token = request.cookies[CONSOLE_COOKIE];
    this.clear(reply);
    if (token === undefined || token.length === 0 || token.length > MAX_TOKEN_LENGTH) return;
    await this.app.inject({
      method: 'POST',
      url: `${this.ctx.basePath}/connect/revocation`,
      remoteAddress: request.ip,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: new URLSearchParams({ token, token_type_hint: 'access_token', client_id: CONSOLE_CLIENT_ID }).toString(),
    });
  }

  /** Sends the browser to the authorization endpoint as the console client, remembering state and verifier. */
  private startSignIn(reply: FastifyReply): FastifyReply {
    const state = newHandle();
    const verifier = newHandle();
    reply.setCookie(SIGN_IN_COOKIE, `${state}.${verifier}`, this.signInCookie(SIGN_IN_SECONDS));
    const scope = this.ctx.clients.get(CONSOLE_CLIENT_ID)?.allowedScopes.join(' ') ?? ADMIN_SCOPE;
    const query = new URLSearchParams({
      response_type: 'code',
      client_id: CONSOLE_CLIENT_ID,
      redirect_uri: `${this.ctx.issuer}${CONSOLE_CALLBACK_PATH}`,
      scope,
      state,
      code_challenge: hashHandle(verifier),
      code_challenge_method: 'S256',
    });
    return reply.header('cache-control', 'no-store').redirect(`${this.ctx.basePath}/connect/authorize?${query}`, 303);
  }

  private notAllowed(request: FastifyRequest, reply: FastifyReply): FastifyReply {
    return this.ctx.pages.send(
      reply,
      'message',
      language(request),
      {
        titleKey: 'consoleNotAllowedTitle',
        textKey: 'consoleNotAllowedText',
        values: { role: this.ctx.config.admin.userRole, organizationRole: ORGANIZATION_ADMIN_ROLE },
      },
      403,
    );
  }

  /**
   * The error page of a console sign-in that did not complete (an error answer, or a code the token endpoint
   * refused).
   */
  private notCompleted(request: FastifyRequest, reply: FastifyReply): FastifyReply {
    return sendErrorPage(
      this.ctx,
      reply,
      new OAuthError('access_denied', 'the sign-in to the console did not complete; open the console again'),
      language(request),
      400,
    );
  }

  private clear(reply: FastifyReply): void {
    reply.clearCookie(CONSOLE_COOKIE, this.sessionCookie());
  }

  /** The session cookie's attributes: Sigil's own, but SameSite=Strict and sent to the console's path only. */
  private sessionCookie(maxAge?: number) {
    return { ...cookieAttributes(this.ctx.issuer, this.path, maxAge), sameSite: 'strict' as const };
  }

  /**
   * The pending sign-in cookie's attributes: Lax (the callback is a top-level navigation that may
   * come through an upstream provider's site), sent to the callback only.
   */
  private signInCookie(maxAge?: number) {
    return cookieAttributes(this.ctx.issuer, this.callbackPath, maxAge);
  }
}

/** Whether two strings are equal, compared in constant time. */
function sameText(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}
