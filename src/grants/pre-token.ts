/**
 * The `preToken` hook at the token endpoint (DESIGN §6b "Webhooks and hooks"): asked by every grant
 * that issues tokens there (client_credentials, refresh_token, device code, password, token
 * exchange, the JWT bearer grant of ID-JAG and extension grants), after the grant's own checks and before anything single-use is
 * consumed, so that a denial (or a failed call with `onFailure: deny`) leaves the code, device code
 * or refresh token as it was. The authorization code flow asks it at the authorization endpoint
 * instead, where a denial can reach the client as `access_denied` (endpoints/authorize.ts); the
 * code carries the added claims to the token request.
 */
import type { Client } from '../clients/registry.js';
import { invalidGrant } from '../protocol/errors.js';
import type { Services } from '../services.js';
import type { AddedClaims } from '../stores/records/grant-data.js';
import type { Subject } from '../tokens/tokens.js';
import type { PreTokenEvent } from '../webhooks/hooks.js';

/** The event `preToken` gets for tokens of `client` (and `subject`, if a user's) with `scopes`. */
export function preTokenEvent(
  client: Client,
  subject: Subject | undefined,
  scopes: readonly string[],
  grantType: string,
): PreTokenEvent {
  const organization = subject?.organization;
  return {
    client: { clientId: client.clientId, clientName: client.clientName ?? null },
    subject: subject?.subjectId ?? null,
    scopes: [...scopes],
    grantType,
    organization: organization ? { id: organization.id, name: organization.name } : null,
    claims: subject?.claims ?? {},
  };
}

/**
 * Asks `preToken` about the tokens a grant is about to issue.
 * @returns the added claims (undefined without a preToken hook, so that nothing is stored)
 * @throws OAuthError `invalid_grant` with the hook's description when it denies (RFC 6749 §5.2),
 *   or with a generic one when the call failed and the hook's `onFailure` is `deny`
 */
export async function askPreToken(
  ctx: Pick<Services, 'hooks'>,
  client: Client,
  subject: Subject | undefined,
  scopes: readonly string[],
  grantType: string,
): Promise<AddedClaims | undefined> {
  if (!ctx.hooks.has('preToken')) return undefined;
  const verdict = await ctx.hooks.preToken(preTokenEvent(client, subject, scopes, grantType));
  if (!verdict.allowed) throw invalidGrant(verdict.description);
  return { accessToken: verdict.accessToken, idToken: verdict.idToken };
}

/**
 * The claims of a refresh: those the grant was made with, and over them what the hook added now
 * (a hook that failed with `onFailure: continue` adds nothing, and the grant's stay).
 */
export function mergeAddedClaims(kept: AddedClaims | undefined, now: AddedClaims | undefined): AddedClaims | undefined {
  if (!kept || !now) return now ?? kept;
  return { accessToken: { ...kept.accessToken, ...now.accessToken }, idToken: { ...kept.idToken, ...now.idToken } };
}
