/**
 * The device flow end to end (RFC 8628): the real `sigil start` process, the example device client
 * `examples/device-client.mjs` (openid-client) as a child process, and a real Chromium where the
 * person enters the code, signs in and answers the consent page.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { createRemoteJWKSet, jwtVerify } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ConfigInput } from '../../src/index.js';
import { testConfig } from '../helpers.js';
import { type BrowserFixture, newPage, startBrowserFixture, submitLogin } from './browser-fixture.js';

const GRANT = 'urn:ietf:params:oauth:grant-type:device_code';
const CLIENT_ID = 'tv-cli';
const CLIENT_NAME = 'Command-line Device';
const EXAMPLE = resolve(import.meta.dirname, '../../examples/device-client.mjs');

/** The fixture config plus a public device client polling every second. */
function deviceConfig(): ConfigInput {
  const base = testConfig();
  return {
    ...base,
    clients: [
      ...(base.clients ?? []),
      {
        clientId: CLIENT_ID,
        clientName: CLIENT_NAME,
        requireClientSecret: false,
        allowedGrantTypes: [GRANT, 'refresh_token'],
        allowedScopes: ['openid', 'profile', 'offline_access', 'api1'],
        allowOfflineAccess: true,
        pollingInterval: 1,
      },
    ],
  };
}

let f: BrowserFixture;
beforeAll(async () => {
  f = await startBrowserFixture(() => deviceConfig());
});
afterAll(async () => f?.close());

/** The example device client running against the fixture's server. */
interface DeviceClient {
  child: ChildProcess;
  stdout: () => string;
  stderr: () => string;
  /** The code and the URLs it printed. */
  prompt: Promise<{ userCode: string; verificationUri: string; verificationUriComplete: string }>;
  exit: Promise<number | null>;
}

function runDeviceClient(scope: string): DeviceClient {
  const child = spawn(process.execPath, [EXAMPLE], {
    env: { ...process.env, SIGIL_ISSUER: f.sigil.url, CLIENT_ID, SCOPE: scope },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stderr?.on('data', (b: Buffer) => (err += b.toString()));
  const exit = new Promise<number | null>((ok) => child.once('exit', (code) => ok(code)));
  const prompt = new Promise<{ userCode: string; verificationUri: string; verificationUriComplete: string }>(
    (ok, fail) => {
      const timer = setTimeout(() => fail(new Error(`the device client printed no code:\n${out}\n${err}`)), 15_000);
      child.stdout?.on('data', (b: Buffer) => {
        out += b.toString();
        const first = /open (\S+) and enter the code (\S+)/.exec(out);
        const complete = /\(or open (\S+)\)/.exec(out);
        if (first && complete) {
          clearTimeout(timer);
          ok({ verificationUri: first[1]!, userCode: first[2]!, verificationUriComplete: complete[1]! });
        }
      });
      void exit.then((code) => {
        clearTimeout(timer);
        fail(new Error(`the device client exited with ${code} before printing a code:\n${out}\n${err}`));
      });
    },
  );
  prompt.catch(() => undefined);
  return { child, stdout: () => out, stderr: () => err, prompt, exit };
}

/** Waits for the child's exit (bounded), killing it when it hangs. */
async function exitOf(client: DeviceClient): Promise<number | null> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<'timeout'>((ok) => (timer = setTimeout(() => ok('timeout'), 15_000)));
  const result = await Promise.race([client.exit, timeout]);
  clearTimeout(timer);
  if (result === 'timeout') {
    client.child.kill('SIGTERM');
    throw new Error(`the device client did not finish:\n${client.stdout()}\n${client.stderr()}`);
  }
  return result;
}

describe('device flow with the example client and Chromium', () => {
  it('the person opens verification_uri_complete, signs in and approves; the client receives the tokens and exits 0', async () => {
    const client = runDeviceClient('openid profile offline_access api1');
    const { context, page } = await newPage(f.browser);
    try {
      const { userCode, verificationUri, verificationUriComplete } = await client.prompt;
      expect(userCode).toMatch(/^[BCDFGHJKLMNPQRSTVWXZ]{4}-[BCDFGHJKLMNPQRSTVWXZ]{4}$/);
      expect(verificationUri).toBe(`${f.sigil.url}/device`);

      await page.goto(verificationUriComplete);
      expect(await page.locator('input[name=userCode]').inputValue()).toBe(userCode);
      await page.locator('button[name=button][value=submit]').click();
      await page.waitForURL(/\/account\/login\?interaction=/);
      await submitLogin(page, 'alice');
      await page.waitForURL(/\/consent\?interaction=/);
      const main = await page.textContent('main');
      expect(main).toContain(CLIENT_NAME);
      expect(main).toContain('A device is asking for access to your account.');
      expect(await page.locator('ul.scopes li').count()).toBe(4);
      await page.locator('button[name=button][value=yes]').click();
      await page.getByText('Done. You can return to your device.').waitFor();

      expect(await exitOf(client), client.stderr()).toBe(0);
      const out = client.stdout();
      const json = /Approved\. Token response:\n(\{[\s\S]*?\n\})/.exec(out);
      expect(json, out).not.toBeNull();
      const tokens = JSON.parse(json![1]!) as Record<string, unknown>;
      expect(String(tokens.token_type).toLowerCase()).toBe('bearer');
      expect(tokens.access_token).toEqual(expect.any(String));
      expect(tokens.refresh_token).toEqual(expect.any(String));
      expect(String(tokens.scope).split(' ').sort()).toEqual(['api1', 'offline_access', 'openid', 'profile']);
      const jwks = createRemoteJWKSet(new URL(`${f.sigil.url}/.well-known/openid-configuration/jwks`));
      const { payload } = await jwtVerify(String(tokens.id_token), jwks, { issuer: f.sigil.url, audience: CLIENT_ID });
      expect(payload.sub).toBe('1');
      expect(out).toContain('Signed in as subject 1');

      // The code was single use: entering it again shows the page with the invalid-code message.
      await page.goto(verificationUri);
      await page.locator('input[name=userCode]').fill(userCode);
      await page.locator('input[name=userCode]').press('Enter');
      await page.getByRole('alert').waitFor();
      expect(await page.getByRole('alert').textContent()).toBe('This code is not valid or has expired.');
    } finally {
      client.child.kill('SIGTERM');
      await context.close();
    }
  });

  it('the person types the code and denies; the client exits non-zero with access_denied', async () => {
    const client = runDeviceClient('openid profile');
    const { context, page } = await newPage(f.browser);
    try {
      const { userCode, verificationUri } = await client.prompt;
      await page.goto(verificationUri);
      expect(await page.locator('input[name=userCode]').inputValue()).toBe('');
      // Typed in lower case without the dash, submitted with Enter.
      await page.locator('input[name=userCode]').fill(userCode.toLowerCase().replace('-', ''));
      await page.locator('input[name=userCode]').press('Enter');
      await page.waitForURL(/\/account\/login\?interaction=/);
      await submitLogin(page, 'bob');
      await page.waitForURL(/\/consent\?interaction=/);
      expect(await page.textContent('main')).toContain(CLIENT_NAME);
      await page.locator('button[name=button][value=no]').click();
      await page.getByText('The device was not given access.').waitFor();

      expect(await exitOf(client)).not.toBe(0);
      expect(client.stderr()).toContain('access_denied');
      expect(client.stdout()).not.toContain('Token response');
    } finally {
      client.child.kill('SIGTERM');
      await context.close();
    }
  });
});
