/**
 * The authorization endpoint, `GET`/`POST /connect/authorize` (RFC 6749 §3.1, §4.1, §4.2; OIDC Core
 * §3.1.2, §3.2.2, §3.3.2): validate the request, decide what it needs (interaction/decide.ts: sign-in,
 * an upstream provider, a second factor, consent; OIDC Core §3.1.2.3–§3.1.2.4), then issue the
 * authorization code and the tokens the response type asks for. A request waiting for a page resumes at
 * `/connect/authorize/resume?interaction=<id>`.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Services } from '../services.js';
import { browserOf, sessionOf } from '../interaction/browser.js';
import { AdminError } from '../admin/errors.js';
import { OAuthError } from '../protocol/errors.js';
import { Params } from '../protocol/params.js';
import { newFamilyId, newHandle, nowSeconds } from '../crypto/handles.js';
import { PROTOCOL_CLAIMS, type Subject } from '../tokens/tokens.js';
import { expiredPage, sendErrorPage } from '../ui/error-page.js';
import { language } from '../ui/language.js';
import { claimsOf, type User } from '../users/users.js';
import type { Session } from '../users/sessions.js';
import { DirectoryUnavailable } from '../users/directory.js';
import { AuthorizeError, type AuthorizeRequest, validateAuthorizeRequest } from '../validation/authorize-request.js';
import { releasableClaims } from '../validation/claims-parameter.js';
import { preTokenEvent } from '../grants/pre-token.js';
import type { AddedClaims } from '../stores/records/grant-data.js';
import { sendErrorToClient, sendToClient } from '../http/authorization-response.js';
import { browserEndpoint, toInteractionPage } from './browser-endpoint.js';
import { decide, pageOf } from '../interaction/decide.js';
import { decisionFacts } from '../interaction/facts.js';
import { joinIfNew, type OrganizationJoinServices } from '../interaction/organization-join.js';
import { type Pending, pendingRequest } from '../interaction/interactions.js';
import type { AuthorizationCodeData } from '../stores/records/authorization-codes.js';
import { originOf } from '../http/request.js';
import type { ResponseDelivery } from '../http/authorization-response.js';
import type { AuthorizeValidationServices } from '../validation/authorize/services.js';
import type { FactsServices } from '../interaction/facts.js';
import type { InteractionsServices } from '../interaction/interactions.js';
import type { ErrorPageServices } from '../ui/error-page.js';
import type { BrowserServices } from '../interaction/browser.js';

/** The authorization endpoint (RFC 6749 §3.1). */
export const AUTHORIZE_PATH = '/connect/authorize';

/** The services this module uses. */
export type AuthorizeEndpointServices = Pick<
  Services,
  'basePath' | 'events' | 'hooks' | 'interactions' | 'logout' | 'resources' | 'sessions' | 'store' | 'tokens' | 'users'
> &
  AuthorizeValidationServices &
  BrowserServices &
  ErrorPageServices &
  FactsServices &
  InteractionsServices &
  OrganizationJoinServices &
  ResponseDelivery;

/** Registers `/connect/authorize` (GET, POST) and `/connect/authorize/resume` (GET). */
export function authorizeEndpoint(app: FastifyInstance, ctx: AuthorizeEndpointServices): void {
  browserEndpoint(app, ctx, AUTHORIZE_PATH, (request, reply, params) =>
    authorize(ctx, request, reply, params, undefined),
  );

  app.get('/connect/authorize/resume', async (request, reply) => {
    const id = (request.query as Record<string, unknown>).interaction;
    const browser = browserOf(ctx, request, reply);
    const interaction = typeof id === 'string' ? await ctx.interactions.get(id, browser) : undefined;
    if (typeof id !== 'string' || !interaction) return expiredPage(ctx, request, reply);
    return authorize(ctx, request, reply, Params.fromRecord(interaction.params), { id, interaction });
  });
}

async function authorize(
  ctx: AuthorizeEndpointServices,
  request: FastifyRequest,
  reply: FastifyReply,
  params: Params,
  pending: Pending | undefined,
): Promise<FastifyReply> {
  let req: AuthorizeRequest;
  try {
    // A resumed request's parameters were validated (and a pushed request taken) when it started.
    req = await validateAuthorizeRequest(ctx, params, pending ? 'resume' : 'authorize', request.ip);
  } catch (err) {
    if (!(err instanceof AuthorizeError)) throw err;
    ctx.events.emit({
      name: 'token_issue_failed',
      endpoint: 'authorize',
      error: err.error.code,
      ...(err.error.description ? { errorDescription: err.error.description } : {}),
    });
    if (err.target) return sendErrorToClient(ctx, reply, err.target, err.error);
    // The request's ui_locales wherever it came from: the query, a POSTed form, a resumed request.
    // The way back: the home page of the client the request names, if it is registered. A quota
    // (client metadata document fetches) answers 429 with Retry-After; everything else 400.
    const lang = language(request, params.getAll('ui_locales')[0]);
    return sendErrorPage(
      ctx,
      reply,
      err.error,
      lang,
      err.error.status === 429 ? 429 : 400,
      params.getAll('client_id')[0],
    );
  }
  const fail = (code: string, description: string) => {
    ctx.events.emit({ name: 'token_issue_failed', endpoint: 'authorize', clientId: req.client.clientId, error: code });
    return sendErrorToClient(ctx, reply, req, new OAuthError(code, description));
  };

  const browser = browserOf(ctx, request, reply);
  const session = await sessionOf(ctx, request);
  let user: User | undefined;
  try {
    user = session ? await ctx.users.findBySubject(session.subjectId) : undefined;
  } catch (err) {
    // The session's user is in a directory that cannot answer: the client hears so (RFC 6749 §4.1.2.1).
    if (!(err instanceof DirectoryUnavailable)) throw err;
    request.log.error({ err, directory: err.directory, reason: err.reason }, 'user directory unavailable');
    return fail(err.code, err.description ?? 'sign-in is temporarily unavailable');
  }

  const decision = decide(
    req,
    session,
    user,
    req.client,
    await decisionFacts(ctx, req, session, user, pending?.interaction),
  );
  if (decision.kind === 'error') return fail(decision.error, decision.description);
  if (decision.kind !== 'issue') return toPage(ctx, request, reply, req, browser, pending, pageOf(decision));
  // decide issues only for the session of an active user.
  const live = session as Session;
  const liveUser = user as User;
  if (pending && !(await ctx.interactions.finish(pending.id))) return expiredPage(ctx, request, reply);

  const organization = decision.organization;
  let roles: string[] | undefined;
  try {
    roles = organization && (await joinIfNew(ctx, organization, live.subjectId, req.client.clientId));
  } catch (err) {
    // The organization was deleted between the decision and the membership.
    if (!(err instanceof AdminError)) throw err;
    return fail('access_denied', 'the organization is no longer available');
  }
  const subject: Subject = {
    subjectId: live.subjectId,
    authTime: live.authTime,
    amr: live.amr,
    idp: live.idp,
    sid: live.sid,
    claims: claimsOf(liveUser),
    ...(live.tenant ? { tenant: live.tenant } : {}),
    ...(decision.acr !== undefined ? { acr: decision.acr } : {}),
    ...(organization && roles ? { organization: { id: organization.id, name: organization.name, roles } } : {}),
  };
  const scopes = decision.scopes;
  // The preToken hook of the authorization code flow (and of implicit and hybrid responses) is
  // asked here, once the user is signed in and consented, not at the token endpoint: its denial
  // then reaches the client as access_denied with the hook's description, and no code exists to
  // be refused later. The code carries the added claims to the token request, and the refresh
  // token they give keeps them.
  let hookClaims: AddedClaims | undefined;
  if (ctx.hooks.has('preToken')) {
    const grantType = req.responseType.split(' ').includes('code') ? 'authorization_code' : 'implicit';
    const verdict = await ctx.hooks.preToken(preTokenEvent(req.client, subject, scopes, grantType));
    if (!verdict.allowed) return fail('access_denied', verdict.description);
    hookClaims = { accessToken: verdict.accessToken, idToken: verdict.idToken };
  }
  const fields = await issue(ctx, req, subject, scopes, hookClaims);
  // The client now takes part in the session: it is told when the session ends (back-/front-channel logout).
  await ctx.logout.participate(live, ctx.sessions.expiryOf(live), req.client);
  ctx.events.emit({
    name: 'token_issued',
    endpoint: 'authorize',
    clientId: req.client.clientId,
    subjectId: subject.subjectId,
    scopes,
    tokenTypes: Object.keys(fields).filter((k) => ['code', 'access_token', 'id_token'].includes(k)),
    ...originOf(request),
  });
  return sendToClient(ctx, reply, req, fields);
}

/**
 * Sends the browser to a page for the request (`toInteractionPage`); over the quota of pending
 * requests, the 429 error page, recorded as a refused authorization.
 */
function toPage(
  ctx: AuthorizeEndpointServices,
  request: FastifyRequest,
  reply: FastifyReply,
  req: AuthorizeRequest,
  browser: string,
  pending: Pending | undefined,
  page: string,
): Promise<FastifyReply> {
  const create = () =>
    ctx.interactions.create(req.client.clientId, { request: pendingRequest(req), params: req.params, browser });
  return toInteractionPage(ctx, request, reply, browser, pending, page, create, (err) => {
    ctx.events.emit({
      name: 'token_issue_failed',
      endpoint: 'authorize',
      clientId: req.client.clientId,
      error: err.code,
    });
    return sendErrorPage(ctx, reply, err, language(request, req.uiLocales), err.status, req.client.clientId);
  });
}

/**
 * Issues what the response type asks for: a code (stored hashed, single use), an access token
 * (browser-allowed clients only, no refresh token), an identity token with `nonce`, `at_hash`,
 * `c_hash` (OIDC Core §3.3.2.11); each with the claims the preToken hook added (`hookClaims`).
 */
async function issue(
  ctx: AuthorizeEndpointServices,
  req: AuthorizeRequest,
  subject: Subject,
  scopes: string[],
  hookClaims: AddedClaims | undefined,
): Promise<Record<string, string>> {
  const now = nowSeconds();
  const parts = req.responseType.split(' ');
  const familyId = newFamilyId();
  const fields: Record<string, string> = {};
  const client = req.client;
  // Without a consent page in the way, the client's allowed identity scopes bound what a claims
  // request may add; with one, the consented scopes do (see releasableClaims).
  const beyondScopes = !client.requireConsent && !req.prompt.has('consent');
  const requestedClaims = releasableClaims(
    req.claims,
    ctx.resources.identityClaimNames(scopes),
    ctx.resources.identityClaimNames(client.allowedScopes),
    beyondScopes,
    (name) => PROTOCOL_CLAIMS.has(name),
  );
  if (parts.includes('code')) {
    const code = newHandle();
    const { claims: _claims, ...bare } = subject;
    const data: AuthorizationCodeData = {
      redirectUri: req.redirectUri,
      scopes,
      subject: bare,
      ...(req.nonce !== undefined ? { nonce: req.nonce } : {}),
      ...(requestedClaims ? { requestedClaims } : {}),
      ...(req.codeChallenge !== undefined
        ? { codeChallenge: req.codeChallenge, codeChallengeMethod: req.codeChallengeMethod }
        : {}),
      ...(req.dpopJkt !== undefined ? { dpopJkt: req.dpopJkt } : {}),
      ...(req.resources !== undefined ? { resources: req.resources } : {}),
      ...(hookClaims ? { hookClaims } : {}),
      ...(req.authorizationDetails ? { authorizationDetails: req.authorizationDetails } : {}),
    };
    await ctx.store.records.codes.issue(code, {
      clientId: client.clientId,
      subjectId: subject.subjectId,
      familyId,
      sessionId: subject.sid ?? null,
      data,
      createdAt: now,
      expiresAt: now + client.authorizationCodeLifetime,
    });
    fields.code = code;
  }
  const browserScopes = scopes.filter((s) => s !== 'offline_access');
  if (parts.includes('token')) {
    fields.access_token = await ctx.tokens.accessToken(
      {
        client,
        scopes: browserScopes,
        subject,
        familyId,
        ...(requestedClaims ? { requestedClaims } : {}),
        ...(hookClaims ? { hookClaims } : {}),
      },
      () => familyId,
      now,
    );
    fields.token_type = 'Bearer';
    fields.expires_in = String(client.accessTokenLifetime);
    fields.scope = browserScopes.join(' ');
  }
  if (parts.includes('id_token')) {
    // OIDC Core §5.4: with no access token, the identity scopes' claims go into the identity token.
    // OIDC Core §5.5: individual claims asked for in the identity token join them.
    const names = req.responseType === 'id_token' ? ctx.resources.identityClaimNames(scopes) : new Set<string>();
    for (const name of requestedClaims?.id_token ?? []) names.add(name);
    const claims = await ctx.tokens.releasedClaims(subject, client, names, 'id_token');
    fields.id_token = await ctx.tokens.identityToken(client, subject, now, {
      nonce: req.nonce,
      scopes,
      claims,
      ...(hookClaims ? { added: hookClaims.idToken } : {}),
      ...(fields.access_token ? { accessToken: fields.access_token } : {}),
      ...(fields.code ? { code: fields.code } : {}),
    });
  }
  return fields;
}
