import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashHandle, nowSeconds } from '../../src/crypto/handles.js';
import { type Interaction, Interactions } from '../../src/stores/records/interactions.js';
import { openStore } from '../../src/stores/sql.js';
import { newGrantRecord, type Store } from '../../src/stores/types.js';

describe('Interactions over the store', () => {
  let store: Store;
  beforeAll(async () => {
    store = await openStore('memory');
  });
  afterAll(async () => store.close());

  const interaction: Interaction = {
    request: {
      clientId: 'web',
      target: { redirectUri: 'https://app.example/cb', mode: 'query', state: 's' },
      scopes: ['openid'],
      tenant: null,
      acrValues: [],
    },
    params: {
      client_id: 'web',
      redirect_uri: 'https://app.example/cb',
      response_type: 'code',
      scope: 'openid',
      state: 's',
    },
    browser: 'b1',
  };

  it('keeps the validated request for its browser only, and answers once', async () => {
    const interactions = new Interactions(store.grants);
    const id = await interactions.create('web', interaction);
    expect(await interactions.get(id, 'b1')).toEqual(interaction);
    expect(await interactions.get(id, 'b2')).toBeUndefined();
    await interactions.update(id, { ...interaction, loginAt: 5 });
    expect((await interactions.get(id, 'b1'))?.loginAt).toBe(5);
    expect(await interactions.finish(id)).toBe(true);
    expect(await interactions.finish(id)).toBe(false);
    expect(await interactions.get(id, 'b1')).toBeUndefined();
  });

  it('treats a record stored before pending requests kept their validated request as expired', async () => {
    const now = nowSeconds();
    const { request: _request, ...old } = interaction;
    await store.grants.put(
      newGrantRecord({
        key: hashHandle('old-id'),
        type: 'interaction',
        clientId: 'web',
        data: { ...old },
        createdAt: now,
        expiresAt: now + 600,
      }),
    );
    expect(await new Interactions(store.grants).get('old-id', 'b1')).toBeUndefined();
  });
});
