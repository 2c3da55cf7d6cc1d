/**
 * `acr_values` (OIDC Core §3.1.2.1) with Duende's special values: `idp:<name>` names an upstream
 * identity provider, `tenant:<name>` a tenant; other values are requested ACRs.
 */
import { invalidRequest } from '../protocol/errors.js';

/** Parsed `acr_values`. */
export interface AcrValues {
  idp: string | null;
  tenant: string | null;
  /** The remaining values, in order. */
  acr: string[];
}

/**
 * Splits `acr_values` on spaces and picks out `idp:` and `tenant:` (the first of each wins).
 * @throws OAuthError `invalid_request` when longer than 300 characters.
 */
export function parseAcrValues(value: string | undefined): AcrValues {
  const out: AcrValues = { idp: null, tenant: null, acr: [] };
  if (value === undefined) return out;
  if (value.length > 300) throw invalidRequest('acr_values is too long');
  for (const v of value.split(' ').filter((x) => x.length > 0)) {
    if (v.startsWith('idp:') && v.length > 4) out.idp ??= v.slice(4);
    else if (v.startsWith('tenant:') && v.length > 7) out.tenant ??= v.slice(7);
    else out.acr.push(v);
  }
  return out;
}
