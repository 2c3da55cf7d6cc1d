/**
 * The layering rule of .dependency-cruiser.cjs (`npm run check:layers`, part of `npm test`): it
 * must fail on an import that runs up the layers, on an import loop (type imports included) and
 * on a folder no layer names. Each case plants a small tree of its own in a temporary folder and
 * runs the project's dependency-cruiser with the project's rule file on it.
 */
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '../..');
const DEPCRUISE = join(ROOT, 'node_modules/.bin/depcruise');
const RULES = join(ROOT, '.dependency-cruiser.cjs');

const trees: string[] = [];
afterEach(() => {
  for (const dir of trees.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** Writes `files` (path → source) under a new temporary folder with a tsconfig, and checks it. */
async function check(files: Record<string, string>): Promise<{ failed: boolean; output: string }> {
  const dir = mkdtempSync(join(tmpdir(), 'sigil-layers-'));
  trees.push(dir);
  writeFileSync(
    join(dir, 'tsconfig.json'),
    JSON.stringify({ compilerOptions: { module: 'nodenext', moduleResolution: 'nodenext', strict: true } }),
  );
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), text);
  }
  try {
    const { stdout } = await promisify(execFile)(DEPCRUISE, ['src', '--config', RULES, '--output-type', 'err'], {
      cwd: dir,
    });
    return { failed: false, output: stdout };
  } catch (err) {
    const { stdout = '', stderr = '' } = err as { stdout?: string; stderr?: string };
    return { failed: true, output: stdout + stderr };
  }
}

describe('the layering rule', () => {
  it('passes imports that run down the layers', async () => {
    const result = await check({
      'src/endpoints/token.ts': "import { newHandle } from '../crypto/handles.js';\nexport const token = newHandle;\n",
      'src/crypto/handles.ts': 'export const newHandle = () => 1;\n',
    });
    expect(result).toMatchObject({ failed: false });
  });

  it('fails on an import up the layers, naming the rule and the import', async () => {
    const result = await check({
      'src/crypto/handles.ts':
        "import { token } from '../endpoints/token.js';\nexport const newHandle = () => token;\n",
      'src/endpoints/token.ts': 'export const token = 1;\n',
    });
    expect(result.failed).toBe(true);
    expect(result.output).toContain('no-upward-import: crypto');
    expect(result.output).toContain('src/crypto/handles.ts → src/endpoints/token.ts');
  });

  it('fails on an import from a service into any module of src/ui/, and passes one into src/page-kit/', async () => {
    const up = await check({
      'src/email/mailer.ts': "import type { Messages } from '../ui/i18n.js';\nexport type Mail = Messages;\n",
      'src/ui/i18n.ts': 'export type Messages = { signIn: string };\n',
    });
    expect(up.failed).toBe(true);
    expect(up.output).toContain('no-upward-import: application services');
    expect(up.output).toContain('src/email/mailer.ts → src/ui/i18n.ts');
    const down = await check({
      'src/email/mailer.ts': "import type { Messages } from '../page-kit/i18n.js';\nexport type Mail = Messages;\n",
      'src/page-kit/i18n.ts': 'export type Messages = { signIn: string };\n',
    });
    expect(down).toMatchObject({ failed: false });
  });

  it('fails on a loop of type-only imports inside one layer', async () => {
    const result = await check({
      'src/ui/account.ts': "import type { Device } from './device.js';\nexport interface Account { device?: Device }\n",
      'src/ui/device.ts':
        "import type { Account } from './account.js';\nexport interface Device { account?: Account }\n",
    });
    expect(result.failed).toBe(true);
    expect(result.output).toContain('no-circular');
  });

  it('fails on a module in a folder that no layer names', async () => {
    const result = await check({
      'src/gadgets/thing.ts': "import { newHandle } from '../crypto/handles.js';\nexport const thing = newHandle;\n",
      'src/crypto/handles.ts': 'export const newHandle = () => 1;\n',
    });
    expect(result.failed).toBe(true);
    expect(result.output).toContain('not-in-a-layer');
  });
});
