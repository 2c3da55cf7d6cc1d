/**
 * A user's grants and consents, as Duende IdentityServer's persisted grants:
 * the remembered consents (OIDC Core §3.1.2.4) and the refresh token grants (RFC 6749 §1.5) a
 * user gave each client. Revoking a client's grants ends both: the next authorization asks for
 * consent again, and the grant's refresh tokens (and the reference tokens of the grant) stop
 * working (RFC 7009 §2.1: revoking a refresh token revokes its grant).
 */
import type { GrantRecord, GrantStore } from '../stores/types.js';
import { nowSeconds } from '../crypto/handles.js';
import { AdminError } from './errors.js';

/** The most grants listed for one user. */
export const MAX_GRANTS_LISTED = 1000;

/** One grant of a user, as listed. */
export interface UserGrant {
  clientId: string;
  /** `consent` (a remembered consent) or `refresh_token` (an offline grant). */
  type: 'consent' | 'refresh_token';
  scopes: string[];
  /** Unix seconds. */
  createdAt: number;
  /** Unix seconds. */
  expiresAt: number;
}

/** Lists and revokes a user's consents and refresh token grants. */
export class GrantAdmin {
  constructor(private readonly grants: GrantStore) {}

  /**
   * The user's live consents and refresh token grants (one per grant family), oldest first: of
   * each kind the newest MAX_GRANTS_LISTED records (`GrantStore.listLive`, along the subject index).
   */
  async list(subjectId: string, now = nowSeconds()): Promise<UserGrant[]> {
    const records = await this.live(subjectId, now);
    const families = new Set<string>();
    const out: UserGrant[] = [];
    for (const r of records) {
      if (r.type === 'refresh_token') {
        // A rotated refresh token's successor is the same grant.
        if (families.has(r.familyId)) continue;
        families.add(r.familyId);
      }
      const scopes = Array.isArray(r.data.scopes) ? r.data.scopes.map(String) : [];
      out.push({
        clientId: r.clientId,
        type: r.type === 'consent' ? 'consent' : 'refresh_token',
        scopes,
        createdAt: r.createdAt,
        expiresAt: r.expiresAt,
      });
    }
    return out;
  }

  /**
   * Revokes the user's consent and refresh token grants for one client, with everything else the
   * user holds there (reference tokens, access-token marks, unused codes), in one transaction
   * (`GrantStore.revokeSubjectAtClient`, as the account pages revoke a connected app).
   * @returns how many grants were revoked (consents, and refresh token families).
   * @throws AdminError `not_found` when the user has no live grant for that client.
   */
  async revoke(subjectId: string, clientId: string, now = nowSeconds()): Promise<number> {
    const records = (await this.live(subjectId, now)).filter((r) => r.clientId === clientId);
    if (records.length === 0) throw new AdminError('not_found', `no live grant of that user for client "${clientId}"`);
    await this.grants.revokeSubjectAtClient(subjectId, clientId, now);
    const families = new Set(records.filter((r) => r.type === 'refresh_token').map((r) => r.familyId));
    return records.filter((r) => r.type === 'consent').length + families.size;
  }

  private async live(subjectId: string, now: number): Promise<GrantRecord[]> {
    const kinds = await Promise.all(
      (['consent', 'refresh_token'] as const).map((type) =>
        this.grants.listLive(subjectId, type, now, MAX_GRANTS_LISTED),
      ),
    );
    return kinds.flat().sort((a, b) => a.createdAt - b.createdAt);
  }
}
