/**
 * The typed record repositories (src/stores/records/) over a real SQLite file, opened twice as two
 * nodes would: every kind is stored under the key it always had (existing databases keep working),
 * rows are read back as their own kind only, single-use records are consumed exactly once under
 * concurrency, and expired or used records are not handed out as live.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashHandle, newHandle, nowSeconds } from '../../src/crypto/handles.js';
import { OAuthError } from '../../src/protocol/errors.js';
import type { DeviceCodeData } from '../../src/stores/records/device-codes.js';
import type { Session } from '../../src/stores/records/sessions.js';
import { openStore } from '../../src/stores/sql.js';
import type { Store } from '../../src/stores/types.js';
import { tempDir } from '../helpers.js';

const dir = tempDir();
let store: Store;
/** A second store on the same file: another node. */
let other: Store;

beforeAll(async () => {
  store = await openStore(`sqlite:${join(dir.dir, 'records.db')}`);
  other = await openStore(`sqlite:${join(dir.dir, 'records.db')}`);
});
afterAll(async () => {
  await other.close();
  await store.close();
  dir.cleanup();
});

const subject = { subjectId: 'u1', authTime: 1_700_000_000, amr: ['pwd'] };

describe('record repositories', () => {
  it('store every kind under its historical key, with the data as given', async () => {
    const now = nowSeconds();
    const { records } = store;
    const raw = (key: string) => store.grants.get(key);

    const code = newHandle();
    const codeData = { redirectUri: 'https://app.example/cb', scopes: ['openid'], subject };
    await records.codes.issue(code, {
      clientId: 'c',
      subjectId: 'u1',
      familyId: 'f-code',
      sessionId: null,
      data: codeData,
      createdAt: now,
      expiresAt: now + 60,
    });
    expect(await raw(hashHandle(code))).toMatchObject({
      type: 'authorization_code',
      clientId: 'c',
      familyId: 'f-code',
      data: codeData,
    });

    const consentData = { scopes: ['openid', 'api1'] };
    await records.consents.remember('u1', 'c', consentData.scopes, now, now + 60);
    expect(await raw(hashHandle('consent\u0000u1\u0000c'))).toMatchObject({
      type: 'consent',
      subjectId: 'u1',
      data: consentData,
    });
    expect(await records.consents.remembered('u1', 'c', now)).toEqual(consentData.scopes);
    // Past its lifetime a consent counts as none, before the clean-up deletes the row.
    expect(await records.consents.remembered('u1', 'c', now + 60)).toBeUndefined();

    const uri = await records.pushedRequests.push('c', { scope: 'openid' }, 60, now);
    const handle = uri.slice('urn:ietf:params:oauth:request_uri:'.length);
    expect(await raw(hashHandle(`pushed_request\u0000${handle}`))).toMatchObject({
      type: 'pushed_request',
      data: { params: { scope: 'openid' } },
    });

    const deviceCode = newHandle();
    await records.deviceCodes.saveUserCode('BCDFGHJK', {
      clientId: 'c',
      deviceKey: hashHandle(deviceCode),
      createdAt: now,
      expiresAt: now + 60,
    });
    expect(await raw(hashHandle('user_code\u0000BCDFGHJK'))).toMatchObject({
      type: 'user_code',
      familyId: hashHandle(deviceCode).slice(0, 22),
      data: { deviceKey: hashHandle(deviceCode) },
    });

    await records.pendingSignIns.save(
      'browser-1',
      { subjectId: 'u1', tenant: null, amr: ['pwd'], idp: 'local' },
      now,
      now + 60,
    );
    expect(await raw(hashHandle('mfa-pending\u0000browser-1'))).toMatchObject({ type: 'mfa_pending', subjectId: 'u1' });
    await records.enrollments.save('browser-1', 'u1', { secret: 's' }, now, now + 60);
    expect(await raw(hashHandle('mfa-enrollment\u0000browser-1\u0000u1'))).toMatchObject({
      type: 'mfa_enrollment',
      data: { secret: 's' },
    });

    await records.dpopNonces.put('nonce-1', now, now + 60);
    expect(await raw(hashHandle('dpop_nonce\u0000nonce-1'))).toMatchObject({ type: 'dpop_nonce', data: {} });

    const sessionHandle = newHandle();
    const session: Session = { sid: 'sid-1', subjectId: 'u1', authTime: now, amr: ['pwd'], idp: 'local', tenant: null };
    await records.sessions.create(sessionHandle, session, now, now + 60);
    expect(await raw(hashHandle(sessionHandle))).toMatchObject({
      type: 'session',
      familyId: 'sid-1',
      sessionId: 'sid-1',
      data: session,
    });
  });

  it('hand a row out as its own kind only, whatever its state', async () => {
    const now = nowSeconds();
    const sessionHandle = newHandle();
    await store.records.sessions.create(
      sessionHandle,
      { sid: 'sid-2', subjectId: 'u1', authTime: now, amr: ['pwd'], idp: 'local', tenant: null },
      now,
      now + 60,
    );
    // A session handle presented as a code or a refresh token is neither.
    expect(await store.records.codes.find(sessionHandle)).toBeUndefined();
    expect(await store.records.refreshTokens.find(sessionHandle)).toBeUndefined();
    expect(await store.records.sessions.find(sessionHandle)).toBeDefined();

    const code = newHandle();
    await store.records.codes.issue(code, {
      clientId: 'c',
      subjectId: 'u1',
      familyId: 'f-used',
      sessionId: null,
      data: { redirectUri: 'x', scopes: [], subject },
      createdAt: now,
      expiresAt: now + 60,
    });
    expect(await store.records.codes.consume(code, now)).toBe(true);
    // A used code is still found (its reuse revokes the family), with its state.
    expect((await store.records.codes.find(code))?.consumedAt).toBe(now);
  });

  it('consume single-use records exactly once, across two nodes', async () => {
    const now = nowSeconds();
    const code = newHandle();
    await store.records.codes.issue(code, {
      clientId: 'c',
      subjectId: 'u1',
      familyId: 'f-race',
      sessionId: null,
      data: { redirectUri: 'x', scopes: [], subject },
      createdAt: now,
      expiresAt: now + 60,
    });
    const wins = await Promise.all(
      Array.from({ length: 20 }, (_, i) => (i % 2 ? other : store).records.codes.consume(code, now)),
    );
    expect(wins.filter(Boolean)).toHaveLength(1);

    const uri = await store.records.pushedRequests.push('c', { scope: 'openid' }, 60, now);
    // Another client's use is refused and leaves the request untouched.
    await expect(other.records.pushedRequests.take(uri, 'someone-else', now)).rejects.toMatchObject({
      code: 'invalid_request_uri',
    });
    const takes = await Promise.allSettled(
      Array.from({ length: 10 }, (_, i) => (i % 2 ? other : store).records.pushedRequests.take(uri, 'c', now)),
    );
    expect(
      takes.filter((t) => t.status === 'fulfilled').map((t) => (t as PromiseFulfilledResult<unknown>).value),
    ).toEqual([{ scope: 'openid' }]);
    for (const t of takes) if (t.status === 'rejected') expect(t.reason).toBeInstanceOf(OAuthError);
  });

  it('a sliding reuse refresh token: a request that read it before a concurrent DPoP binding cannot write the unbound data back', async () => {
    const now = nowSeconds();
    const refresh = newHandle();
    const unbound = { scopes: ['openid'], subject, absoluteExpiresAt: now + 600 };
    await store.records.refreshTokens.issue(refresh, {
      clientId: 'c',
      subjectId: 'u1',
      familyId: 'f-slide',
      sessionId: null,
      data: unbound,
      createdAt: now,
      expiresAt: now + 60,
    });
    // Request B binds the token (its first proof); request A, without a proof, read it before.
    expect(await store.records.refreshTokens.replaceData(refresh, unbound, { ...unbound, jkt: 'key-b' })).toBe(true);
    expect(await store.records.refreshTokens.replaceData(refresh, unbound, unbound, now + 120)).toBe(false);
    const row = await store.records.refreshTokens.find(refresh);
    expect(row?.data.jkt).toBe('key-b');
    expect(row?.expiresAt).toBe(now + 60);
    // Sliding with the data as stored sets the new expiry and keeps the binding.
    expect(await store.records.refreshTokens.replaceData(refresh, row!.data, row!.data, now + 120)).toBe(true);
    expect(await store.records.refreshTokens.find(refresh)).toMatchObject({
      expiresAt: now + 120,
      data: { jkt: 'key-b' },
    });
  });

  it('do not hand out expired or used records as live', async () => {
    const now = nowSeconds();
    const refresh = newHandle();
    const data = { scopes: ['openid'], subject, absoluteExpiresAt: now + 10 };
    await store.records.refreshTokens.issue(refresh, {
      clientId: 'c',
      subjectId: 'u1',
      familyId: 'f-exp',
      sessionId: null,
      data,
      createdAt: now - 20,
      expiresAt: now - 1,
    });
    expect(await store.records.refreshTokens.findLive(refresh, now)).toBeUndefined();
    expect((await store.records.refreshTokens.find(refresh))?.data).toEqual(data);
    expect(await store.records.refreshTokens.consume(refresh, now)).toBe(false);

    await store.records.pendingSignIns.save(
      'browser-2',
      { subjectId: 'u1', tenant: null, amr: ['pwd'], idp: 'local' },
      now - 20,
      now - 1,
    );
    expect(await store.records.pendingSignIns.find('browser-2', now)).toBeUndefined();
    await store.records.enrollments.save('browser-2', 'u1', { secret: 's' }, now, now + 60);
    expect(await store.records.enrollments.find('browser-2', 'u1', now)).toEqual({ secret: 's' });
    expect(await store.records.enrollments.finish('browser-2', 'u1', now)).toBe(true);
    expect(await store.records.enrollments.find('browser-2', 'u1', now)).toBeUndefined();

    await store.records.dpopNonces.put('nonce-2', now - 20, now - 1);
    expect(await other.records.dpopNonces.isLive('nonce-2', now)).toBe(false);
    await store.records.dpopNonces.put('nonce-3', now, now + 60);
    expect(await other.records.dpopNonces.isLive('nonce-3', now)).toBe(true);
  });

  it('write device polls by compare-and-set on the data read', async () => {
    const now = nowSeconds();
    const deviceCode = newHandle();
    const devices = store.records.deviceCodes;
    const key = devices.keyOf(deviceCode);
    const data: DeviceCodeData = { scopes: ['openid'], userCodeKey: 'k', status: 'pending', interval: 5 };
    await devices.put(deviceCode, { clientId: 'c', data, createdAt: now, expiresAt: now + 60 });
    const read = (await devices.findByKey(key))!.data;
    expect(await devices.answer(key, { ...read, status: 'denied' }, now + 60)).toBe(true);
    // A poll that read before the answer cannot write over it.
    expect(await other.records.deviceCodes.recordPoll(key, read, { ...read, lastPollAt: Date.now() })).toBe(false);
    expect((await devices.findByKey(key))?.data.status).toBe('denied');
  });

  it('revoke access tokens by jti or handle, storing a revoked mark for an unknown one', async () => {
    const now = nowSeconds();
    const tokens = store.records.accessTokens;
    await tokens.putMark('jti-1', {
      clientId: 'c',
      subjectId: 'u1',
      familyId: 'f-at',
      sessionId: null,
      data: {},
      createdAt: now,
      expiresAt: now + 60,
    });
    expect(await tokens.findMark('jti-1')).toMatchObject({ familyId: 'f-at' });
    await tokens.revokeJwt({ jti: 'jti-1', clientId: 'c', subjectId: 'u1', expiresAt: now + 60 }, now);
    expect(await tokens.findMark('jti-1')).toBe('revoked');
    expect(await tokens.isRevoked('jti-1')).toBe(true);

    expect(await tokens.findMark('jti-unknown')).toBeUndefined();
    await tokens.revokeJwt({ jti: 'jti-unknown', clientId: 'c', subjectId: 'u1', expiresAt: now + 60 }, now);
    expect(await store.grants.get(hashHandle('jti-unknown'))).toMatchObject({
      type: 'access_token',
      familyId: 'jti-unknown',
      revokedAt: now,
      data: {},
    });

    const reference = newHandle();
    const claims = { sub: 'u1', client_id: 'c', jti: 'jti-2' };
    await tokens.putReference(reference, {
      clientId: 'c',
      subjectId: 'u1',
      familyId: 'f-ref',
      sessionId: null,
      data: { claims },
      createdAt: now,
      expiresAt: now + 60,
    });
    expect((await tokens.findReference(reference, now))?.data.claims).toEqual(claims);
    expect(await tokens.findReference(reference, now + 60)).toBeUndefined();
    await tokens.revokeReference(reference, { jti: 'jti-2', clientId: 'c', subjectId: 'u1', expiresAt: now + 60 }, now);
    expect(await other.records.accessTokens.findReference(reference, now)).toBeUndefined();
  });
});
