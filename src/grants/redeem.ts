/**
 * The common end of single-use grants approved by a user (authorization code, device code): the
 * user must still be active, the stored grant is consumed atomically (of concurrent redemptions
 * exactly one goes on), then the tokens are issued in the grant's family.
 */
import { invalidGrant } from '../protocol/errors.js';
import { nowSeconds } from '../crypto/handles.js';
import type { RefreshPlan, Subject } from '../tokens/tokens.js';
import type { RequestedClaims } from '../stores/records/grant-data.js';
import type { Client } from '../clients/registry.js';
import type { Services } from '../services.js';
import { newRefreshPlan } from './password.js';
import type { GrantOutcome } from './registry.js';
import { claimsOf } from '../users/users.js';
import { scopesForResources } from '../resources/resource-indicators.js';
import type { AddedClaims, AuthorizationDetail } from '../stores/records/grant-data.js';
import { askPreToken, mergeAddedClaims } from './pre-token.js';

/** The services this module uses. */
export type RedeemServices = Pick<Services, 'hooks' | 'resources' | 'tokens' | 'users'>;

/** What the stored grant holds about its approval. */
export interface Approval {
  subject: Omit<Subject, 'claims'>;
  scopes: string[];
  nonce?: string;
  /** Individual claims the `claims` parameter asked for and may be released (OIDC Core §5.5). */
  requestedClaims?: RequestedClaims;
  /** The API resources (names) the approval was limited to (RFC 8707 §2.1), if any. */
  resources?: string[];
  /** The claims the `preToken` hook added when the approval was made (authorization endpoint). */
  hookClaims?: AddedClaims;
  /** The authorization details approved (RFC 9396 §2): the tokens and the response carry them. */
  authorizationDetails?: AuthorizationDetail[];
}

/**
 * The stored single-use grant being redeemed: its family, and how to consume it (its repository's atomic
 * `consume`).
 */
export interface RedeemedGrant {
  familyId: string;
  /** Consumes the grant at `now` (Unix seconds); false when it was consumed, revoked or expired first. */
  consume(now: number): Promise<boolean>;
}

/** How the tokens of a redemption are constrained. */
export interface Redemption {
  /** DPoP key thumbprint to bind them to (RFC 9449 §5). */
  jkt?: string;
  /** The API resources (names) the access token is for (RFC 8707 §2.2); absent: no limit. */
  targets?: string[];
  /**
   * The authorization details the access token carries, some of the approval's (RFC 9396 §6.1);
   * absent: all of the approval's. A new refresh token keeps the approval's either way (§7.2).
   */
  authorizationDetails?: AuthorizationDetail[];
  /**
   * The grant type to ask the `preToken` hook about, before the grant is consumed (the device
   * code); absent when it was asked where the approval was made (the authorization code).
   */
  preToken?: string;
}

/**
 * Redeems `grant` for `client`.
 * @param onLostRace called when another request consumed the grant first (reuse handling)
 * @param redemption the DPoP binding and resource indicators of the token request
 * @throws OAuthError `invalid_grant` when the user is gone or inactive, the grant was used, or the
 *   `preToken` hook denies;
 *   `invalid_target` when the targets define none of the approved API scopes.
 */
export async function redeemApproval(
  ctx: RedeemServices,
  client: Client,
  grant: RedeemedGrant,
  approval: Approval,
  onLostRace: () => Promise<void>,
  redemption: Redemption = {},
): Promise<GrantOutcome> {
  const scopes = scopesForResources(approval.scopes, redemption.targets, ctx.resources);
  const now = nowSeconds();
  const user = await ctx.users.findBySubject(approval.subject.subjectId);
  if (!user?.isActive) throw invalidGrant('the user is no longer active');
  const subject = { ...approval.subject, claims: claimsOf(user) };
  const asked =
    redemption.preToken === undefined
      ? undefined
      : await askPreToken(ctx, client, subject, scopes, redemption.preToken);
  const hookClaims = mergeAddedClaims(approval.hookClaims, asked);
  if (!(await grant.consume(now))) {
    await onLostRace();
    throw invalidGrant('the grant was already used');
  }
  const details = redemption.authorizationDetails ?? approval.authorizationDetails;
  const response = await ctx.tokens.issue({
    client,
    scopes,
    subject,
    familyId: grant.familyId,
    ...(hookClaims ? { hookClaims } : {}),
    refresh: refreshPlan(newRefreshPlan(client, approval.scopes, now, approval.resources), approval),
    ...(redemption.jkt !== undefined ? { jkt: redemption.jkt } : {}),
    ...(redemption.targets ? { audiences: redemption.targets } : {}),
    identityToken: true,
    ...(approval.nonce !== undefined ? { nonce: approval.nonce } : {}),
    ...(approval.requestedClaims ? { requestedClaims: approval.requestedClaims } : {}),
    ...(details ? { authorizationDetails: details } : {}),
  });
  return { response, subjectId: user.subjectId };
}

/** `plan` keeping the approval's authorization details, whatever the access token carries (RFC 9396 §7.2). */
function refreshPlan(plan: ReturnType<typeof newRefreshPlan>, approval: Approval): RefreshPlan {
  return plan.kind === 'new' && approval.authorizationDetails
    ? { ...plan, authorizationDetails: approval.authorizationDetails }
    : plan;
}
