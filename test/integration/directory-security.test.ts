/**
 * Security checks of directory users against a real OpenLDAP server (Debian slapd,
 * test/ldap-server.mjs): whether a token acts for a user or for a client is read from the token,
 * never from a directory user's subject naming a client (or a client's id naming a user); wrong
 * passwords of a directory account stop reaching the server before its own lockout would; a
 * directory that goes down mid-step gets the localized 503 page on every page route.
 */
import { decodeJwt } from 'jose';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  authorizeUrl,
  Browser,
  codeParams,
  input,
  ISSUER,
  isLoginPage,
  pkce,
  readResponse,
  redeem,
  webLike,
} from '../authorize-helpers.js';
import { Attribute, Change, Client } from 'ldapts';
import { basic, clientTokens, form, introspect, startSigil, userinfo, type TestSigil } from '../helpers.js';
import { enrollTotp, isMfaPage, submitCode, totpCode } from '../mfa-helpers.js';
import { LDAP_USERS, type LdapUser, PEOPLE, type Slapd, startSlapd } from '../ldap-server.mjs';
import { SoftAuthenticator } from '../webauthn-authenticator.js';

const ACR_MFA = 'urn:sigil:acr:mfa';

/** A directory user of the admins group, named like a client. */
const OPS: LdapUser = {
  uid: 'ops',
  password: 'ops-pw',
  cn: 'Ops Person',
  givenName: 'Ops',
  sn: 'Person',
  mail: 'ops@corp.example',
  groups: ['admins'],
};
/** A directory user named like a client_credentials client. */
const ROBOT: LdapUser = {
  uid: 'robot',
  password: 'robot-pw',
  cn: 'Robot Namesake',
  givenName: 'Robot',
  sn: 'Namesake',
  mail: 'robot@corp.example',
  groups: ['devs'],
};
/** Directory users whose browsers become known (one per test of the known browsers' share). */
const OWNERS: LdapUser[] = ['dave', 'erin', 'frank', 'grace'].map((uid) => ({
  uid,
  password: `${uid}-pw`,
  cn: uid,
  givenName: uid,
  sn: 'Owner',
  mail: `${uid}@corp.example`,
  groups: ['devs'],
}));

/** Locks a directory account as OpenLDAP's password policy does (pwdAccountLockedTime, draft-behera §5.3.3). */
async function lock(slapd: Slapd, uid: string): Promise<void> {
  const admin = await slapd.admin();
  try {
    await admin.modify(
      `uid=${uid},${PEOPLE}`,
      new Change({
        operation: 'add',
        modification: new Attribute({ type: 'pwdAccountLockedTime', values: ['000001010000Z'] }),
      }),
    );
  } finally {
    await admin.unbind();
  }
}

describe('directory users named like clients', () => {
  let slapd: Slapd;
  let sigil: TestSigil;

  beforeAll(async () => {
    slapd = await startSlapd([...LDAP_USERS, OPS, ROBOT]);
    sigil = await startSigil({
      users: [],
      rateLimits: { maxFailures: 1000, windowSeconds: 60 },
      admin: { userRole: 'admins' },
      clients: [
        // The client's id is the subject of the directory user `ops` (subjectAttribute uid).
        webLike('ops', { allowedScopes: ['openid', 'profile', 'scim', 'sigil:admin:read'] }),
        {
          clientId: 'robot',
          clientSecrets: ['robot-secret'],
          allowedGrantTypes: ['client_credentials'],
          allowedScopes: ['scim'],
        },
      ],
      // uid as the subject: a directory whose subjects are names, as some deployments choose.
      userDirectories: [slapd.directoryConfig({ subjectAttribute: 'uid', claimsCacheSeconds: 0 })] as never,
    });
  });
  afterAll(async () => {
    await sigil?.close();
    await slapd?.close();
  });

  /** A code flow at client `ops` for the directory user `ops` with a TOTP step; the token response. */
  async function adminTokens(): Promise<{ access_token: string; scope: string }> {
    const enrol = new Browser(sigil);
    await enrol.signIn('ops', 'ops-pw');
    const { secret } = await enrollTotp(enrol);
    const b = new Browser(sigil);
    const { challenge, verifier } = pkce();
    const login = await b.follow(
      await b.get(
        authorizeUrl(
          codeParams(challenge, { client_id: 'ops', scope: 'openid scim sigil:admin:read', acr_values: ACR_MFA }),
        ),
      ),
    );
    expect(isLoginPage(login), login.body).toBe(true);
    const mfa = await b.follow(await b.submitLogin(login, 'ops', 'ops-pw'));
    expect(isMfaPage(mfa), mfa.body).toBe(true);
    const code = readResponse(await submitCode(b, mfa, totpCode(secret, 1))).params.get('code') ?? '';
    const res = await redeem(sigil, code, { client: 'ops', verifier });
    expect(res.statusCode, res.body).toBe(200);
    return res.json();
  }

  it('refuses a disabled directory user whose subject is a client id at userinfo, /scim/v2, /admin/v1 and introspection', async () => {
    const tokens = await adminTokens();
    const claims = decodeJwt(tokens.access_token);
    // The collision itself: the token's sub and client_id are the same string.
    expect(claims).toMatchObject({ sub: 'ops', client_id: 'ops' });
    expect(tokens.scope.split(' ')).toEqual(expect.arrayContaining(['scim', 'sigil:admin:read']));
    const bearer = { authorization: `Bearer ${tokens.access_token}` };
    // While the user is active, the token works and acts for the user.
    expect((await userinfo(sigil, tokens.access_token)).statusCode).toBe(200);
    expect((await sigil.app.inject({ method: 'GET', url: '/scim/v2/Users', headers: bearer })).statusCode).toBe(200);
    expect((await sigil.app.inject({ method: 'GET', url: '/admin/v1/clients', headers: bearer })).statusCode).toBe(200);

    await lock(slapd, 'ops');
    const info = await userinfo(sigil, tokens.access_token);
    expect(info.statusCode).toBe(401);
    expect(info.headers['www-authenticate']).toContain('error="invalid_token"');
    for (const url of ['/scim/v2/Users', '/admin/v1/clients']) {
      const res = await sigil.app.inject({ method: 'GET', url, headers: bearer });
      expect(res.statusCode, url).toBe(401);
      expect(res.headers['www-authenticate'], url).toContain(
        'error="invalid_token", error_description="the user is no longer active"',
      );
    }
    const seen = await introspect(sigil, tokens.access_token, ['ops', 'ops-secret']);
    expect(seen.json()).toEqual({ active: false });
  });

  it("keeps a client's own token the client's when a disabled directory user has the client's id as subject", async () => {
    await lock(slapd, 'robot');
    const { access_token } = await clientTokens(sigil, 'scim', ['robot', 'robot-secret']);
    const claims = decodeJwt(access_token);
    expect(claims).toMatchObject({ sub: 'robot', client_id: 'robot' });
    expect(claims.auth_time).toBeUndefined();
    // The client's own token: not refused for the namesake user, and it acts for no user.
    const scim = await sigil.app.inject({
      method: 'GET',
      url: '/scim/v2/Users',
      headers: { authorization: `Bearer ${access_token}` },
    });
    expect(scim.statusCode, scim.body).toBe(200);
    expect((await introspect(sigil, access_token, ['robot', 'robot-secret'])).json().active).toBe(true);
    // Nor does it pass for the user at userinfo.
    expect((await userinfo(sigil, access_token)).statusCode).toBe(403);
  });
});

describe("LDAP directory accounts and the directory's own lockout (maxFailedBinds)", () => {
  const CAP = 4;
  // Of the CAP binds, those kept for the account's known browsers; everyone else shares the rest.
  const KNOWN = 2;
  const STRANGERS = CAP - KNOWN;
  // How long a browser stays known (knownBrowserLifetime), seconds.
  const KNOWN_LIFETIME = 3600;
  // Wide enough for every guess of one test to fall inside it on a slow machine (with 2 s, the
  // 429s after the fourth wrong bind could come after the window had already passed); the test
  // that needs it to pass moves Sigil's clock instead of sleeping through it.
  const WINDOW = 60;
  let slapd: Slapd;
  let sigil: TestSigil;

  beforeAll(async () => {
    // The directory locks an account after 5 failed binds in a row, as a common AD policy does.
    slapd = await startSlapd([...LDAP_USERS, ...OWNERS], { lockoutAfter: 5 });
    sigil = await startSigil({
      users: [],
      // Sigil's own limits far away: what stops the binds here is the directory's cap.
      rateLimits: { maxFailures: 1000, windowSeconds: 60, identitySlowDownAfter: 1000 },
      knownBrowserLifetime: KNOWN_LIFETIME,
      userDirectories: [
        slapd.directoryConfig({ maxFailedBinds: CAP, knownBrowserBinds: KNOWN, failedBindWindowSeconds: WINDOW }),
      ] as never,
    });
  });
  afterAll(async () => {
    await sigil?.close();
    await slapd?.close();
  });

  /** The account's failed binds as the server counts them (ppolicy pwdFailureTime) and whether it is locked. */
  async function serverView(uid: string): Promise<{ failedBinds: number; locked: boolean }> {
    const admin = await slapd.admin();
    try {
      const { searchEntries } = await admin.search(`uid=${uid},${PEOPLE}`, {
        scope: 'base',
        attributes: ['pwdFailureTime', 'pwdAccountLockedTime'],
      });
      const e = searchEntries[0]!;
      // ldapts answers an attribute the entry lacks as [].
      const count = (v: unknown) => (v === undefined ? 0 : Array.isArray(v) ? v.length : 1);
      return { failedBinds: count(e.pwdFailureTime), locked: count(e.pwdAccountLockedTime) > 0 };
    } finally {
      await admin.unbind();
    }
  }

  /** The password grant for `username` from `address`. */
  function grant(username: string, password: string, address: string) {
    return sigil.app.inject({
      method: 'POST',
      url: '/connect/token',
      remoteAddress: address,
      headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: basic('ropc', 'ropc-secret') },
      payload: form({ grant_type: 'password', username, password, scope: 'openid' }),
    });
  }

  it('the server itself locks an account after 5 wrong binds (the policy the cap protects from)', async () => {
    const client = new Client({ url: slapd.url });
    try {
      for (let i = 0; i < 5; i++) await expect(client.bind(`uid=bob,${PEOPLE}`, 'wrong')).rejects.toThrow();
    } finally {
      await client.unbind();
    }
    expect(await serverView('bob')).toEqual({ failedBinds: 5, locked: true });
  });

  it('binds at most maxFailedBinds - knownBrowserBinds wrong passwords from every address together without a known browser, then answers 429 without a bind; the account stays unlocked', async () => {
    const answers = [];
    // From ten addresses: no address's own count is ever near a limit.
    for (let i = 0; i < 10; i++) answers.push(await grant('alice', `wrong-${i}`, `198.51.100.${i + 1}`));
    expect(answers.slice(0, STRANGERS).map((r) => r.json())).toEqual(
      Array(STRANGERS).fill({ error: 'invalid_grant', error_description: 'invalid username or password' }),
    );
    for (const res of answers.slice(STRANGERS)) {
      expect(res.statusCode).toBe(429);
      expect(res.json()).toEqual({
        error: 'temporarily_unavailable',
        error_description: 'too many failed attempts, retry later',
      });
      expect(Number(res.headers['retry-after'])).toBeGreaterThanOrEqual(1);
      expect(Number(res.headers['retry-after'])).toBeLessThanOrEqual(WINDOW);
    }
    // The server saw only the first binds: its count stops there, below its threshold of 5.
    expect(await serverView('alice')).toEqual({ failedBinds: STRANGERS, locked: false });
    // The right password is refused too while the cap holds (it would need a bind), on the login page as well.
    expect((await grant('alice', 'alice-pw', '203.0.113.7')).statusCode).toBe(429);
    const b = new Browser(sigil, '203.0.113.8');
    const page = await b.submitLogin(await b.get('/account/login'), 'alice', 'alice-pw');
    expect(page.status).toBe(429);
    expect(page.body).toContain('Too many failed attempts');
    expect(page.headers['retry-after']).toBeDefined();
    expect(await serverView('alice')).toEqual({ failedBinds: STRANGERS, locked: false });
  });

  it('lets the account bind again once the window passes without a wrong password; a right password clears the count', async () => {
    vi.useFakeTimers({ toFake: ['Date'], now: Date.now() + WINDOW * 1000 + 100 });
    try {
      const ok = await grant('alice', 'alice-pw', '203.0.113.7');
      expect(ok.statusCode, ok.body).toBe(200);
      // The server cleared its own count at the successful bind; Sigil cleared the cap.
      expect(await serverView('alice')).toEqual({ failedBinds: 0, locked: false });
      for (let i = 0; i < STRANGERS; i++) expect((await grant('alice', 'wrong', '198.51.100.1')).statusCode).toBe(400);
      expect((await grant('alice', 'wrong', '198.51.100.1')).statusCode).toBe(429);
    } finally {
      vi.useRealTimers();
    }
  });

  it('never lets concurrent guesses past the cap', async () => {
    const answers = await Promise.all(
      [...Array(12).keys()].map((i) => grant('carol', `wrong-${i}`, `192.0.2.${i + 1}`)),
    );
    expect(answers.filter((r) => r.statusCode === 400)).toHaveLength(STRANGERS);
    expect(answers.filter((r) => r.statusCode === 429)).toHaveLength(12 - STRANGERS);
    expect(await serverView('carol')).toEqual({ failedBinds: STRANGERS, locked: false });
  });

  it('caps an unknown username as a known one (spellings the server compares alike share the cap)', async () => {
    for (let i = 0; i < STRANGERS; i++) expect((await grant('nobody', 'wrong', '198.51.100.200')).statusCode).toBe(400);
    for (const spelling of ['nobody', 'NOBODY', '  Nobody '])
      expect((await grant(spelling, 'wrong', '198.51.100.201')).statusCode, spelling).toBe(429);
  });

  /**
   * A browser at `address` that signed in as `uid` on the login page, then lost its session: a browser the
   * account knows.
   */
  async function knownBrowserOf(uid: string, address: string): Promise<Browser> {
    const b = new Browser(sigil, address);
    await b.signIn(uid, `${uid}-pw`);
    b.cookies.delete('sigil.session');
    return b;
  }

  /** The login page's answer in browser `b` (not followed): 'signed in', 'wrong' or the status. */
  async function signInWith(b: Browser, username: string, password: string): Promise<'signed in' | 'wrong' | number> {
    const page = await b.submitLogin(await b.get('/account/login'), username, password);
    if (page.res.cookies.some((c) => c.name === 'sigil.session' && c.value !== '')) return 'signed in';
    if (page.status === 200 && page.body.includes('The username or password is incorrect.')) return 'wrong';
    return page.status;
  }

  /** Ten wrong passwords for `uid`, each from an address of its own: five password grants, five new browsers. */
  async function strangersGuess(uid: string, net: number): Promise<(number | string)[]> {
    const answers: (number | string)[] = [];
    for (let i = 0; i < 5; i++) answers.push((await grant(uid, `guess-${i}`, `198.18.${net}.${i + 1}`)).statusCode);
    for (let i = 0; i < 5; i++)
      answers.push(await signInWith(new Browser(sigil, `198.18.${net}.${i + 101}`), uid, `guess-${i + 5}`));
    return answers;
  }

  it('keeps a share of the binds for a browser that signed the account in before: wrong passwords from ten other addresses cannot pause it, a new browser stays paused, the server never locks', async () => {
    const known = await knownBrowserOf('dave', '203.0.113.50');
    // The strangers spend their share (grants answer 400, the login page its error), then get 429.
    expect(await strangersGuess('dave', 1)).toEqual([400, 400, 429, 429, 429, 429, 429, 429, 429, 429]);
    expect(await serverView('dave')).toEqual({ failedBinds: STRANGERS, locked: false });
    // A browser the account does not know, from a new address, is still paused; the known one is not.
    expect(await signInWith(new Browser(sigil, '203.0.113.51'), 'dave', 'dave-pw')).toBe(429);
    expect((await grant('dave', 'dave-pw', '203.0.113.52')).statusCode).toBe(429);
    expect(await signInWith(known, 'dave', 'dave-pw')).toBe('signed in');
    // The right bind cleared the server's count, and Sigil's: a new browser may sign in again.
    expect(await serverView('dave')).toEqual({ failedBinds: 0, locked: false });
    expect(await signInWith(new Browser(sigil, '203.0.113.51'), 'dave', 'dave-pw')).toBe('signed in');
  });

  it("lets a known browser's own wrong passwords reach no further than maxFailedBinds in all: the server counts at most that many and never locks", async () => {
    const known = await knownBrowserOf('erin', '203.0.113.60');
    const second = await knownBrowserOf('erin', '203.0.113.61');
    expect(await strangersGuess('erin', 2)).toEqual([400, 400, 429, 429, 429, 429, 429, 429, 429, 429]);
    // The known browser's own share: KNOWN wrong passwords reach the server, then it is paused too.
    for (let i = 0; i < KNOWN; i++) expect(await signInWith(known, 'erin', `typo-${i}`)).toBe('wrong');
    expect(await signInWith(known, 'erin', 'typo-x')).toBe(429);
    expect(await signInWith(known, 'erin', 'erin-pw')).toBe(429);
    expect(await serverView('erin')).toEqual({ failedBinds: CAP, locked: false });
    // The account's known browsers share their share: it is spent for its second one as well.
    expect(await signInWith(second, 'erin', 'erin-pw')).toBe(429);
    expect(await serverView('erin')).toEqual({ failedBinds: CAP, locked: false });
  });

  it('gives no share to a forged known-browser cookie, an unsigned one, one of another account or an expired one', async () => {
    const known = await knownBrowserOf('frank', '203.0.113.70');
    const ofGrace = await knownBrowserOf('grace', '203.0.113.71');
    const frankCookie = known.cookies.get('sigil.known')!;
    const graceCookie = ofGrace.cookies.get('sigil.known')!;
    // Grace's signed cookie with Frank's digest put in (its signature no longer matches), and the same
    // without a signature.
    const [header, , signature] = graceCookie.split('.');
    const [, frankPayload] = frankCookie.split('.');
    const forged = `${header}.${frankPayload}.${signature}`;
    const unsigned = `${Buffer.from(JSON.stringify({ alg: 'none', typ: 'sigil-known-browser+jwt' })).toString('base64url')}.${frankPayload}.`;
    expect(await strangersGuess('frank', 3)).toEqual([400, 400, 429, 429, 429, 429, 429, 429, 429, 429]);
    expect(await signInWith(ofGrace, 'frank', 'frank-pw')).toBe(429);
    for (const [name, value] of [
      ['forged', forged],
      ['unsigned', unsigned],
    ]) {
      const b = new Browser(sigil, '203.0.113.72');
      b.cookies.set('sigil.known', value!);
      expect(await signInWith(b, 'frank', 'frank-pw'), name).toBe(429);
    }
    // None of them reached the server; Frank's own cookie, in its lifetime, signs in.
    expect(await serverView('frank')).toEqual({ failedBinds: STRANGERS, locked: false });
    expect(await signInWith(known, 'frank', 'frank-pw')).toBe('signed in');
    // Past knownBrowserLifetime (the strangers pausing the account again), the cookie is known no longer.
    vi.useFakeTimers({ toFake: ['Date'], now: Date.now() + KNOWN_LIFETIME * 1000 + 1000 });
    try {
      expect(await strangersGuess('frank', 4)).toEqual([400, 400, 429, 429, 429, 429, 429, 429, 429, 429]);
      expect(await signInWith(known, 'frank', 'frank-pw')).toBe(429);
    } finally {
      vi.useRealTimers();
    }
    expect(await serverView('frank')).toEqual({ failedBinds: STRANGERS, locked: false });
  });
});

describe('pages of a signed-in directory user while the directory is down', () => {
  let slapd: Slapd;
  let sigil: TestSigil;

  beforeAll(async () => {
    slapd = await startSlapd();
    sigil = await startSigil({
      users: [],
      rateLimits: { maxFailures: 1000, windowSeconds: 60 },
      clients: [webLike('web')],
      // 0: every step asks the directory again, as it does once the cache time has passed.
      userDirectories: [slapd.directoryConfig({ claimsCacheSeconds: 0 })] as never,
      webauthn: { enabled: true },
    });
  });
  afterAll(async () => {
    await sigil?.close();
    await slapd?.close();
  });

  /** The localized 503 page: HTML, no-store, Retry-After, the directory's text in `lang`. */
  function expectUnavailablePage(
    step: { status: number; body: string; headers: Record<string, unknown> },
    lang: 'en' | 'de',
    where: string,
  ): void {
    expect(step.status, where).toBe(503);
    expect(String(step.headers['content-type']), where).toMatch(/^text\/html/);
    expect(step.headers['retry-after'], where).toBe('30');
    expect(step.body, where).toContain(
      lang === 'en'
        ? 'Sign-in is unavailable at the moment. Please try again later.'
        : 'Die Anmeldung ist im Moment nicht möglich.',
    );
    expect(step.body, where).toContain(`<html lang="${lang}"`);
  }

  it('answers the second-factor step with the 503 page when the directory goes down between password and code', async () => {
    const enrol = new Browser(sigil);
    await enrol.signIn('alice', 'alice-pw');
    const { secret } = await enrollTotp(enrol);
    const b = new Browser(sigil);
    const { challenge } = pkce();
    const login = await b.follow(await b.get(authorizeUrl(codeParams(challenge))));
    const mfa = await b.follow(await b.submitLogin(login, 'alice', 'alice-pw'));
    expect(isMfaPage(mfa), mfa.body).toBe(true);
    await slapd.stop();
    try {
      expectUnavailablePage(await submitCode(b, mfa, totpCode(secret, 1)), 'en', 'POST /account/mfa');
      const fields = {
        csrf_token: input(mfa.body, 'csrf_token'),
        code: totpCode(secret, 1),
        button: 'verify',
        interaction: input(mfa.body, 'interaction'),
      };
      // As a browser sends it: the page, in the browser's language.
      const browserAccept = {
        accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8',
        'accept-language': 'de',
      };
      expectUnavailablePage(await b.post('/account/mfa', fields, browserAccept), 'de', 'POST /account/mfa (de)');
    } finally {
      await slapd.start();
    }
    // Nothing was spent: the same code finishes the same step once the directory is back.
    const done = await submitCode(b, mfa, totpCode(secret, 1));
    expect(readResponse(done).params.get('code'), done.body).toBeTruthy();
  });

  it("answers /account, its pages and the passkey pages with the 503 page, and the passkey script's JSON routes with JSON", async () => {
    const b = new Browser(sigil);
    await b.signIn('carol', 'carol-pw');
    const passkeys = await b.get('/account/passkeys');
    expect(passkeys.status, passkeys.body).toBe(200);
    await slapd.stop();
    try {
      for (const url of ['/account', '/account/passkeys', '/account/totp', '/account/profile'])
        expectUnavailablePage(await b.get(url), 'en', `GET ${url}`);
      expectUnavailablePage(
        await b.get('/account/passkeys', { 'accept-language': 'de' }),
        'de',
        'GET /account/passkeys (de)',
      );
      const csrf = input(passkeys.body, 'csrf_token');
      expectUnavailablePage(
        await b.post('/account/passkeys/register', { csrf_token: csrf, kind: 'passkey', name: 'k', response: '{}' }),
        'en',
        'POST /account/passkeys/register',
      );
      // The options the page's script fetches stay JSON (the script shows its own error).
      const options = await b.post(
        '/account/passkeys/options',
        { csrf_token: csrf, kind: 'passkey' },
        { accept: 'application/json' },
      );
      expect(options.status).toBe(503);
      expect(options.res.json()).toEqual({
        error: 'temporarily_unavailable',
        error_description: 'sign-in is temporarily unavailable, please try again later',
      });
    } finally {
      await slapd.start();
    }
    expect((await b.get('/account/passkeys')).status).toBe(200);
  });

  it('answers a passkey sign-in with the 503 page when the directory is down', async () => {
    const b = new Browser(sigil);
    await b.signIn('bob', 'bob-pw');
    const auth = new SoftAuthenticator(ISSUER);
    const page = await b.get('/account/passkeys');
    const csrf = input(page.body, 'csrf_token');
    const options = await b.post('/account/passkeys/options', { csrf_token: csrf, kind: 'passkey' });
    const added = await b.post('/account/passkeys/register', {
      csrf_token: csrf,
      kind: 'passkey',
      name: 'Bob key',
      response: JSON.stringify(auth.register(options.res.json())),
    });
    expect(added.status, added.body).toBe(303);
    const fresh = new Browser(sigil);
    const login = await fresh.follow(await fresh.get(authorizeUrl(codeParams(pkce().challenge))));
    const loginCsrf = input(login.body, 'csrf_token');
    const loginOptions = await fresh.post('/account/passkeys/login/options', { csrf_token: loginCsrf });
    await slapd.stop();
    try {
      const answered = await fresh.post('/account/passkeys/login', {
        csrf_token: loginCsrf,
        interaction: input(login.body, 'interaction'),
        response: JSON.stringify(auth.authenticate(loginOptions.res.json())),
      });
      expectUnavailablePage(answered, 'en', 'POST /account/passkeys/login');
      expect(fresh.cookies.has('sigil.session')).toBe(false);
    } finally {
      await slapd.start();
    }
  });
});
