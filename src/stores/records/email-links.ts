/**
 * Links sent by mail: a password reset, the verification of an address, a pending
 * self-registration. The handle travels only in the message; the store keeps its SHA-256
 * (`hashHandle`), so a read of the store yields no usable link. Each is single-use: `consume` is one
 * conditional update, and only a live link (not consumed, revoked or expired) is taken.
 *
 * A reset, verification or email-change link is stored under its user's subject; a registration
 * link, which has no user yet, in the family of its address (`addressFamily`). Either way
 * `revokeAllOf` ends them all in one update each, along the `grants_subject` and `grants_family`
 * indexes.
 */
import { hashHandle } from '../../crypto/handles.js';
import type { GrantRecord, GrantStore } from '../grant-store.js';
import { normalizeEmail } from '../user-emails.js';
import { RecordKind } from './record-kind.js';

/** What a link does when followed. */
export type EmailLinkPurpose = 'reset' | 'verify' | 'register';

/** How long a registration holds its address against a concurrent one, seconds. */
const CLAIM_SECONDS = 60;

/** Stored data of a link. */
export interface EmailLinkData {
  /** `claim`: an address held by a registration being confirmed (`claimAddress`), never a link. */
  purpose: EmailLinkPurpose | 'claim';
  /** The address the link was sent to. */
  email: string;
  [key: string]: unknown;
}

/** The `email_link` records, by handle. Times are Unix seconds. */
export class EmailLinks {
  private readonly kind: RecordKind<EmailLinkData>;

  constructor(private readonly grants: GrantStore) {
    this.kind = new RecordKind(grants, 'email_link');
  }

  /**
   * Stores a new link.
   * @param subjectId the user it is for; null for a registration (no user yet), which joins the
   *   family of its address instead
   */
  issue(
    handle: string,
    subjectId: string | null,
    data: EmailLinkData,
    now: number,
    lifetimeSeconds: number,
  ): Promise<void> {
    const familyId = subjectId === null ? addressFamily(data.email) : undefined;
    return this.kind.put({
      key: hashHandle(handle),
      clientId: '',
      subjectId,
      ...(familyId ? { familyId } : {}),
      data,
      createdAt: now,
      expiresAt: now + lifetimeSeconds,
    });
  }

  /**
   * Revokes every outstanding link of a user: their reset and verification links (an email change
   * included), and with `address` (their primary address) the registration links sent to it, which
   * would otherwise set a first password again once the address is free. A link of one of these
   * sets a password or vouches for an address, so a password reset or change, a user made inactive
   * and a user removed end them all: whoever read an earlier mail keeps no way in.
   * @returns how many links were revoked.
   */
  async revokeAllOf(subjectId: string, address: string | undefined, now: number): Promise<number> {
    const ofUser = await this.grants.revokeSubject(subjectId, ['email_link'], now);
    return ofUser + (address === undefined ? 0 : await this.grants.revokeFamily(addressFamily(address), now));
  }

  /** The link when live at `now` and for `purpose`, or undefined. */
  async findLive(
    handle: string,
    purpose: EmailLinkPurpose,
    now: number,
  ): Promise<GrantRecord<EmailLinkData> | undefined> {
    const row = await this.kind.findLive(hashHandle(handle), now);
    return row?.data.purpose === purpose ? row : undefined;
  }

  /**
   * Claims an address for the account being created from it, atomically: of concurrent
   * registrations of one address exactly one gets true (the users table cannot refuse the second:
   * its unique index treats the null tenants of self-registered users as distinct). The claim is
   * a record of its own purpose, which no link lookup answers.
   */
  claimAddress(normalizedEmail: string, now: number): Promise<boolean> {
    const data: EmailLinkData = { purpose: 'claim', email: normalizedEmail };
    return this.kind.putOnce({
      key: hashHandle(`claim:${normalizedEmail}`),
      clientId: '',
      subjectId: null,
      data,
      createdAt: now,
      expiresAt: now + CLAIM_SECONDS,
    });
  }

  /** Uses the link, atomically: of concurrent uses exactly one gets true, and only while it is live. */
  consume(handle: string, now: number): Promise<boolean> {
    return this.kind.consume(hashHandle(handle), now);
  }
}

/**
 * The family of the registration links of one address (normalized, hashed as handles are: the
 * store keeps no address in clear here). The prefix keeps it apart from the families derived from
 * keys, which are base64url and have no colon.
 */
function addressFamily(email: string): string {
  return `address:${hashHandle(normalizeEmail(email))}`;
}
