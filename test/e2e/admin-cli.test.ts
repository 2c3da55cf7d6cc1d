import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { basic, form, settled, tempDir, testConfig } from '../helpers.js';
import { createSigil, type Sigil } from '../../src/index.js';
import { pino } from 'pino';
import { Browser } from '../authorize-helpers.js';
import { enrollTotp } from '../mfa-helpers.js';
import { InjectBrowser } from '../browser-helpers.js';

const run = promisify(execFile);
const CLI = resolve(import.meta.dirname, '../../dist/cli/main.js');

describe('sigil users and clients write to the store; a running node picks them up', () => {
  const { dir, cleanup } = tempDir();
  const configFile = join(dir, 'sigil.json');
  const storage = `sqlite:${join(dir, 'sigil.db')}`;
  let sigil: Sigil;
  const sigilCli = (...args: string[]) =>
    run(process.execPath, [CLI, ...args, '--config', configFile, '--storage', storage]);

  beforeAll(async () => {
    const config = { ...testConfig({ signingKeys: { reloadSeconds: 1 } }), storage };
    writeFileSync(configFile, JSON.stringify(config));
    sigil = await createSigil(config, { logger: pino({ level: 'silent' }) });
  });
  afterAll(async () => {
    await sigil.close();
    cleanup();
  });

  const token = (authorization: string, params: Record<string, string>) =>
    sigil.app.inject({
      method: 'POST',
      url: '/connect/token',
      headers: { 'content-type': 'application/x-www-form-urlencoded', authorization },
      payload: form(params),
    });

  it('adds a user with an argon2id hash who can then use the password grant, and removes them', async () => {
    await sigilCli(
      'users',
      'add',
      'zoe',
      '--subject',
      'z-1',
      '--password',
      'harbour-violet-19',
      '--claims',
      '{"name":"Zoe"}',
    );
    const { stdout } = await sigilCli('users', 'list');
    expect(stdout).toMatch(/z-1\s+zoe\s+-\s+true\s+store/);
    const ok = await token(basic('ropc', 'ropc-secret'), {
      grant_type: 'password',
      username: 'zoe',
      password: 'harbour-violet-19',
      scope: 'api1',
    });
    expect(ok.statusCode).toBe(200);
    await sigilCli('users', 'set-password', 'zoe', '--password', 'quiet-lantern-52');
    expect(
      (
        await token(basic('ropc', 'ropc-secret'), {
          grant_type: 'password',
          username: 'zoe',
          password: 'harbour-violet-19',
          scope: 'api1',
        })
      ).statusCode,
    ).toBe(400);
    expect(
      (
        await token(basic('ropc', 'ropc-secret'), {
          grant_type: 'password',
          username: 'zoe',
          password: 'quiet-lantern-52',
          scope: 'api1',
        })
      ).statusCode,
    ).toBe(200);
    await sigilCli('users', 'remove', 'zoe');
    expect(
      (
        await token(basic('ropc', 'ropc-secret'), {
          grant_type: 'password',
          username: 'zoe',
          password: 'quiet-lantern-52',
          scope: 'api1',
        })
      ).statusCode,
    ).toBe(400);
  });

  // One CLI process after another: each start takes seconds on a loaded machine (90 s).
  it("refuses a weak password on users add and set-password with the policy's reason (NIST SP 800-63B-4 §3.1.1.2), storing nothing", async () => {
    const refused = (...args: string[]) =>
      sigilCli(...args).then(
        (ok) => ({ code: 0, stderr: ok.stderr }),
        (e: { code: number; stderr: string }) => ({ code: e.code, stderr: e.stderr }),
      );
    expect(await refused('users', 'add', 'walt', '--password', 'password1')).toEqual({
      code: 2,
      stderr: 'sigil: --password: the password is a common or breached password\n',
    });
    expect(await refused('users', 'add', 'walt', '--password', 'short')).toEqual({
      code: 2,
      stderr: 'sigil: --password: the password is shorter than 8 characters\n',
    });
    expect((await sigilCli('users', 'list')).stdout).not.toContain('walt');
    await sigilCli('users', 'add', 'walter', '--password', 'harbour-violet-19');
    expect(await refused('users', 'set-password', 'walter', '--password', 'Walter-rocks-2026!')).toMatchObject({
      code: 2,
      stderr: expect.stringContaining('the password contains the username'),
    });
    expect(await refused('users', 'set-password', 'walter', '--password', 'qwertyuiop')).toMatchObject({
      code: 2,
      stderr: expect.stringMatching(/common or breached|too easy to guess/),
    });
    const ok = await token(basic('ropc', 'ropc-secret'), {
      grant_type: 'password',
      username: 'walter',
      password: 'harbour-violet-19',
      scope: 'api1',
    });
    expect(ok.statusCode).toBe(200);
    await sigilCli('users', 'remove', 'walter');
  }, 90_000);

  it("lists and resets a user's second factors (sigil users mfa list|reset), with an audit event", async () => {
    const b = new Browser(sigil);
    await b.signIn('alice');
    await enrollTotp(b);
    // A security key (WebAuthn) is one of her factors too: listed and reset with the others.
    const key = {
      id: 'key-1',
      subjectId: '1',
      kind: 'security-key' as const,
      publicKey: 'pk',
      counter: 0,
      transports: ['usb'],
      name: 'Blue key',
      backedUp: false,
      createdAt: 1_700_000_000,
      lastUsedAt: null,
    };
    expect(await sigil.context.store.webauthn.add(key)).toBe(true);
    const aliceToken = () =>
      token(basic('ropc', 'ropc-secret'), {
        grant_type: 'password',
        username: 'alice',
        password: 'alice',
        scope: 'api1',
      });
    expect((await aliceToken()).json()).toMatchObject({ error: 'invalid_grant' });
    const { stdout: listed } = await sigilCli('users', 'mfa', 'list', 'alice');
    expect(listed).toMatch(/^totp\s+\S+\s+\d{4}-/m);
    expect(listed).toContain('recovery_code: 10 of 10 unused');
    expect(listed).toMatch(/^security-key\s+key-1\s+2023-/m);
    // The same store under a config that logs (the shared one is silent), to see the audit event.
    const loud = join(dir, 'loud.json');
    writeFileSync(loud, JSON.stringify({ ...testConfig(), storage, logLevel: 'info' }));
    const reset = await run(process.execPath, [
      CLI,
      'users',
      'mfa',
      'reset',
      'alice',
      '--config',
      loud,
      '--storage',
      storage,
    ]);
    expect(reset.stdout).toContain('removed 12 second factors of alice (1)');
    expect(reset.stderr).toContain('"name":"mfa_removed"');
    expect((await sigilCli('users', 'mfa', 'list', 'alice')).stdout).toContain('alice has no second factor');
    expect(await sigil.context.store.webauthn.list('1')).toEqual([]);
    expect((await aliceToken()).statusCode).toBe(200);
    await expect(sigilCli('users', 'mfa', 'reset', 'nobody')).rejects.toMatchObject({ code: 1 });
  });

  it('adds a client whose secret is stored hashed; the running node accepts it within the reload period', async () => {
    const client = {
      clientId: 'cli-m2m',
      clientSecrets: ['cli-secret'],
      allowedGrantTypes: ['client_credentials'],
      allowedScopes: ['api1'],
    };
    await sigilCli('clients', 'add', '--json', JSON.stringify(client));
    const stored = await sigil.context.store.clients.listClients();
    expect(JSON.stringify(stored)).not.toContain('cli-secret');
    // The node reads stored changes at its next poll (about a second): wait for it, with a deadline.
    const status = async () =>
      (await token(basic('cli-m2m', 'cli-secret'), { grant_type: 'client_credentials' })).statusCode;
    expect(await settled(status, (s) => s === 200)).toBe(200);
    await sigilCli('clients', 'remove', 'cli-m2m');
    expect(await settled(status, (s) => s === 401)).toBe(401);
  });

  it('`clients add` and `update` accept an API scope created through /admin/v1 (the stored resources), as the admin API does', async () => {
    // The same service /admin/v1/api-scopes and /admin/v1/api-resources call on the running node.
    await sigil.context.management.resources.create('api_scope', { name: 'cli-reports' });
    await sigil.context.management.resources.create('api_resource', {
      name: 'cli-reports-api',
      scopes: ['cli-reports'],
    });
    const client = {
      clientId: 'cli-reports-client',
      clientSecrets: ['cli-reports-secret'],
      allowedGrantTypes: ['client_credentials'],
      allowedScopes: ['cli-reports'],
    };
    await sigilCli('clients', 'add', '--json', JSON.stringify(client));
    await sigilCli(
      'clients',
      'update',
      'cli-reports-client',
      '--json',
      JSON.stringify({ allowedScopes: ['cli-reports', 'api1'] }),
    );
    const res = await settled(
      () =>
        token(basic('cli-reports-client', 'cli-reports-secret'), {
          grant_type: 'client_credentials',
          scope: 'cli-reports api1',
        }),
      (r) => r.statusCode === 200,
    );
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().scope.split(' ').sort()).toEqual(['api1', 'cli-reports']);
    // A scope neither in the config file nor stored is still refused.
    const bad = await sigilCli(
      'clients',
      'update',
      'cli-reports-client',
      '--json',
      JSON.stringify({ allowedScopes: ['cli-nope'] }),
    ).catch((e: { code: number; stderr: string }) => e);
    expect(bad).toMatchObject({ code: 2 });
    expect((bad as { stderr: string }).stderr).toContain('unknown scope "cli-nope"');
    await sigilCli('clients', 'remove', 'cli-reports-client');
  });

  it('refuses an invalid client with exit code 2 and the field path', async () => {
    const bad = {
      clientId: 'bad',
      clientSecrets: ['x'],
      allowedGrantTypes: ['client_credentials'],
      allowedScopes: ['nope'],
    };
    const err = await sigilCli('clients', 'add', '--json', JSON.stringify(bad)).catch(
      (e: { code: number; stderr: string }) => e,
    );
    expect(err).toMatchObject({ code: 2 });
    expect((err as { stderr: string }).stderr).toMatch(/clients\[\d+\]\.allowedScopes\[0\]: unknown scope "nope"/);
  });

  it('refuses a client whose redirect or post-logout redirect URI breaks the redirect URI rule (exit code 2, naming the field), storing nothing', async () => {
    const client = (extra: Record<string, unknown>) => ({
      clientId: 'cli-rp',
      requireClientSecret: false,
      allowedGrantTypes: ['authorization_code'],
      redirectUris: ['https://rp.example/cb'],
      ...extra,
    });
    const refused = (...args: string[]) =>
      sigilCli(...args).then(
        (ok) => ({ code: 0, stderr: ok.stderr }),
        (e: { code: number; stderr: string }) => ({ code: e.code, stderr: e.stderr }),
      );
    expect(
      await refused(
        'clients',
        'add',
        '--json',
        JSON.stringify(
          client({ redirectUris: ['https://rp.example/cb', 'javascript:alert(1)', 'https://evil.example/*'] }),
        ),
      ),
    ).toMatchObject({
      code: 2,
      stderr: expect.stringMatching(
        /clients\[\d+\]\.redirectUris\[1\]: the scheme javascript: is not allowed\n\s*clients\[\d+\]\.redirectUris\[2\]: must not contain wildcards/,
      ),
    });
    expect(
      await refused(
        'clients',
        'add',
        '--json',
        JSON.stringify(client({ postLogoutRedirectUris: ['data:text/html,hi', 'http://127.0.0.1.nip.io/bye'] })),
      ),
    ).toMatchObject({
      code: 2,
      stderr: expect.stringMatching(
        /clients\[\d+\]\.postLogoutRedirectUris\[0\]: the scheme data: is not allowed\n\s*clients\[\d+\]\.postLogoutRedirectUris\[1\]: http is allowed only on a loopback host/,
      ),
    });
    expect(await sigil.context.store.clients.getClient('cli-rp')).toBeUndefined();
    // Stored (through the service the CLI uses), then changed: the update is refused the same way and the
    // stored client kept.
    await sigil.context.management.clients.create(client({}));
    expect(
      await refused('clients', 'update', 'cli-rp', '--json', JSON.stringify({ redirectUris: ['file:///etc/passwd'] })),
    ).toMatchObject({ code: 2, stderr: expect.stringMatching(/redirectUris\[0\]: the scheme file: is not allowed/) });
    expect(JSON.parse((await sigil.context.store.clients.getClient('cli-rp')) ?? '{}')).toMatchObject({
      redirectUris: ['https://rp.example/cb'],
    });
    await sigil.context.management.clients.delete('cli-rp');
  });

  it('refuses a client id that is an https:// URL while metadata documents are enabled (exit code 2, naming clientId), storing nothing', async () => {
    const url = {
      clientId: 'https://agent.example/cli',
      clientSecrets: ['a-long-enough-secret-for-this-client-0123'],
      allowedGrantTypes: ['client_credentials'],
      allowedScopes: ['api1'],
    };
    const err = await sigilCli('clients', 'add', '--json', JSON.stringify(url)).catch(
      (e: { code: number; stderr: string }) => e,
    );
    expect(err).toMatchObject({ code: 2 });
    expect((err as { stderr: string }).stderr).toMatch(
      /clientId: an https:\/\/ client id names a Client ID Metadata Document/,
    );
    expect((await sigilCli('clients', 'list')).stdout).not.toContain('https://agent.example/cli');
  });

  it("refuses a client id that is a user's subject and a user subject that is a client id, config or stored (RFC 9068 §5)", async () => {
    const refused = (...args: string[]) =>
      sigilCli(...args).then(
        (ok) => ({ code: 0, stderr: ok.stderr }),
        (e: { code: number; stderr: string }) => ({ code: e.code, stderr: e.stderr }),
      );
    const m2m = (clientId: string) =>
      JSON.stringify({
        clientId,
        clientSecrets: ['x-secret'],
        allowedGrantTypes: ['client_credentials'],
        allowedScopes: ['api1'],
      });
    // A config user's subject ("1" is alice).
    expect(await refused('clients', 'add', '--json', m2m('1'))).toMatchObject({
      code: 2,
      stderr: expect.stringMatching(/clients\[\d+\]\.clientId: clientId "1" is the subjectId of users\[0\]/),
    });
    // A stored user's subject.
    await sigilCli('users', 'add', 'yuri', '--subject', 'y-1', '--password', 'copper-meadow-88');
    expect(await refused('clients', 'add', '--json', m2m('y-1'))).toMatchObject({
      code: 2,
      stderr: expect.stringContaining('clientId "y-1" is the subjectId of stored user "yuri"'),
    });
    // A config client's id, and a stored client's id, as a new user's subject.
    expect(await refused('users', 'add', 'mallory', '--subject', 'm2m', '--password', 'p')).toMatchObject({
      code: 2,
      stderr: expect.stringContaining('clientId "m2m" is the subjectId of user "mallory"'),
    });
    await sigilCli('clients', 'add', '--json', m2m('svc-7'));
    expect(await refused('users', 'add', 'trudy', '--subject', 'svc-7', '--password', 'p')).toMatchObject({
      code: 2,
      stderr: expect.stringContaining('clientId "svc-7" is the subjectId of user "trudy"'),
    });
    const { stdout: users } = await sigilCli('users', 'list');
    expect(users).not.toMatch(/mallory|trudy/);
    expect(JSON.stringify(await sigil.context.store.clients.listClients())).not.toMatch(/"clientId":"(1|y-1)"/);
    await sigilCli('clients', 'remove', 'svc-7');
    await sigilCli('users', 'remove', 'yuri');
  }, 60_000);

  it('at run time: a stored client named like a user is ignored, and a config client named like a stored user stops the start', async () => {
    // Written around the CLI (an older version, a restore): bob's subject "2" as a client id.
    await sigil.context.store.clients.saveClient('2', {
      clientId: '2',
      clientSecrets: ['two-secret'],
      allowedGrantTypes: ['client_credentials'],
      allowedScopes: ['api1'],
    });
    await new Promise((r) => setTimeout(r, 1500));
    expect((await token(basic('2', 'two-secret'), { grant_type: 'client_credentials' })).statusCode).toBe(401);
    await sigil.context.store.clients.removeClient('2');

    await sigil.context.store.users.addUser({
      subjectId: 'svc-9',
      username: 'ivy',
      tenant: null,
      passwordHash: null,
      claims: {},
      isActive: true,
    });
    const base = testConfig();
    const config = {
      ...base,
      storage,
      clients: [
        ...(base.clients ?? []),
        { clientId: 'svc-9', clientSecrets: ['s'], allowedGrantTypes: ['client_credentials'] },
      ],
    };
    await expect(createSigil(config, { logger: pino({ level: 'silent' }) })).rejects.toThrow(
      /clients\[\d+\]\.clientId: clientId "svc-9" is the subjectId of stored user "ivy"/,
    );
    await sigil.context.store.users.removeUser('svc-9');
  });

  it('`clients update` applies a JSON Merge Patch through the same service as the admin API; config clients are read-only', async () => {
    const client = {
      clientId: 'cli-upd',
      clientSecrets: ['cli-upd-secret'],
      allowedGrantTypes: ['client_credentials'],
      allowedScopes: ['api1'],
    };
    await sigilCli('clients', 'add', '--json', JSON.stringify(client));
    const { stdout } = await sigilCli(
      'clients',
      'update',
      'cli-upd',
      '--json',
      JSON.stringify({ allowedScopes: ['api1', 'api2'], clientName: 'Updated' }),
    );
    expect(stdout).toMatch(/changed (allowedScopes, clientName|clientName, allowedScopes)/);
    const scoped = async () =>
      (await token(basic('cli-upd', 'cli-upd-secret'), { grant_type: 'client_credentials', scope: 'api2' })).statusCode;
    expect(await settled(scoped, (s) => s === 200)).toBe(200);
    const bad = await sigilCli(
      'clients',
      'update',
      'cli-upd',
      '--json',
      JSON.stringify({ allowedScopes: ['nope'] }),
    ).catch((e: { code: number; stderr: string }) => e);
    expect(bad).toMatchObject({ code: 2 });
    const config = await sigilCli('clients', 'update', 'm2m', '--json', '{"clientName":"x"}').catch(
      (e: { code: number; stderr: string }) => e,
    );
    expect(config).toMatchObject({ code: 1 });
    expect((config as { stderr: string }).stderr).toContain('managed by the config file');
  });

  it('`users disable` refuses sign-in, ends sessions and revokes tokens, `enable` restores sign-in only, `set-claims` replaces the claims', async () => {
    await sigilCli(
      'users',
      'add',
      'dora',
      '--subject',
      'd-1',
      '--password',
      'plum-harbour-lantern-47',
      '--claims',
      '{"name":"Dora"}',
    );
    const password = (client = 'ropc', scope = 'openid profile') =>
      token(basic(client, 'ropc-secret'), {
        grant_type: 'password',
        username: 'dora',
        password: 'plum-harbour-lantern-47',
        scope,
      });
    expect((await password()).statusCode).toBe(200);
    const refreshToken = String((await password('ropc', 'openid api1 offline_access')).json().refresh_token);
    const reference = (await password('ropc-ref', 'openid api1 offline_access')).json() as {
      access_token: string;
      refresh_token: string;
    };
    const active = async (t: string) =>
      (
        await sigil.app.inject({
          method: 'POST',
          url: '/connect/introspect',
          headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: basic('api1', 'api1-secret') },
          payload: form({ token: t }),
        })
      ).json().active;
    expect(await active(reference.access_token)).toBe(true);
    const browser = new InjectBrowser(sigil.app);
    await browser.signIn('dora', 'plum-harbour-lantern-47');
    const { stdout } = await sigilCli('users', 'disable', 'dora');
    expect(stdout).toMatch(/ended 1 session, revoked [1-9]\d* tokens/);
    expect((await password()).statusCode).toBe(400);
    await sigilCli('users', 'enable', 'dora');
    expect((await password()).statusCode).toBe(200);
    // Enabling again brings none of the revoked tokens back.
    const refresh = await token(basic('ropc', 'ropc-secret'), {
      grant_type: 'refresh_token',
      refresh_token: refreshToken,
    });
    expect(refresh.statusCode).toBe(400);
    expect(refresh.json().error).toBe('invalid_grant');
    expect(
      (
        await token(basic('ropc-ref', 'ropc-secret'), {
          grant_type: 'refresh_token',
          refresh_token: reference.refresh_token,
        })
      ).json().error,
    ).toBe('invalid_grant');
    // The node saw the token active less than accessTokenCache.maxAgeMilliseconds (1 s) ago: the
    // CLI's revocation, made by another process, is seen once that bound has passed.
    await new Promise((r) => setTimeout(r, 1100));
    expect(await active(reference.access_token)).toBe(false);
    await sigilCli('users', 'set-claims', 'dora', '--claims', '{"name":"Dora Explorer"}');
    expect((await sigil.context.users.findBySubject('d-1'))?.claims).toMatchObject({ name: 'Dora Explorer' });
    const bad = await sigilCli('users', 'set-claims', 'dora', '--claims', '[1]').catch(
      (e: { code: number; stderr: string }) => e,
    );
    expect(bad).toMatchObject({ code: 2 });
    const config = await sigilCli('users', 'disable', 'alice').catch((e: { code: number; stderr: string }) => e);
    expect(config).toMatchObject({ code: 1 });
    await sigilCli('users', 'remove', 'dora');
  });

  it('a config-file client wins over a stored one with the same id', async () => {
    const shadow = {
      clientId: 'm2m',
      clientSecrets: ['stolen'],
      allowedGrantTypes: ['client_credentials'],
      allowedScopes: ['api1'],
    };
    const { stderr } = await sigilCli('clients', 'add', '--json', JSON.stringify(shadow));
    expect(stderr).toContain('wins over the stored one');
    await new Promise((r) => setTimeout(r, 1500));
    expect((await token(basic('m2m', 'stolen'), { grant_type: 'client_credentials', scope: 'api1' })).statusCode).toBe(
      401,
    );
    expect(
      (await token(basic('m2m', 'm2m-secret'), { grant_type: 'client_credentials', scope: 'api1' })).statusCode,
    ).toBe(200);
  });

  it('`users sessions revoke` ends the live sessions of a user; an unknown user is exit code 1', async () => {
    const browser = new InjectBrowser(sigil.app);
    await browser.signIn('bob');
    const signedIn = async () => (await browser.get('/account/logout')).body.includes('name="button" value="logout"');
    expect(await signedIn()).toBe(true);
    const { stdout } = await sigilCli('users', 'sessions', 'revoke', 'bob');
    expect(stdout).toContain('ended 1 session of bob');
    expect(await signedIn()).toBe(false);
    const err = await sigilCli('users', 'sessions', 'revoke', 'nobody').catch(
      (e: { code: number; stderr: string }) => e,
    );
    expect(err).toMatchObject({ code: 1 });
    expect((err as { stderr: string }).stderr).toContain('no user "nobody"');
  });
});
