/**
 * Finds the live token behind a value presented at introspection or revocation: an access token
 * (JWT or reference) or a refresh token, trying the hinted type first (RFC 7662 §2.1, RFC 7009 §2.1).
 */
import type { SigilContext } from '../context.js';
import type { GrantRecord } from '../stores/types.js';
import { hashHandle, nowSeconds } from '../crypto/handles.js';
import type { RefreshTokenData, ValidAccessToken } from './tokens.js';

/** A live token. */
export type FoundToken =
  | { kind: 'access_token'; token: ValidAccessToken }
  | { kind: 'refresh_token'; row: GrantRecord; data: RefreshTokenData };

/**
 * Looks `value` up as an access token and as a refresh token, the hinted kind first; an unknown
 * hint is ignored (RFC 7009 §2.2, D-11).
 * @returns the live token, or undefined when it is unknown, expired, consumed or revoked.
 */
export async function findToken(ctx: SigilContext, value: string, hint: string | undefined): Promise<FoundToken | undefined> {
  const asAccess = async (): Promise<FoundToken | undefined> => {
    const token = await ctx.tokens.validateAccessToken(value);
    return token ? { kind: 'access_token', token } : undefined;
  };
  const asRefresh = async (): Promise<FoundToken | undefined> => {
    if (value.length > 512 || value.includes('.')) return undefined;
    const row = await ctx.store.grants.get(hashHandle(value));
    if (!row || row.type !== 'refresh_token' || row.revokedAt !== null || row.consumedAt !== null) return undefined;
    if (row.expiresAt <= nowSeconds()) return undefined;
    return { kind: 'refresh_token', row, data: row.data as RefreshTokenData };
  };
  const order = hint === 'refresh_token' ? [asRefresh, asAccess] : [asAccess, asRefresh];
  for (const attempt of order) {
    const found = await attempt();
    if (found) return found;
  }
  return undefined;
}
