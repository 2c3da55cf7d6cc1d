/**
 * Apple's client secret (federation/apple.ts): an ES256 JWT with the claims Apple's REST API asks
 * for, verified against the public part of the configured key, kept while far from its `exp` and
 * signed anew near it or when the settings change; the `user` field's name, and nothing else.
 */
import { generateKeyPairSync } from 'node:crypto';
import { decodeJwt, jwtVerify } from 'jose';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { resolveConfig } from '../../src/config/loader.js';
import { AppleClientSecrets, appleUserName } from '../../src/federation/apple.js';

const key = generateKeyPairSync('ec', { namedCurve: 'P-256' });
const provider = resolveConfig({
  identityProviders: [
    {
      name: 'apple',
      type: 'apple',
      clientId: 'com.example.sigil',
      teamId: 'TEAM123456',
      keyId: 'KEY7654321',
      privateKey: key.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
    },
  ],
}).identityProviders[0]!;

describe('Apple client secret', () => {
  afterEach(() => vi.useRealTimers());

  it('is an ES256 JWT of the team, for the client, to Apple, valid at most six months', async () => {
    const secret = await new AppleClientSecrets().secret(provider);
    const { payload, protectedHeader } = await jwtVerify(secret, key.publicKey, {
      algorithms: ['ES256'],
      issuer: 'TEAM123456',
      subject: 'com.example.sigil',
      audience: 'https://appleid.apple.com',
    });
    expect(protectedHeader).toEqual({ alg: 'ES256', kid: 'KEY7654321' });
    expect((payload.exp ?? 0) - (payload.iat ?? 0)).toBeGreaterThan(0);
    expect((payload.exp ?? 0) - (payload.iat ?? 0)).toBeLessThanOrEqual(15_777_000);
  });

  it('is kept while far from its exp, signed anew an hour before it, and when the settings change', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(new Date('2026-11-29T12:00:00Z'));
    const secrets = new AppleClientSecrets();
    const first = await secrets.secret(provider);
    vi.setSystemTime(new Date('2026-11-30T10:59:00Z'));
    expect(await secrets.secret(provider)).toBe(first);
    vi.setSystemTime(new Date('2026-11-30T11:00:01Z'));
    const renewed = await secrets.secret(provider);
    expect(renewed).not.toBe(first);
    expect(decodeJwt(renewed).exp).toBeGreaterThan(decodeJwt(first).exp ?? 0);
    const rekeyed = await secrets.secret({ ...provider, keyId: 'KEY0000000' });
    expect(decodeJwt(rekeyed).sub).toBe('com.example.sigil');
    expect(rekeyed).not.toBe(renewed);
  });
});

describe("Apple's user field", () => {
  it('gives the name only, and nothing for anything malformed or oversized', () => {
    expect(appleUserName('{"name":{"firstName":"Ada","lastName":"Lovelace"},"email":"evil@example.com"}')).toEqual({
      given_name: 'Ada',
      family_name: 'Lovelace',
      name: 'Ada Lovelace',
    });
    expect(appleUserName('{"name":{"firstName":"Ada"}}')).toEqual({ given_name: 'Ada', name: 'Ada' });
    for (const bad of [undefined, '', 'not json', 'null', '[]', '{"name":"Ada"}', '{"name":{"firstName":7}}'])
      expect(appleUserName(bad), String(bad)).toEqual({});
    expect(appleUserName(`{"name":{"firstName":"${'A'.repeat(3000)}"}}`)).toEqual({});
  });
});
