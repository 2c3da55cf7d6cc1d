/**
 * Fuzzing the HTTP surface with fast-check: random methods, bodies, content types and
 * Authorization headers against every back-channel endpoint of an in-process provider. Whatever
 * arrives, the answer is a deliberate 2xx/4xx, never a 5xx; error bodies carry a registered error
 * code and an RFC 6749 §5.2 error_description; no response leaks stack traces or internals.
 * On failure fast-check prints the seed and the shrunk request (replay with `{ seed, path }`).
 */
import fc from 'fast-check';
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { basic, form, startSigil, testConfig } from '../helpers.js';

type Sigil = Awaited<ReturnType<typeof startSigil>>;

const ENDPOINTS = [
  '/connect/token',
  '/connect/userinfo',
  '/connect/introspect',
  '/connect/revocation',
  '/connect/par',
  '/.well-known/openid-configuration',
  '/.well-known/openid-configuration/jwks',
  '/healthz',
] as const;

/**
 * Multiplies the number of runs, for a deeper local session: `SIGIL_FUZZ_SCALE=20 npx vitest run
 * test/integration/fuzz.test.ts`.
 */
const SCALE = Number(process.env.SIGIL_FUZZ_SCALE ?? '1') || 1;

const ALLOWED_STATUS = new Set([200, 201, 204, 400, 401, 403, 404, 405, 413, 415, 429]);
const ERROR_CODES = new Set([
  'invalid_request',
  'invalid_client',
  'invalid_grant',
  'unauthorized_client',
  'unsupported_grant_type',
  'invalid_scope',
  'invalid_token',
  'insufficient_scope',
  'temporarily_unavailable',
  'unsupported_response_type',
  'invalid_request_object',
  'invalid_dpop_proof',
  'invalid_target',
]);
/** RFC 6749 §5.2: error_description = 1*( %x20-21 / %x23-5B / %x5D-7E ). */
const DESCRIPTION = /^[\x20\x21\x23-\x5B\x5D-\x7E]+$/;
const LEAKS = ['    at ', '.ts:', '.js:', 'node_modules', 'SQLITE', 'sqlite', 'Error:', 'TypeError', 'undefined'];

const TOKEN_EXCHANGE = 'urn:ietf:params:oauth:grant-type:token-exchange';
const ACCESS_TOKEN_TYPE = 'urn:ietf:params:oauth:token-type:access_token';

/** Tokens obtained before fuzzing, so that requests can carry real ones (some get revoked on the way). */
interface Tokens {
  jwt: string;
  reference: string;
  userJwt: string;
  userReference: string;
  refresh: string;
  refreshReuse: string;
  idToken: string;
}

/** Valid values per parameter name; the fuzzer also sends near-misses of them. */
function validValues(t: Tokens): Record<string, string[]> {
  const tokens = [t.jwt, t.reference, t.userJwt, t.userReference, t.refresh, t.refreshReuse, t.idToken];
  return {
    grant_type: [
      'client_credentials',
      'password',
      'refresh_token',
      TOKEN_EXCHANGE,
      'authorization_code',
      'implicit',
      'urn:ietf:params:oauth:grant-type:device_code',
    ],
    client_id: ['m2m', 'm2m-ref', 'ropc', 'ropc-ref', 'spa', 'c:1', 'other', 'api1', 'api2'],
    client_secret: ['m2m-secret', 'ropc-secret', 'other-secret', 's+/%', 'api1-secret', 'api2-secret'],
    scope: [
      'api1',
      'api2',
      'api1 api2',
      'openid',
      'openid profile',
      'openid profile email roles api1 offline_access',
      'offline_access',
      'openid api1 offline_access',
    ],
    username: ['alice', 'bob', 'carol', 'dave', 'ALICE'],
    password: ['alice', 'bob', 'carol', 'dave'],
    acr_values: ['tenant:acme', 'idp:local', 'idp:corp tenant:acme', 'urn:x tenant:'],
    refresh_token: [t.refresh, t.refreshReuse],
    token: tokens,
    token_type_hint: ['access_token', 'refresh_token', 'id_token', 'bogus'],
    access_token: [t.userJwt, t.userReference, t.jwt],
    subject_token: [t.userJwt, t.userReference, t.jwt],
    subject_token_type: [
      ACCESS_TOKEN_TYPE,
      'urn:ietf:params:oauth:token-type:id_token',
      'urn:ietf:params:oauth:token-type:refresh_token',
    ],
    actor_token: [t.userJwt, t.jwt],
    actor_token_type: [ACCESS_TOKEN_TYPE],
    requested_token_type: [ACCESS_TOKEN_TYPE, 'urn:ietf:params:oauth:token-type:jwt'],
    code: ['abc'],
    redirect_uri: ['https://app.example/callback'],
    code_verifier: ['x'.repeat(43)],
    client_assertion_type: ['urn:ietf:params:oauth:client-assertion-type:jwt-bearer'],
    client_assertion: [t.idToken],
    resource: ['https://api.example'],
    audience: ['api1'],
  };
}

const NASTY = [
  '😀',
  '👩‍👩‍👧‍👦',
  '\u202eevil',
  'שלום עולם',
  'مرحبا',
  'e\u0301',
  '\u200b',
  '\ufeff',
  '\u0000',
  'a\u0000b',
  '\r\n',
  '\t',
  '"',
  '\\',
  "'",
  '<script>',
  '%',
  '%00',
  '%ZZ',
  '+',
  '&',
  '=',
  ' ',
  '..',
  '/',
];

/** Perturbations of a valid value: one character off, case, padding, truncation, concatenation. */
function nearMiss(valid: fc.Arbitrary<string>): fc.Arbitrary<string> {
  return fc
    .tuple(valid, fc.nat(), fc.constantFrom(...NASTY), fc.integer({ min: 0, max: 9 }))
    .map(([v, n, extra, kind]) => {
      const i = v.length === 0 ? 0 : n % v.length;
      switch (kind) {
        case 0:
          return v.toUpperCase();
        case 1:
          return ` ${v}`;
        case 2:
          return `${v} `;
        case 3:
          return v.slice(0, i);
        case 4:
          return v.slice(0, i) + String.fromCharCode(((v.charCodeAt(i) || 97) + 1) % 0x10000) + v.slice(i + 1);
        case 5:
          return v + extra;
        case 6:
          return extra + v;
        case 7:
          return `${v} ${v}`;
        case 8:
          return v.replaceAll('.', '');
        default:
          return v + v;
      }
    });
}

const HUGE = fc
  .constantFrom(70_000, 20_000, 9_000, 1_100, 513, 301, 101)
  .chain((n) => fc.constantFrom('a', '%41', '😀', ' ', '.').map((c) => c.repeat(Math.ceil(n / c.length))));
const anyText = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 30 }),
  fc.string({ unit: 'grapheme', maxLength: 30 }),
  fc.string({ unit: fc.constantFrom(...NASTY), maxLength: 6 }),
  fc.string({ maxLength: 30 }),
);

/** Encodes a value for the body: mostly correct form encoding, sometimes raw or half-encoded. */
const encoding = fc.constantFrom<'form' | 'uri' | 'raw'>('form', 'form', 'form', 'uri', 'raw');
const encode = (s: string, how: 'form' | 'uri' | 'raw'): string => {
  if (how === 'raw') return s;
  if (how === 'uri') {
    try {
      return encodeURIComponent(s);
    } catch {
      return s; // lone surrogate: send it raw
    }
  }
  return new URLSearchParams({ x: s }).toString().slice(2);
};

function bodyArbitrary(values: Record<string, string[]>): fc.Arbitrary<string | Buffer | undefined> {
  const names = Object.keys(values);
  const name = fc.oneof(
    { weight: 8, arbitrary: fc.constantFrom(...names) },
    { weight: 1, arbitrary: anyText },
    { weight: 1, arbitrary: nearMiss(fc.constantFrom(...names)) },
  );
  const entry = name.chain((n) => {
    const valid = fc.constantFrom(...(Object.hasOwn(values, n) ? values[n]! : ['x']));
    const value = fc.oneof(
      { weight: 10, arbitrary: valid },
      { weight: 4, arbitrary: nearMiss(valid) },
      { weight: 2, arbitrary: fc.constant('') },
      { weight: 1, arbitrary: HUGE },
      { weight: 3, arbitrary: anyText },
    );
    return fc.tuple(fc.constant(n), value, encoding, fc.boolean());
  });
  const pairs = fc
    .array(entry, { maxLength: 8 })
    .map((list) =>
      list
        .map(([n, v, how, withEq]) => (v === '' && !withEq ? encode(n, how) : `${encode(n, how)}=${encode(v, how)}`))
        .join('&'),
    );
  // Duplicates of one parameter, on purpose.
  const duplicated = fc.tuple(pairs, fc.constantFrom(...names), fc.nat({ max: 2 })).map(([p, n, k]) => {
    const v = values[n]?.[k % (values[n]?.length ?? 1)] ?? 'x';
    return `${p}&${n}=${encodeURIComponent(v)}&${n}=${encodeURIComponent(v)}`;
  });
  return fc.oneof(
    { weight: 12, arbitrary: pairs },
    { weight: 3, arbitrary: duplicated },
    { weight: 1, arbitrary: fc.uint8Array({ maxLength: 200 }).map((b) => Buffer.from(b)) },
    { weight: 1, arbitrary: anyText },
    {
      weight: 1,
      arbitrary: fc.constantFrom(
        '{"grant_type":"client_credentials"}',
        '<xml/>',
        '&&&',
        '===',
        '%',
        '%%%',
        'a=%ZZ',
        'a=%C3%28',
        'a=%ED%A0%80',
      ),
    },
    { weight: 1, arbitrary: fc.constant(undefined) },
  );
}

const CONTENT_TYPES = [
  'application/x-www-form-urlencoded',
  'application/x-www-form-urlencoded',
  'application/x-www-form-urlencoded',
  'application/x-www-form-urlencoded; charset=utf-8',
  'application/x-www-form-urlencoded; charset=ISO-8859-1',
  'APPLICATION/X-WWW-FORM-URLENCODED',
  'application/x-www-form-urlencoded;',
  'application/x-www-form-urlencodedx',
  'application/json',
  'application/jwt',
  'text/plain',
  'text/html; charset=utf-8',
  'multipart/form-data; boundary=xyz',
  'application/octet-stream',
  '*/*',
  'x',
  ';',
  '',
];
const contentType = fc.option(
  fc.oneof(
    { weight: 9, arbitrary: fc.constantFrom(...CONTENT_TYPES) },
    { weight: 1, arbitrary: fc.string({ unit: 'binary-ascii', maxLength: 30 }) },
  ),
  { nil: undefined, freq: 8 },
);

/** Header values Node accepts: HTAB, visible ASCII, obs-text (latin1). */
const headerSafe = (s: string) => s.replace(/[^\t\x20-\x7e\x80-\xff]/g, '');
const latin1Text = fc.string({
  unit: fc.integer({ min: 0x20, max: 0xff }).map((c) => String.fromCharCode(c === 0x7f ? 0x20 : c)),
  maxLength: 60,
});
const b64 = (s: string) => Buffer.from(s, 'utf8').toString('base64');

function authorizationArbitrary(
  values: Record<string, string[]>,
  t: Tokens,
): fc.Arbitrary<string | string[] | undefined> {
  const ids = fc.constantFrom(...values.client_id!);
  const secrets = fc.constantFrom(...values.client_secret!, 'wrong', '');
  const bearer = fc.constantFrom(t.jwt, t.reference, t.userJwt, t.userReference, t.refresh, t.idToken);
  const one = fc.oneof(
    { weight: 4, arbitrary: fc.tuple(ids, secrets).map(([i, s]) => basic(i, s)) },
    { weight: 2, arbitrary: fc.tuple(nearMiss(ids), nearMiss(secrets)).map(([i, s]) => headerSafe(basic(i, s))) },
    {
      weight: 1,
      arbitrary: fc
        .tuple(fc.constantFrom('Basic', 'basic', 'BASIC', 'Basic  '), anyText, anyText)
        .map(([sch, i, s]) => `${sch} ${b64(`${i}:${s}`)}`),
    },
    {
      weight: 1,
      arbitrary: fc.tuple(fc.constantFrom('Basic ', 'Basic', 'basic\t'), latin1Text).map(([sch, s]) => sch + s),
    },
    {
      weight: 4,
      arbitrary: fc
        .tuple(fc.constantFrom('Bearer ', 'bearer ', 'BEARER ', 'Bearer  ', 'Bearer\t', 'Bearer', 'DPoP '), bearer)
        .map(([sch, tok]) => sch + tok),
    },
    { weight: 2, arbitrary: nearMiss(bearer).map((tok) => headerSafe(`Bearer ${tok}`)) },
    { weight: 1, arbitrary: latin1Text },
    { weight: 1, arbitrary: HUGE.map((h) => headerSafe(`Bearer ${h}`).slice(0, 12_000)) },
  );
  return fc.oneof(
    { weight: 4, arbitrary: fc.constant(undefined) },
    { weight: 8, arbitrary: one },
    { weight: 1, arbitrary: fc.array(one, { minLength: 2, maxLength: 2 }) },
  );
}

const queryArbitrary = fc.oneof(
  { weight: 8, arbitrary: fc.constant('') },
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      '?client_secret=m2m-secret',
      '?client_assertion=x',
      '?access_token=x',
      '?a=1&a=2',
      '?%ZZ',
      '?grant_type=client_credentials',
      '?',
      '?__proto__=x',
      '?constructor=1',
    ),
  },
  { weight: 1, arbitrary: fc.string({ unit: 'grapheme-ascii', maxLength: 20 }).map((s) => `?${encodeURI(s)}`) },
);

/** A valid request to start from: form parameters and how it authenticates. */
interface Template {
  params: [string, string][];
  authorization?: string;
}

/** Requests each endpoint answers with success, which the fuzzer then mutates a little. */
function templates(path: string, t: Tokens): Template[] {
  const m2m = basic('m2m', 'm2m-secret');
  const ropc = basic('ropc', 'ropc-secret');
  switch (path) {
    case '/connect/token':
      return [
        {
          authorization: m2m,
          params: [
            ['grant_type', 'client_credentials'],
            ['scope', 'api1'],
          ],
        },
        {
          params: [
            ['grant_type', 'client_credentials'],
            ['client_id', 'm2m-ref'],
            ['client_secret', 'm2m-secret'],
          ],
        },
        { authorization: basic('c:1', 's+/%'), params: [['grant_type', 'client_credentials']] },
        {
          authorization: ropc,
          params: [
            ['grant_type', 'password'],
            ['username', 'alice'],
            ['password', 'alice'],
            ['scope', 'openid api1 offline_access'],
          ],
        },
        {
          params: [
            ['grant_type', 'password'],
            ['client_id', 'spa'],
            ['username', 'bob'],
            ['password', 'bob'],
          ],
        },
        {
          authorization: basic('ropc-ref', 'ropc-secret'),
          params: [
            ['grant_type', 'refresh_token'],
            ['refresh_token', t.refreshReuse],
          ],
        },
        {
          authorization: ropc,
          params: [
            ['grant_type', TOKEN_EXCHANGE],
            ['subject_token', t.userJwt],
            ['subject_token_type', ACCESS_TOKEN_TYPE],
            ['scope', 'api1'],
          ],
        },
      ];
    case '/connect/introspect':
      return [
        { authorization: basic('api1', 'api1-secret'), params: [['token', t.userJwt]] },
        {
          params: [
            ['token', t.reference],
            ['client_id', 'api1'],
            ['client_secret', 'api1-secret'],
          ],
        },
        {
          authorization: basic('api1', 'api1-secret'),
          params: [
            ['token', t.refreshReuse],
            ['token_type_hint', 'refresh_token'],
          ],
        },
        { authorization: m2m, params: [['token', t.jwt]] },
      ];
    case '/connect/revocation':
      return [
        { authorization: m2m, params: [['token', 'unknown-token']] },
        {
          params: [
            ['token', t.jwt],
            ['client_id', 'spa'],
          ],
        },
        {
          authorization: ropc,
          params: [
            ['token', t.refreshReuse],
            ['token_type_hint', 'refresh_token'],
          ],
        },
      ];
    case '/connect/par':
      return [
        {
          authorization: m2m,
          params: [
            ['response_type', 'code'],
            ['scope', 'api1'],
            ['redirect_uri', 'https://rp.example/cb'],
          ],
        },
        {
          params: [
            ['client_id', 'par-spa'],
            ['response_type', 'code'],
            ['scope', 'openid api1'],
            ['redirect_uri', 'https://spa.example/cb'],
            ['code_challenge', 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM'],
            ['code_challenge_method', 'S256'],
          ],
        },
        {
          params: [
            ['client_assertion_type', 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer'],
            ['client_assertion', t.jwt],
            ['response_type', 'code'],
          ],
        },
      ];
    case '/connect/userinfo':
      return [
        { authorization: `Bearer ${t.userJwt}`, params: [] },
        { authorization: `Bearer ${t.userReference}`, params: [] },
        { params: [['access_token', t.userJwt]] },
      ];
    default:
      return [{ params: [] }];
  }
}

type Mutation =
  | { kind: 'drop'; index: number }
  | { kind: 'duplicate'; index: number }
  | { kind: 'replace'; index: number; value: string }
  | { kind: 'add'; name: string; value: string }
  | { kind: 'auth'; value: string | string[] | undefined };

/** A template request, POSTed as a form, with zero to three mutations. */
function templateArbitrary(path: string, values: Record<string, string[]>, t: Tokens): fc.Arbitrary<FuzzRequest> {
  const names = Object.keys(values);
  const value = fc.oneof(
    { weight: 4, arbitrary: fc.constantFrom(...Object.values(values).flat()) },
    { weight: 4, arbitrary: nearMiss(fc.constantFrom(...Object.values(values).flat())) },
    { weight: 1, arbitrary: fc.constant('') },
    { weight: 1, arbitrary: HUGE },
    { weight: 2, arbitrary: anyText },
  );
  const mutation: fc.Arbitrary<Mutation> = fc.oneof(
    fc.record({ kind: fc.constant('drop' as const), index: fc.nat() }),
    fc.record({ kind: fc.constant('duplicate' as const), index: fc.nat() }),
    fc.record({ kind: fc.constant('replace' as const), index: fc.nat(), value }),
    fc.record({ kind: fc.constant('add' as const), name: fc.oneof(fc.constantFrom(...names), anyText), value }),
    fc.record({ kind: fc.constant('auth' as const), value: authorizationArbitrary(values, t) }),
  );
  return fc
    .record({
      template: fc.constantFrom(...templates(path, t)),
      mutations: fc.array(mutation, { maxLength: 3 }),
      how: fc.constantFrom<'form' | 'uri'>('form', 'uri'),
      method: fc.constantFrom('POST' as const, 'POST' as const, 'POST' as const, 'GET' as const, 'PUT' as const),
    })
    .map(({ template, mutations, how, method }) => {
      const params = template.params.map(([n, v]) => [n, v] as [string, string]);
      let authorization: string | string[] | undefined = template.authorization;
      for (const m of mutations) {
        const i = params.length === 0 ? -1 : 'index' in m ? m.index % params.length : -1;
        if (m.kind === 'drop' && i >= 0) params.splice(i, 1);
        else if (m.kind === 'duplicate' && i >= 0) params.push(params[i]!);
        else if (m.kind === 'replace' && i >= 0) params[i] = [params[i]![0], m.value];
        else if (m.kind === 'add') params.push([m.name, m.value]);
        else if (m.kind === 'auth') authorization = m.value;
      }
      return {
        method: path.startsWith('/connect/') ? method : 'GET',
        url: path,
        contentType: 'application/x-www-form-urlencoded',
        authorization,
        body: params.map(([n, v]) => `${encode(n, how)}=${encode(v, how)}`).join('&'),
      };
    });
}

interface FuzzRequest {
  method: 'GET' | 'POST' | 'PUT';
  url: string;
  contentType: string | undefined;
  authorization: string | string[] | undefined;
  body: string | Buffer | undefined;
}

function requestArbitrary(path: string, values: Record<string, string[]>, t: Tokens): fc.Arbitrary<FuzzRequest> {
  return fc.oneof(templateArbitrary(path, values, t), randomRequestArbitrary(path, values, t));
}

function randomRequestArbitrary(path: string, values: Record<string, string[]>, t: Tokens): fc.Arbitrary<FuzzRequest> {
  return fc.record({
    method: fc.constantFrom('GET' as const, 'POST' as const, 'POST' as const, 'POST' as const, 'PUT' as const),
    url: queryArbitrary.map((q) => path + q),
    contentType,
    authorization: authorizationArbitrary(values, t),
    body: bodyArbitrary(values),
  });
}

async function send(sigil: Sigil, r: FuzzRequest, remoteAddress = '127.0.0.1'): Promise<LightMyRequestResponse> {
  const headers: Record<string, string | string[]> = {};
  if (r.contentType !== undefined) headers['content-type'] = r.contentType;
  if (r.authorization !== undefined) headers.authorization = r.authorization;
  return sigil.app.inject({
    method: r.method,
    url: r.url,
    headers,
    remoteAddress,
    ...(r.body !== undefined ? { payload: r.body } : {}),
  });
}

/** The invariants every response keeps. */
function checkResponse(res: LightMyRequestResponse): void {
  expect(ALLOWED_STATUS, `status ${res.statusCode}: ${res.body.slice(0, 300)}`).toContain(res.statusCode);
  const everything = res.body + JSON.stringify(res.headers);
  for (const leak of LEAKS) expect(everything, `leaks ${JSON.stringify(leak)}`).not.toContain(leak);
  const type = String(res.headers['content-type'] ?? '');
  if (res.statusCode >= 400 && res.body.length > 0) {
    expect(type).toMatch(/^application\/json/);
    const body = JSON.parse(res.body) as Record<string, unknown>;
    expect(ERROR_CODES).toContain(body.error);
    if (body.error_description !== undefined) expect(body.error_description).toMatch(DESCRIPTION);
    expect(Object.keys(body).every((k) => ['error', 'error_description', 'error_uri'].includes(k))).toBe(true);
  }
  if (res.statusCode >= 400 && res.body.length === 0) {
    // RFC 6750 §3.1: a protected resource request without a token gets only the challenges
    // (Bearer, and DPoP with its algorithms, RFC 9449 §7.1).
    expect(res.statusCode).toBe(401);
    expect(res.headers['www-authenticate']).toMatch(/^Bearer realm="sigil", DPoP algs="[A-Za-z0-9 ]+"$/);
  }
  if (res.statusCode === 200 && type.startsWith('application/json')) expect(() => JSON.parse(res.body)).not.toThrow();
  const challenge = res.headers['www-authenticate'];
  if (challenge !== undefined) expect(String(challenge)).toMatch(/^[\x20-\x7e]+$/);
  if (res.statusCode === 429) expect(res.headers['retry-after']).toMatch(/^\d+$/);
  if (res.statusCode === 405) expect(res.headers.allow).toBeDefined();
}

async function obtainTokens(sigil: Sigil): Promise<Tokens> {
  const post = async (auth: [string, string], params: Record<string, string>) => {
    const res = await sigil.app.inject({
      method: 'POST',
      url: '/connect/token',
      headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: basic(...auth) },
      payload: form(params),
    });
    expect(res.statusCode, res.body).toBe(200);
    return res.json<Record<string, string>>();
  };
  const jwt = await post(['m2m', 'm2m-secret'], { grant_type: 'client_credentials', scope: 'api1' });
  const reference = await post(['m2m-ref', 'm2m-secret'], { grant_type: 'client_credentials' });
  const user = await post(['ropc', 'ropc-secret'], {
    grant_type: 'password',
    username: 'alice',
    password: 'alice',
    scope: 'openid profile api1 offline_access',
  });
  const userRef = await post(['ropc-ref', 'ropc-secret'], {
    grant_type: 'password',
    username: 'bob',
    password: 'bob',
    scope: 'openid api1 offline_access',
  });
  return {
    jwt: jwt.access_token!,
    reference: reference.access_token!,
    userJwt: user.access_token!,
    userReference: userRef.access_token!,
    refresh: user.refresh_token!,
    refreshReuse: userRef.refresh_token!,
    idToken: user.id_token!,
  };
}

describe('fuzzing every endpoint', () => {
  let sigil: Sigil;

  beforeAll(async () => {
    // A high failure limit keeps most requests past the rate limiter, so they reach the grants.
    // Plus a public code-flow client, so that pushed authorization requests can succeed.
    const par = {
      clientId: 'par-spa',
      requireClientSecret: false,
      allowedGrantTypes: ['authorization_code'],
      allowedScopes: ['openid', 'api1'],
      redirectUris: ['https://spa.example/cb'],
    };
    sigil = await startSigil({
      rateLimits: { maxFailures: 100_000, windowSeconds: 60 },
      clients: [...(testConfig().clients ?? []), par],
    });
  });
  afterAll(async () => sigil?.close());

  for (const path of ENDPOINTS) {
    it(`${path}: only deliberate 2xx/4xx answers, well-formed errors, no leaks`, async () => {
      const seen = new Set<number>();
      const counts = new Map<number, number>();
      // Fresh tokens: fuzzing an endpoint may revoke or consume the earlier ones.
      const tokens = await obtainTokens(sigil);
      const values = validValues(tokens);
      await fc.assert(
        fc.asyncProperty(requestArbitrary(path, values, tokens), async (request) => {
          const res = await send(sigil, request);
          seen.add(res.statusCode);
          counts.set(res.statusCode, (counts.get(res.statusCode) ?? 0) + 1);
          checkResponse(res);
        }),
        { numRuns: Math.round((path === '/connect/token' ? 400 : 250) * SCALE) },
      );
      if (process.env.FUZZ_STATS) console.log(path, [...counts].sort());
      // The generator does reach past the error paths.
      expect([...seen].some((s) => s < 300)).toBe(true);
    });
  }

  it('the provider still works after the fuzzing', async () => {
    const res = await sigil.app.inject({
      method: 'POST',
      url: '/connect/token',
      headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: basic('m2m', 'm2m-secret') },
      payload: form({ grant_type: 'client_credentials' }),
    });
    expect(res.statusCode).toBe(200);
    expect((await sigil.app.inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(200);
  });
});

describe('fuzzing with the default rate limits', () => {
  let sigil: Sigil;
  let tokens: Tokens;
  beforeAll(async () => {
    sigil = await startSigil();
    tokens = await obtainTokens(sigil);
  });
  afterAll(async () => sigil?.close());

  it('credential-checking endpoints stay well-behaved (2xx/4xx, 429 with Retry-After) while failures pile up', async () => {
    const values = validValues(tokens);
    const paths = fc.constantFrom('/connect/token', '/connect/introspect', '/connect/revocation');
    const addresses = fc.constantFrom('127.0.0.1', '10.0.0.1', '10.0.0.2', '::1');
    await fc.assert(
      fc.asyncProperty(
        paths.chain((path) => requestArbitrary(path, values, tokens)),
        addresses,
        async (request, address) => {
          const res = await send(
            sigil,
            { ...request, method: 'POST', contentType: 'application/x-www-form-urlencoded' },
            address,
          );
          checkResponse(res);
        },
      ),
      { numRuns: Math.round(200 * SCALE) },
    );
  });
});

describe('the failure limiter under the default limits', () => {
  let sigil: Sigil;
  beforeAll(async () => {
    sigil = await startSigil();
  });
  afterAll(async () => sigil?.close());

  it('after repeated failures from one address, even the right secret gets 429 with Retry-After there, and a token from another address', async () => {
    const address = '192.0.2.7';
    const attempt = (secret: string, from = address) =>
      send(
        sigil,
        {
          method: 'POST',
          url: '/connect/token',
          contentType: 'application/x-www-form-urlencoded',
          authorization: basic('other', secret),
          body: form({ grant_type: 'password', username: 'alice', password: 'alice' }),
        },
        from,
      );
    // At least 10 failures per minute are tolerated; the default limit is 20.
    for (let i = 0; i < 20; i++) {
      const res = await attempt(`wrong-${i}`);
      expect(res.statusCode).toBe(401);
      checkResponse(res);
    }
    const blocked = await attempt('other-secret');
    expect(blocked.statusCode).toBe(429);
    expect(blocked.json()).toMatchObject({ error: 'temporarily_unavailable' });
    checkResponse(blocked);
    // Failures from one address never block the right secret from another.
    const elsewhere = await attempt('other-secret', '192.0.2.8');
    expect(elsewhere.statusCode).toBe(200);
    checkResponse(elsewhere);
  });
});
