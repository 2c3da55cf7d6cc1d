/**
 * The product name people see in mail and that a chosen password may not contain: the one place
 * it is decided. Until the config has `branding.productName` (issue 24, branding), it is the name
 * authenticator apps already show for this server, `mfa.totpIssuer` (default "Sigil").
 */
import type { Config } from './schema.js';

/** The product name for `config`, e.g. "Acme ID". */
export function productName(config: Pick<Config, 'mfa'>): string {
  return config.mfa.totpIssuer;
}
