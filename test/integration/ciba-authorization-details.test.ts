/**
 * Rich Authorization Requests (RFC 9396) at `/connect/ciba` over HTTP: `authorization_details`
 * checked as at authorize (`invalid_authorization_details`, nothing stored), shown on the approval
 * page escaped and in the user's language as the consent page shows them, and carried by the token
 * response, the JWT access token, introspection and the refresh.
 */
import { decodeJwt } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashHandle } from '../../src/crypto/handles.js';
import { Browser, input } from '../authorize-helpers.js';
import {
  type BasicCredentials,
  expectNoLeak,
  introspect,
  postForm,
  sleep,
  startSigil,
  testConfig,
  type TestSigil,
  tokenRequest,
} from '../helpers.js';

const GRANT = 'urn:openid:params:grant-type:ciba';
const TILL: BasicCredentials = ['till', 'till-secret'];

/** A payment as RFC 9396 §2 shows one, with markup in a text the page must show as text. */
const PAYMENT = {
  type: 'payment_initiation',
  instructedAmount: { currency: 'EUR', amount: '123.50' },
  creditorName: '<b>Merchant</b> & Co',
};

let sigil: TestSigil;
beforeAll(async () => {
  const base = testConfig();
  sigil = await startSigil({
    apiScopes: [...(base.apiScopes ?? []), { name: 'payments' }, { name: 'accounts' }],
    apiResources: [
      ...(base.apiResources ?? []),
      {
        name: 'payments',
        scopes: ['payments'],
        secrets: ['payments-secret'],
        authorizationDetailsTypes: [
          {
            type: 'payment_initiation',
            schema: {
              type: 'object',
              additionalProperties: false,
              required: ['type', 'instructedAmount'],
              properties: {
                type: { const: 'payment_initiation' },
                instructedAmount: {
                  type: 'object',
                  additionalProperties: false,
                  required: ['currency', 'amount'],
                  properties: {
                    currency: { type: 'string', pattern: '^[A-Z]{3}$' },
                    amount: { type: 'string', pattern: '^[0-9]{1,10}(\\.[0-9]{1,2})?$' },
                  },
                },
                creditorName: { type: 'string', maxLength: 140 },
              },
            },
          },
        ],
      },
      {
        name: 'accounts',
        scopes: ['accounts'],
        authorizationDetailsTypes: [{ type: 'account_information', schema: { type: 'object' } }],
      },
    ],
    clients: [
      ...(base.clients ?? []),
      {
        clientId: 'till',
        clientName: 'Shop Till',
        clientSecrets: ['till-secret'],
        allowedGrantTypes: [GRANT, 'refresh_token'],
        allowedScopes: ['openid', 'payments', 'offline_access'],
        allowOfflineAccess: true,
        authorizationDetailsTypes: ['payment_initiation'],
        pollingInterval: 1,
      },
    ],
  });
});
afterAll(async () => sigil?.close());

/** `POST /connect/ciba` for Alice with `details` (JSON text) as `authorization_details`. */
function ask(details: string, extra: Record<string, string> = {}) {
  return postForm(
    sigil,
    '/connect/ciba',
    { scope: 'openid payments offline_access', login_hint: 'alice', authorization_details: details, ...extra },
    TILL,
  );
}

/** Alice's approval page, in `lang`. */
async function pageOf(b: Browser, lang = 'en') {
  const page = await b.get('/account/requests', { 'accept-language': lang });
  expect(page.status, page.body).toBe(200);
  return page;
}

describe('authorization_details at /connect/ciba', () => {
  it('shows the details escaped in the user language; the tokens, the JWT, introspection and the refresh carry them', async () => {
    const res = await ask(JSON.stringify([PAYMENT]), { binding_message: 'TILL-1' });
    expect(res.statusCode, res.body).toBe(200);
    const id = res.json<{ auth_req_id: string }>().auth_req_id;

    const alice = new Browser(sigil);
    await alice.signIn('alice');
    const fr = await pageOf(alice, 'fr');
    expect(fr.body).toContain('Détails de cette demande :');
    expect(fr.body).toContain('<strong>payment_initiation</strong>');
    expect(fr.body).toContain('&lt;b&gt;Merchant&lt;/b&gt; &amp; Co');
    expect(fr.body).not.toContain('<b>Merchant');
    const en = await pageOf(alice);
    expect(en.body).toContain('Details of this request:');
    const approved = await alice.post('/account/requests', {
      csrf_token: input(en.body, 'csrf_token'),
      request: hashHandle(id),
      button: 'approve',
    });
    expect(approved.status).toBe(200);

    await sleep(1100);
    const tokens = await tokenRequest(sigil, { grant_type: GRANT, auth_req_id: id }, TILL);
    expect(tokens.statusCode, tokens.body).toBe(200);
    const body = tokens.json<{ access_token: string; refresh_token: string; authorization_details: unknown }>();
    expect(body.authorization_details).toStrictEqual([PAYMENT]);
    expect(decodeJwt(body.access_token).authorization_details).toStrictEqual([PAYMENT]);
    const info = await introspect(sigil, body.access_token, ['payments', 'payments-secret']);
    expect(info.json<{ active: boolean }>().active).toBe(true);
    expect(info.json<{ authorization_details: unknown }>().authorization_details).toStrictEqual([PAYMENT]);
    const refreshed = await tokenRequest(
      sigil,
      { grant_type: 'refresh_token', refresh_token: body.refresh_token },
      TILL,
    );
    expect(refreshed.statusCode, refreshed.body).toBe(200);
    expect(refreshed.json<{ authorization_details: unknown }>().authorization_details).toStrictEqual([PAYMENT]);
  });

  it('a request without details has none, on the page and in the tokens', async () => {
    const res = await postForm(sigil, '/connect/ciba', { scope: 'openid payments', login_hint: 'bob' }, TILL);
    const id = res.json<{ auth_req_id: string }>().auth_req_id;
    const bob = new Browser(sigil);
    await bob.signIn('bob');
    const page = await pageOf(bob);
    expect(page.body).not.toContain('authorization-details');
    await bob.post('/account/requests', {
      csrf_token: input(page.body, 'csrf_token'),
      request: hashHandle(id),
      button: 'approve',
    });
    await sleep(1100);
    const tokens = await tokenRequest(sigil, { grant_type: GRANT, auth_req_id: id }, TILL);
    expect(tokens.statusCode, tokens.body).toBe(200);
    expect(tokens.json<{ authorization_details?: unknown }>().authorization_details).toBeUndefined();
    expect(decodeJwt(tokens.json<{ access_token: string }>().access_token).authorization_details).toBeUndefined();
  });

  it('refuses what authorize refuses with invalid_authorization_details, and stores nothing', async () => {
    const refusals = [
      JSON.stringify([{ type: 'teleport' }]),
      // A type the till may not use.
      JSON.stringify([{ type: 'account_information' }]),
      JSON.stringify([{ ...PAYMENT, extra: 'not in the schema' }]),
      JSON.stringify([{ ...PAYMENT, instructedAmount: { currency: 'EUR', amount: 'lots' } }]),
      JSON.stringify(PAYMENT),
      '[]',
      '[{',
      `[${'['.repeat(1000)}${']'.repeat(1000)}]`,
      JSON.stringify([{ ...PAYMENT, creditorName: 'x'.repeat(5000) }]),
    ];
    const bob = new Browser(sigil);
    await bob.signIn('bob');
    const before = (await pageOf(bob)).body.match(/name="request"/g)?.length ?? 0;
    for (const details of refusals) {
      const res = await postForm(
        sigil,
        '/connect/ciba',
        { scope: 'openid payments', login_hint: 'bob', authorization_details: details },
        TILL,
      );
      expect(res.statusCode, details.slice(0, 80)).toBe(400);
      expect(res.json<{ error: string }>().error).toBe('invalid_authorization_details');
      expectNoLeak(res as never);
    }
    expect((await pageOf(bob)).body.match(/name="request"/g)?.length ?? 0).toBe(before);
  });
});
