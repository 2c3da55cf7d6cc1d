/**
 * Rich Authorization Requests (RFC 9396) end to end with a real relying party: openid-client v6
 * pushes the request with `authorization_details` (RFC 9126), Chromium signs the user in and shows
 * the consent page listing the details (escaped: a creditor name written as HTML stays text), then
 * openid-client redeems the code asking for one of the two payments (§6.1), refreshes asking for
 * the other and then for all (§7.2), and the API introspects the access tokens (§9.2), all
 * against the built `sigil start` process.
 */
import * as oidc from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ConfigInput } from '../../src/index.js';
import { testConfig } from '../helpers.js';
import { type BrowserFixture, callbackResponse, newPage, startBrowserFixture, submitLogin } from './browser-fixture.js';

const PAYMENT_SCHEMA = {
  type: 'object',
  additionalProperties: false,
  required: ['type', 'instructedAmount', 'creditorName'],
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
};
/** A payment whose creditor name is HTML: the consent page must show it as text. */
const RENT = {
  type: 'payment_initiation',
  instructedAmount: { currency: 'EUR', amount: '123.50' },
  creditorName: '<img src=x onerror="alert(1)">Landlord & Sons',
};
const FEE = { type: 'payment_initiation', instructedAmount: { currency: 'EUR', amount: '2.00' }, creditorName: 'Bank' };
const SHOP = { id: 'shop', secret: 'shop-secret' } as const;

function rarConfig(cb: string): ConfigInput {
  const base = testConfig();
  return {
    ...base,
    apiScopes: [...(base.apiScopes ?? []), { name: 'payments', displayName: 'Make payments' }],
    apiResources: [
      ...(base.apiResources ?? []),
      {
        name: 'payments',
        scopes: ['payments'],
        secrets: ['payments-secret'],
        authorizationDetailsTypes: [{ type: 'payment_initiation', schema: PAYMENT_SCHEMA }],
      },
    ],
    clients: [
      ...(base.clients ?? []),
      {
        clientId: SHOP.id,
        clientName: 'Shop',
        clientSecrets: [SHOP.secret],
        allowedGrantTypes: ['authorization_code', 'refresh_token'],
        allowedScopes: ['openid', 'payments', 'offline_access'],
        allowOfflineAccess: true,
        requireConsent: true,
        redirectUris: [`${cb}/cb`],
        // The relying party is http://rp.test (see browser-fixture.ts).
        allowHttpRedirectUris: true,
        authorizationDetailsTypes: ['payment_initiation'],
      },
    ],
  };
}

let f: BrowserFixture;
let shop: oidc.Configuration;
let payments: oidc.Configuration;

beforeAll(async () => {
  f = await startBrowserFixture(rarConfig);
  const insecure = { execute: [oidc.allowInsecureRequests] };
  const issuer = new URL(f.sigil.url);
  [shop, payments] = await Promise.all([
    oidc.discovery(issuer, SHOP.id, SHOP.secret, undefined, insecure),
    oidc.discovery(issuer, 'payments', 'payments-secret', undefined, insecure),
  ]);
});
afterAll(async () => f?.close());

/** The `authorization_details` member of a token or introspection response. */
const detailsOf = (response: object) => (response as { authorization_details?: unknown }).authorization_details;

describe('authorization_details with openid-client, PAR and the consent page', () => {
  it('pushes the details, shows them escaped for consent, and narrows them at the token request and at refresh', async () => {
    const { context, page, dialogs } = await newPage(f.browser);
    const codeVerifier = oidc.randomPKCECodeVerifier();
    const state = oidc.randomState();
    const url = await oidc.buildAuthorizationUrlWithPAR(shop, {
      redirect_uri: `${f.cb.url}/cb`,
      response_type: 'code',
      scope: 'openid payments offline_access',
      code_challenge: await oidc.calculatePKCECodeChallenge(codeVerifier),
      code_challenge_method: 'S256',
      state,
      authorization_details: JSON.stringify([RENT, FEE]),
    });
    // Pushed: the browser carries only the request_uri (RFC 9126 §4), not the details.
    expect([...url.searchParams.keys()].sort()).toEqual(['client_id', 'request_uri']);
    const since = f.cb.hits.length;
    await page.goto(url.href);
    await page.waitForURL(/\/account\/login\?interaction=/);
    await submitLogin(page, 'alice');
    await page.waitForURL(/\/consent\?interaction=/);

    const listed = page.locator('ul.authorization-details > li');
    await expect(listed.count()).resolves.toBe(2);
    const first = await listed.nth(0).innerText();
    expect(first).toContain('payment_initiation');
    expect(first).toContain('123.50');
    // The HTML in the creditor name is text on the page: no element was made of it.
    expect(first).toContain('<img src=x onerror=\\"alert(1)\\">Landlord & Sons');
    await expect(page.locator('ul.authorization-details img').count()).resolves.toBe(0);
    await expect(listed.nth(1).innerText()).resolves.toContain('"creditorName": "Bank"');
    await page.locator('button[name=button][value=yes]').click();
    await callbackResponse(page, f.cb, since);
    expect(dialogs).toEqual([]);

    // The code's redemption asks for the rent only (RFC 9396 §6.1).
    const tokens = await oidc.authorizationCodeGrant(
      shop,
      new URL(page.url()),
      { pkceCodeVerifier: codeVerifier, expectedState: state },
      { authorization_details: JSON.stringify([RENT]) },
    );
    expect(detailsOf(tokens)).toStrictEqual([RENT]);
    const introspected = await oidc.tokenIntrospection(payments, tokens.access_token);
    expect(introspected.active).toBe(true);
    expect(detailsOf(introspected)).toStrictEqual([RENT]);

    // A refresh asks for the fee only (§7.2); the next one, without the parameter, gets both again.
    const fee = await oidc.refreshTokenGrant(shop, tokens.refresh_token!, {
      authorization_details: JSON.stringify([FEE]),
    });
    expect(detailsOf(fee)).toStrictEqual([FEE]);
    expect(detailsOf(await oidc.tokenIntrospection(payments, fee.access_token))).toStrictEqual([FEE]);
    const both = await oidc.refreshTokenGrant(shop, fee.refresh_token ?? tokens.refresh_token!);
    expect(detailsOf(both)).toStrictEqual([RENT, FEE]);

    // A payment the user never saw is refused, as openid-client reports it.
    const forged = { ...FEE, instructedAmount: { currency: 'EUR', amount: '2000.00' } };
    await expect(
      oidc.refreshTokenGrant(shop, both.refresh_token ?? tokens.refresh_token!, {
        authorization_details: JSON.stringify([forged]),
      }),
    ).rejects.toMatchObject({ error: 'invalid_authorization_details' });
    await context.close();
  }, 60_000);
});
