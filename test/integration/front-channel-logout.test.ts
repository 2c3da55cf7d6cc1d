/**
 * OpenID Connect Front-Channel Logout 1.0 over HTTP: the signed-out page, whether reached by
 * RP-initiated logout or Sigil's own logout page, holds one hidden iframe per client that took
 * part in the session and has a `frontChannelLogoutUri`, with `iss` and `sid` (§3); its CSP allows
 * exactly those frames. Discovery advertises it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Browser, BYE, idTokensInSession, input, ISSUER, startAuthorizeSigil, webLike } from '../authorize-helpers.js';
import type { TestSigil } from '../helpers.js';

let sigil: TestSigil;

beforeAll(async () => {
  sigil = await startAuthorizeSigil([
    webLike('fc', { frontChannelLogoutUri: 'https://rp.example/fc' }),
    webLike('fc2', { frontChannelLogoutUri: 'https://app2.example/logout?x=1' }),
  ]);
});
afterAll(async () => sigil.close());

/** Signs `b` in and gets identity tokens for `clients`; returns the first's and the sid. */
async function session(b: Browser, clients: string[]): Promise<{ idToken: string; sid: string }> {
  const { idTokens, sid } = await idTokensInSession(sigil, b, clients);
  return { idToken: idTokens[0]!, sid };
}

const frames = (html: string) =>
  [...html.matchAll(/<iframe hidden title="logout" src="([^"]*)"/g)].map((m) => m[1]!.replace(/&amp;/g, '&'));
const frameSrc = (csp: unknown) => /frame-src ([^;]*)/.exec(String(csp))?.[1];

describe('front-channel logout', () => {
  it('discovery advertises front-channel logout with sessions', async () => {
    const doc = (await sigil.app.inject({ method: 'GET', url: '/.well-known/openid-configuration' })).json();
    expect(doc).toMatchObject({ frontchannel_logout_supported: true, frontchannel_logout_session_supported: true });
  });

  it('RP-initiated: one iframe per participating client with iss and sid, then on to the registered URI', async () => {
    const b = new Browser(sigil);
    const { idToken, sid } = await session(b, ['fc', 'fc2', 'web']);
    const page = await b.get(
      `/connect/endsession?${new URLSearchParams({ id_token_hint: idToken, post_logout_redirect_uri: BYE, state: 's' })}`,
    );
    expect(page.status).toBe(200);
    const q = new URLSearchParams({ iss: ISSUER, sid });
    expect(frames(page.body).sort()).toEqual([`https://app2.example/logout?x=1&${q}`, `https://rp.example/fc?${q}`]);
    expect(frameSrc(page.headers['content-security-policy'])?.split(' ').sort()).toEqual([
      'https://app2.example/logout',
      'https://rp.example/fc',
    ]);
    expect(page.body).toContain(`id="continue" href="${BYE}?state=s"`);
    expect(String(page.headers['content-security-policy'])).toMatch(/script-src 'sha256-[^']+'/);
  });

  it("Sigil's own logout page: the iframes, no redirect; a session without such clients gets none", async () => {
    const b = new Browser(sigil);
    const { sid } = await session(b, ['fc']);
    const confirm = await b.get('/account/logout');
    const done = await b.post('/account/logout', { csrf_token: input(confirm.body, 'csrf_token'), button: 'logout' });
    expect(frames(done.body)).toEqual([`https://rp.example/fc?${new URLSearchParams({ iss: ISSUER, sid })}`]);
    expect(done.body).not.toMatch(/<script|id="continue"/);

    const plain = new Browser(sigil);
    await session(plain, ['web']);
    const page = await plain.get('/account/logout');
    const out = await plain.post('/account/logout', { csrf_token: input(page.body, 'csrf_token'), button: 'logout' });
    expect(frames(out.body)).toEqual([]);
    expect(frameSrc(out.headers['content-security-policy'])).toBe("'none'");
  });
});
