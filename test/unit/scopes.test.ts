/** `parseScope` and `validateScopes` (src/resources/scopes.ts), RFC 6749 §3.3. */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { resolveConfig } from '../../src/config/loader.js';
import type { OAuthError } from '../../src/protocol/errors.js';
import {
  MAX_SCOPE_LENGTH,
  OFFLINE_ACCESS,
  Resources,
  allowedScopes,
  parseScope,
  validateScopes,
} from '../../src/resources/scopes.js';
import { testConfig } from '../helpers.js';
import { unicodeText, caught } from './arbitraries.js';

/** RFC 6749 §3.3: scope-token = 1*( %x21 / %x23-5B / %x5D-7E ). */
const SCOPE_TOKEN = /^[\x21\x23-\x5B\x5D-\x7E]+$/;
const scopeChar = fc.mapToConstant(
  { num: 1, build: () => '!' },
  { num: 0x5b - 0x23 + 1, build: (v) => String.fromCharCode(0x23 + v) },
  { num: 0x7e - 0x5d + 1, build: (v) => String.fromCharCode(0x5d + v) },
);
const scopeToken = fc.string({ unit: scopeChar, minLength: 1, maxLength: 12 });
const spaces = fc.string({ unit: fc.constant(' '), minLength: 1, maxLength: 3 });

describe('parseScope', () => {
  it('splits tokens separated by any run of spaces, drops duplicates, keeps order', () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(scopeToken, spaces), { minLength: 1, maxLength: 20 }),
        fc.boolean(),
        (parts, lead) => {
          const text = (lead ? ' ' : '') + parts.map(([t, s]) => t + s).join('');
          fc.pre(text.length <= MAX_SCOPE_LENGTH);
          const tokens = parts.map(([t]) => t);
          expect(parseScope(text)).toEqual([...new Set(tokens)]);
        },
      ),
    );
  });

  it('returns only valid, unique scope tokens, or throws invalid_scope', () => {
    fc.assert(
      fc.property(
        fc.oneof(
          unicodeText({ maxLength: 40 }),
          fc.string({ unit: fc.oneof(scopeChar, fc.constantFrom(' ', '\t', '"', '\\', 'é', '\u0000')) }),
        ),
        (text) => {
          const err = caught(() => parseScope(text));
          if (err) {
            expect(err.code).toBe('invalid_scope');
            expect(err.status).toBe(400);
            return;
          }
          const tokens = parseScope(text);
          expect(tokens.length).toBeGreaterThan(0);
          expect(new Set(tokens).size).toBe(tokens.length);
          for (const t of tokens) expect(t).toMatch(SCOPE_TOKEN);
          expect(tokens.join(' ')).toBe([...new Set(text.split(' ').filter(Boolean))].join(' '));
        },
      ),
    );
  });

  it('refuses empty, blank, too long and non-token input', () => {
    for (const bad of ['', ' ', '   ', 'a\tb', 'a"b', 'a\\b', 'é', 'a\u0000', 'x'.repeat(MAX_SCOPE_LENGTH + 1)])
      expect(caught(() => parseScope(bad))?.code, JSON.stringify(bad)).toBe('invalid_scope');
    expect(parseScope('x'.repeat(MAX_SCOPE_LENGTH))).toEqual(['x'.repeat(MAX_SCOPE_LENGTH)]);
  });
});

describe('validateScopes', () => {
  const cfg = resolveConfig(testConfig());
  const resources = new Resources(cfg);
  const known = resources.allScopeNames();
  const identity = new Set(resources.identity.keys());
  const requestedScopes = fc.uniqueArray(fc.oneof(fc.constantFrom(...known), scopeToken), {
    minLength: 1,
    maxLength: 6,
  });

  it('grants exactly what was asked when every scope is allowed, else throws invalid_scope', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...cfg.clients),
        fc.constantFrom('client' as const, 'user' as const),
        requestedScopes,
        (client, audience, scopes) => {
          const allowed = allowedScopes(client, resources, audience);
          const err = caught(() => validateScopes(scopes.join(' '), client, resources, audience));
          if (scopes.every((s) => allowed.includes(s))) {
            expect(err).toBeUndefined();
            expect(validateScopes(scopes.join(' '), client, resources, audience)).toEqual(scopes);
          } else {
            expect(err?.code).toBe('invalid_scope');
            expect(err?.status).toBe(400);
          }
        },
      ),
    );
  });

  it('never grants identity scopes or offline_access without a user, nor beyond the client', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...cfg.clients),
        fc.constantFrom('client' as const, 'user' as const),
        fc.option(requestedScopes, { nil: undefined }),
        (client, audience, scopes) => {
          let granted: string[];
          try {
            granted = validateScopes(scopes?.join(' '), client, resources, audience);
          } catch (err) {
            expect((err as OAuthError).code).toBe('invalid_scope');
            return;
          }
          expect(granted.length).toBeGreaterThan(0);
          for (const s of granted) {
            expect(known).toContain(s);
            if (s === OFFLINE_ACCESS) expect(client.allowOfflineAccess).toBe(true);
            else expect(client.allowedScopes).toContain(s);
            if (audience === 'client') {
              expect(identity.has(s)).toBe(false);
              expect(s).not.toBe(OFFLINE_ACCESS);
            }
          }
        },
      ),
    );
  });

  it('defaults to every allowed scope when none are requested', () => {
    const m2m = cfg.clients.find((c) => c.clientId === 'm2m')!;
    const ropc = cfg.clients.find((c) => c.clientId === 'ropc')!;
    expect(validateScopes(undefined, m2m, resources, 'client')).toEqual(['api1', 'api2']);
    expect(validateScopes(undefined, ropc, resources, 'user')).toEqual([
      'openid',
      'profile',
      'email',
      'roles',
      'api1',
      'api2',
      'offline_access',
    ]);
    expect(validateScopes(undefined, ropc, resources, 'client')).toEqual(['api1', 'api2']);
    expect(caught(() => validateScopes('openid', m2m, resources, 'client'))?.code).toBe('invalid_scope');
    expect(caught(() => validateScopes('openid', ropc, resources, 'client'))?.description).toContain('needs a user');
    expect(caught(() => validateScopes('unknown', ropc, resources, 'user'))?.description).toContain('unknown scope');
  });
});

describe('Resources.setStored', () => {
  it("adds stored resources after the config file's, never over a config or built-in name, and counts changes", () => {
    const resources = new Resources(resolveConfig(testConfig()));
    const before = resources.version;
    resources.setStored({
      identityResources: [{ name: 'team', userClaims: ['role'], required: false }],
      apiScopes: [
        { name: 'billing.read', userClaims: [] },
        { name: 'api1', displayName: 'shadow', userClaims: ['email'] },
      ],
      apiResources: [
        {
          name: 'billing',
          scopes: ['billing.read'],
          secrets: [],
          userClaims: [],
          resourceUris: ['https://billing.example/'],
          authorizationDetailsTypes: [],
        },
      ],
    });
    expect(resources.version).toBe(before + 1);
    expect(resources.audiences(['billing.read'])).toEqual(['billing']);
    expect(resources.byResourceUri.get('https://billing.example/')?.name).toBe('billing');
    expect(resources.identityClaimNames(['team'])).toEqual(new Set(['role']));
    expect(resources.apiScopes.get('api1')?.displayName).toBeUndefined();
    expect(resources.sourceOf('apiScopes', 'api1')).toBe('config');
    expect(resources.sourceOf('apiScopes', 'billing.read')).toBe('store');
    expect(resources.sourceOf('apiResources', 'sigil')).toBe('built-in');
    expect(resources.allScopeNames()).toEqual(expect.arrayContaining(['team', 'billing.read']));
    // The same state again changes nothing; an empty one removes the stored resources.
    resources.setStored({
      identityResources: [{ name: 'team', userClaims: ['role'], required: false }],
      apiScopes: [
        { name: 'billing.read', userClaims: [] },
        { name: 'api1', displayName: 'shadow', userClaims: ['email'] },
      ],
      apiResources: [
        {
          name: 'billing',
          scopes: ['billing.read'],
          secrets: [],
          userClaims: [],
          resourceUris: ['https://billing.example/'],
          authorizationDetailsTypes: [],
        },
      ],
    });
    expect(resources.version).toBe(before + 1);
    resources.setStored({ identityResources: [], apiScopes: [], apiResources: [] });
    expect(resources.version).toBe(before + 2);
    expect(resources.audiences(['billing.read'])).toEqual([]);
    expect(resources.sourceOf('apiScopes', 'billing.read')).toBeUndefined();
  });
});
