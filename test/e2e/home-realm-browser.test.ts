/**
 * Identity-first sign-in with home-realm discovery in a real Chromium, to a real upstream identity
 * provider: a second Sigil plays the organization's own provider ("acme-sso"). The upstream is at
 * http://127.0.0.1:<p1>, the downstream at http://localhost:<p2> (both listen on 127.0.0.1, both
 * in this process): cookies ignore ports, so distinct host names keep the two sessions apart, as
 * in federation-browser.test.ts.
 *
 * The user types only an address at the organization's domain on the downstream's first step; the
 * browser goes to the upstream's login page, signs in there, comes back, and the client's tokens
 * name the organization, which the user joined on the way in (they arrived through its provider);
 * a client that requires an organization gets that one without the picker, also after a login_hint.
 */
import { decodeJwt } from 'jose';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pkce } from '../authorize-helpers.js';
import { basic, startSigil, type TestSigil } from '../helpers.js';
import { audit } from './accessibility.js';
import { CallbackServer, callbackResponse, launchChromium, newPage, submitLogin } from './browser-fixture.js';
import { freePort } from './ports.js';

const APP = { id: 'b2b-app', secret: 'b2b-app-secret' } as const;
const MUST = { id: 'b2b-must', secret: 'b2b-must-secret' } as const;

let browser: Browser;
let up: TestSigil;
let down: TestSigil;
let cb: CallbackServer;
let upUrl: string;
let downUrl: string;

beforeAll(async () => {
  cb = await new CallbackServer().start();
  const [upPort, downPort] = [await freePort(), await freePort()];
  upUrl = `http://127.0.0.1:${upPort}`;
  downUrl = `http://localhost:${downPort}`;
  [browser, up] = await Promise.all([
    launchChromium(),
    startSigil({
      issuer: upUrl,
      users: [
        {
          subjectId: 'acme-ben',
          username: 'ben',
          password: 'ben-at-acme',
          claims: { name: 'Ben of Acme', email: 'ben@acme.example', email_verified: true },
        },
        {
          subjectId: 'acme-ann',
          username: 'ann',
          password: 'ann-at-acme',
          claims: { name: 'Ann of Acme', email: 'ann@acme.example', email_verified: true },
        },
      ],
      clients: [
        {
          clientId: 'sigil-down',
          clientSecrets: ['down-secret'],
          allowedGrantTypes: ['authorization_code'],
          allowedScopes: ['openid', 'profile', 'email'],
          redirectUris: [`${downUrl}/federation/acme-sso/callback`],
          allowHttpRedirectUris: true,
        },
      ],
    }),
  ]);
  await up.app.listen({ host: '127.0.0.1', port: upPort });
  down = await startSigil({
    issuer: downUrl,
    identityProviders: [
      {
        name: 'acme-sso',
        displayName: 'Acme SSO',
        authority: upUrl,
        clientId: 'sigil-down',
        clientSecret: 'down-secret',
        scope: 'openid profile email',
      },
    ],
    organizations: [
      { name: 'acme', displayName: 'Acme Corporation', domains: ['acme.example'], identityProviders: ['acme-sso'] },
    ],
    clients: [
      {
        clientId: APP.id,
        clientName: 'Example B2B App',
        clientSecrets: [APP.secret],
        allowedGrantTypes: ['authorization_code'],
        allowedScopes: ['openid', 'email'],
        organizationUsage: 'allow',
        redirectUris: [`${cb.url}/cb`],
        allowHttpRedirectUris: true,
      },
      {
        clientId: MUST.id,
        clientSecrets: [MUST.secret],
        allowedGrantTypes: ['authorization_code'],
        allowedScopes: ['openid'],
        organizationUsage: 'require',
        redirectUris: [`${cb.url}/cb`],
        allowHttpRedirectUris: true,
      },
    ],
  });
  await down.app.listen({ host: '127.0.0.1', port: downPort });
});
afterAll(async () => {
  await Promise.allSettled([browser?.close(), down?.close(), up?.close(), cb?.close()]);
});

/** The downstream's authorization request of `clientId` (code flow with PKCE) with `extra` parameters. */
function authorizeUrl(clientId: string, challenge: string, extra: Record<string, string>): string {
  const params = { client_id: clientId, redirect_uri: `${cb.url}/cb`, response_type: 'code', ...extra };
  return `${downUrl}/connect/authorize?${new URLSearchParams({ ...params, code_challenge: challenge, code_challenge_method: 'S256' })}`;
}

/** Redeems `code` as `client` and returns its identity token's claims. */
async function identityClaims(client: { id: string; secret: string }, code: string | undefined, verifier: string) {
  const res = await fetch(`${downUrl}/connect/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: basic(client.id, client.secret) },
    body: new URLSearchParams({
      grant_type: 'authorization_code',
      code: code ?? '',
      redirect_uri: `${cb.url}/cb`,
      code_verifier: verifier,
    }),
  });
  expect(res.status).toBe(200);
  return decodeJwt(((await res.json()) as { id_token: string }).id_token);
}

describe('identity-first sign-in with home-realm discovery in Chromium', () => {
  it("sends an address at the organization's domain to its provider and back, as a new member", async () => {
    const { context, page } = await newPage(browser);
    try {
      const { verifier, challenge } = pkce();
      const since = cb.hits.length;
      await page.goto(authorizeUrl(APP.id, challenge, { scope: 'openid email', state: 'hrd', organization: 'acme' }));
      // The first step asks for the address alone: no password field yet.
      await page.waitForURL((u) => u.href.startsWith(`${downUrl}/account/login?interaction=`));
      expect(await page.locator('input[name=password]').count()).toBe(0);
      expect(await audit(page)).toEqual([]);
      await page.getByRole('textbox').fill('Ann@ACME.example');
      await page.getByRole('button', { name: /next|continue/i }).click();

      // The organization's own provider asks for the password.
      await page.waitForURL((u) => u.href.startsWith(`${upUrl}/account/login`));
      await submitLogin(page, 'ann', 'ann-at-acme');

      const response = await callbackResponse(page, cb, since);
      expect(response.params.state).toBe('hrd');
      const claims = await identityClaims(APP, response.params.code, verifier);
      expect(claims).toMatchObject({ org_name: 'acme', org_id: down.context.organizations.byName('acme')?.id });
      const members = await down.context.management.organizations.members('acme', { limit: 10 });
      expect(members.members).toEqual([{ subject: claims.sub, roles: [] }]);
    } finally {
      await context.close();
    }
  });

  it('takes a login_hint at the domain straight to the provider; a client that requires an organization gets the one of the provider, without the picker', async () => {
    const { context, page } = await newPage(browser);
    try {
      const { verifier, challenge } = pkce();
      const since = cb.hits.length;
      await page.goto(
        authorizeUrl(MUST.id, challenge, { scope: 'openid', state: 'hint', login_hint: 'ben@acme.example' }),
      );
      await page.waitForURL((u) => u.href.startsWith(`${upUrl}/account/login`));
      await submitLogin(page, 'ben', 'ben-at-acme');
      const response = await callbackResponse(page, cb, since);
      expect(response.params.state).toBe('hint');
      const claims = await identityClaims(MUST, response.params.code, verifier);
      expect(claims).toMatchObject({ org_name: 'acme' });
      expect(await down.context.store.organizations.member(String(claims.org_id), String(claims.sub))).toBeDefined();
    } finally {
      await context.close();
    }
  });
});
