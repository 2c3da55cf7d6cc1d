/**
 * Client authentication with signed JWTs (RFC 7523 §2.2, §3; RFC 7521 §4.2; OIDC Core §9):
 * `private_key_jwt` with keys from `jwks` or a `jwksUri`, `client_secret_jwt`, every check of the
 * assertion, at every endpoint that authenticates clients, through the failure limiter.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import fc from 'fast-check';
import { base64url, SignJWT } from 'jose';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { createSigil, ConfigError } from '../../src/index.js';
import { assertionFields, clientKey, type ClientKey, JWT_BEARER, signAssertion } from '../assertion-helpers.js';
import { expectNoLeak, postForm, startSigil, testConfig, type TestSigil } from '../helpers.js';

const ISSUER = 'http://127.0.0.1:5999';
const TOKEN_URL = `${ISSUER}/connect/token`;
const CC = { grant_type: 'client_credentials', scope: 'api1' };
const CS_SECRET = 'csjwt-secret-0123456789abcdef0123456789';

let es: ClientKey;
let rs: ClientKey;
let stranger: ClientKey;

beforeAll(async () => {
  es = await clientKey('ES256', 'es-1');
  rs = await clientKey('RS256', 'rs-1');
  stranger = await clientKey('ES256', 'es-1');
});

/** The clients of this suite; `jwksUri` points at a test server when given. */
function clients(jwksUri?: string) {
  const base = {
    allowedGrantTypes: ['client_credentials', 'urn:ietf:params:oauth:grant-type:device_code'],
    allowedScopes: ['api1'],
  };
  return [
    ...(testConfig().clients ?? []),
    {
      clientId: 'pk',
      ...base,
      jwks: { keys: [es.publicJwk, rs.publicJwk] },
      tokenEndpointAuthMethod: 'private_key_jwt' as const,
      tokenEndpointAuthSigningAlgorithms: ['ES256' as const, 'PS256' as const],
    },
    { clientId: 'cs', ...base, clientSecrets: [CS_SECRET], tokenEndpointAuthMethod: 'client_secret_jwt' as const },
    ...(jwksUri
      ? [
          { clientId: 'remote', ...base, jwksUri, tokenEndpointAuthMethod: 'private_key_jwt' as const },
          {
            clientId: 'remote-web',
            jwksUri,
            allowedGrantTypes: ['authorization_code'],
            allowedScopes: ['openid'],
            redirectUris: ['https://rp.example/cb'],
          },
        ]
      : []),
  ];
}

describe('client assertions at the token endpoint', () => {
  let sigil: TestSigil;
  beforeAll(async () => {
    sigil = await startSigil({ clients: clients(), rateLimits: { maxFailures: 1000, windowSeconds: 60 } });
  });
  afterAll(async () => sigil.close());

  const token = (fields: Record<string, string>) => postForm(sigil, '/connect/token', { ...CC, ...fields });
  const expectRefused = async (fields: Record<string, string>, description?: RegExp) => {
    const res = await token(fields);
    expect(res.statusCode, res.body).toBe(401);
    expect(res.json().error).toBe('invalid_client');
    if (description) expect(res.json().error_description).toMatch(description);
  };

  it('accepts private_key_jwt with aud = the issuer or the token endpoint URL, client_id optional', async () => {
    for (const aud of [ISSUER, TOKEN_URL, [TOKEN_URL, 'https://elsewhere.example']]) {
      const res = await token(assertionFields(await signAssertion(es, 'pk', aud)));
      expect(res.statusCode, res.body).toBe(200);
      expect(res.json()).toMatchObject({ token_type: 'Bearer', scope: 'api1' });
    }
    const withId = await token(assertionFields(await signAssertion(es, 'pk', ISSUER), 'pk'));
    expect(withId.statusCode).toBe(200);
  });

  it('accepts client_secret_jwt (HS256 over the clear-text secret), also for a client not pinned to it', async () => {
    expect((await token(assertionFields(await signAssertion(CS_SECRET, 'cs', ISSUER)))).statusCode).toBe(200);
    expect((await token(assertionFields(await signAssertion('m2m-secret', 'm2m', ISSUER)))).statusCode).toBe(200);
    await expectRefused(assertionFields(await signAssertion('wrong-secret', 'cs', ISSUER)), /signature/);
  });

  it('refuses a wrong aud', async () => {
    await expectRefused(assertionFields(await signAssertion(es, 'pk', 'https://other.example')), /aud/);
    await expectRefused(assertionFields(await signAssertion(es, 'pk', `${ISSUER}/connect/userinfo`)), /aud/);
    // An explicitly typed assertion (rfc7523bis) must name the issuer alone.
    const typed = { typ: 'client-authentication+jwt' };
    await expectRefused(assertionFields(await signAssertion(es, 'pk', TOKEN_URL, {}, typed)), /issuer alone/);
    expect((await token(assertionFields(await signAssertion(es, 'pk', [ISSUER], {}, typed)))).statusCode).toBe(200);
  });

  it('refuses an assertion without sub, or with iss or sub other than the client', async () => {
    // Without client_id nothing names the client; with it, the missing sub is the refusal.
    await expectRefused(assertionFields(await signAssertion(es, 'pk', ISSUER, { sub: undefined })), /sub/);
    await expectRefused(assertionFields(await signAssertion(es, 'pk', ISSUER, { sub: undefined }), 'pk'), /sub/);
    await expectRefused(assertionFields(await signAssertion(es, 'pk', ISSUER, { iss: 'm2m' })), /iss/);
    await expectRefused(assertionFields(await signAssertion(es, 'pk', ISSUER, { sub: 'm2m' }), 'pk'), /sub/);
    await expectRefused(assertionFields(await signAssertion(es, 'pk', ISSUER, { iss: undefined })), /iss/);
  });

  it('refuses an expired assertion, one without exp, and one living longer than 5 minutes', async () => {
    const now = Math.floor(Date.now() / 1000);
    await expectRefused(
      assertionFields(await signAssertion(es, 'pk', ISSUER, { iat: now - 600, exp: now - 120 })),
      /expired/,
    );
    await expectRefused(assertionFields(await signAssertion(es, 'pk', ISSUER, { exp: undefined })), /exp/);
    await expectRefused(
      assertionFields(await signAssertion(es, 'pk', ISSUER, { exp: now + 600 })),
      /exp is more than 300 seconds/,
    );
  });

  it('refuses nbf or iat in the future', async () => {
    const now = Math.floor(Date.now() / 1000);
    await expectRefused(assertionFields(await signAssertion(es, 'pk', ISSUER, { nbf: now + 120 })), /nbf/);
    await expectRefused(assertionFields(await signAssertion(es, 'pk', ISSUER, { iat: now + 120 })), /iat/);
  });

  it('accepts a jti once: the replay is refused', async () => {
    const assertion = await signAssertion(es, 'pk', ISSUER);
    expect((await token(assertionFields(assertion))).statusCode).toBe(200);
    await expectRefused(assertionFields(assertion), /used before/);
    await expectRefused(assertionFields(await signAssertion(es, 'pk', ISSUER, { jti: undefined })), /jti/);
  });

  it('refuses an algorithm the client does not allow, alg none, and a key it did not register', async () => {
    // RS256 with a registered RSA key, but the client allows ES256 and PS256 only.
    await expectRefused(assertionFields(await signAssertion(rs, 'pk', ISSUER)), /algorithm/);
    const now = Math.floor(Date.now() / 1000);
    const unsigned = [
      base64url.encode(JSON.stringify({ alg: 'none' })),
      base64url.encode(JSON.stringify({ iss: 'pk', sub: 'pk', aud: ISSUER, jti: 'n-1', exp: now + 60 })),
      '',
    ].join('.');
    await expectRefused(assertionFields(unsigned));
    // Same kid, other key: the signature does not verify.
    await expectRefused(assertionFields(await signAssertion(stranger, 'pk', ISSUER)), /signature/);
  });

  it('holds a client to its tokenEndpointAuthMethod', async () => {
    const res = await postForm(sigil, '/connect/token', CC, ['cs', CS_SECRET]);
    expect(res.statusCode).toBe(401);
    expect(res.json().error_description).toMatch(/client_secret_jwt/);
    // A private_key_jwt client presenting an HS256 assertion is using client_secret_jwt.
    await expectRefused(assertionFields(await signAssertion('anything', 'pk', ISSUER)), /private_key_jwt/);
  });

  it('refuses mixing methods, a missing or unknown assertion type, and an assertion in the query', async () => {
    const assertion = await signAssertion(es, 'pk', ISSUER);
    const both = await postForm(sigil, '/connect/token', { ...CC, ...assertionFields(assertion) }, [
      'm2m',
      'm2m-secret',
    ]);
    expect(both.json().error).toBe('invalid_request');
    expect((await token({ client_assertion: assertion })).json().error).toBe('invalid_request');
    expect((await token({ client_assertion_type: 'urn:example:saml', client_assertion: assertion })).json().error).toBe(
      'invalid_request',
    );
    const inQuery = await sigil.app.inject({
      method: 'POST',
      url: `/connect/token?client_assertion=${assertion}`,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: new URLSearchParams({
        ...CC,
        client_assertion_type: JWT_BEARER,
        client_assertion: assertion,
      }).toString(),
    });
    expect(inQuery.json().error).toBe('invalid_request');
  });

  it('authenticates with assertions at introspection, revocation, device authorization and PAR', async () => {
    const issued = await token(assertionFields(await signAssertion(es, 'pk', ISSUER)));
    const accessToken = issued.json().access_token as string;
    const introspected = await postForm(sigil, '/connect/introspect', {
      token: accessToken,
      ...assertionFields(await signAssertion(es, 'pk', `${ISSUER}/connect/introspect`)),
    });
    expect(introspected.statusCode, introspected.body).toBe(200);
    expect(introspected.json()).toMatchObject({ active: true, client_id: 'pk' });
    const badIntrospection = await postForm(sigil, '/connect/introspect', {
      token: accessToken,
      ...assertionFields(await signAssertion(es, 'pk', 'https://other.example')),
    });
    expect(badIntrospection.statusCode).toBe(401);

    const device = await postForm(sigil, '/connect/deviceauthorization', {
      scope: 'api1',
      ...assertionFields(await signAssertion(es, 'pk', `${ISSUER}/connect/deviceauthorization`)),
    });
    expect(device.statusCode, device.body).toBe(200);
    expect(device.json().device_code).toEqual(expect.any(String));
    const badDevice = await postForm(sigil, '/connect/deviceauthorization', {
      scope: 'api1',
      ...assertionFields(await signAssertion(es, 'pk', ISSUER, { exp: Math.floor(Date.now() / 1000) - 100 })),
    });
    expect(badDevice.statusCode).toBe(401);

    const revoked = await postForm(sigil, '/connect/revocation', {
      token: accessToken,
      ...assertionFields(await signAssertion(es, 'pk', `${ISSUER}/connect/revocation`)),
    });
    expect(revoked.statusCode, revoked.body).toBe(200);
    const after = await postForm(sigil, '/connect/introspect', {
      token: accessToken,
      ...assertionFields(await signAssertion(es, 'pk', ISSUER)),
    });
    expect(after.json()).toEqual({ active: false });
    const badRevocation = await postForm(sigil, '/connect/revocation', {
      token: accessToken,
      ...assertionFields(await signAssertion(es, 'pk', ISSUER, { sub: 'm2m' }), 'pk'),
    });
    expect(badRevocation.statusCode).toBe(401);

    // PAR: the client may not use the code flow, but it authenticated first.
    const par = await postForm(sigil, '/connect/par', {
      response_type: 'code',
      ...assertionFields(await signAssertion(es, 'pk', `${ISSUER}/connect/par`)),
    });
    expect(par.statusCode, par.body).toBe(400);
    expect(par.json().error).not.toBe('invalid_client');
    const badPar = await postForm(sigil, '/connect/par', {
      response_type: 'code',
      ...assertionFields(await signAssertion(es, 'pk', `${ISSUER}/connect/token`, { jti: undefined })),
    });
    expect(badPar.statusCode).toBe(401);
  });

  it('never answers a malformed assertion with a server error (property)', async () => {
    const segment = fc.oneof(
      fc.string({ maxLength: 40 }),
      fc.base64String({ maxLength: 60 }),
      fc.json({ maxDepth: 4 }).map((j) => base64url.encode(j)),
      fc.constantFrom(
        'eyJhbGciOiJub25lIn0',
        'eyJhbGciOiJIUzI1NiJ9',
        'eyJhbGciOiJFUzI1NiIsImtpZCI6ImVzLTEifQ',
        base64url.encode('[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]'),
      ),
    );
    const payload = fc.oneof(
      fc.json({ maxDepth: 3 }),
      fc
        .record(
          {
            iss: fc.oneof(fc.constant('pk'), fc.string()),
            sub: fc.oneof(fc.constant('pk'), fc.integer(), fc.string()),
            aud: fc.oneof(fc.constant(ISSUER), fc.array(fc.string())),
            exp: fc.oneof(fc.integer(), fc.string(), fc.constant(null)),
            jti: fc.oneof(fc.string(), fc.integer()),
          },
          { requiredKeys: [] },
        )
        .map((o) => JSON.stringify(o)),
    );
    const assertion = fc.oneof(
      fc.string({ maxLength: 200 }),
      fc
        .tuple(
          segment,
          payload.map((p) => base64url.encode(p)),
          segment,
        )
        .map((parts) => parts.join('.')),
      fc.tuple(segment, segment).map((parts) => parts.join('.')),
    );
    await fc.assert(
      fc.asyncProperty(
        assertion,
        fc.option(fc.constantFrom('pk', 'cs', 'm2m', 'nobody', 'spa'), { nil: undefined }),
        async (value, clientId) => {
          const res = await token(assertionFields(value === '' ? 'x' : value, clientId));
          expectNoLeak(res);
          expect([400, 401]).toContain(res.statusCode);
        },
      ),
      { numRuns: 150 },
    );
  });
});

describe('failures count through the limiter', () => {
  it('bad assertions from one address are refused with 429 once over the limit, even a good one', async () => {
    const sigil = await startSigil({ clients: clients(), rateLimits: { maxFailures: 3, windowSeconds: 60 } });
    try {
      for (let i = 0; i < 3; i++) {
        const res = await postForm(sigil, '/connect/token', {
          ...CC,
          ...assertionFields(await signAssertion(es, 'pk', 'https://wrong.example')),
        });
        expect(res.statusCode).toBe(401);
      }
      const good = await postForm(sigil, '/connect/token', {
        ...CC,
        ...assertionFields(await signAssertion(es, 'pk', ISSUER)),
      });
      expect(good.statusCode).toBe(429);
      expect(good.headers['retry-after']).toBeDefined();
    } finally {
      await sigil.close();
    }
  });
});

describe('keys from a jwksUri', () => {
  let server: Server;
  let served: ClientKey;
  let fetches = 0;
  let sigil: TestSigil;

  beforeAll(async () => {
    served = es;
    server = createServer((_req, res) => {
      fetches += 1;
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ keys: [served.publicJwk] }));
    });
    await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
    const uri = `http://127.0.0.1:${(server.address() as AddressInfo).port}/jwks`;
    sigil = await startSigil({ clients: clients(uri), rateLimits: { maxFailures: 1000, windowSeconds: 60 } });
  });
  afterAll(async () => {
    await sigil.close();
    server.closeAllConnections();
    await new Promise((ok) => server.close(ok));
  });
  afterEach(() => vi.useRealTimers());

  const token = async (key: ClientKey) =>
    postForm(sigil, '/connect/token', { ...CC, ...assertionFields(await signAssertion(key, 'remote', ISSUER)) });

  it('fetches once, caches, and fetches again for an unknown kid at most once a minute', async () => {
    expect((await token(es)).statusCode).toBe(200);
    expect((await token(es)).statusCode).toBe(200);
    expect(fetches).toBe(1);

    // The client rotates to a new key; within the minute, the unknown kid causes no fetch.
    const rotated = await clientKey('ES256', 'es-2');
    served = rotated;
    const early = await token(rotated);
    expect(early.statusCode).toBe(401);
    expect(early.json().error_description).toMatch(/no registered key/);
    expect(fetches).toBe(1);

    // A minute later the unknown kid makes Sigil fetch the set again, once.
    vi.useFakeTimers({ toFake: ['Date'], now: Date.now() + 61_000 });
    expect((await token(rotated)).statusCode).toBe(200);
    expect(fetches).toBe(2);
    expect((await token(rotated)).statusCode).toBe(200);
    expect((await token(es)).statusCode).toBe(401);
    expect(fetches).toBe(2);
  });

  it('verifies signed request objects with the same keys (PAR with a JAR, authenticated by private_key_jwt)', async () => {
    const now = Math.floor(Date.now() / 1000);
    const params = {
      client_id: 'remote-web',
      response_type: 'code',
      scope: 'openid',
      redirect_uri: 'https://rp.example/cb',
      code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
      code_challenge_method: 'S256',
    };
    const request = await new SignJWT({ ...params, iss: 'remote-web', aud: ISSUER, exp: now + 60 })
      .setProtectedHeader({ alg: served.alg, kid: served.kid })
      .sign(served.privateKey);
    const res = await postForm(sigil, '/connect/par', {
      client_id: 'remote-web',
      request,
      ...assertionFields(await signAssertion(served, 'remote-web', ISSUER)),
    });
    expect(res.statusCode, res.body).toBe(201);
    const forged = await new SignJWT({ ...params, iss: 'remote-web', aud: ISSUER, exp: now + 60 })
      .setProtectedHeader({ alg: stranger.alg, kid: served.kid })
      .sign(stranger.privateKey);
    const refused = await postForm(sigil, '/connect/par', {
      client_id: 'remote-web',
      request: forged,
      ...assertionFields(await signAssertion(served, 'remote-web', ISSUER)),
    });
    expect(refused.json().error).toBe('invalid_request_object');
  });
});

describe('config', () => {
  const config = (client: Record<string, unknown>) =>
    testConfig({ clients: [{ clientId: 'x', allowedGrantTypes: ['client_credentials'], ...client }] });
  const refused = async (client: Record<string, unknown>, path: RegExp) => {
    const err = await createSigil(config(client)).then(
      async (s) => {
        await s.close();
        return undefined;
      },
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).problems.join('\n')).toMatch(path);
  };

  it('refuses client_secret_jwt with sha256: secrets, and other inconsistent settings, naming the field', async () => {
    await refused(
      {
        clientSecrets: [`sha256:${Buffer.alloc(32).toString('base64')}`],
        tokenEndpointAuthMethod: 'client_secret_jwt',
      },
      /clients\[0\]\.clientSecrets.*sha256/,
    );
    await refused({ tokenEndpointAuthMethod: 'private_key_jwt' }, /clients\[0\]\.tokenEndpointAuthMethod.*jwks/);
    await refused({ clientSecrets: ['s'], tokenEndpointAuthMethod: 'none' }, /clients\[0\]\.tokenEndpointAuthMethod/);
    await refused(
      {
        requireClientSecret: false,
        allowedGrantTypes: ['authorization_code'],
        tokenEndpointAuthMethod: 'client_secret_basic',
      },
      /clients\[0\]\.tokenEndpointAuthMethod/,
    );
    await refused({ jwks: { keys: [] }, jwksUri: 'https://rp.example/jwks' }, /clients\[0\]\.jwksUri/);
    await refused({ jwks: { keys: [{ kty: 'oct', k: 'c2VjcmV0' }] } }, /clients\[0\]\.jwks.*public keys only/);
    await refused({ jwksUri: 'http://rp.example/jwks' }, /clients\[0\]\.jwksUri.*https/);
    await refused(
      { jwks: { keys: [] }, tokenEndpointAuthMethod: 'private_key_jwt', tokenEndpointAuthSigningAlgorithms: ['HS256'] },
      /tokenEndpointAuthSigningAlgorithms/,
    );
    await refused(
      { clientSecrets: ['s'], tokenEndpointAuthSigningAlgorithms: ['none'] },
      /tokenEndpointAuthSigningAlgorithms/,
    );
  });
});
