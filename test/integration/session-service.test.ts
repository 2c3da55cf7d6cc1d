/**
 * The session service (src/users/sessions.ts) over a real SQLite store: it takes the cookies'
 * values and says what to set (http/cookies.ts sets them). A sign-in always gives a new handle and
 * ends the previous session, a step-up moves the session to a new handle, and a browser without a
 * well-formed id gets a new one.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ClientRegistry } from '../../src/clients/registry.js';
import { hashHandle } from '../../src/crypto/handles.js';
import { LogoutService } from '../../src/logout/logout.js';
import { openStore } from '../../src/stores/sql.js';
import type { Store } from '../../src/stores/types.js';
import { SessionService } from '../../src/users/sessions.js';
import { tempDir } from '../helpers.js';

const dir = tempDir();
let store: Store;
let sessions: SessionService;
const LIFETIME = 3600;
const how = { amr: ['pwd'], idp: 'local', tenant: null };

beforeAll(async () => {
  store = await openStore(`sqlite:${join(dir.dir, 'sessions.db')}`);
  sessions = new SessionService(
    store.records.sessions,
    LIFETIME,
    new LogoutService(store.logout, new ClientRegistry([]), 60),
  );
});
afterAll(async () => {
  await store.close();
  dir.cleanup();
});

describe('SessionService', () => {
  it('starts a session under a new handle at every sign-in and ends the previous one', async () => {
    const first = await sessions.create(undefined, { subjectId: 'u1' }, how);
    expect(first.cookie.maxAge).toBe(LIFETIME);
    expect(await sessions.current(first.cookie.value)).toEqual(first.session);

    const second = await sessions.create(first.cookie.value, { subjectId: 'u1' }, how);
    expect(second.cookie.value).not.toBe(first.cookie.value);
    expect(second.session.sid).not.toBe(first.session.sid);
    expect(await sessions.current(first.cookie.value)).toBeUndefined();
    expect(await sessions.current(second.cookie.value)).toEqual(second.session);
  });

  it('moves a stepped-up session to a new handle, keeping its sid and expiry', async () => {
    const { session, cookie } = await sessions.create(undefined, { subjectId: 'u2' }, how);
    const upgraded = await sessions.upgrade(cookie.value, ['pwd', 'otp', 'mfa']);
    expect(upgraded?.session).toEqual({ ...session, amr: ['pwd', 'otp', 'mfa'] });
    expect(upgraded?.cookie.value).not.toBe(cookie.value);
    expect(upgraded?.cookie.maxAge).toBeGreaterThan(LIFETIME - 5);
    expect(upgraded?.cookie.maxAge).toBeLessThanOrEqual(LIFETIME);
    expect(await sessions.current(cookie.value)).toBeUndefined();
    expect(await sessions.current(upgraded?.cookie.value)).toEqual(upgraded?.session);
    // The old handle cannot be stepped up again.
    expect(await sessions.upgrade(cookie.value, ['pwd', 'hwk', 'mfa'])).toBeUndefined();
  });

  it('ends a session once, and ignores cookies that are no handle of its', async () => {
    const { cookie } = await sessions.create(undefined, { subjectId: 'u3' }, how);
    expect(await sessions.end(cookie.value)).toBeDefined();
    expect(await sessions.end(cookie.value)).toBeUndefined();
    expect(await sessions.current(cookie.value)).toBeUndefined();
    for (const junk of [undefined, '', 'x'.repeat(101), 'not-a-handle']) {
      expect(await sessions.current(junk)).toBeUndefined();
      expect(await sessions.upgrade(junk, ['pwd'])).toBeUndefined();
      expect(await sessions.end(junk)).toBeUndefined();
    }
  });

  it('keeps a well-formed browser id and gives a browser without one a new id for two years', () => {
    const fresh = sessions.browserId(undefined);
    expect(fresh.cookie?.value).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(fresh.cookie?.maxAge).toBe(2 * 365 * 24 * 3600);
    expect(fresh.id).toBe(hashHandle(fresh.cookie?.value ?? ''));
    expect(sessions.browserId(fresh.cookie?.value)).toEqual({ id: fresh.id });
    for (const junk of ['', 'short', `${fresh.cookie?.value}=`, 'a'.repeat(44)]) {
      const other = sessions.browserId(junk);
      expect(other.cookie?.value).not.toBe(junk);
      expect(other.id).not.toBe(fresh.id);
    }
  });
});
