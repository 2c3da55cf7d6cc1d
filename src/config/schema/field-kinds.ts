/**
 * The field kinds the config's sections share: lifetimes, non-empty strings, secrets and
 * https (or loopback http) URLs.
 */
import * as z from 'zod';
import { LOOPBACK } from '../hosts.js';

/** A lifetime or interval: a positive whole number of seconds. */
export const lifetime = z.number().int().positive();
/** A string of at least one character. */
export const nonEmpty = z.string().min(1);
/** A secret: clear text, or `sha256:<base64 of the 32-byte digest>` (checked here, not at start). */
export const secret = nonEmpty.refine(
  (s) => !s.startsWith('sha256:') || Buffer.from(s.slice('sha256:'.length), 'base64').length === 32,
  'a "sha256:" secret must be the base64 of 32 bytes',
);

/** An absolute URL that is https, or http on a loopback host (development and tests). */
export const httpsOrLoopback = z.url().refine((u) => {
  // Runs after a failed z.url() check too (its issue does not abort): an unparsable value is z.url()'s to report.
  if (!URL.canParse(u)) return true;
  const url = new URL(u);
  return url.protocol === 'https:' || (url.protocol === 'http:' && LOOPBACK.test(url.hostname));
}, 'must be https (http only for loopback hosts)');
