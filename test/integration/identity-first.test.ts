/**
 * Identity-first sign-in over HTTP: without organization domains the login page is as before; with
 * them it asks for the username or email first (`next`), sends an address at an organization's
 * domain to its identity provider (home-realm discovery, also for `login_hint`) when the client may
 * use it, and otherwise shows the password step with the username kept, alike for known and unknown
 * users.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Browser, codeParams, input, pkce, startAuthorizeSigil, type Step, webLike } from '../authorize-helpers.js';
import type { TestSigil } from '../helpers.js';

let sigil: TestSigil;
let plain: TestSigil;

const provider = (name: string) => ({
  name,
  authority: `https://${name}.example`,
  clientId: 'sigil',
  clientSecret: 'upstream-secret',
});

beforeAll(async () => {
  sigil = await startAuthorizeSigil(
    [
      webLike('b2b', { organizationUsage: 'allow' }),
      webLike('fenced', { identityProviderRestrictions: ['other-sso'] }),
    ],
    {
      identityProviders: [provider('acme-sso'), provider('other-sso')],
      organizations: [
        { name: 'acme', displayName: 'Acme', domains: ['acme.example'], identityProviders: ['acme-sso'] },
        { name: 'plain', displayName: 'Plain', domains: ['plain.example'] },
      ],
    },
  );
  plain = await startAuthorizeSigil();
});
afterAll(async () => {
  await sigil?.close();
  await plain?.close();
});

/** Starts an authorization request and follows it to the login page (or to where it leaves). */
async function loginPageFor(s: TestSigil, extra: Record<string, string> = {}) {
  const browser = new Browser(s);
  let page = await browser.get(`/connect/authorize?${new URLSearchParams(codeParams(pkce().challenge, extra))}`);
  // Stops before the provider's sign-in start: it would reach for the (absent) upstream provider.
  while (page.status === 303 && page.location?.startsWith('/account/login')) page = await browser.get(page.location);
  return { browser, page };
}

function next(browser: Browser, page: Step, username: string): Promise<Step> {
  return browser.post('/account/login', {
    csrf_token: input(page.body, 'csrf_token'),
    interaction: input(page.body, 'interaction'),
    username,
    button: 'next',
  });
}

function expectPasswordStep(step: Step, username: string) {
  expect(step.status, step.body).toBe(200);
  expect(step.body).toContain('name="password"');
  expect(step.body).toContain('value="login"');
  expect(input(step.body, 'username')).toBe(username);
  expect(step.body).toMatch(/name="username"[^>]*readonly/);
}

describe('identity-first sign-in', () => {
  it('leaves the login page as it was without organization domains', async () => {
    const { page } = await loginPageFor(plain);
    expect(page.status).toBe(200);
    expect(page.body).toContain('name="password"');
    expect(page.body).toContain('value="login"');
    expect(page.body).not.toContain('value="next"');
  });

  it('asks for the username or email alone first when an organization lists domains', async () => {
    const { page } = await loginPageFor(sigil);
    expect(page.status).toBe(200);
    expect(page.body).toContain('name="username"');
    expect(page.body).toContain('name="button" value="next"');
    expect(page.body).not.toContain('name="password"');
    expect(page.body).toContain('Username or email');
  });

  it("sends an address at an organization's domain to its identity provider", async () => {
    const { browser, page } = await loginPageFor(sigil);
    const step = await next(browser, page, 'jo@ACME.example');
    expect(step.status).toBe(303);
    expect(step.location).toContain(`/federation/acme-sso/login?interaction=${input(page.body, 'interaction')}`);
  });

  it('shows the password step for a domain without provider, a plain username, known or not', async () => {
    for (const username of ['jo@plain.example', 'alice', 'nobody-here', 'jo@elsewhere.example']) {
      const { browser, page } = await loginPageFor(sigil);
      expectPasswordStep(await next(browser, page, username), username);
    }
  });

  it('goes back from the password step to the first step for another account', async () => {
    const { browser, page } = await loginPageFor(sigil, { login_hint: 'alice' });
    const back = await browser.post('/account/login', {
      csrf_token: input(page.body, 'csrf_token'),
      interaction: input(page.body, 'interaction'),
      username: 'alice',
      button: 'back',
    });
    expect(back.status).toBe(200);
    expect(back.body).toContain('value="next"');
    expect(back.body).not.toContain('name="password"');
    expect(input(back.body, 'username')).toBe('');
  });

  it('signs in with the password after the first step', async () => {
    const { browser, page } = await loginPageFor(sigil);
    const step = await next(browser, page, 'alice');
    const done = await browser.submitLogin(step, 'alice', 'alice');
    expect(done.status).toBe(303);
    expect(browser.cookies.has('sigil.session')).toBe(true);
  });

  it('goes straight to the provider for a login_hint at such a domain; other hints are kept', async () => {
    const { page } = await loginPageFor(sigil, { login_hint: 'jo@acme.example' });
    expect(page.status).toBe(303);
    expect(page.location).toContain('/federation/acme-sso/login?interaction=');
    const { page: hinted } = await loginPageFor(sigil, { login_hint: 'alice' });
    expectPasswordStep(hinted, 'alice');
  });

  it('shows the password step to a client restricted away from the provider, or for another organization', async () => {
    const { browser, page } = await loginPageFor(sigil, { client_id: 'fenced' });
    expectPasswordStep(await next(browser, page, 'jo@acme.example'), 'jo@acme.example');
    const { page: hinted } = await loginPageFor(sigil, { client_id: 'fenced', login_hint: 'jo@acme.example' });
    expectPasswordStep(hinted, 'jo@acme.example');
    const other = await loginPageFor(sigil, { client_id: 'b2b', organization: 'plain' });
    expectPasswordStep(await next(other.browser, other.page, 'jo@acme.example'), 'jo@acme.example');
    const same = await loginPageFor(sigil, { client_id: 'b2b', organization: 'acme' });
    expect((await next(same.browser, same.page, 'jo@acme.example')).location).toContain('/federation/acme-sso/login');
  });
});
