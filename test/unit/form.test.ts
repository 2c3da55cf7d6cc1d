/** `Params.parse` and `formDecode` (src/protocol/params.ts): strict urlencoded decoding, RFC 6749 §3.1. */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { OAuthError } from '../../src/protocol/errors.js';
import { Params, formDecode } from '../../src/protocol/params.js';
import { formishText, unicodeText } from './arbitraries.js';

const noNul = (s: string) => !s.includes('\u0000');
const name = unicodeText({ minLength: 1, maxLength: 20 }).filter(noNul);
const value = unicodeText({ minLength: 1, maxLength: 40 }).filter(noNul);

/** Calls `f`; returns the error it threw, or undefined. */
function thrown(f: () => unknown): unknown {
  try {
    f();
    return undefined;
  } catch (err) {
    return err;
  }
}

describe('Params.parse', () => {
  it('round-trips maps encoded with URLSearchParams', () => {
    fc.assert(
      fc.property(fc.uniqueArray(fc.tuple(name, value), { selector: ([n]) => n, maxLength: 8 }), (entries) => {
        const params = Params.parse(new URLSearchParams(entries).toString());
        for (const [n, v] of entries) {
          expect(params.has(n)).toBe(true);
          expect(params.get(n)).toBe(v);
          expect(params.require(n)).toBe(v);
        }
      }),
    );
  });

  it("round-trips encodeURIComponent encoding too (%20 for space, unescaped !*'())", () => {
    fc.assert(
      fc.property(name, value, (n, v) => {
        const params = Params.parse(`${encodeURIComponent(n)}=${encodeURIComponent(v)}`);
        expect(params.get(n)).toBe(v);
      }),
    );
  });

  it('refuses a parameter sent twice when it is read, with invalid_request', () => {
    fc.assert(
      fc.property(name, value, value, fc.array(fc.tuple(name, value), { maxLength: 4 }), (n, v1, v2, others) => {
        const list = [...others.filter(([o]) => o !== n), [n, v1], [n, v2]];
        const params = Params.parse(new URLSearchParams(list).toString());
        expect(params.has(n)).toBe(true);
        const err = thrown(() => params.get(n));
        expect(err).toBeInstanceOf(OAuthError);
        expect((err as OAuthError).code).toBe('invalid_request');
        expect((err as OAuthError).status).toBe(400);
        expect(thrown(() => params.require(n))).toBeInstanceOf(OAuthError);
      }),
    );
  });

  it('treats empty values as absent, so an empty duplicate is no duplicate', () => {
    fc.assert(
      fc.property(name, value, (n, v) => {
        const e = encodeURIComponent(n);
        expect(Params.parse(`${e}=`).has(n)).toBe(false);
        expect(Params.parse(e).get(n)).toBeUndefined();
        expect(Params.parse(`${e}=&${e}=${encodeURIComponent(v)}&${e}`).get(n)).toBe(v);
      }),
    );
  });

  it('never throws anything but an invalid_request OAuthError', () => {
    fc.assert(
      fc.property(
        fc.oneof(formishText, unicodeText({ maxLength: 80 })),
        fc.array(fc.string({ maxLength: 8 }), { maxLength: 4 }),
        (body, names) => {
          let params: Params;
          try {
            params = Params.parse(body);
          } catch (err) {
            expect(err).toBeInstanceOf(OAuthError);
            expect((err as OAuthError).code).toBe('invalid_request');
            return;
          }
          for (const n of names) {
            const err = thrown(() => params.get(n));
            if (err !== undefined) expect((err as OAuthError).code).toBe('invalid_request');
          }
        },
      ),
    );
  });

  it('refuses NUL and malformed escapes', () => {
    for (const body of ['a=%00', 'a%00=b', 'a=b%', 'a=%ZZ', 'a=%C3', 'a=%ED%A0%80', 'a=%C0%AF', 'a=\u0000'])
      expect(
        thrown(() => Params.parse(body)),
        body,
      ).toBeInstanceOf(OAuthError);
    expect(Params.parse('a=b+c%2Bd').get('a')).toBe('b c+d');
    expect(Params.parse('&&a=1&&').get('a')).toBe('1');
    expect(Params.parse('=x&a=1').has('')).toBe(false);
  });

  it('decodes exactly what the WHATWG urlencoded parser decodes, for bodies it accepts', () => {
    fc.assert(
      fc.property(formishText, (body) => {
        let params: Params;
        try {
          params = Params.parse(body);
        } catch {
          return;
        }
        const reference = new URLSearchParams(body);
        for (const n of new Set(reference.keys())) {
          const values = reference.getAll(n).filter((v) => v !== '');
          if (n === '' || values.length === 0) expect(params.has(n)).toBe(false);
          else if (values.length === 1) expect(params.get(n)).toBe(values[0]);
          else expect(thrown(() => params.get(n))).toBeInstanceOf(OAuthError);
        }
      }),
    );
  });
});

describe('formDecode', () => {
  it('inverts form encoding of any well-formed text without NUL', () => {
    fc.assert(
      fc.property(unicodeText().filter(noNul), (s) => {
        expect(formDecode(new URLSearchParams({ x: s }).toString().slice(2))).toBe(s);
        expect(formDecode(encodeURIComponent(s))).toBe(s);
      }),
    );
  });
});
