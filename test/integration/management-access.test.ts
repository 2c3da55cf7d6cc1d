/**
 * Access to Sigil's management API: the built-in API resource `sigil` and its
 * scopes, client_credentials for automation, the admin role and MFA for tokens acting for a user
 * (scopes dropped silently otherwise), and the guard of management routes: 401 with a Bearer
 * challenge (RFC 6750 §3), 403 `insufficient_scope` naming the scope (§3.1), DPoP-bound tokens
 * (RFC 9449 §7); a SCIM change made with a token acting for a user is stored in the audit log
 * with the client and the user.
 */
import { decodeJwt } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveConfig } from '../../src/config/loader.js';
import { requireScope, sendTokenError, type Caller } from '../../src/endpoints/protected-resource.js';
import { OAuthError } from '../../src/protocol/errors.js';
import {
  authorizeUrl,
  Browser,
  codeParams,
  isLoginPage,
  pkce,
  readResponse,
  redeem,
  startAuthorizeSigil,
  webLike,
} from '../authorize-helpers.js';
import { proof, proofKey } from '../dpop-helpers.js';
import { clientTokens, passwordTokens, postForm, testConfig, tokenRequest, type TestSigil } from '../helpers.js';
import { enrollTotp, isMfaPage, submitCode, totpCode } from '../mfa-helpers.js';

const ACR_MFA = 'urn:sigil:acr:mfa';
const ISSUER = 'http://127.0.0.1:5999';
const GUARDED = '/test/guarded';

let sigil: TestSigil;
beforeAll(async () => {
  const base = testConfig();
  sigil = await startAuthorizeSigil(
    [
      {
        clientId: 'automation',
        clientSecrets: ['automation-secret'],
        allowedGrantTypes: ['client_credentials'],
        allowedScopes: ['scim', 'sigil:admin:read', 'sigil:register', 'api1'],
      },
      webLike('admin-web', { allowedScopes: ['openid', 'profile', 'scim', 'sigil:admin', 'offline_access'] }),
      {
        clientId: 'admin-ropc',
        clientSecrets: ['admin-ropc-secret'],
        allowedGrantTypes: ['password'],
        allowedScopes: ['openid', 'scim', 'api1'],
      },
      ...base.clients!.filter((c) => ['m2m'].includes(c.clientId)),
    ],
    {
      admin: { userRole: 'admin' },
      users: [...base.users!, { subjectId: '9', username: 'erin', password: 'erin', claims: { role: 'admin' } }],
    },
  );
  // A management route as the SCIM and admin endpoints have it: the guard, then the caller.
  sigil.app.get(GUARDED, async (request, reply) => {
    try {
      const caller: Caller = await requireScope(sigil.context, request, GUARDED, ['scim']);
      return reply.send(caller);
    } catch (err) {
      if (err instanceof OAuthError) return sendTokenError(reply, err);
      throw err;
    }
  });
});
afterAll(async () => {
  await sigil.close();
});

function guarded(headers: Record<string, string> = {}) {
  return sigil.app.inject({ method: 'GET', url: GUARDED, headers });
}

/** A code flow for `user` at `admin-web` (with a TOTP step when `totp` is given); the token response. */
async function codeFlow(
  user: string,
  totp?: string,
): Promise<{ access_token: string; scope: string; refresh_token?: string }> {
  const b = new Browser(sigil);
  const { challenge, verifier } = pkce();
  const params = codeParams(challenge, {
    client_id: 'admin-web',
    scope: 'openid scim sigil:admin offline_access',
    ...(totp ? { acr_values: ACR_MFA } : {}),
  });
  const login = await b.follow(await b.get(authorizeUrl(params)));
  expect(isLoginPage(login), login.body).toBe(true);
  let step = await b.follow(await b.submitLogin(login, user, user));
  if (totp) {
    expect(isMfaPage(step), step.body).toBe(true);
    step = await submitCode(b, step, totpCode(totp, 1));
  }
  const code = readResponse(step).params.get('code') ?? '';
  const res = await redeem(sigil, code, { client: 'admin-web', verifier });
  expect(res.statusCode, res.body).toBe(200);
  return res.json();
}

/** Enrolls TOTP for `user` from /account; returns the secret. */
async function withTotp(user: string): Promise<string> {
  const b = new Browser(sigil);
  await b.signIn(user);
  return (await enrollTotp(b)).secret;
}

describe('the built-in API resource sigil', () => {
  it('issues the management scopes to a client that lists them, with aud sigil (client_credentials)', async () => {
    const tokens = await clientTokens(sigil, 'scim sigil:register', ['automation', 'automation-secret']);
    expect(tokens.scope).toBe('scim sigil:register');
    expect(decodeJwt(tokens.access_token).aud).toBe('sigil');
    const all = await clientTokens(sigil, undefined, ['automation', 'automation-secret']);
    expect(all.scope.split(' ').sort()).toEqual(['api1', 'scim', 'sigil:admin:read', 'sigil:register']);
    expect(decodeJwt(all.access_token).aud).toEqual(['api1', 'sigil']);
  });

  it('refuses them to a client that does not list them (invalid_scope)', async () => {
    const res = await tokenRequest(sigil, { grant_type: 'client_credentials', scope: 'scim' }, ['m2m', 'm2m-secret']);
    expect(res.statusCode).toBe(400);
    expect(res.json().error).toBe('invalid_scope');
  });

  it('lists them in discovery like any API scope', async () => {
    const res = await sigil.app.inject({ method: 'GET', url: '/.well-known/openid-configuration' });
    expect(res.json<{ scopes_supported: string[] }>().scopes_supported).toEqual(
      expect.arrayContaining(['scim', 'sigil:admin', 'sigil:admin:read', 'sigil:register']),
    );
  });

  it('refuses a config that declares one of them, and accepts clients that list them', () => {
    expect(() => resolveConfig(testConfig({ apiScopes: [{ name: 'scim' }] }))).toThrow(/"scim" is built in/);
    expect(() => resolveConfig(testConfig({ apiResources: [{ name: 'sigil', scopes: [] }] }))).toThrow(
      /"sigil" is built in/,
    );
    const cfg = resolveConfig(
      testConfig({
        clients: [
          {
            clientId: 'x',
            clientSecrets: ['s'],
            allowedGrantTypes: ['client_credentials'],
            allowedScopes: ['sigil:admin'],
          },
        ],
      }),
    );
    expect(cfg.admin.userRole).toBe('sigil-admin');
  });
});

describe('tokens acting for a user', () => {
  it('carry the scopes for a user in admin.userRole after a multi-factor sign-in, and keep them on refresh', async () => {
    const tokens = await codeFlow('alice', await withTotp('alice'));
    expect(tokens.scope.split(' ')).toEqual(expect.arrayContaining(['scim', 'sigil:admin']));
    expect(decodeJwt(tokens.access_token)).toMatchObject({ aud: 'sigil', amr: expect.arrayContaining(['mfa']) });
    const caller = await guarded({ authorization: `Bearer ${tokens.access_token}` });
    expect(caller.statusCode, caller.body).toBe(200);
    expect(caller.json()).toEqual({ clientId: 'admin-web', sub: '1', scopes: expect.arrayContaining(['scim']) });
    const refreshed = await postForm(
      sigil,
      '/connect/token',
      { grant_type: 'refresh_token', refresh_token: tokens.refresh_token ?? '' },
      ['admin-web', 'admin-web-secret'],
    );
    expect(refreshed.statusCode, refreshed.body).toBe(200);
    expect(refreshed.json().scope.split(' ')).toEqual(expect.arrayContaining(['scim', 'sigil:admin']));
  });

  it('drop them silently for a user in the role signed in with a password only', async () => {
    const tokens = await codeFlow('erin');
    expect(tokens.scope.split(' ').sort()).toEqual(['offline_access', 'openid']);
    const res = await guarded({ authorization: `Bearer ${tokens.access_token}` });
    expect(res.statusCode).toBe(403);
    const ropc = await passwordTokens(sigil, {
      client: ['admin-ropc', 'admin-ropc-secret'],
      username: 'erin',
      scope: 'openid scim api1',
    });
    expect(ropc.scope).toBe('openid api1');
  });

  it('drop them silently for a user outside the role, even after MFA, and on every refresh', async () => {
    const tokens = await codeFlow('bob', await withTotp('bob'));
    expect(decodeJwt(tokens.access_token).amr).toContain('mfa');
    expect(tokens.scope.split(' ').sort()).toEqual(['offline_access', 'openid']);
    const refreshed = await postForm(
      sigil,
      '/connect/token',
      { grant_type: 'refresh_token', refresh_token: tokens.refresh_token ?? '', scope: 'openid scim' },
      ['admin-web', 'admin-web-secret'],
    );
    // The refresh token never held `scim`: asking for it is asking beyond the grant (RFC 6749 §6).
    expect(refreshed.statusCode).toBe(400);
    expect(refreshed.json().error).toBe('invalid_scope');
  });
});

describe('the guard of management routes', () => {
  it('answers 401 with a bare Bearer challenge and no body without a token (RFC 6750 §3.1)', async () => {
    const res = await guarded();
    expect(res.statusCode).toBe(401);
    expect(res.headers['www-authenticate']).toMatch(/^Bearer realm="sigil"/);
    expect(res.headers['www-authenticate']).not.toContain('error=');
    expect(res.body).toBe('');
  });

  it('answers 401 invalid_token for an invalid token, 400 for malformed credentials', async () => {
    const res = await guarded({ authorization: 'Bearer not-a-token' });
    expect(res.statusCode).toBe(401);
    expect(res.headers['www-authenticate']).toContain('error="invalid_token"');
    const malformed = await guarded({ authorization: 'Bearer a b' });
    expect(malformed.statusCode).toBe(400);
  });

  it('answers 403 insufficient_scope naming the scope for a token without it', async () => {
    const { access_token } = await clientTokens(sigil, 'api1');
    const res = await guarded({ authorization: `Bearer ${access_token}` });
    expect(res.statusCode).toBe(403);
    expect(res.headers['www-authenticate']).toMatch(
      /^Bearer realm="sigil", error="insufficient_scope", error_description="[^"]+", scope="scim"$/,
    );
    expect(res.json().error).toBe('insufficient_scope');
  });

  it('returns the caller of a client token: client_id, no sub, the scopes', async () => {
    const { access_token } = await clientTokens(sigil, 'scim', ['automation', 'automation-secret']);
    const res = await guarded({ authorization: `Bearer ${access_token}` });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toEqual({ clientId: 'automation', scopes: ['scim'] });
  });

  it('accepts a DPoP-bound token with a proof of its key for the route URL, and refuses it as Bearer', async () => {
    const key = await proofKey();
    const issued = await postForm(
      sigil,
      '/connect/token',
      { grant_type: 'client_credentials', scope: 'scim' },
      ['automation', 'automation-secret'],
      {
        dpop: await proof(key, `${ISSUER}/connect/token`),
      },
    );
    expect(issued.statusCode, issued.body).toBe(200);
    const { access_token, token_type } = issued.json();
    expect(token_type).toBe('DPoP');
    const ok = await guarded({
      authorization: `DPoP ${access_token}`,
      dpop: await proof(key, `${ISSUER}${GUARDED}`, { htm: 'GET', accessToken: access_token }),
    });
    expect(ok.statusCode, ok.body).toBe(200);
    expect(ok.json().clientId).toBe('automation');
    const wrongUrl = await guarded({
      authorization: `DPoP ${access_token}`,
      dpop: await proof(key, `${ISSUER}/connect/userinfo`, { htm: 'GET', accessToken: access_token }),
    });
    expect(wrongUrl.statusCode).toBe(401);
    expect(wrongUrl.headers['www-authenticate']).toContain('error="invalid_dpop_proof"');
    const asBearer = await guarded({ authorization: `Bearer ${access_token}` });
    expect(asBearer.statusCode).toBe(401);
    expect(asBearer.headers['www-authenticate']).toMatch(/^DPoP /);
  });
});

describe('SCIM changes made by a user', () => {
  it('a group membership change is in the audit log with the client and the user who made it (resource_updated)', async () => {
    const tokens = await codeFlow('erin', await withTotp('erin'));
    const call = (method: 'GET' | 'POST' | 'PATCH', url: string, body?: unknown) =>
      sigil.app.inject({
        method,
        url,
        headers: {
          authorization: `Bearer ${tokens.access_token}`,
          ...(body !== undefined ? { 'content-type': 'application/scim+json' } : {}),
        },
        ...(body !== undefined ? { payload: JSON.stringify(body) } : {}),
      });
    const user = await call('POST', '/scim/v2/Users', {
      schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'],
      userName: 'audited-member',
    });
    expect(user.statusCode, user.body).toBe(201);
    const group = await call('POST', '/scim/v2/Groups', {
      schemas: ['urn:ietf:params:scim:schemas:core:2.0:Group'],
      displayName: 'audited-group',
    });
    expect(group.statusCode, group.body).toBe(201);
    const groupId = String(group.json().id);
    const patched = await call('PATCH', `/scim/v2/Groups/${groupId}`, {
      schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'],
      Operations: [{ op: 'add', path: 'members', value: [{ value: user.json().id }] }],
    });
    expect(patched.statusCode, patched.body).toBe(200);
    await sigil.context.management.audit.flush();
    const log = await call('GET', '/admin/v1/events?type=resource_updated&subject=9&client_id=admin-web');
    expect(log.statusCode, log.body).toBe(200);
    const change = log.json().events.find((e: { target?: { id: string } }) => e.target?.id === groupId);
    expect(change).toMatchObject({
      name: 'resource_updated',
      endpoint: 'scim',
      clientId: 'admin-web',
      subjectId: '9',
      target: { type: 'Group', id: groupId },
      changed: ['members'],
    });
  });
});
