/**
 * Identity resources, API scopes, API resources and upstream identity providers managed through
 * /admin/v1 over HTTP, on a real SQLite file and on PostgreSQL: create, read,
 * merge-patch with If-Match, delete, API resource secret rotation; 401/403/404/409/412/422/428;
 * config-file and built-in items read-only; a scope in use cannot be deleted; and every change is
 * in force at once: a new API scope and resource give tokens with the new `aud` that the new
 * resource introspects with its secret, a new identity scope releases its claims at userinfo and
 * (response_type id_token) in the identity token, a new provider is on the login page, a deleted
 * scope is refused as invalid_scope. Audit events never carry a secret.
 */
import fc from 'fast-check';
import { decodeJwt } from 'jose';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import type { SigilEvent } from '../../src/events/events.js';
import { externalLinkKey } from '../../src/stores/types.js';
import {
  Browser,
  CB,
  codeParams,
  ISSUER,
  isLoginPage,
  pkce,
  readResponse,
  startAuthorizeSigil,
} from '../authorize-helpers.js';
import {
  clientTokens,
  dropSchema,
  introspect,
  passwordTokens,
  POSTGRES_URL,
  testConfig,
  tokenRequest,
  type TestSigil,
  uniqueSchema,
  userinfo,
} from '../helpers.js';

type Method = 'GET' | 'POST' | 'PATCH' | 'DELETE';

describe.each(['sqlite', 'postgres'] as const)('/admin/v1 resources on %s', (dialect) => {
  const schema = uniqueSchema('adminres');
  let sigil: TestSigil;
  let admin: string;
  let reader: string;
  const events: SigilEvent[] = [];

  beforeAll(async () => {
    sigil = await startAuthorizeSigil(
      [
        {
          clientId: 'automation',
          clientSecrets: ['automation-secret'],
          allowedGrantTypes: ['client_credentials'],
          allowedScopes: ['sigil:admin', 'sigil:admin:read'],
        },
        ...testConfig().clients!.filter((c) => c.clientId === 'm2m'),
      ],
      dialect === 'postgres' ? { storage: `${POSTGRES_URL}?schema=${schema}` } : {},
    );
    sigil.subscribe((e) => void events.push(e));
    admin = (await clientTokens(sigil, 'sigil:admin', ['automation', 'automation-secret'])).access_token;
    reader = (await clientTokens(sigil, 'sigil:admin:read', ['automation', 'automation-secret'])).access_token;
  });
  afterAll(async () => {
    await sigil?.close();
    if (dialect === 'postgres') await dropSchema(schema);
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  function call(method: Method, path: string, body?: unknown, headers: Record<string, string> = {}, token = admin) {
    return sigil.app.inject({
      method,
      url: `/admin/v1${path}`,
      headers: {
        ...(token ? { authorization: `Bearer ${token}` } : {}),
        ...(body !== undefined
          ? { 'content-type': method === 'PATCH' ? 'application/merge-patch+json' : 'application/json' }
          : {}),
        ...headers,
      },
      ...(body !== undefined ? { payload: JSON.stringify(body) } : {}),
    });
  }
  const created = async (path: string, body: unknown) => {
    const res = await call('POST', path, body);
    expect(res.statusCode, res.body).toBe(201);
    return res;
  };
  const cc = (client: string, secret: string, scope?: string) =>
    tokenRequest(sigil, { grant_type: 'client_credentials', ...(scope ? { scope } : {}) }, [client, secret]);

  it('answers 401 without a token and 403 to a read-only token that writes, on every kind', async () => {
    for (const path of ['/identity-resources', '/api-scopes', '/api-resources', '/identity-providers']) {
      const none = await call('GET', path, undefined, {}, '');
      expect(none.statusCode).toBe(401);
      expect(none.headers['www-authenticate']).toMatch(/^Bearer/);
      expect((await call('GET', path, undefined, {}, reader)).statusCode).toBe(200);
      const write = await call('POST', path, { name: 'by-reader' }, {}, reader);
      expect(write.statusCode).toBe(403);
      expect(write.headers['www-authenticate']).toContain('insufficient_scope');
      expect((await call('DELETE', `${path}/by-reader`, undefined, {}, reader)).statusCode).toBe(403);
    }
  });

  it('a new API scope and API resource are usable at once: aud, introspection with the new secret, no secret in reads', async () => {
    await created('/api-scopes', { name: 'billing.read', displayName: 'Read invoices' });
    const api = await created('/api-resources', {
      name: 'billing',
      scopes: ['billing.read'],
      resourceUris: ['https://billing.example/'],
    });
    const { secret, apiResource, source } = api.json();
    expect(secret).toMatch(/^[\w-]{43}$/);
    expect(source).toBe('store');
    expect(apiResource).toEqual({
      name: 'billing',
      scopes: ['billing.read'],
      userClaims: [],
      resourceUris: ['https://billing.example/'],
      authorizationDetailsTypes: [],
    });
    const bot = await call('POST', '/clients', {
      clientId: 'billing-bot',
      allowedGrantTypes: ['client_credentials'],
      allowedScopes: ['billing.read'],
    });
    expect(bot.statusCode, bot.body).toBe(201);
    const token = await cc('billing-bot', bot.json().secret, 'billing.read');
    expect(token.statusCode, token.body).toBe(200);
    const access = token.json().access_token as string;
    expect(decodeJwt(access).aud).toBe('billing');
    const seen = await introspect(sigil, access, ['billing', secret]);
    expect(seen.statusCode, seen.body).toBe(200);
    expect(seen.json()).toMatchObject({ active: true, scope: 'billing.read', client_id: 'billing-bot' });
    expect((await introspect(sigil, access, ['billing', 'wrong-secret-of-some-length-xxxxxxxx'])).statusCode).toBe(401);
    // The resource indicator (RFC 8707) names it too.
    const indicated = await tokenRequest(
      sigil,
      { grant_type: 'client_credentials', resource: 'https://billing.example/' },
      ['billing-bot', bot.json().secret],
    );
    expect(indicated.statusCode, indicated.body).toBe(200);
    const read = await call('GET', '/api-resources/billing', undefined, {}, reader);
    expect(read.statusCode).toBe(200);
    expect(read.headers.etag).toBe(api.headers.etag);
    expect(read.body).not.toContain(secret);
    expect(read.body).not.toContain('sha256:');
    const list = (await call('GET', '/api-resources', undefined, {}, reader)).json().apiResources as {
      apiResource: { name: string };
      source: string;
    }[];
    expect(list.map((r) => `${r.apiResource.name}:${r.source}`)).toEqual(
      expect.arrayContaining(['sigil:built-in', 'api1:config', 'billing:store']),
    );
    expect(JSON.stringify(list)).not.toContain('api1-secret');
    const discovery = (await sigil.app.inject({ method: 'GET', url: '/.well-known/openid-configuration' })).json();
    expect(discovery.scopes_supported).toContain('billing.read');
  });

  it('rotates an API resource secret: the old one works at introspection during the grace period only', async () => {
    const first = (await created('/api-resources', { name: 'rotating', scopes: ['api1'] })).json().secret as string;
    const access = (await clientTokens(sigil, 'api1')).access_token;
    const rotated = await call('POST', '/api-resources/rotating/secret', { graceSeconds: 3600 });
    expect(rotated.statusCode, rotated.body).toBe(200);
    const second = rotated.json().secret as string;
    expect(second).not.toBe(first);
    expect(rotated.json().retiringSecretsExpireAt).toHaveLength(1);
    expect((await introspect(sigil, access, ['rotating', first])).statusCode).toBe(200);
    expect((await introspect(sigil, access, ['rotating', second])).statusCode).toBe(200);
    vi.useFakeTimers({ toFake: ['Date'], now: Date.now() + 3601 * 1000 });
    expect((await introspect(sigil, access, ['rotating', first])).statusCode).toBe(401);
    expect((await introspect(sigil, access, ['rotating', second])).statusCode).toBe(200);
    vi.useRealTimers();
    expect((await call('POST', '/api-resources/api1/secret', {})).statusCode).toBe(409);
    expect((await call('POST', '/api-resources/rotating/secret', { graceSeconds: -1 })).json().errors[0].path).toBe(
      'graceSeconds',
    );
  });

  it('a new identity resource releases its claims at userinfo; a change is in force at once', async () => {
    await created('/identity-resources', { name: 'team', displayName: 'Your team', userClaims: ['role'] });
    const app = await call('POST', '/clients', {
      clientId: 'team-app',
      allowedGrantTypes: ['password'],
      allowedScopes: ['openid', 'team'],
    });
    expect(app.statusCode, app.body).toBe(201);
    const client = ['team-app', app.json().secret as string] as const;
    const withTeam = await passwordTokens(sigil, { client, scope: 'openid team' });
    expect((await userinfo(sigil, withTeam.access_token)).json()).toMatchObject({ sub: '1', role: ['admin'] });
    const without = await passwordTokens(sigil, { client, scope: 'openid' });
    expect((await userinfo(sigil, without.access_token)).json().role).toBeUndefined();
    // OIDC Core §5.4: without an access token (response_type id_token) the claims are in the identity token.
    const implicit = await call('POST', '/clients', {
      clientId: 'team-implicit',
      allowedGrantTypes: ['implicit'],
      allowedScopes: ['openid', 'team'],
      redirectUris: [CB],
    });
    expect(implicit.statusCode, implicit.body).toBe(201);
    const step = await new Browser(sigil).authorize({
      client_id: 'team-implicit',
      redirect_uri: CB,
      response_type: 'id_token',
      scope: 'openid team',
      nonce: 'n-team',
      state: 's',
    });
    const idToken = readResponse(step).params.get('id_token');
    expect(idToken, step.location).toBeTruthy();
    expect(decodeJwt(idToken ?? '')).toMatchObject({ sub: '1', role: ['admin'], nonce: 'n-team' });
    const read = await call('GET', '/identity-resources/team');
    const patched = await call(
      'PATCH',
      '/identity-resources/team',
      { userClaims: ['role', 'email'] },
      { 'if-match': read.headers.etag as string },
    );
    expect(patched.statusCode, patched.body).toBe(200);
    expect(patched.json().identityResource.userClaims).toEqual(['role', 'email']);
    const again = await passwordTokens(sigil, { client, scope: 'openid team' });
    expect((await userinfo(sigil, again.access_token)).json()).toMatchObject({
      email: 'alice@example.com',
      role: ['admin'],
    });
  });

  it('refuses config-file, built-in, duplicate and in-use items with 409', async () => {
    const config = await call('GET', '/api-scopes/api1');
    expect(config.json().source).toBe('config');
    const patch = await call(
      'PATCH',
      '/api-scopes/api1',
      { displayName: 'x' },
      { 'if-match': config.headers.etag as string },
    );
    expect(patch.statusCode).toBe(409);
    expect(patch.json().detail).toContain('config file');
    expect((await call('DELETE', '/identity-resources/openid')).statusCode).toBe(409);
    expect((await call('DELETE', '/api-resources/api1')).json().detail).toContain('config file');
    for (const [path, name] of [
      ['/api-scopes', 'sigil:admin'],
      ['/api-scopes', 'scim'],
      ['/identity-resources', 'openid'],
      ['/api-resources', 'sigil'],
      ['/api-scopes', 'api1'],
      ['/identity-resources', 'api1'],
      ['/api-scopes', 'profile'],
    ] as const) {
      const res = await call('POST', path, { name });
      expect(res.statusCode, `${path} ${name}: ${res.body}`).toBe(409);
    }
    expect((await call('DELETE', '/api-scopes/sigil:admin')).statusCode).toBe(409);
    expect((await call('DELETE', '/api-resources/sigil')).statusCode).toBe(409);
    await created('/api-scopes', { name: 'used' });
    await created('/api-resources', { name: 'user-of-used', scopes: ['used'] });
    expect((await call('POST', '/api-scopes', { name: 'used' })).statusCode).toBe(409);
    const inUse = await call('DELETE', '/api-scopes/used');
    expect(inUse.statusCode).toBe(409);
    expect(inUse.json().detail).toContain('API resource "user-of-used"');
    const bot = await call('POST', '/clients', {
      clientId: 'used-bot',
      allowedGrantTypes: ['client_credentials'],
      allowedScopes: ['used'],
    });
    expect(bot.statusCode, bot.body).toBe(201);
    expect((await call('DELETE', '/api-resources/user-of-used')).statusCode).toBe(204);
    const byClient = await call('DELETE', '/api-scopes/used');
    expect(byClient.statusCode).toBe(409);
    expect(byClient.json().detail).toContain('client "used-bot"');
    // Refused: nothing changed.
    expect((await call('GET', '/api-scopes/used')).statusCode).toBe(200);
  });

  it('answers 428 without If-Match, 412 when stale, 422 with the field path, 404 for none', async () => {
    const scope = await created('/api-scopes', { name: 'patched' });
    const etag = scope.headers.etag as string;
    expect((await call('PATCH', '/api-scopes/patched', { displayName: 'P' })).statusCode).toBe(428);
    const ok = await call('PATCH', '/api-scopes/patched', { displayName: 'P' }, { 'if-match': etag });
    expect(ok.statusCode, ok.body).toBe(200);
    expect(ok.headers.etag).not.toBe(etag);
    const stale = await call('PATCH', '/api-scopes/patched', { displayName: 'Q' }, { 'if-match': etag });
    expect(stale.statusCode).toBe(412);
    expect(stale.headers['content-type']).toContain('application/problem+json');
    expect((await call('DELETE', '/api-scopes/patched', undefined, { 'if-match': etag })).statusCode).toBe(412);
    expect(
      (
        await call('PATCH', '/api-scopes/patched', { name: 'renamed' }, { 'if-match': ok.headers.etag as string })
      ).json().errors[0].path,
    ).toBe('name');
    const unknownScope = await call('POST', '/api-resources', { name: 'broken', scopes: ['api1', 'no-such-scope'] });
    expect(unknownScope.statusCode).toBe(422);
    expect(unknownScope.json().errors).toContainEqual(expect.objectContaining({ path: 'scopes.1' }));
    const typed = await call('POST', '/api-scopes', { name: 'typed', userClaims: 'role' });
    expect(typed.statusCode).toBe(422);
    // The audience of tokens for Sigil's own userinfo: such an API would introspect every client's.
    const own = await call('POST', '/api-resources', { name: `${ISSUER}/resources` });
    expect(own.statusCode, own.body).toBe(422);
    expect(own.json().errors).toContainEqual(expect.objectContaining({ path: 'name' }));
    expect(typed.json().errors[0].path).toBe('userClaims');
    expect((await call('POST', '/api-resources', { name: 'given', secrets: ['mine'] })).json().errors[0].path).toBe(
      'secrets',
    );
    const management = await call('POST', '/api-resources', { name: 'sneaky', scopes: ['api1', 'sigil:admin'] });
    expect(management.statusCode).toBe(422);
    expect(management.json().errors[0].path).toBe('scopes.1');
    expect(
      (
        await call('POST', '/identity-providers', { name: 'bad name', authority: 'https://idp.example', clientId: 'x' })
      ).json().errors[0].path,
    ).toBe('name');
    expect(
      (
        await call('POST', '/identity-providers', { name: 'plain', authority: 'http://idp.example', clientId: 'x' })
      ).json().errors[0].path,
    ).toBe('authority');
    // Found by the property below: an unparsable URL was a 500 (the https check ran after z.url's failed
    // one), for a client's jwksUri too.
    expect(
      (await call('POST', '/identity-providers', { name: 'empty', authority: '', clientId: 'x' })).json().errors[0]
        .path,
    ).toBe('authority');
    expect(
      (
        await call('POST', '/clients', {
          clientId: 'keyed',
          allowedGrantTypes: ['client_credentials'],
          allowedScopes: ['api1'],
          tokenEndpointAuthMethod: 'private_key_jwt',
          jwksUri: 'not a url',
        })
      ).json().errors[0].path,
    ).toBe('jwksUri');
    expect((await call('POST', '/api-scopes', { name: 'a\u0000b' })).statusCode).toBe(422);
    expect((await call('POST', '/api-scopes', { name: 'x'.repeat(201) })).statusCode).toBe(422);
    for (const path of [
      '/api-scopes/none',
      '/identity-resources/none',
      '/api-resources/none',
      '/identity-providers/none',
    ]) {
      expect((await call('GET', path)).statusCode).toBe(404);
      expect((await call('DELETE', path)).statusCode).toBe(404);
    }
    expect((await call('GET', '/api-scopes/a%00b')).statusCode).toBe(404);
  });

  it('a deleted API scope is no longer granted: invalid_scope', async () => {
    await created('/api-scopes', { name: 'temporary' });
    const bot = await call('POST', '/clients', {
      clientId: 'temp-bot',
      allowedGrantTypes: ['client_credentials'],
      allowedScopes: ['api1', 'temporary'],
    });
    const secret = bot.json().secret as string;
    expect((await cc('temp-bot', secret, 'temporary')).statusCode).toBe(200);
    const patched = await call(
      'PATCH',
      '/clients/temp-bot',
      { allowedScopes: ['api1'] },
      { 'if-match': bot.headers.etag as string },
    );
    expect(patched.statusCode, patched.body).toBe(200);
    expect((await call('DELETE', '/api-scopes/temporary')).statusCode).toBe(204);
    const refused = await cc('m2m', 'm2m-secret', 'temporary');
    expect(refused.statusCode).toBe(400);
    expect(refused.json().error).toBe('invalid_scope');
    expect((await call('GET', '/api-scopes/temporary')).statusCode).toBe(404);
    const discovery = (await sigil.app.inject({ method: 'GET', url: '/.well-known/openid-configuration' })).json();
    expect(discovery.scopes_supported).not.toContain('temporary');
  });

  it('a new upstream provider is on the login page at once, its client secret never shown; deleted, it is gone', async () => {
    events.length = 0;
    const loginPage = async () => {
      const b = new Browser(sigil);
      const step = await b.follow(
        await b.get(`/connect/authorize?${new URLSearchParams(codeParams(pkce().challenge, { scope: 'openid' }))}`),
      );
      expect(isLoginPage(step), step.body).toBe(true);
      return step.body;
    };
    expect(await loginPage()).not.toContain('/federation/corp/login');
    const provider = await created('/identity-providers', {
      name: 'corp',
      displayName: 'Corp SSO',
      authority: 'https://idp.example',
      clientId: 'sigil',
      clientSecret: 'upstream-secret-value',
    });
    expect(provider.body).not.toContain('upstream-secret-value');
    expect(provider.json().identityProvider).toMatchObject({ name: 'corp', type: 'oidc', scope: 'openid profile' });
    expect(await loginPage()).toContain('/federation/corp/login');
    const read = await call('GET', '/identity-providers/corp');
    expect(read.body).not.toContain('upstream-secret-value');
    const moved = await call(
      'PATCH',
      '/identity-providers/corp',
      { authority: 'https://other-idp.example' },
      { 'if-match': read.headers.etag as string },
    );
    expect(moved.statusCode).toBe(422);
    expect(moved.json().errors[0].path).toBe('authority');
    const retyped = await call(
      'PATCH',
      '/identity-providers/corp',
      { type: 'google' },
      { 'if-match': read.headers.etag as string },
    );
    expect(retyped.statusCode).toBe(422);
    expect(retyped.json().errors[0].path).toBe('type');
    // Apple's private key stays in the config file.
    const apple = await call('POST', '/identity-providers', {
      name: 'apple',
      type: 'apple',
      clientId: 'com.example',
      teamId: 'TEAM123456',
      keyId: 'KEY1234567',
      privateKey: '-----BEGIN PRIVATE KEY-----\nMIGH\n-----END PRIVATE KEY-----',
    });
    expect(apple.statusCode).toBe(422);
    expect(apple.json().errors[0].path).toBe('privateKey');
    const patched = await call(
      'PATCH',
      '/identity-providers/corp',
      { clientSecret: 'rotated-upstream-secret', displayName: 'Corp' },
      { 'if-match': read.headers.etag as string },
    );
    expect(patched.statusCode, patched.body).toBe(200);
    expect(sigil.context.upstream.get('corp')?.clientSecret).toBe('rotated-upstream-secret');
    expect(sigil.context.upstream.sourceOf('corp')).toBe('store');
    expect((await call('DELETE', '/identity-providers/corp')).statusCode).toBe(204);
    expect(await loginPage()).not.toContain('/federation/corp/login');
    // Once an upstream user was linked under the name (as a sign-in there does), no new provider takes it.
    const link = { key: externalLinkKey('corp', 'upstream-7'), provider: 'corp', upstreamSubject: 'upstream-7' };
    await sigil.context.store.users.addExternalUser(link, {
      subjectId: `corp-user-${dialect}`,
      username: 'corp:upstream-7',
      tenant: null,
      passwordHash: null,
      claims: {},
      isActive: true,
    });
    const again = await call('POST', '/identity-providers', {
      name: 'corp',
      authority: 'https://elsewhere.example',
      clientId: 'sigil',
    });
    expect(again.statusCode).toBe(409);
    expect(again.json().detail).toContain('linked');
    const changes = events.filter((e) => e.name === 'admin_changed');
    expect(changes.map((e) => e.action)).toEqual([
      'identity_provider.create',
      'identity_provider.update',
      'identity_provider.delete',
    ]);
    // A preset is stored like any provider, its type's default scope filled in.
    const github = await created('/identity-providers', {
      name: 'gh',
      type: 'github',
      clientId: 'c',
      clientSecret: 's',
    });
    expect(github.json().identityProvider).toMatchObject({ type: 'github', scope: 'read:user user:email' });
    expect((await call('DELETE', '/identity-providers/gh')).statusCode).toBe(204);
    expect(changes[0]?.changes).toMatchObject({ name: 'corp', clientSecret: '(set)' });
    expect(changes[1]?.changes).toEqual({ clientSecret: '(changed)', displayName: 'Corp' });
    expect(
      changes.every(
        (e) => e.clientId === 'automation' && e.target?.type === 'identity_provider' && e.target.id === 'corp',
      ),
    ).toBe(true);
    const text = JSON.stringify(events);
    for (const s of ['upstream-secret-value', 'rotated-upstream-secret']) expect(text).not.toContain(s);
  });

  it('audits API resource changes without the secret', async () => {
    events.length = 0;
    const { secret } = (await created('/api-resources', { name: 'audited', scopes: ['api2'] })).json();
    const { secret: rotated } = (await call('POST', '/api-resources/audited/secret', { graceSeconds: 0 })).json();
    expect((await call('DELETE', '/api-resources/audited')).statusCode).toBe(204);
    const changes = events.filter((e) => e.name === 'admin_changed');
    expect(changes.map((e) => e.action)).toEqual([
      'api_resource.create',
      'api_resource.rotate_secret',
      'api_resource.delete',
    ]);
    const text = JSON.stringify(events);
    for (const s of [secret, rotated, 'sha256:']) expect(text).not.toContain(s);
  });

  it('tells config, built-in and stored resources apart in ctx.resources', async () => {
    const { resources } = sigil.context;
    expect(resources.sourceOf('apiScopes', 'api1')).toBe('config');
    expect(resources.sourceOf('apiScopes', 'sigil:admin')).toBe('built-in');
    expect(resources.sourceOf('apiScopes', 'billing.read')).toBe('store');
    expect(resources.sourceOf('identity', 'team')).toBe('store');
    expect(resources.sourceOf('apiResources', 'billing')).toBe('store');
    expect(resources.sourceOf('apiScopes', 'temporary')).toBeUndefined();
  });
  it('gives no 500 for any body on a resource write route (the last test: it may create items)', async () => {
    await created('/api-scopes', { name: 'fuzzed' });
    const routes = [
      ['POST', '/identity-resources'],
      ['POST', '/api-scopes'],
      ['POST', '/api-resources'],
      ['POST', '/identity-providers'],
      ['PATCH', '/api-scopes/fuzzed'],
      ['POST', '/api-resources/billing/secret'],
    ] as const;
    const plausible = fc.record(
      {
        name: fc.string({ maxLength: 8 }),
        scopes: fc.jsonValue({ maxDepth: 2 }),
        userClaims: fc.jsonValue({ maxDepth: 2 }),
        resourceUris: fc.jsonValue({ maxDepth: 2 }),
        authority: fc.string(),
        clientId: fc.jsonValue({ maxDepth: 1 }),
        graceSeconds: fc.jsonValue({ maxDepth: 1 }),
      },
      { requiredKeys: [] },
    );
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...routes),
        fc.oneof(fc.jsonValue({ maxDepth: 3 }), plausible),
        async ([method, path], body) => {
          const res = await call(method, path, body, { 'if-match': '*' });
          expect(res.statusCode, res.body).toBeLessThan(500);
        },
      ),
      { numRuns: 100 },
    );
  });
});
