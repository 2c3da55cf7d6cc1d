/**
 * Microsoft identity platform sign-ins. The multi-tenant authorities (`common`, `organizations`,
 * `consumers`) publish the issuer `https://login.microsoftonline.com/{tenantid}/v2.0`: an identity
 * token is accepted only when its `iss` is that template with the token's own `tid` ("Validate
 * the issuer", Microsoft identity platform ID tokens), and `organizations` refuses the personal
 * accounts' tenant while `consumers` takes only it. The code exchange and the token's checks
 * (audience, nonce, times, the issuer so computed) are oauth4webapi's.
 */
import { decodeJwt } from 'jose';
import * as oauth from 'oauth4webapi';
import type { IdentityProviderConfig } from '../config/schema.js';
import { microsoftTenant } from './presets.js';

/** The tenant of personal Microsoft accounts (the `tid` of every `consumers` sign-in). */
export const CONSUMERS_TENANT = '9188040d-6c67-4c5b-b112-36a304b66dad';
const TENANT_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** What the exchange at the callback needs. */
export interface MicrosoftExchange {
  /** The discovered metadata (its `issuer` possibly a `{tenantid}` template). */
  metadata: oauth.AuthorizationServer;
  callbackUrl: URL;
  redirectUri: string;
  state: string;
  nonce: string;
  codeVerifier: string;
  /** Plain http to a loopback authority (tests). */
  insecure: boolean;
}

/**
 * Redeems the code at a Microsoft authority and returns the identity token's validated claims.
 * @throws Error for an error response, a wrong `state`, a token whose `tid` is not a tenant id, whose
 *   `iss` is not its tenant's issuer, or a tenant the configured one does not admit.
 */
export async function microsoftCodeGrant(
  p: IdentityProviderConfig,
  x: MicrosoftExchange,
): Promise<Record<string, unknown>> {
  const client: oauth.Client = { client_id: p.clientId };
  const params = oauth.validateAuthResponse(x.metadata, client, x.callbackUrl, x.state);
  const options = { [oauth.allowInsecureRequests]: x.insecure, signal: AbortSignal.timeout(10_000) };
  const response = await oauth.authorizationCodeGrantRequest(
    x.metadata,
    client,
    oauth.ClientSecretPost(p.clientSecret ?? ''),
    params,
    x.redirectUri,
    x.codeVerifier,
    options,
  );
  // The tenant is read before the checks only to name the issuer they expect; the checks then
  // refuse a token whose iss is not that tenant's.
  const tid = tenantOf(await response.clone().text());
  const issuer = x.metadata.issuer.replace('{tenantid}', tid);
  const result = await oauth.processAuthorizationCodeResponse({ ...x.metadata, issuer }, client, response, {
    expectedNonce: x.nonce,
    requireIdToken: true,
  });
  const claims = oauth.getValidatedIdTokenClaims(result);
  if (!claims) throw new Error('the Microsoft answer has no identity token');
  if (!tenantAdmitted(microsoftTenant(p), tid)) throw new Error(`tenant ${tid} is not admitted`);
  return { ...claims };
}

/** The `tid` of the token answer's identity token. @throws Error when there is none or it is no tenant id. */
function tenantOf(body: string): string {
  let tid: unknown;
  try {
    const idToken = (JSON.parse(body) as { id_token?: unknown }).id_token;
    tid = typeof idToken === 'string' ? decodeJwt(idToken).tid : undefined;
  } catch {
    tid = undefined;
  }
  if (typeof tid !== 'string' || !TENANT_ID.test(tid)) throw new Error('the identity token has no tenant id (tid)');
  return tid;
}

/** Whether the configured tenant admits a sign-in of tenant `tid`. */
function tenantAdmitted(tenant: string, tid: string): boolean {
  if (tenant === 'common') return true;
  if (tenant === 'organizations') return tid !== CONSUMERS_TENANT;
  if (tenant === 'consumers') return tid === CONSUMERS_TENANT;
  // A tenant given by id must be the token's; one given by domain is checked by the issuer.
  return !TENANT_ID.test(tenant) || tenant.toLowerCase() === tid;
}
