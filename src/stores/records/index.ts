/**
 * The typed repositories of the grant table, one per record kind (the `DefaultGrantStore<T>`
 * pattern of IdentityServer: each owns its key derivation and its data type), built once per store
 * over its `GrantStore` and reached as `store.records`. Only these modules use `GrantStore`.
 */
import type { GrantStore } from '../grant-store.js';
import { AuthorizationCodes } from './authorization-codes.js';
import { BackchannelRequests } from './backchannel-requests.js';
import { Consents } from './consents.js';
import { DeviceCodes } from './device-codes.js';
import { DPoPNonceRecords } from './dpop-nonces.js';
import { EmailLinks } from './email-links.js';
import { GrantFamilies } from './families.js';
import { FederationStates } from './federation-states.js';
import { PendingEnrollments } from './mfa-enrollments.js';
import { PendingSignIns } from './mfa-pending.js';
import { OrganizationInvitationRecords } from './organization-invitations.js';
import { PushedRequests } from './pushed-requests.js';
import { AccessTokens } from './reference-tokens.js';
import { RefreshTokens } from './refresh-tokens.js';
import { SamlLogouts } from './saml-logouts.js';
import { SessionRecords } from './sessions.js';
import { WebAuthnChallenges } from './webauthn-challenges.js';
import { WebAuthnPendingSteps } from './webauthn-pending.js';

/** Every record kind's repository (the replay cache's is `limits/replay-cache.ts`'s own). */
export interface GrantRecords {
  codes: AuthorizationCodes;
  deviceCodes: DeviceCodes;
  backchannelRequests: BackchannelRequests;
  refreshTokens: RefreshTokens;
  accessTokens: AccessTokens;
  consents: Consents;
  sessions: SessionRecords;
  pushedRequests: PushedRequests;
  federationStates: FederationStates;
  pendingSignIns: PendingSignIns;
  enrollments: PendingEnrollments;
  webauthnPending: WebAuthnPendingSteps;
  webauthnChallenges: WebAuthnChallenges;
  dpopNonces: DPoPNonceRecords;
  families: GrantFamilies;
  emailLinks: EmailLinks;
  invitations: OrganizationInvitationRecords;
  samlLogouts: SamlLogouts;
}

/** The repositories over `grants` (once per store: `Store.records`). */
export function grantRecords(grants: GrantStore): GrantRecords {
  return {
    codes: new AuthorizationCodes(grants),
    deviceCodes: new DeviceCodes(grants),
    backchannelRequests: new BackchannelRequests(grants),
    refreshTokens: new RefreshTokens(grants),
    accessTokens: new AccessTokens(grants),
    consents: new Consents(grants),
    sessions: new SessionRecords(grants),
    pushedRequests: new PushedRequests(grants),
    federationStates: new FederationStates(grants),
    pendingSignIns: new PendingSignIns(grants),
    enrollments: new PendingEnrollments(grants),
    webauthnPending: new WebAuthnPendingSteps(grants),
    webauthnChallenges: new WebAuthnChallenges(grants),
    dpopNonces: new DPoPNonceRecords(grants),
    families: new GrantFamilies(grants),
    emailLinks: new EmailLinks(grants),
    invitations: new OrganizationInvitationRecords(grants),
    samlLogouts: new SamlLogouts(grants),
  };
}
