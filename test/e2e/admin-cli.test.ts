import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { basic, form, tempDir, testConfig } from '../helpers.js';
import { createSigil, type Sigil } from '../../src/index.js';
import { pino } from 'pino';
import { InjectBrowser } from '../browser-helpers.js';

const run = promisify(execFile);
const CLI = resolve(import.meta.dirname, '../../dist/cli/main.js');

describe('sigil users and clients write to the store; a running node picks them up', () => {
  const { dir, cleanup } = tempDir();
  const configFile = join(dir, 'sigil.json');
  const storage = `sqlite:${join(dir, 'sigil.db')}`;
  let sigil: Sigil;
  const sigilCli = (...args: string[]) => run(process.execPath, [CLI, ...args, '--config', configFile, '--storage', storage]);

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
    await sigilCli('users', 'add', 'zoe', '--subject', 'z-1', '--password', 'zoe-pass', '--claims', '{"name":"Zoe"}');
    const { stdout } = await sigilCli('users', 'list');
    expect(stdout).toMatch(/z-1\s+zoe\s+-\s+true\s+store/);
    const ok = await token(basic('ropc', 'ropc-secret'), { grant_type: 'password', username: 'zoe', password: 'zoe-pass', scope: 'api1' });
    expect(ok.statusCode).toBe(200);
    await sigilCli('users', 'set-password', 'zoe', '--password', 'new-pass');
    expect((await token(basic('ropc', 'ropc-secret'), { grant_type: 'password', username: 'zoe', password: 'zoe-pass', scope: 'api1' })).statusCode).toBe(400);
    expect((await token(basic('ropc', 'ropc-secret'), { grant_type: 'password', username: 'zoe', password: 'new-pass', scope: 'api1' })).statusCode).toBe(200);
    await sigilCli('users', 'remove', 'zoe');
    expect((await token(basic('ropc', 'ropc-secret'), { grant_type: 'password', username: 'zoe', password: 'new-pass', scope: 'api1' })).statusCode).toBe(400);
  });

  it('adds a client whose secret is stored hashed; the running node accepts it within the reload period', async () => {
    const client = { clientId: 'cli-m2m', clientSecrets: ['cli-secret'], allowedGrantTypes: ['client_credentials'], allowedScopes: ['api1'] };
    await sigilCli('clients', 'add', '--json', JSON.stringify(client));
    const stored = await sigil.context.store.clients.listClients();
    expect(JSON.stringify(stored)).not.toContain('cli-secret');
    await new Promise((r) => setTimeout(r, 1500));
    expect((await token(basic('cli-m2m', 'cli-secret'), { grant_type: 'client_credentials' })).statusCode).toBe(200);
    await sigilCli('clients', 'remove', 'cli-m2m');
    await new Promise((r) => setTimeout(r, 1500));
    expect((await token(basic('cli-m2m', 'cli-secret'), { grant_type: 'client_credentials' })).statusCode).toBe(401);
  });

  it('refuses an invalid client with exit code 2 and the field path', async () => {
    const bad = { clientId: 'bad', clientSecrets: ['x'], allowedGrantTypes: ['client_credentials'], allowedScopes: ['nope'] };
    const err = await sigilCli('clients', 'add', '--json', JSON.stringify(bad)).catch((e: { code: number; stderr: string }) => e);
    expect(err).toMatchObject({ code: 2 });
    expect((err as { stderr: string }).stderr).toMatch(/clients\[\d+\]\.allowedScopes\[0\]: unknown scope "nope"/);
  });

  it('a config-file client wins over a stored one with the same id', async () => {
    const shadow = { clientId: 'm2m', clientSecrets: ['stolen'], allowedGrantTypes: ['client_credentials'], allowedScopes: ['api1'] };
    const { stderr } = await sigilCli('clients', 'add', '--json', JSON.stringify(shadow));
    expect(stderr).toContain('wins over the stored one');
    await new Promise((r) => setTimeout(r, 1500));
    expect((await token(basic('m2m', 'stolen'), { grant_type: 'client_credentials', scope: 'api1' })).statusCode).toBe(401);
    expect((await token(basic('m2m', 'm2m-secret'), { grant_type: 'client_credentials', scope: 'api1' })).statusCode).toBe(200);
  });

  it('`users sessions revoke` ends the live sessions of a user; an unknown user is exit code 1', async () => {
    const browser = new InjectBrowser(sigil.app);
    await browser.signIn('bob');
    const signedIn = async () => (await browser.get('/account/logout')).body.includes('name="button" value="logout"');
    expect(await signedIn()).toBe(true);
    const { stdout } = await sigilCli('users', 'sessions', 'revoke', 'bob');
    expect(stdout).toContain('ended 1 session of bob');
    expect(await signedIn()).toBe(false);
    const err = await sigilCli('users', 'sessions', 'revoke', 'nobody').catch((e: { code: number; stderr: string }) => e);
    expect(err).toMatchObject({ code: 1 });
    expect((err as { stderr: string }).stderr).toContain('no user "nobody"');
  });
});
