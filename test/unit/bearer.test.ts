/** `extractBearer` (src/validation/bearer.ts): RFC 6750 §2.1 header and §2.2 form body. */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { OAuthError } from '../../src/protocol/errors.js';
import { Params } from '../../src/protocol/params.js';
import { extractBearer } from '../../src/validation/bearer.js';
import { unicodeText, caught } from './arbitraries.js';

/** RFC 6750 §2.1: b64token = 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"=" */
const b64char = fc.constantFrom(...'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~+/'.split(''));
const b64token = fc
  .tuple(
    fc.string({ unit: b64char, minLength: 1, maxLength: 200 }),
    fc.string({ unit: fc.constant('='), maxLength: 3 }),
  )
  .map(([a, b]) => a + b);
const bearerScheme = fc.constantFrom('Bearer', 'bearer', 'BEARER', 'bEaReR');

describe('extractBearer', () => {
  it('returns the b64token of a Bearer header, scheme case-insensitive', () => {
    fc.assert(
      fc.property(bearerScheme, b64token, (scheme, token) => {
        expect(extractBearer([`${scheme} ${token}`], undefined)).toBe(token);
        expect(extractBearer([`${scheme} ${token}`], Params.empty())).toBe(token);
      }),
    );
  });

  it('returns access_token from the form body', () => {
    fc.assert(
      fc.property(
        unicodeText({ minLength: 1, maxLength: 50 }).filter((s) => s.length > 0 && !s.includes('\u0000')),
        (token) => {
          const form = Params.parse(new URLSearchParams({ access_token: token }).toString());
          expect(extractBearer([], form)).toBe(token);
          expect(extractBearer(['Basic YTpi'], form)).toBe(token);
        },
      ),
    );
  });

  it('refuses a token sent both ways, a repeated header, or a malformed one, with 400 invalid_request', () => {
    fc.assert(
      fc.property(b64token, b64token, (a, b) => {
        const form = Params.parse(`access_token=${encodeURIComponent(b)}`);
        const both = caught(() => extractBearer([`Bearer ${a}`], form));
        expect(both?.code).toBe('invalid_request');
        expect(both?.status).toBe(400);
        expect(both?.headers['www-authenticate']).toMatch(/^Bearer realm="sigil", error="invalid_request"/);
        expect(caught(() => extractBearer([`Bearer ${a}`, `Bearer ${b}`], undefined))?.code).toBe('invalid_request');
        for (const bad of [
          `Bearer  ${a}`,
          `Bearer\t${a}`,
          `Bearer ${a} ${b}`,
          `Bearer ${a}=x`,
          'Bearer',
          'Bearer ',
          `Bearer ${a}é`,
        ])
          expect(caught(() => extractBearer([bad], undefined))?.status, bad).toBe(400);
      }),
    );
  });

  it('other schemes and no header mean no token', () => {
    expect(extractBearer([], undefined)).toBeUndefined();
    expect(extractBearer(['Basic YTpi'], undefined)).toBeUndefined();
    expect(extractBearer(['Bearerx abc'], undefined)).toBeUndefined();
    expect(extractBearer(['DPoP abc'], undefined)).toBeUndefined();
  });

  it('never throws anything but a 400 OAuthError; a returned token is a b64token or the body value', () => {
    const header = fc.oneof(
      unicodeText({ maxLength: 40 }),
      fc.tuple(bearerScheme, unicodeText({ maxLength: 40 })).map(([s, t]) => `${s}${t}`),
    );
    fc.assert(
      fc.property(
        fc.array(header, { maxLength: 2 }),
        fc.option(fc.constantFrom('access_token=x', 'access_token=a&access_token=b', 'other=1'), { nil: undefined }),
        (headers, body) => {
          const form = body === undefined ? undefined : Params.parse(body);
          let token: string | undefined;
          try {
            token = extractBearer(headers, form);
          } catch (err) {
            expect(err).toBeInstanceOf(OAuthError);
            expect((err as OAuthError).status).toBe(400);
            expect((err as OAuthError).code).toBe('invalid_request');
            return;
          }
          if (token !== undefined && token !== 'x') expect(token).toMatch(/^[A-Za-z0-9\-._~+/]+=*$/);
        },
      ),
    );
  });
});
