/**
 * Page texts and the choice of language. The texts live in JSON catalogues, one per language
 * (`locales/<tag>.json`: English, German, French, Spanish); a deployment adds languages or
 * overrides texts with its own `<tag>.json` files (config `localesDir`). The language is the first
 * available tag of `ui_locales` (OIDC Core §3.1.2.1), else the most preferred available language
 * of `Accept-Language` by its q-values (RFC 9110 §12.5.4), else English.
 *
 * New texts go into every file of `locales/` (a unit test checks that each has every key of
 * en.json, with the same `{placeholders}`).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import Negotiator from 'negotiator';
import de from './locales/de.json' with { type: 'json' };
import en from './locales/en.json' with { type: 'json' };
import es from './locales/es.json' with { type: 'json' };
import fr from './locales/fr.json' with { type: 'json' };

/** A catalogue: every key of the English one. */
export type Messages = { [K in keyof typeof en]: string };

/** The shipped languages and their texts, English first: it wins a tie and is the default. */
export const CATALOGUES: Readonly<Record<string, Messages>> = { en, de, fr, es };

/** The syntax of a BCP 47 language tag (RFC 5646 §2.1, loosely): no wildcard, no parameters. */
const LANGUAGE_TAG = /^[A-Za-z]{1,8}(?:-[A-Za-z0-9]{1,8})*$/;
/** A catalogue file of `localesDir`: `<tag>.json`. */
const CATALOGUE_FILE = /^([A-Za-z]{2,3}(?:-[A-Za-z0-9]{2,8})*)\.json$/;
/** The largest catalogue file read from `localesDir`, in bytes. */
const MAX_CATALOGUE_BYTES = 256 * 1024;

/** The supported language an `Accept-Language` value prefers (negotiator: q-values, then specificity, then order). */
function negotiate(acceptLanguage: string, supported: readonly string[]): string | undefined {
  return new Negotiator({ headers: { 'accept-language': acceptLanguage } }).language(supported as string[]);
}

/**
 * Picks the page language: the first tag of `uiLocales` that names a supported language (a
 * region or script subtag falls back to its language: `de-CH` is `de`), else the supported
 * language `acceptLanguage` prefers (a language with `q=0` never), else English.
 * @param uiLocales the `ui_locales` parameter (space-separated BCP 47 tags in order of preference), if any
 * @param acceptLanguage the `Accept-Language` header, if any
 * @param supported the available languages, English first (default: the shipped ones)
 * @returns one of `supported`
 */
export function pickLocale(
  uiLocales: string | undefined,
  acceptLanguage: string | undefined,
  supported: readonly string[] = Object.keys(CATALOGUES),
): string {
  for (const tag of (uiLocales ?? '').split(' ')) {
    const lang = LANGUAGE_TAG.test(tag) ? negotiate(tag, supported) : undefined;
    if (lang) return lang;
  }
  return negotiate(acceptLanguage ?? '', supported) ?? 'en';
}

/** Fills `{name}` placeholders of a text. Values are escaped later by the template. */
export function format(text: string, values: Record<string, string>): string {
  return text.replace(/\{(\w+)\}/g, (whole, name: string) => values[name] ?? whole);
}

/** The `{placeholders}` of a text, sorted. */
export function placeholders(text: string): string[] {
  return [...text.matchAll(/\{(\w+)\}/g)].map((m) => m[1] as string).sort();
}

/**
 * The languages of one Sigil instance: the shipped catalogues with a deployment's files merged
 * over them. A key missing from a language falls back to English.
 */
export class Locales {
  /** The available language tags (lower case), English first. */
  readonly tags: readonly string[];
  private readonly catalogues: ReadonlyMap<string, Messages>;

  /** @param catalogues texts by language tag, over English (see `loadLocales`) */
  constructor(catalogues: Readonly<Record<string, Partial<Messages>>> = CATALOGUES) {
    const merged = new Map<string, Messages>();
    for (const [tag, texts] of Object.entries(catalogues)) merged.set(tag.toLowerCase(), { ...en, ...texts });
    merged.set('en', { ...en, ...catalogues.en });
    this.catalogues = merged;
    this.tags = ['en', ...[...merged.keys()].filter((t) => t !== 'en')];
  }

  /** The page language for `ui_locales` and `Accept-Language` (see `pickLocale`). */
  pick(uiLocales: string | undefined, acceptLanguage: string | undefined): string {
    return pickLocale(uiLocales, acceptLanguage, this.tags);
  }

  /** The texts of a language; English for an unknown tag. */
  messages(lang: string): Messages {
    return this.catalogues.get(lang) ?? (this.catalogues.get('en') as Messages);
  }
}

/**
 * Reads a deployment's catalogues (config `localesDir`, at start): each `<tag>.json` (a BCP 47
 * tag, e.g. `it.json`, `pt-BR.json`) is an object of texts by key, merged over the shipped
 * catalogue of that tag (a new tag adds a language). Other files are ignored.
 * @throws Error naming the file: unreadable, larger than 256 KiB, not a JSON object of strings,
 *   an unknown key (a typo would otherwise be silently ignored), or a text whose `{placeholders}`
 *   differ from English
 */
export function loadLocales(dir: string | undefined): Locales {
  if (dir === undefined) return new Locales();
  const catalogues: Record<string, Partial<Messages>> = { ...CATALOGUES };
  let files: string[];
  try {
    files = readdirSync(dir);
  } catch (err) {
    throw new Error(
      `localesDir: cannot read ${dir} (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`,
    );
  }
  for (const file of files.sort()) {
    const match = CATALOGUE_FILE.exec(file);
    if (!match) continue;
    const path = join(dir, file);
    const text = readFileSync(path);
    if (text.length > MAX_CATALOGUE_BYTES)
      throw new Error(`localesDir: ${path} is larger than ${MAX_CATALOGUE_BYTES} bytes`);
    let data: unknown;
    try {
      data = JSON.parse(text.toString('utf8'));
    } catch (err) {
      throw new Error(`localesDir: ${path} is not valid JSON (${(err as Error).message})`);
    }
    if (typeof data !== 'object' || data === null || Array.isArray(data))
      throw new Error(`localesDir: ${path} must be a JSON object of texts by key`);
    const tag = (match[1] as string).toLowerCase();
    const texts: Partial<Messages> = {};
    for (const [key, value] of Object.entries(data)) {
      if (!Object.hasOwn(en, key)) throw new Error(`localesDir: ${path}: unknown key "${key}"`);
      if (typeof value !== 'string') throw new Error(`localesDir: ${path}: "${key}" must be a string`);
      const expected = placeholders(en[key as keyof Messages]);
      if (placeholders(value).join() !== expected.join())
        throw new Error(
          `localesDir: ${path}: "${key}" must have the placeholders ${expected.map((p) => `{${p}}`).join(' ') || '(none)'}`,
        );
      texts[key as keyof Messages] = value;
    }
    catalogues[tag] = { ...catalogues[tag], ...texts };
  }
  return new Locales(catalogues);
}
