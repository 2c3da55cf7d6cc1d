/**
 * Pushed authorization requests (RFC 9126): `/connect/par` authenticates the client and validates
 * the request as `/connect/authorize` does, the `request_uri` it returns is used once, by the
 * client that pushed it, within its lifetime; clients (or the whole server) may require PAR.
 */
import { SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { assertionFields, clientKey, type ClientKey, signAssertion } from '../assertion-helpers.js';
import {
  Browser,
  CB,
  ISSUER,
  authorizeClients,
  authorizeUrl,
  codeParams,
  expectClientError,
  expectErrorPage,
  isLoginPage,
  pkce,
  readResponse,
  redeem,
  startAuthorizeSigil,
} from '../authorize-helpers.js';
import { postForm, sleep, type TestSigil } from '../helpers.js';

const URN = /^urn:ietf:params:oauth:request_uri:[A-Za-z0-9_-]{40,}$/;

let key: ClientKey;
beforeAll(async () => {
  key = await clientKey('PS256', 'ps-1');
});

/** Browser clients plus PAR ones: `pushing` must push, `signed` authenticates with private_key_jwt. */
function parClients() {
  const web = authorizeClients().find((c) => c.clientId === 'web')!;
  return [
    { ...web, clientId: 'pushing', clientSecrets: ['pushing-secret'], requirePushedAuthorizationRequests: true },
    {
      ...web,
      clientId: 'signed',
      clientSecrets: [],
      jwks: { keys: [key.publicJwk] },
      tokenEndpointAuthMethod: 'private_key_jwt' as const,
    },
  ];
}

describe('pushed authorization requests', () => {
  let sigil: TestSigil;
  beforeAll(async () => {
    sigil = await startAuthorizeSigil(parClients(), { rateLimits: { maxFailures: 1000, windowSeconds: 60 } });
  });
  afterAll(async () => sigil.close());

  const push = (params: Record<string, string>, auth: readonly [string, string] | undefined = ['web', 'web-secret']) =>
    postForm(sigil, '/connect/par', params, auth);
  const pushed = async (params: Record<string, string>, auth?: readonly [string, string]) => {
    const res = await push(params, auth);
    expect(res.statusCode, res.body).toBe(201);
    expect(res.headers['cache-control']).toContain('no-store');
    const body = res.json<{ request_uri: string; expires_in: number }>();
    expect(body.request_uri).toMatch(URN);
    expect(body.expires_in).toBe(60);
    return body.request_uri;
  };

  it('answers 201 with a request_uri that /connect/authorize uses instead of the other parameters', async () => {
    const { verifier, challenge } = pkce();
    const requestUri = await pushed(codeParams(challenge, { state: 'pushed-state' }));
    const b = new Browser(sigil);
    // Only client_id counts besides request_uri: the stray parameters are ignored.
    const step = await b.authorize({
      client_id: 'web',
      request_uri: requestUri,
      redirect_uri: 'https://evil.example/cb',
      scope: 'bogus',
      state: 'forged',
    });
    const r = readResponse(step);
    expect(r.target).toBe(CB);
    expect(r.params.get('state')).toBe('pushed-state');
    expect(r.params.get('iss')).toBe(ISSUER);
    const tokens = await redeem(sigil, r.params.get('code')!, { verifier });
    expect(tokens.statusCode, tokens.body).toBe(200);
    expect(tokens.json().scope).toBe('openid profile api1 offline_access');
  });

  it('uses a request_uri once: a reuse gets the error page, no redirect', async () => {
    const requestUri = await pushed(codeParams(pkce().challenge));
    const b = new Browser(sigil);
    await b.signIn('alice');
    const first = await b.get(authorizeUrl({ client_id: 'web', request_uri: requestUri }));
    expect(readResponse(first).params.get('code')).toBeTruthy();
    const again = await b.get(authorizeUrl({ client_id: 'web', request_uri: requestUri }));
    expectErrorPage(again, 'invalid_request_uri');
  });

  it('refuses an expired request_uri with the error page', async () => {
    const short = await startAuthorizeSigil([], { pushedAuthorizationRequestLifetime: 1 });
    try {
      const res = await postForm(short, '/connect/par', codeParams(pkce().challenge), ['web', 'web-secret']);
      expect(res.json().expires_in).toBe(1);
      await sleep(2100);
      const b = new Browser(short);
      expectErrorPage(
        await b.get(authorizeUrl({ client_id: 'web', request_uri: res.json().request_uri })),
        'invalid_request_uri',
      );
    } finally {
      await short.close();
    }
  });

  it("refuses another client's request_uri without using it up, and an unknown one", async () => {
    const requestUri = await pushed(codeParams(pkce().challenge));
    const b = new Browser(sigil);
    await b.signIn('alice');
    expectErrorPage(await b.get(authorizeUrl({ client_id: 'other', request_uri: requestUri })), 'invalid_request_uri');
    expectErrorPage(
      await b.get(authorizeUrl({ client_id: 'web', request_uri: 'urn:ietf:params:oauth:request_uri:nothing-here' })),
      'invalid_request_uri',
    );
    const own = await b.get(authorizeUrl({ client_id: 'web', request_uri: requestUri }));
    expect(readResponse(own).params.get('code')).toBeTruthy();
  });

  it('validates the pushed request as /connect/authorize would, answering JSON errors', async () => {
    const { challenge } = pkce();
    const cases: [Record<string, string>, string][] = [
      [codeParams(challenge, { redirect_uri: 'https://evil.example/cb' }), 'invalid_request'],
      [codeParams(challenge, { scope: 'openid unknown' }), 'invalid_scope'],
      [codeParams(challenge, { response_type: 'token' }), 'unauthorized_client'],
      [codeParams(challenge, { code_challenge_method: 'plain' }), 'invalid_request'],
      [codeParams(challenge, { request_uri: 'urn:ietf:params:oauth:request_uri:x' }), 'invalid_request'],
    ];
    for (const [params, error] of cases) {
      const res = await push(params);
      expect(res.statusCode, res.body).toBe(400);
      expect(res.headers['content-type']).toMatch(/^application\/json/);
      expect(res.json().error).toBe(error);
    }
    const { code_challenge: _c, ...noPkce } = codeParams(challenge);
    expect((await push(noPkce)).json().error).toBe('invalid_request');
  });

  it('authenticates the client like the token endpoint', async () => {
    const params = codeParams(pkce().challenge);
    const wrong = await push(params, ['web', 'wrong']);
    expect(wrong.statusCode).toBe(401);
    expect(wrong.json().error).toBe('invalid_client');
    const none = await postForm(sigil, '/connect/par', params);
    expect(none.statusCode).toBe(401);
    expect(none.json().error).toBe('invalid_client');
    // client_id in the body must name the authenticated client.
    expect((await push({ ...params, client_id: 'other' })).json().error).toBe('invalid_request');
    const get = await sigil.app.inject({ method: 'GET', url: '/connect/par' });
    expect(get.json().error).toBe('invalid_request');
  });

  it('accepts private_key_jwt (aud = the PAR endpoint) and a signed request object (JAR)', async () => {
    const { challenge } = pkce();
    const now = Math.floor(Date.now() / 1000);
    const requestObject = await new SignJWT({
      ...codeParams(challenge, { client_id: 'signed', state: 'from-jar' }),
      iss: 'signed',
      aud: ISSUER,
    })
      .setProtectedHeader({ alg: 'PS256', kid: key.kid })
      .setIssuedAt(now)
      .setExpirationTime(now + 60)
      .sign(key.privateKey);
    const res = await postForm(sigil, '/connect/par', {
      client_id: 'signed',
      request: requestObject,
      ...assertionFields(await signAssertion(key, 'signed', `${ISSUER}/connect/par`)),
    });
    expect(res.statusCode, res.body).toBe(201);
    const b = new Browser(sigil);
    const r = readResponse(await b.authorize({ client_id: 'signed', request_uri: res.json().request_uri }));
    expect(r.params.get('state')).toBe('from-jar');
    expect(r.params.get('code')).toBeTruthy();

    const tampered = await postForm(sigil, '/connect/par', {
      client_id: 'signed',
      request: `${requestObject.slice(0, -4)}AAAA`,
      ...assertionFields(await signAssertion(key, 'signed', ISSUER)),
    });
    expect(tampered.json().error).toBe('invalid_request_object');
  });

  it('refuses a client that must push when it sends the request to /connect/authorize directly', async () => {
    const { challenge } = pkce();
    const b = new Browser(sigil);
    expectClientError(await b.get(authorizeUrl(codeParams(challenge, { client_id: 'pushing' }))), 'invalid_request', {
      state: 'st',
    });
    const requestUri = await pushed(codeParams(challenge, { client_id: 'pushing' }), ['pushing', 'pushing-secret']);
    const step = await b.follow(await b.get(authorizeUrl({ client_id: 'pushing', request_uri: requestUri })));
    expect(isLoginPage(step)).toBe(true);
    // After the login page the request resumes without being pushed again.
    const done = await b.follow(await b.submitLogin(step, 'alice', 'alice'));
    expect(readResponse(done).params.get('code')).toBeTruthy();
  });

  it("counts a public client's pushes against the address's pending-request quota", async () => {
    const limited = await startAuthorizeSigil([], {
      pendingLimits: {
        interactionsPerAddress: 3,
        windowSeconds: 600,
        interactionsPerBrowser: 30,
        deviceAuthorizationsPerAddress: 30,
        deviceAuthorizationsPerClient: 1000,
      },
    });
    try {
      const params = codeParams(pkce().challenge, {
        client_id: 'spa',
        redirect_uri: 'https://spa.example/cb',
        scope: 'openid api1',
      });
      const statuses: number[] = [];
      for (let i = 0; i < 4; i++) statuses.push((await postForm(limited, '/connect/par', params)).statusCode);
      expect(statuses).toEqual([201, 201, 201, 429]);
      // A confidential client has authenticated: its pushes are not counted.
      for (let i = 0; i < 4; i++)
        expect(
          (await postForm(limited, '/connect/par', codeParams(pkce().challenge), ['web', 'web-secret'])).statusCode,
        ).toBe(201);
    } finally {
      await limited.close();
    }
  });

  it('is listed in discovery', async () => {
    const meta = (await sigil.app.inject({ method: 'GET', url: '/.well-known/openid-configuration' })).json();
    expect(meta.pushed_authorization_request_endpoint).toBe(`${ISSUER}/connect/par`);
    expect(meta.require_pushed_authorization_requests).toBe(false);
    expect(meta.token_endpoint_auth_methods_supported).toEqual([
      'client_secret_basic',
      'client_secret_post',
      'client_secret_jwt',
      'private_key_jwt',
      'none',
    ]);
    expect(meta.token_endpoint_auth_signing_alg_values_supported).toContain('PS256');
    expect(meta.token_endpoint_auth_signing_alg_values_supported).not.toContain('none');
    expect(meta.introspection_endpoint_auth_methods_supported).toContain('private_key_jwt');
    expect(meta.revocation_endpoint_auth_signing_alg_values_supported).toContain('ES256');
  });
});

describe('requirePushedAuthorizationRequests for the whole server', () => {
  it('refuses every unpushed request and says so in discovery', async () => {
    const sigil = await startAuthorizeSigil([], { requirePushedAuthorizationRequests: true });
    try {
      const meta = (await sigil.app.inject({ method: 'GET', url: '/.well-known/openid-configuration' })).json();
      expect(meta.require_pushed_authorization_requests).toBe(true);
      const { challenge } = pkce();
      const b = new Browser(sigil);
      expectClientError(await b.get(authorizeUrl(codeParams(challenge))), 'invalid_request');
      const res = await postForm(sigil, '/connect/par', codeParams(challenge), ['web', 'web-secret']);
      expect(res.statusCode).toBe(201);
      expect(
        readResponse(await b.authorize({ client_id: 'web', request_uri: res.json().request_uri })).params.get('code'),
      ).toBeTruthy();
    } finally {
      await sigil.close();
    }
  });
});
