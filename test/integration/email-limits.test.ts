/**
 * The limits on mail requests (src/email/account-email.ts): per client address a quota
 * (429), per account a silent cap; an attacker spamming the victim's address from many addresses
 * fills the victim's mailbox with at most the cap, and never keeps a working link from the victim.
 * Real SMTP to an smtp-server on loopback; the pages through Fastify's inject.
 */
import { createServer, type AddressInfo } from 'node:net';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { UserAdmin } from '../../src/admin/users.js';
import { Browser, input } from '../authorize-helpers.js';
import { startSigil, type TestSigil } from '../helpers.js';
import { linkIn, SmtpReceiver } from '../smtp-receiver.js';

const VICTIM = 'victim@example.org';
let smtp: SmtpReceiver;
let sigil: TestSigil & { close: () => Promise<void> };

beforeAll(async () => {
  smtp = await new SmtpReceiver().start();
  sigil = await startSigil({
    email: {
      smtpUrl: smtp.url,
      from: 'id@acme.example',
      requestsPerAddress: 3,
      mailsPerAccount: 2,
      selfRegistration: true,
    },
  });
  await new UserAdmin(sigil.context.store, sigil.context.config).create({
    username: 'victim',
    password: 'harbour-violet-19',
    email: VICTIM,
    emailVerified: true,
  });
});
afterAll(async () => {
  await sigil.close();
  await smtp.close();
});

/** A loopback port nothing listens on (taken, then released). */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  const { port } = server.address() as AddressInfo;
  await new Promise((ok) => server.close(ok));
  return port;
}

/** Submits the "forgot password" form from `address`. */
async function forgot(address: string, identifier: string) {
  const b = new Browser(sigil, address);
  const page = await b.get('/account/forgot');
  const res = await b.post('/account/forgot', { csrf_token: input(page.body, 'csrf_token'), identifier });
  return {
    status: res.status,
    retryAfter: res.headers['retry-after'],
    body: res.body.replace(/name="csrf_token" value="[^"]*"/, ''),
  };
}

describe('limits on reset requests', () => {
  it('one address gets 429 with Retry-After past its quota; spam from many addresses mails the victim at most the cap; the victim still has a working link', async () => {
    const first = await forgot('203.0.113.7', VICTIM);
    expect(first.status).toBe(200);
    expect((await forgot('203.0.113.7', VICTIM)).status).toBe(200);
    expect((await forgot('203.0.113.7', 'someone@example.org')).status).toBe(200);
    const refused = await forgot('203.0.113.7', VICTIM);
    expect(refused.status).toBe(429);
    expect(Number(refused.retryAfter)).toBeGreaterThan(0);
    expect(refused.body).toContain('Too many requests.');
    // A distributed attacker: every address gets the same answer as anyone else.
    for (let i = 1; i <= 8; i++) expect(await forgot(`198.51.100.${i}`, VICTIM)).toEqual(first);
    // The victim, from their own address, is not refused either.
    expect(await forgot('192.0.2.1', 'victim')).toEqual(first);
    await smtp.waitFor(2);
    await new Promise((r) => setTimeout(r, 500));
    // At most mailsPerAccount (2) messages reached the mailbox, and the last one works.
    expect(smtp.mails).toHaveLength(2);
    const link = linkIn(smtp.mails[1]!, '/account/reset');
    const b = new Browser(sigil, '192.0.2.1');
    const form = await b.get(link);
    expect(form.status).toBe(200);
    const done = await b.post('/account/reset', {
      csrf_token: input(form.body, 'csrf_token'),
      token: input(form.body, 'token'),
      password: 'lantern-orchard-74',
      confirm_password: 'lantern-orchard-74',
    });
    expect(done.status).toBe(200);
    expect(done.body).toContain('Your password was changed');
  });

  it('bounds what it reads: an over-long identifier or token does no work and gets the usual answers', async () => {
    const sent = smtp.mails.length;
    expect((await forgot('192.0.2.99', `${'a'.repeat(400)}@example.org`)).status).toBe(200);
    const b = new Browser(sigil, '192.0.2.98');
    expect((await b.get(`/account/reset?token=${'x'.repeat(5000)}`)).status).toBe(400);
    const form = await b.get('/account/forgot');
    const post = await b.post('/account/reset', {
      csrf_token: input(form.body, 'csrf_token'),
      token: 'y'.repeat(5000),
      password: 'lantern-orchard-74',
    });
    expect(post.status).toBe(400);
    expect(post.body).toContain('This link does not work any more');
    await new Promise((r) => setTimeout(r, 300));
    expect(smtp.mails).toHaveLength(sent);
  });
});

describe('an SMTP server that does not answer', () => {
  it('changes nothing the caller sees: the same page, no error, the failure only logged', async () => {
    const lines: string[] = [];
    const down = await startSigil(
      { email: { smtpUrl: `smtp://127.0.0.1:${await closedPort()}`, from: 'id@acme.example' } },
      { logger: pino({ level: 'error' }, { write: (line: string) => void lines.push(line) }) },
    );
    try {
      await new UserAdmin(down.context.store, down.context.config).create({
        username: 'walt',
        password: 'harbour-violet-19',
        email: 'walt@example.org',
        emailVerified: true,
      });
      const b = new Browser(down);
      const page = await b.get('/account/forgot');
      const res = await b.post('/account/forgot', { csrf_token: input(page.body, 'csrf_token'), identifier: 'walt' });
      expect(res.status).toBe(200);
      expect(res.body).toContain('Check your email');
      for (let i = 0; i < 100 && lines.length === 0; i++) await new Promise((r) => setTimeout(r, 50));
      expect(lines.join('')).toContain('email: sending failed');
    } finally {
      await down.close();
    }
  });
});

describe('self-registration under concurrency', () => {
  it('two links for one address confirmed at once create one account; a guessed claim key is no link', async () => {
    const sent = smtp.mails.length;
    for (const address of ['192.0.2.50', '192.0.2.51']) {
      const b = new Browser(sigil, address);
      const page = await b.get('/account/register');
      expect(
        (await b.post('/account/register', { csrf_token: input(page.body, 'csrf_token'), email: 'twin@example.org' }))
          .status,
      ).toBe(200);
    }
    await smtp.waitFor(sent + 2);
    const links = smtp.mails.slice(sent).map((m) => linkIn(m, '/account/register/confirm'));
    const confirm = async (link: string, address: string) => {
      const b = new Browser(sigil, address);
      const page = await b.get(link);
      expect(page.status).toBe(200);
      return b.post('/account/register/confirm', {
        csrf_token: input(page.body, 'csrf_token'),
        token: input(page.body, 'token'),
        password: 'velvet-canyon-31',
      });
    };
    const results = await Promise.all(links.map((link, i) => confirm(link, `192.0.2.6${i}`)));
    expect(results.map((r) => r.status).sort()).toEqual([200, 400]);
    expect((await sigil.context.store.users.listUsers()).filter((u) => u.username === 'twin@example.org')).toHaveLength(
      1,
    );
    // The claim record's key derives from the address; presented as a link it is refused.
    const b = new Browser(sigil, '192.0.2.70');
    expect(
      (await b.get(`/account/register/confirm?token=${encodeURIComponent('claim:twin@example.org')}`)).status,
    ).toBe(400);
  });
});
