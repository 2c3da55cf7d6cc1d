/**
 * PKCE (RFC 7636; RFC 9700 §2.1.1, §4.8):
 * S256 required, plain only where the client allows it, the verifier checked at redemption, and
 * a failed redemption leaves the code usable.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestSigil } from '../helpers.js';
import {
  authorizeUrl,
  Browser,
  codeParams,
  expectClientError,
  getCode,
  pkce,
  readResponse,
  redeem,
  startAuthorizeSigil,
} from '../authorize-helpers.js';

let sigil: TestSigil;
let b: Browser;

beforeAll(async () => {
  sigil = await startAuthorizeSigil();
  b = new Browser(sigil);
  await b.signIn('alice');
});
afterAll(async () => sigil.close());

const without = (params: Record<string, string>, ...names: string[]) => {
  const copy = { ...params };
  for (const n of names) delete copy[n];
  return copy;
};

describe('at the authorization endpoint', () => {
  const { challenge } = pkce();

  it('no code_challenge for a client that requires PKCE → invalid_request', async () => {
    expectClientError(
      await b.get(authorizeUrl(without(codeParams(challenge), 'code_challenge', 'code_challenge_method'))),
      'invalid_request',
      { state: 'st', mode: 'query' },
    );
    // A method without a challenge is still no challenge.
    expectClientError(await b.get(authorizeUrl(without(codeParams(challenge), 'code_challenge'))), 'invalid_request');
  });

  it('public clients need PKCE whatever requirePkce says', async () => {
    const spa = codeParams(challenge, {
      client_id: 'spa',
      redirect_uri: 'https://spa.example/cb',
      scope: 'openid api1',
    });
    expectClientError(
      await b.get(authorizeUrl(without(spa, 'code_challenge', 'code_challenge_method'))),
      'invalid_request',
    );
    expect(readResponse(await b.get(authorizeUrl(spa))).params.get('code')).toBeTruthy();
  });

  it('code_challenge_method=plain → invalid_request', async () => {
    expectClientError(
      await b.get(authorizeUrl(codeParams(challenge, { code_challenge_method: 'plain' }))),
      'invalid_request',
      { state: 'st' },
    );
  });

  it('a challenge without a method (plain by default) → invalid_request', async () => {
    expectClientError(
      await b.get(authorizeUrl(without(codeParams(challenge), 'code_challenge_method'))),
      'invalid_request',
    );
  });

  it('unknown methods → invalid_request', async () => {
    for (const m of ['S512', 's256', 'none'])
      expectClientError(
        await b.get(authorizeUrl(codeParams(challenge, { code_challenge_method: m }))),
        'invalid_request',
      );
  });

  it('malformed challenges → invalid_request', async () => {
    for (const c of [
      'a'.repeat(42),
      'a'.repeat(129),
      `${'a'.repeat(42)}+`,
      `${'a'.repeat(42)}=`,
      `${'a'.repeat(42)} `,
      `${'a'.repeat(42)}/`,
    ]) {
      expectClientError(await b.get(authorizeUrl(codeParams(c))), 'invalid_request', { state: 'st' });
    }
  });

  it('plain is accepted for a client that allows it, and a code without PKCE for a client that does not require it', async () => {
    const verifier = randomBytes(40).toString('base64url');
    const code = await getCode(b, codeParams(verifier, { client_id: 'plain', code_challenge_method: 'plain' }));
    const wrong = await redeem(sigil, code, { client: 'plain', verifier: randomBytes(40).toString('base64url') });
    expect(wrong.json().error).toBe('invalid_grant');
    const ok = await redeem(sigil, code, { client: 'plain', verifier });
    expect(ok.statusCode, ok.body).toBe(200);
    const legacy = await getCode(
      b,
      without(codeParams(verifier, { client_id: 'legacy' }), 'code_challenge', 'code_challenge_method'),
    );
    const res = await redeem(sigil, legacy, { client: 'legacy' });
    expect(res.statusCode, res.body).toBe(200);
  });
});

describe('at the token endpoint', () => {
  it('no code_verifier → invalid_grant; the code stays redeemable', async () => {
    const { verifier, challenge } = pkce();
    const code = await getCode(b, codeParams(challenge));
    const res = await redeem(sigil, code);
    expect(res.statusCode).toBe(400);
    expect(res.json().error).toBe('invalid_grant');
    expect(res.json()).not.toHaveProperty('access_token');
    expect((await redeem(sigil, code, { verifier })).statusCode).toBe(200);
  });

  it('a wrong verifier of valid syntax → invalid_grant; then the right one works', async () => {
    const { verifier, challenge } = pkce();
    const code = await getCode(b, codeParams(challenge));
    for (let i = 0; i < 3; i++)
      expect((await redeem(sigil, code, { verifier: pkce().verifier })).json().error).toBe('invalid_grant');
    // The challenge itself is not the verifier (that would be plain).
    expect((await redeem(sigil, code, { verifier: challenge })).json().error).toBe('invalid_grant');
    const ok = await redeem(sigil, code, { verifier });
    expect(ok.statusCode, ok.body).toBe(200);
  });

  it('verifiers outside the syntax never match, not even short random ones', async () => {
    const { verifier, challenge } = pkce();
    const code = await getCode(b, codeParams(challenge));
    const bad = [
      'a',
      'a'.repeat(42),
      'a'.repeat(129),
      `${verifier.slice(0, 60)} abc`,
      `${verifier.slice(0, 60)}+abc`,
      `${verifier}${'x'.repeat(80)}`,
    ];
    for (let i = 0; i < 50; i++)
      bad.push(
        randomBytes(4)
          .toString('base64url')
          .slice(0, 1 + (i % 5)),
      );
    for (const v of bad) {
      const res = await redeem(sigil, code, { verifier: v });
      expect(res.statusCode, v).toBe(400);
      expect(res.json().error).toBe('invalid_grant');
    }
    expect((await redeem(sigil, code, { verifier })).statusCode).toBe(200);
  });

  it('downgrade: a code issued without a challenge is refused with a verifier', async () => {
    const code = await getCode(
      b,
      without(codeParams('x', { client_id: 'legacy' }), 'code_challenge', 'code_challenge_method'),
    );
    const res = await redeem(sigil, code, { client: 'legacy', verifier: pkce().verifier });
    expect(res.statusCode).toBe(400);
    expect(res.json().error).toBe('invalid_grant');
  });

  it('swap: the verifier of flow A with the code of flow B → invalid_grant', async () => {
    const a = pkce();
    const bb = pkce();
    await getCode(b, codeParams(a.challenge));
    const codeB = await getCode(b, codeParams(bb.challenge));
    expect((await redeem(sigil, codeB, { verifier: a.verifier })).json().error).toBe('invalid_grant');
    expect((await redeem(sigil, codeB, { verifier: bb.verifier })).statusCode).toBe(200);
  });

  it('public client: PKCE is its only proof', async () => {
    const { verifier, challenge } = pkce();
    const code = await getCode(
      b,
      codeParams(challenge, { client_id: 'spa', redirect_uri: 'https://spa.example/cb', scope: 'openid api1' }),
    );
    const noVerifier = await redeem(sigil, code, {
      client: 'spa',
      secret: null,
      redirectUri: 'https://spa.example/cb',
    });
    expect(noVerifier.json().error).toBe('invalid_grant');
    const ok = await redeem(sigil, code, {
      client: 'spa',
      secret: null,
      redirectUri: 'https://spa.example/cb',
      verifier,
    });
    expect(ok.statusCode, ok.body).toBe(200);
  });
});
