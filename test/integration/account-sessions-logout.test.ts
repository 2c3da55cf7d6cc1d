/**
 * Ending one of the user's sessions from /account/sessions is the same logout as end
 * session: the session's clients get a back-channel logout token with its `sid` (OIDC Back-Channel
 * Logout 1.0 §2.5) at a real receiver on loopback, and the page loads their front-channel logout
 * URIs with `iss` and `sid` in hidden iframes that its CSP names (OIDC Front-Channel Logout 1.0 §3).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Browser, idTokensInSession, input, ISSUER, startAuthorizeSigil, webLike } from '../authorize-helpers.js';
import type { TestSigil } from '../helpers.js';
import { LogoutReceiver } from '../logout-receiver.js';

let sigil: TestSigil;
let receiver: LogoutReceiver;
beforeAll(async () => {
  receiver = await LogoutReceiver.start();
  sigil = await startAuthorizeSigil([
    webLike('both', { backChannelLogoutUri: `${receiver.url}/bc`, frontChannelLogoutUri: 'https://rp.example/fc' }),
  ]);
});
afterAll(async () => {
  await sigil?.close();
  await receiver?.close();
});

describe('ending a session on /account/sessions', () => {
  it("sends the back-channel logout token and loads the front-channel iframe of that session's client", async () => {
    const phone = new Browser(sigil, '10.1.1.1');
    const { sid } = await idTokensInSession(sigil, phone, ['both']);
    const desk = new Browser(sigil);
    await desk.signIn('alice');
    const page = await desk.get('/account/sessions');
    expect(page.body).toContain(`name="sid" value="${sid}"`);
    const done = await desk.post('/account/sessions/end', { csrf_token: input(page.body, 'csrf_token'), sid });
    expect(done.status, done.body).toBe(200);
    const frames = [...done.body.matchAll(/<iframe hidden title="logout" src="([^"]*)"/g)].map((m) =>
      (m[1] ?? '').replace(/&amp;/g, '&'),
    );
    expect(frames).toEqual([`https://rp.example/fc?${new URLSearchParams({ iss: ISSUER, sid })}`]);
    expect(String(done.headers['content-security-policy'])).toContain('frame-src https://rp.example/fc');
    expect(String(done.headers['content-security-policy'])).not.toContain('script-src');
    await receiver.waitFor(() => receiver.delivered.length, 1);
    expect(receiver.delivered[0]).toMatchObject({ path: '/bc', sid, aud: 'both' });
    expect((await phone.get('/account')).status).toBe(303);
    // The desk's own session goes on; its page without an ended session frames nothing.
    const again = await desk.get('/account/sessions');
    expect(again.body).not.toContain('<iframe');
    expect(String(again.headers['content-security-policy'])).not.toContain('frame-src https://rp.example');
  });
});
