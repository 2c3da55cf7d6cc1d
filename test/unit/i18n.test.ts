/**
 * The page language (`pickLocale`, src/page-kit/i18n.ts): `ui_locales` in its order of preference (OIDC
 * Core §3.1.2.1), else `Accept-Language` by its q-values (RFC 9110 §12.5.4), else English.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { CATALOGUES, pickLocale } from '../../src/page-kit/i18n.js';
import { formishText, unicodeText } from './arbitraries.js';

const SUPPORTED = Object.keys(CATALOGUES);
/** A supported language. */
const supported = fc.constantFrom(...SUPPORTED);
/** A tag of no supported language (two or three letters, maybe with a region). */
const unsupported = fc
  .tuple(fc.stringMatching(/^[a-z]{2,3}$/), fc.option(fc.stringMatching(/^[A-Z]{2}$/), { nil: undefined }))
  .filter(([primary]) => !SUPPORTED.includes(primary))
  .map(([primary, region]) => (region ? `${primary}-${region}` : primary));
/** A tag naming a supported language as written in the wild: any case, maybe with a region. */
const variant = (lang: string) =>
  fc
    .tuple(fc.constantFrom('', '-CH', '-AT', '-US', '-GB', '-419', '-Latn'), fc.boolean())
    .map(([region, upper]) => (upper ? `${lang}${region}`.toUpperCase() : `${lang}${region}`));
/** A q-value as RFC 9110 §12.4.2 writes it: 0.001 to 1 in steps of 0.001. */
const qValue = fc.integer({ min: 1, max: 1000 }).map((n) => n / 1000);
const withQ = (tag: string, q: number) => `${tag};q=${q === 1 ? '1' : q.toFixed(3)}`;

describe('pickLocale', () => {
  it('always answers a supported language and never throws, whatever ui_locales and Accept-Language say', () => {
    const header = fc.oneof(
      unicodeText({ maxLength: 80 }),
      formishText,
      fc.array(fc.oneof(supported, unsupported, fc.constant('*')), { maxLength: 5 }).map((t) => t.join(', ')),
    );
    fc.assert(
      fc.property(
        fc.option(header, { nil: undefined }),
        fc.option(header, { nil: undefined }),
        (uiLocales, acceptLanguage) => {
          expect(SUPPORTED).toContain(pickLocale(uiLocales, acceptLanguage));
        },
      ),
    );
  });

  it('honours the q-values of Accept-Language, whatever the order of the header', () => {
    const pair = fc
      .shuffledSubarray(SUPPORTED, { minLength: 2, maxLength: 2 })
      .chain(([a, b]) => fc.tuple(fc.constant([a, b] as [string, string]), variant(a ?? ''), variant(b ?? '')));
    fc.assert(
      fc.property(
        pair,
        fc.uniqueArray(qValue, { minLength: 2, maxLength: 2 }),
        fc.boolean(),
        fc.array(unsupported, { maxLength: 3 }),
        ([[a, b], ta, tb], qs, reversed, others) => {
          const [qa, qb] = qs as [number, number];
          const parts = [withQ(ta, qa), withQ(tb, qb), ...others];
          const header = (reversed ? parts.reverse() : parts).join(', ');
          expect(pickLocale(undefined, header), header).toBe(qa > qb ? a : b);
        },
      ),
    );
  });

  it('never picks a language the header refuses with q=0', () => {
    fc.assert(
      fc.property(
        fc.shuffledSubarray(SUPPORTED, { minLength: 2, maxLength: 2 }),
        qValue,
        fc.boolean(),
        (langs, q, star) => {
          const [refused, other] = langs as [string, string];
          const header = `${refused};q=0, ${star ? '*' : other};q=${q}`;
          // A wildcard takes the first available language the header does not refuse.
          expect(pickLocale(undefined, header), header).toBe(star ? SUPPORTED.find((l) => l !== refused) : other);
        },
      ),
    );
  });

  it('takes the first supported tag of ui_locales, in its order, before Accept-Language', () => {
    fc.assert(
      fc.property(
        fc.array(unsupported, { maxLength: 4 }),
        supported.chain((lang) => fc.tuple(fc.constant(lang), variant(lang))),
        fc.array(fc.oneof(supported, unsupported), { maxLength: 4 }),
        fc.option(
          fc.array(fc.oneof(supported, unsupported), { minLength: 1, maxLength: 4 }).map((t) => t.join(', ')),
          { nil: undefined },
        ),
        (before, [lang, tag], after, acceptLanguage) => {
          const uiLocales = [...before, tag, ...after].join(' ');
          expect(pickLocale(uiLocales, acceptLanguage), uiLocales).toBe(lang);
        },
      ),
    );
  });

  it('falls back to Accept-Language when ui_locales names no supported language, then to English', () => {
    fc.assert(
      fc.property(
        fc.array(unsupported, { maxLength: 4 }),
        supported,
        fc.array(unsupported, { maxLength: 3 }),
        (tags, lang, others) => {
          const uiLocales = tags.join(' ');
          expect(pickLocale(uiLocales, [...others, lang].join(', '))).toBe(lang);
          expect(pickLocale(uiLocales, others.join(', '))).toBe('en');
          expect(pickLocale(uiLocales, undefined)).toBe('en');
        },
      ),
    );
  });

  it('examples: de;q=0.1, en;q=0.9 is English; fr-CA de-DE en in ui_locales is German; a wildcard is English', () => {
    expect(pickLocale(undefined, 'de;q=0.1, en;q=0.9')).toBe('en');
    expect(pickLocale(undefined, 'en;q=0.1, de-DE;q=0.9')).toBe('de');
    expect(pickLocale(undefined, 'de-CH,de;q=0.9,en;q=0.5')).toBe('de');
    expect(pickLocale('it-CH de-DE en', 'en')).toBe('de');
    expect(pickLocale('fr-CA de-DE en', 'en')).toBe('fr');
    expect(pickLocale(undefined, 'es-419,es;q=0.9')).toBe('es');
    expect(pickLocale(undefined, '*')).toBe('en');
    // An entry of ui_locales that is no language tag (a parameter, a wildcard) is skipped.
    expect(pickLocale('de;q=0 en', undefined)).toBe('en');
    expect(pickLocale('* de', undefined)).toBe('de');
  });
});
