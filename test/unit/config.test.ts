/** The config loader (src/config/loader.ts, schema.ts): the config contract, errors with paths. */
import { createHash } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify as toYaml } from 'yaml';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError, overridesFromEnv, parsePort, readConfigFile, resolveConfig } from '../../src/config/loader.js';
import { secretDigest, sha256 } from '../../src/crypto/handles.js';
import { parseStorageUrl } from '../../src/stores/sql.js';
import { tempDir, testConfig } from '../helpers.js';

/** The problems of a config that must not resolve. */
function problems(raw: unknown, overrides = {}): string[] {
  try {
    resolveConfig(raw, overrides);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).message).toContain('invalid configuration');
    return (err as ConfigError).problems;
  }
  throw new Error('the config was accepted');
}

const cc = (extra: Record<string, unknown> = {}) => ({
  clientId: 'c',
  clientSecrets: ['s'],
  allowedGrantTypes: ['client_credentials'],
  ...extra,
});

describe('resolveConfig: defaults', () => {
  it('an empty object is a valid config with every default filled in', () => {
    const cfg = resolveConfig({});
    expect(cfg.port).toBe(5000);
    // This machine only: a deployment names its address (HOST=0.0.0.0 in the image and the unit).
    expect(cfg.host).toBe('127.0.0.1');
    expect(cfg.issuer).toBe('http://localhost:5000');
    expect(cfg.storage).toBe('sqlite:./data/sigil.db');
    expect(cfg.signingAlgorithms).toEqual(['RS256', 'ES256']);
    expect(cfg.logLevel).toBe('info');
    expect(cfg.trustProxy).toBe(false);
    expect(cfg.identityResources.map((r) => r.name)).toEqual(['openid', 'profile']);
    expect(cfg.rateLimits).toEqual({
      maxFailures: 20,
      windowSeconds: 60,
      addressMaxFailures: 100,
      identitySlowDownAfter: 100,
      maxDelaySeconds: 5,
    });
    // The web console's built-in client (admin.console, default on) is the only client.
    expect(cfg.clients.map((c) => c.clientId)).toEqual(['sigil-console']);
    expect(cfg.users).toEqual([]);
  });

  it("adds the web console's public client (code + PKCE S256, MFA) unless admin.console is false, and keeps its id for it", () => {
    const console = resolveConfig({ issuer: 'https://id.example/base/' }).clients.find(
      (c) => c.clientId === 'sigil-console',
    );
    expect(console).toMatchObject({
      requireClientSecret: false,
      tokenEndpointAuthMethod: 'none',
      allowedGrantTypes: ['authorization_code'],
      allowedScopes: ['openid', 'sigil:admin', 'scim', 'sigil:org:admin'],
      redirectUris: ['https://id.example/base/admin/callback'],
      requirePkce: true,
      allowPlainTextPkce: false,
      requireMfa: true,
      clientSecrets: [],
    });
    expect(resolveConfig({ admin: { console: false } }).clients).toEqual([]);
    expect(problems({ clients: [cc({ clientId: 'sigil-console' })] })).toEqual([
      'clients[0].clientId: "sigil-console" is the web console\'s built-in client (admin.console false frees the id)',
    ]);
    expect(
      resolveConfig({ admin: { console: false }, clients: [cc({ clientId: 'sigil-console' })] }).clients,
    ).toHaveLength(1);
  });

  it('fills client defaults (Duende numbers; refresh tokens oneTime per RFC 9700 §4.14)', () => {
    const [client] = resolveConfig({ clients: [cc()] }).clients;
    expect(client).toMatchObject({
      enabled: true,
      requireClientSecret: true,
      allowedScopes: [],
      redirectUris: [],
      requirePkce: true,
      allowPlainTextPkce: false,
      allowOfflineAccess: false,
      accessTokenType: 'jwt',
      accessTokenLifetime: 3600,
      identityTokenLifetime: 300,
      authorizationCodeLifetime: 300,
      refreshTokenUsage: 'oneTime',
      refreshTokenExpiration: 'absolute',
      absoluteRefreshTokenLifetime: 2592000,
      slidingRefreshTokenLifetime: 1296000,
      deviceCodeLifetime: 300,
      pollingInterval: 5,
      requireConsent: false,
      identityProviderRestrictions: [],
      enableLocalLogin: true,
      allowAccessTokensViaBrowser: false,
      requestUris: [],
      jwks: null,
      tokenExchangeSubjectAudiences: [],
      allowedCorsOrigins: [],
    });
  });

  it('fills user and resource defaults, keeps claim types', () => {
    const cfg = resolveConfig({
      apiScopes: [{ name: 'api1' }],
      apiResources: [{ name: 'r' }],
      users: [{ subjectId: '1', username: 'a', claims: { role: ['x'], n: 1, b: false } }],
    });
    expect(cfg.apiScopes[0]).toEqual({ name: 'api1', userClaims: [] });
    expect(cfg.apiResources[0]).toEqual({
      name: 'r',
      scopes: [],
      secrets: [],
      userClaims: [],
      resourceUris: [],
      authorizationDetailsTypes: [],
    });
    expect(cfg.users[0]).toMatchObject({ isActive: true, claims: { role: ['x'], n: 1, b: false } });
  });

  it('derives the issuer from the port and strips trailing slashes', () => {
    expect(resolveConfig({ port: 8080 }).issuer).toBe('http://localhost:8080');
    expect(resolveConfig({ issuer: 'https://id.example/' }).issuer).toBe('https://id.example');
    expect(resolveConfig({ issuer: 'https://id.example/tenant//' }).issuer).toBe('https://id.example/tenant');
  });

  it('overrides win over the file', () => {
    const cfg = resolveConfig(
      { port: 1, host: 'h', issuer: 'http://file.example', storage: 'memory' },
      { port: 2, host: '127.0.0.1', issuer: 'http://flag.example', storage: 'sqlite:x.db' },
    );
    expect(cfg).toMatchObject({ port: 2, host: '127.0.0.1', issuer: 'http://flag.example', storage: 'sqlite:x.db' });
    expect(resolveConfig({ port: 7 }, { port: 0 }).port).toBe(0);
  });

  it('accepts the fixture and the example configs', () => {
    expect(resolveConfig(testConfig()).clients).toHaveLength(8); // with the console's
    expect(resolveConfig(readConfigFile(join(import.meta.dirname, '../../examples/sigil.json'))).issuer).toBe(
      'http://localhost:5000',
    );
  });
});

describe('resolveConfig: sha256 secrets', () => {
  const digest = createHash('sha256').update('api2-secret').digest('base64');

  it('accepts sha256:<base64 of 32 bytes> and uses it as the digest', () => {
    const cfg = resolveConfig({
      apiScopes: [{ name: 'a' }],
      apiResources: [{ name: 'a', scopes: ['a'], secrets: [`sha256:${digest}`] }],
      clients: [cc({ clientSecrets: [`sha256:${digest}`, 'clear'] })],
    });
    expect(cfg.clients[0]!.clientSecrets).toEqual([`sha256:${digest}`, 'clear']);
    expect(secretDigest(`sha256:${digest}`).equals(sha256('api2-secret'))).toBe(true);
    expect(secretDigest('clear').equals(sha256('clear'))).toBe(true);
  });

  it('refuses a sha256: value that is not 32 bytes, naming the field', () => {
    expect(problems({ clients: [cc({ clientSecrets: ['ok', 'sha256:abc'] })] })).toEqual([
      expect.stringMatching(/^clients\[0\]\.clientSecrets\[1\]: .*32 bytes/),
    ]);
    expect(
      problems({ apiResources: [{ name: 'r', secrets: [`sha256:${Buffer.alloc(31).toString('base64')}`] }] }),
    ).toEqual([expect.stringMatching(/^apiResources\[0\]\.secrets\[0\]:/)]);
  });
});

describe('resolveConfig: rateLimits and trustProxy', () => {
  it('rateLimits: the address and identity-wide thresholds default to 5 × maxFailures, and may be set', () => {
    expect(resolveConfig({ rateLimits: { maxFailures: 3 } }).rateLimits).toEqual({
      maxFailures: 3,
      windowSeconds: 60,
      addressMaxFailures: 15,
      identitySlowDownAfter: 15,
      maxDelaySeconds: 5,
    });
    const set = {
      maxFailures: 10,
      windowSeconds: 300,
      addressMaxFailures: 40,
      identitySlowDownAfter: 1000,
      maxDelaySeconds: 2,
    };
    expect(resolveConfig({ rateLimits: set }).rateLimits).toEqual(set);
    expect(problems({ rateLimits: { maxDelaySeconds: 61 } })[0]).toMatch(/^rateLimits\.maxDelaySeconds: /);
  });

  it('trustProxy true is refused, naming the field and saying why', () => {
    const found = problems({ trustProxy: true });
    expect(found).toHaveLength(1);
    expect(found[0]).toMatch(/^trustProxy: /);
    expect(found[0]).toContain('X-Forwarded-For');
    expect(found[0]).toContain('written by the caller');
  });

  it('trustProxy takes proxy addresses and CIDR ranges (string or array) or a hop count', () => {
    expect(resolveConfig({ trustProxy: '10.0.0.1' }).trustProxy).toEqual(['10.0.0.1']);
    expect(resolveConfig({ trustProxy: '10.0.0.0/8, fd00::/8' }).trustProxy).toEqual(['10.0.0.0/8', 'fd00::/8']);
    expect(resolveConfig({ trustProxy: ['127.0.0.1', '::1', '192.168.0.0/16', 'loopback'] }).trustProxy).toEqual([
      '127.0.0.1',
      '::1',
      '192.168.0.0/16',
      'loopback',
    ]);
    expect(resolveConfig({ trustProxy: 2 }).trustProxy).toBe(2);
    expect(resolveConfig({ trustProxy: false }).trustProxy).toBe(false);
  });

  it('trustProxy refuses anything else, naming the field', () => {
    expect(problems({ trustProxy: 'proxy.example' })[0]).toMatch(/^trustProxy: .*not an IP address/);
    expect(problems({ trustProxy: '10.0.0.0/33' })[0]).toMatch(/^trustProxy: /);
    expect(problems({ trustProxy: ['10.0.0.1', 'everyone'] })[0]).toMatch(/^trustProxy\[1\]: /);
    expect(problems({ trustProxy: -1 })[0]).toMatch(/^trustProxy: /);
    expect(problems({ trustProxy: 1.5 })[0]).toMatch(/^trustProxy: /);
    expect(problems({ trustProxy: [] })[0]).toMatch(/^trustProxy: /);
  });
});

describe('resolveConfig: errors name the field path', () => {
  it('refuses a non-object root', () => {
    for (const raw of [null, undefined, 42, 'x', [], true])
      expect(problems(raw)).toEqual(['(root): expected an object']);
  });

  it('unknown fields, at any depth', () => {
    expect(problems({ colour: 1 })).toEqual(['colour: unknown field']);
    expect(problems({ clients: [cc({ secret: 'x' })] })).toEqual(['clients[0].secret: unknown field']);
    expect(problems({ users: [{ subjectId: '1', username: 'a', pasword: 'x' }] })).toEqual([
      'users[0].pasword: unknown field',
    ]);
    expect(problems({ rateLimits: { max: 1 } })).toEqual(['rateLimits.max: unknown field']);
  });

  it('wrong types and values', () => {
    expect(problems({ port: '80' })[0]).toMatch(/^port: /);
    expect(problems({ port: 70000 })[0]).toMatch(/^port: /);
    expect(problems({ issuer: 'ftp://x' })[0]).toMatch(/^issuer: /);
    expect(problems({ issuer: 'not a url' })[0]).toMatch(/^issuer: /);
    expect(problems({ signingAlgorithms: ['HS256'] })[0]).toMatch(/^signingAlgorithms\[0\]: /);
    expect(problems({ signingAlgorithms: [] })[0]).toMatch(/^signingAlgorithms: /);
    expect(problems({ clients: [cc({ accessTokenLifetime: 0 })] })[0]).toMatch(/^clients\[0\]\.accessTokenLifetime: /);
    expect(problems({ clients: [cc({ accessTokenLifetime: 1.5 })] })[0]).toMatch(
      /^clients\[0\]\.accessTokenLifetime: /,
    );
    expect(problems({ clients: [cc({ accessTokenType: 'opaque' })] })[0]).toMatch(/^clients\[0\]\.accessTokenType: /);
    expect(problems({ clients: [cc({ allowedGrantTypes: [] })] })[0]).toMatch(/^clients\[0\]\.allowedGrantTypes: /);
    expect(problems({ clients: [cc({ clientId: '' })] })[0]).toMatch(/^clients\[0\]\.clientId: /);
    expect(problems({ clients: [cc({ requestUris: ['http://x.example/r'] })] })[0]).toMatch(
      /^clients\[0\]\.requestUris\[0\]: /,
    );
    expect(problems({ users: [{ subjectId: '1', username: 'a', passwordHash: 'plain' }] })[0]).toMatch(
      /^users\[0\]\.passwordHash: /,
    );
  });

  it('cross-field rules', () => {
    expect(problems({ clients: [cc({ allowedScopes: ['api9'] })] })).toEqual([
      'clients[0].allowedScopes[0]: unknown scope "api9"',
    ]);
    expect(problems({ clients: [cc(), cc()] })).toEqual(['clients: duplicate clientId "c"']);
    expect(problems({ clients: [cc({ clientSecrets: [] })] })).toEqual([
      'clients[0].clientSecrets: a confidential client needs at least one secret',
    ]);
    expect(problems({ clients: [cc({ requireClientSecret: false, clientSecrets: [] })] })[0]).toMatch(
      /^clients\[0\]\.allowedGrantTypes: client_credentials needs a confidential client/,
    );
    expect(problems({ clients: [cc({ allowedGrantTypes: ['implicit', 'authorization_code'] })] })[0]).toMatch(
      /^clients\[0\]\.allowedGrantTypes: /,
    );
    expect(problems({ clients: [cc({ redirectUris: ['https://a.example/cb#frag'] })] })[0]).toMatch(
      /^clients\[0\]\.redirectUris\[0\]: /,
    );
    expect(problems({ clients: [cc({ allowedCorsOrigins: ['https://a.example/path'] })] })[0]).toMatch(
      /^clients\[0\]\.allowedCorsOrigins\[0\]: /,
    );
    expect(problems({ apiResources: [{ name: 'r', scopes: ['nope'] }] })).toEqual([
      'apiResources[0].scopes[0]: unknown API scope "nope"',
    ]);
    expect(problems({ apiScopes: [{ name: 'offline_access' }] })[0]).toMatch(/^apiScopes: /);
    expect(problems({ apiScopes: [{ name: 'openid' }] })[0]).toMatch(/^identityResources\[0\]\.name: /);
    expect(
      problems({
        users: [
          { subjectId: '1', username: 'a' },
          { subjectId: '2', username: 'A' },
        ],
      }),
    ).toEqual(['users[1].username: duplicate username "A"']);
    expect(
      problems({ users: [{ subjectId: '1', username: 'a', password: 'x', passwordHash: '$argon2id$x' }] })[0],
    ).toMatch(/^users\[0\]: /);
  });

  it('ID-JAG settings: confidential clients only, unique issuers, https or loopback URLs', () => {
    const jwtBearer = 'urn:ietf:params:oauth:grant-type:jwt-bearer';
    const audience = { issuer: 'https://chat.example', clientId: 'wiki' };
    const spa = { requireClientSecret: false, clientSecrets: [] };
    expect(problems({ clients: [cc({ ...spa, allowedGrantTypes: [jwtBearer] })] })).toEqual([
      'clients[0].allowedGrantTypes: the JWT bearer grant needs a confidential client (requireClientSecret true)',
    ]);
    expect(
      problems({ clients: [cc({ ...spa, allowedGrantTypes: ['authorization_code'], idJagAudiences: [audience] })] }),
    ).toContain('clients[0].idJagAudiences: ID-JAGs are for confidential clients only (requireClientSecret true)');
    expect(problems({ clients: [cc({ idJagAudiences: [audience, { ...audience, clientId: 'x' }] })] })).toEqual([
      'clients[0].idJagAudiences: two entries have the same issuer',
    ]);
    const trusted = { issuer: 'https://idp.example', jwksUri: 'http://10.0.0.1/jwks', subjectMapping: 'link' };
    expect(problems({ trustedIdentityIssuers: [trusted] })).toEqual([
      'trustedIdentityIssuers[0].jwksUri: must be https (http only for loopback hosts)',
    ]);
    expect(
      problems({
        trustedIdentityIssuers: [{ ...trusted, jwksUri: 'https://idp.example/jwks', subjectMapping: 'name' }],
      }),
    ).toHaveLength(1);
    const cfg = resolveConfig({
      clients: [cc({ allowedGrantTypes: [jwtBearer], idJagAudiences: [audience] })],
      trustedIdentityIssuers: [{ ...trusted, jwksUri: 'https://idp.example/jwks' }],
    });
    expect(cfg.clients[0]!.idJagAudiences).toEqual([audience]);
    expect(cfg.trustedIdentityIssuers).toHaveLength(1);
    expect(
      problems({
        issuer: 'https://idp.example/',
        trustedIdentityIssuers: [{ ...trusted, jwksUri: 'https://idp.example/jwks' }],
      }),
    ).toEqual([
      "trustedIdentityIssuers[0].issuer: Sigil's own issuer cannot be trusted: it must not redeem the ID-JAGs it issues",
    ]);
  });

  it('refuses tokenExchangeSubjectAudiences that are not API resources, naming the entry', () => {
    const resources = { apiScopes: [{ name: 's1' }], apiResources: [{ name: 'r1', scopes: ['s1'] }] };
    const exchanger = (audiences: string[]) =>
      cc({
        allowedGrantTypes: ['urn:ietf:params:oauth:grant-type:token-exchange'],
        tokenExchangeSubjectAudiences: audiences,
      });
    // An API scope or a client id is not an API resource.
    expect(problems({ ...resources, clients: [exchanger(['r1', 's1', 'c'])] })).toEqual([
      'clients[0].tokenExchangeSubjectAudiences[1]: unknown API resource "s1"',
      'clients[0].tokenExchangeSubjectAudiences[2]: unknown API resource "c"',
    ]);
    expect(
      resolveConfig({ ...resources, clients: [exchanger(['r1'])] }).clients[0]!.tokenExchangeSubjectAudiences,
    ).toEqual(['r1']);
  });

  it("refuses a client id that is a user's subject, naming the client path (RFC 9068 §5)", () => {
    const raw = {
      clients: [cc({ clientId: 'other' }), cc({ clientId: '1' })],
      users: [{ subjectId: '1', username: 'alice' }],
    };
    expect(problems(raw)).toEqual([
      expect.stringMatching(/^clients\[1\]\.clientId: clientId "1" is the subjectId of users\[0\]: .*RFC 9068 §5/),
    ]);
  });

  it('refuses a public client with reusable refresh tokens (RFC 9700 §4.14.2)', () => {
    const spa = {
      clientId: 'spa',
      requireClientSecret: false,
      allowedGrantTypes: ['password'],
      allowOfflineAccess: true,
    };
    expect(problems({ clients: [{ ...spa, refreshTokenUsage: 'reuse' }] })).toEqual([
      expect.stringMatching(/^clients\[0\]\.refreshTokenUsage: public clients must use "oneTime"/),
    ]);
    expect(resolveConfig({ clients: [spa] }).clients[0]!.refreshTokenUsage).toBe('oneTime');
    // Without offline access, reuse is moot; confidential clients may reuse.
    expect(() =>
      resolveConfig({ clients: [{ ...spa, allowOfflineAccess: false, refreshTokenUsage: 'reuse' }] }),
    ).not.toThrow();
    expect(() =>
      resolveConfig({
        clients: [cc({ allowedGrantTypes: ['password'], allowOfflineAccess: true, refreshTokenUsage: 'reuse' })],
      }),
    ).not.toThrow();
  });

  it('email: the smtp transport needs smtpUrl and from; the log transport needs neither', () => {
    expect(problems({ email: { transport: 'smtp' } })).toEqual([
      expect.stringMatching(/^email\.smtpUrl: required with the smtp transport/),
      expect.stringMatching(/^email\.from: required with the smtp transport/),
    ]);
    expect(problems({ email: { from: 'id@acme.example' } })).toEqual([
      expect.stringMatching(/^email\.smtpUrl: required with the smtp transport/),
    ]);
    expect(resolveConfig({ email: { transport: 'log' } }).email).toMatchObject({
      transport: 'log',
      passwordReset: true,
    });
    expect(problems({ email: { transport: 'carrier-pigeon' } })).toEqual([
      expect.stringMatching(/^email\.transport: /),
    ]);
  });

  it('reports every problem at once', () => {
    const list = problems({ colour: 1, port: 'x', clients: [cc({ allowedScopes: ['nope'], bogus: true })] });
    expect(list).toEqual(
      expect.arrayContaining([
        'colour: unknown field',
        'clients[0].bogus: unknown field',
        expect.stringMatching(/^port: /),
      ]),
    );
  });
});

describe('resolveConfig: profile "fapi2" (FAPI 2.0 Security Profile)', () => {
  const jwk = {
    kty: 'EC',
    crv: 'P-256',
    x: 'l8tFrhx-34tV3hRICRDY9zCkDlpBhF42UQUfWVAWBFs',
    y: '9VE4jf_Ok_o64zbTTlcuNJajHmt6v9TDVrU0CdvGRDA',
  };
  const fapi = (extra: Record<string, unknown> = {}) => ({
    clientId: 'bank',
    jwks: { keys: [jwk] },
    profile: 'fapi2',
    allowedGrantTypes: ['authorization_code', 'refresh_token'],
    allowedScopes: ['openid'],
    redirectUris: ['https://bank.example/cb'],
    ...extra,
  });

  it('implies the settings the profile requires', () => {
    const [bank] = resolveConfig({ clients: [fapi()] }).clients;
    expect(bank).toMatchObject({
      profile: 'fapi2',
      tokenEndpointAuthMethod: 'private_key_jwt',
      tokenEndpointAuthSigningAlgorithms: ['PS256', 'ES256', 'EdDSA'],
      requirePushedAuthorizationRequests: true,
      requireDPoP: true,
      requirePkce: true,
      allowPlainTextPkce: false,
      authorizationCodeLifetime: 60,
    });
    // Other clients keep the general defaults.
    const [plain] = resolveConfig({ clients: [cc()] }).clients;
    expect(plain).toMatchObject({
      profile: null,
      tokenEndpointAuthMethod: null,
      requirePushedAuthorizationRequests: false,
      requireDPoP: false,
      authorizationCodeLifetime: 300,
    });
    expect(plain?.tokenEndpointAuthSigningAlgorithms).toContain('RS256');
    // Explicit settings that agree with the profile are accepted.
    const [explicit] = resolveConfig({
      clients: [
        fapi({
          tokenEndpointAuthMethod: 'private_key_jwt',
          tokenEndpointAuthSigningAlgorithms: ['ES256'],
          requireDPoP: true,
          authorizationCodeLifetime: 30,
        }),
      ],
    }).clients;
    expect(explicit).toMatchObject({ tokenEndpointAuthSigningAlgorithms: ['ES256'], authorizationCodeLifetime: 30 });
  });

  it('refuses every explicit contradiction, naming the field', () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ requireClientSecret: false, jwks: null }, 'requireClientSecret'],
      [{ allowedGrantTypes: ['authorization_code', 'hybrid'] }, 'allowedGrantTypes'],
      [{ allowedGrantTypes: ['implicit'] }, 'allowedGrantTypes'],
      [{ allowedGrantTypes: ['authorization_code', 'password'] }, 'allowedGrantTypes'],
      [{ requirePkce: false }, 'requirePkce'],
      [{ allowPlainTextPkce: true }, 'allowPlainTextPkce'],
      [{ allowAccessTokensViaBrowser: true }, 'allowAccessTokensViaBrowser'],
      [{ authorizationCodeLifetime: 61 }, 'authorizationCodeLifetime'],
      [{ tokenEndpointAuthMethod: 'client_secret_basic', clientSecrets: ['s'] }, 'tokenEndpointAuthMethod'],
      [{ tokenEndpointAuthSigningAlgorithms: ['PS256', 'RS256'] }, 'tokenEndpointAuthSigningAlgorithms'],
      [{ requirePushedAuthorizationRequests: false }, 'requirePushedAuthorizationRequests'],
      [{ requireDPoP: false }, 'requireDPoP'],
    ];
    for (const [extra, field] of cases) {
      const list = problems({ clients: [fapi(extra)] });
      expect(list, JSON.stringify(extra)).toContainEqual(
        expect.stringMatching(new RegExp(`^clients\\[0\\]\\.${field}: profile "fapi2": `)),
      );
    }
    expect(problems({ clients: [fapi({ profile: 'fapi1' })] })[0]).toMatch(/^clients\[0\]\.profile: /);
  });

  it('needs its keys (private_key_jwt) and a FAPI 2.0 algorithm among signingAlgorithms', () => {
    expect(problems({ clients: [fapi({ jwks: null })] })).toContainEqual(
      expect.stringMatching(/^clients\[0\]\.tokenEndpointAuthMethod: private_key_jwt needs/),
    );
    expect(problems({ signingAlgorithms: ['RS256'], clients: [fapi()] })).toEqual([
      expect.stringMatching(/^clients\[0\]\.profile: .*PS256, ES256 or EdDSA/),
    ]);
    expect(
      resolveConfig({ signingAlgorithms: ['RS256', 'EdDSA'], clients: [fapi()] }).clients.map((c) => c.clientId),
    ).toEqual([fapi().clientId, 'sigil-console']);
  });
});

describe('readConfigFile, parsePort, overridesFromEnv', () => {
  const { dir, cleanup } = tempDir();
  afterAll(cleanup);

  it('reads JSON and YAML (.yaml, .yml), and names unreadable or unparseable files', () => {
    const cfg = { issuer: 'http://x.example', clients: [cc()] };
    writeFileSync(join(dir, 'a.json'), JSON.stringify(cfg));
    writeFileSync(join(dir, 'a.yaml'), toYaml(cfg));
    writeFileSync(join(dir, 'a.YML'), toYaml(cfg));
    for (const f of ['a.json', 'a.yaml', 'a.YML']) expect(readConfigFile(join(dir, f))).toEqual(cfg);
    writeFileSync(join(dir, 'bad.json'), '{"a":');
    writeFileSync(join(dir, 'bad.yaml'), 'a: [1, 2\nb: }');
    expect(() => readConfigFile(join(dir, 'bad.json'))).toThrow(/cannot parse/);
    expect(() => readConfigFile(join(dir, 'bad.yaml'))).toThrow(ConfigError);
    expect(() => readConfigFile(join(dir, 'missing.json'))).toThrow(/cannot read config file .*ENOENT/);
  });

  it('parsePort accepts 0..65535 only', () => {
    expect(parsePort('0', 'p')).toBe(0);
    expect(parsePort('65535', 'p')).toBe(65535);
    for (const bad of ['', '-1', '65536', '1e3', ' 80', '80 ', '0x50', 'eighty', '8.0'])
      expect(() => parsePort(bad, 'PORT'), bad).toThrow(ConfigError);
  });

  it('overridesFromEnv reads PORT, HOST, SIGIL_ISSUER, SIGIL_STORAGE and ignores empty values', () => {
    expect(
      overridesFromEnv({ PORT: '8080', HOST: '0.0.0.0', SIGIL_ISSUER: 'https://i.example', SIGIL_STORAGE: 'memory' }),
    ).toEqual({ port: 8080, host: '0.0.0.0', issuer: 'https://i.example', storage: 'memory' });
    expect(resolveConfig({ host: '10.0.0.5' }, overridesFromEnv({ HOST: '0.0.0.0' })).host).toBe('0.0.0.0');
    expect(overridesFromEnv({ PORT: '', HOST: '', SIGIL_ISSUER: '' })).toEqual({});
    expect(() => overridesFromEnv({ PORT: 'abc' })).toThrow(/PORT/);
  });
});

describe('resolveConfig: secrets from the environment or a file', () => {
  const { dir, cleanup } = tempDir();
  afterAll(cleanup);

  it('takes any string value from { "$env": NAME } or { "$file": PATH } (one trailing newline dropped)', () => {
    writeFileSync(join(dir, 'idp-secret'), 'upstream-secret\n');
    const env = { SIGIL_TEST_STORAGE: 'memory', SIGIL_TEST_CLIENT_SECRET: 'from-env' };
    const cfg = resolveConfig(
      {
        storage: { $env: 'SIGIL_TEST_STORAGE' },
        clients: [cc({ clientSecrets: [{ $env: 'SIGIL_TEST_CLIENT_SECRET' }] })],
        identityProviders: [
          {
            name: 'up',
            authority: 'https://up.example',
            clientId: 'sigil',
            clientSecret: { $file: join(dir, 'idp-secret') },
          },
        ],
      },
      {},
      { env },
    );
    expect(cfg.storage).toBe('memory');
    expect(cfg.clients[0]!.clientSecrets).toEqual(['from-env']);
    expect(cfg.identityProviders[0]!.clientSecret).toBe('upstream-secret');
  });

  it('a missing variable or file stops the load, naming the field path', () => {
    expect(problems({ clients: [cc({ clientSecrets: [{ $env: 'SIGIL_TEST_UNSET' }] })] }, {})).toEqual([
      'clients[0].clientSecrets[0]: environment variable SIGIL_TEST_UNSET is not set',
    ]);
    expect(problems({ storage: { $file: join(dir, 'absent') } })).toEqual([
      `storage: cannot read file ${join(dir, 'absent')}: ENOENT`,
    ]);
    // A reference object with anything else in it is no reference: the schema refuses it as usual.
    expect(problems({ storage: { $env: 'X', other: 1 } })[0]).toMatch(/^storage: /);
  });

  it('a value taken from a secret never appears in an error message', () => {
    const value = 'very secret value 4711';
    writeFileSync(join(dir, 'wrong'), value);
    const env = { SIGIL_TEST_WRONG: value };
    const cases: unknown[] = [
      { issuer: { $env: 'SIGIL_TEST_WRONG' } },
      { trustProxy: { $env: 'SIGIL_TEST_WRONG' } },
      { clients: [cc({ clientSecrets: [{ $file: join(dir, 'wrong') }], requireClientSecret: false })] },
      { identityProviders: [{ name: { $env: 'SIGIL_TEST_WRONG' }, authority: 'https://up.example', clientId: 'x' }] },
      // A rule about two fields quotes the value at another path.
      { clients: [cc({ clientId: { $env: 'SIGIL_TEST_WRONG' } }), cc({ clientId: { $env: 'SIGIL_TEST_WRONG' } })] },
      {
        clients: [cc({ clientSecrets: [`sha256:${value}`] })].map((c) => ({
          ...c,
          clientSecrets: [{ $env: 'SIGIL_TEST_SHA' }],
        })),
      },
    ];
    for (const raw of cases) {
      let message = '';
      try {
        resolveConfig(raw, {}, { env: { ...env, SIGIL_TEST_SHA: `sha256:${value}` } });
      } catch (err) {
        expect(err).toBeInstanceOf(ConfigError);
        message = (err as ConfigError).message;
      }
      expect(message, JSON.stringify(raw)).toMatch(/invalid configuration/);
      expect(message).not.toContain(value);
    }
  });

  it('an unusable storage URL is refused without quoting it (it may hold a password)', () => {
    expect(() => parseStorageUrl('mysql://sigil:db-password-17@db/sigil')).toThrow(/^storage: unsupported URL/);
    expect(() => parseStorageUrl('mysql://sigil:db-password-17@db/sigil')).not.toThrow(/db-password-17/);
  });
});

describe('resolveConfig: grant type names', () => {
  it('refuses a name that is neither built in nor a registered extension grant, suggesting the closest', () => {
    expect(problems({ clients: [cc({ allowedGrantTypes: ['client_credential'] })] })).toEqual([
      'clients[0].allowedGrantTypes[0]: unknown grant type "client_credential"; did you mean "client_credentials"?',
    ]);
    expect(problems({ clients: [cc({ allowedGrantTypes: ['client_credentials', 'urn:example:grant'] })] })).toEqual([
      'clients[0].allowedGrantTypes[1]: unknown grant type "urn:example:grant" (neither built in nor a registered extension grant)',
    ]);
  });

  it('accepts the extension grants the library user registers, and still suggests for their typos', () => {
    const extensionGrants = ['urn:example:grant'];
    expect(
      resolveConfig({ clients: [cc({ allowedGrantTypes: ['urn:example:grant'] })] }, {}, { extensionGrants })
        .clients[0]!.allowedGrantTypes,
    ).toEqual(['urn:example:grant']);
    expect(() =>
      resolveConfig({ clients: [cc({ allowedGrantTypes: ['urn:example:grnat'] })] }, {}, { extensionGrants }),
    ).toThrow(/did you mean "urn:example:grant"/);
  });

  it('reports the cross-field rules together with type errors in other fields', () => {
    expect(problems({ port: 'eighty', colour: 'blue', clients: [cc({ allowedScopes: ['nope'] })] })).toEqual([
      'port: Invalid input: expected number, received string',
      'colour: unknown field',
      'clients[0].allowedScopes[0]: unknown scope "nope"',
    ]);
    // A rule of one field (a malformed sha256: secret) does not hide the rules across fields either.
    expect(
      problems({ clients: [cc({ clientSecrets: ['sha256:abc'] }), cc({ clientId: 'd', allowedScopes: ['nope'] })] }),
    ).toEqual([
      'clients[0].clientSecrets[0]: a "sha256:" secret must be the base64 of 32 bytes',
      'clients[1].allowedScopes[0]: unknown scope "nope"',
    ]);
  });

  it('reports a grant type typo together with the type errors of the same file', () => {
    expect(problems({ port: 'eighty', clients: [cc({ allowedGrantTypes: ['pasword'] })] })).toEqual([
      'clients[0].allowedGrantTypes[0]: unknown grant type "pasword"; did you mean "password"?',
      'port: Invalid input: expected number, received string',
    ]);
  });
});
