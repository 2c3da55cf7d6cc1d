/**
 * Remembered consents (OIDC Core §3.1.2.4): one record per (subject, client), under the SHA-256 of
 * the pair (prefixed), holding the scopes the user agreed to; saving again replaces it.
 */
import { hashHandle } from '../../crypto/handles.js';
import type { GrantStore } from '../grant-store.js';
import { RecordKind } from './record-kind.js';

/** Stored data of a remembered consent. */
export interface ConsentData {
  scopes: string[];
}

/** Store key of a remembered consent (subject, client). */
export function consentKey(subjectId: string, clientId: string): string {
  return hashHandle(`consent\u0000${subjectId}\u0000${clientId}`);
}

/** How long a remembered consent lasts, in seconds (Duende keeps it without expiry; Sigil one year). */
export const CONSENT_LIFETIME = 365 * 24 * 3600;

/** The `consent` records. Times are Unix seconds. */
export class Consents {
  private readonly kind: RecordKind<ConsentData>;

  constructor(private readonly grants: GrantStore) {
    this.kind = new RecordKind(grants, 'consent');
  }

  /** Remembers that the user consented to `scopes` for the client until `expiresAt`, replacing an earlier consent. */
  remember(subjectId: string, clientId: string, scopes: string[], now: number, expiresAt: number): Promise<void> {
    return this.kind.save({
      key: consentKey(subjectId, clientId),
      clientId,
      subjectId,
      data: { scopes },
      createdAt: now,
      expiresAt,
    });
  }

  /** The user's live consents at `now` (client and scopes), newest first, at most `limit`. */
  async liveOf(
    subjectId: string,
    now: number,
    limit: number,
  ): Promise<{ clientId: string; scopes: string[]; createdAt: number }[]> {
    return (await this.kind.liveOf(subjectId, now, limit)).map((row) => ({
      clientId: row.clientId,
      scopes: row.data.scopes ?? [],
      createdAt: row.createdAt,
    }));
  }

  /**
   * Withdraws everything the user gave the client (Keycloak's "revoke grant", Duende's
   * `IPersistedGrantService.RemoveAllGrantsAsync(subject, client)`): the consent and every live
   * grant of the user at the client (refresh and reference tokens, access-token marks, codes, with
   * their families), in one update. Afterwards the client's refresh tokens fail with
   * `invalid_grant` (RFC 6749 §5.2). Returns how many records were revoked.
   */
  withdraw(subjectId: string, clientId: string, now: number): Promise<number> {
    return this.grants.revokeSubjectAtClient(subjectId, clientId, now);
  }

  /**
   * The scopes of the user's live consent for the client at `now` (Unix seconds), or undefined when
   * there is none: revoked or past its `CONSENT_LIFETIME` counts as none, whether or not the
   * clean-up has deleted the row yet.
   */
  async remembered(subjectId: string, clientId: string, now: number): Promise<string[] | undefined> {
    const row = await this.kind.findLive(consentKey(subjectId, clientId), now);
    if (!row) return undefined;
    return row.data.scopes ?? [];
  }
}
