/**
 * The newcomer's path: `npm start` (examples/start-demo.mjs) prints Sigil's lines and the demo
 * application's URL and stops both on SIGTERM; the demo relying party (examples/demo-rp.mjs)
 * signs in through Sigil's pages in Chromium with the code flow and PKCE, shows the identity
 * token's claims and the userinfo response (escaped), and signs out through end session. The
 * newcomer tour walks the README's demo in Chromium: sign-in, password change, reset, console.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { connect, createServer } from 'node:net';
import { networkInterfaces } from 'node:os';
import { join, resolve } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ConfigInput } from '../../src/index.js';
import { type ServerProcess, sleep, startProcess, tempDir } from '../helpers.js';
import { launchChromium, newPage, screenshot, signInEnrollingTotp, submitLogin, VIEWPORTS } from './browser-fixture.js';
import { audit } from './accessibility.js';
import { freePort } from './ports.js';

const ROOT = resolve(import.meta.dirname, '../..');
const CLEAN_ENV = Object.fromEntries(
  Object.entries(process.env).filter(
    ([k]) =>
      !['PORT', 'HOST', 'SIGIL_CONFIG', 'SIGIL_ISSUER', 'SIGIL_STORAGE', 'SIGIL_METRICS_PORT', 'DEMO_RP_URL'].includes(
        k,
      ),
  ),
);

/** `npm start`'s script with this run's port, its store in `dir`, a free metrics port, and `more` flags. */
function startDemoArgs(port: number, dir: string, ...more: string[]): string[] {
  return [
    'examples/start-demo.mjs',
    '--port',
    String(port),
    ...more,
    '--storage',
    `sqlite:${join(dir, 'sigil.db')}`,
    '--metrics-port',
    '0',
  ];
}

/**
 * A spawned process with its output, resolving `ready` once a line matches. `detached`: in a
 * process group of its own (as a supervisor or a terminal starts `npm start`).
 */
function run(
  args: string[],
  env: Record<string, string>,
  ready: RegExp,
  detached = false,
): { child: ChildProcess; output: () => string; ready: Promise<void>; exited: Promise<number | null> } {
  const child = spawn(process.execPath, args, {
    cwd: ROOT,
    env: { ...CLEAN_ENV, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached,
  });
  let out = '';
  child.stdout?.on('data', (b: Buffer) => (out += b.toString()));
  child.stderr?.on('data', (b: Buffer) => (out += b.toString()));
  const exited = new Promise<number | null>((ok) => child.on('exit', (code) => ok(code)));
  const readyPromise = new Promise<void>((ok, fail) => {
    const timer = setTimeout(() => fail(new Error(`not ready:\n${out}`)), 20_000);
    const check = () => {
      if (ready.test(out)) {
        clearTimeout(timer);
        ok();
      }
    };
    child.stdout?.on('data', check);
    void exited.then((code) => {
      clearTimeout(timer);
      fail(new Error(`exited with ${code}:\n${out}`));
    });
  });
  return { child, output: () => out, ready: readyPromise, exited };
}

async function stop(
  p: { child: ChildProcess; exited: Promise<number | null> } | undefined,
): Promise<number | null | undefined> {
  if (!p) return undefined;
  if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGTERM');
  return p.exited;
}

/**
 * Addresses of this machine that are not 127.0.0.1: its own IPv4 addresses beyond loopback, and
 * 127.0.0.2 (the whole of 127/8 is loopback on Linux; a socket bound to 127.0.0.1 refuses it, one
 * bound to 0.0.0.0 accepts it), so that the test needs no other machine.
 */
function otherAddresses(): string[] {
  const own = Object.values(networkInterfaces())
    .flatMap((list) => list ?? [])
    .filter((a) => a.family === 'IPv4' && !a.internal)
    .map((a) => a.address);
  return [...own, '127.0.0.2'];
}

/** Whether a TCP connection to `host`:`port` is accepted (refused: false). */
function accepts(host: string, port: number): Promise<boolean> {
  return new Promise((ok) => {
    const socket = connect({ host, port });
    socket.once('connect', () => {
      socket.destroy();
      ok(true);
    });
    socket.once('error', () => ok(false));
  });
}

describe('npm start listens where it says', () => {
  it('on 127.0.0.1 alone unless --host says otherwise: no other address of the machine reaches the demo', async () => {
    const { dir, cleanup } = tempDir();
    const others = otherAddresses();
    try {
      for (const host of [undefined, '0.0.0.0']) {
        const port = await freePort();
        const p = run(
          startDemoArgs(port, dir, ...(host ? ['--host', host] : [])),
          { DEMO_RP_URL: `http://127.0.0.1:${await freePort()}` },
          /sigil demo: open/,
        );
        try {
          await p.ready;
          const line = /^sigil: listening on .*$/m.exec(p.output())?.[0];
          expect(await accepts('127.0.0.1', port)).toBe(true);
          if (host === undefined) {
            expect(line).toBe(`sigil: listening on http://127.0.0.1:${port}`);
            for (const address of others) expect(await accepts(address, port), address).toBe(false);
          } else {
            expect(line).toBe(`sigil: listening on http://127.0.0.1:${port} (every interface)`);
            for (const address of others) expect(await accepts(address, port), address).toBe(true);
          }
        } finally {
          expect(await stop(p)).toBe(0);
        }
      }
    } finally {
      cleanup();
    }
  });
});

describe('npm start (examples/start-demo.mjs)', () => {
  it("is the start script, prints Sigil's lines and the demo URL, serves both, and stops both on SIGTERM", async () => {
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
      scripts: Record<string, string>;
      bin: Record<string, string>;
    };
    expect(pkg.scripts.start).toBe('node examples/start-demo.mjs');
    expect(pkg.bin.sigil).toBe('dist/cli/main.js');

    const { dir, cleanup } = tempDir();
    const [port, rpPort] = [await freePort(), await freePort()];
    const issuer = `http://127.0.0.1:${port}`;
    const rpUrl = `http://127.0.0.1:${rpPort}`;
    const p = run(
      startDemoArgs(port, dir, '--host', '127.0.0.1', '--issuer', issuer),
      { DEMO_RP_URL: rpUrl },
      /sigil demo: open/,
    );
    try {
      await p.ready;
      const out = p.output();
      expect(out).toContain(`sigil: issuer ${issuer}`);
      expect(out).toContain(`sigil: discovery ${issuer}/.well-known/openid-configuration`);
      expect(out).toMatch(/sigil: clients .*\bdemo\b.*\bdemo-web\b/);
      expect(out).toContain('sigil: users alice, bob');
      expect(out).toContain(`sigil: account ${issuer}/account`);
      expect(out).toContain(`sigil: console ${issuer}/admin (users with the role sigil-admin, with a second factor)`);
      expect(out).toContain(
        'sigil: demo credentials: client "demo" with secret "demo-secret", user "alice" with password "alice"',
      );
      expect(out).toMatch(new RegExp(`listening on ${issuer}\\b`));
      expect(out).toContain(`sigil demo: open ${rpUrl} in a browser`);
      // Sigil's own line comes first, then the demo's.
      expect(out.indexOf('listening on')).toBeLessThan(out.indexOf('sigil demo: open'));

      expect((await fetch(`${issuer}/healthz`)).status).toBe(200);
      const home = await fetch(rpUrl);
      expect(home.status).toBe(200);
      expect(await home.text()).toContain('Sign in');
      const login = await fetch(`${rpUrl}/login`, { redirect: 'manual' });
      expect(login.status).toBe(303);
      const target = new URL(login.headers.get('location')!);
      expect(target.origin + target.pathname).toBe(`${issuer}/connect/authorize`);
      expect(target.searchParams.get('code_challenge_method')).toBe('S256');
      expect(target.searchParams.get('client_id')).toBe('demo-web');
    } finally {
      expect(await stop(p)).toBe(0);
      await expect(fetch(rpUrl)).rejects.toThrow();
      await expect(fetch(`${issuer}/healthz`)).rejects.toThrow();
      cleanup();
    }
  });

  it('--port moves the demo issuer to that port, so discovery and the demo application agree', async () => {
    const { dir, cleanup } = tempDir();
    const [port, rpPort] = [await freePort(), await freePort()];
    const rpUrl = `http://127.0.0.1:${rpPort}`;
    const p = run(startDemoArgs(port, dir, '--host', '127.0.0.1'), { DEMO_RP_URL: rpUrl }, /sigil demo: open/);
    try {
      await p.ready;
      const issuer = `http://localhost:${port}`;
      expect(p.output()).toContain(`sigil: issuer ${issuer}\n`);
      expect(p.output()).not.toContain('warning');
      const discovery = (await (await fetch(`http://127.0.0.1:${port}/.well-known/openid-configuration`)).json()) as {
        issuer: string;
        token_endpoint: string;
      };
      expect(discovery.issuer).toBe(issuer);
      expect(discovery.token_endpoint).toBe(`${issuer}/connect/token`);
      const login = await fetch(`${rpUrl}/login`, { redirect: 'manual' });
      expect(login.status).toBe(303);
      expect(login.headers.get('location')).toMatch(new RegExp(`^${issuer}/connect/authorize\\?`));
    } finally {
      expect(await stop(p)).toBe(0);
      cleanup();
    }
  });
});

/** A cookie-keeping form client of a spawned Sigil (fetch, no redirects followed). */
class FormClient {
  private readonly cookies = new Map<string, string>();
  constructor(private readonly base: string) {}

  async request(path: string, fields?: Record<string, string>): Promise<{ status: number; body: string }> {
    const res = await fetch(`${this.base}${path}`, {
      method: fields ? 'POST' : 'GET',
      redirect: 'manual',
      headers: {
        cookie: [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; '),
        ...(fields ? { 'content-type': 'application/x-www-form-urlencoded' } : {}),
      },
      ...(fields ? { body: new URLSearchParams(fields).toString() } : {}),
    });
    for (const c of res.headers.getSetCookie()) {
      const [pair = ''] = c.split(';');
      const at = pair.indexOf('=');
      this.cookies.set(pair.slice(0, at), pair.slice(at + 1));
    }
    return { status: res.status, body: await res.text() };
  }

  /** Sends the form of the page at `path` with its CSRF token and `fields`. */
  async submit(path: string, fields: Record<string, string>, action = path): Promise<{ status: number; body: string }> {
    const page = await this.request(path);
    expect(page.status, page.body).toBe(200);
    const csrf = /name="csrf_token" value="([^"]+)"/.exec(page.body)?.[1] ?? '';
    return this.request(action, { csrf_token: csrf, ...fields });
  }

  has(cookie: string): boolean {
    return this.cookies.has(cookie);
  }
}

describe('the demo shows what a stored user can do', () => {
  // Two starts of the demo, each adding or finding the stored user through the CLI, and a reset.
  it('adds the stored user carol with an email once, and "Forgot password?" works through the printed mail', async () => {
    const { dir, cleanup } = tempDir();
    const [port, rpPort] = [await freePort(), await freePort()];
    const issuer = `http://127.0.0.1:${port}`;
    const args = startDemoArgs(port, dir, '--issuer', issuer);
    let p = run(args, { DEMO_RP_URL: `http://127.0.0.1:${rpPort}` }, /sigil demo: stored user/);
    try {
      await p.ready;
      expect(p.output()).toContain(
        `sigil demo: stored user carol / paper-lantern-42 (carol@example.com) may change the password and profile at ${issuer}/account`,
      );
      const browser = new FormClient(issuer);
      const asked = await browser.submit('/account/forgot', { identifier: 'carol' });
      expect(asked.status, asked.body).toBe(200);
      // The demo's `log` transport: the message is a line of the output, with its link.
      await eventually(() => /sigil: mail to "carol@example\.com"/.test(p.output()), 'the reset mail is printed');
      const link = new URL(/sigil: mail to "carol@example\.com", "[^"]*": (\S+)/.exec(p.output())?.[1] ?? '');
      expect(link.origin + link.pathname).toBe(`${issuer}/account/reset`);
      const token = link.searchParams.get('token') ?? '';
      const reset = await browser.submit(
        `/account/reset?token=${token}`,
        { token, password: 'copper-kettle-77', confirm_password: 'copper-kettle-77' },
        '/account/reset',
      );
      expect(reset.status, reset.body).toBe(200);
      const signedIn = await browser.submit('/account/login', {
        username: 'carol',
        password: 'copper-kettle-77',
        button: 'login',
      });
      expect(signedIn.status, signedIn.body).toBe(200);
      expect(signedIn.body).toContain('You are signed in as carol.');
      expect(browser.has('sigil.session')).toBe(true);
    } finally {
      expect(await stop(p)).toBe(0);
    }
    // A second start finds carol in the store and leaves her (and her new password) alone.
    p = run(args, { DEMO_RP_URL: `http://127.0.0.1:${rpPort}` }, /sigil demo: stored user/);
    try {
      await p.ready;
      expect(p.output()).not.toContain('was not added');
      const again = await new FormClient(issuer).submit('/account/login', {
        username: 'carol',
        password: 'copper-kettle-77',
        button: 'login',
      });
      expect(again.body).toContain('You are signed in as carol.');
    } finally {
      expect(await stop(p)).toBe(0);
      cleanup();
    }
  }, 90_000);
});

describe('sigil start without a config', () => {
  it('says it serves the demo config and its published secrets, and refuses under NODE_ENV=production unless --demo', async () => {
    const { dir, cleanup } = tempDir();
    const port = await freePort();
    const storage = `sqlite:${join(dir, 'sigil.db')}`;
    const common = ['dist/cli/main.js', 'start', '--port', String(port), '--storage', storage, '--metrics-port', '0'];
    try {
      const refused = run(common, { NODE_ENV: 'production' }, /listening on/);
      await expect(refused.ready).rejects.toThrow(/exited with 2/);
      expect(refused.output().trim()).toBe(
        'sigil: no config given (--config FILE or SIGIL_CONFIG) and NODE_ENV is production: refusing to serve the demo config, whose secrets are published (pass --demo to run the demo anyway)',
      );
      const told = run([...common, '--demo'], { NODE_ENV: 'production' }, /listening on/);
      try {
        await told.ready;
        expect(told.output()).toMatch(
          /^sigil: no config given: serving the demo config \S+examples\/sigil\.json, whose secrets are published/m,
        );
      } finally {
        expect(await stop(told)).toBe(0);
      }
    } finally {
      cleanup();
    }
  });
});

/** Live processes (zombies have no command line) whose command line contains `marker`. */
function processesWith(marker: string): number[] {
  return readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .filter((pid) => {
      try {
        return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(marker);
      } catch {
        return false; // exited meanwhile
      }
    })
    .map(Number);
}

/** Whether nothing listens on `port` at 127.0.0.1 (binding it succeeds). */
function portIsFree(port: number): Promise<boolean> {
  return new Promise((ok) => {
    const server = createServer();
    server.once('error', () => ok(false));
    server.listen(port, '127.0.0.1', () => server.close(() => ok(true)));
  });
}

/** Polls `check` until it holds; fails with `what` after 15 s. */
async function eventually(check: () => boolean | Promise<boolean>, what: string): Promise<void> {
  for (const started = Date.now(); !(await check()); await sleep(100))
    if (Date.now() - started > 15_000) throw new Error(`still not true: ${what}`);
}

describe('npm start in a process group of its own', () => {
  /** Starts start-demo.mjs as a group leader with a temp data dir and free ports. */
  async function startGroup() {
    const { dir, cleanup } = tempDir();
    const [port, rpPort] = [await freePort(), await freePort()];
    const p = run(
      startDemoArgs(port, dir, '--host', '127.0.0.1'),
      { DEMO_RP_URL: `http://127.0.0.1:${rpPort}` },
      // Ready once the stored user is added too: the CLI that adds it is then gone.
      /sigil demo: stored user/,
      true,
    );
    await p.ready;
    return { p, dir, port, cleanup };
  }

  it('SIGKILL to the group leaves no Sigil process and frees the port', async () => {
    const { p, dir, port, cleanup } = await startGroup();
    try {
      // Sigil itself (its command line carries this run's storage path) runs beside the wrapper.
      expect(processesWith(dir).filter((pid) => pid !== p.child.pid)).toHaveLength(1);
      process.kill(-p.child.pid!, 'SIGKILL');
      await p.exited;
      await eventually(() => processesWith(dir).length === 0, `no process of ${dir} remains`);
      await eventually(() => portIsFree(port), `port ${port} is free`);
    } finally {
      for (const pid of processesWith(dir)) process.kill(pid, 'SIGKILL');
      cleanup();
    }
  });

  it('Ctrl-C (SIGINT to the group) stops Sigil once, cleanly: exit code 0, port free', async () => {
    const { p, dir, port, cleanup } = await startGroup();
    try {
      process.kill(-p.child.pid!, 'SIGINT');
      expect(await p.exited).toBe(0);
      expect(p.output()).not.toMatch(/error|unhandled/i);
      await eventually(() => processesWith(dir).length === 0, `no process of ${dir} remains`);
      expect(await portIsFree(port)).toBe(true);
    } finally {
      for (const pid of processesWith(dir)) process.kill(pid, 'SIGKILL');
      cleanup();
    }
  });
});

describe('the demo relying party in Chromium', () => {
  let browser: Browser;
  let sigil: ServerProcess;
  let rp: ReturnType<typeof run>;
  let rpUrl: string;

  beforeAll(async () => {
    const rpPort = await freePort();
    rpUrl = `http://127.0.0.1:${rpPort}`;
    // examples/sigil.json as shipped, with the demo client pointed at this run's port.
    const config = JSON.parse(readFileSync(join(ROOT, 'examples/sigil.json'), 'utf8')) as ConfigInput & {
      clients: Record<string, unknown>[];
      users: Record<string, unknown>[];
    };
    const client = config.clients.find((c) => c.clientId === 'demo-web');
    expect(client).toBeDefined();
    client!.redirectUris = [`${rpUrl}/callback`];
    client!.postLogoutRedirectUris = [`${rpUrl}/`];
    config.users.push({
      subjectId: '666',
      username: 'mallory',
      password: 'mallory',
      claims: {
        name: `<img src=x onerror="alert('xss-name')">`,
        family_name: `"><script>alert('xss-family')</script>`,
        email: 'm@example.com',
      },
    });
    [browser, sigil] = await Promise.all([
      launchChromium(),
      freePort().then((port) =>
        startProcess({ ...config, logLevel: 'silent', metrics: { host: '127.0.0.1', port: 0 } }, port),
      ),
    ]);
    rp = run(['examples/demo-rp.mjs'], { SIGIL_ISSUER: sigil.url, DEMO_RP_URL: rpUrl }, /relying party at/);
    await rp.ready;
  });
  afterAll(async () => {
    await Promise.allSettled([browser?.close(), sigil?.stop(), stop(rp)]);
  });

  it('signs in with the code flow, shows the ID token claims and userinfo, signs out at Sigil', async () => {
    for (const [device, options] of Object.entries(VIEWPORTS)) {
      const { context, page, dialogs } = await newPage(browser, options);
      await page.goto(rpUrl);
      if (device === 'desktop') await screenshot(page, 'demo-home-desktop');
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.waitForURL(/\/account\/login\?interaction=/);
      expect(await page.textContent('main')).toContain('Sigil demo application');
      await submitLogin(page, 'alice');
      await page.waitForURL(/\/consent\?interaction=/);
      await page.locator('button[name=button][value=yes]').click();
      await page.waitForURL(`${rpUrl}/`);
      await page.getByRole('heading', { name: 'Hello, Alice Smith' }).waitFor();
      await screenshot(page, `demo-signed-in-${device}`);

      const claims = JSON.parse((await page.textContent('#id-token-claims'))!) as Record<string, unknown>;
      expect(claims).toMatchObject({ iss: sigil.url, sub: '1', aud: 'demo-web' });
      expect(typeof claims.nonce).toBe('string');
      expect(typeof claims.auth_time).toBe('number');
      const userinfo = JSON.parse((await page.textContent('#userinfo'))!) as Record<string, unknown>;
      expect(userinfo).toMatchObject({
        sub: '1',
        name: 'Alice Smith',
        email: 'alice@example.com',
        email_verified: true,
      });
      expect(await page.textContent('main')).toContain('received (offline_access)');

      await page.getByRole('button', { name: 'Sign out' }).click();
      await page.waitForURL((u) => u.href.startsWith(`${rpUrl}/?state=`));
      await page.getByRole('status').waitFor();
      expect(await page.getByRole('status').textContent()).toContain('signed out');
      // Sigil's session ended too: signing in again asks for the password.
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.waitForURL(/\/account\/login\?interaction=/);
      expect(dialogs).toEqual([]);
      await context.close();
    }
  });

  it('shows claims with markup as text', async () => {
    const { context, page, dialogs } = await newPage(browser);
    await page.goto(`${rpUrl}/login`);
    await page.waitForURL(/\/account\/login\?interaction=/);
    await submitLogin(page, 'mallory');
    await page.waitForURL(/\/consent\?interaction=/);
    await page.locator('button[name=button][value=yes]').click();
    await page.waitForURL(`${rpUrl}/`);
    expect(await page.textContent('h1')).toBe(`Hello, <img src=x onerror="alert('xss-name')">`);
    expect(await page.textContent('#userinfo')).toContain(`<script>alert('xss-family')</script>`);
    expect(await page.evaluate(() => document.querySelectorAll('img, script').length)).toBe(0);
    expect(dialogs).toEqual([]);
    await context.close();
  });

  it('a callback without a pending sign-in, or with an error, is explained, not trusted', async () => {
    const { context, page } = await newPage(browser);
    await page.goto(`${rpUrl}/callback?code=forged&state=x`);
    expect(await page.textContent('h1')).toBe('Something went wrong');
    await page.goto(`${rpUrl}/login`);
    await page.waitForURL(/\/account\/login\?interaction=/);
    await page.locator('button[name=button][value=cancel]').click();
    await page.waitForURL((u) => u.href.startsWith(`${rpUrl}/callback`));
    expect(await page.textContent('main')).toContain('access_denied');
    await context.close();
  });
});

/** Where `TOUR_SCREENSHOTS=docs` writes the tour's pictures for the documentation. */
const DOCS_IMAGES = resolve(ROOT, 'docs/images');
const PHONE = { width: 390, height: 844 };
const DESKTOP = { width: 1280, height: 800 };

/**
 * Checks the page the tour is on: axe-clean, and nothing scrolls sideways at 390 px. With
 * `TOUR_SCREENSHOTS=docs` it is pictured at 1280 and 390 px, light and dark, into docs/images
 * (`<name>-1280-light.png`, ...; the console's two of them); otherwise once into test-results, so an ordinary run leaves the
 * work tree as it was.
 */
type Variant = readonly [{ width: number; height: number }, 'light' | 'dark'];
const ALL_VARIANTS: readonly Variant[] = [
  [DESKTOP, 'light'],
  [DESKTOP, 'dark'],
  [PHONE, 'light'],
  [PHONE, 'dark'],
];
/** The console's pictures in docs/managing.md: two of the four. */
const CONSOLE_VARIANTS: readonly Variant[] = [
  [DESKTOP, 'dark'],
  [PHONE, 'light'],
];

async function tourStop(page: Page, name: string, variants = ALL_VARIANTS): Promise<void> {
  await page.locator('h1').first().waitFor();
  expect(await audit(page), name).toEqual([]);
  await page.setViewportSize(PHONE);
  const sideways = await page.evaluate(
    () => document.documentElement.scrollWidth - document.documentElement.clientWidth,
  );
  expect(sideways, `${name} scrolls sideways at 390 px`).toBeLessThanOrEqual(0);
  if (process.env.TOUR_SCREENSHOTS === 'docs') {
    for (const [size, colorScheme] of variants) {
      await page.setViewportSize(size);
      await page.emulateMedia({ colorScheme });
      await page.screenshot({ path: join(DOCS_IMAGES, `${name}-${size.width}-${colorScheme}.png`), fullPage: true });
    }
    await page.emulateMedia({ colorScheme: 'light' });
  } else await screenshot(page, `tour-${name}`);
  await page.setViewportSize(DESKTOP);
}

describe('the newcomer tour in Chromium', () => {
  // What the README's tour promises, after `npm install` and `npm start` and nothing else: the demo
  // application's sign-in as the stored user, a password change at /account, a reset through the
  // printed mail leading back to the application, and the console.
  it('npm start, then sign-in, password change, a reset through the printed link and the console, with no other step', async () => {
    const { dir, cleanup } = tempDir();
    const port = await freePort();
    const issuer = `http://127.0.0.1:${port}`;
    // The demo application keeps its default address: the demo config's redirect URI names it.
    const p = run(startDemoArgs(port, dir, '--issuer', issuer), {}, /sigil demo: stored user/);
    const browser = await launchChromium();
    try {
      await p.ready;
      const rpUrl = /sigil demo: open (\S+) in a browser/.exec(p.output())?.[1] ?? '';
      expect(rpUrl, p.output()).toBe('http://localhost:5001');

      // Sign-in at the demo application as the stored user, with consent.
      const first = await newPage(browser, { viewport: DESKTOP });
      let page = first.page;
      await page.goto(rpUrl);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.waitForURL(/\/account\/login\?interaction=/);
      await tourStop(page, 'sign-in');
      await submitLogin(page, 'carol', 'paper-lantern-42');
      await page.waitForURL(/\/consent\?interaction=/);
      await tourStop(page, 'consent');
      await page.locator('button[name=button][value=yes]').click();
      await page.waitForURL(`${rpUrl}/`);
      await page.getByRole('heading', { name: 'Hello, Carol Diaz' }).waitFor();

      // The account: her address, and a password change.
      await page.goto(`${issuer}/account`);
      expect(await page.textContent('main')).toContain('carol@example.com');
      await tourStop(page, 'account');
      await page.goto(`${issuer}/account/password`);
      await page.locator('#current_password').fill('paper-lantern-42');
      await page.locator('#new_password').fill('copper-kettle-77');
      await page.locator('#confirm_password').fill('copper-kettle-77');
      await page.locator('button[name=button][value=change]').click();
      await page.getByText('Your password has been changed').waitFor();
      expect(first.dialogs).toEqual([]);
      await first.context.close();

      // Another browser: "Forgot password?" from the application's sign-in, the printed link, and back.
      const second = await newPage(browser, { viewport: DESKTOP });
      page = second.page;
      await page.goto(rpUrl);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.waitForURL(/\/account\/login\?interaction=/);
      await page.getByRole('link', { name: 'Forgot password?' }).click();
      await page.locator('input[name=identifier]').fill('carol');
      await page.locator('button[type=submit]').click();
      await eventually(() => /sigil: mail to "carol@example\.com"/.test(p.output()), 'the reset mail is printed');
      const link = /sigil: mail to "carol@example\.com", "[^"]*": (\S+)/.exec(p.output())?.[1] ?? '';
      expect(link.startsWith(`${issuer}/account/reset?`), p.output()).toBe(true);
      await page.goto(link);
      await tourStop(page, 'reset');
      await page.locator('input[name=password]').fill('tidal-ember-58');
      await page.locator('input[name=confirm_password]').fill('tidal-ember-58');
      await page.locator('button[type=submit]').click();
      await page.getByRole('heading', { name: 'Password changed' }).waitFor();
      await page.getByRole('link', { name: 'Sign in and go back to the application' }).click();
      await submitLogin(page, 'carol', 'tidal-ember-58');
      // The first browser's consent was not remembered: this one is asked again.
      await page.waitForURL(/\/consent\?interaction=/);
      await page.locator('button[name=button][value=yes]').click();
      await page.waitForURL((u) => u.href.startsWith(`${rpUrl}/`));
      await page.getByRole('heading', { name: 'Hello, Carol Diaz' }).waitFor();
      expect(second.dialogs).toEqual([]);
      await second.context.close();

      // The console, as the demo's admin alice: an authenticator app enrolled on the way.
      const third = await newPage(browser, { viewport: DESKTOP });
      page = third.page;
      await page.goto(`${issuer}/admin`);
      await signInEnrollingTotp(page, 'alice', 'alice');
      await page.waitForURL(`${issuer}/admin/users`);
      await tourStop(page, 'console-tour-users', CONSOLE_VARIANTS);
      await page.getByRole('link', { name: 'carol' }).first().click();
      await page.waitForURL(/\/admin\/users\/[^/]+$/);
      expect(await page.locator('h1').textContent()).toContain('carol');
      // Her session from the second browser, with the application holding its tokens.
      expect(await page.locator('ul.factors li').first().innerText()).toMatch(/Applications: demo-web\n/);
      await tourStop(page, 'console-tour-user', CONSOLE_VARIANTS);
      await page.goto(`${issuer}/admin/clients`);
      expect(await page.textContent('main')).toContain('demo-web');
      await tourStop(page, 'console-tour-clients', CONSOLE_VARIANTS);
      expect(third.dialogs).toEqual([]);
      await third.context.close();
    } finally {
      await browser.close();
      expect(await stop(p)).toBe(0);
      cleanup();
    }
  }, 180_000);
});
