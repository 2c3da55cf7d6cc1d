/**
 * The console's mail actions on a user's page, over HTTP with a real SMTP server on loopback: a
 * password reset link goes to a stored user's confirmed address (never to an unconfirmed one), a
 * new confirmation link to an unconfirmed one; the administrator never sees a link; each action
 * is audited; without the CSRF token nothing is sent; a config-file user has no such section.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { UserAdmin } from '../../src/admin/users.js';
import type { SigilEvent } from '../../src/events/events.js';
import type { Browser } from '../authorize-helpers.js';
import { startAuthorizeSigil } from '../authorize-helpers.js';
import {
  CONSOLE_ROOT,
  consoleBrowser,
  consoleChanges,
  consolePage,
  consoleSubmit,
  postFields,
} from '../console-helpers.js';
import { testConfig, type TestSigil } from '../helpers.js';
import { linkIn, SmtpReceiver } from '../smtp-receiver.js';

let smtp: SmtpReceiver;
let sigil: TestSigil;
let admin: Browser;
const events: SigilEvent[] = [];
let confirmed = '';
let unconfirmed = '';

beforeAll(async () => {
  smtp = await new SmtpReceiver().start();
  sigil = await startAuthorizeSigil([], {
    users: [...(testConfig().users ?? []), CONSOLE_ROOT],
    email: { smtpUrl: smtp.url, from: 'id@acme.example', mailsPerAccount: 2 },
  });
  sigil.subscribe((e) => void events.push(e));
  const users = new UserAdmin(sigil.context.store, sigil.context.config);
  confirmed = (
    await users.create({
      username: 'gwen',
      password: 'quiet-harbour-61',
      email: 'gwen@example.org',
      emailVerified: true,
    })
  ).subjectId;
  unconfirmed = (await users.create({ username: 'hal', password: 'quiet-harbour-62', email: 'hal@example.org' }))
    .subjectId;
  admin = await consoleBrowser(sigil, 'root');
});
afterAll(async () => {
  await sigil?.close();
  await smtp?.close();
});

const userPage = (sub: string) => `/admin/users/${encodeURIComponent(sub)}`;

describe('console mail actions', () => {
  it('mails a reset link to a confirmed address; the page says so and shows no link', async () => {
    const sent = smtp.mails.length;
    const done = await consoleSubmit(admin, userPage(confirmed), `${userPage(confirmed)}/mail`, [['button', 'reset']]);
    expect(done.status, done.body).toBe(303);
    const shown = await consolePage(admin, done.location ?? '');
    expect(shown.body).toContain('A password reset link is on its way');
    const mail = await smtp.waitFor(sent + 1);
    expect(mail.to).toEqual(['gwen@example.org']);
    const link = linkIn(mail, '/account/reset');
    expect(shown.body).not.toContain(new URL(link).searchParams.get('token'));
    expect(consoleChanges(events, 'user.send_reset')).toEqual([
      expect.objectContaining({ target: { type: 'user', id: confirmed }, changes: { sent: true } }),
    ]);
  });

  it('sends no reset link to an unconfirmed address, and a confirmation link instead', async () => {
    const sent = smtp.mails.length;
    const refused = await consoleSubmit(admin, userPage(unconfirmed), `${userPage(unconfirmed)}/mail`, [
      ['button', 'reset'],
    ]);
    expect((await consolePage(admin, refused.location ?? '')).body).toContain('No mail was sent');
    const verify = await consoleSubmit(admin, userPage(unconfirmed), `${userPage(unconfirmed)}/mail`, [
      ['button', 'verify'],
    ]);
    expect((await consolePage(admin, verify.location ?? '')).body).toContain('A new confirmation link is on its way');
    const mail = await smtp.waitFor(sent + 1);
    expect(mail.to).toEqual(['hal@example.org']);
    linkIn(mail, '/account/verify');
    await new Promise((r) => setTimeout(r, 300));
    expect(smtp.mails).toHaveLength(sent + 1);
  });

  it('sends nothing without the CSRF token, for an unknown action, or for a config-file user', async () => {
    const sent = smtp.mails.length;
    expect((await postFields(admin, `${userPage(confirmed)}/mail`, [['button', 'reset']])).status).toBe(403);
    const odd = await consoleSubmit(admin, userPage(confirmed), `${userPage(confirmed)}/mail`, [['button', 'other']]);
    expect(odd.status).toBe(400);
    // alice is a config-file user: no mail section, and the action is refused.
    expect((await consolePage(admin, userPage('1'))).body).not.toContain('/mail"');
    expect((await consoleSubmit(admin, userPage('1'), `${userPage('1')}/mail`, [['button', 'reset']])).status).toBe(
      400,
    );
    await new Promise((r) => setTimeout(r, 300));
    expect(smtp.mails).toHaveLength(sent);
  });
});
