/**
 * A client moved from the config file into the store (docs/managing.md, "From the config file to run time":
 * remove it from the file and restart, then POST it to /admin/v1) keeps the tokens issued to it
 * before the move: its refresh token still refreshes and its JWT access token is still active at
 * introspection. Only a removal from the store (`client_removals`) ends an id's earlier tokens, and
 * not those of a config-file client of the id (a move back into the file); the record is pruned by
 * the clean-up once every token it could cover has expired. Real SQLite and PostgreSQL, two Sigil
 * instances one after the other on the same store.
 */
import pino from 'pino';
import { decodeJwt } from 'jose';
import { afterAll, describe, expect, it } from 'vitest';
import { createSigil } from '../../src/index.js';
import {
  dropSchema,
  introspect,
  passwordTokens,
  POSTGRES_URL,
  tempDir,
  testConfig,
  tokenRequest,
  uniqueSchema,
  type TestSigil,
  clientTokens,
} from '../helpers.js';

/** Waits (with a deadline) until the clock has left the second `t`. */
async function afterSecond(t: number): Promise<void> {
  const deadline = Date.now() + 5000;
  while (Math.floor(Date.now() / 1000) <= t) {
    if (Date.now() > deadline) throw new Error('the clock did not move on');
    await new Promise((r) => setTimeout(r, 50));
  }
}

const mover = {
  clientId: 'mover',
  allowedGrantTypes: ['password'],
  allowedScopes: ['openid', 'api1', 'offline_access'],
  allowOfflineAccess: true,
};
const automation = {
  clientId: 'automation',
  clientSecrets: ['automation-secret'],
  allowedGrantTypes: ['client_credentials'],
  allowedScopes: ['sigil:admin'],
};

describe.each(['sqlite', 'postgres'] as const)(
  'a client moved from the config file into the store on %s',
  (dialect) => {
    const schema = uniqueSchema('moved');
    const { dir, cleanup } = tempDir();
    const storage = dialect === 'postgres' ? `${POSTGRES_URL}?schema=${schema}` : `sqlite:${dir}/sigil.db`;
    const start = async (clients: unknown[]) =>
      (await createSigil(
        testConfig({ storage, clients: [...testConfig().clients!, automation, ...clients] as never }),
        { logger: pino({ level: 'silent' }) },
      )) as unknown as TestSigil;
    let sigil: TestSigil | undefined;

    afterAll(async () => {
      await sigil?.close();
      if (dialect === 'postgres') await dropSchema(schema);
      cleanup();
    });

    it('keeps the tokens issued to it in the config file, then prunes an expired removal record', async () => {
      // Before: the config file holds the client.
      sigil = await start([{ ...mover, clientSecrets: ['mover-secret'] }]);
      const old = await passwordTokens(sigil, {
        client: ['mover', 'mover-secret'],
        scope: 'openid api1 offline_access',
      });
      expect(old.refresh_token).toBeDefined();
      await sigil.close();
      sigil = undefined;

      // The move: restarted without it in the file, then created through /admin/v1 (a later second
      // than the tokens', so a rule on the stored client's creation time would refuse them).
      await afterSecond(Number(decodeJwt(old.access_token).iat));
      sigil = await start([]);
      const admin = (await clientTokens(sigil, 'sigil:admin', ['automation', 'automation-secret'])).access_token;
      const created = await sigil.app.inject({
        method: 'POST',
        url: '/admin/v1/clients',
        headers: { authorization: `Bearer ${admin}`, 'content-type': 'application/json' },
        payload: JSON.stringify(mover),
      });
      expect(created.statusCode, created.body).toBe(201);
      const secret = created.json<{ secret: string }>().secret;

      expect((await introspect(sigil, old.access_token)).json()).toMatchObject({ active: true, client_id: 'mover' });
      const refreshed = await tokenRequest(sigil, { grant_type: 'refresh_token', refresh_token: old.refresh_token! }, [
        'mover',
        secret,
      ]);
      expect(refreshed.statusCode, refreshed.body).toBe(200);

      // A removal record lives as long as the removed client's longest token lifetime, then the
      // clean-up deletes it.
      const { clients, maintenance } = sigil.context.store;
      const before = Math.floor(Date.now() / 1000);
      await clients.saveClient('short-lived', {
        clientId: 'short-lived',
        allowedGrantTypes: ['client_credentials'],
        clientSecrets: ['x'.repeat(40)],
        accessTokenLifetime: 60,
        identityTokenLifetime: 60,
        absoluteRefreshTokenLifetime: 120,
      });
      expect(await clients.removeClient('short-lived')).toBe(true);
      const removedBy = Math.floor(Date.now() / 1000);
      expect((await clients.listClientRemovals(before)).has('short-lived')).toBe(true);
      await maintenance.deleteExpired(before + 119, 1000);
      expect((await clients.listClientRemovals(before)).has('short-lived')).toBe(true);
      await maintenance.deleteExpired(removedBy + 121, 1000);
      expect((await clients.listClientRemovals(before)).has('short-lived')).toBe(false);
    });

    it("moved back into the config file, ending with sigil clients remove: the file's client keeps its tokens", async () => {
      // Runs after the test above, which left 'mover' in the store. docs/managing.md, 'From run time to the
      // config file': the file takes the client (and wins over the stored one), then the stored one
      // is removed, here through the service `sigil clients remove` uses.
      await sigil?.close();
      sigil = await start([{ ...mover, clientSecrets: ['mover-secret'] }]);
      // A JWT without a stored row (no offline_access): the removal revokes rows of the id
      // (`revokeIssuedTo`), which only the removal record could refuse otherwise.
      const tokens = await passwordTokens(sigil, { client: ['mover', 'mover-secret'], scope: 'openid api1' });
      await afterSecond(Number(decodeJwt(tokens.access_token).iat));
      await sigil.context.management.clients.delete('mover');
      await sigil.context.management.reloadClients();
      expect((await sigil.context.store.clients.listClientRemovals(Math.floor(Date.now() / 1000))).has('mover')).toBe(
        true,
      );
      expect((await introspect(sigil, tokens.access_token)).json()).toMatchObject({ active: true, client_id: 'mover' });
    });
  },
);
