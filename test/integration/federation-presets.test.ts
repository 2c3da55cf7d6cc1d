/**
 * Sign-in presets against stand-ins of GitHub, Apple, Microsoft and Google (real HTTP servers on
 * 127.0.0.1, test/upstream-standins.ts), Sigil driven over HTTP with a cookie jar: the subject
 * each preset links by, the email each one vouches for (and the one it does not, which must never
 * link to an existing user), Apple's client secret and form_post, Microsoft's tenant issuer.
 */
import { createHash, generateKeyPairSync } from 'node:crypto';
import { decodeJwt } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, resolveConfig } from '../../src/config/loader.js';
import { CONSUMERS_TENANT } from '../../src/federation/microsoft.js';
import { InjectBrowser } from '../browser-helpers.js';
import { basic, dropSchema, form, POSTGRES_URL, startSigil, uniqueSchema } from '../helpers.js';
import { type GitHubAccount, GitHubStandIn, OidcStandIn } from '../upstream-standins.js';

const verifier = 'v'.repeat(43);
const challenge = createHash('sha256').update(verifier).digest('base64url');
const TENANT = '72f988bf-86f1-41af-91ab-2d7cd011db47';
const OTHER_TENANT = '11111111-2222-3333-4444-555555555555';
const APPLE = { clientId: 'com.example.sigil', teamId: 'TEAM123456', keyId: 'KEY7654321' };

/** A GitHub account whose one address is `email`, verified or not. */
function github(id: number, login: string, email: string, verified: boolean): GitHubAccount {
  return {
    user: { id, login, name: `User ${login}`, email: null },
    emails: [
      { email: `${login}@users.noreply.github.com`, primary: false, verified: true, visibility: null },
      { email, primary: true, verified, visibility: 'private' },
    ],
  };
}

describe.each(['sqlite', 'postgres'] as const)('sign-in presets on %s: github, apple, microsoft, google', (dialect) => {
  const schema = uniqueSchema('presets');
  let down: Awaited<ReturnType<typeof startSigil>>;
  let gh: GitHubStandIn;
  let apple: OidcStandIn;
  let ms: OidcStandIn;
  let google: OidcStandIn;

  beforeAll(async () => {
    const appleKey = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    gh = await new GitHubStandIn('gh-client', 'gh-secret').start();
    apple = await new OidcStandIn('apple', APPLE.clientId, { appleKey: appleKey.publicKey, ...APPLE }).start();
    ms = await new OidcStandIn('microsoft', 'ms-client', { secret: 'ms-secret' }).start();
    google = await new OidcStandIn('google', 'google-client', { secret: 'google-secret' }).start();
    down = await startSigil({
      identityProviders: [
        {
          name: 'github',
          type: 'github',
          linkVerifiedEmail: true,
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
          linkVerifiedEmail: true,
          authority: apple.url,
          ...APPLE,
          privateKey: appleKey.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
        },
        {
          // The same GitHub without linkVerifiedEmail: a first sign-in never joins a stored user.
          name: 'github-unlinked',
          type: 'github',
          clientId: 'gh-client',
          clientSecret: 'gh-secret',
          authorizationEndpoint: `${gh.url}/login/oauth/authorize`,
          tokenEndpoint: `${gh.url}/login/oauth/access_token`,
          userinfoEndpoint: `${gh.url}/user`,
          emailsEndpoint: `${gh.url}/user/emails`,
        },
        {
          // A plain OAuth 2.0 server: here the GitHub stand-in's endpoints, mapped by hand.
          name: 'intranet',
          type: 'oauth2',
          linkVerifiedEmail: true,
          clientId: 'gh-client',
          clientSecret: 'gh-secret',
          scope: 'read:user',
          authorizationEndpoint: `${gh.url}/login/oauth/authorize`,
          tokenEndpoint: `${gh.url}/login/oauth/access_token`,
          userinfoEndpoint: `${gh.url}/user`,
          claimMappings: { sub: 'login', name: 'name', email: 'email', email_verified: 'site_admin' },
        },
        {
          name: 'ms-orgs',
          type: 'microsoft',
          linkVerifiedEmail: true,
          tenant: 'organizations',
          authority: ms.authority,
          clientId: 'ms-client',
          clientSecret: 'ms-secret',
        },
        {
          name: 'microsoft',
          type: 'microsoft',
          linkVerifiedEmail: true,
          authority: ms.authority,
          clientId: 'ms-client',
          clientSecret: 'ms-secret',
        },
        {
          name: 'google',
          type: 'google',
          linkVerifiedEmail: true,
          authority: google.url,
          clientId: 'google-client',
          clientSecret: 'google-secret',
        },
      ],
      ...(dialect === 'postgres' ? { storage: `${POSTGRES_URL}?schema=${schema}` } : {}),
      clients: [
        {
          clientId: 'web',
          clientSecrets: ['web-secret'],
          allowedGrantTypes: ['authorization_code'],
          allowedScopes: ['openid', 'profile', 'email'],
          redirectUris: ['https://rp.example/cb'],
        },
      ],
    });
    // Stored users with a verified primary address, which a vouched-for upstream email links to.
    for (const [subjectId, username, email] of [
      ['carol-1', 'carol', 'carol@example.com'],
      ['dana-1', 'dana', 'dana@example.com'],
      ['erin-1', 'erin', 'erin@example.com'],
    ] as const) {
      await down.context.store.users.addUser({
        subjectId,
        username,
        tenant: null,
        passwordHash: null,
        claims: { name: username, department: 'sales' },
        isActive: true,
      });
      await down.context.store.emails.setPrimary(subjectId, email, true);
    }
  });
  afterAll(async () => {
    await down?.close();
    await Promise.all([gh, apple, ms, google].map((s) => s?.close()));
    if (dialect === 'postgres') await dropSchema(schema);
  });

  const authorizeUrl = (idp: string) =>
    `/connect/authorize?${new URLSearchParams({
      client_id: 'web',
      redirect_uri: 'https://rp.example/cb',
      response_type: 'code',
      scope: 'openid profile email',
      state: 's',
      nonce: 'n',
      code_challenge: challenge,
      code_challenge_method: 'S256',
      acr_values: `idp:${idp}`,
    })}`;

  /**
   * Runs the flow through `idp` as a browser would (a form_post page is posted without the
   * browser's cookies, as a cross-site POST carries no SameSite=Lax cookie).
   * @returns Sigil's last answer: the redirect to the client, or an error page
   */
  async function upstreamSignIn(idp: string, browser = new InjectBrowser(down.app)) {
    const start = await browser.get(authorizeUrl(idp));
    expect(start.location).toMatch(new RegExp(`^/federation/${idp}/login\\?interaction=`));
    const toUpstream = await browser.get(start.location!);
    expect(toUpstream.status).toBe(303);
    const upstream = await fetch(toUpstream.location!, { redirect: 'manual' });
    let back;
    if (upstream.status === 200) {
      const html = await upstream.text();
      const fields = Object.fromEntries(
        [...html.matchAll(/<input type="hidden" name="(\w+)" value="([^"]*)">/g)].map(([, k, v = '']) => [
          k,
          v.replaceAll('&quot;', '"').replaceAll('&amp;', '&'),
        ]),
      );
      const posted = await down.app.inject({
        method: 'POST',
        url: `/federation/${idp}/callback`,
        headers: { 'content-type': 'application/x-www-form-urlencoded', origin: 'https://appleid.apple.com' },
        payload: form(fields),
      });
      expect(posted.statusCode, posted.body).toBe(303);
      expect(posted.headers.location).toBe(
        `/federation/${idp}/callback?${new URLSearchParams({ state: fields.state ?? '' })}`,
      );
      back = await browser.get(posted.headers.location as string);
    } else {
      expect(upstream.status).toBe(302);
      back = await browser.get(upstream.headers.get('location')!);
    }
    return { browser, answer: await browser.follow(back) };
  }

  /** The flow through `idp` to the client's tokens: the identity token's `sub` and userinfo's claims. */
  async function signIn(idp: string): Promise<{ sub: string; info: Record<string, unknown> }> {
    const { answer } = await upstreamSignIn(idp);
    expect(answer.status, answer.body).toBe(303);
    const code = new URL(answer.location!).searchParams.get('code');
    expect(code).toBeTruthy();
    const res = await down.app.inject({
      method: 'POST',
      url: '/connect/token',
      headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: basic('web', 'web-secret') },
      payload: form({
        grant_type: 'authorization_code',
        code: code!,
        redirect_uri: 'https://rp.example/cb',
        code_verifier: verifier,
      }),
    });
    expect(res.statusCode).toBe(200);
    const idToken = decodeJwt(res.json().id_token as string);
    expect(idToken.idp).toBe(idp);
    const info = await down.app.inject({
      method: 'GET',
      url: '/connect/userinfo',
      headers: { authorization: `Bearer ${res.json().access_token}` },
    });
    return { sub: String(idToken.sub), info: info.json() };
  }

  describe('github', () => {
    it('links by the numeric id: a login rename keeps the subject; the email is the primary verified one', async () => {
      gh.next = github(101, 'octo', 'octo@example.org', true);
      const first = await signIn('github');
      expect(first.info).toMatchObject({ name: 'User octo', email: 'octo@example.org', email_verified: true });
      gh.next = { ...github(101, 'octo-renamed', 'octo@example.org', true) };
      const renamed = await signIn('github');
      expect(renamed.sub).toBe(first.sub);
      // Another GitHub user with the old login is someone else.
      gh.next = github(102, 'octo', 'other@example.org', true);
      expect((await signIn('github')).sub).not.toBe(first.sub);
      // PKCE and the REST API's User-Agent were sent.
      const token = gh.seen.find((s) => s.path === '/login/oauth/access_token');
      expect(token?.params.code_verifier).toMatch(/^[\w-]{43}$/);
      expect(gh.seen.find((s) => s.path === '/user')?.headers['user-agent']).toBeTruthy();
    });

    it('an unverified primary email never links to the stored user with that address; a verified one does', async () => {
      gh.next = github(201, 'mallory', 'carol@example.com', false);
      const attacker = await signIn('github');
      expect(attacker.sub).not.toBe('carol-1');
      // No email at all: only the primary verified address is taken.
      expect(attacker.info.email).toBeUndefined();
      gh.next = github(202, 'carol-gh', 'carol@example.com', true);
      const carol = await signIn('github');
      expect(carol.sub).toBe('carol-1');
      expect(carol.info.email).toBe('carol@example.com');
      // The link holds at the next sign-in, and the user's own claims stay beside the upstream's.
      expect((await signIn('github')).sub).toBe('carol-1');
      const stored = await down.context.store.users.findUserBySubject('carol-1');
      expect(stored?.claims).toMatchObject({
        department: 'sales',
        name: 'User carol-gh',
        preferred_username: 'carol-gh',
      });
    });

    it('without linkVerifiedEmail, even a verified email makes a new user instead of joining the stored one', async () => {
      gh.next = github(203, 'carol-elsewhere', 'carol@example.com', true);
      const other = await signIn('github-unlinked');
      expect(other.sub).not.toBe('carol-1');
      expect(other.info.email).toBe('carol@example.com');
    });

    it('refuses a callback whose state is not the browser’s, and a code GitHub does not know', async () => {
      gh.next = github(101, 'octo', 'octo@example.org', true);
      const browser = new InjectBrowser(down.app);
      const start = await browser.get(authorizeUrl('github'));
      const toUpstream = await browser.get(start.location!);
      const upstream = await fetch(toUpstream.location!, { redirect: 'manual' });
      const back = new URL(upstream.headers.get('location')!);
      const stranger = await new InjectBrowser(down.app).get(`${back.pathname}${back.search}`);
      expect(stranger.status).toBe(502);
      back.searchParams.set('code', 'not-a-code');
      const forged = await browser.get(`${back.pathname}${back.search}`);
      expect(forged.status).toBe(502);
      expect(forged.body).toContain('could not be verified');
    });
  });

  describe('oauth2', () => {
    it('maps the userinfo answer by claimMappings; an email it does not vouch for is not verified', async () => {
      gh.next = {
        ...github(401, 'ivy', 'ivy@example.org', true),
        user: { id: 401, login: 'ivy', name: 'Ivy', email: 'carol@example.com' },
      };
      const ivy = await signIn('intranet');
      expect(ivy.info).toMatchObject({ name: 'Ivy', email: 'carol@example.com', email_verified: false });
      expect(ivy.sub).not.toBe('carol-1');
      // The mapped `sub` (the login here) is the link.
      expect((await signIn('intranet')).sub).toBe(ivy.sub);
      // Client authentication by Basic (RFC 6749 §2.3.1), not in the form.
      const token = gh.seen.filter((s) => s.path === '/login/oauth/access_token').at(-1);
      expect(token?.headers.authorization).toMatch(/^Basic /);
      expect(token?.params.client_secret).toBe('');
    });

    it('refuses a userinfo answer larger than 64 KiB (control: the same user with a short name signs in)', async () => {
      gh.next = {
        ...github(402, 'big', 'big@example.org', true),
        user: { id: 402, login: 'big', name: 'B'.repeat(70_000), email: null },
      };
      const { answer } = await upstreamSignIn('intranet');
      expect(answer.status).toBe(502);
      gh.next = {
        ...github(402, 'big', 'big@example.org', true),
        user: { id: 402, login: 'big', name: 'B', email: null },
      };
      expect((await signIn('intranet')).info.name).toBe('B');
    });
  });

  describe('apple', () => {
    it('signs its ES256 client secret, answers by form_post, keeps the name sent on the first sign-in only', async () => {
      apple.next = {
        sub: '001234.abcdef.0001',
        claims: { email: 'ada@privaterelay.appleid.com', email_verified: 'true', is_private_email: 'true' },
        name: { firstName: 'Ada', lastName: 'Lovelace' },
      };
      const first = await signIn('apple');
      expect(first.info).toMatchObject({
        name: 'Ada Lovelace',
        given_name: 'Ada',
        family_name: 'Lovelace',
        email: 'ada@privaterelay.appleid.com',
        email_verified: true,
      });
      const authorize = apple.seen.find((s) => s.path === '/auth/authorize');
      expect(authorize?.params).toMatchObject({ response_mode: 'form_post', scope: 'openid name email' });
      // The client secret: ES256 with the key id, verified against the configured key's public part.
      const secret = apple.clientSecrets[0]!;
      expect(secret.header).toMatchObject({ alg: 'ES256', kid: APPLE.keyId });
      expect(secret.claims).toMatchObject({ iss: APPLE.teamId, sub: APPLE.clientId, aud: 'https://appleid.apple.com' });
      const again = await signIn('apple');
      expect(again.sub).toBe(first.sub);
      // No `user` field the second time: the name of the first sign-in stays.
      expect(apple.seen.filter((s) => s.path === '/auth/authorize')).toHaveLength(2);
      expect(again.info).toMatchObject({ name: 'Ada Lovelace', email: 'ada@privaterelay.appleid.com' });
      // The secret is reused while far from its exp.
      expect(apple.clientSecrets[1]?.claims.iat).toBe(secret.claims.iat);
    });

    it('a form_post is kept once, for its own state, and the browser that comes back must be the one that left', async () => {
      apple.next = { sub: '001234.abcdef.0002', claims: { email: 'x@example.org', email_verified: 'false' } };
      const browser = new InjectBrowser(down.app);
      const start = await browser.get(authorizeUrl('apple'));
      const toUpstream = await browser.get(start.location!);
      const html = await (await fetch(toUpstream.location!, { redirect: 'manual' })).text();
      const code = /name="code" value="(\w+)"/.exec(html)?.[1] ?? '';
      const state = /name="state" value="([\w-]+)"/.exec(html)?.[1] ?? '';
      const post = (fields: Record<string, string>) =>
        down.app.inject({
          method: 'POST',
          url: '/federation/apple/callback',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          payload: form(fields),
        });
      expect((await post({ code, state: 'forged-state' })).statusCode).toBe(502);
      expect((await post({ code })).statusCode).toBe(502);
      const first = await post({ code, state });
      expect(first.statusCode).toBe(303);
      expect((await post({ code: 'another', state })).statusCode).toBe(502);
      // Another browser holding the state is refused; the one that left signs in.
      const stranger = await new InjectBrowser(down.app).get(first.headers.location as string);
      expect(stranger.status).toBe(502);
      const done = await browser.follow(await browser.get(first.headers.location as string));
      expect(done.status).toBe(303);
      expect(done.location).toMatch(/^https:\/\/rp\.example\/cb\?code=/);
    });

    it('an email Apple does not say is verified never links to the stored user with that address', async () => {
      apple.next = { sub: '001234.abcdef.0003', claims: { email: 'erin@example.com', email_verified: 'false' } };
      const unverified = await signIn('apple');
      expect(unverified.sub).not.toBe('erin-1');
      expect(unverified.info.email_verified).toBe(false);
      apple.next = { sub: '001234.abcdef.0004', claims: { email: 'erin@example.com', email_verified: 'true' } };
      expect((await signIn('apple')).sub).toBe('erin-1');
    });
  });

  describe('microsoft (common tenant)', () => {
    it("accepts the issuer of the token's own tid, and refuses a token whose iss is another tenant's", async () => {
      ms.next = { sub: 'ms-sub-1', tid: TENANT, claims: { name: 'Mia', email: 'mia@contoso.example' } };
      const mia = await signIn('microsoft');
      expect(mia.info).toMatchObject({ name: 'Mia', email: 'mia@contoso.example', email_verified: false });
      ms.next = {
        sub: 'ms-sub-2',
        tid: TENANT,
        iss: `${ms.url}/${OTHER_TENANT}/v2.0`,
        claims: { name: 'Forged' },
      };
      const { answer } = await upstreamSignIn('microsoft');
      expect(answer.status).toBe(502);
      expect(answer.body).toContain('could not be verified');
    });

    it('organizations refuses the personal accounts tenant (control: a work tenant signs in)', async () => {
      ms.next = { sub: 'ms-sub-5', tid: CONSUMERS_TENANT, claims: { name: 'Personal' } };
      const { answer } = await upstreamSignIn('ms-orgs');
      expect(answer.status).toBe(502);
      ms.next = { sub: 'ms-sub-6', tid: TENANT, claims: { name: 'Work' } };
      expect((await signIn('ms-orgs')).info.name).toBe('Work');
      // The same personal account is welcome where the tenant is common.
      ms.next = { sub: 'ms-sub-5', tid: CONSUMERS_TENANT, claims: { name: 'Personal' } };
      expect((await signIn('microsoft')).info.name).toBe('Personal');
    });

    it('trusts an email for linking only with xms_edov', async () => {
      ms.next = { sub: 'ms-sub-3', tid: TENANT, claims: { email: 'dana@example.com', email_verified: true } };
      expect((await signIn('microsoft')).sub).not.toBe('dana-1');
      ms.next = { sub: 'ms-sub-4', tid: TENANT, claims: { email: 'dana@example.com', xms_edov: true } };
      expect((await signIn('microsoft')).sub).toBe('dana-1');
    });
  });

  describe('google', () => {
    it('discovers the issuer, merges userinfo, links a verified email', async () => {
      google.next = {
        sub: '1098765',
        claims: { name: 'Gus', email: 'gus@gmail.example', email_verified: true, picture: 'https://x/p.png' },
      };
      const gus = await signIn('google');
      expect(gus.info).toMatchObject({ name: 'Gus', email: 'gus@gmail.example', email_verified: true });
      expect(google.seen.some((s) => s.path === '/.well-known/openid-configuration')).toBe(true);
      expect(google.seen.some((s) => s.path === '/userinfo')).toBe(true);
      expect((await signIn('google')).sub).toBe(gus.sub);
    });
  });
});

describe('sign-in presets: config checks', () => {
  const provider = (p: Record<string, unknown>) => () =>
    resolveConfig({ identityProviders: [{ name: 'x', clientId: 'c', ...p }] });

  it('refuses fields a type does not take and lacks the ones it needs; accepts the controls', () => {
    expect(provider({ type: 'github' })).toThrow(/needs clientSecret/);
    expect(provider({ type: 'github', clientSecret: 's', authority: 'https://github.com' })).toThrow(
      /does not take authority/,
    );
    expect(provider({ type: 'github', clientSecret: 's' })).not.toThrow();
    expect(
      provider({
        type: 'oauth2',
        authorizationEndpoint: 'https://as.example/authorize',
        tokenEndpoint: 'https://as.example/token',
        userinfoEndpoint: 'https://as.example/me',
        claimMappings: { email: 'mail' },
      }),
    ).toThrow(/must map sub/);
    expect(
      provider({
        type: 'oauth2',
        authorizationEndpoint: 'http://as.example/authorize',
        tokenEndpoint: 'https://as.example/token',
        userinfoEndpoint: 'https://as.example/me',
        claimMappings: { sub: 'id' },
      }),
    ).toThrow(/https/);
    expect(provider({ type: 'apple', teamId: 't', keyId: 'k', clientSecret: 's', privateKey: 'x' })).toThrow(
      ConfigError,
    );
    expect(provider({ type: 'microsoft', clientSecret: 's', tenant: 'common/../x' })).toThrow(ConfigError);
    expect(provider({ type: 'microsoft', clientSecret: 's', tenant: 'organizations' })).not.toThrow();
    expect(provider({})).toThrow(/needs authority/);
    const pem = (namedCurve: string) =>
      generateKeyPairSync('ec', { namedCurve }).privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
    const apple = (privateKey: string) => provider({ type: 'apple', teamId: 't', keyId: 'k', privateKey });
    expect(apple(pem('P-384'))).toThrow(/P-256/);
    expect(apple('-----BEGIN PRIVATE KEY-----\nnot a key\n-----END PRIVATE KEY-----')).toThrow(/P-256/);
    expect(apple(pem('P-256'))).not.toThrow();
    expect(provider({ type: 'apple', teamId: 't', privateKey: pem('P-256') })).toThrow(/needs keyId/);
  });
});
