/**
 * Sign-in presets in a real Chromium: GitHub's redirect flow and Apple's form_post against the
 * stand-ins of test/upstream-standins.ts (at http://127.0.0.1:<port>), Sigil a real `sigil start`
 * process at http://localhost:<port>, so the stand-ins are another site. Apple's answer is then a
 * cross-site POST, which carries none of Sigil's SameSite=Lax cookies: Sigil keeps its fields with
 * the state and sends the browser on by a 303 GET, which does carry them. The Apple key is given
 * as `{ "$file": … }`, as the docs advise.
 */
import { createHash, generateKeyPairSync } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ConfigInput } from '../../src/index.js';
import { type ServerProcess, startProcess, tempDir, testConfig } from '../helpers.js';
import { GitHubStandIn, OidcStandIn } from '../upstream-standins.js';
import { CallbackServer, callbackResponse, launchChromium, newPage } from './browser-fixture.js';
import { freePort } from './ports.js';

const APPLE = { clientId: 'com.example.sigil', teamId: 'TEAM123456', keyId: 'KEY7654321' };
const RP = { id: 'presets-rp', secret: 'presets-rp-secret' };
const verifier = 'w'.repeat(43);
const challenge = createHash('sha256').update(verifier).digest('base64url');

describe('sign-in presets in Chromium: GitHub and Apple (form_post across sites)', () => {
  let browser: Browser;
  let sigil: ServerProcess;
  let cb: CallbackServer;
  let gh: GitHubStandIn;
  let apple: OidcStandIn;
  const temp = tempDir();

  beforeAll(async () => {
    const appleKey = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const keyFile = join(temp.dir, 'AuthKey.p8');
    writeFileSync(keyFile, appleKey.privateKey.export({ type: 'pkcs8', format: 'pem' }));
    cb = await new CallbackServer().start();
    gh = await new GitHubStandIn('gh-client', 'gh-secret').start();
    apple = await new OidcStandIn('apple', APPLE.clientId, { appleKey: appleKey.publicKey, ...APPLE }).start();
    const base = testConfig();
    const config = {
      ...base,
      clients: [
        ...(base.clients ?? []),
        {
          clientId: RP.id,
          clientSecrets: [RP.secret],
          allowedGrantTypes: ['authorization_code'],
          allowedScopes: ['openid', 'profile', 'email'],
          redirectUris: [`${cb.url}/cb`],
          allowHttpRedirectUris: true,
        },
      ],
      identityProviders: [
        {
          name: 'github',
          type: 'github',
          displayName: 'GitHub',
          clientId: 'gh-client',
          clientSecret: 'gh-secret',
          authorizationEndpoint: `${gh.url}/login/oauth/authorize`,
          tokenEndpoint: `${gh.url}/login/oauth/access_token`,
          userinfoEndpoint: `${gh.url}/user`,
          emailsEndpoint: `${gh.url}/user/emails`,
        },
        {
          name: 'apple',
          type: 'apple',
          displayName: 'Apple',
          authority: apple.url,
          ...APPLE,
          privateKey: { $file: keyFile },
        },
      ],
    } as unknown as ConfigInput;
    [browser, sigil] = await Promise.all([
      launchChromium(),
      freePort().then((port) => startProcess(config, port, { issuerHost: 'localhost' })),
    ]);
  });
  afterAll(async () => {
    await Promise.allSettled([browser?.close(), sigil?.stop(), cb?.close(), gh?.close(), apple?.close()]);
    temp.cleanup();
  });

  /** Signs in through `idp` in a fresh context; returns the callback's code and the Sigil requests seen. */
  async function signIn(idp: string) {
    const { context, page } = await newPage(browser);
    const sigilRequests: { method: string; path: string; cookie: string }[] = [];
    page.on('request', (r) => {
      if (!r.url().startsWith(`${sigil.url}/federation/${idp}/callback`)) return;
      void r
        .allHeaders()
        .then((h) =>
          sigilRequests.push({ method: r.method(), path: new URL(r.url()).pathname, cookie: h.cookie ?? '' }),
        );
    });
    const since = cb.hits.length;
    await page.goto(
      `${sigil.url}/connect/authorize?${new URLSearchParams({
        client_id: RP.id,
        redirect_uri: `${cb.url}/cb`,
        response_type: 'code',
        scope: 'openid profile email',
        state: 'rp-state',
        code_challenge: challenge,
        code_challenge_method: 'S256',
        acr_values: `idp:${idp}`,
      })}`,
    );
    const answer = await callbackResponse(page, cb, since);
    await context.close();
    expect(answer.params.state).toBe('rp-state');
    return { code: answer.params.code ?? '', sigilRequests };
  }

  /** Redeems a code and reads userinfo. */
  async function userOf(code: string): Promise<Record<string, unknown>> {
    const token = await fetch(`${sigil.url}/connect/token`, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        authorization: `Basic ${Buffer.from(`${RP.id}:${RP.secret}`).toString('base64')}`,
      },
      body: new URLSearchParams({
        grant_type: 'authorization_code',
        code,
        redirect_uri: `${cb.url}/cb`,
        code_verifier: verifier,
      }),
    });
    expect(token.status).toBe(200);
    const { access_token } = (await token.json()) as { access_token: string };
    const info = await fetch(`${sigil.url}/connect/userinfo`, { headers: { authorization: `Bearer ${access_token}` } });
    return (await info.json()) as Record<string, unknown>;
  }

  it('GitHub: the redirect flow signs in; a login rename keeps the subject', async () => {
    gh.next = {
      user: { id: 583231, login: 'octocat', name: 'The Octocat', email: null },
      emails: [{ email: 'octocat@example.org', primary: true, verified: true, visibility: 'private' }],
    };
    const first = await userOf((await signIn('github')).code);
    expect(first).toMatchObject({ name: 'The Octocat', email: 'octocat@example.org', email_verified: true });
    gh.next = { ...gh.next, user: { ...gh.next.user, login: 'octocat-2' } };
    const renamed = await userOf((await signIn('github')).code);
    expect(renamed.sub).toBe(first.sub);
  });

  it("Apple: the cross-site form_post arrives without Sigil's cookies, the 303 GET with them; the name of the first sign-in stays", async () => {
    apple.next = {
      sub: '000999.feedface.0042',
      claims: { email: 'grace@privaterelay.appleid.com', email_verified: 'true' },
      name: { firstName: 'Grace', lastName: 'Hopper' },
    };
    const first = await signIn('apple');
    const post = first.sigilRequests.find((r) => r.method === 'POST');
    const get = first.sigilRequests.find((r) => r.method === 'GET');
    expect(post).toBeDefined();
    expect(post?.cookie).not.toContain('sigil.browser');
    expect(get?.cookie).toContain('sigil.browser');
    const user = await userOf(first.code);
    expect(user).toMatchObject({ name: 'Grace Hopper', email: 'grace@privaterelay.appleid.com', email_verified: true });
    expect(apple.clientSecrets[0]?.claims).toMatchObject({ iss: APPLE.teamId, sub: APPLE.clientId });

    const again = await userOf((await signIn('apple')).code);
    expect(again).toMatchObject({ sub: user.sub, name: 'Grace Hopper' });
  });
});
