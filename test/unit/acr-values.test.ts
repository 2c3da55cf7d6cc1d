/** `parseAcrValues` (src/validation/acr-values.ts): `idp:` and `tenant:` picked out of `acr_values`. */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { OAuthError } from '../../src/errors.js';
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
