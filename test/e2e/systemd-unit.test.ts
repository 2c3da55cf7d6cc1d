/**
 * deploy/sigil.service: systemd accepts every line of the unit (no unknown key or
 * invalid value, `systemd-analyze verify`, where installed), and the sandbox keeps the settings that
 * make it hardened: no privileges to gain, a read-only system but for the data folder.
 */
import { spawnSync } from 'node:child_process';
import { copyFileSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { tempDir } from '../helpers.js';

const UNIT = resolve(import.meta.dirname, '../../deploy/sigil.service');
const hasSystemdAnalyze = spawnSync('systemd-analyze', ['--version']).status === 0;

describe('deploy/sigil.service', () => {
  it.skipIf(!hasSystemdAnalyze)('passes systemd-analyze verify without a warning', () => {
    const { dir, cleanup } = tempDir();
    try {
      const unit = join(dir, 'sigil.service');
      copyFileSync(UNIT, unit);
      const verify = spawnSync('systemd-analyze', ['verify', unit], { encoding: 'utf8' });
      expect(verify.stderr + verify.stdout).toBe('');
      expect(verify.status).toBe(0);
    } finally {
      cleanup();
    }
  });

  it('runs unprivileged in a sandbox that can write only the data folder', () => {
    const lines = new Set(
      readFileSync(UNIT, 'utf8')
        .split('\n')
        .map((l) => l.trim()),
    );
    for (const setting of [
      'DynamicUser=yes',
      'NoNewPrivileges=yes',
      'ProtectSystem=strict',
      'ReadWritePaths=/var/lib/sigil',
      'StateDirectory=sigil',
      'Environment=SIGIL_STORAGE=sqlite:/var/lib/sigil/sigil.db',
      'CapabilityBoundingSet=',
      'PrivateTmp=yes',
      'ProtectHome=yes',
    ])
      expect(lines).toContain(setting);
    expect([...lines].filter((l) => /^MemoryDenyWriteExecute=yes/.test(l))).toEqual([]);
  });

  it('names the address it listens on, since Sigil alone listens on 127.0.0.1', () => {
    const lines = readFileSync(UNIT, 'utf8')
      .split('\n')
      .map((l) => l.trim());
    expect(lines.filter((l) => /^Environment=HOST=/.test(l))).toEqual(['Environment=HOST=0.0.0.0']);
    // A --host flag would win over it.
    expect(lines.find((l) => l.startsWith('ExecStart='))).not.toMatch(/--host/);
  });
});
