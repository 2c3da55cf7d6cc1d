/**
 * A library user's own `UserDirectory` over a SQLite table: Sigil asks it after config
 * and stored users, answers its outage with temporarily_unavailable, never lets it sign someone in
 * under a subject that Sigil's own users hold, and stops at a directory that cannot answer.
 */
import { hash, verify } from '@node-rs/argon2';
import Database from 'better-sqlite3';
import { decodeJwt } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, DirectoryUnavailable, type User, type UserDirectory } from '../../src/index.js';
import { Browser } from '../authorize-helpers.js';
import { startSigil, tokenRequest, type TestSigil } from '../helpers.js';

const ROPC = ['ropc', 'ropc-secret'] as const;
const FAILED = { error: 'invalid_grant', error_description: 'invalid username or password' };

/** Users in a SQLite table of the library user's; `down` makes every query fail as a lost database would. */
class TableDirectory implements UserDirectory {
  down = false;
  private readonly dummy: Promise<string> = hash('not-a-password-anyone-knows');
  constructor(
    readonly name: string,
    private readonly db: Database.Database,
  ) {}
  async authenticate(username: string, password: string): Promise<User | undefined> {
    const row = this.query('select * from people where login = ?', username);
    const ok = await verify(row?.hash ?? (await this.dummy), password).catch(() => false);
    return ok && row ? toUser(row) : undefined;
  }
  async findBySubject(subjectId: string): Promise<User | undefined> {
    const row = this.query('select * from people where id = ?', subjectId);
    return row ? toUser(row) : undefined;
  }
  async findByUsername(username: string): Promise<User | undefined> {
    const row = this.query('select * from people where login = ?', username);
    return row ? toUser(row) : undefined;
  }
  private query(sql: string, value: string): Row | undefined {
    try {
      if (this.down) throw new Error('database is locked');
      return this.db.prepare(sql).get(value) as Row | undefined;
    } catch (err) {
      throw new DirectoryUnavailable(this.name, (err as Error).message);
    }
  }
}

interface Row {
  id: string;
  login: string;
  hash: string;
  name: string;
}
const toUser = (r: Row): User => ({
  subjectId: r.id,
  username: r.login,
  tenant: null,
  isActive: true,
  claims: { name: r.name },
});

async function table(
  rows: Array<[id: string, login: string, password: string, name: string]>,
): Promise<Database.Database> {
  const db = new Database(':memory:');
  db.exec('create table people (id text primary key, login text unique collate nocase, hash text, name text)');
  for (const [id, login, password, name] of rows)
    db.prepare('insert into people values (?, ?, ?, ?)').run(id, login, await hash(password), name);
  return db;
}

describe('custom user directory', () => {
  let sigil: TestSigil;
  let first: TableDirectory;
  let second: TableDirectory;
  beforeAll(async () => {
    // "mallory" claims subject 1, which is the config user alice's.
    first = new TableDirectory(
      'hr',
      await table([
        ['hr-7', 'zoe', 'zoe-pw', 'Zoe'],
        ['1', 'mallory', 'mallory-pw', 'Mallory'],
      ]),
    );
    // "trudy" of the later directory claims subject hr-7, which is zoe's of the earlier one.
    second = new TableDirectory(
      'partners',
      await table([
        ['p-1', 'yuri', 'yuri-pw', 'Yuri'],
        ['hr-7', 'trudy', 'trudy-pw', 'Trudy'],
      ]),
    );
    sigil = await startSigil(
      { rateLimits: { maxFailures: 1000, windowSeconds: 60 } },
      { userDirectories: [first, second] },
    );
  });
  afterAll(async () => sigil?.close());

  const grant = (username: string, password: string) =>
    tokenRequest(sigil, { grant_type: 'password', username, password, scope: 'openid profile' }, ROPC);

  it("signs in users of each directory, after Sigil's own users, with the same answer for wrong and unknown", async () => {
    for (const [u, p, sub] of [
      ['zoe', 'zoe-pw', 'hr-7'],
      ['yuri', 'yuri-pw', 'p-1'],
      ['alice', 'alice', '1'],
    ] as const) {
      const res = await grant(u, p);
      expect(res.statusCode, res.body).toBe(200);
      expect(decodeJwt(res.json<{ access_token: string }>().access_token).sub).toBe(sub);
    }
    expect((await grant('zoe', 'wrong')).json()).toEqual(FAILED);
    expect((await grant('nobody', 'zoe-pw')).json()).toEqual(FAILED);
  });

  it('refuses a directory user whose subject a config user holds (it would become that user)', async () => {
    expect((await grant('mallory', 'mallory-pw')).json()).toEqual(FAILED);
  });

  it("refuses a directory user whose subject an earlier directory's user holds (lookups by subject would find that user)", async () => {
    expect((await grant('trudy', 'trudy-pw')).json()).toEqual(FAILED);
    expect((await grant('zoe', 'zoe-pw')).statusCode).toBe(200);
  });

  it('answers temporarily_unavailable while a directory is down, also for a user of a later directory', async () => {
    first.down = true;
    try {
      const res = await grant('yuri', 'yuri-pw');
      expect(res.statusCode).toBe(503);
      expect(res.json().error).toBe('temporarily_unavailable');
      // Sigil's own users are asked first and keep working.
      expect((await grant('alice', 'alice')).statusCode).toBe(200);
      const b = new Browser(sigil);
      const page = await b.get('/account/login');
      const answered = await b.submitLogin(page, 'zoe', 'zoe-pw');
      expect(answered.status).toBe(503);
      expect(answered.body).toContain('Sign-in is unavailable at the moment.');
    } finally {
      first.down = false;
    }
    expect((await grant('yuri', 'yuri-pw')).statusCode).toBe(200);
  });
});

describe('a custom user directory without findByUsername', () => {
  it("stops the start with a ConfigError naming the directory: without it a stored user could take one of its users' names", async () => {
    const legacy = new TableDirectory('legacy', await table([['l-1', 'lena', 'lena-pw', 'Lena']]));
    // As plain JavaScript written for an earlier version passes it: no type check stops it.
    const withoutIt: Omit<UserDirectory, 'findByUsername'> = {
      name: 'legacy',
      authenticate: (u, p) => legacy.authenticate(u, p),
      findBySubject: (s) => legacy.findBySubject(s),
    };
    const started = startSigil({}, { userDirectories: [withoutIt as UserDirectory] });
    await expect(started).rejects.toBeInstanceOf(ConfigError);
    await expect(started).rejects.toThrow('userDirectories: "legacy" has no findByUsername(username)');
  });
});
