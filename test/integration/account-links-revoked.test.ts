/**
 * Links mailed to a user end when the password is set or the account ends
 * (src/stores/records/email-links.ts `revokeAllOf`): a password reset, a password change on
 * /account, the user made inactive and the user removed leave no earlier reset, verification or
 * registration link working. Whoever read an older mail (a shared or compromised mailbox) then
 * sets no password of their own. Real SMTP to an smtp-server on loopback; the pages through
 * Fastify's inject, as the other mail tests.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { UserAdmin } from '../../src/admin/users.js';
import { Browser, input } from '../authorize-helpers.js';
import { clientTokens, startSigil, testConfig, tokenRequest, type TestSigil } from '../helpers.js';
import { linkIn, SmtpReceiver } from '../smtp-receiver.js';

const ROPC = ['ropc', 'ropc-secret'] as const;
const LINK_INVALID = 'This link does not work any more';
let smtp: SmtpReceiver;
let sigil: TestSigil;
let admin: UserAdmin;

beforeAll(async () => {
  smtp = await new SmtpReceiver().start();
  sigil = await startSigil({
    clients: [
      ...testConfig().clients!,
      {
        clientId: 'scim-bot',
        clientSecrets: ['scim-bot-secret'],
        allowedGrantTypes: ['client_credentials'],
        allowedScopes: ['scim'],
      },
    ],
    email: {
      smtpUrl: smtp.url,
      from: 'id@acme.example',
      requestsPerAddress: 100,
      mailsPerAccount: 10,
      selfRegistration: true,
    },
  });
  admin = new UserAdmin(sigil.context.store, sigil.context.config);
});
afterAll(async () => {
  await sigil?.close();
  await smtp?.close();
});

/** Posts the form at `page` to `action` with `fields` (the CSRF token read from the page). */
async function submit(b: Browser, page: string, action: string, fields: Record<string, string>) {
  const form = await b.get(page);
  expect(form.status, form.body).toBe(200);
  return b.post(action, { csrf_token: input(form.body, 'csrf_token'), ...fields });
}

/** Asks for a reset of `identifier` and returns the link of the mail that arrives. */
async function resetLink(identifier: string): Promise<string> {
  const sent = smtp.mails.length;
  expect(
    (await submit(new Browser(sigil, '192.0.2.10'), '/account/forgot', '/account/forgot', { identifier })).status,
  ).toBe(200);
  return linkIn(await smtp.waitFor(sent + 1), '/account/reset');
}

/** Follows a reset link and sets `password` with it; the final page. */
async function resetWith(link: string, password: string) {
  const b = new Browser(sigil, '203.0.113.30');
  const form = await b.get(link);
  if (form.status !== 200) return form;
  return b.post('/account/reset', {
    csrf_token: input(form.body, 'csrf_token'),
    token: input(form.body, 'token'),
    password,
    confirm_password: password,
  });
}

/** The handle a mailed link carries. */
function tokenOf(link: string): string {
  return new URL(link, 'http://x').searchParams.get('token')!;
}

/** Expects the link to be refused both when opened and when its form is posted anyway. */
async function expectRefused(link: string, path: string, fields: Record<string, string>) {
  const b = new Browser(sigil, '198.51.100.40');
  const opened = await b.get(link);
  expect(opened.status).toBe(400);
  expect(opened.body).toContain(LINK_INVALID);
  const confirm: Record<string, string> = fields.password === undefined ? {} : { confirm_password: fields.password };
  const posted = await submit(b, '/account/forgot', path, { token: tokenOf(link), ...fields, ...confirm });
  expect(posted.status).toBe(400);
  expect(posted.body).toContain(LINK_INVALID);
}

async function signsIn(username: string, password: string): Promise<boolean> {
  return (
    (await tokenRequest(sigil, { grant_type: 'password', username, password, scope: 'openid' }, ROPC)).statusCode ===
    200
  );
}

describe('a password set ends the links mailed before', () => {
  it('a reset with the newer of two reset links ends the older: the password stays the newer one', async () => {
    await admin.create({
      username: 'rhea',
      password: 'harbour-violet-19',
      email: 'rhea@example.org',
      emailVerified: true,
    });
    const older = await resetLink('rhea');
    const newer = await resetLink('rhea@example.org');
    const done = await resetWith(newer, 'lantern-orchard-74');
    expect(done.status, done.body).toBe(200);
    expect(done.body).toContain('Your password was changed');
    await expectRefused(older, '/account/reset', { password: 'attacker-pick-55' });
    expect(await signsIn('rhea', 'attacker-pick-55')).toBe(false);
    expect(await signsIn('rhea', 'lantern-orchard-74')).toBe(true);
  });

  it('a password change on /account ends the reset link and the verification link of an email change', async () => {
    const { subjectId } = await admin.create({
      username: 'carl',
      password: 'harbour-violet-19',
      email: 'carl@example.org',
      emailVerified: true,
    });
    const reset = await resetLink('carl');
    // The address changes; the new one gets a verification link.
    await admin.setEmail('carl', null, 'carl@new.example', false);
    const sent = smtp.mails.length;
    await sigil.context.email!.requestVerification(subjectId, 'en');
    const verify = linkIn(await smtp.waitFor(sent + 1), '/account/verify');
    const b = new Browser(sigil, '203.0.113.31');
    await b.signIn('carl', 'harbour-violet-19');
    const changed = await submit(b, '/account/password', '/account/password', {
      button: 'change',
      current_password: 'harbour-violet-19',
      new_password: 'granite-otter-lantern-42',
      confirm_password: 'granite-otter-lantern-42',
    });
    expect(changed.status, changed.body).toBe(200);
    expect(changed.body).toContain('Your password has been changed.');
    await expectRefused(reset, '/account/reset', { password: 'attacker-pick-55' });
    await expectRefused(verify, '/account/verify', {});
    expect((await sigil.context.store.emails.primary(subjectId))?.verified).toBe(false);
    expect(await signsIn('carl', 'attacker-pick-55')).toBe(false);
    expect(await signsIn('carl', 'granite-otter-lantern-42')).toBe(true);
  });
});

describe('a password an administrator sets ends the links mailed before', () => {
  it('sigil users passwd (UserAdmin.setPassword) and a SCIM PATCH of the password each end the reset link', async () => {
    const { subjectId } = await admin.create({
      username: 'gus',
      password: 'harbour-violet-19',
      email: 'gus@example.org',
      emailVerified: true,
    });
    const first = await resetLink('gus');
    await admin.setPassword('gus', null, 'meadow-copper-lantern-61');
    await expectRefused(first, '/account/reset', { password: 'attacker-pick-55' });

    const second = await resetLink('gus');
    const token = (await clientTokens(sigil, 'scim', ['scim-bot', 'scim-bot-secret'])).access_token;
    const patched = await sigil.app.inject({
      method: 'PATCH',
      url: `/scim/v2/Users/${subjectId}`,
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/scim+json' },
      payload: JSON.stringify({
        schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'],
        Operations: [{ op: 'replace', path: 'password', value: 'orchard-granite-heron-27' }],
      }),
    });
    expect(patched.statusCode, patched.body).toBe(200);
    await expectRefused(second, '/account/reset', { password: 'attacker-pick-55' });
    expect(await signsIn('gus', 'attacker-pick-55')).toBe(false);
    expect(await signsIn('gus', 'orchard-granite-heron-27')).toBe(true);
  });
});

describe('the account made inactive or removed ends the links mailed before', () => {
  it('made inactive and active again, the user holds no working reset link', async () => {
    const { subjectId } = await admin.create({
      username: 'dina',
      password: 'harbour-violet-19',
      email: 'dina@example.org',
      emailVerified: true,
    });
    const link = await resetLink('dina');
    const audit = { events: sigil.context.events, endpoint: 'cli' };
    await admin.setActive(subjectId, false, audit);
    await admin.setActive(subjectId, true, audit);
    await expectRefused(link, '/account/reset', { password: 'attacker-pick-55' });
    expect(await signsIn('dina', 'attacker-pick-55')).toBe(false);
    expect(await signsIn('dina', 'harbour-violet-19')).toBe(true);
  });

  it("removed, the user's reset link sets no password of a later user of the subject, nor a registration link a new account", async () => {
    const audit = { events: sigil.context.events, endpoint: 'cli' };
    await admin.create({
      subjectId: 's-emil',
      username: 'emil',
      password: 'harbour-violet-19',
      email: 'emil@example.org',
      emailVerified: true,
    });
    const reset = await resetLink('emil');
    await admin.deleteNamed('emil', null, audit);
    await admin.create({
      subjectId: 's-emil',
      username: 'emil',
      password: 'copper-meadow-83',
      email: 'emil@example.org',
      emailVerified: true,
    });
    await expectRefused(reset, '/account/reset', { password: 'attacker-pick-55' });
    expect(await signsIn('emil', 'copper-meadow-83')).toBe(true);

    // Two registration mails for one address; the account is made from the first, then removed.
    const sent = smtp.mails.length;
    for (const address of ['192.0.2.20', '192.0.2.21'])
      expect(
        (
          await submit(new Browser(sigil, address), '/account/register', '/account/register', {
            email: 'fay@example.org',
          })
        ).status,
      ).toBe(200);
    await smtp.waitFor(sent + 2);
    const [first, second] = smtp.mails.slice(sent).map((m) => linkIn(m, '/account/register/confirm'));
    const owner = new Browser(sigil, '203.0.113.32');
    const form = await owner.get(first!);
    const made = await owner.post('/account/register/confirm', {
      csrf_token: input(form.body, 'csrf_token'),
      token: input(form.body, 'token'),
      password: 'owner-picked-river-48',
    });
    expect(made.status, made.body).toBe(200);
    await admin.deleteNamed('fay@example.org', null, audit);
    await expectRefused(second!, '/account/register/confirm', { password: 'attacker-pick-55' });
    expect(await signsIn('fay@example.org', 'attacker-pick-55')).toBe(false);
  });
});
