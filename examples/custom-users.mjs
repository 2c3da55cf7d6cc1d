#!/usr/bin/env node
/**
 * Sigil over users you already have: a custom user directory over a small SQLite table
 * of your own, and a profile service that decides which claims are released and whether a user is
 * still active.
 *
 *   npm run build && node examples/custom-users.mjs
 *   curl -s -u app:app-secret -d grant_type=password -d username=ada -d password=ada-password \
 *        -d 'scope=openid profile email department offline_access' http://localhost:5000/connect/token
 *
 * Environment: PORT (default 5000), CUSTOM_USERS_DB (the SQLite file of the `people` table, created
 * and filled with two users when missing; default ./data/people.db), SIGIL_STORAGE (Sigil's own
 * store, default memory for this example).
 *
 * Set a user's `active` to 0 in the table and their refresh tokens stop working, introspection
 * answers active:false, userinfo invalid_token: the profile service's isActive is asked each time.
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { pathToFileURL } from 'node:url';
import { hash, verify } from '@node-rs/argon2';
import Database from 'better-sqlite3';
import { createSigil, DirectoryUnavailable } from 'sigil';

/** Opens (and on first use creates and fills) the `people` table: your existing user database. */
export async function openPeople(file) {
  if (file !== ':memory:') mkdirSync(dirname(file), { recursive: true });
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  db.exec(`create table if not exists people (
    id text primary key,                 -- stable id: the subject, never changes on rename
    login text not null unique collate nocase,
    password_hash text not null,         -- argon2id
    display_name text not null,
    email text not null,
    department text not null,
    active integer not null default 1
  )`);
  if (db.prepare('select count(*) as n from people').get().n === 0) {
    const insert = db.prepare(
      'insert into people (id, login, password_hash, display_name, email, department) values (?, ?, ?, ?, ?, ?)',
    );
    insert.run(
      '7f3c2a4e-1b65-4c1e-9a0e-5d1c3e7b9a10',
      'ada',
      await hash('ada-password'),
      'Ada Lovelace',
      'ada@example.org',
      'engineering',
    );
    insert.run(
      '0b9d6e52-8c47-4f3a-b1d2-6a8e4c2f7d31',
      'grace',
      await hash('grace-password'),
      'Grace Hopper',
      'grace@example.org',
      'navy',
    );
  }
  return db;
}

/**
 * A `UserDirectory` over the `people` table, with the guarantees Sigil's own users have: unknown
 * users and wrong passwords answer alike and cost one argon2id verification each, an empty password
 * never matches, the subject is the stable `id`, and a database error becomes `DirectoryUnavailable`
 * (Sigil answers temporarily_unavailable, never a 500).
 */
export class PeopleDirectory {
  name = 'people';

  /** @param {import('better-sqlite3').Database} db @param {string} dummyHash an argon2id hash of a random password */
  constructor(db, dummyHash) {
    this.db = db;
    this.dummyHash = dummyHash;
  }

  static async create(db) {
    return new PeopleDirectory(db, await hash(randomBytes(32).toString('base64url')));
  }

  async authenticate(username, password) {
    const row = this.query(() => this.db.prepare('select * from people where login = ?').get(username));
    const ok = await verify(row?.password_hash ?? this.dummyHash, password).catch(() => false);
    return ok && row && password.length > 0 ? toUser(row) : undefined;
  }

  async findBySubject(subjectId) {
    const row = this.query(() => this.db.prepare('select * from people where id = ?').get(subjectId));
    return row ? toUser(row) : undefined;
  }

  /** The user holding a login name: Sigil then lets no stored user take it. */
  async findByUsername(username) {
    const row = this.query(() => this.db.prepare('select * from people where login = ?').get(username));
    return row ? toUser(row) : undefined;
  }

  query(read) {
    try {
      return read();
    } catch (err) {
      throw new DirectoryUnavailable(this.name, err.message);
    }
  }
}

function toUser(row) {
  return {
    subjectId: row.id,
    username: row.login,
    tenant: null,
    isActive: row.active === 1,
    claims: { name: row.display_name, email: row.email, email_verified: true, department: row.department },
  };
}

/**
 * A profile service (like Duende's IProfileService): releases the requested claims, keeps the
 * department out of identity tokens (it goes to APIs and userinfo only), and reads `active` afresh.
 */
export function peopleProfile(db) {
  return {
    async getProfileData({ subject, requestedClaims, caller, userClaims }) {
      const released = {};
      for (const name of requestedClaims) {
        if (name === 'department' && caller === 'id_token') continue;
        if (userClaims[name] !== undefined) released[name] = userClaims[name];
      }
      // A claim computed here rather than stored: which of your systems answered.
      if (requestedClaims.includes('department')) released.department_source = `people:${subject.slice(0, 8)}`;
      return released;
    },
    async isActive(subject) {
      return db.prepare('select active from people where id = ?').get(subject)?.active === 1;
    },
  };
}

/** Starts Sigil with the people directory and the profile service; resolves to its URL and a close function. */
export async function startCustomUsers({
  port = Number(process.env.PORT ?? 5000),
  file = process.env.CUSTOM_USERS_DB ?? './data/people.db',
} = {}) {
  const db = await openPeople(file);
  const issuer = `http://localhost:${port}`;
  const sigil = await createSigil(
    {
      issuer,
      storage: process.env.SIGIL_STORAGE ?? 'memory',
      logLevel: 'warn',
      metrics: false,
      identityResources: [
        { name: 'openid', userClaims: ['sub'], required: true },
        { name: 'profile', userClaims: ['name'] },
        { name: 'email', userClaims: ['email', 'email_verified'] },
        { name: 'department', userClaims: ['department'] },
      ],
      apiScopes: [{ name: 'orders', userClaims: ['department'] }],
      apiResources: [{ name: 'orders-api', scopes: ['orders'], secrets: ['orders-api-secret'] }],
      clients: [
        {
          clientId: 'app',
          clientSecrets: ['app-secret'],
          allowedGrantTypes: ['password', 'refresh_token'],
          allowedScopes: ['openid', 'profile', 'email', 'department', 'orders', 'offline_access'],
          allowOfflineAccess: true,
        },
      ],
    },
    { userDirectories: [await PeopleDirectory.create(db)], profileService: peopleProfile(db) },
  );
  const url = await sigil.app.listen({ host: '127.0.0.1', port });
  return {
    url: issuer,
    listening: url,
    close: async () => {
      await sigil.close();
      db.close();
    },
  };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const { url } = await startCustomUsers();
  console.log(`custom-users example listening on ${url}`);
}
