/**
 * Multi-factor sign-in over HTTP: TOTP enrollment and the second step, one use per
 * code, the ±1 step window, the failure limits, recovery codes, step-up with acr_values, amr/acr
 * in tokens and introspection, prompt=none, the password grant, requireMfa, the /account page.
 */
import Database from 'better-sqlite3';
import { join } from 'node:path';
import { decodeJwt } from 'jose';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import {
  authorizeClients,
  authorizeUrl,
  Browser,
  codeParams,
  expectClientError,
  input,
  isLoginPage,
  pkce,
  readResponse,
  redeem,
  startAuthorizeSigil,
  verifyIdToken,
} from '../authorize-helpers.js';
import { introspect, postForm, startSigil, type TestSigil, tokenRequest } from '../helpers.js';
import { enrollTotp, isMfaPage, secretOnPage, submitCode, totpCode } from '../mfa-helpers.js';

const ACR_MFA = 'urn:sigil:acr:mfa';
const DEVICE_GRANT = 'urn:ietf:params:oauth:grant-type:device_code';

let sigil: TestSigil;
beforeEach(async () => {
  sigil = await startAuthorizeSigil(
    [
      {
        clientId: 'strict',
        clientSecrets: ['strict-secret'],
        allowedGrantTypes: ['authorization_code', 'password'],
        allowedScopes: ['openid', 'api1'],
        redirectUris: ['https://rp.example/cb'],
        requireMfa: true,
      },
      {
        clientId: 'legacy-ropc',
        clientSecrets: ['legacy-secret'],
        allowedGrantTypes: ['password'],
        allowedScopes: ['openid', 'api1'],
        allowPasswordGrantForMfaUsers: true,
      },
      {
        clientId: 'ropc',
        clientSecrets: ['ropc-secret'],
        allowedGrantTypes: ['password'],
        allowedScopes: ['openid', 'api1'],
      },
      {
        clientId: 'tv',
        requireClientSecret: false,
        allowedGrantTypes: [DEVICE_GRANT],
        allowedScopes: ['openid', 'api1'],
      },
    ],
    { rateLimits: { maxFailures: 5 } },
  );
});
afterEach(async () => {
  await sigil.close();
});

/** A browser signed in as alice (password only) that enrolled TOTP; returns it with the secret. */
async function aliceWithTotp(): Promise<{ b: Browser; secret: string; recoveryCodes: string[] }> {
  const b = new Browser(sigil);
  await b.signIn('alice');
  return { b, ...(await enrollTotp(b)) };
}

/** Starts a code flow in a fresh browser and signs in with alice's password; returns the next step. */
async function passwordStep(b: Browser, extra: Record<string, string> = {}) {
  const { challenge, verifier } = pkce();
  const login = await b.follow(await b.get(authorizeUrl(codeParams(challenge, extra))));
  expect(isLoginPage(login), login.body).toBe(true);
  return { step: await b.follow(await b.submitLogin(login, 'alice', 'alice')), verifier };
}

describe('TOTP second step', () => {
  it('asks a user with TOTP for a code after the password and puts pwd, otp, mfa in the tokens and introspection', async () => {
    const { secret } = await aliceWithTotp();
    const b = new Browser(sigil);
    const sessions = async () =>
      (await sigil.context.store.records.sessions.liveOf('1', Math.floor(Date.now() / 1000))).length;
    const before = await sessions();
    const { step, verifier } = await passwordStep(b, { acr_values: ACR_MFA });
    expect(isMfaPage(step), step.body).toBe(true);
    expect(step.body).toContain('name="code"');
    expect(step.body).toContain('name="button" value="verify"');
    expect(b.cookies.has('sigil.session')).toBe(false);
    // Nothing of the sign-in goes on behind the step's redirect: no session starts before the code.
    expect(await sessions()).toBe(before);
    // The enrollment used the current step; the next step's code is still inside the window.
    const code = readResponse(await submitCode(b, step, totpCode(secret, 1))).params.get('code') ?? '';
    const tokens = (await redeem(sigil, code, { verifier })).json<{
      id_token: string;
      access_token: string;
      refresh_token: string;
    }>();
    const { claims } = await verifyIdToken(sigil, tokens.id_token, 'web');
    expect(claims.amr).toEqual(['pwd', 'otp', 'mfa']);
    expect(claims.acr).toBe(ACR_MFA);
    expect(decodeJwt(tokens.access_token).amr).toEqual(['pwd', 'otp', 'mfa']);
    for (const token of [tokens.access_token, tokens.refresh_token]) {
      const res = await introspect(sigil, token, ['web', 'web-secret']);
      expect(res.json<{ amr: string[] }>().amr, res.body).toEqual(['pwd', 'otp', 'mfa']);
    }
  });

  it('refuses a replayed code, even in another sign-in', async () => {
    const { secret } = await aliceWithTotp();
    const code = totpCode(secret, 1);
    const first = new Browser(sigil);
    const a = await passwordStep(first);
    expect(readResponse(await submitCode(first, a.step, code)).params.has('code')).toBe(true);
    const second = new Browser(sigil);
    const bStep = await passwordStep(second);
    const again = await submitCode(second, bStep.step, code);
    expect(isMfaPage(again), again.body).toBe(true);
    expect(again.body).toContain('role="alert"');
    expect(second.cookies.has('sigil.session')).toBe(false);
  });

  it('refuses the enrollment code a second time (its step is spent)', async () => {
    const b = new Browser(sigil);
    await b.signIn('alice');
    const page = await b.get('/account/totp');
    const secret = secretOnPage(page.body);
    const code = totpCode(secret);
    expect(
      (await b.post('/account/totp', { csrf_token: input(page.body, 'csrf_token'), code, button: 'confirm' })).status,
    ).toBe(200);
    const other = new Browser(sigil);
    const { step } = await passwordStep(other);
    expect(isMfaPage(await submitCode(other, step, code))).toBe(true);
  });

  it('refuses codes outside the ±1 step window', async () => {
    const { secret } = await aliceWithTotp();
    const b = new Browser(sigil);
    const { step } = await passwordStep(b);
    for (const offset of [-3, 3]) {
      const page = await b.get('/account/mfa');
      const res = await submitCode(b, page, totpCode(secret, offset));
      expect(isMfaPage(res), res.body).toBe(true);
    }
    expect(readResponse(await submitCode(b, step, totpCode(secret, 1))).params.has('code')).toBe(true);
  });

  it('stops guessing at the failure limit, even for the right code, per user and address', async () => {
    const { secret } = await aliceWithTotp();
    const b = new Browser(sigil, '10.0.0.7');
    const { step } = await passwordStep(b);
    for (let i = 0; i < 5; i++) expect(isMfaPage(await submitCode(b, step, '000000'))).toBe(true);
    const page = await b.get('/account/mfa');
    const blocked = await b.post('/account/mfa', {
      csrf_token: input(page.body, 'csrf_token'),
      code: totpCode(secret, 1),
      button: 'verify',
    });
    expect(blocked.status).toBe(429);
    expect(blocked.headers['retry-after']).toBeDefined();
    expect(b.cookies.has('sigil.session')).toBe(false);
    // Another address is not blocked by these failures.
    const c = new Browser(sigil, '10.0.0.8');
    const other = await passwordStep(c);
    expect(readResponse(await submitCode(c, other.step, totpCode(secret, 1))).params.has('code')).toBe(true);
  });
});

describe('recovery codes', () => {
  it('sign in once with a recovery code; the second use is refused', async () => {
    const { recoveryCodes } = await aliceWithTotp();
    const code = recoveryCodes[0] as string;
    const b = new Browser(sigil);
    const { step } = await passwordStep(b);
    expect(readResponse(await submitCode(b, step, code.toUpperCase())).params.has('code')).toBe(true);
    const c = new Browser(sigil);
    const again = await passwordStep(c);
    expect(isMfaPage(await submitCode(c, again.step, code))).toBe(true);
  });

  it('stores only hashes of recovery codes and seals TOTP secrets with SIGIL_DATA_KEY', async () => {
    await sigil.close();
    sigil = await startSigil({ clients: authorizeClients() }, { dataKey: new Uint8Array(32).fill(7) });
    const { secret, recoveryCodes } = await aliceWithTotp();
    const db = new Database(join(sigil.dir, 'sigil.db'), { readonly: true });
    const rows = db.prepare('SELECT kind, data FROM mfa_factors').all() as { kind: string; data: string }[];
    db.close();
    const dump = JSON.stringify(rows);
    expect(rows.filter((r) => r.kind === 'recovery_code')).toHaveLength(10);
    expect(dump).not.toContain(secret);
    for (const c of recoveryCodes) expect(dump).not.toContain(c.replace('-', ''));
    expect(
      (JSON.parse(rows.find((r) => r.kind === 'totp')?.data ?? '{}') as { secret: string }).secret.split('.'),
    ).toHaveLength(5);
  });
});

describe('policy', () => {
  it('steps up a password session to MFA for acr_values without a new password sign-in', async () => {
    const b = new Browser(sigil);
    await b.signIn('alice');
    const authTime = decodeJwt(await idTokenOf(b, {})).auth_time;
    // Alice adds an authenticator in another browser; this session has the password only.
    const { secret } = await aliceWithTotp();
    const { challenge, verifier } = pkce();
    const step = await b.follow(await b.get(authorizeUrl(codeParams(challenge, { acr_values: ACR_MFA }))));
    expect(isMfaPage(step), step.body).toBe(true);
    const cookie = b.cookies.get('sigil.session');
    const code = readResponse(await submitCode(b, step, totpCode(secret, 1))).params.get('code') ?? '';
    // The session handle changes with the new strength; the old handle no longer signs anyone in.
    expect(b.cookies.get('sigil.session')).not.toBe(cookie);
    const stale = new Browser(sigil);
    stale.cookies.set('sigil.session', cookie ?? '');
    expect(isLoginPage(await stale.follow(await stale.get(authorizeUrl(codeParams(challenge)))))).toBe(true);
    const { id_token } = (await redeem(sigil, code, { verifier })).json<{ id_token: string }>();
    const { claims } = await verifyIdToken(sigil, id_token, 'web');
    expect(claims.acr).toBe(ACR_MFA);
    expect(claims.amr).toEqual(['pwd', 'otp', 'mfa']);
    expect(claims.auth_time).toBe(authTime);
  });

  it('steps a password session up before it approves a device (RFC 8628), and the device gets amr with mfa', async () => {
    const b = new Browser(sigil);
    await b.signIn('alice');
    const { secret } = await aliceWithTotp();
    const d = (await postForm(sigil, '/connect/deviceauthorization', { client_id: 'tv', scope: 'openid api1' })).json<{
      device_code: string;
      user_code: string;
    }>();
    const page = await b.get('/device');
    const entered = await b.post('/device', {
      csrf_token: input(page.body, 'csrf_token'),
      userCode: d.user_code,
      button: 'submit',
    });
    expect(entered.location).toMatch(/^\/account\/mfa\?interaction=/);
    const consent = await submitCode(b, await b.get(entered.location!), totpCode(secret, 1));
    expect(consent.body).toContain('action="/consent"');
    const done = await b.follow(
      await b.post('/consent', {
        csrf_token: input(consent.body, 'csrf_token'),
        interaction: input(consent.body, 'interaction'),
        button: 'yes',
      }),
    );
    expect(done.status).toBe(200);
    const tokens = await postForm(sigil, '/connect/token', {
      grant_type: DEVICE_GRANT,
      client_id: 'tv',
      device_code: d.device_code,
    });
    expect(tokens.statusCode, tokens.body).toBe(200);
    expect(decodeJwt(tokens.json<{ access_token: string }>().access_token).amr).toEqual(['pwd', 'otp', 'mfa']);
  });

  it('steps up for an essential acr of urn:sigil:acr:mfa in the claims parameter, not a new password sign-in', async () => {
    const b = new Browser(sigil);
    await b.signIn('alice');
    await aliceWithTotp();
    const { challenge } = pkce();
    const claims = JSON.stringify({ id_token: { acr: { essential: true, values: [ACR_MFA] } } });
    const step = await b.follow(await b.get(authorizeUrl(codeParams(challenge, { claims }))));
    expect(isMfaPage(step), step.body).toBe(true);
    // The password class alone is met by the password session as before.
    const password = JSON.stringify({
      id_token: { acr: { essential: true, values: ['urn:sigil:acr:password', ACR_MFA] } },
    });
    const plain = new Browser(sigil);
    await plain.signIn('bob');
    expect(
      readResponse(
        await plain.follow(await plain.get(authorizeUrl(codeParams(challenge, { claims: password })))),
      ).params.has('code'),
    ).toBe(true);
  });

  it('answers prompt=none without the needed strength with interaction_required', async () => {
    const b = new Browser(sigil);
    await b.signIn('bob');
    const { challenge } = pkce();
    expectClientError(
      await b.get(authorizeUrl(codeParams(challenge, { prompt: 'none', acr_values: ACR_MFA }))),
      'interaction_required',
    );
    expectClientError(
      await b.get(
        authorizeUrl({
          ...codeParams(challenge, { prompt: 'none' }),
          client_id: 'strict',
          redirect_uri: 'https://rp.example/cb',
          scope: 'openid',
        }),
      ),
      'interaction_required',
      { target: 'https://rp.example/cb' },
    );
    // Without a requirement, bob's password session is enough.
    expect(readResponse(await b.get(authorizeUrl(codeParams(challenge, { prompt: 'none' })))).params.has('code')).toBe(
      true,
    );
  });

  it('sends a user without a factor to enrollment at a client with requireMfa, then continues the request', async () => {
    const b = new Browser(sigil);
    const { challenge } = pkce();
    const login = await b.follow(
      await b.get(
        authorizeUrl({
          ...codeParams(challenge),
          client_id: 'strict',
          redirect_uri: 'https://rp.example/cb',
          scope: 'openid',
        }),
      ),
    );
    const enroll = await b.follow(await b.submitLogin(login, 'bob', 'bob'));
    expect(enroll.body).toContain('action="/account/totp"');
    expect(b.cookies.has('sigil.session')).toBe(false);
    const secret = secretOnPage(enroll.body);
    const codes = await b.post('/account/totp', {
      csrf_token: input(enroll.body, 'csrf_token'),
      code: totpCode(secret),
      button: 'confirm',
      interaction: input(enroll.body, 'interaction'),
    });
    expect(codes.body).toContain('<code>');
    const next = /class="button primary" href="([^"]+)"/.exec(codes.body)?.[1] ?? '';
    const r = readResponse(await b.follow(await b.get(next.replace(/&amp;/g, '&'))));
    expect(r.params.has('code')).toBe(true);
  });

  it('enrolls within the request when a fresh password session meets a client with requireMfa (step-up by enrollment)', async () => {
    const b = new Browser(sigil);
    await b.signIn('bob');
    const { challenge } = pkce();
    const enroll = await b.follow(
      await b.get(
        authorizeUrl({
          ...codeParams(challenge),
          client_id: 'strict',
          redirect_uri: 'https://rp.example/cb',
          scope: 'openid',
        }),
      ),
    );
    expect(enroll.body).toContain('action="/account/totp"');
    const codes = await b.post('/account/totp', {
      csrf_token: input(enroll.body, 'csrf_token'),
      code: totpCode(secretOnPage(enroll.body)),
      button: 'confirm',
      interaction: input(enroll.body, 'interaction'),
    });
    const next = /class="button primary" href="([^"]+)"/.exec(codes.body)?.[1] ?? '';
    expect(next).toMatch(/^\/connect\/authorize\/resume\?interaction=/);
    expect(readResponse(await b.follow(await b.get(next.replace(/&amp;/g, '&')))).params.has('code')).toBe(true);
  });

  it('runs both factors again for prompt=login and max_age=0', async () => {
    const { secret } = await aliceWithTotp();
    const b = new Browser(sigil);
    const first = await passwordStep(b);
    expect(readResponse(await submitCode(b, first.step, totpCode(secret, 1))).params.has('code')).toBe(true);
    for (const extra of [{ prompt: 'login' }, { max_age: '0' }] as Record<string, string>[]) {
      const { challenge } = pkce();
      const login = await b.follow(await b.get(authorizeUrl(codeParams(challenge, extra))));
      expect(isLoginPage(login), JSON.stringify(extra)).toBe(true);
      expect(isMfaPage(await b.follow(await b.submitLogin(login, 'alice', 'alice')))).toBe(true);
    }
  });

  it('refuses the password grant for a user with a second factor unless the client is allowed', async () => {
    await aliceWithTotp();
    const res = await tokenRequest(
      sigil,
      { grant_type: 'password', username: 'alice', password: 'alice', scope: 'openid' },
      ['ropc', 'ropc-secret'],
    );
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({
      error: 'invalid_grant',
      error_description: expect.stringContaining('second factor'),
    });
    const allowed = await tokenRequest(
      sigil,
      { grant_type: 'password', username: 'alice', password: 'alice', scope: 'openid' },
      ['legacy-ropc', 'legacy-secret'],
    );
    expect(allowed.statusCode, allowed.body).toBe(200);
    const strict = await tokenRequest(
      sigil,
      { grant_type: 'password', username: 'bob', password: 'bob', scope: 'openid' },
      ['strict', 'strict-secret'],
    );
    expect(strict.json()).toMatchObject({ error: 'invalid_grant' });
  });
});

describe('ui_locales of the pending request', () => {
  const DE = '<html lang="de">';

  it('the one-time code page, its error and its expired form are German for ui_locales=de, whatever Accept-Language says', async () => {
    const { secret } = await aliceWithTotp();
    const b = new Browser(sigil);
    const english = { 'accept-language': 'en' };
    const { challenge } = pkce();
    const login = await b.follow(await b.get(authorizeUrl(codeParams(challenge, { ui_locales: 'de' })), english));
    const step = await b.follow(await b.submitLogin(login, 'alice', 'alice'));
    expect(isMfaPage(step), step.body).toBe(true);
    expect(step.body).toContain(DE);
    expect(step.body).toContain('Bestätigung in zwei Schritten');
    expect((await b.get('/account/mfa', english)).body).toContain(DE);
    const wrong = await b.follow(
      await b.post(
        '/account/mfa',
        {
          csrf_token: input(step.body, 'csrf_token'),
          interaction: input(step.body, 'interaction'),
          code: '000000',
          button: 'verify',
        },
        english,
      ),
    );
    expect(wrong.body).toContain(DE);
    expect(wrong.body).toContain('Dieser Code ist ungültig.');
    const noCsrf = await b.post(
      '/account/mfa',
      { interaction: input(step.body, 'interaction'), code: totpCode(secret, 1), button: 'verify' },
      english,
    );
    expect(noCsrf.status).toBe(403);
    expect(noCsrf.body).toContain(DE);
    expect(readResponse(await submitCode(b, step, totpCode(secret, 1))).params.has('code')).toBe(true);
  });

  it("the step-up code page of a live session is German for the request's ui_locales=de", async () => {
    const b = new Browser(sigil);
    await b.signIn('alice');
    await aliceWithTotp();
    const { challenge } = pkce();
    const step = await b.follow(
      await b.get(authorizeUrl(codeParams(challenge, { acr_values: ACR_MFA, ui_locales: 'de' }))),
    );
    expect(isMfaPage(step), step.body).toBe(true);
    expect(step.body).toContain(DE);
  });

  it('the authenticator app enrollment, its error and the recovery codes page are German for ui_locales=de', async () => {
    const b = new Browser(sigil);
    const { challenge } = pkce();
    const login = await b.follow(
      await b.get(
        authorizeUrl({
          ...codeParams(challenge, { ui_locales: 'de' }),
          client_id: 'strict',
          redirect_uri: 'https://rp.example/cb',
          scope: 'openid',
        }),
      ),
    );
    const enroll = await b.follow(await b.submitLogin(login, 'bob', 'bob'));
    expect(enroll.body).toContain('action="/account/totp"');
    expect(enroll.body).toContain(DE);
    expect(enroll.body).toContain('Authenticator-App einrichten');
    const fields = {
      csrf_token: input(enroll.body, 'csrf_token'),
      interaction: input(enroll.body, 'interaction'),
      button: 'confirm',
    };
    const wrong = await b.post('/account/totp', { ...fields, code: '000000' });
    expect(wrong.body).toContain(DE);
    const noCsrf = await b.post('/account/totp', {
      interaction: fields.interaction,
      code: '000000',
      button: 'confirm',
    });
    expect(noCsrf.status).toBe(403);
    expect(noCsrf.body).toContain(DE);
    const codes = await b.post('/account/totp', { ...fields, code: totpCode(secretOnPage(enroll.body)) });
    expect(codes.body).toContain('<code>');
    expect(codes.body).toContain(DE);
    expect(codes.body).toContain('Ihre Wiederherstellungscodes');
  });
});

describe('bad input', () => {
  it('answers junk posted to the new pages with a page, never a 500 or a changed factor', async () => {
    const { b, secret } = await aliceWithTotp();
    const before = await sigil.context.store.factors.listFactors('1');
    const page = await b.get('/account');
    const csrf = input(page.body, 'csrf_token');
    const bodies = [
      '',
      'code=1&code=2&button=verify',
      `csrf_token=${encodeURIComponent(csrf)}&code=${'9'.repeat(5000)}&button=verify`,
      `csrf_token=${encodeURIComponent(csrf)}&csrf_token=x&factor=%00&factor=y`,
      `csrf_token=${encodeURIComponent(csrf)}&factor=${encodeURIComponent('../../etc')}&button=remove`,
    ];
    for (const url of ['/account/mfa', '/account/totp', '/account/recovery', '/account/factors/remove'])
      for (const payload of bodies) {
        const res = await b.send('POST', url, payload);
        expect(res.status, `${url} ${payload.slice(0, 40)}`).toBeLessThan(500);
        expect(res.body).not.toMatch(/stack|at .*\.ts:/);
      }
    const after = await sigil.context.store.factors.listFactors('1');
    expect(after.filter((f) => f.kind === 'totp')).toEqual(before.filter((f) => f.kind === 'totp'));
    expect(secret).toBeTruthy();
  });
});

describe('/account', () => {
  it('lists and removes factors with a fresh MFA sign-in, and refuses a form without its CSRF token', async () => {
    const { b } = await aliceWithTotp();
    const page = await b.get('/account');
    expect(page.status).toBe(200);
    expect(page.body).toContain('10 of 10');
    const factor = input(page.body, 'factor');
    const noCsrf = await b.post('/account/factors/remove', { factor, button: 'remove' });
    expect(noCsrf.status).toBe(403);
    expect((await b.get('/account')).body).toContain(`value="${factor}"`);
    const removed = await b.post('/account/factors/remove', {
      csrf_token: input(page.body, 'csrf_token'),
      factor,
      button: 'remove',
    });
    expect(removed.status, removed.body).toBe(200);
    expect(removed.body).not.toContain(`value="${factor}"`);
    // Without a second factor the password alone signs in again.
    const c = new Browser(sigil);
    const { step } = await passwordStep(c);
    expect(readResponse(step).params.has('code')).toBe(true);
  });

  it('sends a visitor without a session to the login page, which returns to /account', async () => {
    const b = new Browser(sigil);
    const res = await b.get('/account');
    expect(res.status).toBe(303);
    expect(res.location).toBe('/account/login?return=%2Faccount');
    const login = await b.get(res.location!);
    expect(input(login.body, 'return')).toBe('/account');
    const signedIn = await b.submitLogin(login, 'bob', 'bob', { return: '/account' });
    expect(signedIn.location).toBe('/account');
    expect((await b.get('/account')).body).toContain('href="/account/totp"');
  });

  it('records enrollment, success, failure and removal as audit events', async () => {
    const events: { name: string; factor?: string; subjectId?: string }[] = [];
    const stop = sigil.subscribe((e) => void events.push(e));
    const { b, secret } = await aliceWithTotp();
    const c = new Browser(sigil);
    const { step } = await passwordStep(c);
    await submitCode(c, step, '999999');
    await submitCode(c, await c.get('/account/mfa'), totpCode(secret, 1));
    const page = await b.get('/account');
    await b.post('/account/factors/remove', {
      csrf_token: input(page.body, 'csrf_token'),
      factor: input(page.body, 'factor'),
      button: 'remove',
    });
    stop();
    const mfa = events
      .filter((e) => e.name.startsWith('mfa_'))
      .map((e) => `${e.name}:${e.factor ?? ''}:${e.subjectId}`);
    expect(mfa).toEqual([
      'mfa_enrolled:totp:1',
      'mfa_enrolled:recovery_code:1',
      'mfa_failed::1',
      'mfa_succeeded:totp:1',
      'mfa_removed:totp:1',
      'mfa_removed:recovery_code:1',
    ]);
  });

  it('refuses changes from a session older than mfa.freshSignInSeconds, asking to sign in again', async () => {
    await sigil.close();
    // A window the sign-in, enrolment and first fetch fit in on any machine; the clock is then
    // moved past it (a 1 s window and a real 2 s sleep let a slow setup see the page stale already).
    sigil = await startSigil({ clients: authorizeClients(), mfa: { freshSignInSeconds: 60 } });
    const { b } = await aliceWithTotp();
    const fresh = await b.get('/account');
    expect(fresh.body).toContain('name="factor"');
    expect(fresh.body).not.toContain('href="/account/login?return=%2Faccount"');
    vi.useFakeTimers({ toFake: ['Date'], now: Date.now() + 61_000 });
    try {
      const page = await b.get('/account');
      expect(page.body).toContain('href="/account/login?return=%2Faccount"');
      expect(page.body).not.toContain('name="factor"');
      // A form fetched while the sign-in was fresh is refused once it is not.
      const refused = await b.post('/account/recovery', {
        csrf_token: input(fresh.body, 'csrf_token'),
        button: 'regenerate',
      });
      expect(refused.status).toBe(403);
      expect(refused.body).not.toContain('<code>');
    } finally {
      vi.useRealTimers();
    }
  });
});

/** Runs a code flow in a signed-in browser and returns the identity token. */
async function idTokenOf(b: Browser, extra: Record<string, string>): Promise<string> {
  const { challenge, verifier } = pkce();
  const code =
    readResponse(await b.follow(await b.get(authorizeUrl(codeParams(challenge, extra))))).params.get('code') ?? '';
  return (await redeem(sigil, code, { verifier })).json<{ id_token: string }>().id_token;
}
