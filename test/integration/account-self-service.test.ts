/**
 * Self-service on /account over HTTP: password change (current password, failure
 * limits, policy, other sessions and tokens ended), sessions (listed, one ended, another user's
 * left alone), connected apps (revoked, afterwards the refresh token fails), profile claims, and
 * the attacks: no CSRF token, another user's session id or client, a config user's read-only
 * account, claims that are not editable.
 */
import { hash } from '@node-rs/argon2';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Browser, input } from '../authorize-helpers.js';
import { enrollTotp, isMfaPage, submitCode, totpCode } from '../mfa-helpers.js';
import { passwordTokens, sleep, startSigil, type TestSigil, tokenRequest, userinfo } from '../helpers.js';
import type { SigilEvent } from '../../src/events/events.js';

const ERIN = { username: 'erin', subjectId: 's-erin', password: 'violet kettle harbour' } as const;
const NEW_PASSWORD = 'granite otter lantern 42';

let sigil: TestSigil;
let events: SigilEvent[];
beforeEach(async () => {
  sigil = await startSigil({
    rateLimits: { maxFailures: 3 },
    account: { editableClaims: ['name', 'given_name', 'birthdate'] },
  });
  await sigil.context.store.users.addUser({
    subjectId: ERIN.subjectId,
    username: ERIN.username,
    tenant: null,
    passwordHash: await hash(ERIN.password),
    claims: { name: 'Erin Example', email: 'erin@example.com', email_verified: true, role: ['user'] },
    isActive: true,
  });
  events = [];
  sigil.subscribe((e) => void events.push(e));
});
afterEach(async () => {
  await sigil.close();
});

/** A browser signed in as `username` on the bare login page. */
async function signedIn(username: string, password: string, address = '127.0.0.1'): Promise<Browser> {
  const b = new Browser(sigil, address);
  await b.signIn(username, password);
  return b;
}

/** Opens a page and posts its form (the CSRF token read from it) with `fields`. */
async function submit(b: Browser, page: string, action: string, fields: Record<string, string>) {
  const form = await b.get(page);
  expect(form.status, form.body).toBe(200);
  return b.post(action, { csrf_token: input(form.body, 'csrf_token'), ...fields });
}

/** A CSRF token of the browser, from a page that always has a form (the profile form, read-only or not). */
async function csrf(b: Browser): Promise<string> {
  return input((await b.get('/account/profile')).body, 'csrf_token');
}

function changePassword(b: Browser, fields: Record<string, string>) {
  return submit(b, '/account/password', '/account/password', { button: 'change', ...fields });
}

async function isSignedIn(b: Browser): Promise<boolean> {
  return (await b.get('/account')).status === 200;
}

/** The session ids offered for ending on /account/sessions. */
async function listedSids(b: Browser): Promise<string[]> {
  const page = await b.get('/account/sessions');
  return [...page.body.matchAll(/name="sid" value="([^"]+)"/g)].map((m) => m[1] ?? '');
}

describe('password change', () => {
  it('needs the right current password; afterwards the old one fails, the new one works, other sessions and tokens end', async () => {
    const b = await signedIn(ERIN.username, ERIN.password);
    const other = await signedIn(ERIN.username, ERIN.password, '10.0.0.2');
    const tokens = await passwordTokens(sigil, {
      username: ERIN.username,
      password: ERIN.password,
      scope: 'openid offline_access',
    });

    const wrong = await changePassword(b, {
      current_password: 'not it',
      new_password: NEW_PASSWORD,
      confirm_password: NEW_PASSWORD,
    });
    expect(wrong.status).toBe(400);
    expect(wrong.body).toContain('The current password is incorrect.');
    const weak = await changePassword(b, {
      current_password: ERIN.password,
      new_password: 'password1',
      confirm_password: 'password1',
    });
    expect(weak.status).toBe(400);
    expect(weak.body).toContain('common or has appeared in data breaches');
    const mismatch = await changePassword(b, {
      current_password: ERIN.password,
      new_password: NEW_PASSWORD,
      confirm_password: `${NEW_PASSWORD}!`,
    });
    expect(mismatch.status).toBe(400);
    expect(mismatch.body).toContain('The two new passwords are not the same.');
    expect(await isSignedIn(other)).toBe(true);

    const done = await changePassword(b, {
      current_password: ERIN.password,
      new_password: NEW_PASSWORD,
      confirm_password: NEW_PASSWORD,
    });
    expect(done.status, done.body).toBe(200);
    expect(done.body).toContain('Your password has been changed.');
    expect(await isSignedIn(b)).toBe(true);
    expect(await isSignedIn(other)).toBe(false);
    const refresh = await tokenRequest(
      sigil,
      { grant_type: 'refresh_token', refresh_token: tokens.refresh_token ?? '' },
      ['ropc', 'ropc-secret'],
    );
    expect(refresh.statusCode).toBe(400);
    expect(refresh.json()).toMatchObject({ error: 'invalid_grant' });

    const old = await tokenRequest(
      sigil,
      { grant_type: 'password', username: ERIN.username, password: ERIN.password },
      ['ropc', 'ropc-secret'],
    );
    expect(old.statusCode).toBe(400);
    await signedIn(ERIN.username, NEW_PASSWORD);
    expect(events.filter((e) => e.name.startsWith('password_change')).map((e) => `${e.name}:${e.subjectId}`)).toEqual([
      'password_change_failed:s-erin',
      'password_change_failed:s-erin',
      'password_changed:s-erin',
    ]);
  });

  it('limits wrong current passwords per account and address (429), without locking the account for another address', async () => {
    const b = await signedIn(ERIN.username, ERIN.password);
    for (let i = 0; i < 3; i++)
      expect(
        (
          await changePassword(b, {
            current_password: `guess ${i}`,
            new_password: NEW_PASSWORD,
            confirm_password: NEW_PASSWORD,
          })
        ).status,
      ).toBe(400);
    const blocked = await changePassword(b, {
      current_password: ERIN.password,
      new_password: NEW_PASSWORD,
      confirm_password: NEW_PASSWORD,
    });
    expect(blocked.status).toBe(429);
    expect(blocked.headers['retry-after']).toBeDefined();
    // The right password from another address still works: the guesser cannot lock the user out.
    const elsewhere = await signedIn(ERIN.username, ERIN.password, '10.0.0.9');
    expect(
      (
        await changePassword(elsewhere, {
          current_password: ERIN.password,
          new_password: NEW_PASSWORD,
          confirm_password: NEW_PASSWORD,
        })
      ).status,
    ).toBe(200);
  });

  it('needs no current password after a recent sign-in with a second factor', async () => {
    const b = await signedIn(ERIN.username, ERIN.password);
    const { secret } = await enrollTotp(b);
    const passwordOnly = (await b.get('/account/password')).body;
    // A factor counts only when it was held before the sign-in (times in whole seconds).
    await sleep(1100);
    const strong = new Browser(sigil);
    const step = await strong.login('/account/login', ERIN.username, ERIN.password);
    expect(isMfaPage(step), step.body).toBe(true);
    // The next step's code (within the window): the current one was used at enrollment.
    await submitCode(strong, step, totpCode(secret, 1));
    const page = await strong.get('/account/password');
    expect(page.body).toContain('your current password is not needed');
    expect(page.body).not.toContain('name="current_password"');
    const done = await strong.post('/account/password', {
      csrf_token: input(page.body, 'csrf_token'),
      new_password: NEW_PASSWORD,
      confirm_password: NEW_PASSWORD,
      button: 'change',
    });
    expect(done.status, done.body).toBe(200);
    expect(events.find((e) => e.name === 'password_changed')?.method).toBe('recent_sign_in');
    // The password-only session of the same user (ended by the change) did need the current one.
    expect(passwordOnly).toContain('name="current_password"');
    expect(await isSignedIn(b)).toBe(false);
  });

  it('is read-only for a config-file user, with the reason', async () => {
    const b = await signedIn('alice', 'alice');
    const page = await b.get('/account/password');
    expect(page.body).toContain('set in the server&#39;s configuration file');
    expect(page.body).not.toContain('name="new_password"');
    const post = await b.post('/account/password', {
      csrf_token: await csrf(b),
      current_password: 'alice',
      new_password: NEW_PASSWORD,
      confirm_password: NEW_PASSWORD,
    });
    expect(post.status).toBe(403);
    await signedIn('alice', 'alice');
  });

  it('refuses a form without its CSRF token (403), changing nothing', async () => {
    const b = await signedIn(ERIN.username, ERIN.password);
    const res = await b.post('/account/password', {
      current_password: ERIN.password,
      new_password: NEW_PASSWORD,
      confirm_password: NEW_PASSWORD,
      button: 'change',
    });
    expect(res.status).toBe(403);
    expect(res.body).toContain('the form has expired');
    await signedIn(ERIN.username, ERIN.password);
    expect(events.some((e) => e.name === 'password_changed')).toBe(false);
  });
});

describe('sessions', () => {
  it("lists the user's sessions with address and marks this one; ending another signs that browser out", async () => {
    const b = await signedIn('alice', 'alice');
    const phone = await signedIn('alice', 'alice', '10.0.0.7');
    const page = await b.get('/account/sessions');
    expect(page.body).toContain('from 10.0.0.7');
    expect(page.body).toContain('(this browser)');
    const sids = await listedSids(b);
    expect(sids).toHaveLength(1);
    const ended = await b.post('/account/sessions/end', {
      csrf_token: input(page.body, 'csrf_token'),
      sid: sids[0] ?? '',
    });
    expect(ended.status, ended.body).toBe(200);
    expect(ended.body).toContain('The session has been ended.');
    expect(await isSignedIn(phone)).toBe(false);
    expect(await isSignedIn(b)).toBe(true);
    expect(events.find((e) => e.name === 'session_ended')).toMatchObject({ subjectId: '1', sessionId: sids[0] });
  });

  it("never ends another user's session, nor the current one (404, nothing happens)", async () => {
    const alice = await signedIn('alice', 'alice');
    const aliceOther = await signedIn('alice', 'alice', '10.0.0.3');
    // Each browser lists the other one's session (its own is marked, without a button).
    const [otherSid] = await listedSids(alice);
    const [currentSid] = await listedSids(aliceOther);
    const bob = await signedIn('bob', 'bob');
    const res = await bob.post('/account/sessions/end', { csrf_token: await csrf(bob), sid: otherSid ?? '' });
    expect(res.status).toBe(404);
    expect(res.body).toContain('There is no such session of yours');
    expect(await isSignedIn(aliceOther)).toBe(true);
    const page = await alice.get('/account/sessions');
    expect(
      (await alice.post('/account/sessions/end', { csrf_token: input(page.body, 'csrf_token'), sid: currentSid ?? '' }))
        .status,
    ).toBe(404);
    expect(await isSignedIn(alice)).toBe(true);
    expect(events.some((e) => e.name === 'session_ended')).toBe(false);
  });

  it('refuses ending a session without the CSRF token', async () => {
    const b = await signedIn('alice', 'alice');
    const other = await signedIn('alice', 'alice', '10.0.0.4');
    const [sid] = await listedSids(b);
    expect((await b.post('/account/sessions/end', { sid: sid ?? '' })).status).toBe(403);
    expect(await isSignedIn(other)).toBe(true);
  });

  it('sends a signed-out visitor to the login page', async () => {
    const res = await new Browser(sigil).get('/account/sessions');
    expect(res.status).toBe(303);
    expect(res.location).toBe('/account/login?return=%2Faccount');
  });
});

describe('connected apps', () => {
  it('lists a client holding a refresh token; revoking it makes the refresh token fail with invalid_grant', async () => {
    const tokens = await passwordTokens(sigil, { scope: 'openid api1 offline_access' });
    const b = await signedIn('alice', 'alice');
    const page = await b.get('/account/apps');
    expect(page.body).toContain('name="client_id" value="ropc"');
    expect(page.body).toContain('api1, offline_access, openid');
    const revoked = await b.post('/account/apps/revoke', {
      csrf_token: input(page.body, 'csrf_token'),
      client_id: 'ropc',
    });
    expect(revoked.status).toBe(200);
    expect(revoked.body).toContain('access has been revoked');
    expect(revoked.body).not.toContain('name="client_id" value="ropc"');
    const refresh = await tokenRequest(
      sigil,
      { grant_type: 'refresh_token', refresh_token: tokens.refresh_token ?? '' },
      ['ropc', 'ropc-secret'],
    );
    expect(refresh.statusCode).toBe(400);
    expect(refresh.json()).toMatchObject({ error: 'invalid_grant' });
    expect(events.find((e) => e.name === 'grants_revoked')).toMatchObject({ subjectId: '1', clientId: 'ropc' });
  });

  it("never revokes another user's grants: a client the user has nothing at is 404, and nothing changes", async () => {
    const tokens = await passwordTokens(sigil, { scope: 'openid api1 offline_access' });
    const bob = await signedIn('bob', 'bob');
    const page = await bob.get('/account/apps');
    expect(page.body).toContain('No app can access your account.');
    const res = await bob.post('/account/apps/revoke', { csrf_token: await csrf(bob), client_id: 'ropc' });
    expect(res.status).toBe(404);
    const refresh = await tokenRequest(
      sigil,
      { grant_type: 'refresh_token', refresh_token: tokens.refresh_token ?? '' },
      ['ropc', 'ropc-secret'],
    );
    expect(refresh.statusCode).toBe(200);
    expect((await bob.post('/account/apps/revoke', { client_id: 'ropc' })).status).toBe(403);
  });
});

describe('languages', () => {
  it('speaks German to a German browser', async () => {
    const b = await signedIn(ERIN.username, ERIN.password);
    const de = { 'accept-language': 'de-DE,de;q=0.9,en;q=0.5' };
    expect((await b.get('/account/password', de)).body).toContain('<h1>Passwort ändern</h1>');
    expect((await b.get('/account/sessions', de)).body).toContain('(dieser Browser), angemeldet am');
    expect((await b.get('/account/apps', de)).body).toContain('Keine App hat Zugriff auf Ihr Konto.');
    expect((await b.get('/account/profile', de)).body).toContain('Vollständiger Name');
  });
});

describe('profile', () => {
  it('saves the editable claims, visible at userinfo; ignores any other field', async () => {
    const b = await signedIn(ERIN.username, ERIN.password);
    const res = await submit(b, '/account/profile', '/account/profile', {
      name: 'Erin E. Example',
      given_name: 'Erin',
      birthdate: '1990-04-01',
      email: 'evil@example.com',
      role: 'admin',
      sub: 'x',
      button: 'save',
    });
    expect(res.status, res.body).toBe(200);
    expect(res.body).toContain('Your profile has been saved.');
    const tokens = await passwordTokens(sigil, {
      username: ERIN.username,
      password: ERIN.password,
      scope: 'openid profile email roles',
    });
    const info = (await userinfo(sigil, tokens.access_token)).json<Record<string, unknown>>();
    expect(info).toMatchObject({
      sub: 's-erin',
      name: 'Erin E. Example',
      given_name: 'Erin',
      email: 'erin@example.com',
      role: ['user'],
    });
    expect(events.find((e) => e.name === 'profile_updated')?.claims).toEqual(['name', 'given_name', 'birthdate']);
  });

  it('shows what is wrong and stores nothing when one value is refused', async () => {
    const b = await signedIn(ERIN.username, ERIN.password);
    const res = await submit(b, '/account/profile', '/account/profile', {
      name: 'New Name',
      birthdate: 'yesterday',
      given_name: 'x'.repeat(201),
      button: 'save',
    });
    expect(res.status).toBe(400);
    expect(res.body).toContain('Please give a date as YYYY-MM-DD.');
    expect(res.body).toContain('At most 200 characters, please.');
    expect(res.body).toContain('aria-invalid="true"');
    expect((await sigil.context.store.users.findUserBySubject(ERIN.subjectId))?.claims.name).toBe('Erin Example');
  });

  it('refuses a profile form without its CSRF token or from another origin (403, nothing stored)', async () => {
    const b = await signedIn(ERIN.username, ERIN.password);
    expect((await b.post('/account/profile', { name: 'Mallory' })).status).toBe(403);
    expect(
      (
        await b.post(
          '/account/profile',
          { csrf_token: await csrf(b), name: 'Mallory' },
          { origin: 'https://evil.example' },
        )
      ).status,
    ).toBe(403);
    expect((await sigil.context.store.users.findUserBySubject(ERIN.subjectId))?.claims.name).toBe('Erin Example');
  });

  it('is read-only for a config-file user (403, nothing stored)', async () => {
    const b = await signedIn('alice', 'alice');
    const res = await submit(b, '/account/profile', '/account/profile', { name: 'Mallory' });
    expect(res.status).toBe(403);
    expect(res.body).toContain('configuration file');
    expect((await sigil.context.users.findBySubject('1'))?.claims.name).toBe('Alice Smith');
  });
});
