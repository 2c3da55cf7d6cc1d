/**
 * `parseAcrValues` (src/validation/acr-values.ts): `idp:` and `tenant:` picked out of `acr_values`;
 * the values as a list in order of preference (src/users/acr.ts, OIDC Core §3.1.2.1): `requestsMfa`
 * and `preferredAcr`.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { OAuthError } from '../../src/protocol/errors.js';
import { ACR_FEDERATED, ACR_MFA, ACR_PASSWORD, preferredAcr, requestsMfa } from '../../src/users/acr.js';
import { parseAcrValues } from '../../src/validation/acr-values.js';
import { unicodeText } from './arbitraries.js';

const word = fc.oneof(
  fc.string({ unit: 'grapheme-ascii', minLength: 1, maxLength: 10 }).map((s) => s.replaceAll(' ', '_')),
  fc.constantFrom('idp:', 'tenant:', 'idp:corp', 'idp:other', 'tenant:acme', 'tenant:x', 'urn:mace:incommon:iap:silver', 'IDP:corp', 'idp::'),
);

describe('parseAcrValues', () => {
  it('undefined is empty', () => {
    expect(parseAcrValues(undefined)).toEqual({ idp: null, tenant: null, acr: [] });
  });

  it('takes the first idp: and tenant:, keeps every other value in order', () => {
    fc.assert(
      fc.property(fc.array(word, { maxLength: 12 }), (words) => {
        const text = words.join(' ');
        fc.pre(text.length <= 300);
        const out = parseAcrValues(text);
        const idps = words.filter((w) => w.startsWith('idp:') && w.length > 4);
        const tenants = words.filter((w) => w.startsWith('tenant:') && w.length > 7);
        expect(out.idp).toBe(idps[0]?.slice(4) ?? null);
        expect(out.tenant).toBe(tenants[0]?.slice(7) ?? null);
        expect(out.acr).toEqual(words.filter((w) => !idps.includes(w) && !tenants.includes(w)));
      }),
    );
  });

  it('never throws for input up to 300 characters; refuses longer input with invalid_request', () => {
    fc.assert(
      fc.property(unicodeText({ maxLength: 400 }), (text) => {
        let out;
        try {
          out = parseAcrValues(text);
        } catch (err) {
          expect(text.length).toBeGreaterThan(300);
          expect(err).toBeInstanceOf(OAuthError);
          expect((err as OAuthError).code).toBe('invalid_request');
          return;
        }
        expect(text.length).toBeLessThanOrEqual(300);
        for (const v of out.acr) expect(v.length).toBeGreaterThan(0);
        for (const v of [out.idp, out.tenant, ...out.acr]) if (v !== null) expect(v).not.toContain(' ');
      }),
    );
    expect(() => parseAcrValues('a'.repeat(301))).toThrow(OAuthError);
    expect(parseAcrValues('a'.repeat(300)).acr).toEqual(['a'.repeat(300)]);
  });
});

describe('acr values in order of preference', () => {
  const classes = fc.constantFrom(ACR_PASSWORD, ACR_FEDERATED, ACR_MFA, 'urn:example:gold');
  const achievable = fc.constantFrom(ACR_PASSWORD, ACR_FEDERATED, ACR_MFA);
  /** The table of users/acr.ts, stated again: MFA also meets a request for the password class. */
  const meets = (achieved: string, v: string) => v === achieved || (achieved === ACR_MFA && v === ACR_PASSWORD);

  it('every class listed: no step-up after a password or an upstream sign-in, and acr is the first class met', () => {
    const all = [ACR_PASSWORD, ACR_FEDERATED, ACR_MFA];
    for (const achieved of all) {
      expect(requestsMfa(achieved, all, undefined)).toBe(false);
      expect(preferredAcr(achieved, all)).toBe(achieved === ACR_MFA ? ACR_PASSWORD : achieved);
    }
  });

  it('asks for MFA exactly when no value is met and MFA meets one, for acr_values and an essential acr alike', () => {
    fc.assert(
      fc.property(achievable, fc.array(classes, { maxLength: 5 }), fc.boolean(), (achieved, values, essential) => {
        const asks = essential ? requestsMfa(achieved, [], values) : requestsMfa(achieved, values, undefined);
        expect(asks).toBe(!values.some((v) => meets(achieved, v)) && values.some((v) => meets(ACR_MFA, v)));
      }),
    );
  });

  it('asserts the first listed value the sign-in meets, else nothing (the caller then asserts the achieved class)', () => {
    expect(preferredAcr(ACR_PASSWORD, ['urn:example:gold', ACR_MFA, ACR_PASSWORD])).toBe(ACR_PASSWORD);
    expect(preferredAcr(ACR_MFA, ['urn:example:gold', ACR_MFA, ACR_PASSWORD])).toBe(ACR_MFA);
    expect(preferredAcr(ACR_FEDERATED, [ACR_PASSWORD, ACR_MFA])).toBeUndefined();
    expect(preferredAcr(ACR_PASSWORD, [42, null, ACR_PASSWORD])).toBe(ACR_PASSWORD);
    fc.assert(
      fc.property(achievable, fc.array(classes, { maxLength: 5 }), (achieved, values) => {
        expect(preferredAcr(achieved, values)).toBe(values.find((v) => meets(achieved, v)));
      }),
    );
  });
});
