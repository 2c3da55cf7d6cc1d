/**
 * The steps of `validateAuthorizeRequest` (src/validation/authorize/), each on its own: who sees
 * each error (the error page, or the client in which mode), the rules of every step, and that the
 * parsers answer arbitrary input with an OAuth error, never another one.
 */
import fc from 'fast-check';
import { SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveConfig } from '../../src/config/loader.js';
import { ClientRegistry, type Client } from '../../src/clients/registry.js';
import { OAuthError } from '../../src/protocol/errors.js';
import { Params } from '../../src/protocol/params.js';
import { Resources } from '../../src/resources/scopes.js';
import { fallbackTarget, isNativeRedirect, loadClient, responseTarget } from '../../src/validation/authorize/client.js';
import {
  checkResponseType,
  normalizeResponseType,
  responseModeFor,
  type ResponseFlow,
} from '../../src/validation/authorize/core-parameters.js';
import {
  checkClaims,
  checkDpopJkt,
  checkOptionalParameters,
  checkPkce,
  idTokenHintSubject,
  parseMaxAge,
  parsePrompt,
} from '../../src/validation/authorize/optional-parameters.js';
import { checkParameterLengths, keptParameters, PARAM_MAX_LENGTH } from '../../src/validation/authorize/parameters.js';
import { loadRequestParameters } from '../../src/validation/authorize/request-object.js';
import { checkResourceIndicators, checkScopes } from '../../src/validation/authorize/scopes.js';
import { AuthorizeError, RESPONSE_TYPES, type ResponseTarget } from '../../src/validation/authorize/types.js';
import { validateAuthorizeRequest } from '../../src/validation/authorize-request.js';
import { parseClaimsParameter } from '../../src/validation/claims-parameter.js';
import { startSigil, testConfig } from '../helpers.js';
import { caught, unicodeText } from './arbitraries.js';
import { nowSeconds } from '../../src/crypto/handles.js';

const CB = 'https://app.example/cb';
const API1 = 'https://api1.example';
const SECRET = 'web-secret-of-thirty-two-characters!';
const CHALLENGE = 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGrSTuTg4Qm';
const JKT = '0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I';

const overrides = {
  apiResources: [
    { name: 'api1', scopes: ['api1'], secrets: ['api1-secret'], resourceUris: [API1] },
    { name: 'api2', scopes: ['api2'], secrets: ['api2-secret'] },
  ],
  clients: [
    {
      clientId: 'web',
      clientSecrets: [SECRET],
      allowedGrantTypes: ['authorization_code'],
      allowedScopes: ['openid', 'profile', 'api1', 'offline_access'],
      allowOfflineAccess: true,
      redirectUris: [CB],
    },
    {
      clientId: 'pub',
      requireClientSecret: false,
      allowedGrantTypes: ['authorization_code'],
      allowedScopes: ['openid'],
      redirectUris: [CB],
    },
    {
      clientId: 'hybrid',
      clientSecrets: ['x'],
      allowedGrantTypes: ['hybrid', 'implicit'],
      allowAccessTokensViaBrowser: true,
      allowOfflineAccess: true,
      allowedScopes: ['openid', 'profile', 'api1', 'api2', 'offline_access'],
      redirectUris: [CB],
      requirePkce: false,
    },
    {
      clientId: 'plain',
      clientSecrets: ['x'],
      allowedGrantTypes: ['authorization_code'],
      allowedScopes: ['openid'],
      redirectUris: [CB],
      requirePkce: false,
      allowPlainTextPkce: true,
    },
    {
      clientId: 'pushy',
      clientSecrets: ['x'],
      allowedGrantTypes: ['authorization_code'],
      allowedScopes: ['openid'],
      redirectUris: [CB],
      requirePushedAuthorizationRequests: true,
    },
  ],
};
const cfg = resolveConfig(testConfig(overrides));
const registry = new ClientRegistry(cfg.clients);
const resources = new Resources(cfg);
const client = (id: string): Client => registry.get(id) as Client;
const params = (record: Record<string, string | string[]>) => Params.fromRecord(record);

/** The AuthorizeError `f` throws (failing on anything else), or undefined. */
async function refused(f: () => unknown): Promise<AuthorizeError | undefined> {
  try {
    await f();
    return undefined;
  } catch (err) {
    expect(err).toBeInstanceOf(AuthorizeError);
    return err as AuthorizeError;
  }
}
const onPage = (err: AuthorizeError | undefined, code: string) => {
  expect(err?.error.code).toBe(code);
  expect(err?.target).toBeUndefined();
};
const toClient = (err: AuthorizeError | undefined, code: string, target: Partial<ResponseTarget>) => {
  expect(err?.error.code).toBe(code);
  expect(err?.target).toEqual({ redirectUri: CB, mode: 'query', ...target });
};
/** The caller's address the client step counts document fetches against. */
const ADDRESS = '127.0.0.1';
const flowOf = (rt: string): ResponseFlow => checkResponseType(rt, undefined, client('hybrid'));

describe('client step: loadClient, responseTarget, fallbackTarget', () => {
  it('refuses a missing, repeated, oversized or unknown client_id on the error page', async () => {
    onPage(await refused(() => loadClient(registry, params({}), ADDRESS)), 'invalid_request');
    onPage(
      await refused(() => loadClient(registry, params({ client_id: ['web', 'web'] }), ADDRESS)),
      'invalid_request',
    );
    onPage(
      await refused(() => loadClient(registry, params({ client_id: 'w'.repeat(101) }), ADDRESS)),
      'invalid_request',
    );
    onPage(await refused(() => loadClient(registry, params({ client_id: 'nobody' }), ADDRESS)), 'unauthorized_client');
    expect((await loadClient(registry, params({ client_id: 'web' }), ADDRESS)).clientId).toBe('web');
  });

  it('shows redirect_uri errors, an oversized state and an unknown response_mode on the page', async () => {
    const web = client('web');
    const bads: Record<string, string | string[]>[] = [
      {},
      { redirect_uri: [CB, CB] },
      { redirect_uri: `${CB}/other` },
      { redirect_uri: '/cb' },
      { redirect_uri: `${CB}${'x'.repeat(400)}` },
    ];
    for (const bad of bads) onPage(await refused(() => responseTarget(params(bad), web)), 'invalid_request');
    onPage(
      await refused(() => responseTarget(params({ redirect_uri: CB, state: 's'.repeat(2001) }), web)),
      'invalid_request',
    );
    onPage(
      await refused(() => responseTarget(params({ redirect_uri: CB, response_mode: 'web_message' }), web)),
      'invalid_request',
    );
  });

  it('sends a repeated state back without it, and returns the target in mode query otherwise', async () => {
    const web = client('web');
    toClient(
      await refused(() => responseTarget(params({ redirect_uri: CB, state: ['a', 'b'] }), web)),
      'invalid_request',
      {},
    );
    expect(
      responseTarget(params({ redirect_uri: CB, state: 's'.repeat(2000), response_mode: 'form_post' }), web),
    ).toEqual({
      target: { redirectUri: CB, mode: 'query', state: 's'.repeat(2000) },
      responseMode: 'form_post',
    });
    expect(
      responseTarget(params({ redirect_uri: CB, response_mode: ['query', 'query'] }), web).responseMode,
    ).toBeUndefined();
  });

  it('takes the target of the plain parameters only when they name a registered redirect_uri', () => {
    const web = client('web');
    expect(fallbackTarget(params({ redirect_uri: `${CB}/x` }), web)).toBeUndefined();
    expect(fallbackTarget(params({ redirect_uri: CB, state: ['a', 'b'] }), web)).toBeUndefined();
    expect(fallbackTarget(params({ redirect_uri: CB, state: 'st', response_type: 'id_token code' }), web)).toEqual({
      redirectUri: CB,
      mode: 'fragment',
      state: 'st',
    });
    expect(
      fallbackTarget(params({ redirect_uri: CB, response_type: 'code', response_mode: 'form_post' }), web),
    ).toEqual({ redirectUri: CB, mode: 'form_post' });
  });

  it('recognizes native redirect URIs (RFC 8252)', () => {
    for (const uri of ['http://127.0.0.1:8080/cb', 'http://[::1]/cb', 'http://localhost', 'com.example.app:/cb'])
      expect(isNativeRedirect(uri), uri).toBe(true);
    for (const uri of ['https://app.example/cb', 'http://localhost.example/cb'])
      expect(isNativeRedirect(uri), uri).toBe(false);
  });
});

describe('parameter bounds', () => {
  it('refuses each bounded parameter one character over its limit, or repeated', () => {
    for (const [name, max] of Object.entries(PARAM_MAX_LENGTH)) {
      expect(() => checkParameterLengths(params({ [name]: 'a'.repeat(max) }))).not.toThrow();
      expect(caught(() => checkParameterLengths(params({ [name]: 'a'.repeat(max + 1) })))?.description, name).toBe(
        `${name} is too long`,
      );
      expect(caught(() => checkParameterLengths(params({ [name]: ['a', 'b'] })))?.code, name).toBe('invalid_request');
    }
  });

  it('keeps the resumable parameters and every resource value space-separated in one', () => {
    expect(
      keptParameters(params({ client_id: 'web', request: 'jwt', resource: [API1, 'https://b.example'], other: 'x' })),
    ).toEqual({
      client_id: 'web',
      resource: `${API1} https://b.example`,
    });
  });
});

describe('core parameters: response_type and response mode', () => {
  it('normalizes any order of the parts to one of RESPONSE_TYPES, and nothing else', () => {
    expect(normalizeResponseType('token id_token code')).toBe('code id_token token');
    expect(normalizeResponseType('id_token code')).toBe('code id_token');
    for (const bad of ['', ' ', 'code ', 'code  token', 'code code', 'none', 'CODE', 'code device'])
      expect(normalizeResponseType(bad), bad).toBeUndefined();
    fc.assert(
      fc.property(
        fc.oneof(
          unicodeText({ maxLength: 30 }),
          fc.array(fc.constantFrom('code', 'id_token', 'token', '', 'x'), { maxLength: 4 }).map((p) => p.join(' ')),
        ),
        (text) => {
          const rt = normalizeResponseType(text);
          if (rt !== undefined) {
            expect(RESPONSE_TYPES).toContain(rt);
            expect(new Set(text.split(' '))).toEqual(new Set(rt.split(' ')));
          }
        },
      ),
    );
  });

  it('chooses the mode: form_post when asked, fragment when asked or for tokens, else query', () => {
    expect(responseModeFor('code', undefined)).toBe('query');
    expect(responseModeFor(undefined, undefined)).toBe('query');
    expect(responseModeFor('code', 'fragment')).toBe('fragment');
    expect(responseModeFor('code id_token', undefined)).toBe('fragment');
    expect(responseModeFor('code id_token', 'query')).toBe('fragment');
    expect(responseModeFor('token', 'form_post')).toBe('form_post');
    expect(responseModeFor('code', 'bogus')).toBe('query');
  });

  it('refuses missing, unknown, FAPI 2.0 non-code, query with tokens, and response types the client may not use', () => {
    const web = client('web');
    const hybrid = client('hybrid');
    expect(caught(() => checkResponseType(undefined, undefined, web))?.code).toBe('invalid_request');
    expect(caught(() => checkResponseType('code token id_token none', undefined, hybrid))?.code).toBe(
      'unsupported_response_type',
    );
    expect(caught(() => checkResponseType('code id_token', undefined, { ...hybrid, profile: 'fapi2' }))?.code).toBe(
      'unsupported_response_type',
    );
    expect(caught(() => checkResponseType('code id_token', 'query', hybrid))?.code).toBe('invalid_request');
    expect(caught(() => checkResponseType('id_token', undefined, web))?.code).toBe('unauthorized_client');
    expect(
      caught(() => checkResponseType('token', undefined, { ...hybrid, allowAccessTokensViaBrowser: false }))?.code,
    ).toBe('unauthorized_client');
    // A hybrid client may use the plain code flow too.
    expect(checkResponseType('code', 'query', hybrid)).toEqual({
      responseType: 'code',
      returnsCode: true,
      returnsIdToken: false,
      returnsToken: false,
    });
    expect(checkResponseType('token id_token', undefined, hybrid)).toEqual({
      responseType: 'id_token token',
      returnsCode: false,
      returnsIdToken: true,
      returnsToken: true,
    });
  });

  it('answers any response_type and response_mode with a flow or an OAuth error', () => {
    const hybrid = client('hybrid');
    fc.assert(
      fc.property(
        fc.option(unicodeText({ maxLength: 40 }), { nil: undefined }),
        fc.option(fc.constantFrom('query', 'fragment', 'form_post', 'x'), { nil: undefined }),
        (rt, mode) => {
          if (!caught(() => checkResponseType(rt, mode, hybrid)))
            expect(RESPONSE_TYPES).toContain(normalizeResponseType(rt as string));
        },
      ),
    );
  });
});

describe('scopes and resource indicators', () => {
  const web = client('web');
  const hybrid = client('hybrid');
  const code = checkResponseType('code', undefined, web);

  it('grants known, allowed scopes in request order, without repetition', () => {
    expect(checkScopes('openid api1 openid offline_access', code, web, resources)).toEqual([
      'openid',
      'api1',
      'offline_access',
    ]);
  });

  it('refuses missing, unknown and not allowed scopes', () => {
    expect(caught(() => checkScopes(undefined, code, web, resources))?.code).toBe('invalid_request');
    expect(caught(() => checkScopes('openid nope', code, web, resources))?.description).toMatch(
      /^unknown scope .nope.$/,
    );
    expect(caught(() => checkScopes('openid api2', code, web, resources))?.description).toMatch(
      /^scope .api2. is not allowed for this client$/,
    );
    expect(caught(() => checkScopes('offline_access', code, client('pub'), resources))?.code).toBe('invalid_scope');
  });

  it('holds openid, identity scopes and offline_access to the response type (OIDC Core §3, §11)', () => {
    expect(caught(() => checkScopes('api1', flowOf('code id_token'), hybrid, resources))?.code).toBe('invalid_request');
    expect(caught(() => checkScopes('profile api1', code, web, resources))?.description).toBe(
      'identity scopes need the openid scope',
    );
    expect(checkScopes('openid offline_access', flowOf('id_token'), hybrid, resources)).toEqual(['openid']);
    expect(caught(() => checkScopes('offline_access', flowOf('token'), hybrid, resources))?.description).toBe(
      'no scope can be granted',
    );
    expect(caught(() => checkScopes('openid api1', flowOf('token'), hybrid, resources))?.description).toBe(
      'response_type token carries API scopes only',
    );
    expect(caught(() => checkScopes('openid api1', flowOf('id_token'), hybrid, resources))?.description).toBe(
      'response_type id_token carries identity scopes only',
    );
  });

  it('reads resource indicators in both spellings, for the code flow only (RFC 8707)', () => {
    expect(checkResourceIndicators(params({}), code, web, resources)).toBeUndefined();
    expect(checkResourceIndicators(params({ resource: API1 }), code, web, resources)).toEqual(['api1']);
    expect(checkResourceIndicators(params({ resource: `${API1} ${API1}` }), code, web, resources)).toEqual(['api1']);
    expect(
      caught(() => checkResourceIndicators(params({ resource: 'https://unknown.example' }), code, web, resources))
        ?.code,
    ).toBe('invalid_target');
    expect(
      caught(() => checkResourceIndicators(params({ resource: API1 }), flowOf('code token'), hybrid, resources))?.code,
    ).toBe('invalid_target');
    expect(
      caught(() => checkResourceIndicators(params({ resource: API1 }), flowOf('id_token'), hybrid, resources))?.code,
    ).toBe('invalid_target');
  });
});

describe('optional parameters', () => {
  const web = client('web');
  const code = checkResponseType('code', undefined, web);

  it('parses prompt: known values, none alone', () => {
    expect(parsePrompt(undefined)).toEqual(new Set());
    expect(parsePrompt(' login  consent ')).toEqual(new Set(['login', 'consent']));
    expect(parsePrompt('none')).toEqual(new Set(['none']));
    expect(caught(() => parsePrompt('none login'))?.code).toBe('invalid_request');
    expect(caught(() => parsePrompt('create'))?.description).toMatch(/^prompt .create. is not supported$/);
  });

  it('answers any prompt with known values or invalid_request', () => {
    fc.assert(
      fc.property(
        fc.oneof(
          unicodeText({ maxLength: 40 }),
          fc
            .array(fc.constantFrom('none', 'login', 'consent', 'select_account', 'x', ''), { maxLength: 4 })
            .map((p) => p.join(' ')),
        ),
        (text) => {
          const err = caught(() => parsePrompt(text));
          if (err) {
            expect(err.code).toBe('invalid_request');
            return;
          }
          const prompt = parsePrompt(text);
          for (const p of prompt) expect(['none', 'login', 'consent', 'select_account']).toContain(p);
          if (prompt.has('none')) expect(prompt.size).toBe(1);
        },
      ),
    );
  });

  it('parses max_age as 1 to 10 decimal digits of seconds; anything else is invalid_request', () => {
    expect(parseMaxAge(undefined)).toBeUndefined();
    expect(parseMaxAge('0')).toBe(0);
    expect(parseMaxAge('9999999999')).toBe(9999999999);
    for (const bad of ['-1', '1.5', '1e3', ' 1', '', '12345678901', '٣'])
      expect(caught(() => parseMaxAge(bad))?.code, bad).toBe('invalid_request');
    fc.assert(
      fc.property(fc.oneof(unicodeText({ maxLength: 12 }), fc.nat().map(String)), (text) => {
        const err = caught(() => parseMaxAge(text));
        if (err) {
          expect(err.code).toBe('invalid_request');
          return;
        }
        expect(parseMaxAge(text)).toBe(Number(text));
        expect(Number.isSafeInteger(parseMaxAge(text))).toBe(true);
      }),
    );
  });

  it('checks the claims parameter against the scopes and the response type (OIDC Core §5.5)', () => {
    const claims = (json: unknown) => parseClaimsParameter(JSON.stringify(json));
    const acr = claims({
      id_token: { acr: { essential: true, values: ['mfa', 'pwd'] } },
      userinfo: { sub: { value: '1' } },
    });
    expect(checkClaims(acr, code, true)).toEqual({ essentialAcr: ['mfa', 'pwd'], claimsSubject: '1' });
    expect(checkClaims(claims({ id_token: { acr: { values: ['mfa'] } } }), code, true)).toEqual({});
    expect(caught(() => checkClaims(acr, code, false))?.description).toBe(
      'the claims parameter needs the openid scope',
    );
    expect(caught(() => checkClaims(claims({ userinfo: { email: null } }), flowOf('id_token'), true))?.code).toBe(
      'invalid_request',
    );
    expect(
      caught(() => checkClaims(claims({ id_token: { acr: { essential: true, values: [] } } }), code, true))?.code,
    ).toBe('invalid_request');
    expect(caught(() => checkClaims(claims({ id_token: { sub: { values: ['1', '2'] } } }), code, true))?.code).toBe(
      'invalid_request',
    );
    expect(caught(() => checkClaims(claims({ id_token: { sub: { value: 1 } } }), code, true))?.code).toBe(
      'invalid_request',
    );
  });

  it('checks PKCE for code flows only (RFC 7636 §4.3)', () => {
    expect(checkPkce(params({}), flowOf('id_token'), client('hybrid'))).toEqual({});
    expect(checkPkce(params({ code_challenge: CHALLENGE, code_challenge_method: 'S256' }), code, web)).toEqual({
      codeChallenge: CHALLENGE,
      codeChallengeMethod: 'S256',
    });
    expect(caught(() => checkPkce(params({}), code, web))?.description).toBe('code_challenge is required (PKCE)');
    expect(caught(() => checkPkce(params({}), code, client('pub')))?.code).toBe('invalid_request');
    expect(checkPkce(params({}), flowOf('code'), client('hybrid'))).toEqual({});
    expect(caught(() => checkPkce(params({ code_challenge: CHALLENGE }), code, web))?.description).toBe(
      'code_challenge_method must be S256',
    );
    expect(checkPkce(params({ code_challenge: CHALLENGE }), code, client('plain'))).toEqual({
      codeChallenge: CHALLENGE,
      codeChallengeMethod: 'plain',
    });
    expect(
      caught(() => checkPkce(params({ code_challenge: CHALLENGE, code_challenge_method: 'S512' }), code, web))
        ?.description,
    ).toBe('code_challenge_method is not supported');
    expect(
      caught(() => checkPkce(params({ code_challenge: 'short', code_challenge_method: 'S256' }), code, web))
        ?.description,
    ).toBe('code_challenge is malformed');
  });

  it('accepts only a 43-character base64url dpop_jkt (RFC 9449 §10)', () => {
    expect(checkDpopJkt(undefined)).toBeUndefined();
    expect(checkDpopJkt(JKT)).toBe(JKT);
    for (const bad of [JKT.slice(1), `${JKT}A`, `${JKT.slice(1)}=`, `${JKT.slice(1)}+`])
      expect(caught(() => checkDpopJkt(bad))?.code).toBe('invalid_request');
  });

  it('reads the optional parameters in order: nonce, prompt, max_age, acr_values, claims, PKCE, dpop_jkt', () => {
    const hybrid = client('hybrid');
    expect(
      caught(() => checkOptionalParameters(params({ prompt: 'x' }), flowOf('code id_token'), ['openid'], hybrid))
        ?.description,
    ).toBe('nonce is required when an identity token is returned');
    expect(
      caught(() => checkOptionalParameters(params({ prompt: 'x', max_age: 'y' }), code, ['openid'], web))?.description,
    ).toMatch(/^prompt .x. is not supported$/);
    expect(caught(() => checkOptionalParameters(params({ max_age: 'y' }), code, ['openid'], web))?.description).toBe(
      'max_age must be a non-negative integer',
    );
    expect(
      caught(() => checkOptionalParameters(params({ claims: '{}', dpop_jkt: 'x' }), code, ['api1'], web))?.description,
    ).toBe('the claims parameter needs the openid scope');
    expect(caught(() => checkOptionalParameters(params({ dpop_jkt: 'x' }), code, ['openid'], web))?.description).toBe(
      'code_challenge is required (PKCE)',
    );
    // dpop_jkt is checked for every flow, kept for code flows only.
    expect(
      caught(() =>
        checkOptionalParameters(params({ nonce: 'n', dpop_jkt: 'x' }), flowOf('id_token'), ['openid'], hybrid),
      )?.code,
    ).toBe('invalid_request');
    expect(
      checkOptionalParameters(params({ nonce: 'n', dpop_jkt: JKT }), flowOf('id_token'), ['openid'], hybrid),
    ).toEqual({
      nonce: 'n',
      prompt: new Set(),
      acr: { idp: null, tenant: null, acr: [] },
      acrRequested: false,
    });
    const all = checkOptionalParameters(
      params({
        nonce: 'n',
        prompt: 'login',
        max_age: '60',
        login_hint: 'alice',
        ui_locales: 'fr',
        acr_values: 'idp:up mfa',
        code_challenge: CHALLENGE,
        code_challenge_method: 'S256',
        dpop_jkt: JKT,
      }),
      code,
      ['openid'],
      web,
    );
    expect(all).toEqual({
      nonce: 'n',
      prompt: new Set(['login']),
      maxAge: 60,
      loginHint: 'alice',
      uiLocales: 'fr',
      acr: { idp: 'up', tenant: null, acr: ['mfa'] },
      acrRequested: true,
      codeChallenge: CHALLENGE,
      codeChallengeMethod: 'S256',
      dpopJkt: JKT,
    });
  });

  it('asks the verifier about an id_token_hint, and refuses one it does not know', async () => {
    const tokens = { verifyIdTokenHint: async (t: string) => (t === 'genuine' ? { sub: '1' } : undefined) };
    expect(await idTokenHintSubject(undefined, tokens)).toBeUndefined();
    expect(await idTokenHintSubject('genuine', tokens)).toBe('1');
    await expect(idTokenHintSubject('forged', tokens)).rejects.toThrow(OAuthError);
  });
});

describe('request-object step and the composed validation, over a real provider', () => {
  let sigil: Awaited<ReturnType<typeof startSigil>>;
  beforeAll(async () => {
    sigil = await startSigil(overrides);
  });
  afterAll(async () => sigil.close());
  const plain = {
    client_id: 'web',
    redirect_uri: CB,
    response_type: 'code',
    scope: 'openid',
    state: 'st',
    code_challenge: CHALLENGE,
    code_challenge_method: 'S256',
  };
  const hs256 = (payload: Record<string, unknown>) =>
    new SignJWT(payload)
      .setProtectedHeader({ alg: 'HS256' })
      .setIssuer('web')
      .setAudience(sigil.context.issuer)
      .setExpirationTime('1m')
      .sign(new TextEncoder().encode(SECRET));

  it('returns the parameters as sent when they carry no request object, wherever they come from', async () => {
    const raw = params(plain);
    for (const frontChannel of [true, false])
      expect(await loadRequestParameters(sigil.context, raw, client('web'), { frontChannel })).toBe(raw);
  });

  it('takes a pushed request once at the front channel; another client, or a second use, gets the error page', async () => {
    const uri = await sigil.context.store.records.pushedRequests.push(
      'web',
      { ...plain, scope: 'openid api1' },
      60,
      nowSeconds(),
    );
    const foreign = await refused(() =>
      loadRequestParameters(sigil.context, params({ client_id: 'pub', request_uri: uri }), client('pub'), {
        frontChannel: true,
      }),
    );
    onPage(foreign, 'invalid_request_uri');
    const taken = await loadRequestParameters(
      sigil.context,
      params({ client_id: 'web', request_uri: uri, scope: 'ignored' }),
      client('web'),
      { frontChannel: true },
    );
    expect(taken.get('scope')).toBe('openid api1');
    onPage(
      await refused(() =>
        loadRequestParameters(sigil.context, params({ client_id: 'web', request_uri: uri }), client('web'), {
          frontChannel: true,
        }),
      ),
      'invalid_request_uri',
    );
  });

  it('never takes a pushed request, nor requires one, when the request was already admitted', async () => {
    const uri = await sigil.context.store.records.pushedRequests.push('web', plain, 60, nowSeconds());
    const err = await refused(() =>
      loadRequestParameters(sigil.context, params({ ...plain, request_uri: uri }), client('web'), {
        frontChannel: false,
      }),
    );
    toClient(err, 'request_uri_not_supported', { state: 'st' });
    const pushy = params({ ...plain, client_id: 'pushy' });
    expect(await loadRequestParameters(sigil.context, pushy, client('pushy'), { frontChannel: false })).toBe(pushy);
    toClient(
      await refused(() => loadRequestParameters(sigil.context, pushy, client('pushy'), { frontChannel: true })),
      'invalid_request',
      { state: 'st' },
    );
    // The pushed request is still there for its client's browser.
    expect(
      (
        await loadRequestParameters(sigil.context, params({ client_id: 'web', request_uri: uri }), client('web'), {
          frontChannel: true,
        })
      ).get('state'),
    ).toBe('st');
  });

  it('uses only the request object parameters; its errors go to the plain parameters target when good (RFC 9101 §6.3)', async () => {
    const jwt = await hs256({ ...plain, client_id: 'web', scope: 'openid api1', state: 'signed' });
    const fromObject = await loadRequestParameters(
      sigil.context,
      params({ client_id: 'web', request: jwt, scope: 'profile' }),
      client('web'),
      { frontChannel: true },
    );
    expect(fromObject.get('scope')).toBe('openid api1');
    expect(fromObject.get('state')).toBe('signed');
    const differs = await refused(() =>
      loadRequestParameters(sigil.context, params({ ...plain, response_type: 'token', request: jwt }), client('web'), {
        frontChannel: true,
      }),
    );
    toClient(differs, 'invalid_request', { state: 'st', mode: 'fragment' });
    onPage(
      await refused(() =>
        loadRequestParameters(sigil.context, params({ client_id: 'web', request: 'not.a.jwt' }), client('web'), {
          frontChannel: true,
        }),
      ),
      'invalid_request_object',
    );
    const both = await refused(() =>
      loadRequestParameters(
        sigil.context,
        params({ ...plain, request: jwt, request_uri: 'https://x.example/r' }),
        client('web'),
        { frontChannel: true },
      ),
    );
    toClient(both, 'invalid_request', { state: 'st' });
  });

  it('sends errors before the response type is read in mode query, later ones in the mode of the response type', async () => {
    const hybrid = {
      client_id: 'hybrid',
      redirect_uri: CB,
      response_type: 'code id_token',
      scope: 'openid',
      nonce: 'n',
      state: 'st',
    };
    toClient(
      await refused(() =>
        validateAuthorizeRequest(sigil.context, params({ ...hybrid, nonce: 'n'.repeat(301) }), 'authorize', ADDRESS),
      ),
      'invalid_request',
      { state: 'st' },
    );
    toClient(
      await refused(() =>
        validateAuthorizeRequest(sigil.context, params({ ...hybrid, prompt: 'x' }), 'authorize', ADDRESS),
      ),
      'invalid_request',
      { state: 'st', mode: 'fragment' },
    );
    toClient(
      await refused(() =>
        validateAuthorizeRequest(sigil.context, params({ ...hybrid, id_token_hint: 'forged' }), 'authorize', ADDRESS),
      ),
      'invalid_request',
      { state: 'st', mode: 'fragment' },
    );
    const req = await validateAuthorizeRequest(
      sigil.context,
      params({ ...hybrid, response_type: 'code token', resource: API1, response_mode: 'form_post' }),
      'resume',
      ADDRESS,
    ).catch((e: AuthorizeError) => e);
    toClient(req as AuthorizeError, 'invalid_target', { state: 'st', mode: 'form_post' });
  });

  it('composes the steps into the typed request', async () => {
    const req = await validateAuthorizeRequest(
      sigil.context,
      params({ ...plain, scope: 'openid api1 offline_access', resource: API1, max_age: '0' }),
      'authorize',
      ADDRESS,
    );
    expect(req).toMatchObject({
      redirectUri: CB,
      mode: 'query',
      state: 'st',
      responseType: 'code',
      scopes: ['openid', 'api1', 'offline_access'],
      maxAge: 0,
      resources: ['api1'],
    });
    expect(req.client.clientId).toBe('web');
    expect(req.params).toEqual({ ...plain, scope: 'openid api1 offline_access', max_age: '0', resource: API1 });
  });

  it('answers any parameters with a request or an AuthorizeError carrying an OAuth error', async () => {
    const value = fc.oneof(
      fc.constantFrom('code', 'id_token token', 'openid api1', 'none', 'form_post', '60', CB, 'web', 'hybrid', ''),
      unicodeText({ maxLength: 20 }),
    );
    const names = [
      'client_id',
      'redirect_uri',
      'response_type',
      'response_mode',
      'scope',
      'state',
      'nonce',
      'prompt',
      'max_age',
      'claims',
      'resource',
      'request',
      'code_challenge',
      'dpop_jkt',
      'acr_values',
    ];
    await fc.assert(
      fc.asyncProperty(
        fc.dictionary(fc.constantFrom(...names), fc.oneof(value, fc.array(value, { minLength: 2, maxLength: 2 }))),
        async (record) => {
          let raw: Params;
          try {
            raw = Params.fromRecord({ client_id: 'web', redirect_uri: CB, ...record });
          } catch {
            return; // NUL: refused by Params before validation
          }
          const err = await refused(() => validateAuthorizeRequest(sigil.context, raw, 'authorize', ADDRESS));
          if (err) {
            expect(err.error).toBeInstanceOf(OAuthError);
            expect(err.error.status).toBeLessThan(500);
          }
        },
      ),
      { numRuns: 200 },
    );
  });
});
