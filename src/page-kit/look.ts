/**
 * The look of the pages (config `branding`, `localesDir`; docs/sign-in-and-pages.md, "Look and language"), read once
 * at start: the product name, the logo and icon, the theme style sheet (the primary colour as CSS
 * custom properties, then the deployment's `customCss`), template overrides and the catalogues.
 *
 * Everything a page loads comes from Sigil's own origin, under a path holding a hash of the
 * content (`/assets/theme-<hash>.css`, `/assets/logo-<hash>.png`), so it may be cached for a year
 * and the CSP keeps `style-src 'self'` without `'unsafe-inline'`. A logo or icon given as an https
 * URL is loaded from there instead; its origin (and only it) joins the pages' `img-src`.
 * A problem (a missing file, a broken template) stops the start with a `ConfigError`, never a 500
 * at request time.
 */
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { extname, join, resolve } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { ConfigError } from '../config/loader.js';
import { CSS_HEX_COLOUR } from '../config/schema.js';
import { loadLocales, Locales } from './i18n.js';

/** The `branding` config block. */
export interface BrandingConfig {
  productName: string;
  logoUrl?: string | undefined;
  faviconUrl?: string | undefined;
  primaryColor?: string | undefined;
  customCss?: string | undefined;
  templatesDir?: string | undefined;
}

/** A file served at a fixed, content-addressed path. */
export interface Asset {
  type: string;
  body: Buffer;
  /** A strong entity tag (RFC 9110 §8.8.3) of the body. */
  etag: string;
}

/** What the layout shows and links, and what Sigil serves for it. */
export interface Look {
  productName: string;
  /** The logo's `src` (an https URL or an `/assets/` path), if any. */
  logo?: string | undefined;
  /** The icon's `href`, if any. */
  favicon?: string | undefined;
  /** The theme style sheet's path, linked after `/assets/sigil.css`, if there is a primary colour or custom CSS. */
  theme?: string | undefined;
  /** The files to serve, by path. */
  assets: ReadonlyMap<string, Asset>;
  /** Origins the pages' CSP `img-src` allows besides `'self'` and `data:` (https logo and icon). */
  imageOrigins: readonly string[];
  /** Page templates replacing the built-in ones, by name (`templatesDir`). */
  templates: ReadonlyMap<string, string>;
  locales: Locales;
}

/** The look without branding: Sigil's name, its colours, the shipped catalogues. */
export const DEFAULT_LOOK: Look = {
  productName: 'Sigil',
  assets: new Map(),
  imageOrigins: [],
  templates: new Map(),
  locales: new Locales(),
};

/** Image types by file extension. */
const IMAGE_TYPES: Readonly<Record<string, string>> = {
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.jpeg': 'image/jpeg',
  '.gif': 'image/gif',
  '.webp': 'image/webp',
  '.svg': 'image/svg+xml',
  '.ico': 'image/x-icon',
};
/** The largest logo or icon file, in bytes. */
const MAX_IMAGE_BYTES = 512 * 1024;
/** The largest custom style sheet or template, in bytes. */
const MAX_TEXT_BYTES = 256 * 1024;
/** A template file of `templatesDir`. */
const TEMPLATE_FILE = /^([a-z][a-z0-9_-]*)\.eta$/;

/**
 * Reads the look from the config.
 * @throws ConfigError naming the setting and the file: unreadable, too large, of an unknown type
 */
export function loadLook(branding: BrandingConfig, localesDir: string | undefined): Look {
  const problems: string[] = [];
  const assets = new Map<string, Asset>();
  const imageOrigins: string[] = [];
  const read = (setting: string, path: string, max: number): Buffer | undefined => {
    try {
      const full = resolve(path);
      if (statSync(full).size > max) {
        problems.push(`${setting}: ${path} is larger than ${max} bytes`);
        return undefined;
      }
      return readFileSync(full);
    } catch (err) {
      problems.push(
        `${setting}: cannot read ${path} (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`,
      );
      return undefined;
    }
  };
  const serve = (name: string, ext: string, type: string, body: Buffer): string => {
    const hash = createHash('sha256').update(body).digest('base64url').slice(0, 22);
    const path = `/assets/${name}-${hash}${ext}`;
    assets.set(path, { type, body, etag: `"${hash}"` });
    return path;
  };
  const image = (setting: string, value: string | undefined): string | undefined => {
    if (value === undefined) return undefined;
    if (/^https:/i.test(value)) {
      imageOrigins.push(new URL(value).origin);
      return value;
    }
    const ext = extname(value).toLowerCase();
    const type = IMAGE_TYPES[ext];
    if (!type) {
      problems.push(`${setting}: ${value} is not a ${Object.keys(IMAGE_TYPES).join(', ')} file`);
      return undefined;
    }
    const body = read(setting, value, MAX_IMAGE_BYTES);
    return body && serve(setting === 'branding.logoUrl' ? 'logo' : 'icon', ext, type, body);
  };

  const logo = image('branding.logoUrl', branding.logoUrl);
  const favicon = image('branding.faviconUrl', branding.faviconUrl);
  const css: string[] = [];
  if (branding.primaryColor !== undefined) css.push(themeColours(branding.primaryColor));
  if (branding.customCss !== undefined) {
    const body = read('branding.customCss', branding.customCss, MAX_TEXT_BYTES);
    if (body) css.push(body.toString('utf8'));
  }
  const theme =
    css.length > 0 ? serve('theme', '.css', 'text/css; charset=utf-8', Buffer.from(css.join('\n'))) : undefined;
  const templates =
    branding.templatesDir === undefined ? new Map<string, string>() : readTemplates(branding.templatesDir, problems);
  let locales: Locales | undefined;
  try {
    locales = loadLocales(localesDir === undefined ? undefined : resolve(localesDir));
  } catch (err) {
    problems.push((err as Error).message);
  }
  if (problems.length > 0 || !locales) throw new ConfigError(problems);
  return {
    productName: branding.productName,
    logo,
    favicon,
    theme,
    assets,
    imageOrigins: [...new Set(imageOrigins)],
    templates,
    locales,
  };
}

/** The templates of `templatesDir` by name (`login.eta` is `login`); other files are ignored. */
function readTemplates(dir: string, problems: string[]): Map<string, string> {
  const templates = new Map<string, string>();
  let files: string[];
  try {
    files = readdirSync(resolve(dir));
  } catch (err) {
    problems.push(
      `branding.templatesDir: cannot read ${dir} (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`,
    );
    return templates;
  }
  for (const file of files) {
    const name = TEMPLATE_FILE.exec(file)?.[1];
    if (name === undefined) continue;
    const path = join(resolve(dir), file);
    if (statSync(path).size > MAX_TEXT_BYTES)
      problems.push(`branding.templatesDir: ${path} is larger than ${MAX_TEXT_BYTES} bytes`);
    else templates.set(name, readFileSync(path, 'utf8'));
  }
  return templates;
}

/**
 * The theme's colour properties for a primary colour (`#rgb` or `#rrggbb`, checked again here: the
 * value goes into CSS): buttons and links in the colour, the text on buttons black or white,
 * whichever contrasts more (WCAG 2.x relative luminance). The light scheme only: a brand colour
 * chosen against white rarely contrasts with the dark card, so the dark scheme keeps Sigil's
 * accessible accent unless `customCss` sets `--accent` under `prefers-color-scheme: dark`.
 */
export function themeColours(colour: string): string {
  if (!CSS_HEX_COLOUR.test(colour)) throw new Error('primaryColor must be #rgb or #rrggbb');
  const hex = colour.length === 4 ? colour.slice(1).replace(/./g, '$&$&') : colour.slice(1);
  const channel = (i: number) => {
    const v = parseInt(hex.slice(i, i + 2), 16) / 255;
    return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4;
  };
  const luminance = 0.2126 * channel(0) + 0.7152 * channel(2) + 0.0722 * channel(4);
  // Contrast with white (1.0) against contrast with black (0.0): (L1 + 0.05) / (L2 + 0.05).
  const onColour = 1.05 / (luminance + 0.05) >= (luminance + 0.05) / 0.05 ? '#fff' : '#000';
  return `@media (prefers-color-scheme: light) { :root { --accent: ${colour}; --accent-hover: color-mix(in srgb, ${colour} 85%, #000); --accent-fg: ${onColour}; } }`;
}

/**
 * Serves the look's files at their content-addressed paths: cacheable for a year (`immutable`:
 * a new content gets a new path) with an ETag, `nosniff` set by the pages' headers.
 */
export function lookAssets(app: FastifyInstance, look: Look): void {
  for (const [path, asset] of look.assets)
    app.get(path, async (request, reply) => {
      reply.header('cache-control', 'public, max-age=31536000, immutable').header('etag', asset.etag);
      if (request.headers['if-none-match'] === asset.etag) return reply.code(304).send();
      return reply.type(asset.type).send(asset.body);
    });
}
