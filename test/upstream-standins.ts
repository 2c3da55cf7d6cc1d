/**
 * Stand-ins for the identity providers of the sign-in presets, real HTTP servers on 127.0.0.1
 * that follow each provider's documented API shapes:
 * - GitHub: the OAuth web flow (`/login/oauth/authorize`, `/login/oauth/access_token`, which
 *   answers JSON when asked and an error as a 200 JSON `error`) and the REST API (`/user` with a
 *   numeric `id`, `/user/emails` with `primary` and `verified`), PKCE S256 checked;
 * - an OpenID provider in three flavours: Apple (`response_mode=form_post` with the `user` JSON
 *   field on a first sign-in only, the client secret an ES256 JWT checked against the configured
 *   key's public part, `email_verified` as the string "true"), Microsoft (a `common` document
 *   whose issuer is `<base>/{tenantid}/v2.0`, tokens carrying `tid`) and Google (discovery,
 *   userinfo).
 * The user who "signs in" at the stand-in is set by the test (`next`).
 */
import { createHash, randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, type JWK, jwtVerify, type KeyObject, SignJWT } from 'jose';

/** A request the stand-in received. */
export interface Seen {
  method: string;
  path: string;
  headers: IncomingMessage['headers'];
  params: Params;
}

const PARAMS = [
  'client_id',
  'client_secret',
  'code',
  'code_verifier',
  'code_challenge',
  'code_challenge_method',
  'grant_type',
  'nonce',
  'redirect_uri',
  'response_mode',
  'response_type',
  'scope',
  'state',
] as const;
/** The query and form parameters of a request: the OAuth ones always present ('' when not sent). */
type Params = Record<(typeof PARAMS)[number], string> & Record<string, string>;

async function read(req: IncomingMessage): Promise<Params> {
  let body = '';
  for await (const chunk of req) body += String(chunk);
  const url = new URL(req.url ?? '/', 'http://x');
  const sent = { ...Object.fromEntries(url.searchParams), ...Object.fromEntries(new URLSearchParams(body)) };
  return { ...Object.fromEntries(PARAMS.map((k) => [k, ''])), ...sent } as Params;
}

function json(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

/** The client id and secret of an `Authorization: Basic` header (RFC 6749 §2.3.1), or undefined. */
function basicCredentials(req: IncomingMessage): [string, string] | undefined {
  const header = req.headers.authorization;
  if (!header?.startsWith('Basic ')) return undefined;
  const [id = '', secret = ''] = Buffer.from(header.slice(6), 'base64').toString().split(':').map(decodeURIComponent);
  return [id, secret];
}

function s256(verifier: string): string {
  return createHash('sha256').update(verifier).digest('base64url');
}

/** A stand-in server: listens on 127.0.0.1, records what it saw. */
abstract class StandIn {
  readonly seen: Seen[] = [];
  url = '';
  private server!: Server;

  async start(): Promise<this> {
    this.server = createServer((req, res) => {
      void (async () => {
        const params = await read(req);
        const path = new URL(req.url ?? '/', 'http://x').pathname;
        this.seen.push({ method: req.method ?? 'GET', path, headers: req.headers, params });
        await this.handle(req.method ?? 'GET', path, params, req, res);
      })().catch((err: unknown) => {
        res.writeHead(500);
        res.end(String(err));
      });
    });
    await new Promise<void>((ok) => this.server.listen(0, '127.0.0.1', ok));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  close(): Promise<void> {
    return new Promise((ok) => this.server.close(() => ok()));
  }

  protected abstract handle(
    method: string,
    path: string,
    params: Params,
    req: IncomingMessage,
    res: ServerResponse,
  ): Promise<void>;
}

/** A GitHub account as the REST API shows it. */
export interface GitHubAccount {
  user: { id: number; login: string; name: string | null; email: string | null };
  emails: { email: string; primary: boolean; verified: boolean; visibility: string | null }[];
}

/** GitHub's OAuth web flow and REST API (docs.github.com, "Authorizing OAuth apps", "Users", "Emails"). */
export class GitHubStandIn extends StandIn {
  /** Who approves the next authorization request. */
  next: GitHubAccount | undefined;
  private readonly codes = new Map<string, { account: GitHubAccount; challenge: string; redirectUri: string }>();
  private readonly tokens = new Map<string, GitHubAccount>();

  constructor(
    readonly clientId: string,
    readonly clientSecret: string,
  ) {
    super();
  }

  protected async handle(
    method: string,
    path: string,
    p: Params,
    req: IncomingMessage,
    res: ServerResponse,
  ): Promise<void> {
    if (method === 'GET' && path === '/login/oauth/authorize') {
      if (p.client_id !== this.clientId || p.code_challenge_method !== 'S256' || !this.next)
        return json(res, 400, { error: 'bad request' });
      const code = randomBytes(10).toString('hex');
      this.codes.set(code, { account: this.next, challenge: p.code_challenge, redirectUri: p.redirect_uri });
      const back = new URL(p.redirect_uri);
      back.searchParams.set('code', code);
      back.searchParams.set('state', p.state);
      res.writeHead(302, { location: back.href });
      return void res.end();
    }
    if (method === 'POST' && path === '/login/oauth/access_token') {
      const grant = this.codes.get(p.code);
      this.codes.delete(p.code);
      // GitHub answers an error with 200 and a JSON `error`. Credentials in the form, or Basic
      // (RFC 6749 §2.3.1, as a generic OAuth 2.0 client sends them).
      const [id, secret] = basicCredentials(req) ?? [p.client_id, p.client_secret];
      if (id !== this.clientId || secret !== this.clientSecret)
        return json(res, 200, { error: 'incorrect_client_credentials' });
      if (!grant || grant.redirectUri !== p.redirect_uri || s256(p.code_verifier ?? '') !== grant.challenge)
        return json(res, 200, { error: 'bad_verification_code' });
      const token = `gho_${randomBytes(16).toString('hex')}`;
      this.tokens.set(token, grant.account);
      return json(res, 200, { access_token: token, token_type: 'bearer', scope: 'read:user,user:email' });
    }
    const account = this.tokens.get((req.headers.authorization ?? '').replace(/^Bearer /, ''));
    if (!req.headers['user-agent']) return json(res, 403, { message: 'Request forbidden by administrative rules.' });
    if (!account) return json(res, 401, { message: 'Requires authentication' });
    if (method === 'GET' && path === '/user')
      return json(res, 200, { ...account.user, type: 'User', site_admin: false });
    if (method === 'GET' && path === '/user/emails') return json(res, 200, account.emails);
    return json(res, 404, { message: 'Not Found' });
  }
}

/** The user an OpenID stand-in signs in next, and how its token is made. */
export interface OidcUser {
  sub: string;
  claims: Record<string, unknown>;
  /** Microsoft: the token's tenant. */
  tid?: string;
  /** Microsoft: an `iss` other than the tenant's (a forged token). */
  iss?: string;
  /** Apple: the `user` form field's name (sent on the first sign-in of this `sub` only). */
  name?: { firstName: string; lastName: string };
}

/** An OpenID provider in the shape of Apple, Microsoft or Google. */
export class OidcStandIn extends StandIn {
  next: OidcUser | undefined;
  /** Apple: the verified header and claims of each client secret received. */
  readonly clientSecrets: { header: Record<string, unknown>; claims: Record<string, unknown> }[] = [];
  private readonly signedInBefore = new Set<string>();
  private readonly codes = new Map<string, { user: OidcUser; challenge: string; nonce: string; redirectUri: string }>();
  private readonly accessTokens = new Map<string, OidcUser>();
  private keys!: { privateKey: KeyObject | CryptoKey; jwk: JWK };

  constructor(
    readonly flavour: 'apple' | 'microsoft' | 'google',
    readonly clientId: string,
    /** Apple: the public part of Sigil's configured key; others: the client secret. */
    readonly clientCredential: { appleKey: KeyObject | CryptoKey; teamId: string; keyId: string } | { secret: string },
  ) {
    super();
  }

  override async start(): Promise<this> {
    const { privateKey, publicKey } = await generateKeyPair('RS256');
    this.keys = { privateKey, jwk: { ...(await exportJWK(publicKey)), kid: 'standin-1', alg: 'RS256', use: 'sig' } };
    return super.start();
  }

  /** The authority Sigil is configured with. */
  get authority(): string {
    return this.flavour === 'microsoft' ? `${this.url}/common/v2.0` : this.url;
  }

  private get issuerTemplate(): string {
    return this.flavour === 'microsoft' ? `${this.url}/{tenantid}/v2.0` : this.url;
  }

  protected async handle(
    method: string,
    path: string,
    p: Params,
    req: IncomingMessage,
    res: ServerResponse,
  ): Promise<void> {
    const base = this.flavour === 'microsoft' ? '/common/v2.0' : '';
    if (path === `${base}/.well-known/openid-configuration`)
      return json(res, 200, {
        issuer: this.issuerTemplate,
        authorization_endpoint: `${this.url}/auth/authorize`,
        token_endpoint: `${this.url}/auth/token`,
        jwks_uri: `${this.url}/auth/keys`,
        ...(this.flavour === 'google' ? { userinfo_endpoint: `${this.url}/userinfo` } : {}),
        response_types_supported: ['code'],
        response_modes_supported: ['query', 'fragment', 'form_post'],
        subject_types_supported: ['pairwise'],
        id_token_signing_alg_values_supported: ['RS256'],
        scopes_supported: ['openid', 'email', 'name', 'profile'],
        token_endpoint_auth_methods_supported: ['client_secret_post', 'client_secret_basic'],
        code_challenge_methods_supported: ['S256'],
      });
    if (path === '/auth/keys') return json(res, 200, { keys: [this.keys.jwk] });
    if (method === 'GET' && path === '/auth/authorize') return this.authorize(p, res);
    if (method === 'POST' && path === '/auth/token') return this.token(p, req, res);
    if (path === '/userinfo') {
      const user = this.accessTokens.get((req.headers.authorization ?? '').replace(/^Bearer /, ''));
      if (!user) return json(res, 401, { error: 'invalid_token' });
      return json(res, 200, { sub: user.sub, ...user.claims });
    }
    return json(res, 404, { error: 'not found' });
  }

  private authorize(p: Params, res: ServerResponse): void {
    if (p.client_id !== this.clientId || p.response_type !== 'code' || !this.next) {
      json(res, 400, { error: 'invalid_request' });
      return;
    }
    const code = randomBytes(10).toString('hex');
    const user = this.next;
    this.codes.set(code, { user, challenge: p.code_challenge, nonce: p.nonce, redirectUri: p.redirect_uri });
    const fields: Record<string, string> = { code, state: p.state };
    // Apple sends the name once, on the user's first sign-in, in the `user` field of the form_post.
    if (this.flavour === 'apple' && user.name && !this.signedInBefore.has(user.sub))
      fields.user = JSON.stringify({ name: user.name, email: user.claims.email });
    this.signedInBefore.add(user.sub);
    if (p.response_mode === 'form_post') {
      const inputs = Object.entries(fields)
        .map(
          ([k, v]) =>
            `<input type="hidden" name="${k}" value="${v.replaceAll('&', '&amp;').replaceAll('"', '&quot;')}">`,
        )
        .join('');
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      return void res.end(
        `<!doctype html><title>Sign in with Apple</title><body onload="document.forms[0].submit()"><form method="post" action="${p.redirect_uri}">${inputs}<button>Continue</button></form></body>`,
      );
    }
    const back = new URL(p.redirect_uri);
    for (const [k, v] of Object.entries(fields)) back.searchParams.set(k, v);
    res.writeHead(302, { location: back.href });
    res.end();
  }

  private async token(p: Params, req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (!(await this.clientAuthenticated(p, req))) return json(res, 401, { error: 'invalid_client' });
    const grant = this.codes.get(p.code);
    this.codes.delete(p.code);
    if (
      p.grant_type !== 'authorization_code' ||
      !grant ||
      grant.redirectUri !== p.redirect_uri ||
      s256(p.code_verifier ?? '') !== grant.challenge
    )
      return json(res, 400, { error: 'invalid_grant' });
    const { user } = grant;
    const tid = user.tid;
    const iss = user.iss ?? (tid ? this.issuerTemplate.replace('{tenantid}', tid) : this.issuerTemplate);
    const now = Math.floor(Date.now() / 1000);
    const idToken = await new SignJWT({ ...user.claims, nonce: grant.nonce, ...(tid ? { tid } : {}) })
      .setProtectedHeader({ alg: 'RS256', kid: 'standin-1' })
      .setIssuer(iss)
      .setSubject(user.sub)
      .setAudience(this.clientId)
      .setIssuedAt(now)
      .setExpirationTime(now + 600)
      .sign(this.keys.privateKey);
    const accessToken = randomBytes(16).toString('hex');
    this.accessTokens.set(accessToken, user);
    return json(res, 200, { access_token: accessToken, token_type: 'Bearer', expires_in: 3600, id_token: idToken });
  }

  /** Apple: a client secret JWT signed by the configured key; others: the shared secret (post or basic). */
  private async clientAuthenticated(p: Params, req: IncomingMessage): Promise<boolean> {
    const cred = this.clientCredential;
    if ('secret' in cred) {
      const [id, secret] = basicCredentials(req) ?? [p.client_id, p.client_secret];
      return id === this.clientId && secret === cred.secret;
    }
    if (p.client_id !== this.clientId) return false;
    try {
      const { payload, protectedHeader } = await jwtVerify(p.client_secret ?? '', cred.appleKey, {
        algorithms: ['ES256'],
        issuer: cred.teamId,
        subject: this.clientId,
        audience: 'https://appleid.apple.com',
      });
      const lifetime = (payload.exp ?? 0) - (payload.iat ?? Number.POSITIVE_INFINITY);
      if (protectedHeader.kid !== cred.keyId || !(lifetime > 0 && lifetime <= 15_777_000)) return false;
      this.clientSecrets.push({ header: { ...protectedHeader }, claims: { ...payload } });
      return true;
    } catch {
      return false;
    }
  }
}
