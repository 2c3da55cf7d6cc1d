/**
 * Home-realm discovery, pure: an address at an organization's domain goes to the first of its
 * providers the client may use, only when the request names no other organization; anything else
 * (no `@`, an empty part, an unknown domain, no usable provider) signs in with a password.
 */
import { describe, expect, it } from 'vitest';
import { homeRealmProvider, identityFirst } from '../../src/interaction/home-realm.js';
import { Organizations } from '../../src/organizations/registry.js';
import { configOrganizationId } from '../../src/organizations/organization.js';

const orgs = new Organizations([
  {
    name: 'acme',
    displayName: 'Acme',
    domains: ['acme.example'],
    identityProviders: ['acme-a', 'acme-b'],
    membership: 'invite',
  },
  { name: 'plain', displayName: 'Plain', domains: ['plain.example'], identityProviders: [], membership: 'invite' },
]);
const ACME = configOrganizationId('acme');

describe('homeRealmProvider', () => {
  it("takes the organization's first provider the client may use, the domain in any case", () => {
    expect(homeRealmProvider('jo@acme.example', orgs, ['acme-a', 'acme-b'], undefined)).toBe('acme-a');
    expect(homeRealmProvider('Jo@ACME.Example', orgs, ['acme-b'], undefined)).toBe('acme-b');
    expect(homeRealmProvider('jo@acme.example', orgs, ['acme-b', 'acme-a'], ACME)).toBe('acme-a');
  });

  it('gives none for a client restricted away, another organization requested, or no provider', () => {
    expect(homeRealmProvider('jo@acme.example', orgs, ['other'], undefined)).toBeUndefined();
    expect(homeRealmProvider('jo@acme.example', orgs, ['acme-a'], configOrganizationId('plain'))).toBeUndefined();
    expect(homeRealmProvider('jo@plain.example', orgs, ['acme-a'], undefined)).toBeUndefined();
  });

  it('gives none for what is not an address at a known domain', () => {
    for (const address of ['jo', '', '@acme.example', 'jo@', 'jo@elsewhere.example', 'jo@acme.example.'])
      expect(homeRealmProvider(address, orgs, ['acme-a'], undefined)).toBeUndefined();
  });
});

describe('identityFirst', () => {
  it('holds when any organization lists a domain', () => {
    expect(identityFirst(orgs)).toBe(true);
    expect(identityFirst(new Organizations([]))).toBe(false);
    expect(
      identityFirst(
        new Organizations([{ name: 'x', displayName: 'X', domains: [], identityProviders: [], membership: 'open' }]),
      ),
    ).toBe(false);
  });
});
