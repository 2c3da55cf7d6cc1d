/**
 * Fixtures for the authorize-endpoint suites: the browser clients they share, a cookie-keeping
 * browser over `app.inject` (with a chosen remote address and extra headers), PKCE pairs, and
 * readers for authorization responses in every response mode.
 */
import { createHash, randomBytes } from 'node:crypto';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import type { LightMyRequestResponse } from 'fastify';
import { decodeJwt, decodeProtectedHeader, type JWTPayload, jwtVerify } from 'jose';
import { expect } from 'vitest';
import type { ConfigInput } from '../src/index.js';
import { basic, fetchJwks, form, startSigil, type TestSigil } from './helpers.js';

export const ISSUER = 'http://127.0.0.1:5999';
export const CB = 'https://rp.example/cb';
export const CB2 = 'https://rp.example/cb2?x=1';
export const BYE = 'https://rp.example/bye';

type ClientInput = NonNullable<ConfigInput['clients']>[number];

/** A confidential code-flow client like `web`, with `extra` settings. */
export const webLike = (clientId: string, extra: Partial<ClientInput> = {}): ClientInput => ({
  clientId,
  clientName: clientId === 'web' ? 'Web App' : undefined,
  clientSecrets: [`${clientId}-secret`],
  allowedGrantTypes: ['authorization_code', 'refresh_token'],
  allowedScopes: ['openid', 'profile', 'email', 'api1', 'offline_access'],
  redirectUris: [CB, CB2, 'https://rp.example/caf\u00e9', 'https://rp.example/\u043f\u0443\u0442\u044c'],
  postLogoutRedirectUris: [BYE, 'https://rp.example/\u043f\u043e\u043a\u0430'],
  allowOfflineAccess: true,
  accessTokenLifetime: 60,
  ...extra,
});

/** The browser clients the authorize-endpoint suites share, plus a few for single checks. */
export function authorizeClients(): ClientInput[] {
  return [
    webLike('web'),
    webLike('other'),
    webLike('consent', { requireConsent: true, clientName: 'Consent <App>' }),
    webLike('legacy', { requirePkce: false }),
    webLike('plain', { allowPlainTextPkce: true }),
    // A 1 s identity token (hints that expire); its codes keep the default lifetime, so a slow
    // machine never sees one expire between issue and redemption.
    webLike('short', { identityTokenLifetime: 1 }),
    webLike('short-code', { authorizationCodeLifetime: 1 }),
    {
      clientId: 'spa',
      requireClientSecret: false,
      allowedGrantTypes: ['authorization_code', 'refresh_token'],
      allowedScopes: ['openid', 'api1', 'offline_access'],
      allowOfflineAccess: true,
      redirectUris: ['https://spa.example/cb'],
      allowedCorsOrigins: ['https://spa.example'],
    },
    {
      clientId: 'native',
      requireClientSecret: false,
      allowedGrantTypes: ['authorization_code', 'refresh_token'],
      allowedScopes: ['openid', 'profile', 'api1', 'offline_access'],
      allowOfflineAccess: true,
      redirectUris: ['http://127.0.0.1/cb', 'http://[::1]/cb', 'com.example.app:/cb'],
      requireConsent: true,
    },
    {
      clientId: 'hybrid',
      clientSecrets: ['hybrid-secret'],
      allowedGrantTypes: ['implicit', 'hybrid'],
      allowedScopes: ['openid', 'profile', 'email', 'api1', 'offline_access'],
      allowOfflineAccess: true,
      allowAccessTokensViaBrowser: true,
      redirectUris: [CB],
      postLogoutRedirectUris: [BYE],
    },
    {
      clientId: 'nobrowser',
      clientSecrets: ['nobrowser-secret'],
      allowedGrantTypes: ['implicit', 'hybrid'],
      allowedScopes: ['openid', 'profile', 'api1'],
      redirectUris: [CB],
    },
  ];
}

/** A provider with the authorize fixture clients (plus `extraClients`) on a real SQLite file. */
export function startAuthorizeSigil(
  extraClients: ClientInput[] = [],
  overrides: Partial<ConfigInput> = {},
): Promise<TestSigil> {
  return startSigil({ clients: [...authorizeClients(), ...extraClients], ...overrides });
}

/** A fresh PKCE pair: 64-char verifier, S256 challenge. */
export function pkce(): { verifier: string; challenge: string } {
  const verifier = randomBytes(48).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
}

/** `/connect/authorize?…` for these parameters. */
export function authorizeUrl(params: Record<string, string>): string {
  return `/connect/authorize?${new URLSearchParams(params)}`;
}

/** Response of one browser step. */
export interface Step {
  status: number;
  location?: string;
  body: string;
  headers: Record<string, unknown>;
  res: LightMyRequestResponse;
}

/** A cookie-keeping browser over `app.inject`. */
export class Browser {
  readonly cookies = new Map<string, string>();

  constructor(
    private readonly sigil: Pick<TestSigil, 'app'>,
    private readonly remoteAddress = '127.0.0.1',
  ) {}

  get(url: string, headers: Record<string, string> = {}): Promise<Step> {
    return this.send('GET', url, undefined, headers);
  }

  post(url: string, fields: Record<string, string>, headers: Record<string, string> = {}): Promise<Step> {
    return this.send('POST', url, new URLSearchParams(fields).toString(), headers);
  }

  async send(method: string, url: string, payload?: string, extra: Record<string, string> = {}): Promise<Step> {
    const path = url.startsWith('http') ? new URL(url).pathname + new URL(url).search : url;
    const cookie = [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
    const res = await this.sigil.app.inject({
      method: method as 'GET',
      url: path,
      remoteAddress: this.remoteAddress,
      headers: {
        ...(cookie ? { cookie } : {}),
        ...(payload !== undefined ? { 'content-type': 'application/x-www-form-urlencoded' } : {}),
        ...extra,
      },
      ...(payload !== undefined ? { payload } : {}),
    });
    for (const c of res.cookies) {
      if (
        c.value === '' ||
        (c.maxAge !== undefined && c.maxAge <= 0) ||
        (c.expires && c.expires.getTime() < Date.now())
      )
        this.cookies.delete(c.name);
      else this.cookies.set(c.name, c.value);
    }
    const location = res.headers.location;
    return {
      status: res.statusCode,
      body: res.body,
      headers: res.headers,
      res,
      ...(typeof location === 'string' ? { location } : {}),
    };
  }

  /** Follows same-server redirects. */
  async follow(step: Step): Promise<Step> {
    let current = step;
    for (let i = 0; i < 10 && current.status === 303 && current.location?.startsWith('/'); i++)
      current = await this.get(current.location);
    return current;
  }

  /** Submits the login form of a login page (already fetched), without following. */
  async submitLogin(page: Step, username: string, password: string, extra: Record<string, string> = {}): Promise<Step> {
    const fields: Record<string, string> = {
      csrf_token: input(page.body, 'csrf_token'),
      username,
      password,
      button: 'login',
      ...extra,
    };
    const interaction = optionalInput(page.body, 'interaction');
    if (interaction !== undefined && fields.interaction === undefined) fields.interaction = interaction;
    return this.post('/account/login', fields);
  }

  /** Opens a login page and signs in, following the redirects that stay on the server. */
  async login(loginLocation: string, username: string, password = username): Promise<Step> {
    const page = await this.get(loginLocation);
    expect(page.status, page.body).toBe(200);
    return this.follow(await this.submitLogin(page, username, password));
  }

  /** Signs in on the bare login page (no pending request). */
  async signIn(username: string, password = username): Promise<void> {
    const done = await this.login('/account/login', username, password);
    expect(done.status, done.body).toBe(200);
    expect(this.cookies.has('sigil.session')).toBe(true);
  }

  /** Answers a consent page (already fetched). */
  async consent(page: Step, button: 'yes' | 'no', remember = false): Promise<Step> {
    const fields: Record<string, string> = {
      csrf_token: input(page.body, 'csrf_token'),
      interaction: input(page.body, 'interaction'),
      button,
    };
    if (remember) fields.remember = 'yes';
    return this.follow(await this.post('/consent', fields));
  }

  /**
   * Runs an authorization request to its end: signs in as `user` when asked, answers consent
   * with `consent` when asked; returns the step that leaves the server (redirect or form_post).
   */
  async authorize(
    params: Record<string, string>,
    opts: { user?: string; consent?: 'yes' | 'no'; remember?: boolean } = {},
  ): Promise<Step> {
    let step = await this.follow(await this.get(authorizeUrl(params)));
    if (isLoginPage(step)) {
      step = await this.follow(await this.submitLogin(step, opts.user ?? 'alice', opts.user ?? 'alice'));
    }
    if (isConsentPage(step)) step = await this.consent(step, opts.consent ?? 'yes', opts.remember ?? false);
    return step;
  }
}

export function isLoginPage(step: Step): boolean {
  return step.status === 200 && step.body.includes('action="/account/login"');
}

export function isConsentPage(step: Step): boolean {
  return step.status === 200 && step.body.includes('action="/consent"');
}

/** Decodes the HTML escapes Eta produces. */
export function unescapeHtml(s: string): string {
  return s
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&amp;/g, '&');
}

/** The value of a hidden input. */
export function input(html: string, name: string): string {
  const v = optionalInput(html, name);
  if (v === undefined) throw new Error(`no input ${name} in page:\n${html}`);
  return v;
}

function optionalInput(html: string, name: string): string | undefined {
  const m = new RegExp(`name="${name}" value="([^"]*)"`).exec(html);
  return m ? unescapeHtml(m[1] ?? '') : undefined;
}

/** An authorization response, wherever it travelled. */
export interface AuthzResponse {
  mode: 'query' | 'fragment' | 'form_post';
  /** The redirect URI it went to (query and fragment removed; for form_post the form action). */
  target: string;
  params: URLSearchParams;
  /** The full Location (redirects only). */
  location?: string;
}

/**
 * Reads the authorization response from a step that left the server: a 303 with the parameters
 * in the query or fragment, or a 200 form_post page. Asserts the response is one of those.
 */
export function readResponse(step: Step): AuthzResponse {
  if (step.status === 200 && /<form method="post" action="/.test(step.body) && !step.body.includes('csrf_token')) {
    const action = unescapeHtml(/<form method="post" action="([^"]*)"/.exec(step.body)?.[1] ?? '');
    const params = new URLSearchParams();
    for (const m of step.body.matchAll(/<input type="hidden" name="([^"]*)" value="([^"]*)">/g))
      params.append(unescapeHtml(m[1] ?? ''), unescapeHtml(m[2] ?? ''));
    return { mode: 'form_post', target: action, params };
  }
  expect(step.status, step.body).toBe(303);
  const location = step.location ?? '';
  expect(location.startsWith('/')).toBe(false);
  const hashAt = location.indexOf('#');
  if (hashAt !== -1) {
    return {
      mode: 'fragment',
      target: location.slice(0, hashAt),
      params: new URLSearchParams(location.slice(hashAt + 1)),
      location,
    };
  }
  const url = new URL(location);
  const params = new URLSearchParams(url.search);
  return { mode: 'query', target: location.slice(0, location.length - url.search.length), params, location };
}

/** Asserts an error response to the client: `error`, `state`, `iss`, and no tokens. */
export function expectClientError(
  step: Step,
  error: string,
  opts: { state?: string | null; mode?: AuthzResponse['mode']; target?: string } = {},
): AuthzResponse {
  const r = readResponse(step);
  expect(r.params.get('error'), r.location ?? step.body).toBe(error);
  expect(r.params.get('iss')).toBe(ISSUER);
  if (opts.state !== undefined) expect(r.params.get('state')).toBe(opts.state);
  if (opts.mode) expect(r.mode).toBe(opts.mode);
  if (opts.target) expect(r.target).toBe(opts.target);
  for (const name of ['code', 'access_token', 'id_token']) expect(r.params.has(name)).toBe(false);
  expect(step.body).not.toMatch(/name="(code|access_token|id_token)"/);
  return r;
}

/** Asserts the error page: 400 (or `status`) HTML naming `error`, never a redirect. */
export function expectErrorPage(step: Step | LightMyRequestResponse, error: string, status = 400): void {
  const s = 'statusCode' in step ? step.statusCode : step.status;
  const headers = step.headers;
  expect(s, ('body' in step ? step.body : '') as string).toBe(status);
  expect(String(headers['content-type'])).toMatch(/^text\/html/);
  expect(headers.location).toBeUndefined();
  expect(step.body).toContain(`<code>${error}</code>`);
  expect(String(headers['cache-control'])).toContain('no-store');
}

/** Default parameters of a code request by `web` with PKCE. */
export function codeParams(challenge: string, extra: Record<string, string> = {}): Record<string, string> {
  return {
    client_id: 'web',
    redirect_uri: CB,
    response_type: 'code',
    scope: 'openid profile api1 offline_access',
    state: 'st',
    nonce: 'n-1',
    code_challenge: challenge,
    code_challenge_method: 'S256',
    ...extra,
  };
}

/** Runs a code flow (signing in as `user` when needed) and returns the code. */
export async function getCode(b: Browser, params: Record<string, string>, user = 'alice'): Promise<string> {
  const r = readResponse(await b.authorize(params, { user }));
  const code = r.params.get('code');
  if (!code) throw new Error(`no code in ${r.location ?? JSON.stringify([...r.params])}`);
  return code;
}

/** Redeems a code at the token endpoint (client_secret_basic unless `secret` is null). */
export function redeem(
  sigil: TestSigil,
  code: string,
  opts: {
    client?: string;
    secret?: string | null;
    redirectUri?: string | null;
    verifier?: string | null;
    extra?: Record<string, string>;
    /** Extra request headers (e.g. `DPoP`). */
    headers?: Record<string, string>;
  } = {},
): Promise<LightMyRequestResponse> {
  const client = opts.client ?? 'web';
  const secret = opts.secret === undefined ? `${client}-secret` : opts.secret;
  const fields: Record<string, string> = { grant_type: 'authorization_code', code, ...opts.extra };
  const redirectUri = opts.redirectUri === undefined ? CB : opts.redirectUri;
  if (redirectUri !== null) fields.redirect_uri = redirectUri;
  if (opts.verifier) fields.code_verifier = opts.verifier;
  if (secret === null) fields.client_id = client;
  return sigil.app.inject({
    method: 'POST',
    url: '/connect/token',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      ...(secret !== null ? { authorization: basic(client, secret) } : {}),
      ...opts.headers,
    },
    payload: form(fields),
  });
}

/**
 * Signs `b` in as alice unless it has a session, then runs the code flow (scope `openid`, PKCE)
 * for each of `clients` (confidential, secret `<id>-secret`) in that session.
 * @returns their identity tokens, in order, and the session's `sid`
 */
export async function idTokensInSession(
  sigil: TestSigil,
  b: Browser,
  clients: string[],
): Promise<{ idTokens: string[]; sid: string }> {
  if (!b.cookies.has('sigil.session')) await b.signIn('alice');
  const { verifier, challenge } = pkce();
  const idTokens: string[] = [];
  for (const client of clients) {
    const code = await getCode(b, codeParams(challenge, { client_id: client, scope: 'openid' }));
    const res = await redeem(sigil, code, { client, verifier });
    if (res.statusCode !== 200) throw new Error(`redeem for ${client} failed: ${res.body}`);
    idTokens.push(res.json<{ id_token: string }>().id_token);
  }
  const sid = idTokens[0] === undefined ? '' : String(decodeJwt(idTokens[0]).sid);
  return { idTokens, sid };
}

/** The OIDC left-half hash (`at_hash`, `c_hash`) computed here, independently of Sigil. */
export function halfHash(value: string, alg: string): string {
  const size = alg.slice(-3);
  const digest = createHash(size === '512' ? 'sha512' : size === '384' ? 'sha384' : 'sha256')
    .update(value, 'ascii')
    .digest();
  return digest.subarray(0, digest.length / 2).toString('base64url');
}

/**
 * Verifies an identity token against the published JWKS; returns its claims and `alg`.
 * @param clockTolerance seconds of leeway on `exp` (a token of a one-second lifetime may be past it
 *   by the time it is checked)
 */
export async function verifyIdToken(
  sigil: TestSigil,
  token: string,
  clientId: string,
  clockTolerance = 0,
): Promise<{ claims: JWTPayload & Record<string, unknown>; alg: string }> {
  const header = decodeProtectedHeader(token);
  expect(header.alg).not.toBe('none');
  expect(header.kid).toBeTypeOf('string');
  for (const h of ['jwk', 'jku', 'x5u', 'x5c']) expect(header).not.toHaveProperty(h);
  const { payload } = await jwtVerify(token, await fetchJwks(sigil), {
    issuer: ISSUER,
    audience: clientId,
    clockTolerance,
  });
  expect(typeof payload.exp === 'number' && typeof payload.iat === 'number' && payload.exp > payload.iat).toBe(true);
  return { claims: payload as JWTPayload & Record<string, unknown>, alg: header.alg as string };
}

/** Introspects a token as API `api1`; returns whether it is active. */
export async function isActive(sigil: TestSigil, token: string): Promise<boolean> {
  const res = await sigil.app.inject({
    method: 'POST',
    url: '/connect/introspect',
    headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: basic('api1', 'api1-secret') },
    payload: form({ token }),
  });
  expect(res.statusCode).toBe(200);
  return res.json<{ active: boolean }>().active;
}

/** How many stored grants of `type` the provider's SQLite file holds (read directly, read-only). */
export function countGrants(sigil: TestSigil, type: string): number {
  const db = new Database(join(sigil.dir, 'sigil.db'), { readonly: true, fileMustExist: true });
  try {
    return (db.prepare('SELECT COUNT(*) AS n FROM grants WHERE type = ?').get(type) as { n: number }).n;
  } finally {
    db.close();
  }
}
