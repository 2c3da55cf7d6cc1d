/**
 * The FAPI 2.0 Security Profile (final) for a `profile: "fapi2"` client: its algorithms, the
 * settings it implies, the settings it refuses, and the algorithm its tokens are signed with.
 */
import { ASSERTION_ALGORITHMS, type SigningAlgorithm, type TokenEndpointAuthMethod } from './protocol.js';

/**
 * The signing algorithms of the FAPI 2.0 Security Profile (§5.4.1): what a `profile: "fapi2"`
 * client may sign its assertions, request objects and DPoP proofs with, and what Sigil signs its
 * tokens with (RS256 is not among them).
 */
export const FAPI2_ALGORITHMS = ['PS256', 'ES256', 'EdDSA'] as const;

/** Per-client security profiles (`profile`): `fapi2` is the FAPI 2.0 Security Profile (final), §5.3.2. */
export const CLIENT_PROFILES = ['fapi2'] as const;

/** Grant types a `fapi2` client may not have: only `response_type=code`, and no password grant (RFC 9700 §2.4). */
const FAPI2_REFUSED_GRANTS = ['implicit', 'hybrid', 'password'];
/** The longest authorization code lifetime of a `fapi2` client, in seconds (FAPI 2.0 SP §5.3.2.1). */
export const FAPI2_MAX_CODE_LIFETIME = 60;

/** The client settings the `fapi2` profile constrains, as written (unset: undefined). */
interface ProfiledSettings {
  profile: 'fapi2' | null;
  requireClientSecret: boolean;
  allowedGrantTypes: string[];
  requirePkce: boolean;
  allowPlainTextPkce: boolean;
  allowAccessTokensViaBrowser: boolean;
  authorizationCodeLifetime?: number | undefined;
  tokenEndpointAuthMethod?: TokenEndpointAuthMethod | null | undefined;
  tokenEndpointAuthSigningAlgorithms?: (typeof ASSERTION_ALGORITHMS)[number][] | undefined;
  requirePushedAuthorizationRequests?: boolean | undefined;
  requireDPoP?: boolean | undefined;
}

/**
 * The settings of a `profile: "fapi2"` client that the FAPI 2.0 Security Profile (final) forbids,
 * each as [field, why]. Settings the profile requires and the client leaves unset are implied
 * (`withProfileDefaults`); only explicit contradictions are refused: a public client (§5.3.2.1:
 * confidential clients only), `implicit`/`hybrid` (§5.3.2.2: `response_type=code` only) or
 * `password` grants (RFC 9700 §2.4), PKCE off or plain (§5.3.2.2: S256), access tokens from the
 * authorization endpoint, a code lifetime over 60 s (§5.3.2.1), an authentication method other
 * than `private_key_jwt` (§5.3.2.1; mTLS comes in a later step), assertion algorithms outside
 * PS256/ES256/EdDSA (§5.4.1), PAR or DPoP switched off (§5.3.2.2, §5.3.2.1: sender-constrained tokens).
 * @returns the contradictions, empty for a conforming (or non-`fapi2`) client.
 */
export function fapi2Contradictions(c: ProfiledSettings): [string, string][] {
  if (c.profile !== 'fapi2') return [];
  const out: [string, string][] = [];
  const why = (field: string, message: string) => out.push([field, `profile "fapi2": ${message}`]);
  if (!c.requireClientSecret) why('requireClientSecret', 'FAPI 2.0 allows confidential clients only');
  const refused = c.allowedGrantTypes.filter((g) => FAPI2_REFUSED_GRANTS.includes(g));
  if (refused.length > 0)
    why(
      'allowedGrantTypes',
      `${refused.map((g) => `"${g}"`).join(', ')} not allowed (response_type=code only, no password grant)`,
    );
  if (!c.requirePkce) why('requirePkce', 'PKCE is required');
  if (c.allowPlainTextPkce) why('allowPlainTextPkce', 'PKCE must use S256');
  if (c.allowAccessTokensViaBrowser)
    why('allowAccessTokensViaBrowser', 'access tokens come from the token endpoint only');
  if (c.authorizationCodeLifetime !== undefined && c.authorizationCodeLifetime > FAPI2_MAX_CODE_LIFETIME)
    why('authorizationCodeLifetime', `authorization codes live at most ${FAPI2_MAX_CODE_LIFETIME} seconds`);
  if (c.tokenEndpointAuthMethod != null && c.tokenEndpointAuthMethod !== 'private_key_jwt')
    why('tokenEndpointAuthMethod', 'the client must authenticate with private_key_jwt');
  const algs = (c.tokenEndpointAuthSigningAlgorithms ?? []).filter(
    (a) => !(FAPI2_ALGORITHMS as readonly string[]).includes(a),
  );
  if (algs.length > 0)
    why('tokenEndpointAuthSigningAlgorithms', `${algs.join(', ')} not allowed (PS256, ES256, EdDSA only)`);
  if (c.requirePushedAuthorizationRequests === false)
    why('requirePushedAuthorizationRequests', 'authorization requests must be pushed (PAR)');
  if (c.requireDPoP === false) why('requireDPoP', 'tokens must be sender-constrained (DPoP)');
  return out;
}

/**
 * Fills the settings a client left unset: the profile's values for a `fapi2` client (see
 * `clientSchema.profile`), the general defaults otherwise.
 */
export function withProfileDefaults<T extends ProfiledSettings>(c: T) {
  const fapi2 = c.profile === 'fapi2';
  return {
    ...c,
    authorizationCodeLifetime: c.authorizationCodeLifetime ?? (fapi2 ? FAPI2_MAX_CODE_LIFETIME : 300),
    tokenEndpointAuthMethod: c.tokenEndpointAuthMethod ?? (fapi2 ? ('private_key_jwt' as const) : null),
    tokenEndpointAuthSigningAlgorithms: c.tokenEndpointAuthSigningAlgorithms ?? [
      ...(fapi2 ? FAPI2_ALGORITHMS : ASSERTION_ALGORITHMS),
    ],
    requirePushedAuthorizationRequests: c.requirePushedAuthorizationRequests ?? fapi2,
    requireDPoP: c.requireDPoP ?? fapi2,
  };
}

/**
 * The algorithm Sigil signs a `fapi2` client's tokens with: the first of `signingAlgorithms` that
 * FAPI 2.0 allows (§5.4.1: PS256, ES256, EdDSA), or undefined when there is none.
 */
export function fapi2SigningAlgorithm(signingAlgorithms: readonly SigningAlgorithm[]): SigningAlgorithm | undefined {
  return signingAlgorithms.find((a) => (FAPI2_ALGORITHMS as readonly string[]).includes(a));
}
