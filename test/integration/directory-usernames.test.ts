/**
 * No stored user answers for a directory user's name (src/admin/users.ts `UserAdmin.holderOf`,
 * src/users/users.ts), against a real OpenLDAP server (test/ldap-server.mjs): SCIM (create and
 * rename), the command line and self-registration refuse a username a directory holds (409), and
 * refuse with a temporary error while the directory cannot answer; a name a directory gains after
 * a stored user took it signs in neither of them (login page and password grant), with a warning
 * naming the username and the directory.
 */
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import type { LightMyRequestResponse } from 'fastify';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Browser, input, isLoginPage, unescapeHtml } from '../authorize-helpers.js';
import { consoleBrowser } from '../console-helpers.js';
import { clientTokens, startSigil, tempDir, testConfig, tokenRequest, type TestSigil } from '../helpers.js';
import { LDAP_USERS, type LdapUser, PEOPLE, type Slapd, startSlapd } from '../ldap-server.mjs';
import { linkIn, SmtpReceiver } from '../smtp-receiver.js';

const USER = 'urn:ietf:params:scim:schemas:core:2.0:User';
const PATCH = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';
const ROPC = ['ropc', 'ropc-secret'] as const;
const CLI = resolve(import.meta.dirname, '../../dist/cli/main.js');
const run = promisify(execFile);

const RITA: LdapUser = {
  uid: 'rita.ldap',
  password: 'rita-ldap-pw',
  cn: 'Rita Ldap',
  givenName: 'Rita',
  sn: 'Ldap',
  mail: 'rita@corp.example',
  groups: ['devs'],
};

describe('usernames held by a user directory', () => {
  let slapd: Slapd;
  let smtp: SmtpReceiver;
  let sigil: TestSigil;
  let token: string;
  const logLines: Record<string, unknown>[] = [];
  const base = testConfig();

  beforeAll(async () => {
    slapd = await startSlapd([...LDAP_USERS, RITA]);
    smtp = await new SmtpReceiver().start();
    sigil = await startSigil(
      {
        clients: [
          ...base.clients!,
          {
            clientId: 'scim-bot',
            clientSecrets: ['scim-bot-secret'],
            allowedGrantTypes: ['client_credentials'],
            allowedScopes: ['scim'],
          },
        ],
        // One config user, the console's administrator; every other name refused here is the directory's.
        users: [{ subjectId: 'adm-1', username: 'root', password: 'root', claims: { role: 'sigil-admin' } }],
        rateLimits: { maxFailures: 1000, windowSeconds: 60 },
        email: { smtpUrl: smtp.url, from: 'id@acme.example', selfRegistration: true },
        // A second directory over the same server whose usernames are the mail addresses, as
        // self-registration's usernames are.
        userDirectories: [
          slapd.directoryConfig({ claimsCacheSeconds: 0 }),
          slapd.directoryConfig({ name: 'corp-mail', usernameAttribute: 'mail', claimsCacheSeconds: 0 }),
        ] as never,
      },
      {
        logger: pino(
          { level: 'warn' },
          { write: (line: string) => void logLines.push(JSON.parse(line) as Record<string, unknown>) },
        ),
      },
    );
    token = (await clientTokens(sigil, 'scim', ['scim-bot', 'scim-bot-secret'])).access_token;
  });
  afterAll(async () => {
    await sigil?.close();
    await smtp?.close();
    await slapd?.close();
  });

  function scim(method: string, url: string, body?: unknown): Promise<LightMyRequestResponse> {
    return sigil.app.inject({
      method: method as 'GET',
      url: `/scim/v2${url}`,
      headers: {
        authorization: `Bearer ${token}`,
        ...(body !== undefined ? { 'content-type': 'application/scim+json' } : {}),
      },
      ...(body !== undefined ? { payload: JSON.stringify(body) } : {}),
    });
  }
  let admin: Browser | undefined;
  /** The console's administrator, signed in once (a second sign-in would need the enrolled factor). */
  const consoleAdmin = async () => (admin ??= await consoleBrowser(sigil, 'root'));
  const grant = (username: string, password: string) =>
    tokenRequest(sigil, { grant_type: 'password', username, password, scope: 'openid' }, ROPC);
  const storedNamed = async (username: string) =>
    (await sigil.context.store.users.listUsers()).filter((u) => u.username.toLowerCase() === username.toLowerCase());

  /** Adds a person to the directory, as an administrator of it would. */
  async function addToDirectory(uid: string, password: string, mail: string): Promise<void> {
    const admin = await slapd.admin();
    try {
      await admin.add(`uid=${uid},${PEOPLE}`, {
        objectClass: 'inetOrgPerson',
        uid,
        cn: uid,
        sn: uid,
        mail,
        userPassword: password,
      });
    } finally {
      await admin.unbind();
    }
  }

  it("SCIM refuses to create a user with a directory user's username (409 uniqueness), in any case, storing nothing; the directory user still signs in", async () => {
    for (const userName of ['rita.ldap', 'RITA.LDAP', 'rita@corp.example']) {
      const res = await scim('POST', '/Users', { schemas: [USER], userName, password: 'violet-harbour-1959' });
      expect(res.statusCode, res.body).toBe(409);
      expect(res.json()).toMatchObject({ status: '409', scimType: 'uniqueness' });
      expect(await storedNamed(userName)).toEqual([]);
    }
    const rita = await grant('rita.ldap', 'rita-ldap-pw');
    expect(rita.statusCode, rita.body).toBe(200);
    expect((await grant('rita.ldap', 'violet-harbour-1959')).statusCode).toBe(400);
  });

  it("SCIM refuses to rename a stored user to a directory user's username, by PUT and by PATCH (409 uniqueness), keeping the name", async () => {
    const created = await scim('POST', '/Users', { schemas: [USER], userName: 'sam', password: 'violet-harbour-1959' });
    expect(created.statusCode, created.body).toBe(201);
    const id = created.json().id as string;
    const put = await scim('PUT', `/Users/${id}`, { schemas: [USER], userName: 'bob' });
    expect(put.statusCode, put.body).toBe(409);
    expect(put.json()).toMatchObject({ scimType: 'uniqueness' });
    const patch = await scim('PATCH', `/Users/${id}`, {
      schemas: [PATCH],
      Operations: [{ op: 'replace', path: 'userName', value: 'Alice' }],
    });
    expect(patch.statusCode, patch.body).toBe(409);
    expect(patch.json()).toMatchObject({ scimType: 'uniqueness' });
    expect((await scim('GET', `/Users/${id}`)).json().userName).toBe('sam');
    expect((await grant('bob', 'bob-pw')).statusCode).toBe(200);
  });

  it("the console refuses to create a user with a directory user's username (409, its refusal on the page), storing nothing", async () => {
    const admin = await consoleAdmin();
    const page = await admin.get('/admin/users');
    const res = await admin.post('/admin/users', {
      csrf_token: input(page.body, 'csrf_token'),
      username: 'rita.ldap',
      name: '',
      email: '',
      password: 'violet-harbour-1959',
    });
    expect(res.status, res.body).toBe(409);
    expect(unescapeHtml(res.body)).toContain('userName "rita.ldap" is taken');
    expect(await storedNamed('rita.ldap')).toEqual([]);
  });

  it("the command line refuses `sigil users add` of a directory user's username (exit 1), storing nothing", async () => {
    const { dir, cleanup } = tempDir();
    try {
      const configFile = join(dir, 'sigil.json');
      const storage = `sqlite:${join(dir, 'sigil.db')}`;
      writeFileSync(
        configFile,
        JSON.stringify({ ...testConfig(), storage, userDirectories: [slapd.directoryConfig()] }),
      );
      const cli = (...args: string[]) =>
        run(process.execPath, [CLI, ...args, '--config', configFile]).then(
          ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
          (err: { code: number; stdout: string; stderr: string }) => ({
            code: err.code,
            stdout: err.stdout,
            stderr: err.stderr,
          }),
        );
      const refused = await cli('users', 'add', 'rita.ldap', '--password', 'violet-harbour-1959');
      expect(refused.code, refused.stderr).toBe(1);
      expect(refused.stderr).toContain('directory "corp"');
      const ok = await cli('users', 'add', 'tom', '--password', 'violet-harbour-1959');
      expect(ok.code, ok.stderr).toBe(0);
      const listed = await cli('users', 'list');
      expect(listed.stdout).toContain('tom');
      expect(listed.stdout).not.toContain('rita.ldap');
    } finally {
      cleanup();
    }
    // Three runs of the command line, each a new Node.js process.
  }, 120_000);

  it('self-registration mails a directory user\'s address the "you have an account" note, and refuses (409) to confirm an address a directory gained meanwhile', async () => {
    const register = async (email: string) => {
      const b = new Browser(sigil, '198.51.100.80');
      const page = await b.get('/account/register');
      expect((await b.post('/account/register', { csrf_token: input(page.body, 'csrf_token'), email })).status).toBe(
        200,
      );
    };
    let sent = smtp.mails.length;
    await register('rita@corp.example');
    const note = await smtp.waitFor(sent + 1);
    expect(note.to).toEqual(['rita@corp.example']);
    expect(note.text).not.toContain('/account/register/confirm');

    sent = smtp.mails.length;
    await register('nia@corp.example');
    const link = linkIn(await smtp.waitFor(sent + 1), '/account/register/confirm');
    await addToDirectory('nia', 'nia-ldap-pw', 'nia@corp.example');
    const b = new Browser(sigil, '203.0.113.80');
    const page = await b.get(link);
    expect(page.status, page.body).toBe(200);
    const done = await b.post('/account/register/confirm', {
      csrf_token: input(page.body, 'csrf_token'),
      token: input(page.body, 'token'),
      password: 'lantern-harbour-93',
    });
    expect(done.status, done.body).toBe(409);
    expect(done.body).toContain('An account with this address as its username exists already.');
    expect(await storedNamed('nia@corp.example')).toEqual([]);
    expect((await grant('nia@corp.example', 'lantern-harbour-93')).statusCode).toBe(400);
  });

  it("signs in neither the stored user nor the directory user once a directory gains a stored user's name, and warns naming both", async () => {
    const created = await scim('POST', '/Users', {
      schemas: [USER],
      userName: 'erik',
      password: 'violet-harbour-1959',
    });
    expect(created.statusCode, created.body).toBe(201);
    expect((await grant('erik', 'violet-harbour-1959')).statusCode).toBe(200);
    await addToDirectory('erik', 'erik-ldap-pw', 'erik@corp.example');
    logLines.length = 0;
    for (const password of ['violet-harbour-1959', 'erik-ldap-pw']) {
      const res = await grant('erik', password);
      expect(res.statusCode, `${password}: ${res.body}`).toBe(400);
      expect(res.json()).toMatchObject({ error: 'invalid_grant' });
      const b = new Browser(sigil);
      const page = await b.get('/account/login');
      const login = await b.submitLogin(page, 'erik', password);
      expect(isLoginPage(login), login.body).toBe(true);
      expect(login.body).toContain('The username or password is incorrect.');
      expect(b.cookies.has('sigil.session')).toBe(false);
    }
    const warning = logLines.find((l) => l.username === 'erik' && l.directory === 'corp');
    expect(warning, JSON.stringify(logLines)).toMatchObject({ level: 40 });
    expect(String(warning?.msg)).toContain('"erik"');
    expect(String(warning?.msg)).toContain('"corp"');
  });

  it("refuses to create a user while the directory cannot answer (SCIM 503 with Retry-After, the console's 503 page), storing nothing", async () => {
    const console = await consoleAdmin();
    await slapd.stop();
    try {
      const res = await scim('POST', '/Users', {
        schemas: [USER],
        userName: 'ursula',
        password: 'violet-harbour-1959',
      });
      expect(res.statusCode, res.body).toBe(503);
      expect(res.headers['retry-after']).toBe('30');
      expect(res.json()).toMatchObject({ status: '503' });
      expect(await storedNamed('ursula')).toEqual([]);
      // The console says so on its page, in the page's language, with the same status.
      const page = await console.get('/admin/users');
      const form = await console.post('/admin/users', {
        csrf_token: input(page.body, 'csrf_token'),
        username: 'ursula',
        name: '',
        email: '',
        password: 'violet-harbour-1959',
      });
      expect(form.status, form.body).toBe(503);
      expect(unescapeHtml(form.body)).toContain('user directory "corp" cannot answer');
      expect(await storedNamed('ursula')).toEqual([]);
    } finally {
      await slapd.start();
    }
    const later = await scim('POST', '/Users', {
      schemas: [USER],
      userName: 'ursula',
      password: 'violet-harbour-1959',
    });
    expect(later.statusCode, later.body).toBe(201);
  });
});
