/**
 * Sign in with Apple's particulars ("Sign in with Apple REST API"): the client secret is an ES256
 * JWT that Sigil signs with the configured key (header `kid` = keyId; `iss` = teamId, `iat`, `exp`
 * at most six months on, `aud` = https://appleid.apple.com, `sub` = the client id) and renews
 * before it expires; the name comes only in the `user` form field of the first sign-in's
 * form_post, never in the identity token.
 */
import { importPKCS8, SignJWT } from 'jose';
import type { IdentityProviderConfig } from '../config/schema.js';
import { nowSeconds } from '../crypto/handles.js';

/** The client secret's audience, whatever authority serves a test or a private instance. */
export const APPLE_AUDIENCE = 'https://appleid.apple.com';
/** Seconds a client secret is signed for (Apple allows up to 15777000, six months). */
const SECRET_LIFETIME = 86_400;
/** Seconds before its `exp` that a cached client secret is signed anew. */
const RENEW_BEFORE = 3_600;
/** Longest `user` form field read: a name and an address are far shorter. */
const MAX_USER_FIELD = 2_000;
/** Longest first or last name kept. */
const MAX_NAME = 200;

/** Apple's claims asked of Sigil's local user that come only once (the `user` field of the first sign-in). */
export const APPLE_FIRST_SIGN_IN_CLAIMS = ['name', 'given_name', 'family_name'] as const;

/** The client secrets signed so far, by provider name, with the settings they were signed for and their `exp`. */
export class AppleClientSecrets {
  private readonly cache = new Map<string, { settings: string; secret: string; exp: number }>();

  /**
   * The client secret of an `apple` provider: the cached one while it has more than `RENEW_BEFORE`
   * seconds left and the provider's settings are the same, else a new one.
   * @throws Error when `privateKey` is not a PKCS #8 P-256 key.
   */
  async secret(p: IdentityProviderConfig): Promise<string> {
    const settings = JSON.stringify([p.clientId, p.teamId, p.keyId, p.privateKey]);
    const now = nowSeconds();
    const cached = this.cache.get(p.name);
    if (cached && cached.settings === settings && cached.exp - now > RENEW_BEFORE) return cached.secret;
    const key = await importPKCS8(p.privateKey ?? '', 'ES256');
    const exp = now + SECRET_LIFETIME;
    const secret = await new SignJWT({})
      .setProtectedHeader({ alg: 'ES256', kid: p.keyId ?? '' })
      .setIssuer(p.teamId ?? '')
      .setIssuedAt(now)
      .setExpirationTime(exp)
      .setAudience(APPLE_AUDIENCE)
      .setSubject(p.clientId)
      .sign(key);
    this.cache.set(p.name, { settings, secret, exp });
    return secret;
  }
}

/** Whether Apple answers by form_post: it does, and must, when the name or email is asked. */
export function appleFormPost(scope: string): boolean {
  const scopes = scope.split(' ');
  return scopes.includes('name') || scopes.includes('email');
}

/**
 * The name claims in Apple's `user` form field (`{"name":{"firstName","lastName"},"email"}`),
 * sent on the first sign-in only. The field is not signed: only the name is taken from it, never
 * the address (the identity token's `email` is). Anything malformed gives no claims.
 */
export function appleUserName(field: string | undefined): Record<string, string> {
  if (!field || field.length > MAX_USER_FIELD) return {};
  let user: unknown;
  try {
    user = JSON.parse(field);
  } catch {
    return {};
  }
  const name = (user as { name?: { firstName?: unknown; lastName?: unknown } } | null)?.name;
  const part = (v: unknown) => (typeof v === 'string' && v.trim() !== '' ? v.trim().slice(0, MAX_NAME) : undefined);
  const given = part(name?.firstName);
  const family = part(name?.lastName);
  const claims: Record<string, string> = {};
  if (given) claims.given_name = given;
  if (family) claims.family_name = family;
  if (given || family) claims.name = [given, family].filter(Boolean).join(' ');
  return claims;
}
