/**
 * The grant-store reads and revocations of the account pages, on SQLite and PostgreSQL:
 * a user's live records of one kind (`listLive`), everything of a user at one client
 * (`revokeSubjectAtClient`, with the families of its tokens), a user's tokens but those of one
 * session (`revokeSubject` with `keepSessionId`); other users and other clients untouched. The lookups go along
 * the grants_subject index, never a scan of the table (SQLite's query plan shows it).
 */
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStore } from '../../src/stores/sql.js';
import type { GrantRecord, Store } from '../../src/stores/types.js';
import { dropSchema, POSTGRES_URL, tempDir, uniqueSchema } from '../helpers.js';

const NOW = 2_000_000_000;
const sqliteDir = tempDir();
const pgSchema = uniqueSchema('sigil_account');
const backends = [
  { name: 'SQLite', url: `sqlite:${join(sqliteDir.dir, 'store.db')}` },
  { name: 'PostgreSQL', url: `${POSTGRES_URL}?schema=${pgSchema}` },
];
afterAll(async () => {
  sqliteDir.cleanup();
  await dropSchema(pgSchema);
});

function row(over: Partial<GrantRecord>): GrantRecord {
  return {
    key: randomBytes(32).toString('base64url'),
    type: 'refresh_token',
    clientId: 'app',
    subjectId: 'u1',
    familyId: randomBytes(16).toString('base64url'),
    sessionId: null,
    data: { scopes: ['openid'] },
    createdAt: NOW - 100,
    expiresAt: NOW + 3600,
    consumedAt: null,
    revokedAt: null,
    ...over,
  };
}

describe.each(backends)('account lookups on $name', ({ url }) => {
  let store: Store;
  beforeAll(async () => {
    store = await openStore(url);
  });
  afterAll(async () => store?.close());

  it("lists a user's live records of one kind, newest first, and revokes by client and by session", async () => {
    const u = `u-${randomBytes(4).toString('hex')}`;
    const mine = row({ subjectId: u, createdAt: NOW - 50, sessionId: 'keep' });
    const older = row({ subjectId: u, createdAt: NOW - 90, clientId: 'other-app', sessionId: 'gone' });
    const noSession = row({ subjectId: u, clientId: 'other-app' });
    const child = row({ subjectId: u, familyId: mine.familyId, type: 'access_token', sessionId: 'keep' });
    const consent = row({ subjectId: u, type: 'consent', data: { scopes: ['openid', 'profile'] } });
    const session = row({ subjectId: u, type: 'session', clientId: '', familyId: 'sid-x', sessionId: 'sid-x' });
    const revoked = row({ subjectId: u, revokedAt: NOW - 5 });
    const expired = row({ subjectId: u, expiresAt: NOW - 1 });
    const someoneElse = row({ subjectId: `${u}-b` });
    for (const r of [mine, older, noSession, child, consent, session, revoked, expired, someoneElse])
      await store.grants.put(r);

    expect((await store.grants.listLive(u, 'refresh_token', NOW, 10)).map((r) => r.key)).toEqual([
      mine.key,
      older.key,
      noSession.key,
    ]);
    expect((await store.grants.listLive(u, 'refresh_token', NOW, 1)).map((r) => r.key)).toEqual([mine.key]);
    expect((await store.grants.listLive(u, 'consent', NOW, 10)).map((r) => r.key)).toEqual([consent.key]);

    // Everything of the user at `app`: the token, its family's access-token mark, the consent.
    expect(await store.grants.revokeSubjectAtClient(u, 'app', NOW)).toBe(3);
    expect((await store.grants.get(child.key))?.revokedAt).toBe(NOW);
    expect((await store.grants.get(consent.key))?.revokedAt).toBe(NOW);
    expect((await store.grants.get(session.key))?.revokedAt).toBeNull();
    expect((await store.grants.get(older.key))?.revokedAt).toBeNull();
    expect((await store.grants.get(someoneElse.key))?.revokedAt).toBeNull();

    // The user's tokens but those of session `gone`... of `keep`: older (session gone) and noSession go.
    const tokens = ['refresh_token', 'reference_token', 'access_token'] as const;
    expect(await store.grants.revokeSubject(u, tokens, NOW, 'gone')).toBe(1);
    expect((await store.grants.get(noSession.key))?.revokedAt).toBe(NOW);
    expect((await store.grants.get(older.key))?.revokedAt).toBeNull();
    expect(await store.grants.revokeSubject(u, tokens, NOW, 'keep')).toBe(1);
    expect((await store.grants.get(older.key))?.revokedAt).toBe(NOW);
    expect((await store.grants.get(session.key))?.revokedAt).toBeNull();
    expect((await store.grants.get(someoneElse.key))?.revokedAt).toBeNull();
  });

  if (url.startsWith('sqlite:'))
    it("finds a user's records through the grants_subject index, not by scanning", () => {
      const db = new Database(url.slice('sqlite:'.length), { readonly: true });
      try {
        const plan = (sql: string) => JSON.stringify(db.prepare(`explain query plan ${sql}`).all());
        expect(
          plan("select * from grants where subject_id = 'u' and type = 'session' and revoked_at is null"),
        ).toContain('grants_subject');
        expect(
          plan("update grants set revoked_at = 1 where subject_id = 'u' and client_id = 'c' and revoked_at is null"),
        ).toContain('grants_subject');
        expect(plan("select * from grants where subject_id = 'u' and type = 'session'")).not.toMatch(/"SCAN grants"/);
      } finally {
        db.close();
      }
    });
});
