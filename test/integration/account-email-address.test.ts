/**
 * The address on `/account`: the page shows the user's email and whether it is confirmed, and for
 * a stored user's unconfirmed address offers a new confirmation link (`POST /account/email/verify`,
 * CSRF-checked), which a real SMTP server on loopback receives; following it confirms the address.
 * The account's mail cap (`mailsPerAccount`) holds, and a config-file user is offered nothing.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { UserAdmin } from '../../src/admin/users.js';
import { Browser, input } from '../authorize-helpers.js';
import { startSigil, type TestSigil } from '../helpers.js';
import { linkIn, SmtpReceiver } from '../smtp-receiver.js';

let smtp: SmtpReceiver;
let sigil: TestSigil;

beforeAll(async () => {
  smtp = await new SmtpReceiver().start();
  sigil = await startSigil({ email: { smtpUrl: smtp.url, from: 'id@acme.example', mailsPerAccount: 2 } });
  await new UserAdmin(sigil.context.store, sigil.context.config).create({
    username: 'uma',
    password: 'harbour-violet-19',
    email: 'uma@example.org',
    emailVerified: false,
  });
});
afterAll(async () => {
  await sigil?.close();
  await smtp?.close();
});

async function signedIn(username: string, password: string): Promise<Browser> {
  const b = new Browser(sigil, '203.0.113.40');
  await b.signIn(username, password);
  return b;
}

/** Sends the form of the account page's "Send a new confirmation link" (the CSRF token of any form page). */
async function sendLink(b: Browser) {
  const page = await b.get('/account/password');
  return b.post('/account/email/verify', { csrf_token: input(page.body, 'csrf_token'), button: 'send' });
}

describe('the address on /account', () => {
  it('shows an unconfirmed address with a way to a new link, which confirms it', async () => {
    const uma = await signedIn('uma', 'harbour-violet-19');
    const account = await uma.get('/account');
    expect(account.body).toContain('Email address: uma@example.org (not confirmed yet)');
    expect(account.body).toContain('action="/account/email/verify"');

    // Without the form's CSRF token nothing is sent.
    const before = smtp.mails.length;
    expect((await uma.post('/account/email/verify', { button: 'send' })).status).toBe(403);
    expect(smtp.mails.length).toBe(before);

    const sent = await sendLink(uma);
    expect(sent.status, sent.body).toBe(200);
    expect(sent.body).toContain('A new confirmation link is on its way to your address.');
    const mail = await smtp.waitFor(before + 1);
    expect(mail.to).toEqual(['uma@example.org']);
    const link = new URL(linkIn(mail, '/account/verify'));
    const page = await uma.get(`${link.pathname}${link.search}`);
    expect(page.status, page.body).toBe(200);
    const confirmed = await uma.post('/account/verify', {
      csrf_token: input(page.body, 'csrf_token'),
      token: input(page.body, 'token'),
      button: 'confirm',
    });
    expect(confirmed.status, confirmed.body).toBe(200);

    const after = await uma.get('/account');
    expect(after.body).toContain('Email address: uma@example.org (confirmed)');
    expect(after.body).not.toContain('action="/account/email/verify"');
    // A confirmed address gets no link, and the page says so.
    const again = await sendLink(uma);
    expect(again.status).toBe(429);
    expect(again.body).toContain('No link was sent');
    expect(smtp.mails.length).toBe(before + 1);
  });

  it("holds to the account's mail cap", async () => {
    await new UserAdmin(sigil.context.store, sigil.context.config).create({
      username: 'vic',
      password: 'harbour-violet-19',
      email: 'vic@example.org',
      emailVerified: false,
    });
    const vic = await signedIn('vic', 'harbour-violet-19');
    const before = smtp.mails.length;
    expect((await sendLink(vic)).status).toBe(200);
    expect((await sendLink(vic)).status).toBe(200);
    expect((await sendLink(vic)).status).toBe(429);
    await smtp.waitFor(before + 2);
    expect(smtp.mails.filter((m) => m.to.includes('vic@example.org'))).toHaveLength(2);
  });

  it('shows a config-file user their address, confirmed, with nothing to ask for', async () => {
    const alice = await signedIn('alice', 'alice');
    const account = await alice.get('/account');
    expect(account.body).toContain('Email address: alice@example.com (confirmed)');
    expect(account.body).not.toContain('action="/account/email/verify"');
  });
});
