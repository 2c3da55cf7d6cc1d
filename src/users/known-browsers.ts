/**
 * Known browsers: a browser that signed a user in with a password on the login page gets a
 * long-lived cookie (`sigil.known`, http/cookies.ts) vouching for that user, so that the password
 * checks it makes later can be told from everyone else's (OWASP "Slow Down Online Guessing Attacks
 * with Device Cookies"; Entra ID's smart lockout counts familiar locations apart likewise). The
 * LDAP directory keeps a share of an account's wrong binds for its known browsers
 * (`knownBrowserBinds`), which nobody without such a cookie can spend.
 *
 * The cookie is a JWT signed with Sigil's own keys (`typ` `sigil-known-browser+jwt`, which no
 * other verifier of Sigil's accepts), naming the user by the SHA-256 of their subject (the cookie
 * tells nothing readable about the user), with `exp` checked here: the browser's Max-Age is not
 * trusted. It stays valid while the key that signed it is published (`signingKeys`); every
 * password sign-in renews it. One user per browser: the last one who signed in with a password.
 */
import { errors as joseErrors, jwtVerify } from 'jose';
import { nowSeconds, sha256 } from '../crypto/handles.js';
import type { CookieValue } from '../http/cookies.js';
import type { KeyRing } from '../keys/keys.js';

/** The JOSE `typ` of the cookie's JWT. */
const TYP = 'sigil-known-browser+jwt';
/** Longer cookie values are no JWT of Sigil's (a few hundred characters with RS256). */
const MAX_COOKIE_LENGTH = 2000;

/** Issues and checks known-browser cookies. */
export class KnownBrowsers {
  /**
   * @param keys Sigil's signing keys
   * @param issuer the issuer, the JWT's `iss`
   * @param lifetime how long a browser stays known after a password sign-in, seconds (config `knownBrowserLifetime`)
   */
  constructor(
    private readonly keys: KeyRing,
    private readonly issuer: string,
    private readonly lifetime: number,
  ) {}

  /** The cookie that makes this browser known for the user with `subjectId` (Max-Age the lifetime). */
  issue(subjectId: string): CookieValue {
    const now = nowSeconds();
    const value = this.keys.sign(
      { iss: this.issuer, iat: now, exp: now + this.lifetime, known_for: digest(subjectId) },
      TYP,
    );
    return { value, maxAge: this.lifetime };
  }

  /**
   * Whom a known-browser cookie vouches for.
   * @param cookie the cookie's value as sent
   * @returns a test of a subject (true only for the user the cookie names), or undefined when the
   *   cookie is absent, forged, of another issuer or expired.
   */
  async vouchFor(cookie: string | undefined): Promise<((subjectId: string) => boolean) | undefined> {
    if (!cookie || cookie.length > MAX_COOKIE_LENGTH) return undefined;
    let knownFor: unknown;
    try {
      const { payload } = await jwtVerify(cookie, this.keys.verificationKeys, {
        issuer: this.issuer,
        typ: TYP,
        algorithms: [...this.keys.algorithms],
        requiredClaims: ['exp', 'iat'],
      });
      knownFor = payload.known_for;
    } catch (err) {
      if (err instanceof joseErrors.JOSEError || err instanceof TypeError) return undefined;
      throw err;
    }
    if (typeof knownFor !== 'string') return undefined;
    return (subjectId) => digest(subjectId) === knownFor;
  }
}

function digest(subjectId: string): string {
  return sha256(subjectId).toString('base64url');
}
