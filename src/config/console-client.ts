/**
 * The web console's built-in client (config `admin.console`): a public client (RFC 6749 §2.1)
 * using the authorization code flow with PKCE S256 (RFC 7636), redirecting to
 * `<issuer>/admin/callback`, with a second factor required at every sign-in (`requireMfa`), asking
 * for the scopes of Sigil's admins and of organization admins (each granted only to whom it fits). It
 * exists only while the console is on; as a config-file client it is read-only to the management
 * API, and no other client may take its id.
 */
import { clientSchema, type ClientConfig, ORGANIZATION_ADMIN_SCOPE } from './schema.js';

/** The console client's `client_id`. */
export const CONSOLE_CLIENT_ID = 'sigil-console';
/** Where the console lives, below the issuer's path. */
export const CONSOLE_PATH = '/admin';
/** The console's redirect URI's path, below the issuer's path. */
export const CONSOLE_CALLBACK_PATH = `${CONSOLE_PATH}/callback`;
/**
 * The console's access token lifetime, seconds: after it, the admin signs in again (their session usually
 * makes that a redirect).
 */
export const CONSOLE_TOKEN_LIFETIME = 900;

/**
 * The console client of an issuer.
 * @param issuer the resolved issuer (no trailing slash)
 * @param withOpenId whether the `openid` identity scope exists (it does unless `identityResources` leaves it out)
 */
export function consoleClient(issuer: string, withOpenId: boolean): ClientConfig {
  return clientSchema.parse({
    clientId: CONSOLE_CLIENT_ID,
    clientName: 'Sigil console',
    requireClientSecret: false,
    tokenEndpointAuthMethod: 'none',
    allowedGrantTypes: ['authorization_code'],
    // sigil:org:admin: an organization's own admins get a console of their organizations' members
    // and invitations (the scope is granted only to a user who administers one, after MFA).
    allowedScopes: [...(withOpenId ? ['openid'] : []), 'sigil:admin', 'scim', ORGANIZATION_ADMIN_SCOPE],
    redirectUris: [`${issuer}${CONSOLE_CALLBACK_PATH}`],
    // The callback is the issuer's own URL: an http issuer (allowed on any host) makes it http too,
    // and it is no weaker than the issuer every other page of Sigil's is served from.
    allowHttpRedirectUris: issuer.startsWith('http:'),
    requirePkce: true,
    allowPlainTextPkce: false,
    requireConsent: false,
    requireMfa: true,
    accessTokenLifetime: CONSOLE_TOKEN_LIFETIME,
  });
}
