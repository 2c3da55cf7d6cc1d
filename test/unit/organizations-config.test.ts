/**
 * Organizations in the config file (src/config/schema/organizations.ts and its cross checks) and
 * the registry of the organizations in force (src/organizations/registry.ts): defaults, bounds,
 * domains normalized and owned by one organization at most (the error names both), identity
 * providers that exist, the stable ids; with fast-check properties of the name and domain
 * parsing (any input: a result or a refusal, never an exception; a domain once normalized stays
 * as it is).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ConfigError, resolveConfig } from '../../src/config/loader.js';
import {
  DNS_NAME,
  MAX_ORGANIZATION_DOMAINS,
  normalizeDomain,
  ORGANIZATION_NAME,
  organization,
} from '../../src/config/schema/organizations.js';
import { configOrganizationId, newOrganizationId } from '../../src/organizations/organization.js';
import { Organizations } from '../../src/organizations/registry.js';
import { unicodeText } from './arbitraries.js';

const provider = { name: 'acme-sso', authority: 'https://sso.acme.example', clientId: 'sigil' };

function problems(raw: Record<string, unknown>): string[] {
  try {
    resolveConfig(raw);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as ConfigError).problems;
  }
  throw new Error('the config was accepted');
}

describe('config organizations', () => {
  it('fills in the defaults and normalizes domains (lower case, internationalized names as A-labels)', () => {
    const cfg = resolveConfig({
      identityProviders: [provider],
      organizations: [
        { name: 'acme', displayName: 'Acme Inc.', domains: ['ACME.example', 'bücher.example'] },
        { name: 'globex', displayName: 'Globex', identityProviders: ['acme-sso'], membership: 'domain' },
      ],
    });
    expect(cfg.organizations).toEqual([
      {
        name: 'acme',
        displayName: 'Acme Inc.',
        domains: ['acme.example', 'xn--bcher-kva.example'],
        identityProviders: [],
        membership: 'invite',
      },
      { name: 'globex', displayName: 'Globex', domains: [], identityProviders: ['acme-sso'], membership: 'domain' },
    ]);
    expect(resolveConfig({}).organizations).toEqual([]);
  });

  it('refuses a domain of two organizations, naming both', () => {
    const found = problems({
      organizations: [
        { name: 'acme', displayName: 'Acme', domains: ['acme.example'] },
        { name: 'other', displayName: 'Other', domains: ['b.example', 'Acme.Example'] },
      ],
    });
    expect(found).toEqual([
      'organizations[1].domains[1]: "acme.example" is a domain of organization "acme" and of "other": a domain belongs to one organization at most',
    ]);
  });

  it('refuses unknown identity providers and duplicate names (the cross checks)', () => {
    expect(
      problems({
        identityProviders: [provider],
        organizations: [
          { name: 'acme', displayName: 'Acme', identityProviders: ['acme-sso', 'nope'] },
          { name: 'acme', displayName: 'Again' },
        ],
      }),
    ).toEqual([
      'organizations[0].identityProviders[1]: unknown identity provider "nope"',
      'organizations[1].name: duplicate name "acme"',
    ]);
  });

  it('refuses duplicates within one organization and bad values, each at its path', () => {
    expect(
      problems({
        organizations: [
          { name: 'dup', displayName: 'Dup', domains: ['d.example', 'D.example'] },
          { name: 'Upper', displayName: 'x' },
          { name: 'bad', displayName: 'x', domains: ['10.0.0.1', '*.acme.example', 'acme.example.', 'a_b.example'] },
          { name: 'no-display' },
          { name: 'how', displayName: 'x', membership: 'sometimes' },
        ],
      }),
    ).toEqual([
      'organizations[0].domains[1]: "d.example" is listed twice',
      expect.stringMatching(/^organizations\[1\]\.name: lower-case letters/),
      ...[0, 1, 2, 3].map((j) =>
        expect.stringMatching(new RegExp(`^organizations\\[2\\]\\.domains\\[${j}\\]: must be a DNS name`)),
      ),
      expect.stringMatching(/^organizations\[3\]\.displayName: /),
      expect.stringMatching(/^organizations\[4\]\.membership: /),
    ]);
  });

  it('bounds names, display names, domains and providers', () => {
    const base = { name: 'acme', displayName: 'Acme' };
    expect(organization.safeParse({ ...base, name: 'a'.repeat(63) }).success).toBe(true);
    expect(organization.safeParse({ ...base, name: 'a'.repeat(64) }).success).toBe(false);
    expect(organization.safeParse({ ...base, displayName: 'x'.repeat(201) }).success).toBe(false);
    expect(organization.safeParse({ ...base, displayName: 'a\u0000b' }).success).toBe(false);
    const domains = Array.from({ length: MAX_ORGANIZATION_DOMAINS + 1 }, (_, i) => `d${i}.example`);
    expect(organization.safeParse({ ...base, domains }).success).toBe(false);
    expect(organization.safeParse({ ...base, domains: domains.slice(1) }).success).toBe(true);
    // 4 labels of 63 and "example": 263 characters, past RFC 1035's 253.
    const long = `${'a'.repeat(63)}.`.repeat(4);
    expect(organization.safeParse({ ...base, domains: [`${long}example`] }).success).toBe(false);
    expect(organization.safeParse({ ...base, identityProviders: Array(21).fill('p') }).success).toBe(false);
    expect(organization.safeParse({ ...base, extra: 1 }).success).toBe(false);
  });
});

describe('name and domain parsing, for any input', () => {
  it('a name is accepted exactly when it is 1 to 63 of [a-z0-9_-] starting with a letter or digit', () => {
    fc.assert(
      fc.property(fc.oneof(unicodeText({ maxLength: 70 }), fc.stringMatching(/^[a-z0-9_-]{0,70}$/)), (name) => {
        const ok = organization.safeParse({ name, displayName: 'x' }).success;
        expect(ok).toBe(name.length >= 1 && name.length <= 63 && ORGANIZATION_NAME.test(name));
      }),
    );
  });

  it('a domain is refused or normalized to a lower-case DNS name that normalizes to itself', () => {
    const label = fc.stringMatching(/^[A-Za-z0-9-]{1,12}$/);
    const domainish = fc.oneof(
      unicodeText({ maxLength: 60 }),
      fc.array(fc.oneof(label, unicodeText({ maxLength: 6 })), { minLength: 1, maxLength: 5 }).map((l) => l.join('.')),
    );
    fc.assert(
      fc.property(domainish, (value) => {
        const normalized = normalizeDomain(value);
        const parsed = organization.safeParse({ name: 'a', displayName: 'x', domains: [value] });
        expect(parsed.success).toBe(normalized !== undefined);
        if (normalized === undefined) return;
        expect(normalized).toMatch(DNS_NAME);
        expect(normalized).toBe(normalized.toLowerCase());
        expect(normalized.length).toBeLessThanOrEqual(253);
        expect(normalizeDomain(normalized)).toBe(normalized);
        expect(parsed.data?.domains).toEqual([normalized]);
      }),
    );
  });
});

describe('Organizations (the registry in force)', () => {
  const config = resolveConfig({
    organizations: [{ name: 'acme', displayName: 'Acme', domains: ['acme.example'] }],
  }).organizations;

  it('gives a config-file organization an id derived from its name, the same on every node', () => {
    const a = new Organizations(config);
    const b = new Organizations(config);
    const id = a.byName('acme')?.id;
    expect(id).toBe(configOrganizationId('acme'));
    expect(id).toMatch(/^org_[\w-]{22}$/);
    expect(b.byName('acme')?.id).toBe(id);
    expect(configOrganizationId('acme2')).not.toBe(id);
    expect(newOrganizationId()).toMatch(/^org_[\w-]{22}$/);
    expect(newOrganizationId()).not.toBe(newOrganizationId());
  });

  it('finds organizations by name, id and domain (any case); setStored replaces the stored ones', () => {
    const registry = new Organizations(config);
    const stored = {
      id: newOrganizationId(),
      name: 'globex',
      displayName: 'Globex',
      domains: ['globex.example'],
      identityProviders: [],
      membership: 'open' as const,
      source: 'store' as const,
    };
    registry.setStored([stored]);
    expect(registry.all().map((o) => o.name)).toEqual(['acme', 'globex']);
    expect(registry.byDomain('GLOBEX.example')).toBe(stored);
    expect(registry.byId(stored.id)).toBe(stored);
    expect(registry.byDomain('acme.example')?.source).toBe('config');
    expect(registry.byDomain('not a domain')).toBeUndefined();
    registry.setStored([]);
    expect(registry.byName('globex')).toBeUndefined();
    expect(registry.byId(stored.id)).toBeUndefined();
    expect(registry.byName('acme')?.name).toBe('acme');
  });
});
