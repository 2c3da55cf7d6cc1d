/**
 * A user as the protocol layer sees it, wherever it comes from (config, store, a user directory).
 */

/** A user as the protocol layer sees it. */
export interface User {
  subjectId: string;
  username: string;
  tenant: string | null;
  isActive: boolean;
  /** Profile claims; a claim given as an array stays an array. */
  claims: Record<string, unknown>;
  /**
   * Set on a stored user whose password is a temporary one an administrator set: a sign-in with it
   * must choose a new one before any session, code or token is issued. Config-file and directory
   * users never have it.
   */
  passwordChangeRequired?: boolean;
}

/**
 * The claims a user's tokens and userinfo draw from: the profile claims, plus `tenant` for a
 * tenant's user (available to claims mapping where a scope asks for it).
 */
export function claimsOf(user: User): Record<string, unknown> {
  return user.tenant ? { ...user.claims, tenant: user.tenant } : user.claims;
}
