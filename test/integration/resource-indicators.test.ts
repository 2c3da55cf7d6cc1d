/**
 * Resource indicators (RFC 8707) over HTTP: `resource` at authorize and at the token endpoint
 * narrows the access token's `aud` to the named API resources and its scopes to theirs; unknown,
 * malformed or disallowed resources are `invalid_target`; the code remembers the resources of the
 * authorization request, and a refresh may narrow them, never widen them.
 */
import { decodeJwt } from 'jose';
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  Browser,
  CB,
  codeParams,
  expectClientError,
  getCode,
  pkce,
  redeem,
  startAuthorizeSigil,
} from '../authorize-helpers.js';
import { testConfig, type BasicCredentials, type TestSigil, type TokenBody } from '../helpers.js';
import { resolveConfig } from '../../src/config/loader.js';

const API1 = 'https://api1.example/';
const API2 = 'https://api2.example/v1';
const API_RESOURCES = [
  { name: 'api1', scopes: ['api1'], secrets: ['api1-secret'], resourceUris: [API1] },
  { name: 'api2', scopes: ['api2'], secrets: ['api2-secret'], resourceUris: [API2, 'urn:example:api2'] },
];
const M2M: BasicCredentials = ['m2m', 'm2m-secret'];

/** A token request whose `resource` may repeat. */
function token(
  sigil: TestSigil,
  params: Record<string, string>,
  resources: string[],
  auth?: BasicCredentials,
): Promise<LightMyRequestResponse> {
  const body = new URLSearchParams(params);
  for (const r of resources) body.append('resource', r);
  return sigil.app.inject({
    method: 'POST',
    url: '/connect/token',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      ...(auth ? { authorization: `Basic ${Buffer.from(`${auth[0]}:${auth[1]}`).toString('base64')}` } : {}),
    },
    payload: body.toString(),
  });
}

function expectError(res: LightMyRequestResponse, error: string): void {
  expect(res.statusCode, res.body).toBe(400);
  expect(res.json<{ error: string }>().error).toBe(error);
}

function claimsOf(res: LightMyRequestResponse): Record<string, unknown> {
  expect(res.statusCode, res.body).toBe(200);
  return decodeJwt(res.json<TokenBody>().access_token);
}

describe('resource indicators', () => {
  let sigil: TestSigil;
  beforeAll(async () => {
    sigil = await startAuthorizeSigil(
      [
        {
          clientId: 'm2m',
          clientSecrets: ['m2m-secret'],
          allowedGrantTypes: ['client_credentials'],
          allowedScopes: ['api1', 'api2'],
        },
        {
          clientId: 'web2',
          clientSecrets: ['web2-secret'],
          allowedGrantTypes: ['authorization_code'],
          allowedScopes: ['openid', 'api1', 'api2'],
          redirectUris: [CB],
        },
        {
          clientId: 'm2m-api1',
          clientSecrets: ['m2m-secret'],
          allowedGrantTypes: ['client_credentials'],
          allowedScopes: ['api1'],
        },
        {
          clientId: 'ropc',
          clientSecrets: ['ropc-secret'],
          allowedGrantTypes: ['password'],
          allowedScopes: ['openid', 'api1', 'api2', 'offline_access'],
          allowOfflineAccess: true,
        },
      ],
      { apiScopes: [{ name: 'api1' }, { name: 'api2' }], apiResources: API_RESOURCES },
    );
  });
  afterAll(async () => sigil?.close());

  it('narrows a client_credentials token to the named resource: aud and scope', async () => {
    const all = claimsOf(await token(sigil, { grant_type: 'client_credentials' }, [], M2M));
    expect(all).toMatchObject({ aud: ['api1', 'api2'], scope: 'api1 api2' });
    const one = await token(sigil, { grant_type: 'client_credentials' }, [API1], M2M);
    expect(claimsOf(one)).toMatchObject({ aud: 'api1', scope: 'api1' });
    expect(one.json<TokenBody>().scope).toBe('api1');
    expect(
      claimsOf(await token(sigil, { grant_type: 'client_credentials', scope: 'api1 api2' }, ['urn:example:api2'], M2M)),
    ).toMatchObject({ aud: 'api2', scope: 'api2' });
    expect(claimsOf(await token(sigil, { grant_type: 'client_credentials' }, [API1, API2], M2M))).toMatchObject({
      aud: ['api1', 'api2'],
    });
  });

  it('refuses unknown, malformed, fragment-bearing and disallowed resources with invalid_target', async () => {
    for (const [resource, client] of [
      ['https://unknown.example/', M2M],
      ['/relative', M2M],
      ['https://api1.example/#frag', M2M],
      ['not a uri', M2M],
      [`https://api1.example/${'x'.repeat(600)}`, M2M],
      [API2, ['m2m-api1', 'm2m-secret']],
    ] as const) {
      expectError(await token(sigil, { grant_type: 'client_credentials' }, [resource], client), 'invalid_target');
    }
    // A resource that defines none of the requested scopes.
    expectError(await token(sigil, { grant_type: 'client_credentials', scope: 'api1' }, [API2], M2M), 'invalid_target');
  });

  it('lets a refresh narrow the resources of a grant, never widen them', async () => {
    const first = await token(
      sigil,
      { grant_type: 'password', username: 'alice', password: 'alice', scope: 'openid api1 api2 offline_access' },
      [API1, API2],
      ['ropc', 'ropc-secret'],
    );
    expect(claimsOf(first)).toMatchObject({ aud: ['api1', 'api2'] });
    const rt = first.json<TokenBody>().refresh_token!;
    const narrowed = await token(
      sigil,
      { grant_type: 'refresh_token', refresh_token: rt },
      [API2],
      ['ropc', 'ropc-secret'],
    );
    expect(claimsOf(narrowed)).toMatchObject({ aud: 'api2', scope: 'openid api2 offline_access' });

    const onlyApi1 = await token(
      sigil,
      { grant_type: 'password', username: 'alice', password: 'alice', scope: 'openid api1 api2 offline_access' },
      [API1],
      ['ropc', 'ropc-secret'],
    );
    expect(claimsOf(onlyApi1)).toMatchObject({ aud: 'api1', scope: 'openid api1 offline_access' });
    const rt1 = onlyApi1.json<TokenBody>().refresh_token!;
    expectError(
      await token(sigil, { grant_type: 'refresh_token', refresh_token: rt1 }, [API2], ['ropc', 'ropc-secret']),
      'invalid_target',
    );
    // The refused refresh consumed nothing; without resource the grant's resources apply.
    expect(
      claimsOf(await token(sigil, { grant_type: 'refresh_token', refresh_token: rt1 }, [], ['ropc', 'ropc-secret'])),
    ).toMatchObject({ aud: 'api1' });
  });

  it('remembers the resources of the authorization request in the code', async () => {
    const { verifier, challenge } = pkce();
    const code = await getCode(
      new Browser(sigil),
      codeParams(challenge, { client_id: 'web2', scope: 'openid api1 api2', resource: API1 }),
    );
    const res = await redeem(sigil, code, { client: 'web2', verifier });
    expect(claimsOf(res)).toMatchObject({ aud: 'api1', scope: 'openid api1' });
  });

  it('refuses a token request for a resource the code was not issued for', async () => {
    const { verifier, challenge } = pkce();
    const code = await getCode(new Browser(sigil), codeParams(challenge, { scope: 'openid api1', resource: API1 }));
    const res = await redeem(sigil, code, { verifier, extra: { resource: API2 } });
    expectError(res, 'invalid_target');
    // The refusal did not burn the code.
    expect((await redeem(sigil, code, { verifier })).statusCode).toBe(200);
  });

  it('answers an unknown resource at authorize with invalid_target to the client', async () => {
    const { challenge } = pkce();
    const step = await new Browser(sigil).authorize(codeParams(challenge, { resource: 'https://unknown.example/' }), {
      user: 'alice',
    });
    expectClientError(step, 'invalid_target', { state: 'st' });
  });

  it('keeps several resources of a request that waits for the login page', async () => {
    const { verifier, challenge } = pkce();
    const query = new URLSearchParams(codeParams(challenge, { client_id: 'web2', scope: 'openid api1 api2' }));
    query.append('resource', API1);
    query.append('resource', API2);
    const b = new Browser(sigil);
    const page = await b.follow(await b.get(`/connect/authorize?${query}`));
    expect(page.body, `${page.status} ${page.location}`).toContain('action="/account/login"');
    const done = await b.follow(await b.submitLogin(page, 'alice', 'alice'));
    const code = new URL(done.location ?? 'https://x/').searchParams.get('code');
    expect(code, done.body).toEqual(expect.any(String));
    const res = await redeem(sigil, code!, { client: 'web2', verifier, extra: { resource: API2 } });
    expect(claimsOf(res)).toMatchObject({ aud: 'api2', scope: 'openid api2' });
  });
});

describe('resourceUris in the config', () => {
  it('refuses a resource URI that is not absolute or has a fragment, and one used by two APIs', () => {
    const bad = (resourceUris: string[][]) => () =>
      resolveConfig(
        testConfig({
          apiResources: [
            { name: 'api1', scopes: ['api1'], resourceUris: resourceUris[0] },
            { name: 'api2', scopes: ['api2'], resourceUris: resourceUris[1] },
          ],
        }),
      );
    expect(bad([['/relative'], []])).toThrow(/apiResources\[0\]\.resourceUris\[0\]/);
    expect(bad([['https://a.example/#x'], []])).toThrow(/apiResources\[0\]\.resourceUris\[0\]/);
    expect(bad([['https://a.example/'], ['https://a.example/']])).toThrow(/apiResources\[1\]\.resourceUris\[0\]/);
    expect(bad([['https://a.example/'], ['urn:b']])).not.toThrow();
  });
});
