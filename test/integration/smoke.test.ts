import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { basic, form, startSigil } from '../helpers.js';

describe('token endpoint smoke', () => {
  let sigil: Awaited<ReturnType<typeof startSigil>>;
  beforeAll(async () => {
    sigil = await startSigil();
  });
  afterAll(async () => sigil.close());

  it('issues a client_credentials token', async () => {
    const res = await sigil.app.inject({
      method: 'POST',
      url: '/connect/token',
      headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: basic('m2m', 'm2m-secret') },
      payload: form({ grant_type: 'client_credentials', scope: 'api1' }),
    });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ token_type: 'Bearer', expires_in: 3600, scope: 'api1' });
    expect(res.headers['cache-control']).toBe('no-store');
  });
});
