/**
 * Finds the live token behind a value presented at introspection or revocation: an access token
 * (JWT or reference) or a refresh token, trying the hinted type first (RFC 7662 §2.1, RFC 7009 §2.1).
 */
import type { GrantRecord } from '../stores/grant-store.js';
import type { RefreshTokenData, RefreshTokens } from '../stores/records/refresh-tokens.js';
import { nowSeconds } from '../crypto/handles.js';
import type { TokenService, ValidAccessToken } from './tokens.js';

/** A live token. */
export type FoundToken =
  | { kind: 'access_token'; token: ValidAccessToken }
  | { kind: 'refresh_token'; row: GrantRecord<RefreshTokenData>; data: RefreshTokenData };

/**
 * Looks `value` up as an access token (through `tokens`) and as a refresh token (in
 * `refreshTokens`), the hinted kind first; an unknown hint is ignored (RFC 7009 §2.2).
 * @returns the live token, or undefined when it is unknown, expired, consumed or revoked.
 */
export async function findToken(
  tokens: Pick<TokenService, 'validateAccessToken'>,
  refreshTokens: RefreshTokens,
  value: string,
  hint: string | undefined,
): Promise<FoundToken | undefined> {
  const asAccess = async (): Promise<FoundToken | undefined> => {
    const token = await tokens.validateAccessToken(value);
    return token ? { kind: 'access_token', token } : undefined;
  };
  const asRefresh = async (): Promise<FoundToken | undefined> => {
    if (value.length > 512 || value.includes('.')) return undefined;
    const row = await refreshTokens.findLive(value, nowSeconds());
    return row ? { kind: 'refresh_token', row, data: row.data } : undefined;
  };
  const order = hint === 'refresh_token' ? [asRefresh, asAccess] : [asAccess, asRefresh];
  for (const attempt of order) {
    const found = await attempt();
    if (found) return found;
  }
  return undefined;
}
