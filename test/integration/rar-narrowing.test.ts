/**
 * Narrowing Rich Authorization Requests (RFC 9396 §6.1 at the code's redemption, §7.2 at a
 * refresh): `authorization_details` at the token endpoint may ask for some of the objects the
 * grant holds, each equal as a whole to one of them; the response and access token carry those,
 * the refresh token keeps the grant's, and anything else is `invalid_authorization_details`
 * without using up the code or the refresh token.
 */
import fc from 'fast-check';
import { decodeJwt } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { narrowAuthorizationDetails } from '../../src/resources/authorization-details.js';
import { Browser, codeParams, getCode, pkce, redeem, startAuthorizeSigil, webLike } from '../authorize-helpers.js';
import { introspect, testConfig, tokenRequest, type TestSigil } from '../helpers.js';

const PAYMENT_SCHEMA = {
  type: 'object',
  required: ['type', 'instructedAmount'],
  properties: {
    type: { const: 'payment_initiation' },
    instructedAmount: {
      type: 'object',
      properties: { currency: { type: 'string' }, amount: { type: 'string' } },
    },
    creditorName: { type: 'string' },
  },
};
const A = { type: 'payment_initiation', instructedAmount: { currency: 'EUR', amount: '10.00' }, creditorName: 'A' };
const B = { type: 'payment_initiation', instructedAmount: { currency: 'EUR', amount: '20.00' }, creditorName: 'B' };
const CLIENT: readonly [string, string] = ['payweb', 'payweb-secret'];

let sigil: TestSigil;
beforeAll(async () => {
  const base = testConfig();
  sigil = await startAuthorizeSigil(
    [
      webLike('payweb', {
        allowedScopes: ['openid', 'payments', 'offline_access'],
        authorizationDetailsTypes: ['payment_initiation'],
      }),
    ],
    {
      apiScopes: [...(base.apiScopes ?? []), { name: 'payments' }],
      apiResources: [
        ...(base.apiResources ?? []),
        {
          name: 'payments',
          scopes: ['payments'],
          secrets: ['payments-secret'],
          authorizationDetailsTypes: [{ type: 'payment_initiation', schema: PAYMENT_SCHEMA }],
        },
      ],
      rateLimits: { maxFailures: 1000, windowSeconds: 60 },
    },
  );
});
afterAll(async () => sigil.close());

/** A code for `details` (no details when undefined), with its PKCE verifier. */
async function codeFor(details: unknown[] | undefined): Promise<{ code: string; verifier: string }> {
  const { verifier, challenge } = pkce();
  const b = new Browser(sigil);
  const code = await getCode(
    b,
    codeParams(challenge, {
      client_id: 'payweb',
      scope: 'openid payments offline_access',
      ...(details ? { authorization_details: JSON.stringify(details) } : {}),
    }),
  );
  return { code, verifier };
}

const redeemWith = (code: string, verifier: string, details?: unknown) =>
  redeem(sigil, code, {
    client: 'payweb',
    verifier,
    ...(details !== undefined ? { extra: { authorization_details: JSON.stringify(details) } } : {}),
  });
const refreshWith = (token: string, details?: unknown) =>
  tokenRequest(
    sigil,
    {
      grant_type: 'refresh_token',
      refresh_token: token,
      ...(details !== undefined ? { authorization_details: JSON.stringify(details) } : {}),
    },
    CLIENT,
  );

describe('authorization_details at the token endpoint of the code flow and at refresh', () => {
  it('gives the access token the objects asked for, and the refresh token keeps the whole grant', async () => {
    const { code, verifier } = await codeFor([A, B]);
    const res = await redeemWith(code, verifier, [B]);
    expect(res.statusCode, res.body).toBe(200);
    const tokens = res.json();
    expect(tokens.authorization_details).toStrictEqual([B]);
    expect(decodeJwt(tokens.access_token).authorization_details).toStrictEqual([B]);
    expect(
      (await introspect(sigil, tokens.access_token, ['payments', 'payments-secret'])).json().authorization_details,
    ).toStrictEqual([B]);
    expect((await introspect(sigil, tokens.refresh_token, CLIENT)).json().authorization_details).toStrictEqual([A, B]);

    // A refresh narrows to another of the grant's objects; a later one gets the full set again.
    const narrowed = await refreshWith(tokens.refresh_token, [A]);
    expect(narrowed.statusCode, narrowed.body).toBe(200);
    expect(narrowed.json().authorization_details).toStrictEqual([A]);
    expect(decodeJwt(narrowed.json().access_token).authorization_details).toStrictEqual([A]);
    const next = narrowed.json().refresh_token ?? tokens.refresh_token;
    expect((await introspect(sigil, next, CLIENT)).json().authorization_details).toStrictEqual([A, B]);
    const full = await refreshWith(next);
    expect(full.statusCode, full.body).toBe(200);
    expect(full.json().authorization_details).toStrictEqual([A, B]);
    // The members of an object in another order are the same object.
    const reordered = await refreshWith(full.json().refresh_token ?? next, [
      { creditorName: 'B', instructedAmount: { amount: '20.00', currency: 'EUR' }, type: 'payment_initiation' },
    ]);
    expect(reordered.statusCode, reordered.body).toBe(200);
    expect(reordered.json().authorization_details).toHaveLength(1);
  });

  it('refuses an object that is not one of the grant\u2019s, even a narrower one, and the code stays usable', async () => {
    const { code, verifier } = await codeFor([A]);
    const others = [
      [{ ...A, instructedAmount: { currency: 'EUR', amount: '1000.00' } }],
      // Narrower in a payment's terms (one member fewer), but not the object granted: Sigil compares whole objects.
      [{ type: 'payment_initiation', instructedAmount: A.instructedAmount }],
      [A, B],
      [B],
    ];
    for (const details of others) {
      const refused = await redeemWith(code, verifier, details);
      expect(refused.statusCode, JSON.stringify(details)).toBe(400);
      expect(refused.json().error).toBe('invalid_authorization_details');
    }
    // The control: the code was not used up by the refusals.
    const ok = await redeemWith(code, verifier, [A]);
    expect(ok.statusCode, ok.body).toBe(200);
    expect(ok.json().authorization_details).toStrictEqual([A]);

    const wider = await refreshWith(ok.json().refresh_token, [A, B]);
    expect(wider.statusCode).toBe(400);
    expect(wider.json().error).toBe('invalid_authorization_details');
    const still = await refreshWith(ok.json().refresh_token, [A]);
    expect(still.statusCode, still.body).toBe(200);
  });

  it('refuses details for a grant that has none, and malformed details', async () => {
    const { code, verifier } = await codeFor(undefined);
    for (const details of [[A], 'not json', []]) {
      const res = await redeem(sigil, code, {
        client: 'payweb',
        verifier,
        extra: { authorization_details: typeof details === 'string' ? details : JSON.stringify(details) },
      });
      expect(res.statusCode, JSON.stringify(details)).toBe(400);
      expect(res.json().error).toBe('invalid_authorization_details');
    }
    const ok = await redeemWith(code, verifier);
    expect(ok.statusCode, ok.body).toBe(200);
    expect(ok.json()).not.toHaveProperty('authorization_details');
  });

  it('accepts any non-empty selection of granted objects, and refuses any object changed in one value (property)', () => {
    const client = { authorizationDetailsTypes: ['payment_initiation'] };
    const detail = fc.record({
      type: fc.constant('payment_initiation'),
      instructedAmount: fc.record({ currency: fc.constantFrom('EUR', 'USD'), amount: fc.string({ maxLength: 6 }) }),
      creditorName: fc.string({ maxLength: 8 }),
    });
    fc.assert(
      fc.property(
        fc.array(detail, { minLength: 1, maxLength: 5 }),
        fc.array(fc.nat(), { minLength: 1, maxLength: 5 }),
        fc.string({ minLength: 1, maxLength: 4 }),
        (generated, picks, suffix) => {
          // As the grant holds them: read back from stored JSON.
          const granted = JSON.parse(JSON.stringify(generated)) as typeof generated;
          const asked = picks.map((i) => granted[i % granted.length]);
          expect(narrowAuthorizationDetails(JSON.stringify(asked), granted, client, sigil.context.resources)).toEqual(
            asked,
          );
          const changed = { ...asked[0], creditorName: `${asked[0]?.creditorName ?? ''}${suffix}` };
          // Another granted object may happen to equal the changed one (the same key order makes JSON text comparable).
          const isGranted = granted.some((g) => JSON.stringify(g) === JSON.stringify(changed));
          if (isGranted) return;
          expect(() =>
            narrowAuthorizationDetails(JSON.stringify([changed]), granted, client, sigil.context.resources),
          ).toThrow(/invalid_authorization_details/);
        },
      ),
    );
  });
});
