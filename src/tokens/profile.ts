/**
 * The profile service: a library user's say over which user claims Sigil releases and
 * whether a user is still active, as Duende IdentityServer's `IProfileService`
 * (`GetProfileDataAsync`, `IsActiveAsync`) does. Optional: without one, Sigil releases the
 * requested claims from the user's profile (config, store or directory) and asks only the user's
 * `isActive`. The user service applies `isActive` (users/users.ts), the token service `getProfileData`.
 */
import type { Client } from '../clients/registry.js';

/** Where the released claims go: a token or userinfo answer of a client, or a SAML assertion. */
export type ProfileCaller = 'id_token' | 'userinfo' | 'access_token' | 'saml_assertion';

/** What every profile request carries. */
interface ProfileRequestBase {
  /** The user's subject (`sub`). */
  subject: string;
  /**
   * The claim names the granted scopes and the `claims` parameter ask for here (OIDC Core §5.4,
   * §5.5; for access tokens the API scopes' and resources' `userClaims`; for a SAML assertion the
   * claims of the service provider's `attributes`). Never empty: with nothing requested the service
   * is not called.
   */
  requestedClaims: string[];
  /** The user's claims as Sigil knows them (config, store or directory), to start from. */
  userClaims: Readonly<Record<string, unknown>>;
}

/** Claims for a client's token or userinfo answer. */
export interface ClientProfileRequest extends ProfileRequestBase {
  caller: 'id_token' | 'userinfo' | 'access_token';
  /** The client the claims are released to. */
  client: Readonly<Client>;
}

/** Claims for the attributes of a SAML assertion (they become attributes by the SP's `attributes` map). */
export interface SamlProfileRequest extends ProfileRequestBase {
  caller: 'saml_assertion';
  /** The SAML service provider the assertion goes to. */
  serviceProvider: { entityId: string };
}

/** What the profile service is asked for one token, userinfo answer or SAML assertion (tell them by `caller`). */
export type ProfileDataRequest = ClientProfileRequest | SamlProfileRequest;

/**
 * A library user's profile service, passed as `createSigil(config, { profileService })`.
 * Errors it throws end the request: an `OAuthError` is answered as such, anything else as 500.
 */
export interface ProfileService {
  /**
   * The claims to release (JSON values; an array stays an array). Sigil drops protocol claims
   * (`sub`, `iss`, `aud`, `scope`, ...: `PROTOCOL_CLAIMS`) from the answer; it does not filter
   * further, so the service may release fewer or other claims than requested.
   */
  getProfileData(req: ProfileDataRequest): Promise<Record<string, unknown>>;
  /**
   * Whether the user may still sign in and get tokens, asked on top of the user's own `isActive`
   * wherever Sigil looks a user up (the user service folds it in): false refuses a sign-in as a
   * wrong password would, and ends the session's authorizations, code and device code redemption
   * and refresh (`invalid_grant`, RFC 6749 §5.2), userinfo (`invalid_token`, RFC 6750 §3.1) and
   * introspection (`active: false`, RFC 7662 §2.2) for their tokens.
   */
  isActive?(subject: string): Promise<boolean>;
}
