/**
 * Authentication Context Class References (OIDC Core §2 `acr`): the values Sigil asserts about a
 * sign-in, derived from how the session was authenticated.
 *
 * The values are URNs in a namespace of Sigil's own, `urn:sigil:acr:<class>`. OIDC Core §2 asks
 * for absolute URIs or RFC 6711 registered names so that values from different providers do not
 * collide at a relying party that talks to several; a URN carries no host that could be mistaken
 * for something to fetch. RFC 8176's tokens (`pwd`, `mfa`, ...) name authentication *methods*
 * and already travel in `amr`; repeating them as `acr` would blur the two claims, and the
 * registered level `"0"` (OIDC Core §2) would understate a password sign-in. The classes:
 * - `urn:sigil:acr:password` (`ACR_PASSWORD`): the user's password at Sigil's own login page.
 * - `urn:sigil:acr:federated` (`ACR_FEDERATED`): sign-in at an upstream identity provider; Sigil
 *   vouches for the link, not for how strongly the upstream authenticated the user.
 * Stronger classes (second factor, passkey) are added by the MFA work; `ACR_SATISFIES` then says
 * which weaker requested classes a stronger achieved one also meets.
 */

/** Password sign-in at Sigil's login page. */
export const ACR_PASSWORD = 'urn:sigil:acr:password';
/** Sign-in through an upstream identity provider (federation). */
export const ACR_FEDERATED = 'urn:sigil:acr:federated';

/**
 * For each achieved class, the requested classes it meets besides itself. Today neither class
 * meets the other: a federated sign-in says nothing about the user's Sigil password, and a
 * password sign-in nothing about the upstream provider.
 */
export const ACR_SATISFIES: Readonly<Record<string, readonly string[]>> = {
  [ACR_PASSWORD]: [],
  [ACR_FEDERATED]: [],
};

/**
 * The `acr` a session achieved: federated when an upstream provider signed the user in, else a
 * password sign-in at Sigil (`idp` "local").
 * @param session the session's `idp` (provider name, or "local")
 */
export function achievedAcr(session: { idp: string }): string {
  return session.idp === 'local' ? ACR_PASSWORD : ACR_FEDERATED;
}

/** Whether an achieved class meets a requested value (the same class, or a stronger one per `ACR_SATISFIES`). */
export function acrMeets(achieved: string, requested: unknown): boolean {
  return requested === achieved || (typeof requested === 'string' && (ACR_SATISFIES[achieved] ?? []).includes(requested));
}

/**
 * The classes a client could achieve by signing in: password when local login is enabled for it,
 * federated when at least one upstream provider is configured and allowed for it.
 * @param enableLocalLogin the client's `enableLocalLogin`
 * @param upstreamAllowed how many upstream providers the client may use
 */
export function attainableAcrs(enableLocalLogin: boolean, upstreamAllowed: number): string[] {
  return [...(enableLocalLogin ? [ACR_PASSWORD] : []), ...(upstreamAllowed > 0 ? [ACR_FEDERATED] : [])];
}
