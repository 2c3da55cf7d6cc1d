/** The look of the pages (`branding`). */
import * as z from 'zod';
import { nonEmpty } from './field-kinds.js';

/** A CSS colour as `#rgb` or `#rrggbb`: nothing else, so the value cannot end the declaration it is put in. */
export const CSS_HEX_COLOUR = /^#(?:[0-9a-fA-F]{3}|[0-9a-fA-F]{6})$/;
/**
 * An image of the pages: an https URL (its origin joins the pages' CSP img-src), or a file Sigil reads at
 * start and serves itself.
 */
const brandImage = nonEmpty
  .max(2048)
  .refine(
    (v) =>
      !/^[A-Za-z][A-Za-z0-9+.-]*:/.test(v) || (URL.canParse(v) && new URL(v).protocol === 'https:' && !v.includes('#')),
    'must be an https URL without fragment, or the path of a file to serve',
  );

/** The look of the pages (docs/sign-in-and-pages.md, "Look and language"). Paths are relative to the working directory. */
export const branding = z.strictObject({
  productName: nonEmpty.max(64).default('Sigil').meta({ description: 'Shown on every page (heading and title)' }),
  logoUrl: brandImage.optional().meta({
    description:
      "The logo shown on every page: an https URL (its origin is added to the pages' CSP img-src) or the path of an image file (PNG, JPEG, GIF, WebP, SVG or ICO, at most 512 KiB) that Sigil serves from its own origin",
  }),
  faviconUrl: brandImage
    .optional()
    .meta({ description: "The pages' icon: an https URL or the path of an image file, as logoUrl" }),
  primaryColor: z
    .string()
    .regex(CSS_HEX_COLOUR, 'must be a colour as #rgb or #rrggbb')
    .optional()
    .meta({ description: 'The colour of buttons and links (CSS custom property --accent), #rgb or #rrggbb' }),
  customCss: nonEmpty.optional().meta({
    description:
      "The path of a style sheet read at start and served from Sigil's origin after the built-in one (at most 256 KiB; the CSP stays style-src 'self')",
  }),
  templatesDir: nonEmpty.optional().meta({
    description:
      'A folder of page templates (<name>.eta, e.g. login.eta, layout.eta) replacing the built-in ones; checked at start',
  }),
});
