/**
 * What happens to a pending authorization request when a page is done with it: the one door
 * between the pages (login, second factor, consent, device, federation) and the protocol, as
 * IdentityServer's interaction service and node-oidc-provider's `interactionFinished` are.
 * - `finishSignIn`: the user signed in (password, passkey, second factor, upstream provider);
 * - `grantConsent`: the user allowed the requested scopes;
 * - `deny`: the user cancelled or said no: `access_denied` for the client (RFC 6749 §4.1.2.1);
 * - `resume`: back to the authorization endpoint (or the device flow), which decides what next
 *   (interaction/decide.ts).
 * Outcomes return values or redirects; the pages render.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Services } from '../services.js';
import { startSession } from './browser.js';
import type { ResponseTarget } from '../http/authorization-response.js';
import { OAuthError } from '../protocol/errors.js';
import { nowSeconds } from '../crypto/handles.js';
import { CONSENT_LIFETIME } from '../stores/records/consents.js';
import type { Interaction } from '../stores/records/interactions.js';
import type { Session } from '../users/sessions.js';
import type { User } from '../users/users.js';
import { isNativeRedirect } from '../validation/authorize-request.js';
import { matchRedirectUri } from '../validation/redirect-uri.js';
import { answerDevice } from './device.js';
import type { Pending } from './interactions.js';
import { originOf } from '../http/request.js';
import type { BrowserServices } from './browser.js';

import type { DeviceServices } from './device.js';
/** The services this module uses. */
export type OutcomesServices = Pick<Services, 'basePath' | 'clients' | 'events' | 'hooks' | 'interactions' | 'store'> &
  BrowserServices &
  DeviceServices;

/** Where a pending request continues after the login or consent page, relative to the issuer's path. */
export function resumePath(id: string, interaction: Interaction): string {
  const base = interaction.device
    ? '/device/resume'
    : interaction.saml
      ? '/saml/sso/resume'
      : '/connect/authorize/resume';
  return `${base}?interaction=${encodeURIComponent(id)}`;
}

/** Sends the browser on to where the pending request continues (303, RFC 9700 §4.12). */
export function resume(ctx: OutcomesServices, reply: FastifyReply, pending: Pending): FastifyReply {
  return reply.redirect(`${ctx.basePath}${resumePath(pending.id, pending.interaction)}`, 303);
}

/**
 * How a user signed in: `amr` (RFC 8176), the identity provider (`local` or an upstream
 * provider's name), the tenant, the upstream provider's `acr` when it asserted MFA, and the
 * endpoint the audit event names.
 */
export interface SignIn {
  amr: string[];
  idp: string;
  tenant: string | null;
  upstreamAcr?: string;
  endpoint: 'login' | 'federation';
}

/** A sign-in the `postLogin` hook denied: no session was started; `description` is the hook's. */
export interface SignInDenied {
  denied: string;
}

/**
 * Ends a successful sign-in: asks the `postLogin` hook (DESIGN §6b), then starts a new session
 * (ending this browser's previous one), records `user_login_succeeded`, and for a pending request
 * records the sign-in's time (`loginAt`), with which its `prompt=login` and `max_age` count as met
 * when it resumes (OIDC Core §3.1.2.1).
 *
 * A denial starts no session at all and leaves the browser's previous one as it was: the hook is
 * asked once per sign-in, so a session started despite it would let the next request (or another
 * client's) through without the hook; it is recorded as `user_login_failed`.
 * @returns the new session, or the denial (the caller answers the pending request with
 *   `access_denied` and the description)
 */
export async function finishSignIn(
  ctx: OutcomesServices,
  request: FastifyRequest,
  reply: FastifyReply,
  user: User,
  how: SignIn,
  pending: Pending | undefined,
): Promise<Session | SignInDenied> {
  const { endpoint, ...start } = how;
  // A sign-in at Sigil without a password (`pwd` in `amr`, RFC 8176 §2) was a passkey's.
  const method = endpoint === 'federation' ? 'upstream' : start.amr.includes('pwd') ? 'password' : 'passkey';
  const clientId = pending?.interaction.request.clientId;
  if (ctx.hooks.has('postLogin')) {
    const client = clientId === undefined ? undefined : ctx.clients.get(clientId);
    const verdict = await ctx.hooks.postLogin({
      subject: user.subjectId,
      client: client ? { clientId: client.clientId, clientName: client.clientName ?? null } : null,
      amr: start.amr,
      ip: request.ip,
    });
    if (!verdict.allowed) {
      ctx.events.emit({
        name: 'user_login_failed',
        endpoint,
        method,
        subjectId: user.subjectId,
        ...(clientId !== undefined ? { clientId } : {}),
        error: 'access_denied',
        errorDescription: 'denied by the postLogin hook',
        ...originOf(request),
      });
      return { denied: verdict.description };
    }
  }
  const session = await startSession(ctx, request, reply, user, start);
  ctx.events.emit({
    name: 'user_login_succeeded',
    endpoint,
    method,
    subjectId: user.subjectId,
    ...(pending ? { clientId: pending.interaction.request.clientId } : {}),
    ...originOf(request),
  });
  if (pending) await ctx.interactions.update(pending.id, { ...pending.interaction, loginAt: session.authTime });
  return session;
}

/**
 * Whether consent to a pending request may be remembered: not for a device, not for a native
 * app's redirect URI, whose owner a redirect cannot prove (RFC 8252 §8.6), and not for a request
 * with authorization details, which is asked every time (RFC 9396 §2).
 */
export function mayRememberConsent(interaction: Interaction): boolean {
  return (
    !interaction.device &&
    !isNativeRedirect(interaction.request.target?.redirectUri ?? '') &&
    interaction.request.authorizationDetails === undefined
  );
}

/**
 * The user allowed the pending request's scopes (OIDC Core §3.1.2.4): they become its consented
 * scopes and, when asked (`remember`) and allowed (`mayRememberConsent`), the remembered consent
 * of the session's subject for the client; records `consent_granted`.
 */
export async function grantConsent(
  ctx: OutcomesServices,
  pending: Pending,
  session: Session,
  remember: boolean,
): Promise<void> {
  const { id, interaction } = pending;
  const scopes = interaction.request.scopes;
  const remembered = remember && mayRememberConsent(interaction);
  if (remembered) {
    const now = nowSeconds();
    await ctx.store.records.consents.remember(
      session.subjectId,
      interaction.request.clientId,
      scopes,
      now,
      now + CONSENT_LIFETIME,
    );
  }
  await ctx.interactions.update(id, { ...interaction, consented: scopes });
  ctx.events.emit({
    name: 'consent_granted',
    endpoint: 'consent',
    subjectId: session.subjectId,
    clientId: interaction.request.clientId,
    scopes,
    remembered,
  });
}

/**
 * How a denied request is answered: `access_denied` to the client's validated target; a device's
 * request is answered by its next poll (the page says it was denied); a SAML SP's by its SSO
 * endpoint, where the request resumes marked denied (`resume`); `expired` when it was already
 * answered or ran out, or the client or its redirect URI has gone since it was validated.
 */
export type Denial =
  | { to: 'client'; target: ResponseTarget; error: OAuthError }
  | { to: 'device' }
  | { to: 'resume' }
  | { to: 'expired' };

/**
 * The user cancelled the sign-in or declined consent: ends the pending request with
 * `access_denied` (RFC 6749 §4.1.2.1; a device's with `access_denied` at its next poll, RFC 8628
 * §3.5; a SAML SP's with a RequestDenied Response from its SSO endpoint) and records `token_issue_failed`.
 * @param address the browser's address (a client metadata document fetched again counts against it)
 * @param description the `error_description` the client gets (a hook's denial gives its own)
 */
export async function deny(
  ctx: OutcomesServices,
  pending: Pending,
  address: string,
  description = 'the user denied the request',
): Promise<Denial> {
  const { id, interaction } = pending;
  if (interaction.device) return (await answerDevice(ctx, pending, undefined)) ? { to: 'device' } : { to: 'expired' };
  if (interaction.saml) {
    await ctx.interactions.update(id, { ...interaction, saml: { ...interaction.saml, denied: true } });
    return { to: 'resume' };
  }
  if (!(await ctx.interactions.finish(id))) return { to: 'expired' };
  const { clientId, target } = interaction.request;
  // A metadata document's client is fetched again if its document left the cache; gone if refused now.
  const client = await ctx.clients.resolve(clientId, address).catch(() => undefined);
  if (!client || !target || !matchRedirectUri(target.redirectUri, client.redirectUris)) return { to: 'expired' };
  ctx.events.emit({ name: 'token_issue_failed', endpoint: 'authorize', clientId, error: 'access_denied' });
  return { to: 'client', target, error: new OAuthError('access_denied', description) };
}
