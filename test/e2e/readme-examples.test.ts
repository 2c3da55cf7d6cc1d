/**
 * The documentation runs as printed: every ```sh block of README.md, then of each page of docs/
 * (in the order of their names), that talks to the demo server (it names `http://localhost:5000`,
 * or the management listener `http://127.0.0.1:9464`) runs, in the order printed, against
 * `sigil start` with the demo config of `npm start` (examples/sigil.json) on a free port; one
 * server for all of them, as a reader runs them against one demo. The only change to a block is
 * those two URLs, rewritten to this run's server, whose issuer is that URL (so tokens' `iss`,
 * `aud` and DPoP's `htu` match as they do for a reader of the docs). A page's blocks may build on
 * each other (a walk-through), never on another page's.
 *
 * How a failure shows: each block runs in bash with `set -euo pipefail` and `inherit_errexit`, so
 * any failing command fails it (a curl that cannot connect, a `grep` that finds nothing, a node
 * script that throws). curl itself exits 0 on an HTTP error status, so `curl` is a bash function
 * that runs the real curl with `-D FILE` (the response headers: this leaves the block's own `-o`
 * and `-w` alone) and appends them to a log, from which the test reads every status line. A
 * status of 400 or more fails the block unless a comment in the block announces it (`# 401 ...`),
 * and an announced status (of any class) that does not occur fails it too: the text would be wrong.
 */
import { execFile } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ConfigInput } from '../../src/index.js';
import { resolveConfig } from '../../src/config/loader.js';
import { type ServerProcess, startProcess, tempDir } from '../helpers.js';
import { freePort } from './ports.js';

const ROOT = resolve(import.meta.dirname, '../..');
const DEMO_URL = 'http://localhost:5000';
const METRICS_URL = 'http://127.0.0.1:9464';

/** A fenced ```sh block: its file, first line number (1-based), section heading and text. */
interface ShellBlock {
  file: string;
  line: number;
  heading: string;
  text: string;
}

/** The ```sh blocks of `file` (below the root) that name the demo server or its management listener. */
function demoBlocks(file: string): ShellBlock[] {
  const markdown = readFileSync(join(ROOT, file), 'utf8');
  const blocks: ShellBlock[] = [];
  let heading = '';
  let open: { line: number; lang: string; lines: string[] } | undefined;
  markdown.split('\n').forEach((line, i) => {
    if (open) {
      if (line.startsWith('```')) {
        const text = open.lines.join('\n');
        if (open.lang === 'sh' && /localhost:5000|127\.0\.0\.1:9464/.test(text))
          blocks.push({ file, line: open.line, heading, text });
        open = undefined;
      } else open.lines.push(line);
    } else if (line.startsWith('```')) open = { line: i + 1, lang: line.slice(3).trim(), lines: [] };
    else if (/^#{1,6} /.test(line)) heading = line.replace(/^#+ /, '');
  });
  return blocks;
}

/**
 * The statuses a block announces: a comment that starts with one (`curl ... # 401: refused`,
 * `# 200, the confirmation page`). Numbers elsewhere in a comment (`(status 201)`, sample JSON)
 * announce nothing.
 */
function announcedStatuses(text: string): number[] {
  return [...new Set([...text.matchAll(/(?:^|\s)#\s+([1-5]\d\d)\b/gm)].map((m) => Number(m[1])))];
}

/** Bash prelude: strict mode and the `curl` function that logs every response's headers. */
const PRELUDE = `set -euo pipefail
shopt -s inherit_errexit
curl() {
  local headers rc=0
  headers=$(mktemp "$README_RUN_DIR/headers.XXXXXX")
  command curl --max-time 10 -D "$headers" "$@" || rc=$?
  cat "$headers" >> "$README_RUN_DIR/responses"
  return "$rc"
}
`;

/** Runs `script` in bash from the repository root; resolves with its exit code and output. */
function bash(script: string, env: Record<string, string>): Promise<{ code: number; output: string }> {
  return new Promise((ok) => {
    execFile(
      'bash',
      ['-c', script],
      { cwd: ROOT, env: { ...process.env, ...env }, timeout: 20_000 },
      (err, stdout, stderr) => {
        const code = err ? (typeof err.code === 'number' ? err.code : -1) : 0;
        ok({ code, output: `${stdout}${stderr}` });
      },
    );
  });
}

/** The README, then the pages of docs/ by name. */
const PAGES = [
  'README.md',
  ...readdirSync(join(ROOT, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .sort()
    .map((name) => `docs/${name}`),
];
const BLOCKS = PAGES.flatMap((file) => demoBlocks(file));

describe('the shell examples of README.md and docs/ run as printed against the demo server', () => {
  let server: ServerProcess;
  let metricsUrl: string;

  beforeAll(async () => {
    const config = JSON.parse(readFileSync(join(ROOT, 'examples/sigil.json'), 'utf8')) as ConfigInput;
    const [port, metricsPort] = [await freePort(), await freePort()];
    metricsUrl = `http://127.0.0.1:${metricsPort}`;
    server = await startProcess(
      { ...config, logLevel: 'warn', metrics: { host: '127.0.0.1', port: metricsPort } },
      port,
    );
  });
  afterAll(async () => {
    await server?.stop();
  });

  it('finds the examples of the README and of the pages that have them', () => {
    const count = (file: string) => BLOCKS.filter((b) => b.file === file).length;
    const headings = new Set(BLOCKS.map((b) => `${b.file}: ${b.heading}`));
    expect(headings).toContain('README.md: A tour of the demo');
    expect(headings).toContain('docs/endpoints.md: Endpoints, with a `curl` for each');
    expect(headings).toContain('docs/fapi-and-dpop.md: DPoP: sender-constrained tokens (RFC 9449)');
    expect(headings).toContain('docs/fapi-and-dpop.md: Resource indicators (RFC 8707)');
    expect(count('docs/endpoints.md')).toBeGreaterThanOrEqual(12);
    expect(count('docs/agents.md')).toBeGreaterThanOrEqual(2);
    expect(count('docs/managing.md')).toBeGreaterThanOrEqual(4);
    expect(count('docs/organizations.md')).toBeGreaterThanOrEqual(4);
    expect(count('docs/agents-ciba.md')).toBeGreaterThanOrEqual(1);
  });

  it("the README's config for your own application is one Sigil starts with", () => {
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
    const section = readme.slice(readme.indexOf('## Connecting your own application'));
    const json = /```json\n([\s\S]*?)```/.exec(section)?.[1];
    expect(json).toBeDefined();
    const config = resolveConfig(JSON.parse(json!), {}, { env: { MY_APP_SECRET: 'x'.repeat(32) } });
    expect(config.clients.map((c) => c.clientId)).toContain('my-app');
    expect(() => resolveConfig(JSON.parse(json!), {}, { env: {} })).toThrow(/MY_APP_SECRET is not set/);
  });

  /** Runs a block's `script` with the curl wrapper; its exit code, output and HTTP statuses (200 and up). */
  async function runBlock(script: string): Promise<{ code: number; output: string; statuses: number[] }> {
    const { dir, cleanup } = tempDir();
    try {
      const env = {
        README_RUN_DIR: dir,
        PATH: `${dirname(process.execPath)}:${process.env.PATH ?? ''}`,
        // examples/dpop-proof.mjs keeps its key here rather than in the checkout's data/.
        DPOP_KEY_FILE: join(dir, 'dpop-key.json'),
      };
      const { code, output } = await bash(PRELUDE + script, env);
      const responses = existsSync(join(dir, 'responses')) ? readFileSync(join(dir, 'responses'), 'utf8') : '';
      const statuses = [...responses.matchAll(/^HTTP\/[\d.]+ (\d{3})/gm)]
        .map((m) => Number(m[1]))
        .filter((s) => s >= 200);
      return { code, output, statuses };
    } finally {
      cleanup();
    }
  }

  it('the harness sees the error statuses curl ignores, and a request that never got an answer', async () => {
    const refused = await runBlock(`curl -s ${server.url}/connect/userinfo; echo`);
    expect(refused).toMatchObject({ code: 0, statuses: [401] });
    expect(
      announcedStatuses('curl x   # 401: refused\ncurl "y#400"\n# {"expires_in":300} (status 201)\n# 200, the page'),
    ).toEqual([401, 200]);
    const closed = await runBlock(`curl -s http://127.0.0.1:${await freePort()}/; echo never`);
    expect(closed.code).not.toBe(0);
    expect(closed.output).not.toContain('never');
  });

  it.each(BLOCKS.map((b) => [`${b.file}: ${b.heading}, line ${b.line}`, b] as const))('%s', async (_name, block) => {
    const script = block.text.replaceAll(DEMO_URL, server.url).replaceAll(METRICS_URL, metricsUrl);
    // A demo URL written another way would reach port 5000 instead of this run's server.
    expect(script).not.toMatch(/:5000\b|:9464\b/);
    const { code, output, statuses } = await runBlock(script);
    const context = `block at ${block.file} line ${block.line}:\n${script}\n--- output ---\n${output}\n--- statuses: ${statuses.join(', ')}`;
    expect(code, context).toBe(0);
    expect(statuses.length, context).toBeGreaterThan(0);
    const announced = announcedStatuses(block.text);
    expect(
      statuses.filter((s) => s >= 400 && !announced.includes(s)),
      `unannounced error statuses in ${context}`,
    ).toEqual([]);
    expect(
      announced.filter((s) => !statuses.includes(s)),
      `announced statuses that did not occur in ${context}`,
    ).toEqual([]);
  });
});
