/**
 * Client-initiated backchannel authentication (OpenID CIBA Core 1.0), poll and ping modes: the
 * request a client makes at `/connect/ciba` (§7), the user's answer on `/account/requests`, and
 * the ping that tells a ping-mode client the answer is there (§10.2). The client redeems the
 * answer at the token endpoint (grants/ciba.ts).
 *
 * The request is stored under the SHA-256 of its `auth_req_id` (`records/backchannel-requests.ts`);
 * a ping-mode request keeps the id itself too, since the ping must carry it (§10.2). It grants
 * nothing alone: redeeming it takes the authentication of a confidential client (§7.1).
 *
 * Nobody is flooded: requests count per client and per user and client (`pendingLimits`), so no
 * client can fill one user's page or mailbox, nor use up what other clients may ask; and only the user the request names sees it and may answer it.
 */
import type { Services } from '../services.js';
import type { Client } from '../clients/registry.js';
import { hasCallerChosenUrls } from '../clients/client-keys.js';
import { CIBA_GRANT } from '../config/schema.js';
import { newHandle, nowSeconds } from '../crypto/handles.js';
import { postToClientUrl } from '../http/outbound.js';
import { chargeQuota } from '../limits/request-quota.js';
import { OAuthError, invalidRequest } from '../protocol/errors.js';
import type { Params } from '../protocol/params.js';
import type { RequestOrigin } from '../events/events.js';
import { validateScopes } from '../resources/scopes.js';
import { type AuthorizationDetail, parseAuthorizationDetails } from '../resources/authorization-details.js';
import type { BackchannelRequestData } from '../stores/records/backchannel-requests.js';
import type { Session } from '../stores/records/sessions.js';
import type { User } from '../users/user.js';
import { idTokenHintSubject } from '../validation/authorize/optional-parameters.js';
import { parseAcrValues } from '../validation/acr-values.js';
import { assertedAcr } from '../users/acr.js';
import { sessionHasMfa } from '../mfa/factors.js';
import { mfaRequired } from './decide.js';

/** The services this module uses. */
export type BackchannelServices = Pick<
  Services,
  | 'clients'
  | 'config'
  | 'email'
  | 'events'
  | 'issuer'
  | 'limiter'
  | 'log'
  | 'mfa'
  | 'resources'
  | 'store'
  | 'tokens'
  | 'users'
>;

/** The approval page, below the issuer's path: where the user answers and where the mail links. */
export const REQUESTS_PAGE_PATH = '/account/requests';

/** How long a request waits for its answer at most, seconds (`requested_expiry` only shortens it). */
export const MAX_REQUEST_SECONDS = 300;
/** Longest `binding_message`, characters: a short text to compare on two screens (CIBA §7.1). */
export const MAX_BINDING_MESSAGE = 100;
/** Longest `client_notification_token` (CIBA §7.1: at most 1024 characters). */
const MAX_NOTIFICATION_TOKEN = 1024;
/** Longest login hint (a username or an address, RFC 5321 §4.5.3.1). */
const MAX_HINT = 320;
/**
 * Longest `acr_values`, as at authorize (`parseAcrValues`). Values Sigil does not know are a
 * preference it cannot meet (OIDC Core §3.1.2.1: voluntary), so they ask for nothing.
 */
const MAX_ACR_VALUES = 300;
/** How long the ping may take, milliseconds. */
const PING_TIMEOUT_MS = 5_000;
/** Requests the page lists at most. */
const LISTED = 20;
/** Tries of an answer against concurrent polls before it gives up. */
const ANSWER_ATTEMPTS = 4;

/** A token of the Bearer scheme (RFC 6750 §2.1, b64token): what the ping's `Authorization` carries. */
const B64TOKEN = /^[A-Za-z0-9\-._~+/]+=*$/;
/** Any control, format or unassigned code point, or a line or paragraph separator. */
const UNPRINTABLE = /[\p{C}\p{Zl}\p{Zp}]/u;

/** The answer of a successful backchannel authentication request (CIBA §7.3). */
export interface BackchannelResponse {
  auth_req_id: string;
  /** Seconds until the request expires. */
  expires_in: number;
  /** Seconds the client waits between polls. */
  interval: number;
}

/**
 * Checks and stores a backchannel authentication request of an authenticated `client` (CIBA §7.1,
 * §7.2), then mails its user (with config `email`) in the background and records
 * `backchannel_authentication_succeeded`. A refused request stores nothing (the endpoint records
 * the failure).
 * @throws OAuthError `unauthorized_client` (a public client, or one without the CIBA grant),
 *   `invalid_request` (no hint or both, a signed request, a repeated parameter, a bad
 *   `requested_expiry`, `acr_values` or `client_notification_token`, no `openid` scope),
 *   `invalid_scope`, `unknown_user_id` (no active user matches the hint), `invalid_binding_message`,
 *   `invalid_authorization_details` (RFC 9396 §5: `parseAuthorizationDetails`),
 *   429 `temporarily_unavailable` over the client's or the user's quota.
 */
export async function startBackchannelRequest(
  ctx: BackchannelServices,
  client: Client,
  params: Params,
  origin: RequestOrigin,
): Promise<BackchannelResponse> {
  if (client.isPublic) throw new OAuthError('unauthorized_client', 'CIBA is for confidential clients only');
  if (!client.allowedGrantTypes.includes(CIBA_GRANT))
    throw new OAuthError('unauthorized_client', 'the client may not use CIBA');
  // §7.1.1: signed authentication requests are not supported (discovery names no algorithm).
  if (params.has('request')) throw invalidRequest('signed authentication requests are not supported');
  const scopes = validateScopes(params.require('scope'), client, ctx.resources, 'user');
  if (!scopes.includes('openid')) throw invalidRequest('scope must include openid');
  const bindingMessage = params.get('binding_message');
  if (bindingMessage !== undefined && !isShowable(bindingMessage))
    throw new OAuthError(
      'invalid_binding_message',
      `binding_message must be 1 to ${MAX_BINDING_MESSAGE} printable characters`,
    );
  const acrValues = params.get('acr_values');
  if (acrValues !== undefined && (acrValues.length > MAX_ACR_VALUES || UNPRINTABLE.test(acrValues)))
    throw invalidRequest('acr_values is too long or holds control characters');
  const authorizationDetails = parseAuthorizationDetails(params.get('authorization_details'), client, ctx.resources);
  const lifetime = requestedLifetime(params.get('requested_expiry'));
  const notificationToken = params.get('client_notification_token');
  if (client.backchannelTokenDeliveryMode === 'ping') {
    if (notificationToken === undefined) throw invalidRequest('client_notification_token is required in ping mode');
    if (notificationToken.length > MAX_NOTIFICATION_TOKEN || !B64TOKEN.test(notificationToken))
      throw invalidRequest(
        `client_notification_token must be a bearer token of at most ${MAX_NOTIFICATION_TOKEN} characters`,
      );
  }
  const user = await hintedUser(ctx, params);
  const limits = ctx.config.pendingLimits;
  await chargeQuota(
    ctx.limiter,
    'backchannel_quota',
    [
      { key: `ciba:client:${client.clientId}`, limit: limits.backchannelRequestsPerClient },
      // Per user and client, not per user: a client that asks too often holds back its own requests only.
      { key: `ciba:user:${client.clientId}:${user.subjectId}`, limit: limits.backchannelRequestsPerUserAndClient },
    ],
    limits.windowSeconds,
  );
  const authReqId = newHandle();
  const ping = client.backchannelTokenDeliveryMode === 'ping';
  const data: BackchannelRequestData = {
    scopes,
    status: 'pending',
    interval: client.pollingInterval,
    ...(bindingMessage !== undefined ? { bindingMessage } : {}),
    ...(acrValues !== undefined ? { acrValues } : {}),
    ...(authorizationDetails !== undefined ? { authorizationDetails } : {}),
    ...(ping && notificationToken !== undefined ? { notificationToken, authReqId } : {}),
  };
  const now = nowSeconds();
  await ctx.store.records.backchannelRequests.put(authReqId, {
    clientId: client.clientId,
    subjectId: user.subjectId,
    data,
    createdAt: now,
    expiresAt: now + lifetime,
  });
  const email = ctx.email;
  const to = user.claims.email;
  if (email && typeof to === 'string') {
    const lang = typeof user.claims.locale === 'string' ? user.claims.locale : 'en';
    email.inBackground(() => email.notifyBackchannelRequest(to, lang, `${ctx.issuer}${REQUESTS_PAGE_PATH}`));
  }
  ctx.events.emit({
    name: 'backchannel_authentication_succeeded',
    endpoint: 'ciba',
    clientId: client.clientId,
    subjectId: user.subjectId,
    scopes,
    ...origin,
  });
  return { auth_req_id: authReqId, expires_in: lifetime, interval: client.pollingInterval };
}

/** Whether a binding message can be shown as it is: 1 to `MAX_BINDING_MESSAGE` printable characters. */
function isShowable(message: string): boolean {
  return message.length > 0 && [...message].length <= MAX_BINDING_MESSAGE && !UNPRINTABLE.test(message);
}

/**
 * The request's lifetime in seconds: `requested_expiry` (a positive integer, CIBA §7.1) when
 * shorter than `MAX_REQUEST_SECONDS`, else that.
 * @throws OAuthError `invalid_request` for anything but a positive integer.
 */
function requestedLifetime(requested: string | undefined): number {
  if (requested === undefined) return MAX_REQUEST_SECONDS;
  if (!/^[1-9][0-9]{0,8}$/.test(requested)) throw invalidRequest('requested_expiry must be a positive integer');
  return Math.min(Number(requested), MAX_REQUEST_SECONDS);
}

/**
 * The active user of the request's one hint: `login_hint` (a username or an address) or
 * `id_token_hint` (an identity token Sigil issued, checked as end session checks it).
 * @throws OAuthError `invalid_request` (no hint, several, `login_hint_token`, a forged
 *   `id_token_hint`), `unknown_user_id`.
 */
async function hintedUser(ctx: BackchannelServices, params: Params): Promise<User> {
  const hints = ['login_hint', 'id_token_hint', 'login_hint_token'].filter((h) => params.has(h));
  if (hints.length !== 1)
    throw invalidRequest('exactly one of login_hint and id_token_hint is required (login_hint_token is not supported)');
  if (params.has('login_hint_token')) throw invalidRequest('login_hint_token is not supported');
  const loginHint = params.get('login_hint');
  let user: User | undefined;
  if (loginHint !== undefined) {
    user = loginHint.length <= MAX_HINT ? await ctx.users.findByLoginHint(loginHint) : undefined;
  } else {
    const subject = await idTokenHintSubject(params.get('id_token_hint'), ctx.tokens);
    user = subject === undefined ? undefined : await ctx.users.findBySubject(subject);
  }
  if (!user?.isActive) throw new OAuthError('unknown_user_id', 'the hint names no active user');
  return user;
}

/** A request as the approval page lists it. */
export interface ListedRequest {
  /** The request's store key: how the page names it (never its `auth_req_id`). */
  id: string;
  /** The client's display name (`clientName`, else its id). */
  client: string;
  scopes: string[];
  bindingMessage?: string;
  /** The `authorization_details` asked for (RFC 9396 §2), as the client sent them. */
  authorizationDetails?: AuthorizationDetail[];
  /** Approving it takes a second factor this session has not passed yet (`needsSecondFactor`). */
  secondFactor: boolean;
}

/** The signed-in user's requests waiting for an answer, newest first. */
export async function pendingRequestsOf(ctx: BackchannelServices, session: Session): Promise<ListedRequest[]> {
  const rows = await ctx.store.records.backchannelRequests.pendingOf(session.subjectId, nowSeconds(), LISTED);
  return rows.map((r) => ({
    id: r.key,
    client: ctx.clients.get(r.clientId)?.clientName ?? r.clientId,
    scopes: r.data.scopes,
    ...(r.data.bindingMessage !== undefined ? { bindingMessage: r.data.bindingMessage } : {}),
    ...(r.data.authorizationDetails !== undefined ? { authorizationDetails: r.data.authorizationDetails } : {}),
    secondFactor: needsSecondFactor(ctx, session, r.clientId, r.data.acrValues),
  }));
}

/**
 * Whether approving a request of `clientId` with `acrValues` needs a second factor the session has
 * not passed: the request's `acr_values` ask for MFA and the session meets none of its values
 * (`requestsMfa`, as authorize decides), or the client's or the server's policy
 * (`MfaService.requiredFor`) needs MFA. Unknown values ask for nothing, as at authorize.
 */
function needsSecondFactor(
  ctx: BackchannelServices,
  session: Session,
  clientId: string,
  acrValues: string | undefined,
): boolean {
  if (sessionHasMfa(session)) return false;
  return mfaRequired(ctx.mfa.requiredFor(ctx.clients.get(clientId)), session, {
    acrValues: parseAcrValues(acrValues).acr,
  });
}

/**
 * The outcome of an answer: recorded; `gone` (no such request waiting for this user); or, for an
 * approval that needs a second factor first (`needsSecondFactor`), `second-factor` (the user has
 * one: step up, then approve) or `enroll` (the user has none yet).
 */
export type BackchannelAnswer = 'answered' | 'gone' | 'second-factor' | 'enroll';

/**
 * Records the user's answer to the request `id` (its store key): approved with the session's
 * authentication (and, when the request had `acr_values`, the class to assert, OIDC Core
 * §3.1.2.1), or denied; then, in ping mode, pings the client in the background. Only the user
 * the request names may answer it, once, while it waits; an approval that needs a second factor
 * the session has not passed records nothing (`BackchannelAnswer`).
 * @returns `gone` when there is no such request waiting for this user (unknown, another user's,
 *   already answered, expired).
 */
export async function answerBackchannelRequest(
  ctx: BackchannelServices,
  session: Session,
  id: string,
  approve: boolean,
  origin: RequestOrigin,
): Promise<BackchannelAnswer> {
  const requests = ctx.store.records.backchannelRequests;
  for (let attempt = 0; attempt < ANSWER_ATTEMPTS; attempt++) {
    const row = id.length <= 100 ? await requests.findByKey(id) : undefined;
    if (
      !row ||
      row.subjectId !== session.subjectId ||
      row.consumedAt !== null ||
      row.revokedAt !== null ||
      row.expiresAt <= nowSeconds() ||
      row.data.status !== 'pending'
    )
      return 'gone';
    const { acrValues } = row.data;
    if (approve && needsSecondFactor(ctx, session, row.clientId, acrValues))
      return (await ctx.mfa.nextStep(session.subjectId, true)) === 'enroll' ? 'enroll' : 'second-factor';
    const subject = {
      subjectId: session.subjectId,
      authTime: session.authTime,
      amr: session.amr,
      idp: session.idp,
      sid: session.sid,
      ...(session.tenant ? { tenant: session.tenant } : {}),
      ...(acrValues !== undefined ? { acr: assertedAcr(session, parseAcrValues(acrValues).acr) } : {}),
    };
    const answered: BackchannelRequestData = approve
      ? { ...row.data, status: 'approved', subject }
      : { ...row.data, status: 'denied' };
    // A poll between the read and this write makes it fail: read again.
    if (!(await requests.answer(id, row.data, answered))) continue;
    // As Duende audits a CIBA answer: the consent given or refused, the scopes it was about.
    ctx.events.emit({
      name: approve ? 'consent_granted' : 'consent_denied',
      endpoint: 'ciba_approval',
      subjectId: session.subjectId,
      clientId: row.clientId,
      scopes: row.data.scopes,
      ...(approve ? { remembered: false } : {}),
      ...origin,
    });
    const client = ctx.clients.get(row.clientId);
    const { authReqId, notificationToken } = row.data;
    if (client && authReqId !== undefined && notificationToken !== undefined)
      void ping(ctx, client, authReqId, notificationToken);
    return 'answered';
  }
  return 'gone';
}

/**
 * POSTs `{"auth_req_id"}` to the client's notification endpoint with its
 * `client_notification_token` as Bearer (CIBA §10.2), under the SSRF guard for a caller-chosen
 * URL; a failure is logged (the client still learns the answer by polling). Never throws.
 */
async function ping(ctx: BackchannelServices, client: Client, authReqId: string, token: string): Promise<void> {
  const log = ctx.log;
  const uri = client.backchannelClientNotificationEndpoint;
  if (uri === null) return;
  try {
    const status = await postToClientUrl(
      uri,
      JSON.stringify({ auth_req_id: authReqId }),
      { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      {
        callerChosen: hasCallerChosenUrls(client),
        allowLoopback: ctx.config.clientIdMetadataDocuments.allowLoopback,
        timeoutMs: PING_TIMEOUT_MS,
      },
    );
    if (status < 200 || status > 299) log.warn({ clientId: client.clientId, status }, 'CIBA ping refused');
  } catch (err) {
    log.warn(
      { clientId: client.clientId, error: err instanceof Error ? err.message : String(err) },
      'CIBA ping failed',
    );
  }
}
