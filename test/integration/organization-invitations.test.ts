/**
 * Invitations to organizations (src/email/organization-invitations.ts, ui/invitations.ts): an
 * admin invites an address through /admin/v1, a real SMTP server on loopback receives the link,
 * and the signed-in user who holds that address, confirmed, accepts and becomes a member with the
 * invitation's roles (merged into theirs). A link works once; an expired, revoked or other user's
 * acceptance is refused; without config `email` an invitation is a 409; bounded inputs answer 4xx.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { SigilEvent } from '../../src/events/events.js';
import { Browser, input } from '../authorize-helpers.js';
import { clientTokens, startSigil, testConfig, type TestSigil } from '../helpers.js';
import { type ReceivedMail, SmtpReceiver } from '../smtp-receiver.js';
import { MAX_INVITATIONS_PER_DAY } from '../../src/email/organization-invitations.js';

type Method = 'GET' | 'POST' | 'DELETE';

let smtp: SmtpReceiver;
let sigil: TestSigil;
let admin: string;
let reader: string;
const events: SigilEvent[] = [];

const automation = {
  clientId: 'automation',
  clientSecrets: ['automation-secret'],
  allowedGrantTypes: ['client_credentials'],
  allowedScopes: ['sigil:admin', 'sigil:admin:read'],
};

beforeAll(async () => {
  smtp = await new SmtpReceiver().start();
  const base = testConfig();
  sigil = await startSigil({
    clients: [...(base.clients ?? []), automation],
    organizations: [
      { name: 'acme', displayName: 'Acme Corp' },
      { name: 'initech', displayName: 'Initech', domains: ['initech.example'], membership: 'domain' },
    ],
    email: { smtpUrl: smtp.url, from: 'id@acme.example', selfRegistration: true },
  });
  sigil.subscribe((e) => void events.push(e));
  admin = (await clientTokens(sigil, 'sigil:admin', ['automation', 'automation-secret'])).access_token;
  reader = (await clientTokens(sigil, 'sigil:admin:read', ['automation', 'automation-secret'])).access_token;
  for (const [username, email, emailVerified] of [
    ['vera', 'vera@example.net', true],
    ['uma', 'uma@example.net', false],
    ['walt', 'walt@example.net', true],
    ['xena', 'xena@example.net', true],
  ] as const) {
    const res = await call('POST', '/users', { username, password: 'orchard-lantern-58', email, emailVerified });
    expect(res.statusCode, res.body).toBe(201);
  }
});
afterAll(async () => {
  await sigil?.close();
  await smtp?.close();
});

function call(method: Method, path: string, body?: unknown, token = admin) {
  return sigil.app.inject({
    method,
    url: `/admin/v1${path}`,
    headers: {
      ...(token ? { authorization: `Bearer ${token}` } : {}),
      ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
    },
    ...(body !== undefined ? { payload: typeof body === 'string' ? body : JSON.stringify(body) } : {}),
  });
}

/** Invites `email` to acme with `roles`; the mail that arrives, and the invitation's id. */
async function invite(email: string, roles: string[]): Promise<{ mail: ReceivedMail; link: string; id: string }> {
  const sent = smtp.mails.length;
  const res = await call('POST', '/organizations/acme/invitations', { email, roles });
  expect(res.statusCode, res.body).toBe(201);
  const { invitation } = res.json<{ invitation: { id: string; email: string; roles: string[]; expiresAt: number } }>();
  expect(invitation).toMatchObject({ email, roles });
  expect(invitation.expiresAt - Math.floor(Date.now() / 1000)).toBeGreaterThan(7 * 86_400 - 60);
  const mail = await smtp.waitFor(sent + 1);
  expect(mail.to).toEqual([email]);
  const link = /https?:\/\/\S+\/account\/invitations\/[A-Za-z0-9_%-]+/.exec(mail.text)?.[0];
  if (!link) throw new Error(`no invitation link in:\n${mail.text}`);
  // The answer never carries the token.
  expect(res.body).not.toContain(link.split('/').at(-1));
  return { mail, link, id: invitation.id };
}

async function signedIn(username: string): Promise<Browser> {
  const b = new Browser(sigil, '203.0.113.30');
  await b.signIn(username, 'orchard-lantern-58');
  return b;
}

/** Opens the link and presses accept. */
async function accept(b: Browser, link: string) {
  const page = await b.get(link);
  expect(page.status, page.body).toBe(200);
  return b.post(new URL(link).pathname, { csrf_token: input(page.body, 'csrf_token'), button: 'accept' });
}

async function rolesOf(username: string): Promise<string[] | undefined> {
  const user = await sigil.context.store.users.findUserByUsername(username, null);
  const res = await call('GET', '/organizations/acme/members');
  const members = res.json<{ members: { subject: string; roles: string[] }[] }>().members;
  return members.find((m) => m.subject === user?.subjectId)?.roles;
}

describe('organization invitations', () => {
  it('invite, mail, accept by the invitee: a member with the roles, audited; the link works once', async () => {
    const { mail, link } = await invite('vera@example.net', ['billing', 'viewer']);
    expect(mail.subject).toContain('Acme Corp');
    // Not signed in: the page names the organization and asks to sign in, or to sign up.
    const anonymous = await new Browser(sigil).get(link);
    expect(anonymous.status).toBe(200);
    expect(anonymous.body).toContain('Acme Corp');
    expect(anonymous.body).toContain(`/account/login?return=${encodeURIComponent(new URL(link).pathname)}`);
    expect(anonymous.body).toContain('/account/register');
    expect(anonymous.body).not.toContain('value="accept"');
    const vera = await signedIn('vera');
    const done = await accept(vera, link);
    expect(done.status, done.body).toBe(200);
    expect(done.body).toContain('You are now a member of Acme Corp.');
    expect(await rolesOf('vera')).toEqual(['billing', 'viewer']);
    expect(events.some((e) => e.name === 'admin_changed' && e.action === 'organization.invitation_create')).toBe(true);
    expect(events.some((e) => e.name === 'admin_changed' && e.action === 'organization.member_add')).toBe(true);
    // Second use: the expired page, on GET and POST alike.
    expect((await vera.get(link)).status).toBe(400);
    const again = await vera.post(new URL(link).pathname, {
      csrf_token: input((await vera.get('/account/login')).body, 'csrf_token'),
      button: 'accept',
    });
    expect(again.status).toBe(400);
    // A second invitation merges its roles into the member's.
    const more = await invite('vera@example.net', ['admin', 'viewer']);
    expect((await accept(vera, more.link)).status).toBe(200);
    expect(await rolesOf('vera')).toEqual(['billing', 'viewer', 'admin']);
  });

  it('brings a signed-out invitee back to the invitation after signing in, where they accept', async () => {
    const { link } = await invite('xena@example.net', ['viewer']);
    const xena = new Browser(sigil, '203.0.113.31');
    const page = await xena.get(link);
    const signIn = /href="([^"]*\/account\/login\?return=[^"]+)"/.exec(page.body)?.[1];
    if (!signIn) throw new Error(`no sign-in link in:\n${page.body}`);
    const login = await xena.get(signIn.replaceAll('&amp;', '&'));
    expect(input(login.body, 'return')).toBe(new URL(link).pathname);
    const back = await xena.submitLogin(login, 'xena', 'orchard-lantern-58', { return: input(login.body, 'return') });
    expect(back.status, back.body).toBe(303);
    expect(back.location).toBe(new URL(link).pathname);
    const done = await accept(xena, link);
    expect(done.status, done.body).toBe(200);
    expect(await rolesOf('xena')).toEqual(['viewer']);
  });

  it('takes no other place to return to than its own account pages (no open redirect)', async () => {
    for (const target of [
      'https://evil.example/',
      '//evil.example',
      '/connect/authorize',
      '/account/invitations/../x',
    ]) {
      const b = new Browser(sigil, '203.0.113.32');
      const login = await b.get(`/account/login?return=${encodeURIComponent(target)}`);
      expect(login.status).toBe(200);
      expect(login.body).not.toContain('name="return"');
      const posted = await b.submitLogin(login, 'xena', 'orchard-lantern-58', { return: target });
      expect(posted.status, posted.body).toBe(200);
      expect(posted.location).toBeUndefined();
    }
  });

  it('invites only addresses at its domains to an organization of domain membership (422, no mail)', async () => {
    const sent = smtp.mails.length;
    for (const email of ['vera@example.net', 'vera@initech.example.evil.net', 'vera@sub.initech.example']) {
      const res = await call('POST', '/organizations/initech/invitations', { email, roles: [] });
      expect(res.statusCode, email).toBe(422);
      expect(res.json<{ errors: { path: string }[] }>().errors[0]?.path).toBe('email');
    }
    expect((await call('GET', '/organizations/initech/invitations')).json()).toEqual({ invitations: [] });
    const ok = await call('POST', '/organizations/initech/invitations', { email: 'Ann@INITECH.example', roles: [] });
    expect(ok.statusCode, ok.body).toBe(201);
    expect((await smtp.waitFor(sent + 1)).to[0]?.toLowerCase()).toBe('ann@initech.example');
  });

  it('stops an organization past its invitations of the day (429, Retry-After, nothing stored or mailed); another organization may go on', async () => {
    const acme = sigil.context.organizations.byName('acme');
    if (!acme) throw new Error('no acme');
    // The day's count as 200 invitations sent and revoked would leave it (revoking frees the pending cap only).
    for (let i = 0; i < MAX_INVITATIONS_PER_DAY; i++)
      await sigil.context.limiter.counters.increment([`quota:invitation:${acme.id}`], 86_400_000, Date.now());
    const pendingBefore = (await call('GET', '/organizations/acme/invitations')).body;
    const sent = smtp.mails.length;
    const refused = await call('POST', '/organizations/acme/invitations', { email: 'zed@example.net', roles: [] });
    expect(refused.statusCode, refused.body).toBe(429);
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(86_000);
    expect((await call('GET', '/organizations/acme/invitations')).body).toBe(pendingBefore);
    const other = await call('POST', '/organizations/initech/invitations', { email: 'zed@initech.example', roles: [] });
    expect(other.statusCode, other.body).toBe(201);
    expect((await smtp.waitFor(sent + 1)).to).toEqual(['zed@initech.example']);
    await sigil.context.limiter.counters.reset([`quota:invitation:${acme.id}`]);
  });

  it('refuses another user, and an unconfirmed address; the invitation stays for its invitee', async () => {
    const { link } = await invite('uma@example.net', []);
    const walt = await signedIn('walt');
    const wrong = await accept(walt, link);
    expect(wrong.status).toBe(403);
    expect(wrong.body).toContain('another address');
    // uma holds the address, but not confirmed.
    const uma = await signedIn('uma');
    expect((await accept(uma, link)).status).toBe(403);
    expect(await rolesOf('walt')).toBeUndefined();
    expect(await rolesOf('uma')).toBeUndefined();
  });

  it('lists pending invitations; a revoked one is gone and its link refused', async () => {
    const { link, id } = await invite('walt@example.net', ['viewer']);
    const listed = await call('GET', '/organizations/acme/invitations', undefined, reader);
    expect(listed.statusCode).toBe(200);
    expect(listed.json<{ invitations: { id: string }[] }>().invitations.map((i) => i.id)).toContain(id);
    expect((await call('DELETE', `/organizations/acme/invitations/${id}`)).statusCode).toBe(204);
    expect((await call('DELETE', `/organizations/acme/invitations/${id}`)).statusCode).toBe(404);
    const after = await call('GET', '/organizations/acme/invitations');
    expect(after.json<{ invitations: { id: string }[] }>().invitations.map((i) => i.id)).not.toContain(id);
    expect((await new Browser(sigil).get(link)).status).toBe(400);
    const walt = await signedIn('walt');
    const page = await walt.get(link);
    expect(page.status).toBe(400);
    expect(await rolesOf('walt')).toBeUndefined();
  });

  it('refuses an expired invitation', async () => {
    const { link } = await invite('walt@example.net', []);
    const token = decodeURIComponent(new URL(link).pathname.split('/').at(-1) ?? '');
    const walt = await sigil.context.store.users.findUserByUsername('walt', null);
    vi.useFakeTimers({ toFake: ['Date'], now: Date.now() + 7 * 86_400 * 1000 + 1000 });
    try {
      expect((await new Browser(sigil).get(link)).status).toBe(400);
      expect(await sigil.context.invitations.accept(token, walt?.subjectId ?? '', '/account/invitations')).toEqual({
        ok: false,
        reason: 'invalid',
      });
    } finally {
      vi.useRealTimers();
    }
    expect(await rolesOf('walt')).toBeUndefined();
  });

  it('bounds its inputs (4xx, never 500) and needs sigil:admin', async () => {
    const sent = smtp.mails.length;
    const bad: unknown[] = [
      { email: 'not-an-address', roles: [] },
      { email: `${'a'.repeat(300)}@example.net`, roles: [] },
      { email: 'x@example.net', roles: ['has space'] },
      { email: 'x@example.net', roles: Array.from({ length: 51 }, (_, i) => `r${i}`) },
      { email: 'x@example.net', roles: ['a'.repeat(101)] },
      { email: 'x@example.net', extra: true },
      { roles: [] },
      'not json',
      [],
    ];
    for (const body of bad) {
      const res = await call('POST', '/organizations/acme/invitations', body);
      expect(res.statusCode, `${JSON.stringify(body)}: ${res.body}`).toBeGreaterThanOrEqual(400);
      expect(res.statusCode).toBeLessThan(500);
    }
    expect((await call('POST', '/organizations/nope/invitations', { email: 'x@example.net' })).statusCode).toBe(404);
    expect((await call('DELETE', `/organizations/acme/invitations/${'x'.repeat(500)}`)).statusCode).toBeLessThan(500);
    expect((await new Browser(sigil).get(`/account/invitations/${'x'.repeat(90)}`)).status).toBe(400);
    expect((await new Browser(sigil).get(`/account/invitations/${'x'.repeat(500)}`)).status).toBe(400);
    expect((await new Browser(sigil).get(`/account/invitations/${'x'.repeat(800)}`)).status).toBe(414);
    expect((await call('POST', '/organizations/acme/invitations', { email: 'x@example.net' }, reader)).statusCode).toBe(
      403,
    );
    expect((await call('GET', '/organizations/acme/invitations', undefined, '')).statusCode).toBe(401);
    expect(smtp.mails.length).toBe(sent);
  });
});

describe('organization invitations without config email', () => {
  it('answers 409 "mail is not configured", and still lists', async () => {
    const base = testConfig();
    const plain = await startSigil({
      clients: [...(base.clients ?? []), automation],
      organizations: [{ name: 'acme', displayName: 'Acme Corp' }],
    });
    try {
      const token = (await clientTokens(plain, 'sigil:admin', ['automation', 'automation-secret'])).access_token;
      const post = await plain.app.inject({
        method: 'POST',
        url: '/admin/v1/organizations/acme/invitations',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        payload: JSON.stringify({ email: 'x@example.net', roles: [] }),
      });
      expect(post.statusCode).toBe(409);
      expect(post.json<{ detail: string }>().detail).toContain('mail is not configured');
      const list = await plain.app.inject({
        method: 'GET',
        url: '/admin/v1/organizations/acme/invitations',
        headers: { authorization: `Bearer ${token}` },
      });
      expect(list.statusCode).toBe(200);
    } finally {
      await plain.close();
    }
  });
});

describe('organization invitations when the SMTP server cannot be reached', () => {
  it('answers 503, keeps no pending invitation, and never a 500', async () => {
    const base = testConfig();
    const closed = await new SmtpReceiver().start();
    const url = closed.url;
    await closed.close();
    const down = await startSigil({
      clients: [...(base.clients ?? []), automation],
      organizations: [{ name: 'acme', displayName: 'Acme Corp' }],
      email: { smtpUrl: url, from: 'id@acme.example' },
    });
    try {
      const token = (await clientTokens(down, 'sigil:admin', ['automation', 'automation-secret'])).access_token;
      const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
      const post = await down.app.inject({
        method: 'POST',
        url: '/admin/v1/organizations/acme/invitations',
        headers,
        payload: JSON.stringify({ email: 'x@example.net', roles: [] }),
      });
      expect(post.statusCode, post.body).toBe(503);
      expect(post.body).toContain('temporarily_unavailable');
      const list = await down.app.inject({
        method: 'GET',
        url: '/admin/v1/organizations/acme/invitations',
        headers: { authorization: `Bearer ${token}` },
      });
      expect(list.statusCode).toBe(200);
      expect(JSON.stringify(list.json())).not.toContain('x@example.net');
    } finally {
      await down.close();
    }
  });
});
