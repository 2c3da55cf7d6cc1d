/**
 * Logout tokens (OIDC Back-Channel Logout 1.0 §2.4): a JWT typed `logout+jwt`, signed with Sigil's
 * keys, for one client and one session.
 */
import type { KeyRing } from '../keys/keys.js';
import type { LogoutDelivery } from '../stores/types.js';

/** The `events` member that makes a JWT a logout token (§2.4). */
export const BACKCHANNEL_LOGOUT_EVENT = 'http://schemas.openid.net/event/backchannel-logout';

/** Seconds a logout token is valid (§2.4 recommends a short lifetime, two minutes). */
export const LOGOUT_TOKEN_LIFETIME = 120;

/**
 * Signs the logout token of a delivery: `iss`, `aud` (the client), `iat`, `exp`, `jti` (the
 * delivery's id, the same on every attempt so the client can drop repeats), `events`, `sub` and
 * `sid`; never `nonce` (§2.4).
 * @param now Unix seconds
 * @throws Error when no signing key is loaded (the delivery is then retried).
 */
export function signLogoutToken(keys: KeyRing, issuer: string, delivery: LogoutDelivery, now: number): string {
  return keys.sign(
    {
      iss: issuer,
      aud: delivery.clientId,
      iat: now,
      exp: now + LOGOUT_TOKEN_LIFETIME,
      jti: delivery.id,
      sub: delivery.subjectId,
      sid: delivery.sid,
      events: { [BACKCHANNEL_LOGOUT_EVENT]: {} },
    },
    'logout+jwt',
  );
}
