/**
 * The scope policy of dynamically registered clients (RFC 7591), the same as that of Client ID
 * Metadata Documents' clients (src/clients/unvetted-scopes.ts): with default settings any scope
 * but Sigil's own API may be registered and is granted only through the user's consent; a client
 * registering `client_credentials` gets only the scopes an administrator listed; the registered
 * `scope` is exactly the one asked.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mintInitialToken } from '../../src/admin/registrations.js';
import { Browser, codeParams, isConsentPage, pkce, readResponse, redeem } from '../authorize-helpers.js';
import { basic, form, startSigil, type TestSigil } from '../helpers.js';
import { registrationConfig } from '../registration-helpers.js';

type Json = Record<string, unknown>;
const web = { redirect_uris: ['https://rp.example/cb'], client_name: 'Scope RP' };

/** Registers `body` on `sigil` with a fresh initial access token. */
async function register(sigil: TestSigil, body: Json) {
  const { token } = await mintInitialToken(sigil.context.store.registrations, 1, 600);
  return sigil.app.inject({
    method: 'POST',
    url: '/connect/register',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    payload: JSON.stringify(body),
  });
}

/** A client_credentials token request of a registered client. */
function ownToken(sigil: TestSigil, created: Json, scope?: string) {
  return sigil.app.inject({
    method: 'POST',
    url: '/connect/token',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      authorization: basic(String(created.client_id), String(created.client_secret)),
    },
    payload: form({ grant_type: 'client_credentials', ...(scope ? { scope } : {}) }),
  });
}

describe('the scopes of a dynamically registered client, default settings', () => {
  let sigil: TestSigil;
  beforeAll(async () => {
    sigil = await startSigil(
      registrationConfig({ allowedGrantTypes: ['authorization_code', 'refresh_token', 'client_credentials'] }),
    );
  });
  afterAll(() => sigil.close());

  it('registers an API scope for the code flow, exactly as asked, and grants it only after the consent page', async () => {
    const res = await register(sigil, {
      ...web,
      grant_types: ['authorization_code', 'refresh_token'],
      scope: 'openid api1',
    });
    expect(res.statusCode, res.body).toBe(201);
    const created = res.json<Json>();
    // Not widened: no offline_access added although refresh_token was asked.
    expect(created.scope).toBe('openid api1');
    const { verifier, challenge } = pkce();
    const browser = new Browser(sigil);
    const params = codeParams(challenge, { client_id: String(created.client_id), scope: 'openid api1' });
    // The consent page, each time: the user is asked for api1, with or without a session.
    for (const round of [1, 2]) {
      let step = await browser.follow(await browser.get(`/connect/authorize?${new URLSearchParams(params)}`));
      if (round === 1) step = await browser.follow(await browser.submitLogin(step, 'alice', 'alice'));
      expect(isConsentPage(step), step.body).toBe(true);
      expect(step.body).toContain('api1');
      const answer = readResponse(await browser.consent(step, 'yes'));
      const code = answer.params.get('code') ?? '';
      if (round === 2) {
        const redeemed = await redeem(sigil, code, {
          client: String(created.client_id),
          secret: String(created.client_secret),
          verifier,
        });
        expect(redeemed.statusCode, redeemed.body).toBe(200);
        expect(redeemed.json<Json>().scope).toBe('openid api1');
      }
    }
  });

  it('keeps its registered scope to what was asked on update (RFC 7592): no offline_access, no sigil:*', async () => {
    const created = (
      await register(sigil, { ...web, grant_types: ['authorization_code', 'refresh_token'], scope: 'openid' })
    ).json<Json>();
    const update = (scope: string) =>
      sigil.app.inject({
        method: 'PUT',
        url: new URL(String(created.registration_client_uri)).pathname,
        headers: {
          'content-type': 'application/json',
          authorization: `Bearer ${String(created.registration_access_token)}`,
        },
        payload: JSON.stringify({
          ...web,
          client_id: created.client_id,
          grant_types: ['authorization_code', 'refresh_token'],
          scope,
        }),
      });
    const refused = await update('openid sigil:admin');
    expect(refused.statusCode).toBe(400);
    expect(refused.json<Json>().error).toBe('invalid_client_metadata');
    const updated = await update('openid api2');
    expect(updated.statusCode, updated.body).toBe(200);
    expect(updated.json<Json>().scope).toBe('openid api2');
  });

  it('never registers a management scope, whatever the grant', async () => {
    for (const scope of ['sigil:admin', 'openid sigil:admin', 'sigil:admin:read', 'sigil:register', 'scim'])
      for (const grant_types of [['authorization_code'], ['client_credentials']]) {
        const res = await register(sigil, { ...web, grant_types, scope });
        expect(res.statusCode, `${scope} ${grant_types[0]}`).toBe(400);
        expect(res.json<Json>().error).toBe('invalid_client_metadata');
      }
  });

  it('refuses an API scope to a client registering client_credentials when none is listed: its own token gets none', async () => {
    for (const grant_types of [['client_credentials'], ['authorization_code', 'client_credentials']]) {
      const refused = await register(sigil, { ...web, grant_types, scope: 'api1' });
      expect(refused.statusCode, grant_types.join()).toBe(400);
      expect(refused.json<Json>().error).toBe('invalid_client_metadata');
    }
    // The control: asking no scope registers, and its client_credentials token carries no API scope.
    const res = await register(sigil, { ...web, grant_types: ['client_credentials'] });
    expect(res.statusCode, res.body).toBe(201);
    const created = res.json<Json>();
    expect(String(created.scope).split(' ')).not.toContain('api1');
    const token = await ownToken(sigil, created, 'api1');
    expect(token.statusCode).toBe(400);
    expect(token.json<Json>().error).toBe('invalid_scope');
  });
});

describe('the scopes of a dynamically registered client, registration.allowedScopes configured', () => {
  let sigil: TestSigil;
  beforeAll(async () => {
    sigil = await startSigil(
      registrationConfig({
        allowedGrantTypes: ['authorization_code', 'client_credentials'],
        allowedScopes: ['openid', 'api1'],
      }),
    );
  });
  afterAll(() => sigil.close());

  it('gives a client_credentials client a listed scope and refuses one not listed', async () => {
    const refused = await register(sigil, { ...web, grant_types: ['client_credentials'], scope: 'api1 api2' });
    expect(refused.statusCode).toBe(400);
    expect(refused.json<Json>().error).toBe('invalid_client_metadata');
    expect(refused.json<Json>().error_description).toContain('api2');
    const res = await register(sigil, { ...web, grant_types: ['client_credentials'], scope: 'api1' });
    expect(res.statusCode, res.body).toBe(201);
    const token = await ownToken(sigil, res.json<Json>());
    expect(token.statusCode, token.body).toBe(200);
    expect(token.json<Json>().scope).toBe('api1');
  });

  it('keeps the list for code-flow clients too: a scope not listed is refused, no scope asked gives the list', async () => {
    const refused = await register(sigil, { ...web, scope: 'openid api2' });
    expect(refused.statusCode).toBe(400);
    expect(refused.json<Json>().error).toBe('invalid_client_metadata');
    const defaults = await register(sigil, web);
    expect(defaults.statusCode, defaults.body).toBe(201);
    expect(defaults.json<Json>().scope).toBe('openid api1');
  });
});
