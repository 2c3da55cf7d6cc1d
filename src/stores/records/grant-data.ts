/**
 * Shapes that several record kinds keep in their `data`: the user a grant was approved by, and
 * the individual claims a `claims` request asked for. Stored as JSON; the field names are the
 * stored names, so they never change.
 */

/**
 * The user of a grant as stored with it (an authorization code, a refresh token): the
 * authentication, without the profile claims, which are read afresh at each issuance.
 */
export interface GrantSubject {
  subjectId: string;
  /** Unix seconds of the authentication. */
  authTime: number;
  /** Authentication methods (RFC 8176), e.g. `["pwd"]`. */
  amr: string[];
  idp?: string;
  sid?: string;
  tenant?: string;
  /**
   * The authentication context class achieved (OIDC Core §2; values in `users/acr.ts`), set only
   * when the client asked for `acr`; the identity token then carries it.
   */
  acr?: string;
  /** The organization signed in to (`organization=<name>` or the picker), when there was one. */
  organization?: GrantOrganization;
}

/**
 * The organization of a grant: its stable id (`org_id`), its name (`org_name`) and the member's
 * roles (`org_roles`), read at sign-in and again at each refresh.
 */
export interface GrantOrganization {
  id: string;
  name: string;
  roles: string[];
}

/**
 * Claims a `preToken` hook added (DESIGN §6b "Webhooks and hooks"), kept with a code or a refresh
 * token so that the tokens issued from it carry them too; protected claims are already dropped.
 */
export interface AddedClaims {
  accessToken: Record<string, unknown>;
  idToken: Record<string, unknown>;
}

/**
 * The requested claims that travel with a code, a refresh token and an access token (OIDC Core
 * §5.5): claim names only, already filtered to what may be released (see
 * `validation/claims-parameter.ts`, `releasableClaims`). Absent members mean none.
 */
export interface RequestedClaims {
  id_token?: string[];
  userinfo?: string[];
}

/**
 * One authorization details object of Rich Authorization Requests (RFC 9396 §2): its `type` and
 * whatever members its type's schema allowed, kept exactly as the client sent them.
 */
export interface AuthorizationDetail {
  type: string;
  [member: string]: unknown;
}
