/**
 * Signing in to an organization over HTTP on a real SQLite file: `organization=<name>` held to the
 * client's `organizationUsage` (none refuses it, allow takes it, require asks for one), an unknown
 * name is `invalid_request`, a user who is not a member is `access_denied` unless the organization
 * lets them in (domain with a verified email, open) and makes them a member then; a member's
 * tokens (JWT and reference), identity token, userinfo and introspection carry `org_id` and
 * `org_name`, `org_roles` with the scope `roles` only; a refresh keeps the organization; a pushed
 * request carries the parameter; under `require` a user of several organizations picks one on
 * /account/organization; a member who joins just in time keeps roles given meanwhile.
 */
import { decodeJwt } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { joinIfNew } from '../../src/interaction/organization-join.js';
import { configOrganizationId } from '../../src/organizations/organization.js';
import { basic, form, postForm, startSigil, type TestSigil } from '../helpers.js';
import {
  Browser,
  CB,
  codeParams,
  expectClientError,
  getCode,
  input,
  pkce,
  readResponse,
  redeem,
  startAuthorizeSigil,
  webLike,
} from '../authorize-helpers.js';

let sigil: TestSigil;
const ACME = configOrganizationId('acme');
const COMMONS_ID = configOrganizationId('commons');

beforeAll(async () => {
  sigil = await startAuthorizeSigil(
    [
      webLike('b2b', { organizationUsage: 'allow', allowedScopes: ['openid', 'profile', 'roles', 'offline_access'] }),
      webLike('b2b-ref', { organizationUsage: 'allow', accessTokenType: 'reference', allowedScopes: ['openid'] }),
      webLike('b2b-must', { organizationUsage: 'require', allowedScopes: ['openid'] }),
    ],
    {
      organizations: [
        { name: 'acme', displayName: 'Acme', domains: ['acme.example'] },
        { name: 'example', displayName: 'Example', domains: ['example.com'], membership: 'domain' },
        { name: 'commons', displayName: 'Commons', membership: 'open' },
      ],
    },
  );
  await sigil.context.management.organizations.putMember('acme', '1', ['admin', 'billing']);
});
afterAll(async () => {
  await sigil?.close();
});

const params = (client: string, challenge: string, extra: Record<string, string> = {}) =>
  codeParams(challenge, { client_id: client, scope: 'openid', ...extra });

async function tokensFor(client: string, extra: Record<string, string>, user = 'alice') {
  const { verifier, challenge } = pkce();
  const code = await getCode(new Browser(sigil), params(client, challenge, extra), user);
  const res = await redeem(sigil, code, { client, verifier });
  expect(res.statusCode, res.body).toBe(200);
  return res.json<{ access_token: string; id_token: string; refresh_token?: string }>();
}

function introspect(token: string) {
  return sigil.app.inject({
    method: 'POST',
    url: '/connect/introspect',
    headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: basic('b2b-ref', 'b2b-ref-secret') },
    payload: form({ token }),
  });
}

describe('discovery', () => {
  it('lists org_id, org_name and org_roles among the claims once a client may sign in to an organization', async () => {
    const doc = (await sigil.app.inject({ method: 'GET', url: '/.well-known/openid-configuration' })).json<{
      claims_supported: string[];
    }>();
    expect(doc.claims_supported).toEqual(expect.arrayContaining(['org_id', 'org_name', 'org_roles']));
    const plain = await startSigil();
    try {
      const none = (await plain.app.inject({ method: 'GET', url: '/.well-known/openid-configuration' })).json<{
        claims_supported: string[];
      }>();
      expect(none.claims_supported).not.toContain('org_id');
    } finally {
      await plain.close();
    }
  });
});

describe('organization=<name> at the authorization endpoint', () => {
  it('is invalid_request for a client with organizationUsage none (the default)', async () => {
    const b = new Browser(sigil);
    const step = await b.get(
      `/connect/authorize?${new URLSearchParams(params('web', pkce().challenge, { organization: 'acme' }))}`,
    );
    expectClientError(step, 'invalid_request', { state: 'st' });
  });

  it('is invalid_request for an unknown organization, and for one over the length bound', async () => {
    for (const organization of ['nowhere', 'x'.repeat(64)]) {
      const step = await new Browser(sigil).get(
        `/connect/authorize?${new URLSearchParams(params('b2b', pkce().challenge, { organization }))}`,
      );
      expectClientError(step, 'invalid_request', { state: 'st' });
    }
  });

  it('is optional with allow: without it the tokens carry no organization', async () => {
    const tokens = await tokensFor('b2b', {});
    expect(decodeJwt(tokens.access_token).org_id).toBeUndefined();
    expect(decodeJwt(tokens.id_token).org_id).toBeUndefined();
  });

  it('denies a user who is not a member of an invite-only organization (access_denied to the client)', async () => {
    const step = await new Browser(sigil).authorize(params('b2b', pkce().challenge, { organization: 'acme' }), {
      user: 'bob',
    });
    expectClientError(step, 'access_denied', { state: 'st' });
  });

  it('answers prompt=none with access_denied for a signed-in non-member, login_required without a session', async () => {
    const b = new Browser(sigil);
    const none = await b.get(
      `/connect/authorize?${new URLSearchParams(params('b2b', pkce().challenge, { organization: 'acme', prompt: 'none' }))}`,
    );
    expectClientError(none, 'login_required');
    await b.signIn('bob');
    const denied = await b.get(
      `/connect/authorize?${new URLSearchParams(params('b2b', pkce().challenge, { organization: 'acme', prompt: 'none' }))}`,
    );
    expectClientError(denied, 'access_denied');
  });

  it('lets a member in: org_id and org_name in the access token, identity token and userinfo; org_roles only with roles', async () => {
    const tokens = await tokensFor('b2b', { organization: 'acme' });
    for (const token of [tokens.access_token, tokens.id_token]) {
      const claims = decodeJwt(token);
      expect(claims.org_id).toBe(ACME);
      expect(claims.org_name).toBe('acme');
      expect(claims.org_roles).toBeUndefined();
    }
    const info = await sigil.app.inject({
      method: 'GET',
      url: '/connect/userinfo',
      headers: { authorization: `Bearer ${tokens.access_token}` },
    });
    expect(info.json()).toMatchObject({ sub: '1', org_id: ACME, org_name: 'acme' });

    const withRoles = await tokensFor('b2b', { organization: 'acme', scope: 'openid roles' });
    expect(decodeJwt(withRoles.access_token).org_roles).toEqual(['admin', 'billing']);
    expect(decodeJwt(withRoles.id_token).org_roles).toEqual(['admin', 'billing']);
  });

  it('puts the organization into a reference token, as introspection shows', async () => {
    const tokens = await tokensFor('b2b-ref', { organization: 'acme' });
    const res = await introspect(tokens.access_token);
    expect(res.json()).toMatchObject({ active: true, org_id: ACME, org_name: 'acme' });
  });

  it('keeps the organization at a refresh and reads the roles again; a member removed gets invalid_grant', async () => {
    const tokens = await tokensFor('b2b', { organization: 'acme', scope: 'openid roles offline_access' });
    await sigil.context.management.organizations.putMember('acme', '1', ['admin']);
    const refresh = (token: string) =>
      postForm(sigil, '/connect/token', { grant_type: 'refresh_token', refresh_token: token }, ['b2b', 'b2b-secret']);
    const res = await refresh(tokens.refresh_token as string);
    expect(res.statusCode, res.body).toBe(200);
    const next = res.json<{ access_token: string; refresh_token: string }>();
    expect(decodeJwt(next.access_token)).toMatchObject({ org_id: ACME, org_name: 'acme', org_roles: ['admin'] });
    await sigil.context.management.organizations.removeMember('acme', '1');
    const refused = await refresh(next.refresh_token);
    expect(refused.statusCode).toBe(400);
    expect(refused.json()).toMatchObject({ error: 'invalid_grant' });
    await sigil.context.management.organizations.putMember('acme', '1', ['admin', 'billing']);
  });

  it('makes a user with a verified email at a domain organization a member on the spot', async () => {
    const tokens = await tokensFor('b2b', { organization: 'example' });
    expect(decodeJwt(tokens.access_token)).toMatchObject({ org_name: 'example' });
    const { members } = await sigil.context.management.organizations.members('example', { limit: 10 });
    expect(members).toEqual([{ subject: '1', roles: [] }]);
  });

  it('denies a user without a verified email at a domain organization', async () => {
    const step = await new Browser(sigil).authorize(params('b2b', pkce().challenge, { organization: 'example' }), {
      user: 'bob',
    });
    expectClientError(step, 'access_denied');
  });

  it('lets anyone into an open organization, as a new member', async () => {
    const tokens = await tokensFor('b2b', { organization: 'commons' }, 'bob');
    expect(decodeJwt(tokens.id_token)).toMatchObject({ org_name: 'commons' });
    const { members } = await sigil.context.management.organizations.members('commons', { limit: 10 });
    expect(members.map((m) => m.subject)).toContain('2');
  });

  it('carries the parameter in a pushed request', async () => {
    const { verifier, challenge } = pkce();
    const pushed = await postForm(sigil, '/connect/par', params('b2b', challenge, { organization: 'acme' }), [
      'b2b',
      'b2b-secret',
    ]);
    expect(pushed.statusCode, pushed.body).toBe(201);
    const uri = pushed.json<{ request_uri: string }>().request_uri;
    const code = readResponse(
      await new Browser(sigil).authorize({ client_id: 'b2b', request_uri: uri }, { user: 'alice' }),
    ).params.get('code');
    const res = await redeem(sigil, code as string, { client: 'b2b', verifier });
    expect(decodeJwt(res.json<{ access_token: string }>().access_token).org_id).toBe(ACME);

    const refused = await postForm(sigil, '/connect/par', params('web', challenge, { organization: 'acme' }), [
      'web',
      'web-secret',
    ]);
    expect(refused.statusCode).toBe(400);
    expect(refused.json()).toMatchObject({ error: 'invalid_request' });
  });
});

describe('organizationUsage require', () => {
  it('takes the only organization of a user who has one, without the picker', async () => {
    await sigil.context.management.organizations.putMember('commons', '2', ['guest']);
    const tokens = await tokensFor('b2b-must', {}, 'bob');
    expect(decodeJwt(tokens.id_token)).toMatchObject({ org_id: configOrganizationId('commons'), org_name: 'commons' });
  });

  it('sends a user of several organizations to the picker, and prompt=none gets interaction_required', async () => {
    const b = new Browser(sigil);
    await b.signIn('alice');
    const step = await b.get(`/connect/authorize?${new URLSearchParams(params('b2b-must', pkce().challenge))}`);
    expect(step.status).toBe(303);
    expect(step.location).toMatch(/^\/account\/organization\?interaction=/);
    const none = await b.get(
      `/connect/authorize?${new URLSearchParams(params('b2b-must', pkce().challenge, { prompt: 'none' }))}`,
    );
    expectClientError(none, 'interaction_required');
  });

  it('denies a user with no organization', async () => {
    const step = await new Browser(sigil).authorize(params('b2b-must', pkce().challenge), { user: 'carol' });
    expectClientError(step, 'access_denied', { target: CB });
  });
});

describe('the organization picker (/account/organization)', () => {
  beforeAll(async () => {
    // bob: a member of acme and commons, not of example.
    await sigil.context.management.organizations.putMember('acme', '2', []);
    await sigil.context.management.organizations.putMember('commons', '2', ['guest']);
  });
  afterAll(async () => {
    await sigil.context.management.organizations.removeMember('acme', '2');
  });

  /** Signs bob in through a require client's request; the picker page and the code verifier. */
  async function openPicker(b: Browser) {
    const { verifier, challenge } = pkce();
    const step = await b.follow(
      await b.get(`/connect/authorize?${new URLSearchParams(params('b2b-must', challenge))}`),
    );
    const page = await b.follow(await b.submitLogin(step, 'bob', 'bob'));
    expect(page.status, page.body).toBe(200);
    return { page, verifier };
  }

  const pick = (b: Browser, page: { body: string }, organization: string, extra: Record<string, string> = {}) =>
    b.post('/account/organization', {
      csrf_token: input(page.body, 'csrf_token'),
      interaction: input(page.body, 'interaction'),
      organization,
      button: 'continue',
      ...extra,
    });

  it('lists the user’s organizations as radio inputs, with display name and name', async () => {
    const { page } = await openPicker(new Browser(sigil));
    expect(page.body).toContain('action="/account/organization"');
    for (const [name, display] of [
      ['acme', 'Acme'],
      ['commons', 'Commons'],
    ]) {
      expect(page.body).toContain(`type="radio" name="organization" value="${name}"`);
      expect(page.body).toContain(display);
    }
    expect(page.body).not.toContain('value="example"');
    expect(page.body).toContain('name="button" value="continue"');
    expect(input(page.body, 'csrf_token')).not.toBe('');
  });

  it('refuses an organization the user is not a member of (400, the page again) and stores nothing', async () => {
    const b = new Browser(sigil);
    const { page } = await openPicker(b);
    for (const organization of ['example', 'nowhere', '']) {
      const refused = await pick(b, page, organization);
      expect(refused.status).toBe(400);
      expect(refused.body).toContain('role="alert"');
      expect(refused.body).toContain('value="acme"');
    }
    const again = await b.get(`/account/organization?interaction=${input(page.body, 'interaction')}`);
    expect(again.status).toBe(200);
  });

  it('refuses a form without its CSRF token (403)', async () => {
    const b = new Browser(sigil);
    const { page } = await openPicker(b);
    const refused = await b.post('/account/organization', {
      interaction: input(page.body, 'interaction'),
      organization: 'acme',
      button: 'continue',
    });
    expect(refused.status).toBe(403);
  });

  it('shows the expired page for an unknown interaction and for another browser’s', async () => {
    const { page } = await openPicker(new Browser(sigil));
    const other = new Browser(sigil);
    await other.signIn('bob');
    for (const id of ['unknown', input(page.body, 'interaction')]) {
      const step = await other.get(`/account/organization?interaction=${encodeURIComponent(id)}`);
      expect(step.status).toBe(400);
      expect(step.body).not.toContain('name="organization"');
    }
  });

  it('answers with a code whose tokens carry the organization picked', async () => {
    const b = new Browser(sigil);
    const { page, verifier } = await openPicker(b);
    const done = await b.follow(await pick(b, page, 'commons'));
    const code = readResponse(done).params.get('code');
    expect(code).toBeTruthy();
    const res = await redeem(sigil, code as string, { client: 'b2b-must', verifier });
    expect(res.statusCode, res.body).toBe(200);
    const tokens = res.json<{ access_token: string; id_token: string }>();
    for (const token of [tokens.access_token, tokens.id_token])
      expect(decodeJwt(token)).toMatchObject({ org_id: COMMONS_ID, org_name: 'commons' });
  });

  it('answers cancel with access_denied', async () => {
    const b = new Browser(sigil);
    const { page } = await openPicker(b);
    expectClientError(await b.follow(await pick(b, page, '', { button: 'cancel' })), 'access_denied', { target: CB });
  });
});

describe('just-in-time membership', () => {
  it('keeps the roles of a user who became a member meanwhile', async () => {
    await sigil.context.management.organizations.putMember('commons', '3', ['owner']);
    const commons = sigil.context.organizations.byName('commons');
    const organization = { id: COMMONS_ID, name: 'commons', roles: [], join: true };
    expect(commons?.id).toBe(COMMONS_ID);
    expect(await joinIfNew(sigil.context, organization, '3', 'b2b')).toEqual(['owner']);
    expect(await sigil.context.store.organizations.member(COMMONS_ID, '3')).toEqual({ subject: '3', roles: ['owner'] });
    await sigil.context.management.organizations.removeMember('commons', '3');
    expect(await joinIfNew(sigil.context, organization, '3', 'b2b')).toEqual([]);
    expect(await sigil.context.store.organizations.member(COMMONS_ID, '3')).toEqual({ subject: '3', roles: [] });
  });
});
