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
  fc.constantFrom(
    'idp:',
    'tenant:',
    'idp:corp',
    'idp:other',
    'tenant:acme',
    'tenant:x',
    'urn:mace:incommon:iap:silver',
    'IDP:corp',
    'idp::',
  ),
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
  const LOCAL = { idp: 'local', amr: ['pwd'] };
  const LOCAL_MFA = { idp: 'local', amr: ['pwd', 'otp', 'mfa'] };
  const UPSTREAM = { idp: 'corp', amr: ['pwd'] };
  const UPSTREAM_MFA = { idp: 'corp', amr: ['hwk', 'mfa'] };
  const sessions = fc.constantFrom(LOCAL, LOCAL_MFA, UPSTREAM, UPSTREAM_MFA);
  /** The rule of users/acr.ts, stated again: a sign-in meets its first factor's class, and MFA when it has it. */
  const meets = (session: { idp: string; amr: string[] }, v: unknown) =>
    v === (session.idp === 'local' ? ACR_PASSWORD : ACR_FEDERATED) || (session.amr.includes('mfa') && v === ACR_MFA);

  it('every class listed: no step-up after a password or an upstream sign-in, and acr is the first class met', () => {
    const all = [ACR_PASSWORD, ACR_FEDERATED, ACR_MFA];
    for (const session of [LOCAL, LOCAL_MFA, UPSTREAM, UPSTREAM_MFA])
      expect(requestsMfa(session, all, undefined)).toBe(false);
    expect(preferredAcr(LOCAL, all)).toBe(ACR_PASSWORD);
    expect(preferredAcr(LOCAL_MFA, all)).toBe(ACR_PASSWORD);
    expect(preferredAcr(UPSTREAM, all)).toBe(ACR_FEDERATED);
    expect(preferredAcr(UPSTREAM_MFA, all)).toBe(ACR_FEDERATED);
  });

  it("an upstream's MFA never meets the password class: it says nothing about the user's Sigil password", () => {
    expect(preferredAcr(UPSTREAM_MFA, [ACR_PASSWORD])).toBeUndefined();
    expect(preferredAcr(UPSTREAM_MFA, [ACR_PASSWORD, ACR_MFA])).toBe(ACR_MFA);
    expect(preferredAcr(UPSTREAM_MFA, [ACR_FEDERATED])).toBe(ACR_FEDERATED);
    expect(preferredAcr(LOCAL_MFA, [ACR_FEDERATED])).toBeUndefined();
  });

  it('asks for MFA exactly when no value is met and MFA is listed, for acr_values and an essential acr alike', () => {
    fc.assert(
      fc.property(sessions, fc.array(classes, { maxLength: 5 }), fc.boolean(), (session, values, essential) => {
        const asks = essential ? requestsMfa(session, [], values) : requestsMfa(session, values, undefined);
        expect(asks).toBe(!values.some((v) => meets(session, v)) && values.includes(ACR_MFA));
      }),
    );
  });

  it('asserts the first listed value the sign-in meets, else nothing (the caller then asserts the achieved class)', () => {
    expect(preferredAcr(LOCAL, ['urn:example:gold', ACR_MFA, ACR_PASSWORD])).toBe(ACR_PASSWORD);
    expect(preferredAcr(LOCAL_MFA, ['urn:example:gold', ACR_MFA, ACR_PASSWORD])).toBe(ACR_MFA);
    expect(preferredAcr(UPSTREAM, [ACR_PASSWORD, ACR_MFA])).toBeUndefined();
    expect(preferredAcr(LOCAL, [42, null, ACR_PASSWORD])).toBe(ACR_PASSWORD);
    fc.assert(
      fc.property(sessions, fc.array(classes, { maxLength: 5 }), (session, values) => {
        expect(preferredAcr(session, values)).toBe(values.find((v) => meets(session, v)));
      }),
    );
  });
});
