/**
 * Config passwords are hashed at start, not on first use, and every password check runs one
 * argon2id verification, unknown usernames included (OWASP ASVS 5.0 V6.3.8).
 * Timing is not measured: argon2's `hash` and `verify` are wrapped in spies (the real functions
 * still run), so the test sees which hash each check verified against and when hashes were made.
 */
import { hash, verify } from '@node-rs/argon2';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startSigil, testConfig, tokenRequest, type TestSigil } from '../helpers.js';

vi.mock('@node-rs/argon2', async (importOriginal) => {
  const real = await importOriginal<typeof import('@node-rs/argon2')>();
  return { ...real, hash: vi.fn(real.hash), verify: vi.fn(real.verify) };
});

const ROPC = ['ropc', 'ropc-secret'] as const;
/** The fixed dummy password of the code before this change: it matched users without a password. */
const OLD_DUMMY = 'sigil-dummy-password-for-equal-timing';

describe('config passwords hashed at start; unknown usernames verified against a dummy hash', () => {
  let sigil: TestSigil;
  /** Clear-text password → the hash made of it at start. */
  const madeAtStart = new Map<string, string>();
  beforeAll(async () => {
    vi.mocked(hash).mockClear();
    const base = testConfig();
    sigil = await startSigil({ users: [...(base.users ?? []), { subjectId: '9', username: 'nopw', claims: {} }] });
    const calls = vi.mocked(hash).mock;
    for (const [i, [password]] of calls.calls.entries())
      madeAtStart.set(String(password), await (calls.results[i]?.value as Promise<string>));
  });
  afterAll(async () => sigil.close());

  it('hashes every clear-text config password (and one dummy) before the first request, and keeps no clear text', () => {
    const clear = (testConfig().users ?? []).map((u) => u.password);
    expect(clear).toEqual(['alice', 'bob', 'carol', 'dave']);
    // Four users' passwords plus the dummy, whose password is random.
    expect(madeAtStart.size).toBe(5);
    for (const p of clear) expect(madeAtStart.get(p!)).toMatch(/^\$argon2id\$/);
    expect(JSON.stringify(sigil.context.config.users)).not.toContain('"password"');
  });

  async function verifiedAgainst(username: string, password: string): Promise<string[]> {
    vi.mocked(verify).mockClear();
    vi.mocked(hash).mockClear();
    const res = await tokenRequest(sigil, { grant_type: 'password', username, password, scope: 'api1' }, ROPC);
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({ error: 'invalid_grant', error_description: 'invalid username or password' });
    expect(vi.mocked(hash)).not.toHaveBeenCalled();
    return vi.mocked(verify).mock.calls.map(([h]) => String(h));
  }

  it('a wrong password runs one verification, against the hash made at start', async () => {
    expect(await verifiedAgainst('alice', 'wrong')).toEqual([madeAtStart.get('alice')]);
  });

  it('an unknown username runs one verification too, against the dummy hash made at start', async () => {
    const users = new Set(['alice', 'bob', 'carol', 'dave'].map((p) => madeAtStart.get(p)));
    const dummy = [...madeAtStart.values()].filter((h) => !users.has(h));
    expect(dummy).toHaveLength(1);
    expect(await verifiedAgainst('nobody', 'wrong')).toEqual(dummy);
    expect(await verifiedAgainst('nobody-else', 'alice')).toEqual(dummy);
  });

  it('a user without a password never signs in, not even with the old fixed dummy password', async () => {
    expect(await verifiedAgainst('nopw', OLD_DUMMY)).toHaveLength(1);
  });
});
