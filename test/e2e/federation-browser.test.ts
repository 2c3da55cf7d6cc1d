/**
 * Federation end to end: two real `sigil start` processes, one the upstream identity provider
 * ("corp") of the other, driven by a real Chromium. The upstream is at http://127.0.0.1:<p1> and
 * the downstream at http://localhost:<p2> (both listen on 127.0.0.1): cookies ignore ports, so
 * distinct host names keep the two session cookies apart. The downstream's client redirects to a
 * callback server on 127.0.0.1 (seen by the browser as rp.test, see browser-fixture.ts).
 *
 * Covered: acr_values=idp:corp straight to the upstream login page, the linked local subject in
 * the client's tokens and its stability across sign-ins, restrictions and enableLocalLogin, the
 * provider link on the login page, tenant:, upstream failures (unreachable, access_denied,
 * forged state, the upstream stopping before the code is redeemed), and docs/federation.md's
 * two-instance example with the demo relying party.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import Database from 'better-sqlite3';
import { createRemoteJWKSet, decodeJwt, jwtVerify } from 'jose';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ConfigInput } from '../../src/index.js';
import { tempDir, testConfig } from '../helpers.js';
import { CallbackServer, callbackResponse, launchChromium, newPage, submitLogin } from './browser-fixture.js';
import { freePort } from './ports.js';

const ROOT = resolve(import.meta.dirname, '../..');
const CLI = join(ROOT, 'dist/cli/main.js');
/** The environment without the variables that would override a config file. */
const CLEAN_ENV = Object.fromEntries(
  Object.entries(process.env).filter(
    ([k]) =>
      ![
        'PORT',
        'SIGIL_CONFIG',
        'SIGIL_ISSUER',
        'SIGIL_STORAGE',
        'DEMO_RP_URL',
        'DEMO_CLIENT_ID',
        'DEMO_CLIENT_SECRET',
      ].includes(k),
  ),
) as Record<string, string>;

/** A spawned process, ready once its output matched. */
interface Proc {
  child: ChildProcess;
  output: () => string;
  /** SIGTERM, then waits for the exit (no-op when it already exited). */
  stop: () => Promise<void>;
}

/** Spawns `node args...` and resolves once the output matches `ready`. */
async function run(args: string[], opts: { cwd: string; env?: Record<string, string>; ready: RegExp }): Promise<Proc> {
  const child = spawn(process.execPath, args, {
    cwd: opts.cwd,
    env: { ...CLEAN_ENV, ...opts.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout?.on('data', (b: Buffer) => (out += b.toString()));
  child.stderr?.on('data', (b: Buffer) => (out += b.toString()));
  const exited = new Promise<void>((ok) => child.once('exit', () => ok()));
  const proc: Proc = {
    child,
    output: () => out,
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
  try {
    await new Promise<void>((ok, fail) => {
      const timer = setTimeout(() => fail(new Error(`${args.join(' ')} did not start:\n${out}`)), 20_000);
      const check = () => {
        if (opts.ready.test(out)) {
          clearTimeout(timer);
          ok();
        }
      };
      child.stdout?.on('data', check);
      void exited.then(() => {
        clearTimeout(timer);
        fail(new Error(`${args.join(' ')} exited with ${child.exitCode}:\n${out}`));
      });
    });
  } catch (err) {
    await proc.stop();
    throw err;
  }
  return proc;
}

/** A `sigil start` process with its own config file and SQLite file in `dir`. */
interface SigilProc extends Proc {
  issuer: string;
  db: string;
}

/**
 * Like `startProcess` (helpers.ts), with an issuer of our choosing (the downstream's host name is
 * localhost) and a database file that outlives the process, to be inspected after `stop`.
 */
async function startSigil(
  name: string,
  config: ConfigInput,
  dir: string,
  port: number,
  issuer: string,
): Promise<SigilProc> {
  const file = join(dir, `${name}.json`);
  const db = join(dir, `${name}.db`);
  writeFileSync(file, JSON.stringify({ ...config, issuer, storage: `sqlite:${db}` }));
  const proc = await run([CLI, 'start', '--config', file, '--port', String(port), '--host', '127.0.0.1'], {
    cwd: dir,
    ready: /listening on http/,
  });
  return { ...proc, issuer, db };
}

/** Rows of the store's users table (the linked external users live there), read-only. */
function storedUsers(db: string): { subject_id: string; username: string; tenant: string; claims: string }[] {
  const sqlite = new Database(db, { readonly: true, fileMustExist: true });
  try {
    return sqlite.prepare('SELECT subject_id, username, tenant, claims FROM users ORDER BY username').all() as {
      subject_id: string;
      username: string;
      tenant: string;
      claims: string;
    }[];
  } finally {
    sqlite.close();
  }
}

/** Rows of the store's grants table of a type (sessions, federation states). */
function storedGrants(db: string, type: string): { subject_id: string | null; consumed_at: number | null }[] {
  const sqlite = new Database(db, { readonly: true, fileMustExist: true });
  try {
    return sqlite.prepare('SELECT subject_id, consumed_at FROM grants WHERE type = ?').all(type) as {
      subject_id: string | null;
      consumed_at: number | null;
    }[];
  } finally {
    sqlite.close();
  }
}

const WEB = { id: 'web', secret: 'web-secret-federation-0123456789' } as const;
const ROPC = { id: 'ropc-down', secret: 'ropc-down-secret' } as const;
const UPSTREAM_CLIENT = { id: 'sigil-down', secret: 'down-secret-0123456789abcdef' } as const;
const VERIFIER = 'f'.repeat(43);
const CHALLENGE = createHash('sha256').update(VERIFIER).digest('base64url');

let dir: { dir: string; cleanup: () => void };
let browser: Browser;
let cb: CallbackServer;
let up: SigilProc;
let down: SigilProc;
let jwks: ReturnType<typeof createRemoteJWKSet>;
const contexts: BrowserContext[] = [];

/** The upstream: the fixture's users (alice = "1", bob = "2", ...) and the downstream as its client. */
function upstreamConfig(downIssuer: string): ConfigInput {
  return testConfig({
    logLevel: 'warn',
    clients: [
      {
        clientId: UPSTREAM_CLIENT.id,
        clientName: 'Sigil (downstream)',
        clientSecrets: [UPSTREAM_CLIENT.secret],
        allowedGrantTypes: ['authorization_code'],
        allowedScopes: ['openid', 'profile', 'email'],
        redirectUris: [`${downIssuer}/federation/corp/callback`],
      },
    ],
  });
}

/**
 * The downstream: "corp" (the upstream process) and "legacy" (a port nobody listens on) as
 * providers; local users `sam` in two tenants with the same password (only `tenant:` tells them
 * apart); clients for each case.
 */
function downstreamConfig(upIssuer: string, deadPort: number, cbUrl: string): ConfigInput {
  const base = testConfig();
  // http://rp.test, the browser fixture's relying party: plain http off loopback (development).
  const browserClient = {
    allowedGrantTypes: ['authorization_code'],
    redirectUris: [`${cbUrl}/cb`],
    allowHttpRedirectUris: true,
    requirePkce: true,
  };
  return {
    ...base,
    logLevel: 'warn',
    identityResources: [...(base.identityResources ?? []), { name: 'org', userClaims: ['tenant'] }],
    identityProviders: [
      {
        name: 'corp',
        displayName: 'Corp SSO',
        type: 'oidc',
        authority: upIssuer,
        clientId: UPSTREAM_CLIENT.id,
        clientSecret: UPSTREAM_CLIENT.secret,
        scope: 'openid profile email',
      },
      {
        name: 'legacy',
        displayName: 'Legacy SSO',
        type: 'oidc',
        authority: `http://127.0.0.1:${deadPort}`,
        clientId: 'x',
        clientSecret: 'y',
        scope: 'openid',
      },
    ],
    clients: [
      {
        clientId: WEB.id,
        clientName: 'Federated Web App',
        clientSecrets: [WEB.secret],
        allowedScopes: ['openid', 'profile', 'email', 'org'],
        ...browserClient,
      },
      {
        clientId: 'restricted',
        clientSecrets: ['restricted-secret'],
        allowedScopes: ['openid'],
        identityProviderRestrictions: ['legacy'],
        ...browserClient,
      },
      {
        clientId: 'corp-only',
        clientSecrets: ['corp-only-secret'],
        allowedScopes: ['openid', 'profile'],
        enableLocalLogin: false,
        identityProviderRestrictions: ['corp'],
        ...browserClient,
      },
      {
        clientId: ROPC.id,
        clientSecrets: [ROPC.secret],
        allowedGrantTypes: ['password'],
        allowedScopes: ['openid', 'profile', 'org'],
      },
    ],
    users: [
      {
        subjectId: 'acme-sam',
        username: 'sam',
        password: 'sam-password',
        tenant: 'acme',
        claims: { name: 'Sam of Acme' },
      },
      {
        subjectId: 'globex-sam',
        username: 'sam',
        password: 'sam-password',
        tenant: 'globex',
        claims: { name: 'Sam of Globex' },
      },
    ],
  };
}

beforeAll(async () => {
  dir = tempDir();
  cb = await new CallbackServer().start();
  const [p1, p2, dead] = [await freePort(), await freePort(), await freePort()];
  const upIssuer = `http://127.0.0.1:${p1}`;
  const downIssuer = `http://localhost:${p2}`;
  const started = await Promise.allSettled([
    launchChromium(),
    startSigil('upstream', upstreamConfig(downIssuer), dir.dir, p1, upIssuer),
    startSigil('downstream', downstreamConfig(upIssuer, dead, cb.url), dir.dir, p2, downIssuer),
  ] as const);
  if (started[0].status === 'fulfilled') browser = started[0].value;
  if (started[1].status === 'fulfilled') up = started[1].value;
  if (started[2].status === 'fulfilled') down = started[2].value;
  const failed = started.find((s) => s.status === 'rejected');
  if (failed) throw failed.reason;
  jwks = createRemoteJWKSet(new URL(`${down.issuer}/.well-known/openid-configuration/jwks`));
});

afterAll(async () => {
  await Promise.allSettled(contexts.map((c) => c.close()));
  await Promise.allSettled([browser?.close(), up?.stop(), down?.stop(), cb?.close()]);
  dir?.cleanup();
});

/** A fresh browser context (own cookies), closed in afterAll. */
async function freshPage(): Promise<{ context: BrowserContext; page: Page }> {
  const { context, page } = await newPage(browser);
  contexts.push(context);
  return { context, page };
}

/** The downstream's authorize URL for a client, with PKCE, state and nonce. */
function authorizeUrl(
  clientId: string,
  extra: Record<string, string> = {},
): { url: string; state: string; nonce: string } {
  const state = `st-${Math.random().toString(36).slice(2)}`;
  const nonce = `n-${Math.random().toString(36).slice(2)}`;
  const params = new URLSearchParams({
    client_id: clientId,
    redirect_uri: `${cb.url}/cb`,
    response_type: 'code',
    scope: clientId === WEB.id ? 'openid profile email' : clientId === 'restricted' ? 'openid' : 'openid profile',
    state,
    nonce,
    code_challenge: CHALLENGE,
    code_challenge_method: 'S256',
    ...extra,
  });
  return { url: `${down.issuer}/connect/authorize?${params}`, state, nonce };
}

/** Waits for the upstream's login page and checks it is the upstream's (not the downstream's). */
async function expectUpstreamLogin(page: Page): Promise<void> {
  await page.waitForURL((u) => u.origin === up.issuer && u.pathname === '/account/login', { timeout: 10_000 });
  expect(new URL(page.url()).searchParams.get('interaction')).toEqual(expect.any(String));
  // The upstream names its client: the downstream Sigil.
  expect(await page.textContent('main')).toContain('Sigil (downstream)');
}

/** Redeems a code at the downstream's token endpoint with the PKCE verifier. */
async function redeem(
  code: string,
  client: { id: string; secret: string } = WEB,
): Promise<{ id_token: string; access_token: string }> {
  const res = await fetch(`${down.issuer}/connect/token`, {
    method: 'POST',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      authorization: `Basic ${Buffer.from(`${client.id}:${client.secret}`).toString('base64')}`,
    },
    body: new URLSearchParams({
      grant_type: 'authorization_code',
      code,
      redirect_uri: `${cb.url}/cb`,
      code_verifier: VERIFIER,
    }),
  });
  const body = (await res.json()) as { id_token: string; access_token: string };
  expect(res.status, JSON.stringify(body)).toBe(200);
  return body;
}

/**
 * In a fresh context: authorize with acr_values=idp:corp, land on the upstream login page, sign
 * in there, receive the code at the client's callback, redeem it. Returns the verified identity
 * token's claims and the userinfo response.
 */
async function signInThroughCorp(
  username: string,
): Promise<{ claims: Record<string, unknown>; userinfo: Record<string, unknown>; context: BrowserContext }> {
  const { context, page } = await freshPage();
  const { url, state, nonce } = authorizeUrl(WEB.id, { acr_values: 'idp:corp' });
  const since = cb.hits.length;
  await page.goto(url);
  await expectUpstreamLogin(page);
  await submitLogin(page, username);
  const { params } = await callbackResponse(page, cb, since);
  expect(params).toMatchObject({ state, iss: down.issuer });
  expect(params.code).toEqual(expect.any(String));
  const tokens = await redeem(params.code!);
  const { payload } = await jwtVerify(tokens.id_token, jwks, { issuer: down.issuer, audience: WEB.id });
  expect(payload.nonce).toBe(nonce);
  expect(decodeJwt(tokens.access_token).sub).toBe(payload.sub);
  return { claims: payload as Record<string, unknown>, userinfo: await userinfo(tokens.access_token), context };
}

/** The downstream's userinfo response for an access token. */
async function userinfo(accessToken: string): Promise<Record<string, unknown>> {
  const res = await fetch(`${down.issuer}/connect/userinfo`, { headers: { authorization: `Bearer ${accessToken}` } });
  expect(res.status).toBe(200);
  return (await res.json()) as Record<string, unknown>;
}

/** The session cookies of a context, by host. */
async function sessionCookieHosts(context: BrowserContext): Promise<string[]> {
  return (await context.cookies())
    .filter((c) => c.name === 'sigil.session')
    .map((c) => c.domain)
    .sort();
}

describe('acr_values=idp:corp with two Sigil processes', () => {
  let aliceSub: string;

  it('goes straight to the upstream login page; the client gets a code whose tokens carry the linked local subject', async () => {
    const { claims, userinfo, context } = await signInThroughCorp('alice');
    expect(claims.amr).toEqual(['external']);
    expect(claims.idp).toBe('corp');
    expect(claims.sub).not.toBe('1'); // the upstream subject stays upstream
    aliceSub = String(claims.sub);
    // The claims were mapped from the upstream's identity token and userinfo.
    expect(userinfo).toMatchObject({
      sub: aliceSub,
      name: 'Alice Smith',
      email: 'alice@example.com',
      email_verified: true,
    });
    // The linked user in the downstream's store: its subject is the tokens' sub.
    const linked = storedUsers(down.db).filter((u) => u.username === 'corp:1');
    expect(linked.map((u) => u.subject_id)).toEqual([aliceSub]);
    // One session at each provider, each under its own host name.
    expect(await sessionCookieHosts(context)).toEqual(['127.0.0.1', 'localhost']);
  });

  it('a second sign-in by the same upstream user (fresh browser) maps to the same subject; another user to another', async () => {
    const again = await signInThroughCorp('alice');
    expect(again.claims.sub).toBe(aliceSub);
    const bob = await signInThroughCorp('bob');
    expect(bob.claims.sub).not.toBe(aliceSub);
    expect(bob.claims.sub).not.toBe('2');
    expect(bob.userinfo.name).toBe('Bob');
    const rows = storedUsers(down.db).filter((u) => u.username.startsWith('corp:'));
    expect(rows.map((u) => [u.username, u.subject_id])).toEqual([
      ['corp:1', aliceSub],
      ['corp:2', String(bob.claims.sub)],
    ]);
  });

  it('does not honour idp:corp for a client whose identityProviderRestrictions exclude it: the local login page', async () => {
    const { page } = await freshPage();
    const upstreamRequests: string[] = [];
    page.on('request', (r) => {
      if (r.url().startsWith(up.issuer)) upstreamRequests.push(r.url());
    });
    await page.goto(authorizeUrl('restricted', { acr_values: 'idp:corp' }).url);
    await page.waitForURL((u) => u.origin === down.issuer && u.pathname === '/account/login');
    expect(await page.locator('input[name=username]').isVisible()).toBe(true);
    expect(await page.locator('a.provider', { hasText: 'Corp SSO' }).count()).toBe(0);
    expect(await page.locator('a[href*="/federation/corp/"]').count()).toBe(0);
    // Its own allowed provider is still offered.
    expect(await page.locator('a.provider', { hasText: 'Legacy SSO' }).count()).toBe(1);
    expect(upstreamRequests).toEqual([]);
  });

  it('a client with enableLocalLogin false and one allowed provider goes straight upstream without acr_values', async () => {
    const { page } = await freshPage();
    const { url, state } = authorizeUrl('corp-only');
    const since = cb.hits.length;
    await page.goto(url);
    await expectUpstreamLogin(page);
    await submitLogin(page, 'alice');
    const { params } = await callbackResponse(page, cb, since);
    expect(params.state).toBe(state);
    const tokens = await redeem(params.code!, { id: 'corp-only', secret: 'corp-only-secret' });
    const claims = decodeJwt(tokens.id_token);
    expect(claims).toMatchObject({ sub: aliceSub, idp: 'corp', amr: ['external'] });
  });

  it('the login page offers "Corp SSO" as a link that keeps the pending request', async () => {
    const { page } = await freshPage();
    const { url, state } = authorizeUrl(WEB.id);
    const since = cb.hits.length;
    await page.goto(url);
    await page.waitForURL((u) => u.origin === down.issuer && u.pathname === '/account/login');
    const link = page.getByRole('link', { name: 'Corp SSO' });
    expect(await link.getAttribute('href')).toMatch(/^\/federation\/corp\/login\?interaction=[\w-]+$/);
    expect(await page.getByRole('link', { name: 'Legacy SSO' }).count()).toBe(1);
    await link.click();
    await expectUpstreamLogin(page);
    await submitLogin(page, 'bob');
    const { params } = await callbackResponse(page, cb, since);
    expect(params.state).toBe(state);
    const claims = decodeJwt((await redeem(params.code!)).id_token);
    expect(claims).toMatchObject({ idp: 'corp', amr: ['external'] });
    expect(claims.sub).toBe(storedUsers(down.db).find((u) => u.username === 'corp:2')?.subject_id);
  });
});

describe('acr_values=tenant:acme', () => {
  it('reaches the login page ("Organisation: acme") and picks the tenant\'s user', async () => {
    const { page } = await freshPage();
    const { url, nonce } = authorizeUrl(WEB.id, { acr_values: 'tenant:acme', scope: 'openid profile org' });
    const since = cb.hits.length;
    await page.goto(url);
    await page.waitForURL((u) => u.origin === down.issuer && u.pathname === '/account/login');
    expect(await page.textContent('main')).toContain('Organisation: acme');
    await submitLogin(page, 'sam', 'sam-password');
    const { params } = await callbackResponse(page, cb, since);
    const tokens = await redeem(params.code!);
    const { payload } = await jwtVerify(tokens.id_token, jwks, { issuer: down.issuer, audience: WEB.id });
    expect(payload).toMatchObject({ sub: 'acme-sam', nonce, amr: ['pwd'], idp: 'local' });
    // The org scope asks for the tenant claim; with an access token it comes from userinfo.
    expect(await userinfo(tokens.access_token)).toMatchObject({ sub: 'acme-sam', name: 'Sam of Acme', tenant: 'acme' });
  });

  it('without tenant: the same username in two tenants is refused at the login page', async () => {
    const { page } = await freshPage();
    await page.goto(authorizeUrl(WEB.id).url);
    await page.waitForURL((u) => u.origin === down.issuer && u.pathname === '/account/login');
    await submitLogin(page, 'sam', 'sam-password');
    await page.getByRole('alert').waitFor();
    expect(new URL(page.url()).origin).toBe(down.issuer);
  });

  it('scopes the password grant; without it an ambiguous username is refused', async () => {
    const token = (extra: Record<string, string>) =>
      fetch(`${down.issuer}/connect/token`, {
        method: 'POST',
        headers: {
          'content-type': 'application/x-www-form-urlencoded',
          authorization: `Basic ${Buffer.from(`${ROPC.id}:${ROPC.secret}`).toString('base64')}`,
        },
        body: new URLSearchParams({
          grant_type: 'password',
          username: 'sam',
          password: 'sam-password',
          scope: 'openid org',
          ...extra,
        }),
      });
    for (const tenant of ['acme', 'globex']) {
      const res = await token({ acr_values: `tenant:${tenant}` });
      expect(res.status).toBe(200);
      const body = (await res.json()) as { id_token: string; access_token: string };
      expect(decodeJwt(body.id_token).sub).toBe(`${tenant}-sam`);
      expect(await userinfo(body.access_token)).toMatchObject({ sub: `${tenant}-sam`, tenant });
    }
    const ambiguous = await token({});
    expect(ambiguous.status).toBe(400);
    expect(await ambiguous.json()).toMatchObject({ error: 'invalid_grant' });
    const unknownTenant = await token({ acr_values: 'tenant:initech' });
    expect(unknownTenant.status).toBe(400);
  });
});

describe("upstream failures end on the downstream's error page, with nothing created", () => {
  /** Asserts the page is Sigil's error page at the downstream naming the error and description. */
  async function expectErrorPage(page: Page, description: string): Promise<void> {
    expect(new URL(page.url()).origin).toBe(down.issuer);
    await page.getByRole('heading', { name: 'Something went wrong' }).waitFor();
    const text = await page.textContent('main');
    expect(text).toContain('temporarily_unavailable');
    expect(text).toContain(description);
  }

  it('an unreachable upstream: error page, no session, no user', async () => {
    const { context, page } = await freshPage();
    const usersBefore = storedUsers(down.db).length;
    const since = cb.hits.length;
    const response = await page.goto(authorizeUrl(WEB.id, { acr_values: 'idp:legacy' }).url);
    expect(response?.status()).toBe(502);
    expect(new URL(page.url()).pathname).toBe('/federation/legacy/login');
    await expectErrorPage(page, 'the identity provider cannot be reached');
    expect(cb.hits.slice(since)).toEqual([]);
    expect(await sessionCookieHosts(context)).toEqual([]);
    expect(storedUsers(down.db)).toHaveLength(usersBefore);
    expect(storedUsers(down.db).some((u) => u.username.startsWith('legacy:'))).toBe(false);
  });

  it('the upstream answers access_denied (cancel on its login page): error page, no code for the client', async () => {
    const { context, page } = await freshPage();
    const usersBefore = storedUsers(down.db);
    const since = cb.hits.length;
    await page.goto(authorizeUrl(WEB.id, { acr_values: 'idp:corp' }).url);
    await expectUpstreamLogin(page);
    const done = page.waitForURL((u) => u.origin === down.issuer);
    await page.locator('button[name=button][value=cancel]').click();
    await done;
    expect(new URL(page.url()).pathname).toBe('/federation/corp/callback');
    expect(new URL(page.url()).searchParams.get('error')).toBe('access_denied');
    await expectErrorPage(page, 'the identity provider answered access_denied');
    expect(cb.hits.slice(since)).toEqual([]);
    expect(await sessionCookieHosts(context)).toEqual([]);
    expect(storedUsers(down.db)).toEqual(usersBefore);
  });

  it('a callback with a state this browser never sent: error page, nothing created', async () => {
    const { context, page } = await freshPage();
    const usersBefore = storedUsers(down.db);
    const response = await page.goto(`${down.issuer}/federation/corp/callback?code=forged&state=forged-state`);
    expect(response?.status()).toBe(502);
    await expectErrorPage(page, 'the sign-in response does not belong to this browser');
    expect(await sessionCookieHosts(context)).toEqual([]);
    expect(storedUsers(down.db)).toEqual(usersBefore);
  });

  it('a replayed callback (the state of a finished sign-in) is refused', async () => {
    const { context, page } = await freshPage();
    const { url } = authorizeUrl(WEB.id, { acr_values: 'idp:corp' });
    const since = cb.hits.length;
    let callbackUrl = '';
    page.on('request', (r) => {
      if (r.url().startsWith(`${down.issuer}/federation/corp/callback?`)) callbackUrl = r.url();
    });
    await page.goto(url);
    await expectUpstreamLogin(page);
    await submitLogin(page, 'alice');
    await callbackResponse(page, cb, since);
    expect(callbackUrl).not.toBe('');
    const sessionsBefore = storedGrants(down.db, 'session').length;
    await page.goto(callbackUrl);
    await expectErrorPage(page, 'the sign-in response was already used or has expired');
    expect(storedGrants(down.db, 'session')).toHaveLength(sessionsBefore);
    expect(await sessionCookieHosts(context)).toEqual(['127.0.0.1', 'localhost']);
  });

  // Last in this file: it stops the upstream process.
  it('the upstream stops before the code is redeemed: error page, no session, no user', async () => {
    const { context, page } = await freshPage();
    const usersBefore = storedUsers(down.db);
    const since = cb.hits.length;
    await page.goto(authorizeUrl(WEB.id, { acr_values: 'idp:corp' }).url);
    await expectUpstreamLogin(page);
    // A user the downstream has never seen, so that a half-finished link would show as a new row.
    // The upstream's answer to the login form is held back until the upstream has stopped: its
    // redirect chain (resume, then the downstream's callback) is walked here with the context's
    // cookies, and the browser is handed the last hop, the callback with a valid code and state.
    let routeError: unknown;
    await page.route(
      (u) => u.origin === up.issuer && u.pathname === '/account/login',
      async (route) => {
        if (route.request().method() !== 'POST') return route.continue();
        try {
          const login = await route.fetch({ maxRedirects: 0 });
          if (login.status() !== 303) throw new Error(`login answered ${login.status()}: ${await login.text()}`);
          const resume = await context.request.get(new URL(login.headers().location!, up.issuer).href, {
            maxRedirects: 0,
          });
          const callback = resume.headers().location ?? '';
          if (!callback.startsWith(`${down.issuer}/federation/corp/callback?code=`))
            throw new Error(`resume answered ${resume.status()} ${callback}`);
          await up.stop();
          await route.fulfill({ status: 303, headers: { location: callback } });
        } catch (err) {
          routeError = err;
          await route.abort();
        }
      },
    );
    // The click waits for the held navigation: the upstream's login, resume and whole shutdown.
    // Under a loaded CI run that took past Playwright's default 30 s once; alone it takes 3 s.
    page.setDefaultTimeout(90_000);
    await submitLogin(page, 'carol');
    await page
      .waitForURL((u) => u.origin === down.issuer && u.pathname === '/federation/corp/callback', { timeout: 30_000 })
      .catch((err: unknown) => {
        throw routeError ?? err;
      });
    await expectErrorPage(page, 'the identity provider sign-in could not be verified');
    expect(up.child.exitCode !== null || up.child.signalCode !== null).toBe(true);
    expect(cb.hits.slice(since)).toEqual([]);
    expect((await sessionCookieHosts(context)).includes('localhost')).toBe(false);
    expect(storedUsers(down.db)).toEqual(usersBefore);
    expect(storedUsers(down.db).some((u) => u.username === 'corp:3')).toBe(false);
    // The log line is written as the page is answered; the process's output may come a moment later.
    await expect.poll(() => down.output(), { timeout: 5_000 }).toContain('upstream sign-in failed');
  }, 150_000);
});

describe("docs/federation.md's two-instance example (examples/federation/, examples/demo-rp.mjs)", () => {
  it('works as printed: the demo signs in through the upstream login page with the downstream subject', async () => {
    const page = readFileSync(join(ROOT, 'docs/federation.md'), 'utf8');
    const start = page.indexOf('## Upstream OpenID Connect providers');
    expect(start).toBeGreaterThanOrEqual(0);
    const section = page.slice(start, page.indexOf('\n## ', start + 1));
    const block = /```sh\n([\s\S]*?)```/.exec(section)?.[1];
    expect(block).toBeDefined();
    const commands = block!
      .split('\n')
      .map((l) => l.replace(/#.*$/, '').trim())
      .filter((l) => l.length > 0 && l !== 'npm run build');
    expect(commands).toHaveLength(3);
    const [user, password] = /user `(\w+)`, password `(\w+)`/.exec(section)!.slice(1) as [string, string];
    const demoUrl = /Open <(http:\/\/[^>]+)>/.exec(section)![1]!;

    // The printed ports are fixed (5100, 5200, 5201); they are moved to free ones here so that the
    // suite runs beside anything else. Everything else is used as printed, in a scratch directory
    // (the configs keep their SQLite files under ./data/).
    const ports = new Map<string, string>();
    for (const fixed of ['5100', '5200', '5201']) ports.set(fixed, String(await freePort()));
    const remap = (s: string) => s.replace(/\b(5100|5200|5201)\b/g, (p) => ports.get(p)!);
    const scratch = join(dir.dir, 'readme');
    mkdirSync(join(scratch, 'examples/federation'), { recursive: true });
    for (const name of ['upstream.json', 'downstream.json'])
      writeFileSync(
        join(scratch, 'examples/federation', name),
        remap(readFileSync(join(ROOT, 'examples/federation', name), 'utf8')),
      );

    // The three terminals of the page, started at once.
    const started = await Promise.allSettled(
      commands.map((command) => {
        const words = remap(command).split(/\s+/);
        const env: Record<string, string> = {};
        while (/^[A-Z_]+=/.test(words[0]!)) {
          const [k, v] = words.shift()!.split('=') as [string, string];
          env[k] = v;
        }
        if (words[0] !== 'node') throw new Error(`unexpected command: ${command}`);
        // Scripts from the repository, config files from the scratch copy.
        const args = words
          .slice(1)
          .map((w) => (w.startsWith('dist/') || w === 'examples/demo-rp.mjs' ? join(ROOT, w) : w));
        const ready = args[1] === 'start' ? /listening on http/ : /relying party at http/;
        return run(args, { cwd: scratch, env, ready });
      }),
    );
    const procs = started.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []));
    try {
      for (const s of started) if (s.status === 'rejected') throw s.reason;
      expect(procs[0]!.output()).toContain(`listening on http://127.0.0.1:${ports.get('5100')}`);
      expect(procs[1]!.output()).toContain(`sigil: issuer http://localhost:${ports.get('5200')}`);

      const { page } = await freshPage();
      await page.goto(remap(demoUrl));
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.waitForURL(
        (u) => u.origin === `http://127.0.0.1:${ports.get('5100')}` && u.pathname === '/account/login',
        { timeout: 10_000 },
      );
      await submitLogin(page, user, password);
      await page.waitForURL((u) => u.href === `${remap(demoUrl)}/`, { timeout: 10_000 });
      await page.getByRole('heading', { name: 'Hello, Carol Corp' }).waitFor();
      const claims = JSON.parse((await page.locator('#id-token-claims').textContent()) ?? '{}') as Record<
        string,
        unknown
      >;
      expect(claims).toMatchObject({
        iss: `http://localhost:${ports.get('5200')}`,
        aud: 'demo-web',
        idp: 'corp',
        amr: ['external'],
      });
      const upstreamSub = (
        JSON.parse(readFileSync(join(ROOT, 'examples/federation/upstream.json'), 'utf8')) as {
          users: { subjectId: string }[];
        }
      ).users[0]!.subjectId;
      expect(claims.sub).not.toBe(upstreamSub);
      expect(claims.sub).toEqual(expect.any(String));

      // And signs out again through the downstream's end-session endpoint.
      await page.getByRole('button', { name: 'Sign out' }).click();
      await page.getByRole('status').waitFor();
      expect(await page.getByRole('status').textContent()).toContain('You are signed out');
    } finally {
      await Promise.allSettled(procs.reverse().map((p) => p.stop()));
    }
  });
});
