/**
 * Upstream providers that speak plain OAuth 2.0 and have no identity token: GitHub (OAuth web flow
 * and REST API) and a generic `oauth2` server. The code flow runs with `state` and PKCE S256
 * (RFC 7636) through openid-client; the access token then fetches the user's JSON at the userinfo
 * endpoint (GitHub's `/user`), whose fields `claimMappings` names. GitHub's email comes only from
 * `/user/emails`, and only the address that is both `primary` and `verified`.
 */
import * as oidc from 'openid-client';
import type { IdentityProviderConfig } from '../config/schema.js';
import { GITHUB_CLAIM_MAPPINGS, oauth2Endpoints } from './presets.js';

/** Largest userinfo or emails answer read, bytes. */
export const MAX_USERINFO_BYTES = 64 * 1024;
/** Longest mapped string claim kept, characters. */
const MAX_CLAIM_LENGTH = 1_000;
/** Seconds an upstream request may take. */
const TIMEOUT = 10;

/** The openid-client configuration of a plain OAuth 2.0 provider: its endpoints as metadata, no discovery. */
export function oauth2Configuration(p: IdentityProviderConfig): oidc.Configuration {
  const e = oauth2Endpoints(p);
  // GitHub reads client_id and client_secret from the form; RFC 6749 §2.3.1 servers take Basic.
  const auth = !p.clientSecret
    ? oidc.None()
    : p.type === 'github'
      ? oidc.ClientSecretPost(p.clientSecret)
      : oidc.ClientSecretBasic(p.clientSecret);
  const metadata = {
    issuer: new URL(e.authorizationEndpoint).origin,
    authorization_endpoint: e.authorizationEndpoint,
    token_endpoint: e.tokenEndpoint,
  };
  const config = new oidc.Configuration(metadata, p.clientId, undefined, auth);
  // Plain http is allowed for loopback endpoints only (checked by the config schema).
  if (Object.values(e).some((url) => url.startsWith('http:'))) oidc.allowInsecureRequests(config);
  config.timeout = TIMEOUT;
  return config;
}

/**
 * Redeems the code and returns the user's claims: `claimMappings` (GitHub: `GITHUB_CLAIM_MAPPINGS`
 * under it) applied to the userinfo answer, `sub` as a string; for GitHub, `email` and
 * `email_verified: true` from the primary verified address when there is one.
 * @throws Error for an error response, a state mismatch, an answer that is not a JSON object or is
 *   larger than `MAX_USERINFO_BYTES`, or no usable `sub`.
 */
export async function oauth2Finish(
  p: IdentityProviderConfig,
  callbackUrl: URL,
  checks: { state: string; codeVerifier: string },
): Promise<Record<string, unknown>> {
  const tokens = await oidc.authorizationCodeGrant(oauth2Configuration(p), callbackUrl, {
    pkceCodeVerifier: checks.codeVerifier,
    expectedState: checks.state,
    idTokenExpected: false,
  });
  const e = oauth2Endpoints(p);
  const info = await getJson(e.userinfoEndpoint, tokens.access_token);
  if (!isObject(info)) throw new Error('the userinfo answer is not a JSON object');
  const claims = mapClaims({ ...(p.type === 'github' ? GITHUB_CLAIM_MAPPINGS : {}), ...p.claimMappings }, info);
  if (p.type === 'github') {
    delete claims.email;
    delete claims.email_verified;
    const email = githubEmail(e.emailsEndpoint ? await getJson(e.emailsEndpoint, tokens.access_token) : []);
    if (email) Object.assign(claims, { email, email_verified: true });
  }
  return claims;
}

/**
 * The local claims named by `mappings` (local → field of the answer): strings (at most
 * `MAX_CLAIM_LENGTH` characters), numbers and booleans; `sub` always a string (GitHub's numeric id
 * in decimal). Other values are left out.
 */
export function mapClaims(mappings: Record<string, string>, info: Record<string, unknown>): Record<string, unknown> {
  const claims: Record<string, unknown> = {};
  for (const [local, field] of Object.entries(mappings)) {
    const value = Object.hasOwn(info, field) ? info[field] : undefined;
    if (typeof value === 'string' && value.length <= MAX_CLAIM_LENGTH) claims[local] = value;
    else if (typeof value === 'number' && Number.isFinite(value))
      claims[local] = local === 'sub' ? String(value) : value;
    else if (typeof value === 'boolean' && local !== 'sub') claims[local] = value;
  }
  return claims;
}

/** The primary verified address of GitHub's `/user/emails` answer, or undefined. */
export function githubEmail(answer: unknown): string | undefined {
  if (!Array.isArray(answer)) return undefined;
  const found = answer.find((e) => isObject(e) && e.primary === true && e.verified === true);
  const email = isObject(found) ? found.email : undefined;
  return typeof email === 'string' && email.length <= MAX_CLAIM_LENGTH ? email : undefined;
}

/**
 * GETs a JSON answer with the access token: redirects not followed, `TIMEOUT` seconds, at most
 * `MAX_USERINFO_BYTES`. The URL is the config's (https, or http on loopback).
 * @throws Error for a status other than 200, a larger or non-JSON body.
 */
async function getJson(url: string, accessToken: string): Promise<unknown> {
  const res = await fetch(url, {
    headers: {
      authorization: `Bearer ${accessToken}`,
      accept: 'application/json',
      // GitHub's REST API refuses requests without a User-Agent.
      'user-agent': 'Sigil',
    },
    redirect: 'manual',
    signal: AbortSignal.timeout(TIMEOUT * 1000),
  });
  if (res.status !== 200) throw new Error(`the upstream answered ${res.status} at ${new URL(url).pathname}`);
  const declared = Number(res.headers.get('content-length') ?? 0);
  if (declared > MAX_USERINFO_BYTES) throw new Error('the upstream answer is too large');
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of res.body ?? []) {
    size += chunk.byteLength;
    if (size > MAX_USERINFO_BYTES) throw new Error('the upstream answer is too large');
    chunks.push(chunk);
  }
  return JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
