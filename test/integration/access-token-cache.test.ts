/**
 * The access-token lookup cache (config `accessTokenCache`): two providers on one SQLite file, as
 * two nodes. A revocation is seen at once by the node that made it and, on the other node, once
 * the configured bound has passed; the test waits exactly that bound, no longer.
 */
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSigil } from '../../src/index.js';
import {
  type BasicCredentials,
  clientTokens,
  introspect,
  passwordTokens,
  postForm,
  sleep,
  type TestSigil,
  tempDir,
  testConfig,
  userinfo,
} from '../helpers.js';

const BOUND_MS = 250;
const dir = tempDir();
let a: TestSigil;
let b: TestSigil;

async function node(): Promise<TestSigil> {
  const sigil = await createSigil(
    testConfig({
      storage: `sqlite:${join(dir.dir, 'shared.db')}`,
      accessTokenCache: { maxAgeMilliseconds: BOUND_MS, maxEntries: 100 },
    }),
    { logger: pino({ level: 'silent' }) },
  );
  return { ...sigil, dir: dir.dir };
}

beforeAll(async () => {
  a = await node();
  b = await node();
});
afterAll(async () => {
  await b.close();
  await a.close();
  dir.cleanup();
});

const active = async (sigil: TestSigil, token: string) =>
  (await introspect(sigil, token)).json<{ active: boolean }>().active;
const revoke = (sigil: TestSigil, token: string, client: BasicCredentials) =>
  postForm(sigil, '/connect/revocation', { token }, client);

describe('access-token lookup cache across two nodes', () => {
  it('a revoked reference token is inactive at once on the revoking node, and on the other within the bound', async () => {
    const { access_token: token } = await clientTokens(a, 'api1', ['m2m-ref', 'm2m-secret']);
    expect(await active(a, token)).toBe(true);
    expect(await active(b, token)).toBe(true);
    expect((await revoke(a, token, ['m2m-ref', 'm2m-secret'])).statusCode).toBe(200);
    expect(await active(a, token)).toBe(false);
    await sleep(BOUND_MS + 5); // a timer may fire a millisecond early
    expect(await active(b, token)).toBe(false);
    expect(await active(a, token)).toBe(false);
  });

  it('revoking a refresh token ends its family: its JWT access token is refused at once here (introspection, userinfo) and on the other node within the bound', async () => {
    const tokens = await passwordTokens(b, { scope: 'openid api1 offline_access' });
    expect(await active(a, tokens.access_token)).toBe(true);
    expect((await userinfo(b, tokens.access_token)).statusCode).toBe(200);
    expect((await revoke(b, tokens.refresh_token!, ['ropc', 'ropc-secret'])).statusCode).toBe(200);
    expect(await active(b, tokens.access_token)).toBe(false);
    expect((await userinfo(b, tokens.access_token)).statusCode).toBe(401);
    await sleep(BOUND_MS + 5); // a timer may fire a millisecond early
    expect(await active(a, tokens.access_token)).toBe(false);
  });

  it('with maxAgeMilliseconds 0 every lookup reads the store: a revocation on one node is seen at once on the other', async () => {
    const sigil = await createSigil(
      testConfig({
        storage: `sqlite:${join(dir.dir, 'shared.db')}`,
        accessTokenCache: { maxAgeMilliseconds: 0, maxEntries: 1 },
      }),
      {
        logger: pino({ level: 'silent' }),
      },
    );
    try {
      const { access_token: token } = await clientTokens(a, 'api1', ['m2m-ref', 'm2m-secret']);
      expect(await active({ ...sigil, dir: dir.dir }, token)).toBe(true);
      expect((await revoke(a, token, ['m2m-ref', 'm2m-secret'])).statusCode).toBe(200);
      expect(await active({ ...sigil, dir: dir.dir }, token)).toBe(false);
    } finally {
      await sigil.close();
    }
  });

  it('refuses an invalid accessTokenCache, naming the field', async () => {
    await expect(
      createSigil(testConfig({ accessTokenCache: { maxAgeMilliseconds: -1, maxEntries: 10 } })),
    ).rejects.toThrow(/accessTokenCache\.maxAgeMilliseconds/);
  });
});
