/**
 * Validation of authorization requests (RFC 6749 §4.1.2.1): which errors are shown on the error
 * page, which go back to the client, and in which response mode.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestSigil } from '../helpers.js';
import {
  authorizeUrl,
  Browser,
  CB,
  codeParams,
  expectClientError,
  expectErrorPage,
  getCode,
  ISSUER,
  pkce,
  readResponse,
  redeem,
  startAuthorizeSigil,
  verifyIdToken,
} from '../authorize-helpers.js';

let sigil: TestSigil;
let anon: Browser;
let signedIn: Browser;
const { verifier, challenge } = pkce();

beforeAll(async () => {
  sigil = await startAuthorizeSigil([
    {
      clientId: 'implicitonly',
      clientSecrets: ['x'],
      allowedGrantTypes: ['implicit'],
      allowedScopes: ['openid', 'api1'],
      allowAccessTokensViaBrowser: true,
      redirectUris: [CB],
    },
    {
      clientId: 'disabled',
      enabled: false,
      clientSecrets: ['x'],
      allowedGrantTypes: ['authorization_code'],
      allowedScopes: ['openid'],
      redirectUris: [CB],
    },
  ]);
  anon = new Browser(sigil);
  signedIn = new Browser(sigil);
  await signedIn.signIn('alice');
});
afterAll(async () => sigil.close());

const web = (extra: Record<string, string> = {}) => codeParams(challenge, extra);
const hybrid = (extra: Record<string, string> = {}) => ({
  client_id: 'hybrid',
  redirect_uri: CB,
  response_type: 'code id_token',
  scope: 'openid api1',
  state: 'st',
  nonce: 'n',
  code_challenge: challenge,
  code_challenge_method: 'S256',
  ...extra,
});
const without = (params: Record<string, string>, ...names: string[]) => {
  const copy = { ...params };
  for (const n of names) delete copy[n];
  return copy;
};

describe('GET and POST', () => {
  it('the same request as a query and as a form body has the same outcome', async () => {
    const viaGet = readResponse(await signedIn.get(authorizeUrl(web())));
    const viaPost = readResponse(await signedIn.post('/connect/authorize', web()));
    expect(viaGet.target).toBe(CB);
    expect(viaPost.target).toBe(CB);
    expect(viaGet.params.get('code')).toBeTruthy();
    expect(viaPost.params.get('code')).toBeTruthy();
    expect(viaPost.params.get('state')).toBe('st');

    const anonGet = await anon.get(authorizeUrl(web()));
    const anonPost = await anon.post('/connect/authorize', web());
    expect(anonGet.status).toBe(303);
    expect(anonPost.status).toBe(303);
    expect(anonGet.location).toMatch(/^\/account\/login\?interaction=/);
    expect(anonPost.location).toMatch(/^\/account\/login\?interaction=/);
  });

  it('POST with another content type is 415, never 5xx; other methods are 405', async () => {
    const json = await sigil.app.inject({
      method: 'POST',
      url: '/connect/authorize',
      headers: { 'content-type': 'application/json' },
      payload: JSON.stringify(web()),
    });
    expect(json.statusCode).toBe(415);
    expect(json.headers.location).toBeUndefined();
    for (const method of ['PUT', 'DELETE'] as const) {
      const res = await sigil.app.inject({ method, url: authorizeUrl(web()) });
      expect(res.statusCode).toBe(405);
    }
  });
});

describe('client problems are never redirected', () => {
  it('missing client_id → error page invalid_request', async () => {
    expectErrorPage(await anon.get(authorizeUrl(without(web(), 'client_id'))), 'invalid_request');
  });

  it('unknown or disabled client → error page unauthorized_client', async () => {
    expectErrorPage(await anon.get(authorizeUrl(web({ client_id: 'nope' }))), 'unauthorized_client');
    expectErrorPage(await anon.get(authorizeUrl(web({ client_id: 'disabled' }))), 'unauthorized_client');
    expectErrorPage(await signedIn.get(authorizeUrl(web({ client_id: 'nope' }))), 'unauthorized_client');
  });

  it('a malformed query is an error page, not a 5xx', async () => {
    const res = await anon.get('/connect/authorize?client_id=web&redirect_uri=%E0%A4%A&scope=openid');
    expectErrorPage(res, 'invalid_request');
  });
});

describe('errors after client and redirect URI are known good go back to the client', () => {
  it('missing response_type → invalid_request in the query', async () => {
    expectClientError(await anon.get(authorizeUrl(without(web(), 'response_type'))), 'invalid_request', {
      state: 'st',
      mode: 'query',
      target: CB,
    });
  });

  it('unknown or malformed response_type → unsupported_response_type in the query', async () => {
    for (const rt of ['foo', 'code code', 'code  id_token', 'none', 'CODE']) {
      expectClientError(await anon.get(authorizeUrl(web({ response_type: rt }))), 'unsupported_response_type', {
        state: 'st',
        mode: 'query',
      });
    }
  });

  it('response_type not allowed by the client → unauthorized_client, no token', async () => {
    // web has authorization_code only: token needs implicit, code id_token needs hybrid.
    expectClientError(
      await signedIn.get(authorizeUrl(web({ response_type: 'token', scope: 'api1' }))),
      'unauthorized_client',
      { state: 'st', mode: 'fragment' },
    );
    expectClientError(await signedIn.get(authorizeUrl(web({ response_type: 'id_token' }))), 'unauthorized_client', {
      mode: 'fragment',
    });
    expectClientError(
      await signedIn.get(authorizeUrl(web({ response_type: 'code id_token' }))),
      'unauthorized_client',
      { mode: 'fragment' },
    );
    expectClientError(await signedIn.get(authorizeUrl(web({ response_type: 'code token' }))), 'unauthorized_client', {
      mode: 'fragment',
    });
    // implicit alone does not permit code or hybrid.
    const io = {
      client_id: 'implicitonly',
      redirect_uri: CB,
      scope: 'openid',
      nonce: 'n',
      state: 'st',
      code_challenge: challenge,
      code_challenge_method: 'S256',
    };
    expectClientError(await signedIn.get(authorizeUrl({ ...io, response_type: 'code' })), 'unauthorized_client', {
      mode: 'query',
    });
    expectClientError(
      await signedIn.get(authorizeUrl({ ...io, response_type: 'code id_token' })),
      'unauthorized_client',
      { mode: 'fragment' },
    );
    // ... but implicit response types work for it.
    const ok = readResponse(
      await signedIn.get(authorizeUrl({ ...io, response_type: 'id_token token', scope: 'openid api1' })),
    );
    expect(ok.mode).toBe('fragment');
    expect(ok.params.get('id_token')).toBeTruthy();
    expect(ok.params.get('access_token')).toBeTruthy();
  });

  it('hybrid also permits response_type=code', async () => {
    const r = readResponse(await signedIn.get(authorizeUrl(hybrid({ response_type: 'code' }))));
    expect(r.mode).toBe('query');
    expect(r.params.get('code')).toBeTruthy();
  });

  it('response_type parts may come in any order', async () => {
    const r = readResponse(await signedIn.get(authorizeUrl(hybrid({ response_type: 'token id_token code' }))));
    expect(r.mode).toBe('fragment');
    for (const name of ['code', 'id_token', 'access_token']) expect(r.params.get(name)).toBeTruthy();
  });

  it('unknown or not allowed scopes → invalid_scope; missing scope → invalid_request', async () => {
    expectClientError(await anon.get(authorizeUrl(web({ scope: 'openid admin' }))), 'invalid_scope', { state: 'st' });
    expectClientError(await anon.get(authorizeUrl(web({ scope: 'openid roles' }))), 'invalid_scope');
    expectClientError(await anon.get(authorizeUrl(web({ scope: 'openid api2' }))), 'invalid_scope');
    // offline_access without allowOfflineAccess.
    expectClientError(
      await anon.get(
        authorizeUrl(hybrid({ client_id: 'nobrowser', response_type: 'code', scope: 'openid offline_access' })),
      ),
      'invalid_scope',
    );
    // Identity scopes need openid.
    expectClientError(await anon.get(authorizeUrl(web({ scope: 'profile api1' }))), 'invalid_scope');
    expectClientError(await anon.get(authorizeUrl(without(web(), 'scope'))), 'invalid_request', { state: 'st' });
  });

  it('identity scopes only with id_token, resource scopes only with token', async () => {
    const h = (rt: string, scope: string) => signedIn.get(authorizeUrl(hybrid({ response_type: rt, scope })));
    expectClientError(await h('id_token', 'openid api1'), 'invalid_scope', { mode: 'fragment' });
    expectClientError(await h('token', 'openid api1'), 'invalid_scope', { mode: 'fragment' });
    expectClientError(await h('token', 'profile api1'), 'invalid_scope', { mode: 'fragment' });
    // An identity token needs the openid scope.
    expectClientError(await h('id_token', 'profile'), 'invalid_request', { mode: 'fragment' });
    expect(readResponse(await h('id_token', 'openid profile')).params.get('id_token')).toBeTruthy();
    expect(readResponse(await h('token', 'api1')).params.get('access_token')).toBeTruthy();
  });

  it('a repeated parameter → invalid_request to the client', async () => {
    const q = new URLSearchParams(web());
    expectClientError(await anon.get(`/connect/authorize?${q}&scope=openid`), 'invalid_request', { state: 'st' });
    expectClientError(await anon.get(`/connect/authorize?${q}&nonce=n-1`), 'invalid_request');
    expectClientError(await anon.get(`/connect/authorize?${q}&response_type=code`), 'invalid_request');
    // A repeated state is not echoed (which one would it be?).
    expectClientError(await anon.get(`/connect/authorize?${q}&state=other`), 'invalid_request', { state: null });
  });

  it('an empty parameter counts as absent', async () => {
    // nonce= on a code request: success, no nonce in the identity token.
    const code = await getCode(signedIn, web({ nonce: '' }));
    const res = await redeem(sigil, code, { verifier });
    expect(res.statusCode, res.body).toBe(200);
    const { claims } = await verifyIdToken(sigil, res.json().id_token, 'web');
    expect(claims).not.toHaveProperty('nonce');
    // code_challenge= on a PKCE-requiring client: missing challenge.
    expectClientError(await anon.get(authorizeUrl(web({ code_challenge: '' }))), 'invalid_request', { state: 'st' });
    // state= is not echoed.
    const r = readResponse(await signedIn.get(authorizeUrl(web({ state: '' }))));
    expect(r.params.has('state')).toBe(false);
    expect(r.params.get('code')).toBeTruthy();
  });

  it('unknown parameters are ignored', async () => {
    const r = readResponse(
      await signedIn.get(authorizeUrl(web({ foo: 'bar', extra: '1', display: 'popup', claims_locales: 'de' }))),
    );
    expect(r.params.get('code')).toBeTruthy();
    expect(r.params.has('foo')).toBe(false);
    expect(r.params.has('extra')).toBe(false);
  });

  it('nonce: optional for code, required whenever an identity token comes from this endpoint', async () => {
    expect(readResponse(await signedIn.get(authorizeUrl(without(web(), 'nonce')))).params.get('code')).toBeTruthy();
    for (const rt of ['code id_token', 'code id_token token', 'id_token', 'id_token token']) {
      expectClientError(
        await signedIn.get(
          authorizeUrl(
            without(hybrid({ response_type: rt, scope: rt === 'id_token' ? 'openid' : 'openid api1' }), 'nonce'),
          ),
        ),
        'invalid_request',
        {
          mode: 'fragment',
          state: 'st',
        },
      );
    }
    // No identity token from this endpoint: no nonce needed.
    for (const rt of ['code token', 'token']) {
      const r = readResponse(
        await signedIn.get(authorizeUrl(without(hybrid({ response_type: rt, scope: 'api1' }), 'nonce'))),
      );
      expect(r.params.get('access_token')).toBeTruthy();
    }
    // Over-long nonce.
    expectClientError(await anon.get(authorizeUrl(web({ nonce: 'n'.repeat(301) }))), 'invalid_request');
  });

  it('unsupported prompt values and prompt=none combined → invalid_request', async () => {
    expectClientError(await signedIn.get(authorizeUrl(web({ prompt: 'none login' }))), 'invalid_request', {
      state: 'st',
    });
    expectClientError(await signedIn.get(authorizeUrl(web({ prompt: 'none consent' }))), 'invalid_request');
    expectClientError(await signedIn.get(authorizeUrl(web({ prompt: 'foo' }))), 'invalid_request');
  });

  it('malformed max_age, login_hint, ui_locales, acr_values → invalid_request', async () => {
    for (const extra of [
      { max_age: '-1' },
      { max_age: 'abc' },
      { max_age: '1.5' },
      { login_hint: 'x'.repeat(101) },
      { ui_locales: 'x'.repeat(101) },
      { acr_values: 'x'.repeat(301) },
    ] as Record<string, string>[]) {
      expectClientError(await anon.get(authorizeUrl(web(extra))), 'invalid_request', { state: 'st' });
    }
  });

  it('an invalid id_token_hint → invalid_request', async () => {
    expectClientError(await signedIn.get(authorizeUrl(web({ id_token_hint: 'not-a-jwt' }))), 'invalid_request');
  });
});

describe('no reflection', () => {
  it('error_description stays within the RFC 6749 character set even when built from input', async () => {
    const r = expectClientError(
      await anon.get(authorizeUrl(web({ scope: 'openid "a\\b\u00e9\u{1F511}\t' }))),
      'invalid_scope',
    );
    expect(r.params.get('error_description')).toMatch(/^[\x20\x21\x23-\x5B\x5D-\x7E]+$/);
  });

  it('the error page never reflects raw input', async () => {
    const xss = '<script>alert(1)</script>';
    for (const params of [
      web({ client_id: xss }),
      web({ redirect_uri: `https://attacker.example/${xss}` }),
      web({ response_mode: xss }),
    ]) {
      const page = await anon.get(authorizeUrl(params));
      expect(page.status).toBe(400);
      expect(page.body).not.toContain('<script>');
      expect(page.body).not.toContain('attacker');
    }
  });
});

describe('response modes', () => {
  it('response_mode=foo → 400 error page, nothing sent to the client', async () => {
    for (const b of [anon, signedIn]) {
      const step = await b.get(authorizeUrl(web({ response_mode: 'foo' })));
      expectErrorPage(step, 'invalid_request');
    }
  });

  it('tokens never in a query: response_mode=query with an implicit or hybrid type → error in the fragment', async () => {
    for (const rt of ['code id_token', 'code token', 'code id_token token', 'id_token token', 'token', 'id_token']) {
      const step = await signedIn.get(
        authorizeUrl(
          hybrid({
            response_type: rt,
            response_mode: 'query',
            scope: rt === 'id_token' ? 'openid' : rt === 'token' || rt === 'code token' ? 'api1' : 'openid api1',
          }),
        ),
      );
      const r = expectClientError(step, 'invalid_request', { mode: 'fragment', state: 'st' });
      expect(new URL(r.location!).search).toBe('');
    }
  });

  it('response_mode=fragment and form_post for code; form_post for the others', async () => {
    const frag = readResponse(await signedIn.get(authorizeUrl(web({ response_mode: 'fragment' }))));
    expect(frag.mode).toBe('fragment');
    expect(frag.params.get('code')).toBeTruthy();
    expect(frag.params.get('iss')).toBe(ISSUER);
    const post = readResponse(await signedIn.get(authorizeUrl(web({ response_mode: 'form_post' }))));
    expect(post.mode).toBe('form_post');
    expect(post.params.get('code')).toBeTruthy();
    const hpost = readResponse(await signedIn.get(authorizeUrl(hybrid({ response_mode: 'form_post' }))));
    expect(hpost.mode).toBe('form_post');
    expect(hpost.params.get('id_token')).toBeTruthy();
  });

  it('errors travel in the response mode asked for', async () => {
    expectClientError(
      await anon.get(authorizeUrl(without(web({ response_mode: 'form_post' }), 'scope'))),
      'invalid_request',
      { mode: 'form_post', state: 'st', target: CB },
    );
    expectClientError(
      await anon.get(authorizeUrl(without(web({ response_mode: 'fragment' }), 'scope'))),
      'invalid_request',
      { mode: 'fragment', state: 'st' },
    );
    expectClientError(
      await anon.get(authorizeUrl(without(hybrid({ response_mode: 'form_post' }), 'nonce'))),
      'invalid_request',
      { mode: 'form_post' },
    );
    expectClientError(
      await anon.get(authorizeUrl(web({ response_mode: 'form_post', response_type: 'foo' }))),
      'unsupported_response_type',
      { mode: 'form_post' },
    );
  });
});
