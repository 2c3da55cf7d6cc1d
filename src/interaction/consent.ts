/**
 * Remembered consent (OIDC Core §3.1.2.4): the scopes a user allowed a client, kept per subject
 * and client so that the consent page is not shown again for them.
 */
import { hashHandle, nowSeconds } from '../crypto/handles.js';
import { type GrantStore, newGrantRecord } from '../stores/types.js';

/** How long a remembered consent lasts, in seconds (Duende: no expiry; here one year). */
const CONSENT_LIFETIME = 365 * 24 * 3600;

/** Store key of a remembered consent (subject, client). */
export function consentKey(subjectId: string, clientId: string): string {
  return hashHandle(`consent\u0000${subjectId}\u0000${clientId}`);
}

/** The scopes the subject's live remembered consent for the client covers, or undefined without one. */
export async function rememberedConsent(grants: GrantStore, subjectId: string, clientId: string): Promise<string[] | undefined> {
  const row = await grants.get(consentKey(subjectId, clientId));
  if (!row || row.type !== 'consent' || row.revokedAt !== null) return undefined;
  return (row.data as { scopes?: string[] }).scopes ?? [];
}

/** Remembers that the subject allowed the client `scopes`, replacing an earlier consent; lives `CONSENT_LIFETIME`. */
export async function rememberConsent(grants: GrantStore, subjectId: string, clientId: string, scopes: string[]): Promise<void> {
  const now = nowSeconds();
  await grants.save(newGrantRecord({
    key: consentKey(subjectId, clientId),
    type: 'consent',
    clientId,
    subjectId,
    data: { scopes },
    createdAt: now,
    expiresAt: now + CONSENT_LIFETIME,
  }));
}
