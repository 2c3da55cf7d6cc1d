/**
 * SQLite checkpoints off the event loop (src/stores/sqlite-checkpointer.ts): a worker
 * thread copies committed WAL pages into the database file, so no request's commit pays for it.
 * Observable from outside: the database file itself (not its -wal) grows with rows written while
 * the event loop's connection stays below its inline threshold (4,000 pages), and under sustained
 * writes the -wal file stays bounded (it restarts only after a checkpoint by the writer itself).
 */
import { randomBytes } from 'node:crypto';
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { openStore } from '../../src/stores/sql.js';
import { newGrantRecord } from '../../src/stores/types.js';
import { tempDir } from '../helpers.js';

const dir = tempDir();
afterAll(() => dir.cleanup());

const row = (i: number) =>
  newGrantRecord({
    key: randomBytes(32).toString('base64url'),
    type: 'reference_token',
    clientId: 'checkpoint-client',
    subjectId: null,
    familyId: `family-${i}`,
    sessionId: null,
    data: { claims: { scope: 'api1', n: i, padding: 'x'.repeat(300) } },
    createdAt: 2_000_000_000,
    expiresAt: 2_000_003_600,
  });

describe('SQLite checkpoints', () => {
  it('rows committed while the event loop writes nothing more reach the database file within two seconds, and every row reads back', async () => {
    const path = join(dir.dir, 'checkpoints.db');
    const store = await openStore(`sqlite:${path}`);
    try {
      const before = statSync(path).size;
      // About 2,000 pages of WAL: half the inline threshold, so only the worker can checkpoint them.
      const records = Array.from({ length: 2_000 }, (_, i) => row(i));
      for (let i = 0; i < records.length; i += 200)
        await Promise.all(records.slice(i, i + 200).map((r) => store.grants.put(r)));
      const deadline = Date.now() + 2_000;
      while (statSync(path).size < before + 1_000_000 && Date.now() < deadline)
        await new Promise((r) => setTimeout(r, 50));
      expect(statSync(path).size).toBeGreaterThan(before + 1_000_000);
      for (const r of [records[0], records[999], records[1_999]])
        expect((await store.grants.get(r!.key))?.familyId).toBe(r!.familyId);
    } finally {
      await store.close();
    }
  });

  it('under sustained writes the WAL file stays bounded (40,000 rows without a pause: under 40 MB, where unchecked it passes 150 MB)', async () => {
    const path = join(dir.dir, 'sustained.db');
    const store = await openStore(`sqlite:${path}`);
    try {
      for (let i = 0; i < 40_000; i += 200)
        await Promise.all(Array.from({ length: 200 }, (_, j) => store.grants.put(row(i + j))));
      expect(statSync(`${path}-wal`).size).toBeLessThan(40_000_000);
    } finally {
      await store.close();
    }
  }, 60_000);

  it('a closed store leaves no thread behind: a second store opens the same file and finds the rows', async () => {
    const path = join(dir.dir, 'reopen.db');
    const first = await openStore(`sqlite:${path}`);
    const record = row(1);
    await first.grants.put(record);
    await first.close();
    const second = await openStore(`sqlite:${path}`);
    try {
      expect((await second.grants.get(record.key))?.clientId).toBe('checkpoint-client');
    } finally {
      await second.close();
    }
  });
});
