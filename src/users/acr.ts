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
 * - `urn:sigil:acr:mfa` (`ACR_MFA`): a second factor after the first (TOTP, a recovery code, or
 *   another kind of `FACTOR_KINDS` in src/mfa/factors.ts), or an upstream sign-in whose `amr`
 *   says `mfa`. It also meets a request for the class of its first factor (`metAcrs`): password
 *   after a password at Sigil, federated after an upstream sign-in, never the other one.
 * `acr_values` is a voluntary list in order of preference (OIDC Core §3.1.2.1), and so are the
 * values of an essential `acr` in the `claims` parameter (§5.5.1.1), which must be met: a sign-in
 * that meets any listed value takes no further step, and the token says the most preferred value
 * it meets (`preferredAcr`). A list that the sign-in does not meet but MFA would asks for MFA
 * (`requestsMfa`): a session without it gets the second step only (step-up), not a new password
 * sign-in.
 */

/** Password sign-in at Sigil's login page. */
export const ACR_PASSWORD = 'urn:sigil:acr:password';
/** Sign-in through an upstream identity provider (federation). */
export const ACR_FEDERATED = 'urn:sigil:acr:federated';

/** A second factor after the first, at Sigil or at the upstream provider. */
export const ACR_MFA = 'urn:sigil:acr:mfa';

/**
 * For each achieved class, the requested classes it meets besides itself. Neither password nor
 * federated meets the other: a federated sign-in says nothing about the user's Sigil password,
 * and a password sign-in nothing about the upstream provider. MFA meets a password request.
 */
export const ACR_SATISFIES: Readonly<Record<string, readonly string[]>> = {
  [ACR_PASSWORD]: [],
  [ACR_FEDERATED]: [],
  [ACR_MFA]: [ACR_PASSWORD],
};

/**
 * The `acr` a session achieved: MFA when its `amr` has `mfa` (RFC 8176), else federated when an
 * upstream provider signed the user in, else a password sign-in at Sigil (`idp` "local").
 * @param session the session's `idp` (provider name, or "local") and `amr`
 */
export function achievedAcr(session: { idp: string; amr?: readonly string[] }): string {
  if (session.amr?.includes('mfa')) return ACR_MFA;
  return session.idp === 'local' ? ACR_PASSWORD : ACR_FEDERATED;
}

/** What the `acr` rules read of a sign-in: where its first factor was (`idp`) and its `amr`. */
export interface AcrSession {
  /** "local" for Sigil's own login, else the upstream provider's name. */
  idp: string;
  amr?: readonly string[];
}

/**
 * The classes a sign-in meets: the class of its first factor (password at Sigil, or federated),
 * and MFA on top of it when its `amr` has `mfa`. An upstream's MFA never meets the password
 * class: it says nothing about the user's Sigil password.
 */
export function metAcrs(session: AcrSession): string[] {
  const first = session.idp === 'local' ? ACR_PASSWORD : ACR_FEDERATED;
  return session.amr?.includes('mfa') ? [ACR_MFA, first] : [first];
}

/**
 * Whether a request asks a sign-in for MFA (step-up): `acr_values`, or an essential `acr`, lists
 * no value the sign-in meets (`metAcrs`) and lists MFA (OIDC Core §3.1.2.1, §5.5.1.1). A list
 * with a met value asks for nothing more.
 * @param session the sign-in so far (its `idp` and `amr`)
 * @param acrValues the plain values of `acr_values` (without `idp:` / `tenant:`)
 * @param essential the values of an essential `acr` claim request, if any
 */
export function requestsMfa(
  session: AcrSession,
  acrValues: readonly string[],
  essential: readonly unknown[] | undefined,
): boolean {
  const met = metAcrs(session);
  const asksMfa = (values: readonly unknown[]) =>
    !values.some((v) => met.includes(v as string)) && values.includes(ACR_MFA);
  return asksMfa(acrValues) || (essential !== undefined && asksMfa(essential));
}

/**
 * The `acr` to assert for a sign-in: the first of the requested values, in order of preference,
 * that it meets (`metAcrs`; OIDC Core §3.1.2.1 `acr_values`, §5.5.1.1 `values`); undefined when
 * it meets none (the caller then asserts what was achieved).
 * @param requested the essential `acr` values, then the plain values of `acr_values`
 */
export function preferredAcr(session: AcrSession, requested: readonly unknown[]): string | undefined {
  const met = metAcrs(session);
  return requested.find((v): v is string => typeof v === 'string' && met.includes(v));
}

/**
 * The `acr` to assert when the client asked for one (OIDC Core §3.1.2.1): the most preferred
 * requested value the sign-in meets (`preferredAcr`), else the class the upstream provider said,
 * when it said one, else the class achieved (`achievedAcr`).
 * @param requested the essential `acr` values, then the plain values of `acr_values`
 */
export function assertedAcr(session: AcrSession & { upstreamAcr?: string }, requested: readonly unknown[]): string {
  return preferredAcr(session, requested) ?? session.upstreamAcr ?? achievedAcr(session);
}

/** Whether an achieved class meets a requested value (the same class, or a stronger one per `ACR_SATISFIES`). */
export function acrMeets(achieved: string, requested: unknown): boolean {
  return (
    requested === achieved || (typeof requested === 'string' && (ACR_SATISFIES[achieved] ?? []).includes(requested))
  );
}

/**
 * The classes a client could achieve by signing in: password and MFA (a second factor, enrolled
 * at sign-in when missing) when local login is enabled for it, federated when at least one upstream provider
 * is configured and allowed for it.
 * @param enableLocalLogin the client's `enableLocalLogin`
 * @param upstreamAllowed how many upstream providers the client may use
 */
export function attainableAcrs(enableLocalLogin: boolean, upstreamAllowed: number): string[] {
  return [...(enableLocalLogin ? [ACR_PASSWORD, ACR_MFA] : []), ...(upstreamAllowed > 0 ? [ACR_FEDERATED] : [])];
}
