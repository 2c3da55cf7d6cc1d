/**
 * LDAP user directory against a real OpenLDAP server (Debian slapd, test/ldap-server.ts):
 * password grant and login page, claims and roles from attributes and memberOf, the subject from
 * entryUUID (kept across a rename), locked accounts and wrong passwords answered alike, LDAP
 * injection in the username, MFA, passkeys and consent for a directory user, the failure limits,
 * and the directory going away.
 */
import { decodeJwt } from 'jose';
import { Attribute, Change } from 'ldapts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SigilEvent } from '../../src/index.js';
import {
  authorizeUrl,
  Browser,
  codeParams,
  input,
  ISSUER,
  isConsentPage,
  isLoginPage,
  pkce,
  readResponse,
  redeem,
  webLike,
} from '../authorize-helpers.js';
import { enrollTotp, isMfaPage, submitCode, totpCode } from '../mfa-helpers.js';
import { startSigil, testConfig, tokenRequest, userinfo, type TestSigil } from '../helpers.js';
import { PEOPLE, type Slapd, startSlapd } from '../ldap-server.mjs';
import { SoftAuthenticator } from '../webauthn-authenticator.js';

const ROPC = ['ropc', 'ropc-secret'] as const;
const FAILED = { error: 'invalid_grant', error_description: 'invalid username or password' };

function grant(sigil: TestSigil, username: string, password: string, scope = 'openid profile email roles api1') {
  return tokenRequest(sigil, { grant_type: 'password', username, password, scope }, ROPC);
}

describe('LDAP user directory', () => {
  let slapd: Slapd;
  let sigil: TestSigil;
  const events: SigilEvent[] = [];
  const uuids = new Map<string, string>();

  beforeAll(async () => {
    slapd = await startSlapd();
    const admin = await slapd.admin();
    try {
      const { searchEntries } = await admin.search(PEOPLE, { filter: '(uid=*)', attributes: ['uid', 'entryUUID'] });
      for (const e of searchEntries) uuids.set(String(e.uid), String(e.entryUUID));
    } finally {
      await admin.unbind();
    }
    const base = testConfig();
    sigil = await startSigil({
      rateLimits: { maxFailures: 1000, windowSeconds: 60 },
      // No config users: the fixture's alice and bob would answer before the directory.
      users: [],
      clients: [
        ...(base.clients ?? []),
        webLike('web'),
        webLike('consent', { requireConsent: true, allowedScopes: ['openid', 'profile', 'email', 'roles', 'api1'] }),
      ],
      userDirectories: [slapd.directoryConfig({ claimsCacheSeconds: 0 })] as never,
      webauthn: { enabled: true },
    });
    sigil.subscribe((e) => void events.push(e));
  });
  afterAll(async () => {
    await sigil?.close();
    await slapd?.close();
  });

  it('signs a directory user in with the password grant: subject from entryUUID, claims and roles from attributes', async () => {
    const res = await grant(sigil, 'alice', 'alice-pw');
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json<{ access_token: string; id_token: string }>();
    const at = decodeJwt(body.access_token);
    expect(at.sub).toBe(uuids.get('alice'));
    expect(at.sub).not.toBe('alice');
    // api1's userClaims: role, from memberOf's group RDNs.
    expect(at.role).toEqual(['admins', 'devs']);
    const info = await userinfo(sigil, body.access_token);
    expect(info.statusCode).toBe(200);
    expect(info.json()).toEqual({
      sub: uuids.get('alice'),
      name: 'Alice Liddell',
      given_name: 'Alice',
      family_name: 'Liddell',
      email: 'alice@corp.example',
      role: ['admins', 'devs'],
    });
  });

  it('usernames compare as the directory compares them (uid is case-insensitive)', async () => {
    const res = await grant(sigil, 'ALICE', 'alice-pw');
    expect(res.statusCode, res.body).toBe(200);
    expect(decodeJwt(res.json<{ access_token: string }>().access_token).sub).toBe(uuids.get('alice'));
  });

  it('answers a wrong password, an unknown user, an empty password and a locked account alike', async () => {
    const answers = await Promise.all([
      grant(sigil, 'alice', 'wrong'),
      grant(sigil, 'nobody', 'alice-pw'),
      // An empty password would be an unauthenticated bind, which LDAP servers accept (RFC 4513 §5.1.2).
      tokenRequest(sigil, { grant_type: 'password', username: 'alice', password: '', scope: 'openid' }, ROPC),
      // mallory's password is right, but the account is locked (pwdAccountLockedTime).
      grant(sigil, 'mallory', 'mallory-pw'),
    ]);
    for (const res of answers.slice(0, 2).concat(answers.slice(3))) {
      expect(res.statusCode).toBe(400);
      expect(res.json()).toEqual(FAILED);
    }
    expect(answers[2]!.statusCode).toBe(400);
    expect(answers[2]!.json().access_token).toBeUndefined();
    // Only the audit event tells the locked account apart.
    expect(events).toContainEqual(
      expect.objectContaining({
        name: 'user_login_failed',
        subjectId: uuids.get('mallory'),
        errorDescription: 'inactive user',
      }),
    );
  });

  it('is not open to LDAP injection in the username (RFC 4515 filters are built as values)', async () => {
    for (const username of [
      '*',
      'a*',
      'admin*',
      '*)(uid=*))(|(uid=*',
      'alice)(|(uid=*',
      '*)(objectClass=*',
      'alice\\2a',
    ]) {
      const res = await grant(sigil, username, 'alice-pw');
      expect(res.statusCode, username).toBe(400);
      expect(res.json()).toEqual(FAILED);
    }
  });

  it("applies the failure limits to directory users as to Sigil's own (rateLimits)", async () => {
    const strict = await startSigil({
      users: [],
      userDirectories: [slapd.directoryConfig()] as never,
      rateLimits: { maxFailures: 2, windowSeconds: 60 },
    });
    try {
      for (let i = 0; i < 2; i++) expect((await grant(strict, 'alice', 'wrong')).json()).toEqual(FAILED);
      const blocked = await grant(strict, 'alice', 'alice-pw');
      expect(blocked.statusCode).toBe(429);
      expect(blocked.headers['retry-after']).toBeDefined();
    } finally {
      await strict.close();
    }
  });

  it('shares a bounded pool: with one connection, concurrent sign-ins wait their turn and all succeed', async () => {
    // Three wrong passwords of one account: within a cap of 4 shared by every sign-in (knownBrowserBinds 0).
    const narrow = await startSigil({
      users: [],
      userDirectories: [slapd.directoryConfig({ maxConnections: 1, knownBrowserBinds: 0 })] as never,
      rateLimits: { maxFailures: 1000, windowSeconds: 60 },
    });
    try {
      const answers = await Promise.all(
        [...Array(6).keys()].map((i) => grant(narrow, i % 2 ? 'alice' : 'carol', i % 2 ? 'alice-pw' : 'wrong')),
      );
      expect(answers.map((r) => r.statusCode)).toEqual([400, 200, 400, 200, 400, 200]);
    } finally {
      await narrow.close();
    }
  });

  it("re-reads a user's attributes at userinfo (claimsCacheSeconds 0 here)", async () => {
    const { access_token } = (await grant(sigil, 'carol', 'carol-pw', 'openid email')).json<{ access_token: string }>();
    expect((await userinfo(sigil, access_token)).json().email).toBe('carol@corp.example');
    const admin = await slapd.admin();
    try {
      await admin.modify(
        `uid=carol,${PEOPLE}`,
        new Change({
          operation: 'replace',
          modification: new Attribute({ type: 'mail', values: ['carol.keys@corp.example'] }),
        }),
      );
    } finally {
      await admin.unbind();
    }
    expect((await userinfo(sigil, access_token)).json().email).toBe('carol.keys@corp.example');
  });

  it('signs nobody in when the username names two entries', async () => {
    const admin = await slapd.admin();
    try {
      for (const cn of ['Twin One', 'Twin Two'])
        await admin.add(`cn=${cn},${PEOPLE}`, {
          objectClass: 'inetOrgPerson',
          cn,
          sn: 'Twin',
          uid: 'twin',
          userPassword: 'twin-pw',
        });
    } finally {
      await admin.unbind();
    }
    expect((await grant(sigil, 'twin', 'twin-pw')).json()).toEqual(FAILED);
  });

  it('refuses an overlong username before asking the directory', async () => {
    const res = await grant(sigil, 'a'.repeat(101), 'alice-pw');
    expect(res.json()).toEqual(FAILED);
  });

  it('signs a directory user in on the login page, with consent keyed by the subject', async () => {
    const b = new Browser(sigil);
    const { verifier, challenge } = pkce();
    const params = codeParams(challenge, { client_id: 'consent', scope: 'openid profile roles' });
    const login = await b.follow(await b.get(authorizeUrl(params)));
    expect(isLoginPage(login)).toBe(true);
    const wrong = await b.submitLogin(login, 'bob', 'alice-pw');
    expect(wrong.body).toContain('The username or password is incorrect.');
    const consent = await b.follow(await b.submitLogin(wrong, 'bob', 'bob-pw'));
    expect(isConsentPage(consent), consent.body).toBe(true);
    const code = readResponse(await b.consent(consent, 'yes', true)).params.get('code')!;
    const tokens = await redeem(sigil, code, { client: 'consent', verifier });
    expect(tokens.statusCode, tokens.body).toBe(200);
    const id = decodeJwt(tokens.json<{ id_token: string }>().id_token);
    expect(id.sub).toBe(uuids.get('bob'));
    // The remembered consent is found again for the same subject: no consent page the second time.
    const again = await b.follow(
      await b.get(authorizeUrl(codeParams(pkce().challenge, { client_id: 'consent', scope: 'openid profile roles' }))),
    );
    expect(readResponse(again).params.get('code')).toBeTruthy();
  });

  it('asks a directory user with an authenticator app for the second factor; the password grant then refuses', async () => {
    const b = new Browser(sigil);
    await b.signIn('alice', 'alice-pw');
    const { secret } = await enrollTotp(b);
    const fresh = new Browser(sigil);
    const { verifier, challenge } = pkce();
    const login = await fresh.follow(await fresh.get(authorizeUrl(codeParams(challenge))));
    const mfa = await fresh.follow(await fresh.submitLogin(login, 'alice', 'alice-pw'));
    expect(isMfaPage(mfa), mfa.body).toBe(true);
    const done = await submitCode(fresh, mfa, totpCode(secret, 1));
    const code = readResponse(done).params.get('code');
    expect(code, done.location).toBeTruthy();
    const tokens = await redeem(sigil, code!, { verifier });
    expect(decodeJwt(tokens.json<{ access_token: string }>().access_token)).toMatchObject({
      sub: uuids.get('alice'),
      amr: expect.arrayContaining(['pwd']),
    });
    const ropc = await grant(sigil, 'alice', 'alice-pw');
    expect(ropc.json().error).toBe('invalid_grant');
    expect(ropc.json().error_description).toContain('second factor');
  });

  it('registers a passkey for a directory user, who then signs in with it alone', async () => {
    const b = new Browser(sigil);
    await b.signIn('carol', 'carol-pw');
    const auth = new SoftAuthenticator(ISSUER);
    const page = await b.get('/account/passkeys');
    const csrf = input(page.body, 'csrf_token');
    const options = await b.post('/account/passkeys/options', { csrf_token: csrf, kind: 'passkey' });
    const added = await b.post('/account/passkeys/register', {
      csrf_token: csrf,
      kind: 'passkey',
      name: 'Carol key',
      response: JSON.stringify(auth.register(options.res.json())),
    });
    expect(added.status, added.body).toBe(303);
    b.cookies.delete('sigil.session');
    const { verifier, challenge } = pkce();
    const login = await b.follow(await b.get(authorizeUrl(codeParams(challenge))));
    const loginCsrf = input(login.body, 'csrf_token');
    const loginOptions = await b.post('/account/passkeys/login/options', { csrf_token: loginCsrf });
    const interaction = /name="interaction" value="([^"]*)"/.exec(login.body)?.[1] ?? '';
    const answered = await b.post('/account/passkeys/login', {
      csrf_token: loginCsrf,
      interaction,
      response: JSON.stringify(auth.authenticate(loginOptions.res.json())),
    });
    const code = readResponse(await b.follow(answered)).params.get('code');
    expect(code).toBeTruthy();
    const tokens = await redeem(sigil, code!, { verifier });
    expect(decodeJwt(tokens.json<{ id_token: string }>().id_token)).toMatchObject({
      sub: uuids.get('carol'),
      amr: ['swk', 'user', 'mfa'],
    });
  });

  it('keeps the subject when the user is renamed in the directory (modrdn)', async () => {
    const before = await grant(sigil, 'bob', 'bob-pw', 'openid');
    const sub = decodeJwt(before.json<{ access_token: string }>().access_token).sub;
    const admin = await slapd.admin();
    try {
      await admin.modifyDN(`uid=bob,${PEOPLE}`, 'uid=robert');
    } finally {
      await admin.unbind();
    }
    expect((await grant(sigil, 'bob', 'bob-pw', 'openid')).json()).toEqual(FAILED);
    const after = await grant(sigil, 'robert', 'bob-pw', 'openid');
    expect(after.statusCode, after.body).toBe(200);
    expect(decodeJwt(after.json<{ access_token: string }>().access_token).sub).toBe(sub);
  });

  it('answers temporarily_unavailable (503) while the directory is down, stores nothing, and recovers', async () => {
    const failuresBefore = events.filter((e) => e.name === 'user_login_failed').length;
    const signedIn = new Browser(sigil);
    await signedIn.signIn('robert', 'bob-pw');
    await slapd.stop();
    try {
      const res = await grant(sigil, 'robert', 'bob-pw');
      expect(res.statusCode).toBe(503);
      expect(res.headers['cache-control']).toBe('no-store');
      expect(res.json()).toEqual({
        error: 'temporarily_unavailable',
        error_description: 'sign-in is temporarily unavailable, please try again later',
      });
      const unknown = await grant(sigil, 'nobody-at-all', 'x');
      expect(unknown.statusCode).toBe(503);

      const b = new Browser(sigil);
      const page = await b.get('/account/login');
      const en = await b.submitLogin(page, 'robert', 'bob-pw');
      expect(en.status).toBe(503);
      expect(en.body).toContain('Sign-in is unavailable at the moment. Please try again later.');
      expect(b.cookies.has('sigil.session')).toBe(false);
      const de = await b.post(
        '/account/login',
        { csrf_token: input(en.body, 'csrf_token'), username: 'robert', password: 'bob-pw', button: 'login' },
        { 'accept-language': 'de' },
      );
      expect(de.status).toBe(503);
      expect(de.body).toContain('Die Anmeldung ist im Moment nicht möglich.');
      // No failure was counted against the users: the directory's outage is nobody's wrong password.
      expect(events.filter((e) => e.name === 'user_login_failed').length).toBe(failuresBefore);
      expect(await sigil.context.store.users.findUserByUsername('nobody-at-all', null)).toBeUndefined();
      // A signed-in directory user's session cannot be checked: the client hears temporarily_unavailable (RFC
      // 6749 §4.1.2.1).
      const authz = readResponse(await signedIn.follow(await signedIn.get(authorizeUrl(codeParams(pkce().challenge)))));
      expect(authz.params.get('error')).toBe('temporarily_unavailable');
      expect(authz.params.get('state')).toBe('st');
    } finally {
      await slapd.start();
    }
    const back = await grant(sigil, 'robert', 'bob-pw');
    expect(back.statusCode, back.body).toBe(200);
  });
});

describe('LDAP user directory: bounds and startup', () => {
  it('starts and serves its own users while the directory is unreachable', async () => {
    const sigil = await startSigil({
      userDirectories: [
        {
          name: 'gone',
          type: 'ldap',
          url: 'ldap://127.0.0.1:1',
          bindDn: 'cn=x',
          bindPassword: 'x',
          baseDn: 'dc=x',
          timeoutSeconds: 1,
        },
      ],
    });
    try {
      expect((await grant(sigil, 'alice', 'alice', 'openid')).statusCode).toBe(200);
      expect((await grant(sigil, 'someone', 'x', 'openid')).statusCode).toBe(503);
    } finally {
      await sigil.close();
    }
  });

  it('refuses a directory without a usable url in the config', async () => {
    await expect(
      startSigil({
        userDirectories: [
          { name: 'bad', type: 'ldap', url: 'http://x', bindDn: 'cn=x', bindPassword: 'x', baseDn: 'dc=x' },
        ],
      }),
    ).rejects.toThrow(/userDirectories/);
  });
});
