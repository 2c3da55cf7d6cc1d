/**
 * Passkeys and security keys in the browser (issue 12; ceremonies in `mfa/webauthn.ts`):
 * - `/account/passkeys`: the signed-in user's credentials, added (passkey or security key) and
 *   removed there; changes need what every factor change needs (`MfaService.mayChangeFactors`:
 *   a recent sign-in that used the strongest kind the user holds).
 * - "Sign in with a passkey" on the login page: a passwordless sign-in (`/account/passkeys/login`),
 *   with conditional mediation (autofill) where the browser supports it.
 * - The security key step after the password (`securityKeyStep`, `/account/passkeys/second-factor`)
 *   for users who registered one.
 * The ceremonies' options come from POST endpoints that answer JSON (`.../options`); the results
 * come back as the hidden form field `response` of an ordinary form POST. Every POST carries the
 * CSRF token and a same-origin `Origin` when the browser sends one. Failed checks count against
 * the failure limits (`ctx.limiter`), and every outcome is an audit event.
 *
 * `amr` (RFC 8176 §2) of these sign-ins:
 * - password + security key: `pwd`, `hwk` (proof of possession of a hardware key: security keys
 *   keep their key in the token), `mfa`.
 * - passkey with user verification: `swk`, `user`, `mfa`. `swk`: the RP asks for no attestation
 *   and synced passkeys live in a software keychain, so no hardware claim is made; `user`: the
 *   authenticator tested and verified the user (the UV flag, WebAuthn L3 §6.1), and WebAuthn does
 *   not say whether by PIN, fingerprint or face (`pin`/`fpt`/`face`); `mfa`: possession of the key
 *   plus that verification are two factors (a multi-factor cryptographic authenticator).
 *   A passkey is only accepted with user verification, so a passkey sign-in always carries `mfa`.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { SigilContext } from '../context.js';
import { single } from '../http/fields.js';
import { expiredPage, sendErrorPage } from './error-page.js';
import { language } from './language.js';
import type { Interaction } from '../stores/records/interactions.js';
import { OAuthError } from '../protocol/errors.js';
import { Params } from '../protocol/params.js';
import { originOf, sendOAuthError } from '../http/request.js';
import { amrWith } from '../mfa/factors.js';
import { WebAuthnError } from '../mfa/webauthn.js';
import type { WebAuthnKind } from '../stores/webauthn-credentials.js';
import { hashHandle, newHandle, nowSeconds } from '../crypto/handles.js';
import { newGrantRecord } from '../stores/types.js';
import type { User } from '../users/users.js';
import { type CredentialAttempt, userAttempt } from '../limits/failure-limiter.js';
import { addressQuotaKey, takeQuota } from '../limits/request-quota.js';
import { continueAfterSignIn, loginPage } from './sign-in.js';
import { checkCsrf } from './csrf.js';
import { PASSKEYS_SCRIPT } from './passkeys-pages.js';
import { limiterAllows } from './attempts.js';

/** Cookie of the pending security key step (HttpOnly; only sent to `/account/passkeys`). */
const PENDING_COOKIE = 'sigil.webauthn';
const PENDING_PATH = '/account/passkeys';

/** `amr` of a password sign-in completed with a credential (RFC 8176 §2): `pwd`, the kind's value of `FACTOR_KINDS` (`hwk`, `swk`), `mfa`. */
export function secondFactorAmr(kind: WebAuthnKind): string[] {
  return amrWith(['pwd'], kind);
}

/** `amr` of a passkey sign-in with user verification (RFC 8176 §2; see the module comment). */
export const PASSKEY_AMR: readonly string[] = ['swk', 'user', 'mfa'];

/** The pending step's data: the password was right, the credential is still to come. */
interface Pending {
  subjectId: string;
  username: string;
  tenant: string | null;
  /** The pending authorization request's interaction id, or empty. */
  interaction: string;
  /** Hashed browser id. */
  browser: string;
  /** The one-time code page, offered instead (the user also has TOTP or recovery codes). */
  codeLink?: string;
  /** Continue at /account afterwards (the sign-in started there). */
  toAccount?: boolean;
}

/** The limiter's view of a passkey sign-in: per address (a signature cannot be guessed, so no identity-wide count). */
function passkeyAttempt(address: string): CredentialAttempt {
  return { address, identity: 'webauthn:passkey', identityWide: false };
}

/** The UMD bundle of `@simplewebauthn/browser`, read once from node_modules. */
function browserBundle(): string {
  const entry = createRequire(import.meta.url).resolve('@simplewebauthn/browser');
  // entry: <package>/script/index.js; the bundle: <package>/dist/bundle/index.umd.min.js
  return readFileSync(join(dirname(dirname(entry)), 'dist', 'bundle', 'index.umd.min.js'), 'utf8');
}

/**
 * The security key step after a right password, or as the step-up of a live session: when
 * WebAuthn is enabled and the user has a credential (a security key, or a passkey used as the
 * second step), starts the step (a pending record under a random handle in an HttpOnly cookie,
 * lifetime `webauthn.challengeLifetime`) and sends its page. The session starts only after the
 * key. Whether a user is asked is MFA core's decision (`MfaService.nextStep`, src/mfa/factors.ts);
 * this is where it sends users with a WebAuthn credential.
 * @param options.codeLink where the page offers a one-time code instead (the user also has TOTP
 *   or recovery codes); `toAccount`: continue at /account afterwards
 * @returns true when the step page was sent (the caller returns), false to sign in at once.
 */
export async function securityKeyStep(
  ctx: SigilContext,
  request: FastifyRequest,
  reply: FastifyReply,
  user: User,
  interactionId: string | undefined,
  lang: string,
  options: { codeLink?: string; toAccount?: boolean } = {},
): Promise<boolean> {
  if (!ctx.config.webauthn.enabled) return false;
  const credentials = await ctx.store.webauthn.list(user.subjectId);
  if (credentials.length === 0) return false;
  const handle = newHandle();
  const now = nowSeconds();
  const lifetime = ctx.config.webauthn.challengeLifetime;
  const pending: Pending = {
    subjectId: user.subjectId,
    username: user.username,
    tenant: user.tenant,
    interaction: interactionId ?? '',
    browser: ctx.sessions.browserId(request, reply),
    ...(options.codeLink ? { codeLink: options.codeLink } : {}),
    ...(options.toAccount ? { toAccount: true } : {}),
  };
  await ctx.store.grants.put(
    newGrantRecord({ key: hashHandle(handle), type: 'webauthn_pending', clientId: '', subjectId: user.subjectId, data: { ...pending }, createdAt: now, expiresAt: now + lifetime }),
  );
  reply.setCookie(PENDING_COOKIE, handle, { path: PENDING_PATH, httpOnly: true, sameSite: 'lax', secure: ctx.issuer.startsWith('https:'), maxAge: lifetime });
  await stepPage(ctx, request, reply, pending, lang, undefined);
  return true;
}

async function stepPage(ctx: SigilContext, request: FastifyRequest, reply: FastifyReply, pending: Pending, lang: string, error: string | undefined, status = 200): Promise<FastifyReply> {
  const interaction = pending.interaction ? await ctx.interactions.get(pending.interaction, pending.browser) : undefined;
  return ctx.pages.send(
    reply,
    'passkey-step',
    lang,
    { csrf: reply.generateCsrf(), uiLocales: interaction?.request.uiLocales, error, codeLink: pending.codeLink },
    status,
    interaction?.request.target !== undefined,
  );
}

/** Registers the passkey routes, the page script and the browser bundle. */
export function passkeyPages(app: FastifyInstance, ctx: SigilContext): void {
  const origin = new URL(ctx.issuer).origin;
  const bundle = browserBundle();
  const asset = (reply: FastifyReply, body: string) =>
    reply.header('cache-control', 'public, max-age=3600').type('text/javascript; charset=utf-8').send(body);
  app.get('/assets/webauthn-browser.js', async (_request, reply) => asset(reply, bundle));
  app.get('/assets/passkeys.js', async (_request, reply) => asset(reply, PASSKEYS_SCRIPT));
  if (!ctx.config.webauthn.enabled) return;

  const formOf = (request: FastifyRequest) => (request.body instanceof Params ? request.body : Params.empty());
  const csrfRefused = () => new OAuthError('invalid_request', 'the form has expired, please try again', 403);
  const json = (reply: FastifyReply, body: unknown) => reply.header('cache-control', 'no-store').send(body);
  const parseResponse = (body: Params): unknown => {
    const raw = single(body, 'response') ?? '';
    if (raw.length === 0) return undefined;
    try {
      return JSON.parse(raw) as unknown;
    } catch {
      return null;
    }
  };

  /**
   * Counts a new challenge against the browser's and the address's quota (config
   * `webauthn.challengesPerBrowser`, `challengesPerAddress` per `challengeLifetime`): each is a
   * stored row, and the sign-in options are open to anyone with the login page.
   * @throws OAuthError 429 `temporarily_unavailable` with `Retry-After`.
   */
  const challengeQuota = (browser: string, ip: string) =>
    takeQuota(
      ctx.limiter.counters,
      [
        { key: `webauthn:browser:${browser}`, limit: ctx.config.webauthn.challengesPerBrowser },
        { key: `webauthn:address:${addressQuotaKey(ip)}`, limit: ctx.config.webauthn.challengesPerAddress },
      ],
      ctx.config.webauthn.challengeLifetime,
    );

  /** The signed-in user of the request and whether the session may change credentials (`MfaService.mayChangeFactors`). */
  const signedIn = async (request: FastifyRequest) => {
    const session = await ctx.sessions.current(request);
    if (!session) return undefined;
    const user = await ctx.users.findBySubject(session.subjectId);
    if (!user || !user.isActive) return undefined;
    return { session, user, canChange: await ctx.mfa.mayChangeFactors(session) };
  };

  const listPage = async (request: FastifyRequest, reply: FastifyReply, notice?: 'passkeyRegistered' | 'passkeyRemoved', error?: 'passkeyFailed' | 'passkeyNeedsScript', status = 200) => {
    const lang = language(request);
    const current = await signedIn(request);
    if (!current) return ctx.pages.send(reply, 'message', lang, { titleKey: 'passkeysTitle', textKey: 'notSignedIn' }, 401);
    const day = (t: number) => new Date(t * 1000).toISOString().slice(0, 10);
    const credentials = (await ctx.store.webauthn.list(current.user.subjectId)).map((c) => ({
      id: c.id,
      name: c.name,
      details: [
        ctx.pages.text(lang, c.kind === 'passkey' ? 'passkeyKindPasskey' : 'passkeyKindSecurityKey'),
        ctx.pages.text(lang, 'passkeyCreated').replace('{date}', day(c.createdAt)),
        ...(c.lastUsedAt ? [ctx.pages.text(lang, 'passkeyLastUsed').replace('{date}', day(c.lastUsedAt))] : []),
      ].join(' · '),
      removeLabel: ctx.pages.text(lang, 'removeCredentialNamed').replace('{name}', c.name),
    }));
    return ctx.pages.send(
      reply,
      'passkeys',
      lang,
      {
        csrf: reply.generateCsrf(),
        credentials,
        canChange: current.canChange,
        notice: notice ? ctx.pages.text(lang, notice) : undefined,
        error: error ? ctx.pages.text(lang, error) : undefined,
      },
      status,
    );
  };

  app.get('/account/passkeys', async (request, reply) => {
    const done = (request.query as Record<string, unknown>).done;
    return listPage(request, reply, done === 'added' ? 'passkeyRegistered' : done === 'removed' ? 'passkeyRemoved' : undefined);
  });

  // Registration options (JSON): a session that may change credentials, a CSRF token, and the kind.
  app.post('/account/passkeys/options', async (request, reply) => {
    if (!checkCsrf(app, request, reply, origin)) return sendOAuthError(reply, csrfRefused());
    const current = await signedIn(request);
    if (!current?.canChange) return sendOAuthError(reply, new OAuthError('login_required', 'sign in again to change credentials', 403));
    const kind = single(formOf(request), 'kind');
    if (kind !== 'passkey' && kind !== 'security-key') return sendOAuthError(reply, new OAuthError('invalid_request', 'kind must be passkey or security-key'));
    const display = current.user.claims.name;
    const browser = ctx.sessions.browserId(request, reply);
    await challengeQuota(browser, request.ip);
    const options = await ctx.webauthn.registrationOptions(
      { subjectId: current.user.subjectId, username: current.user.username, displayName: typeof display === 'string' ? display : current.user.username },
      kind,
      browser,
    );
    return json(reply, options);
  });

  app.post('/account/passkeys/register', async (request, reply) => {
    const lang = language(request);
    if (!checkCsrf(app, request, reply, origin)) return sendErrorPage(ctx, reply, csrfRefused(), lang, 403);
    const current = await signedIn(request);
    if (!current?.canChange) return listPage(request, reply, undefined, undefined, current ? 403 : 401);
    const body = formOf(request);
    const kind = single(body, 'kind') === 'security-key' ? 'security-key' : 'passkey';
    const response = parseResponse(body);
    if (response === undefined) return listPage(request, reply, undefined, 'passkeyNeedsScript', 400);
    try {
      await ctx.webauthn.register(current.user.subjectId, kind, response, ctx.sessions.browserId(request, reply), single(body, 'name') ?? '');
    } catch (err) {
      if (!(err instanceof WebAuthnError)) throw err;
      ctx.events.emit({ name: 'webauthn_failed', endpoint: 'account', subjectId: current.user.subjectId, factor: kind, error: err.reason, ...originOf(request) });
      return listPage(request, reply, undefined, 'passkeyFailed', 400);
    }
    ctx.events.emit({ name: 'webauthn_registered', endpoint: 'account', subjectId: current.user.subjectId, factor: kind, ...originOf(request) });
    return reply.redirect('/account/passkeys?done=added', 303);
  });

  app.post('/account/passkeys/remove', async (request, reply) => {
    const lang = language(request);
    if (!checkCsrf(app, request, reply, origin)) return sendErrorPage(ctx, reply, csrfRefused(), lang, 403);
    const current = await signedIn(request);
    if (!current?.canChange) return listPage(request, reply, undefined, undefined, current ? 403 : 401);
    const id = single(formOf(request), 'id') ?? '';
    const credential = id.length > 0 && id.length <= 1400 ? await ctx.store.webauthn.get(id) : undefined;
    if (!credential || !(await ctx.store.webauthn.remove(current.user.subjectId, id))) return listPage(request, reply, undefined, 'passkeyFailed', 404);
    ctx.events.emit({ name: 'webauthn_removed', endpoint: 'account', subjectId: current.user.subjectId, factor: credential.kind, ...originOf(request) });
    return reply.redirect('/account/passkeys?done=removed', 303);
  });

  // Passkey sign-in options (JSON): anyone with the login page's CSRF token.
  app.post('/account/passkeys/login/options', async (request, reply) => {
    if (!checkCsrf(app, request, reply, origin)) return sendOAuthError(reply, csrfRefused());
    const browser = ctx.sessions.browserId(request, reply);
    await challengeQuota(browser, request.ip);
    return json(reply, await ctx.webauthn.authenticationOptions('passkey', browser));
  });

  app.post('/account/passkeys/login', async (request, reply) => {
    const body = formOf(request);
    const lang = language(request, single(body, 'ui_locales'));
    if (!checkCsrf(app, request, reply, origin)) return sendErrorPage(ctx, reply, csrfRefused(), lang, 403);
    const id = single(body, 'interaction');
    const browser = ctx.sessions.browserId(request, reply);
    const interaction = id === undefined ? undefined : await ctx.interactions.get(id, browser);
    if (id !== undefined && !interaction) return expiredPage(ctx, request, reply);
    const response = parseResponse(body);
    if (response === undefined) return loginPage(ctx, request, reply, id, interaction, '', 'passkeyNeedsScript', 400);
    const attempt = passkeyAttempt(request.ip);
    if (!(await limiterAllows(ctx, reply, attempt))) return loginPage(ctx, request, reply, id, interaction, '', 'tooManyAttempts', 429);
    const failed = async (reason: string, subjectId?: string) => {
      await ctx.limiter.failed(attempt);
      const common = { endpoint: 'login', ...originOf(request), ...(subjectId ? { subjectId } : {}), ...(interaction ? { clientId: interaction.request.clientId } : {}) };
      ctx.events.emit({ name: 'webauthn_failed', factor: 'passkey', error: reason, ...common });
      ctx.events.emit({ name: 'user_login_failed', errorDescription: `passkey: ${reason}`, ...common });
      return loginPage(ctx, request, reply, id, interaction, '', 'passkeyFailed', 400);
    };
    let use;
    try {
      use = await ctx.webauthn.authenticate('passkey', response, browser);
    } catch (err) {
      if (!(err instanceof WebAuthnError)) throw err;
      return failed(err.reason);
    }
    const user = await ctx.users.findBySubject(use.credential.subjectId);
    const tenant = interaction ? interaction.request.tenant : null;
    if (!user || !user.isActive) return failed('inactive user', use.credential.subjectId);
    if (tenant !== null && user.tenant !== tenant) return failed('other tenant', user.subjectId);
    ctx.events.emit({ name: 'webauthn_succeeded', endpoint: 'login', subjectId: user.subjectId, factor: 'passkey', ...originOf(request) });
    return continueAfterSignIn(ctx, request, reply, user, [...PASSKEY_AMR], id && interaction ? { id, interaction } : undefined, lang);
  });

  /** The live pending step of the request's cookie, for this browser. */
  const pendingOf = async (request: FastifyRequest, reply: FastifyReply): Promise<{ key: string; pending: Pending } | undefined> => {
    const handle = request.cookies[PENDING_COOKIE];
    if (!handle || handle.length > 100) return undefined;
    const key = hashHandle(handle);
    const row = await ctx.store.grants.get(key);
    if (!row || row.type !== 'webauthn_pending' || row.consumedAt !== null || row.revokedAt !== null || row.expiresAt <= nowSeconds()) return undefined;
    const pending = row.data as unknown as Pending;
    if (pending.browser !== ctx.sessions.browserId(request, reply)) return undefined;
    return { key, pending };
  };

  app.post('/account/passkeys/second-factor/options', async (request, reply) => {
    if (!checkCsrf(app, request, reply, origin)) return sendOAuthError(reply, csrfRefused());
    const step = await pendingOf(request, reply);
    if (!step) return sendOAuthError(reply, new OAuthError('login_required', 'the sign-in has expired', 403));
    await challengeQuota(step.pending.browser, request.ip);
    return json(reply, await ctx.webauthn.authenticationOptions('second-factor', step.pending.browser, step.pending.subjectId));
  });

  app.post('/account/passkeys/second-factor', async (request, reply) => {
    const body = formOf(request);
    const lang = language(request, single(body, 'ui_locales'));
    if (!checkCsrf(app, request, reply, origin)) return sendErrorPage(ctx, reply, csrfRefused(), lang, 403);
    const step = await pendingOf(request, reply);
    if (!step) return expiredPage(ctx, request, reply);
    const { key, pending } = step;
    const interaction: Interaction | undefined = pending.interaction ? await ctx.interactions.get(pending.interaction, pending.browser) : undefined;
    if (pending.interaction && !interaction) return expiredPage(ctx, request, reply);
    const id = pending.interaction || undefined;
    if (single(body, 'button') === 'cancel') {
      await ctx.store.grants.consume(key, nowSeconds());
      reply.clearCookie(PENDING_COOKIE, { path: PENDING_PATH });
      return reply.redirect(id ? `/account/login?interaction=${encodeURIComponent(id)}` : '/account/login', 303);
    }
    const response = parseResponse(body);
    if (response === undefined) return stepPage(ctx, request, reply, pending, lang, ctx.pages.text(lang, 'passkeyNeedsScript'), 400);
    const attempt = userAttempt(request.ip, pending.tenant, pending.username);
    if (!(await limiterAllows(ctx, reply, attempt))) return stepPage(ctx, request, reply, pending, lang, ctx.pages.text(lang, 'tooManyAttempts'), 429);
    let use;
    try {
      use = await ctx.webauthn.authenticate('second-factor', response, pending.browser, pending.subjectId);
    } catch (err) {
      if (!(err instanceof WebAuthnError)) throw err;
      await ctx.limiter.failed(attempt);
      ctx.events.emit({
        name: 'webauthn_failed',
        endpoint: 'login',
        subjectId: pending.subjectId,
        factor: 'security-key',
        error: err.reason,
        ...originOf(request),
        ...(interaction ? { clientId: interaction.request.clientId } : {}),
      });
      return stepPage(ctx, request, reply, pending, lang, ctx.pages.text(lang, 'passkeyFailed'), 400);
    }
    // The step is single-use: of two concurrent completions, one signs in.
    if (!(await ctx.store.grants.consume(key, nowSeconds()))) return expiredPage(ctx, request, reply);
    reply.clearCookie(PENDING_COOKIE, { path: PENDING_PATH });
    // The one-time code form of the same sign-in (MFA core), if one was offered, closes too.
    await ctx.mfa.finishPending(pending.browser);
    const user = await ctx.users.findBySubject(pending.subjectId);
    if (!user || !user.isActive) return expiredPage(ctx, request, reply);
    ctx.events.emit({ name: 'webauthn_succeeded', endpoint: 'login', subjectId: user.subjectId, factor: use.credential.kind, ...originOf(request) });
    return continueAfterSignIn(ctx, request, reply, user, secondFactorAmr(use.credential.kind), id && interaction ? { id, interaction } : undefined, lang, pending.toAccount === true);
  });
}
