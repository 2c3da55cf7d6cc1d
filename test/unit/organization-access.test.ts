/**
 * Who may sign in to an organization (interaction/organization-access.ts): members, and the three
 * ways of joining on the spot; the password sign-in's `local` mark is never a provider.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  type OrganizationFacts,
  organizationAccess,
  verifiedEmailDomain,
} from '../../src/interaction/organization-access.js';

const org = (over: Partial<OrganizationFacts['organization']> = {}): OrganizationFacts['organization'] => ({
  id: 'org_x',
  name: 'acme',
  membership: 'invite',
  domains: ['acme.example'],
  identityProviders: ['acme-sso'],
  ...over,
});

describe('organizationAccess', () => {
  it('lets members in, and joins through open membership, a listed provider or a verified domain', () => {
    expect(organizationAccess({ organization: org(), roles: [] }, 'local')).toBe('member');
    expect(organizationAccess({ organization: org({ membership: 'open' }) }, 'local')).toBe('join');
    expect(organizationAccess({ organization: org() }, 'acme-sso')).toBe('join');
    expect(
      organizationAccess({ organization: org({ membership: 'domain' }), verifiedEmailDomain: 'acme.example' }, 'local'),
    ).toBe('join');
    expect(organizationAccess({ organization: org(), verifiedEmailDomain: 'acme.example' }, 'local')).toBe('denied');
    expect(
      organizationAccess({ organization: org({ membership: 'domain' }), verifiedEmailDomain: 'evil.example' }, 'local'),
    ).toBe('denied');
    expect(organizationAccess({ organization: org() }, 'other-sso')).toBe('denied');
  });

  it('never takes a password sign-in for a provider sign-in, even for a provider named "local"', () => {
    expect(organizationAccess({ organization: org({ identityProviders: ['local'] }) }, 'local')).toBe('denied');
  });

  it('denies every non-member of an invite-only organization who did not come through its providers', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 20 }), fc.option(fc.domain(), { nil: undefined }), (idp, domain) => {
        fc.pre(idp !== 'acme-sso');
        const facts: OrganizationFacts = { organization: org(), ...(domain ? { verifiedEmailDomain: domain } : {}) };
        expect(organizationAccess(facts, idp)).toBe('denied');
      }),
    );
  });
});

describe('verifiedEmailDomain', () => {
  it('gives the domain of a verified address only', () => {
    expect(verifiedEmailDomain({ email: 'a@ACME.example', email_verified: true })).toBe('acme.example');
    expect(verifiedEmailDomain({ email: 'a@acme.example', email_verified: false })).toBeUndefined();
    expect(verifiedEmailDomain({ email: 'a@acme.example', email_verified: 'true' })).toBeUndefined();
    expect(verifiedEmailDomain({ email: '@acme.example', email_verified: true })).toBeUndefined();
    expect(verifiedEmailDomain({ email: `a@${'x'.repeat(400)}.example`, email_verified: true })).toBeUndefined();
  });
});
