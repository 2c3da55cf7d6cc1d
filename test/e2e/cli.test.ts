/**
 * The `sigil start` command as a process: what it prints, /healthz over the socket,
 * config errors with field paths and exit code 2, YAML configs, environment variables, SIGTERM.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { stringify as toYaml } from 'yaml';
import { afterEach, describe, expect, it } from 'vitest';
import { startProcess, tempDir, testConfig } from '../helpers.js';
import { freePort } from './ports.js';

const CLI = resolve(import.meta.dirname, '../../dist/cli/main.js');

interface Run {
  child: ChildProcess;
  output: () => string;
  exited: Promise<number | null>;
}

/** Spawns `node dist/cli/main.js ...args` with a clean environment plus `env`. */
function run(args: string[], env: Record<string, string> = {}, cwd?: string): Run {
  const base = Object.fromEntries(
    Object.entries(process.env).filter(([k]) => !['PORT', 'SIGIL_CONFIG', 'SIGIL_ISSUER', 'SIGIL_STORAGE'].includes(k)),
  );
  const child = spawn(process.execPath, [CLI, ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...base, ...env },
    cwd,
  });
  let out = '';
  child.stdout?.on('data', (b: Buffer) => (out += b.toString()));
  child.stderr?.on('data', (b: Buffer) => (out += b.toString()));
  const exited = new Promise<number | null>((ok) => child.on('exit', (code) => ok(code)));
  return { child, output: () => out, exited };
}

/** Resolves with the URL once the process prints `listening on <url>`; rejects if it exits first. */
function listening(r: Run): Promise<string> {
  return new Promise((ok, fail) => {
    const timer = setTimeout(() => fail(new Error(`no "listening on" line:\n${r.output()}`)), 20_000);
    const check = () => {
      const m = /listening on (http\S+)/.exec(r.output());
      if (m) {
        clearTimeout(timer);
        ok(m[1]!);
      }
    };
    r.child.stdout?.on('data', check);
    void r.exited.then((code) => {
      clearTimeout(timer);
      fail(new Error(`exited with ${code}:\n${r.output()}`));
    });
  });
}

const running: Run[] = [];
const cleanups: (() => void)[] = [];
afterEach(async () => {
  for (const r of running.splice(0)) {
    if (r.child.exitCode === null && r.child.signalCode === null) {
      r.child.kill('SIGTERM');
      await r.exited;
    }
  }
  for (const c of cleanups.splice(0)) c();
});

function workDir(): string {
  const { dir, cleanup } = tempDir();
  cleanups.push(cleanup);
  return dir;
}

/** The fixture config without the fields the tests set through flags or the environment. */
function baseConfig(): Record<string, unknown> {
  const { issuer: _issuer, ...rest } = testConfig();
  return rest;
}

describe('sigil start', () => {
  it('prints issuer, discovery URL, clients, users and "listening on", answers /healthz, exits 0 on SIGTERM', async () => {
    const port = await freePort();
    const server = await startProcess(testConfig(), port);
    try {
      const out = server.output();
      expect(out).toContain(`issuer ${server.url}`);
      expect(out).toContain(`${server.url}/.well-known/openid-configuration`);
      for (const c of ['m2m', 'm2m-ref', 'ropc', 'spa', 'c:1', 'other']) expect(out).toContain(c);
      for (const u of ['alice', 'bob', 'carol', 'dave']) expect(out).toContain(u);
      expect(out).toMatch(new RegExp(`listening on http://127\\.0\\.0\\.1:${port}\\b`));
      expect(out).not.toMatch(/password/i);

      const health = await fetch(`${server.url}/healthz`);
      expect(health.status).toBe(200);
      expect(await health.json()).toEqual({ status: 'ok' });
      const discovery = await fetch(`${server.url}/.well-known/openid-configuration`);
      expect(discovery.status).toBe(200);
      expect((await discovery.json()).issuer).toBe(server.url);
    } finally {
      await server.stop();
    }
    expect(server.child.exitCode).toBe(0);
    expect(server.child.signalCode).toBeNull();
  });

  it('serves /metrics on the management listener it prints, not on the public listener', async () => {
    const server = await startProcess(testConfig(), await freePort());
    try {
      const metricsUrl = /sigil: metrics (http:\/\/127\.0\.0\.1:\d+\/metrics)\n/.exec(server.output())?.[1];
      expect(metricsUrl, server.output()).toBeDefined();
      expect(server.output().indexOf('sigil: metrics')).toBeLessThan(server.output().indexOf('listening on'));
      const metrics = await fetch(metricsUrl!);
      expect(metrics.status).toBe(200);
      expect(await metrics.text()).toContain('sigil_http_request_duration_seconds');
      expect((await fetch(`${server.url}/metrics`)).status).toBe(404);
      expect((await fetch(`${server.url}/readyz`)).status).toBe(200);
    } finally {
      await server.stop();
    }
  });

  it('writes buffered audit lines to stdout within a few seconds when idle, and every one still buffered when stopped (SIGTERM)', async () => {
    const dir = workDir();
    const file = join(dir, 'sigil.json');
    writeFileSync(file, JSON.stringify({ ...baseConfig(), storage: 'memory', logLevel: 'info' }));
    const r = run(['start', '--config', file, '--port', String(await freePort()), '--host', '127.0.0.1']);
    running.push(r);
    const url = await listening(r);
    const issue = async (n: number) => {
      for (let i = 0; i < n; i++) {
        const res = await fetch(`${url}/connect/token`, {
          method: 'POST',
          headers: {
            'content-type': 'application/x-www-form-urlencoded',
            authorization: `Basic ${Buffer.from('m2m:m2m-secret').toString('base64')}`,
          },
          body: 'grant_type=client_credentials&scope=api1',
        });
        expect(res.status).toBe(200);
      }
    };
    const issued = () =>
      r
        .output()
        .split('\n')
        .filter((line) => line.includes('"name":"token_issued"')).length;

    // Three lines are far below the 4 KB buffer: only the periodic flush (every second) writes them.
    await issue(3);
    const deadline = Date.now() + 5_000;
    while (issued() < 3 && Date.now() < deadline) await new Promise((ok) => setTimeout(ok, 100));
    expect(issued(), r.output()).toBe(3);

    // Two more, then stop at once: they are written before the process exits.
    await issue(2);
    r.child.kill('SIGTERM');
    expect(await r.exited).toBe(0);
    expect(issued(), r.output()).toBe(5);
    for (const line of r
      .output()
      .split('\n')
      .filter((l) => l.includes('"name":"token_issued"')))
      expect(JSON.parse(line)).toMatchObject({
        level: 30,
        msg: 'token_issued',
        event: { clientId: 'm2m', grantType: 'client_credentials', scopes: ['api1'] },
      });
    // The audit line says who asked, and which request it was.
    const events = r
      .output()
      .split('\n')
      .filter((l) => l.includes('"name":"token_issued"'))
      .map((l) => JSON.parse(l).event as Record<string, string>);
    for (const e of events)
      expect(e).toMatchObject({ remoteAddress: '127.0.0.1', userAgent: 'node', requestId: expect.any(String) });
    expect(new Set(events.map((e) => e.requestId)).size).toBe(5);
  });

  it("warns when the issuer's port is not the listening port and no proxy is configured, and says when it stops", async () => {
    const dir = workDir();
    const port = await freePort();
    const file = join(dir, 'sigil.json');
    writeFileSync(file, JSON.stringify({ ...baseConfig(), issuer: 'http://localhost:5999', storage: 'memory' }));
    const r = run(['start', '--config', file, '--port', String(port), '--host', '127.0.0.1']);
    running.push(r);
    await listening(r);
    expect(r.output()).toContain(
      `sigil: warning: the issuer http://localhost:5999 names port 5999, but Sigil listens on port ${port}`,
    );
    r.child.kill('SIGTERM');
    expect(await r.exited).toBe(0);
    expect(r.output()).toMatch(/sigil: stopping \(SIGTERM\)\n[\s\S]*sigil: stopped\n$/);

    // Behind a proxy (trustProxy set), or when the ports agree, there is nothing to warn about.
    const proxied = join(dir, 'proxied.json');
    writeFileSync(
      proxied,
      JSON.stringify({ ...baseConfig(), issuer: 'https://id.example', trustProxy: 1, storage: 'memory' }),
    );
    const behind = run(['start', '--config', proxied, '--port', String(port), '--host', '127.0.0.1']);
    running.push(behind);
    await listening(behind);
    const same = run([
      'start',
      '--config',
      file,
      '--port',
      String(await freePort()),
      '--host',
      '127.0.0.1',
      '--issuer',
      'http://127.0.0.1:1',
    ]);
    running.push(same);
    await listening(same);
    expect(behind.output()).not.toContain('warning');
    expect(same.output()).toContain('warning');
  });

  describe('sigil config', () => {
    it('config schema prints the JSON Schema the package ships in dist/sigil.schema.json', async () => {
      const r = run(['config', 'schema']);
      running.push(r);
      expect(await r.exited).toBe(0);
      const printed = JSON.parse(r.output()) as { properties: Record<string, unknown> };
      expect(printed).toEqual(
        JSON.parse(readFileSync(resolve(import.meta.dirname, '../../dist/sigil.schema.json'), 'utf8')),
      );
      expect(Object.keys(printed.properties)).toEqual(expect.arrayContaining(['$schema', 'issuer', 'clients']));
    });

    it('config check FILE reports every problem at once with its field path (exit code 2), or that the file is valid', async () => {
      const dir = workDir();
      const bad = join(dir, 'bad.json');
      writeFileSync(
        bad,
        JSON.stringify({
          port: 'eighty',
          colour: 'blue',
          clients: [{ clientId: 'c', clientSecrets: ['s'], allowedGrantTypes: ['client_credential'] }],
        }),
      );
      const r = run(['config', 'check', bad]);
      running.push(r);
      expect(await r.exited).toBe(2);
      for (const problem of [
        'clients[0].allowedGrantTypes[0]: unknown grant type "client_credential"; did you mean "client_credentials"?',
        'port: ',
        'colour: unknown field',
      ])
        expect(r.output()).toContain(problem);
      const good = join(dir, 'good.json');
      writeFileSync(good, JSON.stringify({ $schema: './node_modules/sigil/dist/sigil.schema.json', ...baseConfig() }));
      const ok = run(['config', 'check', good]);
      running.push(ok);
      expect(await ok.exited).toBe(0);
      expect(ok.output()).toBe(`${good}: valid\n`);
    });
  });

  describe('answers as a command line should', () => {
    it('--version prints the package version', async () => {
      const { version } = JSON.parse(readFileSync(resolve(import.meta.dirname, '../../package.json'), 'utf8')) as {
        version: string;
      };
      for (const args of [['--version'], ['-v']]) {
        const r = run(args);
        running.push(r);
        expect(await r.exited).toBe(0);
        expect(r.output()).toBe(`${version}\n`);
      }
    });

    // One CLI process after another: each start takes seconds on a loaded machine (90 s).
    it("<command> --help prints that command's usage only", async () => {
      for (const command of ['start', 'migrate', 'keys', 'users', 'clients', 'config']) {
        const r = run([command, '--help']);
        running.push(r);
        expect(await r.exited).toBe(0);
        expect(r.output(), command).toMatch(new RegExp(`^usage: sigil ${command} `));
        for (const other of ['start', 'migrate', 'keys', 'users', 'clients', 'config'].filter((c) => c !== command))
          expect(r.output(), `${command} --help`).not.toMatch(new RegExp(`sigil ${other} `));
      }
      const all = run(['--help']);
      running.push(all);
      expect(await all.exited).toBe(0);
      for (const command of ['start', 'migrate', 'keys', 'users', 'clients', 'config'])
        expect(all.output()).toContain(`sigil ${command} `);
    }, 90_000);

    it('an unknown command or option names itself and suggests the closest one, exit code 2', async () => {
      const cases: [string[], RegExp][] = [
        [['strat'], /sigil: unknown command "strat"; did you mean "start"\?/],
        [['bogus'], /sigil: unknown command "bogus"\n/],
        [['start', '--prot', '6000'], /sigil: unknown option "--prot"; did you mean "--port"\?/],
        [['users', 'list', '--tennant', 'x'], /sigil: unknown option "--tennant"; did you mean "--tenant"\?/],
      ];
      for (const [args, message] of cases) {
        const r = run(args);
        running.push(r);
        expect(await r.exited, args.join(' ')).toBe(2);
        expect(r.output(), args.join(' ')).toMatch(message);
        expect(r.output()).toContain('usage: sigil');
      }
    });
  });

  it('SIGINT also shuts down cleanly', async () => {
    const dir = workDir();
    const file = join(dir, 'sigil.json');
    writeFileSync(file, JSON.stringify({ ...baseConfig(), storage: 'memory' }));
    const r = run(['start', '--config', file, '--port', String(await freePort()), '--host', '127.0.0.1']);
    running.push(r);
    await listening(r);
    r.child.kill('SIGINT');
    expect(await r.exited).toBe(0);
  });

  describe('an invalid config stops the start with exit code 2 and the field path', () => {
    const cases: [string, Record<string, unknown>, RegExp][] = [
      [
        'a client with an unknown scope',
        {
          clients: [
            { clientId: 'x', clientSecrets: ['s'], allowedGrantTypes: ['client_credentials'], allowedScopes: ['nope'] },
          ],
        },
        /clients\[0\]\.allowedScopes\[0\]: unknown scope "nope"/,
      ],
      ['an unknown top-level field', { colour: 'blue' }, /colour: unknown field/],
      [
        'a client with a javascript: redirect URI, however it is spelt',
        {
          clients: [
            {
              clientId: 'x',
              requireClientSecret: false,
              allowedGrantTypes: ['authorization_code'],
              redirectUris: ['https://rp.example/cb', ' JavaScript:alert(1)', 'JAVASCRIPT:alert(1)'],
            },
          ],
        },
        /clients\[0\]\.redirectUris\[1\]: must not contain white space[^\n]*\n\s*clients\[0\]\.redirectUris\[2\]: the scheme javascript: is not allowed/,
      ],
      [
        'a client with a wildcard post-logout redirect URI',
        {
          clients: [
            {
              clientId: 'x',
              requireClientSecret: false,
              allowedGrantTypes: ['authorization_code'],
              redirectUris: ['https://rp.example/cb'],
              postLogoutRedirectUris: ['https://evil.example/*'],
            },
          ],
        },
        /clients\[0\]\.postLogoutRedirectUris\[0\]: must not contain wildcards/,
      ],
      [
        'a client with an http redirect URI off the loopback host, not marked for development',
        {
          clients: [
            {
              clientId: 'x',
              requireClientSecret: false,
              allowedGrantTypes: ['authorization_code'],
              redirectUris: ['http://localhost.evil.example/cb'],
            },
          ],
        },
        /clients\[0\]\.redirectUris\[0\]: http is allowed only on a loopback host/,
      ],
      [
        'an unknown field inside a client',
        { clients: [{ clientId: 'x', clientSecrets: ['s'], allowedGrantTypes: ['client_credentials'], secret: 's' }] },
        /clients\[0\]\.secret: unknown field/,
      ],
      ['a wrong type', { apiScopes: [{ name: 'a', userClaims: 'email' }] }, /apiScopes\[0\]\.userClaims:/],
      [
        'a malformed sha256: secret',
        { clients: [{ clientId: 'x', clientSecrets: ['sha256:abc'], allowedGrantTypes: ['client_credentials'] }] },
        /clients\[0\]\.clientSecrets\[0\]: .*sha256/,
      ],
      [
        'a public client with reusable refresh tokens',
        {
          clients: [
            {
              clientId: 'p',
              requireClientSecret: false,
              allowedGrantTypes: ['password'],
              allowOfflineAccess: true,
              refreshTokenUsage: 'reuse',
            },
          ],
        },
        /clients\[0\]\.refreshTokenUsage:/,
      ],
    ];
    for (const [name, config, message] of cases) {
      it(name, async () => {
        const dir = workDir();
        const file = join(dir, 'bad.json');
        writeFileSync(file, JSON.stringify({ storage: 'memory', logLevel: 'silent', ...config }));
        const r = run(['start', '--config', file, '--port', '0']);
        running.push(r);
        expect(await r.exited).toBe(2);
        expect(r.output()).toMatch(message);
        expect(r.output()).not.toContain('listening on');
        expect(r.output()).not.toMatch(/\n\s+at /);
      });
    }

    it('unparseable JSON, a missing file and a bad port', async () => {
      const dir = workDir();
      const file = join(dir, 'broken.json');
      writeFileSync(file, '{ "storage": ');
      const broken = run(['start', '--config', file]);
      const missing = run(['start', '--config', join(dir, 'absent.json')]);
      const badPort = run(['start', '--config', file, '--port', 'eighty']);
      running.push(broken, missing, badPort);
      expect(await broken.exited).toBe(2);
      expect(broken.output()).toContain('cannot parse');
      expect(await missing.exited).toBe(2);
      expect(missing.output()).toContain('cannot read config file');
      expect(await badPort.exited).toBe(2);
      expect(badPort.output()).toContain('--port');
    });

    it('an unknown command or flag is a usage error', async () => {
      const cmd = run(['frobnicate']);
      const flag = run(['start', '--colour', 'blue']);
      running.push(cmd, flag);
      expect(await cmd.exited).toBe(2);
      expect(cmd.output()).toContain('usage: sigil');
      expect(await flag.exited).toBe(2);
      expect(flag.output()).toContain('usage: sigil');
    });
  });

  it('takes secrets from $env and $file, and a missing one stops the start naming the field', async () => {
    const dir = workDir();
    writeFileSync(join(dir, 'm2m-secret'), 'secret-from-a-file\n');
    const config = {
      ...baseConfig(),
      storage: { $env: 'SIGIL_TEST_STORAGE' },
      clients: [
        {
          clientId: 'm2m',
          clientSecrets: [{ $file: join(dir, 'm2m-secret') }],
          allowedGrantTypes: ['client_credentials'],
          allowedScopes: ['api1'],
        },
      ],
    };
    const file = join(dir, 'sigil.json');
    writeFileSync(file, JSON.stringify(config));
    const port = await freePort();
    const r = run(
      [
        'start',
        '--config',
        file,
        '--port',
        String(port),
        '--host',
        '127.0.0.1',
        '--issuer',
        `http://127.0.0.1:${port}`,
      ],
      { SIGIL_TEST_STORAGE: 'memory' },
    );
    running.push(r);
    const url = await listening(r);
    const res = await fetch(`${url}/connect/token`, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        authorization: `Basic ${Buffer.from('m2m:secret-from-a-file').toString('base64')}`,
      },
      body: 'grant_type=client_credentials&scope=api1',
    });
    expect(res.status).toBe(200);

    const missing = run(['start', '--config', file, '--port', '0']);
    running.push(missing);
    expect(await missing.exited).toBe(2);
    expect(missing.output()).toContain('storage: environment variable SIGIL_TEST_STORAGE is not set');
    expect(missing.output()).not.toContain('listening on');
  });

  it('reads a YAML config file', async () => {
    const dir = workDir();
    const port = await freePort();
    const file = join(dir, 'sigil.yaml');
    writeFileSync(
      file,
      toYaml({ ...baseConfig(), issuer: `http://127.0.0.1:${port}`, storage: `sqlite:${join(dir, 'y.db')}` }),
    );
    const r = run(['start', '--config', file, '--port', String(port), '--host', '127.0.0.1']);
    running.push(r);
    const url = await listening(r);
    expect(url).toBe(`http://127.0.0.1:${port}`);
    const doc = await (await fetch(`${url}/.well-known/openid-configuration`)).json();
    expect(doc.issuer).toBe(`http://127.0.0.1:${port}`);
    const token = await fetch(`${url}/connect/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'client_credentials', client_id: 'm2m', client_secret: 'm2m-secret' }),
    });
    expect(token.status).toBe(200);
    expect(existsSync(join(dir, 'y.db'))).toBe(true);
  });

  it('honours SIGIL_CONFIG, PORT, SIGIL_ISSUER and SIGIL_STORAGE', async () => {
    const dir = workDir();
    const port = await freePort();
    const file = join(dir, 'env.json');
    // The file says otherwise on every point the environment overrides.
    writeFileSync(
      file,
      JSON.stringify({
        ...baseConfig(),
        issuer: 'http://file.example',
        storage: `sqlite:${join(dir, 'file.db')}`,
        port: 1,
      }),
    );
    const issuer = `http://localhost:${port}`;
    const r = run(['start'], {
      SIGIL_CONFIG: file,
      PORT: String(port),
      SIGIL_ISSUER: issuer,
      SIGIL_STORAGE: `sqlite:${join(dir, 'env.db')}`,
    });
    running.push(r);
    const url = await listening(r);
    expect(new URL(url).port).toBe(String(port));
    expect(r.output()).toContain(`issuer ${issuer}`);
    const health = await fetch(`http://127.0.0.1:${port}/healthz`);
    expect(health.status).toBe(200);
    const doc = await (await fetch(`http://127.0.0.1:${port}/.well-known/openid-configuration`)).json();
    expect(doc.issuer).toBe(issuer);
    expect(doc.token_endpoint).toBe(`${issuer}/connect/token`);
    expect(existsSync(join(dir, 'env.db'))).toBe(true);
    expect(existsSync(join(dir, 'file.db'))).toBe(false);
    r.child.kill('SIGTERM');
    expect(await r.exited).toBe(0);
  });

  it('flags win over the environment', async () => {
    const dir = workDir();
    const [envPort, flagPort] = [await freePort(), await freePort()];
    const file = join(dir, 'f.json');
    writeFileSync(file, JSON.stringify({ ...baseConfig(), storage: 'memory' }));
    const r = run(
      ['start', '--config', file, '--port', String(flagPort), '--host', '127.0.0.1', '--issuer', 'http://flag.example'],
      {
        SIGIL_CONFIG: join(dir, 'absent.json'),
        PORT: String(envPort),
        SIGIL_ISSUER: 'http://env.example',
      },
    );
    running.push(r);
    const url = await listening(r);
    expect(url).toBe(`http://127.0.0.1:${flagPort}`);
    expect(r.output()).toContain('issuer http://flag.example');
  });
});
