/**
 * Rich Authorization Requests (RFC 9396) over HTTP: `authorization_details` at the token endpoint
 * (client_credentials) and through PAR, the code and refresh; types declared on API resources with
 * their JSON Schemas; refused input is `invalid_authorization_details`, never a 500.
 */
import fc from 'fast-check';
import { decodeJwt } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  Browser,
  authorizeUrl,
  codeParams,
  expectClientError,
  getCode,
  isConsentPage,
  pkce,
  readResponse,
  redeem,
  startAuthorizeSigil,
  webLike,
} from '../authorize-helpers.js';
import { introspect, postForm, startSigil, testConfig, tokenRequest, type TestSigil } from '../helpers.js';

/** The RFC 9396 §2 example's shape, as a schema that allows exactly it. */
const PAYMENT_SCHEMA = {
  type: 'object',
  additionalProperties: false,
  required: ['type', 'instructedAmount'],
  properties: {
    type: { const: 'payment_initiation' },
    locations: { type: 'array', maxItems: 5, items: { type: 'string', maxLength: 200 } },
    actions: { type: 'array', items: { enum: ['initiate', 'status', 'cancel'] } },
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
    creditorAccount: {
      type: 'object',
      additionalProperties: false,
      properties: { iban: { type: 'string', maxLength: 34 } },
    },
    remittanceInformationUnstructured: { type: 'string', maxLength: 140 },
  },
};

/** RFC 9396 §2's example request. */
const PAYMENT = {
  type: 'payment_initiation',
  locations: ['https://example.com/payments'],
  instructedAmount: { currency: 'EUR', amount: '123.50' },
  creditorName: 'Merchant A',
  creditorAccount: { iban: 'DE02100100109307118603' },
  remittanceInformationUnstructured: 'Ref Number Merchant',
};

/** The fixture APIs, `payments` declaring `payment_initiation` and `accounts` `account_information`. */
function rarResources() {
  const base = testConfig();
  return {
    apiScopes: [...(base.apiScopes ?? []), { name: 'payments' }, { name: 'accounts' }],
    apiResources: [
      ...(base.apiResources ?? []),
      {
        name: 'payments',
        scopes: ['payments'],
        secrets: ['payments-secret'],
        authorizationDetailsTypes: [{ type: 'payment_initiation', schema: PAYMENT_SCHEMA }],
      },
      {
        name: 'accounts',
        scopes: ['accounts'],
        authorizationDetailsTypes: [
          {
            type: 'account_information',
            schema: { type: 'object', properties: { type: { const: 'account_information' } } },
          },
        ],
      },
    ],
  };
}

describe('authorization_details with client_credentials', () => {
  let sigil: TestSigil;
  beforeAll(async () => {
    const base = testConfig();
    sigil = await startSigil({
      ...rarResources(),
      clients: [
        ...(base.clients ?? []),
        {
          clientId: 'payer',
          clientSecrets: ['payer-secret'],
          allowedGrantTypes: ['client_credentials'],
          allowedScopes: ['payments', 'accounts'],
          authorizationDetailsTypes: ['payment_initiation'],
        },
      ],
      rateLimits: { maxFailures: 1000, windowSeconds: 60 },
    });
  });
  afterAll(async () => sigil.close());

  const ask = (details: string) =>
    tokenRequest(sigil, { grant_type: 'client_credentials', scope: 'payments', authorization_details: details }, [
      'payer',
      'payer-secret',
    ]);
  const refused = async (details: string) => {
    const res = await ask(details);
    expect(res.statusCode, res.body).toBe(400);
    expect(res.json().error).toBe('invalid_authorization_details');
  };

  it('puts the details, exactly as sent, into the response, the JWT and introspection', async () => {
    const res = await ask(JSON.stringify([PAYMENT]));
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json();
    expect(body.authorization_details).toStrictEqual([PAYMENT]);
    expect(decodeJwt(body.access_token).authorization_details).toStrictEqual([PAYMENT]);
    const info = await introspect(sigil, body.access_token, ['payments', 'payments-secret']);
    expect(info.json().active).toBe(true);
    expect(info.json().authorization_details).toStrictEqual([PAYMENT]);
  });

  it('names the declared types in discovery', async () => {
    const doc = (await sigil.app.inject('/.well-known/openid-configuration')).json();
    expect(doc.authorization_details_types_supported).toStrictEqual(['payment_initiation', 'account_information']);
  });

  it('leaves a request without details as it was', async () => {
    const res = await tokenRequest(sigil, { grant_type: 'client_credentials', scope: 'payments' }, [
      'payer',
      'payer-secret',
    ]);
    expect(res.statusCode).toBe(200);
    expect(res.json().authorization_details).toBeUndefined();
    expect(decodeJwt(res.json().access_token).authorization_details).toBeUndefined();
  });

  it('refuses an unknown type, a type the client may not use, and a schema violation', async () => {
    await refused(JSON.stringify([{ type: 'teleport' }]));
    await refused(JSON.stringify([{ type: 'account_information' }]));
    await refused(JSON.stringify([{ ...PAYMENT, extra: 'not in the schema' }]));
    await refused(JSON.stringify([{ ...PAYMENT, instructedAmount: { currency: 'EUR', amount: 'lots' } }]));
  });

  it('refuses a string, an object, an empty array, a non-object entry and text that is not JSON', async () => {
    await refused('payment_initiation');
    await refused(JSON.stringify('payment_initiation'));
    await refused(JSON.stringify(PAYMENT));
    await refused('[]');
    await refused('[1]');
    await refused('[null]');
    await refused('[[]]');
    await refused('[{"type":1}]');
    await refused('[{');
  });

  it('refuses 1,000-deep nesting and an oversized parameter without a 500', async () => {
    await refused(`[${'['.repeat(1000)}${']'.repeat(1000)}]`);
    await refused(`[{"type":"payment_initiation","creditorName":${'{"a":'.repeat(1000)}1${'}'.repeat(1000)}}]`);
    await refused(JSON.stringify([{ ...PAYMENT, creditorName: 'x'.repeat(5000) }]));
    await refused(JSON.stringify(Array.from({ length: 21 }, () => ({ type: 'payment_initiation' }))));
  });

  it('round-trips any JSON the schema accepts unchanged and refuses anything else', async () => {
    const amount = fc.record({
      currency: fc.stringMatching(/^[A-Z]{3}$/),
      amount: fc.stringMatching(/^[0-9]{1,10}(\.[0-9]{1,2})?$/),
    });
    const valid = fc.record(
      {
        type: fc.constant('payment_initiation'),
        locations: fc.array(fc.string({ maxLength: 200 }), { maxLength: 5 }),
        actions: fc.array(fc.constantFrom('initiate', 'status', 'cancel'), { maxLength: 3 }),
        instructedAmount: amount,
        creditorName: fc.string({ maxLength: 140 }),
        creditorAccount: fc.record({ iban: fc.string({ maxLength: 34 }) }, { requiredKeys: [] }),
        remittanceInformationUnstructured: fc.string({ maxLength: 140 }),
      },
      { requiredKeys: ['type', 'instructedAmount'] },
    );
    await fc.assert(
      fc.asyncProperty(valid, async (detail) => {
        const sent = JSON.stringify([detail]);
        const res = await ask(sent);
        expect(res.statusCode, res.body).toBe(200);
        expect(res.json().authorization_details).toStrictEqual(JSON.parse(sent));
        expect(decodeJwt(res.json().access_token).authorization_details).toStrictEqual(JSON.parse(sent));
      }),
      { numRuns: 40 },
    );
    // Anything else: a valid object with one member the schema does not allow, or a changed value.
    const invalid = fc.oneof(
      fc
        .tuple(valid, fc.string({ minLength: 1, maxLength: 20 }), fc.jsonValue({ maxDepth: 3 }))
        .filter(([, key]) => !Object.keys(PAYMENT_SCHEMA.properties).includes(key) && key !== '__proto__')
        .map(([d, key, value]) => ({ ...d, [key]: value })),
      fc
        .tuple(
          valid,
          fc.jsonValue({ maxDepth: 3 }).filter((v) => typeof v !== 'object' || v === null),
        )
        .map(([d, value]) => ({ ...d, instructedAmount: value })),
      fc.jsonValue({ maxDepth: 3 }).filter((v) => typeof v !== 'object' || v === null || Array.isArray(v)),
    );
    await fc.assert(
      fc.asyncProperty(invalid, async (detail) => {
        const res = await ask(JSON.stringify([detail]));
        expect(res.statusCode, res.body).toBe(400);
        expect(res.json().error).toBe('invalid_authorization_details');
      }),
      { numRuns: 40 },
    );
  });
});

describe('authorization_details in the code flow', () => {
  let sigil: TestSigil;
  beforeAll(async () => {
    const scopes = ['openid', 'payments', 'offline_access'];
    sigil = await startAuthorizeSigil(
      [
        webLike('payweb', { allowedScopes: scopes, authorizationDetailsTypes: ['payment_initiation'] }),
        webLike('payconsent', {
          allowedScopes: scopes,
          authorizationDetailsTypes: ['payment_initiation'],
          requireConsent: true,
        }),
      ],
      { ...rarResources(), rateLimits: { maxFailures: 1000, windowSeconds: 60 } },
    );
  });
  afterAll(async () => sigil.close());

  const params = (challenge: string, details: unknown) =>
    codeParams(challenge, {
      client_id: 'payweb',
      scope: 'openid payments offline_access',
      authorization_details: typeof details === 'string' ? details : JSON.stringify(details),
    });

  it('carries pushed details through the code into the tokens, and a refresh keeps them', async () => {
    const { verifier, challenge } = pkce();
    const pushed = await postForm(sigil, '/connect/par', params(challenge, [PAYMENT]), ['payweb', 'payweb-secret']);
    expect(pushed.statusCode, pushed.body).toBe(201);
    const b = new Browser(sigil);
    await b.signIn('alice');
    const code = await getCode(b, { client_id: 'payweb', request_uri: pushed.json().request_uri });
    const res = await redeem(sigil, code, { client: 'payweb', verifier });
    expect(res.statusCode, res.body).toBe(200);
    const tokens = res.json();
    expect(tokens.authorization_details).toStrictEqual([PAYMENT]);
    expect(decodeJwt(tokens.access_token).authorization_details).toStrictEqual([PAYMENT]);
    const asRefresh = await introspect(sigil, tokens.refresh_token, ['payweb', 'payweb-secret']);
    expect(asRefresh.json().authorization_details).toStrictEqual([PAYMENT]);

    const refreshed = await tokenRequest(sigil, { grant_type: 'refresh_token', refresh_token: tokens.refresh_token }, [
      'payweb',
      'payweb-secret',
    ]);
    expect(refreshed.statusCode, refreshed.body).toBe(200);
    expect(refreshed.json().authorization_details).toStrictEqual([PAYMENT]);
    expect(decodeJwt(refreshed.json().access_token).authorization_details).toStrictEqual([PAYMENT]);
  });

  it('keeps details sent to /connect/authorize across the sign-in', async () => {
    const { verifier, challenge } = pkce();
    const code = await getCode(new Browser(sigil), params(challenge, [PAYMENT]));
    const res = await redeem(sigil, code, { client: 'payweb', verifier });
    expect(res.json().authorization_details).toStrictEqual([PAYMENT]);
  });

  it('shows the details on the consent page, escaped, every time, and issues them once allowed', async () => {
    const detail = { ...PAYMENT, creditorName: '<b>Merchant</b> & "Co"' };
    const b = new Browser(sigil);
    await b.signIn('alice');
    for (const round of [1, 2]) {
      const { verifier, challenge } = pkce();
      const page = await b.follow(
        await b.get(authorizeUrl({ ...params(challenge, [detail]), client_id: 'payconsent' })),
      );
      expect(isConsentPage(page), `round ${round}: ${page.body.slice(0, 200)}`).toBe(true);
      expect(page.body).toContain('payment_initiation');
      expect(page.body).toContain('&lt;b&gt;Merchant&lt;/b&gt; &amp;');
      expect(page.body).not.toContain('<b>Merchant');
      expect(page.body).toContain('DE02100100109307118603');
      // Nothing to remember: the next request with details asks again.
      expect(page.body).not.toContain('name="remember"');
      const answer = await b.consent(page, 'yes', round === 1);
      const res = await redeem(sigil, readResponse(answer).params.get('code')!, { client: 'payconsent', verifier });
      expect(res.json().authorization_details).toStrictEqual([detail]);
    }
  });

  it('refuses bad details at PAR with 400 and at authorize with an error redirect to the client', async () => {
    const { challenge } = pkce();
    for (const bad of ['"payment_initiation"', [{ type: 'teleport' }], [{ ...PAYMENT, extra: 1 }]]) {
      const pushed = await postForm(sigil, '/connect/par', params(challenge, bad), ['payweb', 'payweb-secret']);
      expect(pushed.statusCode, pushed.body).toBe(400);
      expect(pushed.json().error).toBe('invalid_authorization_details');
      const b = new Browser(sigil);
      await b.signIn('alice');
      expectClientError(await b.get(authorizeUrl(params(challenge, bad))), 'invalid_authorization_details', {
        state: 'st',
      });
    }
    const b = new Browser(sigil);
    const deep = `[${'['.repeat(1000)}${']'.repeat(1000)}]`;
    expectClientError(await b.get(authorizeUrl(params(challenge, deep))), 'invalid_authorization_details');
    // The web client may not use the type at all.
    expectClientError(
      await b.get(authorizeUrl(codeParams(challenge, { authorization_details: JSON.stringify([PAYMENT]) }))),
      'invalid_authorization_details',
    );
  });
});

describe('authorizationDetailsTypes in the config', () => {
  it('refuses a schema Ajv does not accept, naming the field', async () => {
    const resources = rarResources();
    resources.apiResources[2]!.authorizationDetailsTypes = [
      { type: 'payment_initiation', schema: { type: 'object', properties: { a: { type: 'no-such-type' } } } },
    ];
    await expect(startSigil({ ...resources, clients: [] })).rejects.toThrow(
      /apiResources\.2\.authorizationDetailsTypes\.0\.schema|apiResources\[2\]\.authorizationDetailsTypes\[0\]\.schema/,
    );
  });

  it('compiles two schemas with the same $id, each as written', async () => {
    const resources = rarResources();
    const id = 'https://payments.example/schemas/detail';
    resources.apiResources[2]!.authorizationDetailsTypes = [
      { type: 'payment_initiation', schema: { ...PAYMENT_SCHEMA, $id: id } },
    ];
    resources.apiResources[3]!.authorizationDetailsTypes = [{ type: 'account_information', schema: { $id: id } }];
    const sigil = await startSigil({ ...resources, clients: [] });
    await sigil.close();
  });

  it('refuses a client type no API declares', async () => {
    await expect(
      startSigil({
        ...rarResources(),
        clients: [
          {
            clientId: 'payer',
            clientSecrets: ['payer-secret'],
            allowedGrantTypes: ['client_credentials'],
            allowedScopes: ['payments'],
            authorizationDetailsTypes: ['teleport'],
          },
        ],
      }),
    ).rejects.toThrow(/authorizationDetailsTypes/);
  });
});
