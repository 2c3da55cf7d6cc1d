/**
 * Starting a pending authorization request (its record: stores/records/interactions.ts): the
 * quotas a new one counts against, and what of the validated request it keeps for the pages.
 */
import type { Services } from '../services.js';
import { addressQuotaKey, chargeQuota } from '../limits/request-quota.js';
import type { Interaction, PendingRequest } from '../stores/records/interactions.js';
import type { AuthorizeRequest } from '../validation/authorize-request.js';

/** The services this module uses. */
export type InteractionsServices = Pick<Services, 'config' | 'limiter'>;

/**
 * Counts a new pending request against its browser's and its address's quota (config
 * `pendingLimits`: `interactionsPerBrowser`, `interactionsPerAddress` per `windowSeconds`). Call it
 * before `Interactions.create` for a request that no one has authenticated yet.
 * @param browser the browser id's hash (`SessionService.browserId`)
 * @param ip the request's address
 * @throws OAuthError 429 `temporarily_unavailable` with `Retry-After` when over either limit.
 */
export async function takeInteractionQuota(ctx: InteractionsServices, browser: string, ip: string): Promise<void> {
  const limits = ctx.config.pendingLimits;
  await chargeQuota(
    ctx.limiter,
    'interaction_quota',
    [
      { key: `interaction:browser:${browser}`, limit: limits.interactionsPerBrowser },
      { key: `interaction:address:${addressQuotaKey(ip)}`, limit: limits.interactionsPerAddress },
    ],
    limits.windowSeconds,
  );
}

/** A pending request as pages and outcomes hold it: its id and its record. */
export interface Pending {
  id: string;
  interaction: Interaction;
}

/** What a pending request keeps of its validated authorization request for the pages. */
export function pendingRequest(req: AuthorizeRequest): PendingRequest {
  return {
    clientId: req.client.clientId,
    target: { redirectUri: req.redirectUri, mode: req.mode, ...(req.state !== undefined ? { state: req.state } : {}) },
    scopes: req.scopes,
    tenant: req.acr.tenant,
    acrValues: req.acr.acr,
    ...(req.uiLocales !== undefined ? { uiLocales: req.uiLocales } : {}),
    ...(req.loginHint !== undefined ? { loginHint: req.loginHint } : {}),
    ...(req.essentialAcr !== undefined ? { essentialAcr: req.essentialAcr } : {}),
    ...(req.organization !== undefined ? { organization: req.organization } : {}),
    ...(req.authorizationDetails !== undefined ? { authorizationDetails: req.authorizationDetails } : {}),
  };
}
