/**
 * `may_act` (RFC 8693 §4.4): the claim of an access token that names who may act for its subject
 * in a later token exchange. Shared by the extension-grant wrapper (which checks what a grant sets)
 * and the token exchange grant (which enforces it).
 */
/**
 * The party `may_act` (RFC 8693 §4.4) authorizes, as Sigil issues it: a JSON object with `sub`
 * and/or `client_id` (strings), nothing else. Sigil's own grants never set it; an extension
 * grant may put one in its result's `claims` (see `ExtensionGrantResult.claims`), and a token
 * exchange of that token is then allowed only to the party it names.
 */
export interface MayAct {
  sub?: string;
  client_id?: string;
}

const MAY_ACT_MEMBERS = new Set(['sub', 'client_id']);

/**
 * Whether `value` is a `may_act` claim Sigil can enforce: a plain object with at least one of
 * `sub` and `client_id`, both strings when present, and no other member.
 */
export function isMayAct(value: unknown): value is MayAct {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const entries = Object.entries(value);
  return entries.length > 0 && entries.every(([k, v]) => MAY_ACT_MEMBERS.has(k) && typeof v === 'string');
}

/**
 * Whether `actor` is the party `mayAct` names (RFC 8693 §4.4): every member of `mayAct` equals the
 * actor's. A `may_act` Sigil cannot read (see `isMayAct`) permits nobody.
 */
export function mayActPermits(mayAct: unknown, actor: { sub: string; client_id: string }): boolean {
  return isMayAct(mayAct) && Object.entries(mayAct).every(([k, v]) => actor[k as keyof MayAct] === v);
}
