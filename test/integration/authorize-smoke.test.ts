import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InjectBrowser } from '../browser-helpers.js';
import { basic, form, startSigil } from '../helpers.js';

const verifier = 'a'.repeat(20) + 'B'.repeat(23);
const challenge = createHash('sha256').update(verifier).digest('base64url');

describe('authorization code flow through the pages', () => {
  let sigil: Awaited<ReturnType<typeof startSigil>>;
  beforeAll(async () => {
    sigil = await startSigil({
      clients: [
        {
          clientId: 'web',
          clientSecrets: ['web-secret'],
          allowedGrantTypes: ['authorization_code'],
          allowedScopes: ['openid', 'profile', 'api1', 'offline_access'],
          allowOfflineAccess: true,
          redirectUris: ['https://rp.example/cb'],
          requireConsent: true,
        },
      ],
    });
  });
  afterAll(async () => sigil.close());

  it('signs in, consents, and redeems the code with PKCE', async () => {
    const b = new InjectBrowser(sigil.app);
    const q = new URLSearchParams({
      client_id: 'web',
      redirect_uri: 'https://rp.example/cb',
      response_type: 'code',
      scope: 'openid profile api1 offline_access',
      state: 'st',
      nonce: 'n1',
      code_challenge: challenge,
      code_challenge_method: 'S256',
    });
    const start = await b.get(`/connect/authorize?${q}`);
    expect(start.status).toBe(303);
    expect(start.location).toMatch(/^\/account\/login\?interaction=/);
    const consent = await b.login(start.location!, 'alice', 'alice');
    expect(consent.status).toBe(200);
    expect(consent.body).toContain('name="button" value="yes"');
    const answer = await b.post('/consent', {
      csrf_token: InjectBrowser.input(consent.body, 'csrf_token'),
      interaction: InjectBrowser.input(consent.body, 'interaction'),
      button: 'yes',
    });
    const done = await b.follow(answer);
    expect(done.status).toBe(303);
    const url = new URL(done.location!);
    expect(url.origin + url.pathname).toBe('https://rp.example/cb');
    expect(url.searchParams.get('state')).toBe('st');
    expect(url.searchParams.get('iss')).toBe('http://127.0.0.1:5999');
    const code = url.searchParams.get('code')!;
    const token = await sigil.app.inject({
      method: 'POST',
      url: '/connect/token',
      headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: basic('web', 'web-secret') },
      payload: form({
        grant_type: 'authorization_code',
        code,
        redirect_uri: 'https://rp.example/cb',
        code_verifier: verifier,
      }),
    });
    expect(token.statusCode).toBe(200);
    const body = token.json();
    expect(body.id_token).toBeTypeOf('string');
    expect(body.refresh_token).toBeTypeOf('string');
    const replay = await sigil.app.inject({
      method: 'POST',
      url: '/connect/token',
      headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: basic('web', 'web-secret') },
      payload: form({
        grant_type: 'authorization_code',
        code,
        redirect_uri: 'https://rp.example/cb',
        code_verifier: verifier,
      }),
    });
    expect(replay.json().error).toBe('invalid_grant');
  });
});
