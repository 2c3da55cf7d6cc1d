/**
 * Request objects (RFC 9101; OIDC Core §6):
 * HS256 with the client's secret or a key of its `jwks`; everything else refused; request_uri
 * only from registered https URIs, never fetched otherwise.
 */
import { createServer, type Server } from 'node:net';
import { CompactSign, exportJWK, generateKeyPair, SignJWT, type JWK } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pino } from 'pino';
import { createSigil } from '../../src/index.js';
import { testConfig, type TestSigil } from '../helpers.js';
import {
  authorizeUrl,
  Browser,
  CB,
  expectClientError,
  expectErrorPage,
  ISSUER,
  pkce,
  readResponse,
  redeem,
  startAuthorizeSigil,
  verifyIdToken,
} from '../authorize-helpers.js';

const SECRET = 'jar-secret-with-at-least-thirty-two-bytes-of-entropy';
const secretKey = new TextEncoder().encode(SECRET);
const { verifier, challenge } = pkce();

let sigil: TestSigil;
let b: Browser;
let clientKey: CryptoKey;
let strangerKey: CryptoKey;
let listener: Server;
let listenerPort = 0;
let connections = 0;

beforeAll(async () => {
  const pair = await generateKeyPair('ES256');
  clientKey = pair.privateKey;
  strangerKey = (await generateKeyPair('ES256')).privateKey;
  const jwk: JWK = { ...(await exportJWK(pair.publicKey)), kid: 'k1', alg: 'ES256', use: 'sig' };
  listener = createServer((socket) => {
    connections++;
    socket.destroy();
  });
  await new Promise<void>((ok) => listener.listen(0, '127.0.0.1', ok));
  listenerPort = (listener.address() as { port: number }).port;
  const jarClient = {
    clientSecrets: [SECRET],
    allowedGrantTypes: ['authorization_code'],
    allowedScopes: ['openid', 'profile', 'api1'],
    redirectUris: [CB, 'https://rp.example/other'],
  };
  sigil = await startAuthorizeSigil([
    { clientId: 'jar', jwks: { keys: [jwk as Record<string, unknown>] }, ...jarClient },
    { clientId: 'jaruri', requestUris: [`https://127.0.0.1:${listenerPort}/ro.jwt`], ...jarClient },
  ]);
  b = new Browser(sigil);
  await b.signIn('alice');
});
afterAll(async () => {
  await sigil.close();
  await new Promise((r) => listener.close(r));
});

/** The authorization parameters inside a request object. */
const inner = (extra: Record<string, unknown> = {}) => ({
  client_id: 'jar',
  redirect_uri: CB,
  response_type: 'code',
  scope: 'openid api1',
  state: 'inner-state',
  nonce: 'inner-nonce',
  code_challenge: challenge,
  code_challenge_method: 'S256',
  ...extra,
});

async function hs256(
  payload: Record<string, unknown>,
  opts: { aud?: string | null; exp?: number | null; iss?: string; nbf?: number; key?: Uint8Array } = {},
): Promise<string> {
  let jwt = new SignJWT(payload)
    .setProtectedHeader({ alg: 'HS256', typ: 'oauth-authz-req+jwt' })
    .setIssuedAt()
    .setIssuer(opts.iss ?? 'jar');
  if (opts.aud !== null) jwt = jwt.setAudience(opts.aud ?? ISSUER);
  if (opts.exp !== null) jwt = jwt.setExpirationTime(opts.exp ?? Math.floor(Date.now() / 1000) + 120);
  if (opts.nbf !== undefined) jwt = jwt.setNotBefore(opts.nbf);
  return jwt.sign(opts.key ?? secretKey);
}

async function es256(payload: Record<string, unknown>, key: CryptoKey, kid = 'k1'): Promise<string> {
  return new SignJWT(payload)
    .setProtectedHeader({ alg: 'ES256', kid })
    .setIssuedAt()
    .setIssuer('jar')
    .setAudience(ISSUER)
    .setExpirationTime('2m')
    .sign(key);
}

/** Outer (query) parameters: client_id plus a registered redirect target for errors. */
const outer = (extra: Record<string, string>) => ({
  client_id: 'jar',
  redirect_uri: CB,
  response_type: 'code',
  scope: 'openid',
  state: 'outer-state',
  ...extra,
});

describe('request by value', () => {
  it('an HS256 request object signed with the client secret works; only its parameters count', async () => {
    const jwt = await hs256(inner());
    const r = readResponse(
      await b.get(
        authorizeUrl({
          client_id: 'jar',
          response_type: 'code',
          request: jwt,
          state: 'outer-state',
          scope: 'openid profile',
        }),
      ),
    );
    expect(r.target).toBe(CB);
    expect(r.params.get('state')).toBe('inner-state');
    expect(r.params.get('iss')).toBe(ISSUER);
    const res = await redeem(sigil, r.params.get('code')!, { client: 'jar', secret: SECRET, verifier });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().scope).toBe('openid api1');
    expect((await verifyIdToken(sigil, res.json().id_token, 'jar')).claims.nonce).toBe('inner-nonce');
  });

  it('an ES256 request object signed with a key of the client jwks works', async () => {
    const r = readResponse(await b.get(authorizeUrl({ client_id: 'jar', request: await es256(inner(), clientKey) })));
    expect(r.params.get('code')).toBeTruthy();
    expect(r.params.get('state')).toBe('inner-state');
  });

  it('the request object survives the login page', async () => {
    const anon = new Browser(sigil);
    const done = await anon.authorize(
      { client_id: 'jar', request: await hs256(inner({ state: 'after-login' })) },
      { user: 'bob' },
    );
    const r = readResponse(done);
    expect(r.params.get('state')).toBe('after-login');
    expect(r.params.get('code')).toBeTruthy();
  });

  it('state only outside the request object is not echoed; redirect_uri only outside counts as missing', async () => {
    const noState = await hs256(inner({ state: undefined }));
    const r = readResponse(await b.get(authorizeUrl({ client_id: 'jar', request: noState, state: 'outer-state' })));
    expect(r.params.has('state')).toBe(false);
    const noRedirect = await hs256(inner({ redirect_uri: undefined }));
    expectErrorPage(
      await b.get(authorizeUrl({ client_id: 'jar', request: noRedirect, redirect_uri: CB })),
      'invalid_request',
    );
    // The object's redirect_uri wins over the query's and must itself be registered.
    const other = readResponse(
      await b.get(
        authorizeUrl({
          client_id: 'jar',
          request: await hs256(inner({ redirect_uri: 'https://rp.example/other' })),
          redirect_uri: CB,
        }),
      ),
    );
    expect(other.target).toBe('https://rp.example/other');
    expectErrorPage(
      await b.get(
        authorizeUrl({
          client_id: 'jar',
          request: await hs256(inner({ redirect_uri: 'https://attacker.example/cb' })),
          redirect_uri: CB,
        }),
      ),
      'invalid_request',
    );
  });

  it('alg none → invalid_request_object', async () => {
    const enc = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64url');
    const now = Math.floor(Date.now() / 1000);
    const none = `${enc({ alg: 'none' })}.${enc({ ...inner(), iss: 'jar', aud: ISSUER, exp: now + 60 })}.`;
    expectClientError(await b.get(authorizeUrl(outer({ request: none }))), 'invalid_request_object', {
      state: 'outer-state',
      target: CB,
    });
  });

  it('bad signature, a stranger key, an unknown kid, another secret → invalid_request_object', async () => {
    const good = await hs256(inner());
    const [h, p, s] = good.split('.') as [string, string, string];
    const tampered = `${h}.${Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(p, 'base64url').toString()), scope: 'openid profile' })).toString('base64url')}.${s}`;
    for (const jwt of [
      `${h}.${p}.${s.slice(0, -3)}AAA`,
      tampered,
      await es256(inner(), strangerKey),
      await es256(inner(), strangerKey, 'unknown'),
      await hs256(inner(), { key: new TextEncoder().encode('another-secret-another-secret-another-secret') }),
      'not.a.jwt',
      'garbage',
    ]) {
      expectClientError(await b.get(authorizeUrl(outer({ request: jwt }))), 'invalid_request_object', {
        state: 'outer-state',
      });
    }
  });

  it('wrong aud, no aud, no exp, expired, nbf far in the future → invalid_request_object; nbf +8 s is fine', async () => {
    const now = Math.floor(Date.now() / 1000);
    for (const jwt of [
      await hs256(inner(), { aud: 'https://other.example' }),
      await hs256(inner(), { aud: `${ISSUER}/connect/token` }),
      await hs256(inner(), { aud: null }),
      await hs256(inner(), { exp: null }),
      await hs256(inner(), { exp: now - 600 }),
      await hs256(inner(), { nbf: now + 600 }),
    ]) {
      expectClientError(await b.get(authorizeUrl(outer({ request: jwt }))), 'invalid_request_object', {
        state: 'outer-state',
      });
    }
    const soon = await hs256(inner(), { nbf: now + 8 });
    expect(
      readResponse(await b.get(authorizeUrl({ client_id: 'jar', request: soon }))).params.get('code'),
    ).toBeTruthy();
  });

  it('nested request or request_uri claims → invalid_request_object', async () => {
    const nested = await hs256(inner());
    for (const extra of [{ request: nested }, { request_uri: 'https://rp.example/ro' }]) {
      expectClientError(
        await b.get(authorizeUrl(outer({ request: await hs256(inner(extra)) }))),
        'invalid_request_object',
      );
    }
  });

  it('client_id inside differs from the query, or is missing → invalid_request; iss of another client → invalid_request_object', async () => {
    expectClientError(
      await b.get(authorizeUrl(outer({ request: await hs256(inner({ client_id: 'web' })) }))),
      'invalid_request',
      { state: 'outer-state' },
    );
    expectClientError(
      await b.get(authorizeUrl(outer({ request: await hs256(inner({ client_id: undefined })) }))),
      'invalid_request',
    );
    expectClientError(
      await b.get(authorizeUrl(outer({ request: await hs256(inner(), { iss: 'web' }) }))),
      'invalid_request_object',
    );
  });

  it('a response_type in the query that differs from the object → invalid_request', async () => {
    expectClientError(
      await b.get(authorizeUrl(outer({ response_type: 'token', request: await hs256(inner()) }))),
      'invalid_request',
    );
  });

  it('errors inside a valid object go to the object redirect URI with its state', async () => {
    const jwt = await hs256(inner({ scope: 'openid admin', redirect_uri: 'https://rp.example/other' }));
    expectClientError(await b.get(authorizeUrl(outer({ request: jwt }))), 'invalid_scope', {
      state: 'inner-state',
      target: 'https://rp.example/other',
    });
  });

  it('a refused object is answered in the response mode asked for outside', async () => {
    expectClientError(
      await b.get(authorizeUrl(outer({ request: 'garbage', response_mode: 'form_post' }))),
      'invalid_request_object',
      { mode: 'form_post', state: 'outer-state' },
    );
    expectClientError(
      await b.get(authorizeUrl(outer({ request: 'garbage', response_mode: 'fragment' }))),
      'invalid_request_object',
      { mode: 'fragment' },
    );
    // Never in the query for a response type that returns tokens.
    expectClientError(
      await b.get(authorizeUrl(outer({ request: 'garbage', response_type: 'code id_token', response_mode: 'query' }))),
      'invalid_request_object',
      { mode: 'fragment' },
    );
  });

  it('without a registered redirect URI outside, a bad object gives the error page', async () => {
    expectErrorPage(await b.get(authorizeUrl({ client_id: 'jar', request: 'garbage' })), 'invalid_request_object');
  });

  it('an oversized request object → invalid_request_object, no 5xx', async () => {
    const big = await hs256(inner({ pad: 'x'.repeat(40_000) }));
    expect(big.length).toBeGreaterThan(51_200);
    const step = await b.post('/connect/authorize', outer({ request: big }));
    expectClientError(step, 'invalid_request_object');
  });

  it('a request object whose claims nest thousands of levels deep → invalid_request_object, no 5xx', async () => {
    // Signed and valid except for its shape: 5,000 nested arrays in `claims`. The payload is
    // written as text (no library walks it on the way out), then signed as bytes.
    const now = Math.floor(Date.now() / 1000);
    const claims = { ...inner(), iss: 'jar', aud: ISSUER, iat: now, exp: now + 120 };
    const text = JSON.stringify(claims).replace(
      /\}$/,
      `,"claims":{"userinfo":${'['.repeat(5_000)}"x"${']'.repeat(5_000)}}}`,
    );
    const jwt = await new CompactSign(new TextEncoder().encode(text))
      .setProtectedHeader({ alg: 'HS256' })
      .sign(secretKey);
    expect(jwt.length).toBeLessThan(51_200);
    for (const step of [
      await b.post('/connect/authorize', outer({ request: jwt })),
      await b.get(authorizeUrl(outer({ request: jwt }))),
    ]) {
      expectClientError(step, 'invalid_request_object', { state: 'outer-state' });
    }
    // Deep, but within the bound: a real `claims` request still works.
    const fine = await hs256(inner({ claims: { userinfo: { name: { essential: true } } } }));
    expect(
      readResponse(await b.get(authorizeUrl({ client_id: 'jar', request: fine }))).params.get('code'),
    ).toBeTruthy();
  });
});

describe('request by reference', () => {
  it('request and request_uri together → invalid_request', async () => {
    const step = await b.get(
      authorizeUrl(outer({ request: await hs256(inner()), request_uri: `https://127.0.0.1:${listenerPort}/ro.jwt` })),
    );
    expectClientError(step, 'invalid_request', { state: 'outer-state' });
    expect(connections).toBe(0);
  });

  it('request_uri for a client without requestUris → request_uri_not_supported, and no outbound connection', async () => {
    for (const uri of [
      `http://127.0.0.1:${listenerPort}/ro.jwt`,
      `https://127.0.0.1:${listenerPort}/ro.jwt`,
      'http://169.254.169.254/latest/meta-data/',
      'file:///etc/passwd',
    ]) {
      expectClientError(await b.get(authorizeUrl(outer({ request_uri: uri }))), 'request_uri_not_supported', {
        state: 'outer-state',
      });
    }
    expect(connections).toBe(0);
  });

  it('an unregistered request_uri → invalid_request_uri, and no outbound connection', async () => {
    const jaruri = (uri: string) => ({ ...outer({ request_uri: uri }), client_id: 'jaruri' });
    for (const uri of [
      `http://127.0.0.1:${listenerPort}/ro.jwt`,
      `https://127.0.0.1:${listenerPort}/ro.jwt?x=1`,
      `https://127.0.0.1:${listenerPort}/other.jwt`,
      'http://169.254.169.254/',
      'file:///etc/passwd',
    ]) {
      expectClientError(await b.get(authorizeUrl(jaruri(uri))), 'invalid_request_uri', { state: 'outer-state' });
    }
    expect(connections).toBe(0);
  });

  it('a registered request_uri that cannot be fetched → invalid_request_uri, no 5xx', async () => {
    const step = await b.get(
      authorizeUrl({ ...outer({ request_uri: `https://127.0.0.1:${listenerPort}/ro.jwt` }), client_id: 'jaruri' }),
    );
    expectClientError(step, 'invalid_request_uri');
  });
});

describe('configuration', () => {
  it('only https request URIs can be registered', async () => {
    const bad = {
      clientId: 'bad',
      clientSecrets: ['x'],
      allowedGrantTypes: ['authorization_code'],
      redirectUris: [CB],
      requestUris: ['http://rp.example/ro.jwt'],
    };
    await expect(
      createSigil(testConfig({ storage: 'memory', clients: [bad] }), { logger: pino({ level: 'silent' }) }),
    ).rejects.toThrow(/requestUris/);
  });
});
