/**
 * Sigil as a Fastify plugin: mounted at `/id` in a host app that has routes,
 * cookies, a permissive CORS policy and error and not-found handlers of its own. The host's routes
 * keep the host's behaviour and headers; Sigil's headers, CORS, cookies and handlers stay under
 * the prefix. openid-client discovers the prefixed issuer and completes code + PKCE (signed in by
 * Chromium on the mounted login and consent pages), refresh and userinfo; then signs out.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import cookie from '@fastify/cookie';
import cors from '@fastify/cors';
import csrf from '@fastify/csrf-protection';
import Fastify, { type FastifyInstance } from 'fastify';
import * as oidc from 'openid-client';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSigil, type SigilEvent, sigilPlugin } from '../../src/index.js';
import { tempDir, testConfig } from '../helpers.js';
import type { Browser } from 'playwright-core';
import {
  browserConfig,
  CallbackServer,
  CONSENT,
  callbackResponse,
  launchChromium,
  newPage,
  submitLogin,
} from './browser-fixture.js';
import { freePort } from './ports.js';

const silent = pino({ level: 'silent' });

let host: FastifyInstance;
let origin: string;
let issuer: string;
let cb: CallbackServer;
let browser: Browser;
let cleanup: () => void;
const events: SigilEvent[] = [];

/** The host app: its own cookie parser (with loose defaults), CORS for everyone, 404 and error handlers, routes. */
async function hostApp(): Promise<FastifyInstance> {
  const app = Fastify();
  await app.register(cookie, { parseOptions: { path: '/', httpOnly: false, sameSite: 'none' } });
  await app.register(cors, { origin: '*' });
  app.setNotFoundHandler((_request, reply) => reply.code(404).send({ host: 'not found' }));
  app.setErrorHandler((_err, _request, reply) => reply.code(418).send({ host: 'error' }));
  app.get('/api/hello', async (_request, reply) => reply.header('x-host', 'yes').send({ hello: 'world' }));
  app.get('/api/fail', async () => {
    throw new Error('host failure');
  });
  app.get('/api/cookies', async (request) => ({ cookies: Object.keys(request.cookies) }));
  return app;
}

beforeAll(async () => {
  const port = await freePort();
  origin = `http://127.0.0.1:${port}`;
  issuer = `${origin}/id`;
  const dir = tempDir();
  cleanup = dir.cleanup;
  cb = await new CallbackServer().start();
  host = await hostApp();
  await host.register(sigilPlugin, {
    prefix: '/id',
    config: { ...browserConfig(cb.url), issuer, storage: `sqlite:${join(dir.dir, 'sigil.db')}` },
    logger: silent,
    onEvent: (event) => {
      events.push(event);
    },
  });
  [browser] = await Promise.all([launchChromium(), host.listen({ host: '127.0.0.1', port })]);
});

afterAll(async () => {
  await Promise.allSettled([browser?.close(), host?.close(), cb?.close()]);
  cleanup?.();
});

describe('the host app keeps its own behaviour', () => {
  it('its routes answer with its headers, and none of Sigil’s security headers', async () => {
    const res = await fetch(`${origin}/api/hello`, { headers: { origin: 'https://anyone.example' } });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ hello: 'world' });
    expect(res.headers.get('x-host')).toBe('yes');
    expect(res.headers.get('access-control-allow-origin')).toBe('*');
    for (const name of ['content-security-policy', 'x-frame-options', 'strict-transport-security', 'referrer-policy'])
      expect(res.headers.get(name)).toBeNull();
  });

  it('its not-found and error handlers answer outside the prefix, Sigil’s inside it', async () => {
    const missing = await fetch(`${origin}/nothing-here`);
    expect(missing.status).toBe(404);
    expect(await missing.json()).toEqual({ host: 'not found' });
    // A sibling path that merely starts with the prefix is the host's too.
    expect(await (await fetch(`${origin}/idx`)).json()).toEqual({ host: 'not found' });
    const failed = await fetch(`${origin}/api/fail`);
    expect(failed.status).toBe(418);
    expect(await failed.json()).toEqual({ host: 'error' });

    const sigilMissing = await fetch(`${origin}/id/nothing-here`);
    expect(sigilMissing.status).toBe(404);
    expect(await sigilMissing.json()).toMatchObject({ error: 'invalid_request' });
    // A malformed body at Sigil's token endpoint gets Sigil's OAuth error, not the host's 418.
    const bad = await fetch(`${origin}/id/connect/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'a=%zz',
    });
    expect(bad.status).toBe(400);
    expect(await bad.json()).toMatchObject({ error: 'invalid_request' });
  });

  it('Sigil’s own body limit holds on its routes under the host’s larger one (413)', async () => {
    const big = `grant_type=client_credentials&pad=${'a'.repeat(100 * 1024)}`;
    const res = await fetch(`${origin}/id/connect/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: big,
    });
    expect(res.status).toBe(413);
    expect(await res.json()).toMatchObject({ error: 'invalid_request' });
  });

  it('discovery lives at the issuer path + /.well-known/openid-configuration only (OIDC Discovery §4)', async () => {
    const res = await fetch(`${issuer}/.well-known/openid-configuration`);
    expect(res.status).toBe(200);
    const doc = (await res.json()) as Record<string, string>;
    expect(doc.issuer).toBe(issuer);
    for (const key of [
      'authorization_endpoint',
      'token_endpoint',
      'userinfo_endpoint',
      'jwks_uri',
      'end_session_endpoint',
      'revocation_endpoint',
      'introspection_endpoint',
    ])
      expect(doc[key]?.startsWith(`${issuer}/`)).toBe(true);
    expect((await fetch(doc.jwks_uri!)).status).toBe(200);
    const atRoot = await fetch(`${origin}/.well-known/openid-configuration`);
    expect(atRoot.status).toBe(404);
    expect(await atRoot.json()).toEqual({ host: 'not found' });
  });

  it('Sigil’s CORS policy holds on its paths despite the host’s "*", and stays off the host’s routes', async () => {
    const preflight = (path: string, from: string) =>
      fetch(`${origin}${path}`, {
        method: 'OPTIONS',
        headers: { origin: from, 'access-control-request-method': 'POST' },
      });
    // The token endpoint: only the origins of the clients' allowedCorsOrigins.
    expect(
      (await preflight('/id/connect/token', 'https://evil.example')).headers.get('access-control-allow-origin'),
    ).toBeNull();
    const allowed = await preflight('/id/connect/token', 'https://spa.example');
    expect(allowed.headers.get('access-control-allow-origin')).toBe('https://spa.example');
    expect(allowed.headers.get('access-control-allow-credentials')).toBeNull();
    // A page is not a CORS path at all: no preflight (Sigil's 404, not the host's catch-all), no header.
    const pagePreflight = await preflight('/id/account/login', 'https://spa.example');
    expect(pagePreflight.status).toBe(404);
    expect(pagePreflight.headers.get('access-control-allow-origin')).toBeNull();
    expect(await pagePreflight.json()).toMatchObject({ error: 'invalid_request' });
    const page = await fetch(`${issuer}/account/login`, { headers: { origin: 'https://spa.example' } });
    expect(page.headers.get('access-control-allow-origin')).toBeNull();
    // The host's policy on the host's route, not Sigil's (which would refuse evil.example).
    expect((await preflight('/api/hello', 'https://evil.example')).headers.get('access-control-allow-origin')).toBe(
      '*',
    );
  });

  it('Sigil’s cookies are scoped to the prefix with their own attributes, whatever the host’s cookie defaults', async () => {
    const res = await fetch(`${issuer}/account/login`);
    expect(res.status).toBe(200);
    const cookies = res.headers.getSetCookie();
    expect(cookies.length).toBeGreaterThan(0);
    for (const c of cookies) {
      expect(c).toMatch(/; Path=\/id(;|$)/);
      expect(c).toMatch(/; HttpOnly/);
      expect(c).toMatch(/; SameSite=Lax/);
      expect(c).not.toMatch(/Domain=/i);
    }
    const html = await res.text();
    expect(html).toContain('href="/id/assets/sigil.css"');
    expect(html).toContain('action="/id/account/login"');
    expect((await fetch(`${issuer}/assets/sigil.css`)).headers.get('content-type')).toMatch(/^text\/css/);
    // Redirects to Sigil's own pages keep the prefix.
    const account = await fetch(`${issuer}/account`, { redirect: 'manual' });
    expect(account.status).toBe(303);
    expect(account.headers.get('location')).toBe('/id/account/login?return=%2Faccount');
  });

  it('registration is refused when the prefix is not the issuer’s path, or the host’s CSRF protection would be inherited', async () => {
    const app = Fastify();
    const config = testConfig({ issuer: 'https://example.com/id', storage: 'memory' });
    await expect(app.register(sigilPlugin, { prefix: '/auth', config, logger: silent })).rejects.toThrow(
      "the plugin is registered at prefix '/auth' but the issuer https://example.com/id has the path '/id'",
    );
    // At the host's root, too: the issuer's path is where the routes are.
    await expect(Fastify().register(sigilPlugin, { config, logger: silent })).rejects.toThrow(
      "registered at prefix ''",
    );
    // A host whose CSRF protection would be inherited: Sigil keeps its own or does not mount.
    const withCsrf = Fastify();
    await withCsrf.register(cookie);
    await withCsrf.register(csrf);
    await expect(withCsrf.register(sigilPlugin, { prefix: '/id', config, logger: silent })).rejects.toThrow(
      /register it inside a plugin of your own routes/,
    );
    await withCsrf.close();
  });
});

describe('shutdown', () => {
  it('closing the host app closes Sigil’s store (SQLite removes its write-ahead log at the last close)', async () => {
    const { dir, cleanup: remove } = tempDir();
    try {
      const app = Fastify();
      await app.register(sigilPlugin, {
        prefix: '/id',
        config: testConfig({ issuer: 'http://127.0.0.1:5999/id', storage: `sqlite:${join(dir, 'sigil.db')}` }),
        logger: silent,
      });
      await app.ready();
      expect((await app.inject('/id/readyz')).statusCode).toBe(200);
      expect(existsSync(join(dir, 'sigil.db-wal'))).toBe(true);
      await app.close();
      expect(existsSync(join(dir, 'sigil.db-wal'))).toBe(false);
    } finally {
      remove();
    }
  });
});

describe('a relying party and a browser through the mounted pages', () => {
  it('code + PKCE with login and consent, refresh, userinfo, then sign-out', async () => {
    const rp = await oidc.discovery(
      new URL(issuer),
      CONSENT.id,
      CONSENT.secret,
      oidc.ClientSecretBasic(CONSENT.secret),
      {
        execute: [oidc.allowInsecureRequests],
      },
    );
    expect(rp.serverMetadata().issuer).toBe(issuer);
    const verifier = oidc.randomPKCECodeVerifier();
    const state = oidc.randomState();
    const url = oidc.buildAuthorizationUrl(rp, {
      redirect_uri: `${cb.url}/cb`,
      scope: 'openid profile email offline_access',
      code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      state,
    });
    const { context, page } = await newPage(browser);
    const since = cb.hits.length;
    await page.goto(url.href);
    await page.waitForURL(`${issuer}/account/login?interaction=*`);
    // The stylesheet came from the prefix, and the CSP let it in.
    expect(await page.locator('link[rel=stylesheet]').getAttribute('href')).toBe('/id/assets/sigil.css');
    expect(await page.evaluate(() => document.styleSheets[0]?.cssRules.length ?? 0)).toBeGreaterThan(0);
    await submitLogin(page, 'alice');
    await page.waitForURL(`${issuer}/consent?interaction=*`);
    await page.locator('button[name=button][value=yes]').click();
    await callbackResponse(page, cb, since);

    const session = (await context.cookies()).find((c) => c.name === 'sigil.session');
    expect(session).toMatchObject({ path: '/id', httpOnly: true, sameSite: 'Lax' });
    // The host's own routes never receive Sigil's cookies (a top-level navigation, which would carry them).
    await page.goto(`${origin}/api/cookies`);
    expect(JSON.parse((await page.textContent('body')) ?? '')).toEqual({ cookies: [] });

    const callback = new URL(
      `${cb.url}/cb?${new URLSearchParams(cb.hits.slice(since).find((h) => h.path === '/cb')!.params)}`,
    );
    const tokens = await oidc.authorizationCodeGrant(rp, callback, {
      pkceCodeVerifier: verifier,
      expectedState: state,
    });
    expect(tokens.claims()).toMatchObject({ iss: issuer, sub: '1', aud: CONSENT.id });
    expect(events).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ name: 'user_login_succeeded', subjectId: '1' }),
        expect.objectContaining({ name: 'token_issued', clientId: CONSENT.id }),
      ]),
    );
    const info = await oidc.fetchUserInfo(rp, tokens.access_token, '1');
    expect(info).toMatchObject({ sub: '1', name: 'Alice Smith', email: 'alice@example.com' });
    const refreshed = await oidc.refreshTokenGrant(rp, tokens.refresh_token!);
    expect(refreshed.refresh_token).not.toBe(tokens.refresh_token);
    expect(refreshed.claims()?.sub).toBe('1');
    expect((await oidc.fetchUserInfo(rp, refreshed.access_token, '1')).sub).toBe('1');

    // Every link, form, stylesheet and script of the account and device pages stays under the prefix.
    for (const path of ['/account', '/device']) {
      await page.goto(`${issuer}${path}`);
      expect(new URL(page.url()).pathname).toBe(`/id${path}`);
      const urls = await page.$$eval('a[href], form[action], link[href], script[src]', (els) =>
        els.map((e) => e.getAttribute('href') ?? e.getAttribute('action') ?? e.getAttribute('src') ?? ''),
      );
      expect(urls.length).toBeGreaterThan(1);
      for (const u of urls) expect(u).toMatch(/^\/id\//);
    }

    // RP-initiated logout at the mounted end-session endpoint; back at the client's registered URI.
    const before = cb.hits.length;
    await page.goto(
      oidc.buildEndSessionUrl(rp, { id_token_hint: tokens.id_token!, post_logout_redirect_uri: `${cb.url}/signed-out` })
        .href,
    );
    await page.waitForURL(`${cb.url}/signed-out*`);
    expect(cb.hits.slice(before).some((h) => h.path === '/signed-out')).toBe(true);
    expect((await context.cookies()).find((c) => c.name === 'sigil.session')).toBeUndefined();
    await context.close();
  });
});

describe('the standalone server is the same mount at the issuer’s path', () => {
  it('an issuer with a path serves every route under it, and nothing at the root', async () => {
    const sigil = await createSigil(testConfig({ issuer: 'http://127.0.0.1:5999/tenant', storage: 'memory' }), {
      logger: silent,
    });
    try {
      const doc = await sigil.app.inject('/tenant/.well-known/openid-configuration');
      expect(doc.statusCode).toBe(200);
      expect(doc.json()).toMatchObject({
        issuer: 'http://127.0.0.1:5999/tenant',
        token_endpoint: 'http://127.0.0.1:5999/tenant/connect/token',
      });
      expect((await sigil.app.inject('/.well-known/openid-configuration')).statusCode).toBe(404);
      // Health at the listener's root too, for the image's HEALTHCHECK and load balancers.
      expect((await sigil.app.inject('/healthz')).json()).toEqual({ status: 'ok' });
      expect((await sigil.app.inject('/tenant/healthz')).json()).toEqual({ status: 'ok' });
      const token = await sigil.app.inject({
        method: 'POST',
        url: '/tenant/connect/token',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        payload: 'grant_type=client_credentials&client_id=m2m&client_secret=m2m-secret&scope=api1',
      });
      expect(token.statusCode).toBe(200);
    } finally {
      await sigil.close();
    }
  });
});
