/**
 * Self-registration and account pre-hijacking (src/email/account-email.ts): whoever
 * starts a registration for an address chooses nothing that survives its owner's confirmation. The
 * password is chosen on the page the mailed link opens, so only the mailbox's owner sets it. Real
 * SMTP to an smtp-server on loopback; the pages through Fastify's inject.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Browser, input } from '../authorize-helpers.js';
import { startSigil, tokenRequest, type TestSigil } from '../helpers.js';
import { linkIn, SmtpReceiver } from '../smtp-receiver.js';

const ROPC = ['ropc', 'ropc-secret'] as const;
let smtp: SmtpReceiver;
let sigil: TestSigil;

beforeAll(async () => {
  smtp = await new SmtpReceiver().start();
  sigil = await startSigil({ email: { smtpUrl: smtp.url, from: 'id@acme.example', selfRegistration: true } });
});
afterAll(async () => {
  await sigil?.close();
  await smtp?.close();
});

/** Submits the registration form for `email` from `address` (any further fields as given). */
async function register(address: string, fields: Record<string, string>) {
  const b = new Browser(sigil, address);
  const page = await b.get('/account/register');
  expect(page.status).toBe(200);
  return b.post('/account/register', { csrf_token: input(page.body, 'csrf_token'), ...fields });
}

/** Whether the password grant signs `username` in with `password`. */
async function signsIn(username: string, password: string): Promise<boolean> {
  return (
    (await tokenRequest(sigil, { grant_type: 'password', username, password, scope: 'openid' }, ROPC)).statusCode ===
    200
  );
}

describe('self-registration against account pre-hijacking', () => {
  it("an attacker who registers someone else's address holds no password once its owner confirms the link", async () => {
    const victim = 'ivy@example.net';
    const sent = smtp.mails.length;
    // The attacker fills in the victim's address, and a password too, as a form could carry one.
    const started = await register('198.51.100.66', { email: victim, password: 'attacker-chosen-77' });
    expect(started.status, started.body).toBe(200);
    // The form asks for the address only: the password is chosen from the link.
    expect((await new Browser(sigil).get('/account/register')).body).not.toContain('name="password"');
    const mail = await smtp.waitFor(sent + 1);
    expect(mail.to).toEqual([victim]);
    // The victim opens the link in their mailbox and confirms with a password of their own.
    const owner = new Browser(sigil, '203.0.113.20');
    const confirm = await owner.get(linkIn(mail, '/account/register/confirm'));
    expect(confirm.status).toBe(200);
    expect(confirm.body).toContain('name="password"');
    expect(confirm.body).toContain('autocomplete="new-password"');
    const done = await owner.post('/account/register/confirm', {
      csrf_token: input(confirm.body, 'csrf_token'),
      token: input(confirm.body, 'token'),
      password: 'owner-picked-river-48',
    });
    expect(done.status, done.body).toBe(200);
    expect(done.body).toContain('Your account is ready.');
    expect(await signsIn(victim, 'attacker-chosen-77')).toBe(false);
    expect(await signsIn(victim, 'owner-picked-river-48')).toBe(true);
  });

  it('a password the policy refuses keeps the link usable; an empty one creates nothing', async () => {
    const address = 'jun@example.net';
    const sent = smtp.mails.length;
    expect((await register('198.51.100.67', { email: address })).status).toBe(200);
    const link = linkIn(await smtp.waitFor(sent + 1), '/account/register/confirm');
    const b = new Browser(sigil, '203.0.113.21');
    const page = await b.get(link);
    const post = (password: string) =>
      b.post('/account/register/confirm', {
        csrf_token: input(page.body, 'csrf_token'),
        token: input(page.body, 'token'),
        password,
      });
    const empty = await post('');
    expect(empty.status).toBe(400);
    const weak = await post('password');
    expect(weak.status).toBe(400);
    expect(weak.body).toContain('name="password"');
    expect(await sigil.context.store.users.findUserByUsername(address, null)).toBeUndefined();
    const ok = await post('lantern-harbour-93');
    expect(ok.status, ok.body).toBe(200);
    expect(await signsIn(address, 'lantern-harbour-93')).toBe(true);
    // Used once: the link is spent.
    expect((await post('lantern-harbour-94')).status).toBe(400);
  });
});
