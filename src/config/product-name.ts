/**
 * The product name people see in mail and that a chosen password may not contain: the one place
 * it is decided, `branding.productName` (default "Sigil"), the name every page shows.
 */
import type { Config } from './schema.js';

/** The product name for `config`, e.g. "Acme ID". */
export function productName(config: Pick<Config, 'branding'>): string {
  return config.branding.productName;
}
