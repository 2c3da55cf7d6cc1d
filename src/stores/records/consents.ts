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

  constructor(grants: GrantStore) {
    this.kind = new RecordKind(grants, 'consent');
  }

  /** Remembers that the user consented to `scopes` for the client until `expiresAt`, replacing an earlier consent. */
  remember(subjectId: string, clientId: string, scopes: string[], now: number, expiresAt: number): Promise<void> {
    return this.kind.save({ key: consentKey(subjectId, clientId), clientId, subjectId, data: { scopes }, createdAt: now, expiresAt });
  }

  /** The scopes of the user's unrevoked consent for the client, or undefined when there is none. */
  async remembered(subjectId: string, clientId: string): Promise<string[] | undefined> {
    const row = await this.kind.find(consentKey(subjectId, clientId));
    if (!row || row.revokedAt !== null) return undefined;
    return row.data.scopes ?? [];
  }
}
